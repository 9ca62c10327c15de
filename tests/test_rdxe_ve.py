# amaranth: UnusedElaboratable=no
"""The rDXE vector engine (hdl/rdxe/ve.py) bit-exact with golden/rdxe.py: ``sum x**2`` and the
fused RMSNorm RC, max-on-writeback, the exponentials and the fused softmax RC, and the
sequential baseline's normalisation lanes, on random words with random gaps."""

from __future__ import annotations

import numpy as np
from amaranth.sim import Simulator
from memwall.golden import fixedpoint as fx
from memwall.golden import rdxe
from memwall.hdl.common.fixed import NewtonRaphson
from memwall.hdl.rdxe.ve import VectorEngine

L = 4


def _pack(values, bits: int) -> int:
    return sum((int(v) & ((1 << bits) - 1)) << (bits * i) for i, v in enumerate(values))


def _unpack(word: int, bits: int, n: int, signed: bool = False) -> list:
    out = [(word >> (bits * i)) & ((1 << bits) - 1) for i in range(n)]
    return [v - (1 << bits) if signed and v >> (bits - 1) else v for v in out]


def test_vector_engine_against_golden():
    rng = np.random.default_rng(41)
    d, t = 8 * L, 5 * L - 2
    x = rng.integers(-128, 128, d)
    g = rng.integers(-128, 128, d)
    z = rng.integers(-3000, 3000, t)
    eps_sum = int(rng.integers(0, 1 << 20))
    smant, sshift = rdxe.static_factor(0.37)
    dut = VectorEngine(L)
    seen = {}

    async def gap(ctx):
        for _ in range(int(rng.integers(0, 3))):
            await ctx.tick()

    async def bench(ctx):
        ctx.set(dut.clear, 1)
        ctx.set(dut.max_clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        ctx.set(dut.max_clear, 0)
        for k in range(d // L):                         # x streams past: sum x**2
            ctx.set(dut.sq_valid, 1)
            ctx.set(dut.sq_x, _pack(x[k * L:(k + 1) * L], 8))
            await ctx.tick()
            ctx.set(dut.sq_valid, 0)
            await gap(ctx)
        for score in z.tolist():                         # scores written back: the maximum
            ctx.set(dut.score_valid, 1)
            ctx.set(dut.score, score)
            await ctx.tick()
            ctx.set(dut.score_valid, 0)
            await gap(ctx)
        await ctx.tick()
        await ctx.tick()
        seen["sum_sq"], seen["z_max"] = ctx.get(dut.sum_sq), ctx.get(dut.z_max)
        # RMSNorm RC
        for name, value in (("eps_sum", eps_sum), ("smant", smant), ("sshift", sshift),
                            ("nr_op", 1), ("nr_start", 1)):
            ctx.set(getattr(dut, name), value)
        await ctx.tick()
        ctx.set(dut.nr_start, 0)
        for _ in range(NewtonRaphson.latency(1)):
            assert not ctx.get(dut.rc_valid)
            await ctx.tick()
        assert ctx.get(dut.rc_valid)
        seen["rms_rc"] = (ctx.get(dut.rc_mant), ctx.get(dut.rc_shift))
        x_hat = []
        for k in range(d // L):
            ctx.set(dut.norm_a, _pack(x[k * L:(k + 1) * L] * g[k * L:(k + 1) * L], 16))
            await ctx.delay(1e-9)
            x_hat += _unpack(ctx.get(dut.norm_y), 8, L, signed=True)
        seen["x_hat"] = x_hat
        # exponentials, word by word (the last one partial), and their sum
        zp = np.concatenate([z, np.zeros(-t % L, int)])
        e_m, e_s = [], []
        for k in range(len(zp) // L):
            ctx.set(dut.z, _pack(zp[k * L:(k + 1) * L], 16))
            ctx.set(dut.z_mask, _pack([int(k * L + i < t) for i in range(L)], 1))
            ctx.set(dut.esum_add, 1)
            await ctx.delay(1e-9)
            e_m += _unpack(ctx.get(dut.e_m), 7, L)
            e_s += _unpack(ctx.get(dut.e_s), 3, L)
            await ctx.tick()
            ctx.set(dut.esum_add, 0)
            await gap(ctx)
        await ctx.tick()
        seen["sum_e"], seen["e_m"], seen["e_s"] = ctx.get(dut.sum_e), e_m[:t], e_s[:t]
        ctx.set(dut.nr_op, 0)
        ctx.set(dut.nr_start, 1)
        await ctx.tick()
        ctx.set(dut.nr_start, 0)
        for _ in range(NewtonRaphson.latency(0) + 1):
            await ctx.tick()
        seen["sm_rc"] = (ctx.get(dut.rc_mant), ctx.get(dut.rc_shift))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    rms = rdxe.rmsnorm_gemv(x, np.zeros((1, d), int), eps_sum, (smant, sshift), "sequential",
                            g, (smant, sshift))
    assert seen["sum_sq"] == rms["sumsq"] and seen["z_max"] == z.max()
    assert seen["rms_rc"] == tuple(int(v) for v in rms["rc"])
    assert seen["x_hat"] == rms["x_hat"].tolist()
    sm = rdxe.softmax_pv(z, int(z.max()), np.zeros((t, 1), int), (smant, sshift))
    m, s = fx.exp2_float(z - z.max())
    assert seen["e_m"] == m.tolist() and seen["e_s"] == s.tolist()
    assert seen["sum_e"] == sm["sum_e"]
    assert seen["sm_rc"] == tuple(int(v) for v in sm["rc"])
