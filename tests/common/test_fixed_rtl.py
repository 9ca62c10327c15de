# amaranth: UnusedElaboratable=no
"""Fixed-point RTL blocks (hdl/common/fixed.py) bit-exact with golden/common/fixedpoint.py.

``Exp2Float`` over every input; ``RcApply`` on random operands plus the corners (both
saturation widths, shift 0 and 63, the most negative accumulator, zero mantissa);
``NewtonRaphson`` on random and corner inputs of both operations, with its latency.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from memwall.golden.common import fixedpoint as fx
from memwall.hdl.common.fixed import Exp2Float, NewtonRaphson, RcApply


def _comb(dut, columns: dict, outputs: tuple) -> list:
    got = []
    names = list(columns)
    rows = list(zip(*(np.asarray(columns[k]).tolist() for k in names), strict=True))

    async def bench(ctx):
        for row in rows:
            for name, value in zip(names, row, strict=True):
                ctx.set(getattr(dut, name), value)
            await ctx.delay(1e-9)
            got.append(tuple(ctx.get(getattr(dut, o)) for o in outputs))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("stages", [0, 1])
def test_rc_apply(stages):
    rng = np.random.default_rng(21)
    n = 3000
    acc = np.concatenate([rng.integers(-2 ** 31, 2 ** 31, n), [0, -2 ** 31, 2 ** 31 - 1, 1, -1]])
    mant = np.concatenate([rng.integers(2 ** 24, 2 ** 25, n),
                           [2 ** 24, 2 ** 25 - 1, 2 ** 24, 0, 2 ** 25 - 1]])
    shift = np.concatenate([rng.integers(0, 64, n), [0, 63, 30, 5, 1]])
    narrow = rng.integers(0, 2, acc.size)
    dut = RcApply(stages=stages)
    if stages:
        got = _piped(dut, acc, mant, shift, narrow)
    else:
        got = [g[0] for g in _comb(dut, {"acc": acc, "mant": mant, "shift": shift,
                                         "narrow": narrow}, ("y",))]
    want = np.where(narrow == 1, fx.apply_rc(acc, mant, shift, 8),
                    fx.apply_rc(acc, mant, shift, 16))
    assert np.array_equal(np.array(got), want)


def _piped(dut, acc, mant, shift, narrow) -> list:
    got = []

    async def bench(ctx):
        ctx.set(dut.load, 1)
        for row in zip(acc.tolist(), mant.tolist(), shift.tolist(), narrow.tolist(),
                       strict=True):
            for name, value in zip(("acc", "mant", "shift", "narrow"), row, strict=True):
                ctx.set(getattr(dut, name), value)
            await ctx.tick()
            got.append(ctx.get(dut.y))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got


def test_exp2_float_every_input():
    nd = np.arange(0, 1 << 17)
    got = np.array(_comb(Exp2Float(), {"nd": nd}, ("m", "s")))
    m, s = fx.exp2_float(-nd)
    assert np.array_equal(got[:, 0], m) and np.array_equal(got[:, 1], s)


def test_newton_raphson():
    rng = np.random.default_rng(22)
    corners = [0, 1, 2, 3, 255, 256, 2 ** 16 - 1, 2 ** 16, 2 ** 31, 2 ** 32 - 1]
    us = np.concatenate([rng.integers(0, 2 ** 32, 300), corners, corners])
    ops = np.concatenate([rng.integers(0, 2, 300), np.zeros(len(corners), int),
                          np.ones(len(corners), int)])
    smant = rng.integers(1, 2 ** 16, us.size)
    sshift = rng.integers(-40, 70, us.size)
    smant[:4] = [1, 2 ** 16 - 1, 2 ** 15, 2 ** 16 - 1]
    sshift[:4] = [-128 + 1, 127, 0, -40]                  # saturate high, to zero, plain
    dut = NewtonRaphson()
    got = []

    async def bench(ctx):
        for u, op, a, b in zip(us.tolist(), ops.tolist(), smant.tolist(), sshift.tolist(),
                               strict=True):
            for name, value in (("u", u), ("op", op), ("smant", a), ("sshift", b)):
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles = 1
            while not ctx.get(dut.done):
                assert ctx.get(dut.busy)
                await ctx.tick()
                cycles += 1
            got.append((ctx.get(dut.mant), ctx.get(dut.shift), cycles))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for (mant, shift, cycles), u, op, a, b in zip(got, us, ops, smant, sshift, strict=True):
        rc = fx.invsqrt_rc(u) if op else fx.recip_rc(u)
        assert (mant, shift) == tuple(int(v) for v in fx.rc_mul(*rc, a, b)), (u, op, a, b)
        assert cycles == NewtonRaphson.latency(op)
