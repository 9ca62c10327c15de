"""cocotb testbench of SHIELD's :class:`RefreshScheduler` alone, against its documented contract.

In every cycle ``t`` since reset (1 in the first cycle after it) the scheduler's pointer is the
next row to refresh: ``slot`` is high exactly when ``t mod interval`` is the pointer's offset
``(row * interval) // rows``, ``row`` is the pointer, and ``next_row`` the pointer of the next
cycle (the row after it when ``slot``, wrapping). The outputs are compared in every cycle,
including a few random resets mid-run, over ``cycles`` cycles (a few intervals).
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from memwall.hdl.shield.controller import schedule_offset
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import start


@cocotb.test()
async def schedule(dut):
    p = tb_params()
    rows, interval = p["rows"], p["interval"]
    rng = random.Random(cocotb.RANDOM_SEED)
    clk = await start(dut)
    first = next((r for r in range(rows) if schedule_offset(r, rows, interval) >= 1 % interval),
                 0)
    t, pointer, slots, errors = 1, first, 0, []
    reset_at = set(rng.sample(range(interval, p["cycles"]), 2))
    for cycle in range(p["cycles"]):
        await ReadOnly()
        slot = t % interval == schedule_offset(pointer, rows, interval)
        following = (pointer + 1) % rows if slot else pointer
        want = (int(slot), pointer, following)
        got = (int(dut.slot.value), int(dut.row.value), int(dut.next_row.value))
        if got != want:
            errors.append(f"cycle {t}: (slot, row, next_row) {got}, expected {want}")
        slots += slot
        reset = cycle in reset_at
        await RisingEdge(clk)
        if reset:       # the edge above sampled rst = 1 (set after the previous edge)
            t, pointer = 1, first
        else:
            t, pointer = t + 1, following
        dut.rst.value = int(cycle + 1 in reset_at)
    dut._log.info("%d cycles, %d refresh slots, resets at %s", p["cycles"], slots,
                  sorted(reset_at))
    assert slots >= rows, f"only {slots} slots in {p['cycles']} cycles"
    assert not errors, f"{len(errors)} cycles wrong, first: " + "; ".join(errors[:5])
