"""cocotb testbench: the d-PLENA core as a host sees it (program load, HBM stream, FIFO).

Reads a job file written by :func:`memwall.verif.dplena.core_run.run_core`, loads the program
and INT SRAM through the host port, starts the core, serves the HBM beats in order (optionally
with random gaps, or throttled to one beat every ``beat_every`` cycles: a slower port, as a
power workload of a reduced core uses to keep the real core's beats per Vector SRAM row),
collects the output FIFO (optionally with random back-pressure) and writes the words and the
cycle count back. A job may hold more programs (``restarts``): each is loaded and started
once the core has stopped, with nothing else reset; the cycle count is the last one's.
Checking against the golden model is the caller's.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import start


def _pack(beat: np.ndarray) -> int:
    return int.from_bytes(beat.tobytes(), "little")


@cocotb.test()
async def run_step(dut):
    p = tb_params()
    rng = random.Random(cocotb.RANDOM_SEED)
    with np.load(p["job"]) as job:
        programs, beats = [job["program"]], job["beats"]
        int_addr, int_data, n_out = job["int_addr"], job["int_data"], int(job["n_out"])
        if "restart_lengths" in job.files:
            programs += np.split(job["restarts"], np.cumsum(job["restart_lengths"])[:-1])
    clk = await start(dut)
    dut.start.value = 0

    stall = p.get("stall", False)
    every = int(p.get("beat_every", 1))
    outputs: list[int] = []
    sent, credit = 0, 1
    budget = 200 * every * (len(beats) + n_out) + 100_000
    for phase, program in enumerate(programs):
        # Nothing moves on the HBM or FIFO ports while the host loads (no beat or word lost).
        dut.hbm_beat__valid.value = 0
        dut.out__ready.value = 0
        loads = [(1, range(len(program)), program)] + [(0, int_addr, int_data)] * (phase == 0)
        for sel, addrs, words in loads:
            for addr, word in zip(addrs, words, strict=True):
                dut.host_we.value, dut.host_imem.value = 1, sel
                dut.host_addr.value, dut.host_wdata.value = int(addr), int(word)
                await RisingEdge(clk)
        dut.host_we.value = 0
        dut.start.value = 1
        await RisingEdge(clk)
        dut.start.value = 0
        last = phase == len(programs) - 1
        for cycle in range(budget):
            if cycle % every == 0:
                credit = 1   # the port delivers at most one beat per `every` cycles
            offer = sent < len(beats) and credit > 0 and not (stall and rng.random() < 0.2)
            dut.hbm_beat__valid.value = int(offer)
            if offer:
                dut.hbm_beat__payload.value = _pack(beats[sent])
            take = not (stall and rng.random() < 0.3)
            dut.out__ready.value = int(take)
            await RisingEdge(clk)   # values read here are the ones the edge sampled
            if offer and dut.hbm_beat__ready.value:
                sent += 1
                credit -= every > 1
            if take and dut.out__valid.value:
                outputs.append(int(dut.out__payload.value))
            if not dut.busy.value and (not last or len(outputs) >= n_out):
                break
        else:
            raise AssertionError(f"timeout in program {phase}: {sent} of {len(beats)} beats "
                                 f"taken, {len(outputs)} of {n_out} outputs, "
                                 f"busy={int(dut.busy.value)}")
    assert sent == len(beats), f"the core took {sent} of {len(beats)} HBM beats"
    assert len(outputs) == n_out, f"{len(outputs)} output words, expected {n_out}"
    np.savez(p["result"], words=np.asarray(outputs, dtype=np.uint64),
             cycles=int(dut.cycles.value))

