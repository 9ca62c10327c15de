"""Fixed-point blocks (golden/common/fixedpoint.py): exhaustive bounds against float64.

The Newton–Raphson outputs depend on ``u`` only through its normalised 16-bit mantissa and its
exponent, so both ends of every mantissa's interval of ``u`` cover all ``2**32 - 1`` inputs.
``2**x`` is checked at every input it can see (``d`` from ``-2**17`` to 0).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from memwall.golden.common import fixedpoint as fx


def _mantissa_intervals(even: bool):
    """(first u, last u) of every (exponent, mantissa) cell of ``1 .. 2**32 - 1``."""
    lows, highs = [], []
    for top in range(32):
        e = top - (top & 1) if even else top
        s = e - (fx.NR_IN_BITS - 2 if even else fx.NR_IN_BITS - 1)
        if s <= 0:
            u = np.arange(1 << top, 1 << (top + 1), dtype=np.int64)
            lows.append(u)
            highs.append(u)
        else:
            m = np.arange((1 << top) >> s, (1 << (top + 1)) >> s, dtype=np.int64)
            lows.append(m << s)
            highs.append(((m + 1) << s) - 1)
    return np.concatenate(lows), np.concatenate(highs)


@pytest.mark.parametrize("func, exact, even", [
    (fx.recip_rc, lambda u: 1.0 / u, False),
    (fx.invsqrt_rc, lambda u: 1.0 / np.sqrt(u), True),
], ids=["recip", "invsqrt"])
def test_newton_raphson_bounds_every_input(func, exact, even):
    lo, hi = _mantissa_intervals(even)
    mant, shift = func(lo)
    mant_hi, shift_hi = func(hi)
    assert np.array_equal(mant, mant_hi) and np.array_equal(shift, shift_hi)
    assert np.all(mant >> (fx.RC_MANT_BITS - 1) == 1) and np.all(mant < 1 << fx.RC_MANT_BITS)
    value = fx.rc_value(mant, shift)
    rel = np.concatenate([value / exact(lo.astype(float)) - 1, value / exact(hi.astype(float)) - 1])
    assert rel.min() > -2.0 ** -24 and rel.max() < 2.0 ** -15      # the docstring's bounds
    # Without input truncation the iterations alone are good to the 25-bit output.
    exact_in = lo == hi
    assert np.abs(rel[: lo.size][exact_in]).max() < 2.0 ** -23


def test_newton_raphson_zero_and_top():
    assert fx.recip_rc(0) == fx.recip_rc(1)
    m, s = fx.recip_rc(1)
    assert fx.rc_value(m, s) == pytest.approx(1.0, rel=2 ** -24)
    m, s = fx.invsqrt_rc((1 << 32) - 1)
    assert fx.rc_value(m, s) == pytest.approx(2.0 ** -16, rel=2 ** -15)


def test_exp2_float_every_input():
    d = np.arange(-(1 << 17), 1)
    m, s = fx.exp2_float(d)
    value, exact = fx.exp2_value(m, s), fx.exp2_reference(d)
    assert m.max() <= 127 and s.max() <= fx.EXP_SHIFT_MAX and np.all(m[s > 0] >= 64)
    err = np.abs(value - exact)
    big = m >= 64
    assert (err[big] / exact[big]).max() < 2 ** -6.5
    assert (err[s > 0] / exact[s > 0]).max() < 2 ** -7
    assert err[~big].max() < 0.75
    assert np.all(np.diff(value) >= 0)
    assert d[value == 0].max() == -3330 and value[-1] == 1 << (fx.EXP_SHIFT_MAX + 6)
    assert np.array_equal(fx.exp2_float(np.array([5])), fx.exp2_float(np.array([0])))


def test_rounding_and_rc_helpers():
    assert fx.shift_round([5, -5, 6, -6, 7], 1).tolist() == [3, -2, 3, -3, 4]   # half up
    assert fx.shift_round(-7, 0) == -7
    assert fx.saturate([300, -300, 5], 8).tolist() == [127, -128, 5]
    m, s = fx.rc_from_float(0.75)
    assert fx.rc_value(m, s) == 0.75 and m >> 24 == 1
    assert fx.rc_from_float(0.0) == (0, 63)
    assert fx.rc_value(*fx.rc_from_float(2.0 ** -60)) == 0           # below the shift range
    assert fx.rc_from_float(2.0 ** 30) == ((1 << 25) - 1, 0)           # saturates
    assert fx.apply_rc(1000, *fx.rc_from_float(0.5), 8) == 127
    assert fx.apply_rc(-3, *fx.rc_from_float(0.5), 8) == -1            # -1.5 rounds half up
    prod = fx.rc_mul(*fx.rc_from_float(1.5), 3 << 14, 15)               # 1.5 * 1.5
    assert fx.rc_value(*prod) == 2.25
    with pytest.raises(ValueError):
        fx.rc_from_float(-1.0)


def test_golden_imports_without_amaranth():
    code = ("import sys, memwall.golden.common.fixedpoint, memwall.golden.rdxe.datapath; "
            "assert 'amaranth' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
