"""cocotb testbench: :class:`~memwall.hdl.dplena.noise.NoisyArgmax` against the golden
:func:`~memwall.golden.dplena.noise.noisy_argmax_hw`, every cycle.

A stream of rows, each its own (seed, step, row, temperature) and an even first token, its
logits cut into writes of ``lanes`` (the last one partial: lanes past ``count`` hold garbage),
with random idle cycles between writes and back-to-back rows. The logits are BF16 normals with
signed zeros, infinities, NaNs, subnormals and repeated values (ties) mixed in; the temperatures
include +-0, NaN, tiny and huge values. Expected after each write: the golden noisy argmax of the
row's tokens so far. Checked in every cycle (outputs read at the falling edge, before the
cycle's inputs are driven): ``found``, ``index``, ``value``, ``key`` equal the result of every
write presented ``latency`` or more cycles ago, and ``idle`` is high exactly when no write was
presented in the last ``latency - 1`` cycles; so a write takes effect exactly ``latency`` cycles
after it is presented, one a cycle. One reset between rows, with writes in flight: they are
lost and ``found`` clears.

``tb_params()``: ``lanes``, ``latency`` (the documented one, from the pytest side), ``rows``
(default 40), ``idle_prob`` (default 0.3), ``max_writes`` (writes a row at most, default 5).
"""

from __future__ import annotations

import random

import cocotb
import ml_dtypes
import numpy as np
from cocotb.triggers import FallingEdge

from memwall.golden.dplena.noise import noisy_argmax_hw
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import start

__all__ = ["rows_of", "TEMPERATURES"]

#: FP32 temperature patterns: +-0 (greedy), NaN, tiny, 1/2, 1, 2, huge.
TEMPERATURES = (0x00000000, 0x80000000, 0x7FC00000, 0x00000001, 0x3F000000, 0x3F800000,
                0x40000000, 0x7F000000)
_SPECIAL = (0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFF81, 0x0001, 0x8003)


def rows_of(rng: random.Random, lanes: int, count: int, max_writes: int) -> list[dict]:
    """``count`` random rows: ``seed``, ``step``, ``row``, ``temperature``, ``token`` (even),
    ``z`` (uint16 logits, at most ``max_writes`` writes of ``lanes``)."""
    out = []
    for _ in range(count):
        n = rng.randint(1, max_writes * lanes)
        gen = np.random.default_rng(rng.getrandbits(32))
        z = (gen.standard_normal(n) * 4).astype(ml_dtypes.bfloat16).view(np.uint16)
        for _ in range(gen.integers(0, 4)):           # ties and special values
            z[gen.integers(0, n)] = z[gen.integers(0, n)]
            z[gen.integers(0, n)] = _SPECIAL[gen.integers(0, len(_SPECIAL))]
        temperature = rng.choice(TEMPERATURES) if rng.random() < 0.4 else \
            int(np.float32(rng.uniform(0.05, 3.0)).view(np.uint32))
        out.append({"seed": rng.getrandbits(32), "step": rng.getrandbits(32),
                    "row": rng.getrandbits(32), "temperature": temperature,
                    "token": rng.randrange(0, (1 << 32) - n - lanes, 2), "z": z})
    return out


def _expected(row: dict, end: int) -> tuple[int, int, int, int]:
    """``(found, index, value, key)`` after the row's first ``end`` logits."""
    r = noisy_argmax_hw(row["z"][None, :end], row["temperature"], row["seed"], row["step"],
                        rows=[row["row"]], tokens=row["token"] + np.arange(end))
    return 1, row["token"] + int(r["index"][0]), int(r["value"][0]), int(r["key"][0])


class Testbench:
    def __init__(self, dut, lanes: int, latency: int, rng: random.Random):
        self.dut, self.lanes, self.latency, self.rng = dut, lanes, latency, rng
        self.cycle = 0
        self.state = (0, 0, 0, 0)        # the result every applied write has left
        self.pending: list[tuple[int, tuple]] = []   # (cycle presented, result after it)
        self.errors: list[str] = []
        self.writes = 0

    def _check(self) -> None:
        dut, k = self.dut, self.cycle
        while self.pending and self.pending[0][0] <= k - self.latency:
            self.state = self.pending.pop(0)[1]
        want_idle = int(not self.pending)
        got = (int(dut.found.value), dut.index.value.to_unsigned(),
               dut.value.value.to_unsigned(), dut.key.value.to_unsigned())
        want = self.state
        if int(dut.idle.value) != want_idle:
            self.errors.append(f"cycle {k}: idle = {int(dut.idle.value)}, expected {want_idle}")
        if got[0] != want[0] or (want[0] and got != want):
            self.errors.append(f"cycle {k}: (found, index, value, key) = {_hex(got)}, "
                               f"expected {_hex(want)}")
        if len(self.errors) > 20:
            raise AssertionError("more than 20 errors; first:\n  " + "\n  ".join(self.errors))

    async def cycle_with(self, write: dict | None = None, reset: bool = False) -> None:
        dut = self.dut
        await FallingEdge(dut.clk)
        self._check()
        garbage = self.rng.getrandbits(16 * self.lanes)
        if write is None:
            dut.valid.value = 0
            dut.z.value = garbage
            dut.first.value, dut.count.value = self.rng.getrandbits(1), 1
        else:
            lanes = list(write["z"]) + [0] * (self.lanes - len(write["z"]))
            word = sum(int(v) << (16 * i) for i, v in enumerate(lanes))
            pad = ((1 << (16 * self.lanes)) - 1) ^ ((1 << (16 * len(write["z"]))) - 1)
            dut.valid.value, dut.first.value = 1, int(write["first"])
            dut.z.value = word | (garbage & pad)
            dut.count.value = len(write["z"])
            self.pending.append((self.cycle, write["want"]))
            self.writes += 1
        row = write or {}
        for name in ("token", "row", "seed", "step", "temperature"):
            getattr(dut, name).value = row.get(name, self.rng.getrandbits(32))
        dut.rst.value = int(reset)
        if reset:                        # in-flight writes are lost; the result clears
            self.pending.clear()
            self.state = (0, 0, 0, 0)
        self.cycle += 1

    async def run_row(self, row: dict, idle_prob: float) -> None:
        n = len(row["z"])
        for start_at in range(0, n, self.lanes):
            end = min(n, start_at + self.lanes)
            while self.rng.random() < idle_prob:
                await self.cycle_with()
            await self.cycle_with({**row, "z": row["z"][start_at:end],
                                   "token": row["token"] + start_at, "first": start_at == 0,
                                   "want": _expected(row, end)})


def _hex(t) -> str:
    return "(" + ", ".join(f"{v:#x}" for v in t) + ")"


@cocotb.test()
async def noisy_argmax_matches_golden(dut):
    p = tb_params()
    lanes, latency = int(p["lanes"]), int(p["latency"])
    rng = random.Random(cocotb.RANDOM_SEED)
    rows = rows_of(rng, lanes, int(p.get("rows", 40)), int(p.get("max_writes", 5)))
    tb = Testbench(dut, lanes, latency, rng)
    dut.valid.value = 0
    await start(dut)
    reset_after = len(rows) // 2
    for i, row in enumerate(rows):
        await tb.run_row(row, float(p.get("idle_prob", 0.3)))
        if i == reset_after:
            await tb.cycle_with(reset=True)
    for _ in range(latency + 2):
        await tb.cycle_with()
    assert not tb.errors, f"{len(tb.errors)} errors; first:\n  " + "\n  ".join(tb.errors[:20])
    assert not tb.pending and tb.writes > len(rows)
    dut._log.info(f"{len(rows)} rows, {tb.writes} writes over {tb.cycle} cycles: all equal")
