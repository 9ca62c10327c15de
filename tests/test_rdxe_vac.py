# amaranth: UnusedElaboratable=no
"""The rDXE VAC (hdl/rdxe/vac.py) bit-exact with golden/rdxe.py, beat by beat.

GEMV rows from the weight memory, a softmax-weighted P.V column from the KV cache (7-bit-float
numerators with their product shifts), the baseline layout's gathered words, and a VAC without
a KV cache reading its VLINK. Random bubbles between beats; results in order with their
accumulators, ``RESULT_LATENCY`` cycles after each ``last`` beat.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator
from memwall.golden import fixedpoint as fx
from memwall.golden import rdxe
from memwall.hdl.rdxe.vac import RESULT_LATENCY, SRC_KV, SRC_WMEM, Vac

L, WORDS = 4, 64
FIELDS = ("valid", "x", "sh", "src", "addr", "first", "last", "mac", "gather", "gsel", "glane",
          "rows")


def _set_rc(ctx, dut, rc, narrow: int, load: int = 1):
    for name, value in (("load", load), ("clear", 0), ("mant", int(rc[0])),
                        ("shift", int(rc[1])), ("narrow", narrow)):
        ctx.set(getattr(dut.rc_in, name), value)


def _pack(values, bits: int) -> int:
    return sum((int(v) & ((1 << bits) - 1)) << (bits * i) for i, v in enumerate(values))


def _run(dut, wmem: dict, kv: dict, beats: list, rc, narrow: int, link=None):
    got, issued = [], []

    async def bench(ctx):
        for addr, word in wmem.items():
            ctx.set(dut.wmem_we, 1)
            ctx.set(dut.wmem_addr, addr)
            ctx.set(dut.wmem_data, word)
            await ctx.tick()
        ctx.set(dut.wmem_we, 0)
        for addr, (word, be) in kv.items():
            ctx.set(dut.kv_be, be)
            ctx.set(dut.kv_addr, addr)
            ctx.set(dut.kv_data, word)
            await ctx.tick()
        if kv:
            ctx.set(dut.kv_be, 0)
        _set_rc(ctx, dut, rc, narrow)
        await ctx.tick()
        ctx.set(dut.rc_in.load, 0)
        for cycle, beat in enumerate(beats + [{}] * (RESULT_LATENCY + 1)):
            for name in FIELDS:
                ctx.set(getattr(dut.hin, name), beat.get(name, 1 if name == "rows" else 0))
            if link is not None:
                ctx.set(dut.kv_link, link.get(beat.get("addr", -1), 0) if beat else 0)
            if beat.get("valid") and beat.get("last") and beat.get("mac"):
                issued.append(cycle)
            await ctx.tick()
            if ctx.get(dut.result_valid):
                got.append((ctx.get(dut.result), ctx.get(dut.result_acc), cycle))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert [c for *_, c in got] == [c + RESULT_LATENCY - 1 for c in issued]
    return [(y, acc) for y, acc, _ in got]


def _bubbles(rng, beats: list) -> list:
    out = []
    for beat in beats:
        out.append(beat)
        while rng.random() < 0.3:
            out.append({"valid": 0, "x": int(rng.integers(1 << (8 * L))), "last": 1})
    return out


def test_gemv_rows():
    rng = np.random.default_rng(31)
    n, d = 5, 4 * L
    w, x = rng.integers(-128, 128, (n, d)), rng.integers(-128, 128, d)
    w[0], x[0] = -128, -128                                   # the corner product 2**14
    c = d // L
    wmem = {r * c + k: _pack(w[r, k * L:(k + 1) * L], 8) for r in range(n) for k in range(c)}
    beats = [{"valid": 1, "x": _pack(x[k * L:(k + 1) * L], 8), "src": SRC_WMEM,
              "addr": r * c + k, "first": int(k == 0), "last": int(k == c - 1), "mac": 1}
             for r in range(n) for k in range(c)]
    rc = fx.rc_from_float(0.013)
    for narrow, bits in ((1, 8), (0, 16)):
        got = _run(Vac(L, WORDS, WORDS), wmem, {}, _bubbles(rng, beats), rc, narrow)
        acc = rdxe.gemv_acc(w, x)
        want = zip(rdxe.vac_out(acc, rc, bits).tolist(), acc.tolist(), strict=True)
        assert got == list(want)


def _pv_case(rng, t: int):
    v = rng.integers(-128, 128, t)
    m, s = fx.exp2_float(-rng.integers(0, 4000, t))
    m[0], s[0] = 64, fx.EXP_SHIFT_MAX                          # the maximum token
    return v, m, s, int((fx.exp2_value(m, s) * v).sum())


def test_pv_column_with_shifts_and_gather():
    rng = np.random.default_rng(32)
    t = 3 * L
    v, m, s, want_acc = _pv_case(rng, t)
    rc = fx.rc_from_float(1.0 / 7000)
    kv = {k: (_pack(v[k * L:(k + 1) * L], 8), (1 << L) - 1) for k in range(t // L)}
    beats = [{"valid": 1, "x": _pack(m[k * L:(k + 1) * L], 8),
              "sh": _pack(s[k * L:(k + 1) * L], 3), "src": SRC_KV, "addr": k,
              "first": int(k == 0), "last": int(k == t // L - 1), "mac": 1}
             for k in range(t // L)]
    want = [(int(rdxe.vac_out(want_acc, rc)), want_acc)]
    assert _run(Vac(L, WORDS, WORDS), {}, kv, _bubbles(rng, beats), rc, 1) == want
    # Baseline layout: token-major rows, byte 2 holds this VAC's dim, one row per beat.
    rows = {tok: (_pack([0, 0, v[tok], 0], 8), 0b0100) for tok in range(t)}
    gather = [{"valid": 1, "x": _pack(m[k * L:(k + 1) * L], 8),
               "sh": _pack(s[k * L:(k + 1) * L], 3), "src": SRC_KV, "addr": k * L + lane,
               "first": int(k == 0), "last": int(k == t // L - 1), "mac": int(lane == L - 1),
               "gather": 1, "gsel": 2, "glane": lane}
              for k in range(t // L) for lane in range(L)]
    assert _run(Vac(L, WORDS, WORDS), {}, rows, _bubbles(rng, gather), rc, 1) == want


def test_vlink_without_kv_cache():
    rng = np.random.default_rng(33)
    v, m, s, want_acc = _pv_case(rng, L)
    rc = fx.rc_from_float(1.0 / 5000)
    beats = [{"valid": 1, "x": _pack(m, 8), "sh": _pack(s, 3), "src": SRC_KV, "addr": 5,
              "first": 1, "last": 1, "mac": 1}]
    dut = Vac(L, WORDS, WORDS, kv=False)
    assert not hasattr(dut, "kv_be")
    # The link carries the owner's read data one cycle after the address (a synchronous read).
    got = _run_link(dut, beats, rc, _pack(v, 8))
    assert got == [(int(rdxe.vac_out(want_acc, rc)), want_acc)]


def _run_link(dut, beats, rc, word):
    got = []

    async def bench(ctx):
        _set_rc(ctx, dut, rc, 1)
        await ctx.tick()
        ctx.set(dut.rc_in.load, 0)
        for beat in beats + [{}] * (RESULT_LATENCY + 1):
            for name in FIELDS:
                ctx.set(getattr(dut.hin, name), beat.get(name, 1 if name == "rows" else 0))
            await ctx.tick()
            ctx.set(dut.kv_link, word)
            if ctx.get(dut.result_valid):
                got.append((ctx.get(dut.result), ctx.get(dut.result_acc)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("lanes, wmem, kv", [(16, 256, 128), (4, 8, 1024)])
def test_ports_follow_the_parameters(lanes, wmem, kv):
    dut = Vac(lanes, wmem, kv)
    assert len(dut.kv_data) == 8 * lanes and len(dut.kv_addr) == (kv - 1).bit_length()
    assert len(dut.wmem_addr) == (wmem - 1).bit_length()


def test_result_waits_for_a_current_rc_and_rows_mask():
    """A finished sum waits while the RC is stale and fires the cycle after it loads; a VAC
    whose index is not below the beat's ``rows`` gives no result."""
    rng = np.random.default_rng(34)
    w, x = rng.integers(-128, 128, L), rng.integers(-128, 128, L)
    acc = int(rdxe.gemv_acc(w[None, :], x)[0])
    rc = fx.rc_from_float(0.02)
    beat = {"valid": 1, "x": _pack(x, 8), "addr": 3, "first": 1, "last": 1, "mac": 1, "rows": 2}
    for index, wait in ((1, 6), (2, 0)):
        dut = Vac(L, WORDS, WORDS)
        got = []

        async def bench(ctx, dut=dut, index=index, wait=wait, got=got):
            ctx.set(dut.index, index)
            ctx.set(dut.wmem_we, 1)
            ctx.set(dut.wmem_addr, 3)
            ctx.set(dut.wmem_data, _pack(w, 8))
            ctx.set(dut.rc_in.clear, 1)
            await ctx.tick()
            ctx.set(dut.wmem_we, 0)
            ctx.set(dut.rc_in.clear, 0)
            for cycle in range(RESULT_LATENCY + wait + 3):
                for name in FIELDS:
                    ctx.set(getattr(dut.hin, name), beat.get(name, 0) if cycle == 0 else 0)
                if cycle == RESULT_LATENCY - 1 + wait:
                    _set_rc(ctx, dut, rc, 1)
                await ctx.tick()
                ctx.set(dut.rc_in.load, 0)
                if ctx.get(dut.result_valid):
                    got.append((cycle, ctx.get(dut.result), ctx.get(dut.result_acc)))

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        sim.run()
        want = [(RESULT_LATENCY + wait, int(rdxe.vac_out(acc, rc)), acc)] if index < 2 else []
        assert got == want
