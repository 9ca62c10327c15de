# amaranth: UnusedElaboratable=no
"""BF16 exp and 1/x: golden accuracy against float64 (exhaustive), special values, and the RTL
(Amaranth's Python simulator) bit-exact with the golden model over all 65536 inputs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from amaranth.sim import Simulator

from memwall.golden.common.formats import BF16, bf16_bits
from memwall.golden.common.transcendental import (
    EXP_PARAMS,
    bf16_exp,
    bf16_recip,
    exp_reference,
    exp_tables,
    measure,
    nearest_bf16,
    recip_reference,
    recip_table,
)
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

ALL = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
QNAN, INF, ONE = BF16.qnan_bits, BF16.inf_bits, 0x3F80

# Figures measured exhaustively (`python -m memwall.golden.common.transcendental`) and written in
# the golden docstrings; a change that loses accuracy fails here.
EXP_MAX_ULP = 0.6035          # over inputs whose exact result is a normal BF16 number
EXP_MIN_CORRECT = 65128       # of 65280 finite inputs correctly rounded (99.767 %)
RECIP_MAX_ULP = 0.4980
FINITE = 65280


def _values(bits):
    with np.errstate(invalid="ignore"):   # NaN patterns
        return BF16.from_bits(np.asarray(bits, dtype=np.uint16)).astype(np.float64)


def _finite(bits):
    return np.isfinite(_values(bits))


# --- golden accuracy ---------------------------------------------------------------------------

def test_exp_accuracy_bounds():
    r = measure(bf16_exp, exp_reference)
    assert r["finite"] == FINITE
    assert r["max_ulp"] <= EXP_MAX_ULP + 1e-4
    assert r["correct"] >= EXP_MIN_CORRECT
    assert r["fraction"] >= 0.99                       # the design target


def test_exp_wrong_results_are_one_ulp_or_flushed():
    """Every result that is not the correctly rounded one is its neighbour, or +0 where the
    correctly rounded result is a subnormal (flush to zero, x in [-92.5, -87.5])."""
    got = bf16_exp(ALL)
    want = nearest_bf16(exp_reference(ALL))
    bad = _finite(ALL) & (got != want)
    flushed = bad & (got == 0)
    assert np.all((want[flushed] > 0) & (want[flushed] < 0x80))
    assert flushed.sum() == 11
    off = bad & ~flushed
    assert np.all(np.abs(got[off].astype(int) - want[off].astype(int)) == 1)
    # No result below 2**-126 except +0, and +0 only where e**x < 2**-126.
    assert not np.any((got > 0) & (got < 0x80))
    small = exp_reference(ALL) < 2.0 ** -126
    assert np.all(small[_finite(ALL) & (got == 0)])


def test_exp_monotonic():
    fin = _finite(ALL)
    x = ALL[fin][np.argsort(_values(ALL[fin]), kind="stable")]
    y = _values(bf16_exp(x))
    assert np.all(y[1:] >= y[:-1])


def test_recip_correctly_rounded_everywhere():
    r = measure(bf16_recip, recip_reference)
    assert r["correct"] == r["finite"] == FINITE
    assert r["max_ulp"] <= RECIP_MAX_ULP + 1e-4
    # ... and that includes subnormal inputs and outputs.
    got, want = bf16_recip(ALL), nearest_bf16(recip_reference(ALL))
    fin = _finite(ALL)
    assert np.array_equal(got[fin], want[fin])
    assert np.any(fin & ((got & 0x7F80) == 0) & ((got & 0x7FFF) != 0))   # subnormal outputs seen


# --- special values ----------------------------------------------------------------------------

EXP_CASES = [
    (0x0000, ONE), (0x8000, ONE),                      # ±0
    (0x0001, ONE), (0x807F, ONE),                      # subnormals
    (0x7F80, INF), (0xFF80, 0x0000),                   # ±inf
    (0x7FC0, QNAN), (0x7F81, QNAN), (0xFFFF, QNAN), (0xFFC1, QNAN),
    (0x7F7F, INF), (0xFF7F, 0x0000),                   # ±max finite
    (0x4300, INF), (0xC300, 0x0000),                   # ±128
    (bf16_bits(88.5)[()], 0x7F4D),                     # largest finite result: e**88.5
    (bf16_bits(89.0)[()], INF),                        # smallest overflow
    (bf16_bits(-87.0)[()], 0x00B3),                    # smallest normal result (1.65e-38)
    (bf16_bits(-87.5)[()], 0x0000),                    # would be subnormal: flushed
    (bf16_bits(1.0)[()], 0x402E),                      # e = 2.71875 in BF16
    (bf16_bits(-1.0)[()], 0x3EBC),                     # 1/e
    # Near 1 the exact result lies close to a rounding tie (1 + x for x = ±k * 2**-9):
    (0x3B80, ONE),                                     # 2**-8: 1.0, a miss 0.001 ulp from
                                                       # the tie (exact rounds to 0x3F81)
    (0x3B7F, ONE),                                     # just below 2**-8: 1.0
    (0xBB00, ONE),                                     # -2**-9: 1.0 (above the tie)
    (0xBB01, ONE),                                     # -2**-9 * (1 + 2**-7): a miss 0.003
                                                       # ulp from the tie (exact: 0x3F7F)
    (0xBB40, 0x3F7F),                                  # -1.5 * 2**-9: 1 - 2**-8
    (0x3AFF, ONE), (0xBAFF, ONE),                      # |x| < 2**-9: special path
]


@pytest.mark.parametrize("x, y", EXP_CASES, ids=[f"{x:#06x}" for x, _ in EXP_CASES])
def test_exp_special_values(x, y):
    assert int(bf16_exp(np.array([x], np.uint16))[0]) == y


def test_exp_special_values_are_reference_where_not_flushed():
    # The table above agrees with the correctly rounded float64 result, except the flush and
    # the two near-tie misses marked there.
    xs = np.array([x for x, _ in EXP_CASES], np.uint16)
    ys = np.array([y for _, y in EXP_CASES], np.uint16)
    want = nearest_bf16(exp_reference(xs))
    differs = {int(x) for x in xs[ys != want]}
    assert differs == {bf16_bits(-87.5)[()], 0x3B80, 0xBB01}


RECIP_CASES = [
    (0x0000, INF), (0x8000, 0xFF80),                   # ±0 -> ±inf
    (0x7F80, 0x0000), (0xFF80, 0x8000),                # ±inf -> ±0
    (0x7FC0, QNAN), (0xFF81, QNAN), (0x7FFF, QNAN),
    (0x3F80, 0x3F80), (0xBF80, 0xBF80),                # ±1
    (0x4040, 0x3EAB),                                  # 1/3
    (0x4000, 0x3F00), (0x3F00, 0x4000),                # 2, 0.5
    (0x0080, 0x7E80),                                  # 2**-126 -> 2**126
    (0x7E80, 0x0080),                                  # 2**126 -> 2**-126 (normal)
    (0x7F00, 0x0040),                                  # 2**127 -> 2**-127 (subnormal)
    (0x7F7F, 0x0020),                                  # max finite -> 2**-128 (rounded)
    (0x7E81, 0x007F),                                  # just above 2**126: subnormal
    (0x0040, 0x7F00),                                  # subnormal 2**-127 -> 2**127
    (0x0021, 0x7F78),                                  # 33 * 2**-133 -> 2**133 / 33
    (0x0020, INF), (0x801F, 0xFF80), (0x0001, INF),    # tiny subnormals overflow
]


@pytest.mark.parametrize("x, y", RECIP_CASES, ids=[f"{x:#06x}" for x, _ in RECIP_CASES])
def test_recip_special_values(x, y):
    assert int(bf16_recip(np.array([x], np.uint16))[0]) == y


def test_recip_table():
    t = recip_table()
    assert len(t) == 128 and t[0] == 1 << 8
    for f in range(1, 128):
        q8 = 128 | (t[f] & 0x7F)
        exact = 256 / (128 + f) * 128
        assert abs(q8 - exact) < 0.5
        assert ((t[f] >> 7) & 1) == (q8 < exact)


def test_nearest_bf16():
    # ml_dtypes double-rounds through float32; nearest_bf16 must not.
    assert nearest_bf16(1 + 2.0 ** -8 + 2.0 ** -30)[()] == 0x3F81
    assert nearest_bf16(2.0 ** -133)[()] == 0x0001
    assert nearest_bf16(3.0e38)[()] == 0x7F62
    assert nearest_bf16(3.4e38)[()] == INF and nearest_bf16(-3.4e38)[()] == 0xFF80
    assert nearest_bf16(np.nan)[()] == QNAN


# --- parameters ------------------------------------------------------------------------------

def test_exp_params_validated():
    with pytest.raises(ValueError, match="keys"):
        exp_tables({**EXP_PARAMS, "bogus": 1})
    with pytest.raises(ValueError, match="table_bits"):
        exp_tables({**EXP_PARAMS, "table_bits": 0})
    with pytest.raises(ValueError, match="interp_bits"):
        Bf16Exp({**EXP_PARAMS, "interp_bits": 9})


def test_params_json_and_rebuild():
    e = Bf16Exp()
    assert json.loads(json.dumps(e.params)) == EXP_PARAMS
    assert Bf16Exp(e.params).params == e.params
    assert Bf16Recip().params == {}


def test_golden_imports_without_amaranth():
    code = ("import sys, memwall.golden.common.transcendental as t, numpy as np; "
            "t.bf16_exp(np.zeros(1, np.uint16)); assert 'amaranth' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- RTL == golden ---------------------------------------------------------------------------

def _simulate(dut, xs) -> np.ndarray:
    got = []

    async def bench(ctx):
        for x in xs.tolist():
            ctx.set(dut.a, x)
            await ctx.delay(1e-9)
            got.append(ctx.get(dut.y))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return np.array(got, dtype=np.uint16)


@pytest.mark.parametrize("make, golden", [(Bf16Exp, bf16_exp), (Bf16Recip, bf16_recip)],
                         ids=["exp", "recip"])
def test_rtl_matches_golden_exhaustive(make, golden):
    got = _simulate(make(), ALL)
    want = golden(ALL)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(ALL[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]


@pytest.mark.parametrize("params", [
    {"t_frac_bits": 13, "table_bits": 5, "interp_bits": 8, "table_frac_bits": 13,
     "slope_frac_bits": 7},
    {"t_frac_bits": 9, "table_bits": 4, "interp_bits": 4, "table_frac_bits": 11,
     "slope_frac_bits": 3},
], ids=["wide", "narrow"])
def test_rtl_exp_other_params(params):
    """Other width points stay bit-exact (the datapath every input can reach: exp 118..133)."""
    rng = np.random.default_rng(7)
    span = np.arange(118 << 7, 134 << 7, dtype=np.uint32)
    xs = np.concatenate([span, span | 0x8000, rng.integers(0, 1 << 16, 512)]).astype(np.uint16)
    got = _simulate(Bf16Exp(params), xs)
    assert np.array_equal(got, bf16_exp(xs, params))
