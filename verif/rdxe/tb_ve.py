"""cocotb testbench of the rDXE vector engine (:class:`memwall.hdl.rdxe.ve.VectorEngine`) on its
generated Verilog, bit-exact with :mod:`memwall.golden.rdxe.datapath` and
:mod:`memwall.golden.common.fixedpoint`.

``params`` are the engine's own ``params``; with ``sequential`` false (the fused-only build)
the Verilog must have no normalisation ports and those checks are left out. One session:

* ``clear`` and ``max_clear`` after sums and a maximum that are not zero;
* ``sum x**2`` of INT8 words (-128 included) and the running maximum of INT16 scores, the two
  streams interleaved with random gaps;
* the RMSNorm RC ``1/sqrt(sum x**2 + eps_sum)`` times the static factor: ``rc_valid`` low for
  exactly ``NewtonRaphson.latency(1)`` cycles after ``nr_start``, then the RC; again with an
  ``eps_sum`` that saturates the 32-bit radicand;
* sequential build: the normalisation lanes ``norm_y = sat8(norm_a * RC)`` on ``x * g``
  (combinational, read a moment after ``norm_a`` is driven);
* the exponentials of words of scores (combinational), the last word partial (``z_mask``: the
  masked lanes carry random scores near the maximum and must give 0), ``sum e`` of the words with
  ``esum_add``, random gaps;
* the softmax RC ``1/sum e`` times the static factor, after ``NewtonRaphson.latency(0)``.

Checked on every cycle: ``z_max``, ``sum_sq`` and ``sum_e`` against a cycle model of their
registers (a word's square or exponential enters its sum two edges after it is driven; a clear
wins over an add); the results above against the golden model. Every data input not qualified
in a cycle (the words of invalid cycles, ``eps_sum``/``smant``/``sshift``/``nr_op`` without
``nr_start``, ``norm_a``) carries random bits.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, Timer

from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe import datapath as rdxe
from memwall.hdl.common.fixed import NewtonRaphson
from memwall.hdl.rdxe.ve import VectorEngine
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, pack_lanes, start, unpack_lanes

CONTROLS = ("clear", "max_clear", "sq_valid", "score_valid", "esum_add", "nr_start")
#: Data inputs and their widths: random whenever a test does not drive them.
DATA = {"sq_x": 8, "score": 16, "z": 16, "z_mask": 1, "nr_op": 1, "eps_sum": 32, "smant": 16,
        "sshift": 8, "norm_a": 16}
LANE_WIDE = ("sq_x", "z", "z_mask", "norm_a")      # one field per lane
LOWEST = -(1 << 15)


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


class Bench:
    """Drives one cycle at a time. Inputs are driven after a rising edge and registered
    outputs read after the next one, where cocotb sees the values of the cycle that just
    ended: a register loaded by the edge of step ``k`` is read in step ``k + 1``."""

    def __init__(self, dut):
        self.dut = dut
        self.ve = VectorEngine(**tb_params())
        self.lanes = self.ve.lanes
        self.rng = np.random.default_rng(cocotb.RANDOM_SEED)
        self.board = Scoreboard(dut._name, dut._log)
        self.data = {name: width * (self.lanes if name in LANE_WIDE else 1)
                     for name, width in DATA.items()
                     if name != "norm_a" or self.ve.sequential}
        # Cycle model of the registers; None until the test's clear (reset values are no part
        # of the contract).
        self.z_max: int | None = None
        self.sums: dict[str, int | None] = {"sum_sq": None, "sum_e": None}
        self.inflight = {"sum_sq": 0, "sum_e": 0}    # registered this edge, added at the next

    @classmethod
    async def create(cls, dut) -> Bench:
        tb = cls(dut)
        for name in (*CONTROLS, *tb.data):           # nothing floats (X) through reset
            getattr(dut, name).value = 0
        tb.clk = await start(dut)
        return tb

    def bits(self, n: int) -> int:
        return int.from_bytes(self.rng.bytes((n + 7) // 8), "little") & ((1 << n) - 1)

    async def step(self, peek: tuple[str, ...] = (), sq: int = 0, e: int = 0,
                   **ports) -> dict:
        """One cycle: ``ports`` (controls 0, data random unless given); ``peek`` reads those
        combinational outputs before the edge. ``sq``/``e``: what this cycle adds to
        ``sum_sq``/``sum_e`` (the model's)."""
        dut = self.dut
        for name in CONTROLS:
            getattr(dut, name).value = ports.get(name, 0)
        for name, width in self.data.items():
            value = ports[name] if name in ports else self.bits(width)
            getattr(dut, name).value = value & ((1 << width) - 1)
        seen = {}
        if peek:
            await Timer(100, unit="ps")
            seen = {name: int(getattr(dut, name).value) for name in peek}
        await RisingEdge(self.clk)
        if self.z_max is not None:
            self.board.compare("z_max", self.z_max, dut.z_max.value.to_signed())
        for name, value in self.sums.items():
            if value is not None:
                self.board.compare(name, value, int(getattr(dut, name).value))
        # The model after this edge.
        if ports.get("max_clear"):
            self.z_max = LOWEST
        elif ports.get("score_valid") and self.z_max is not None:
            self.z_max = max(self.z_max, _signed(ports["score"] & 0xFFFF, 16))
        for name, add in (("sum_sq", sq), ("sum_e", e)):
            if ports.get("clear"):
                self.sums[name] = 0
            elif self.sums[name] is not None:
                self.sums[name] += self.inflight[name]
            self.inflight[name] = add
        return seen

    async def idle(self, cycles: int) -> None:
        for _ in range(cycles):
            await self.step()

    async def gap(self) -> None:
        await self.idle(int(self.rng.integers(0, 3)))

    async def rc(self, op: int, eps_sum: int, smant: int, sshift: int) -> tuple[int, int]:
        """Start the RC; ``rc_valid`` must stay low for the Newton-Raphson latency of ``op``."""
        dut = self.dut
        await self.step(nr_start=1, nr_op=op, eps_sum=eps_sum, smant=smant, sshift=sshift)
        for n in range(NewtonRaphson.latency(op)):
            await self.step()
            self.board.compare(f"op {op}: rc_valid {n + 1} cycles after the start", 0,
                               int(dut.rc_valid.value))
        await self.step()
        self.board.compare(f"op {op}: rc_valid after the latency", 1, int(dut.rc_valid.value))
        return int(dut.rc_mant.value), int(dut.rc_shift.value)


@cocotb.test()
async def statistics_and_rc(dut):
    p = tb_params()
    has_norm = hasattr(dut, "norm_a") and hasattr(dut, "norm_y")
    assert has_norm == bool(p.get("sequential", True)), \
        f"normalisation ports present: {has_norm}, sequential: {p.get('sequential', True)}"
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    d, t = 8 * lanes, 5 * lanes - 3              # the last word: lanes 1.. masked
    x = rng.integers(-128, 128, d)
    x[0] = -128                                     # |-128| = 128: the widest square
    g = rng.integers(-128, 128, d)
    z = rng.integers(-3000, 3000, t)
    eps_sum = int(rng.integers(0, 1 << 20))
    smant, sshift = rdxe.static_factor(0.37)

    # Sums and a maximum the clears must remove: a high score, squares, exponentials of 1.
    await tb.step(score_valid=1, score=(1 << 15) - 1)
    for _ in range(2):
        await tb.step(sq_valid=1, z=pack_lanes([(1 << 15) - 1] * lanes, 16),
                      z_mask=(1 << lanes) - 1, esum_add=1)
    await tb.idle(2)
    await tb.step(clear=1, max_clear=1)

    # x streams past (sum x**2) while the scores are written back (the maximum).
    words = [x[k * lanes:(k + 1) * lanes] for k in range(d // lanes)]
    scores = z.tolist()
    while words or scores:
        ports, sq = {}, 0
        if words and rng.random() < 0.6:
            word = words.pop(0)
            ports.update(sq_valid=1, sq_x=pack_lanes(word, 8))
            sq = int((word.astype(np.int64) ** 2).sum())
        if scores and rng.random() < 0.6:
            ports.update(score_valid=1, score=scores.pop(0))
        await tb.step(sq=sq, **ports)
    await tb.idle(3)
    rms = rdxe.rmsnorm_gemv(x, np.zeros((1, d), int), eps_sum, (smant, sshift), "sequential",
                            g, (smant, sshift))
    tb.board.compare("sum x**2", rms["sumsq"], int(dut.sum_sq.value))
    tb.board.compare("z_max", int(z.max()), dut.z_max.value.to_signed())

    # RMSNorm RC, and the sequential baseline's normalisation of x * g by it.
    tb.board.compare("RMSNorm RC", rms["rc"], await tb.rc(1, eps_sum, smant, sshift))
    if has_norm:
        x_hat = []
        for k in range(d // lanes):
            a = x[k * lanes:(k + 1) * lanes] * g[k * lanes:(k + 1) * lanes]
            seen = await tb.step(peek=("norm_y",), norm_a=pack_lanes(a, 16))
            x_hat += [_signed(int(y), 8) for y in unpack_lanes(seen["norm_y"], 8, lanes)]
        tb.board.compare("x_hat (norm_y)", rms["x_hat"], x_hat)
    # A radicand past 32 bits saturates (sum x**2 > 0 with x[0] = -128).
    big = (1 << 32) - 1 - int(rng.integers(0, rms["sumsq"]))
    sat = rdxe.rmsnorm_gemv(x, np.zeros((1, d), int), big, (smant, sshift), "sequential", g,
                            (smant, sshift))
    tb.board.compare("RMSNorm RC, saturated radicand", sat["rc"],
                     await tb.rc(1, big, smant, sshift))

    # Exponentials word by word; the last word partial, its masked lanes random scores near or
    # above the maximum (each would give a large e).
    sm = rdxe.softmax_pv(z, int(z.max()), np.zeros((t, 1), int), (smant, sshift))
    m, s = fx.exp2_float(z - z.max())
    e = fx.exp2_value(m, s)
    e_m, e_s = [], []
    for k in range(-(-t // lanes)):
        tok = range(k * lanes, min(t, (k + 1) * lanes))
        zw = np.concatenate([z[tok.start:tok.stop],
                             rng.integers(z.max() - 1024, -LOWEST, lanes - len(tok))])
        seen = await tb.step(peek=("e_m", "e_s"), z=pack_lanes(zw, 16),
                             z_mask=(1 << len(tok)) - 1, esum_add=1,
                             e=int(e[tok.start:tok.stop].sum()))
        e_m += unpack_lanes(seen["e_m"], 7, lanes).tolist()
        e_s += unpack_lanes(seen["e_s"], 3, lanes).tolist()
        await tb.gap()
    pad = [0] * (len(e_m) - t)
    tb.board.compare("e_m (masked lanes 0)", m.tolist() + pad, e_m)
    tb.board.compare("e_s (masked lanes 0)", s.tolist() + pad, e_s)
    await tb.idle(3)
    tb.board.compare("sum e", sm["sum_e"], int(dut.sum_e.value))

    # Softmax RC.
    tb.board.compare("softmax RC", sm["rc"], await tb.rc(0, tb.bits(32), smant, sshift))
    tb.board.result()
