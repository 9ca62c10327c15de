"""The Gumbel variate of the sampling noise, ``G = -ln(-ln u)``, as integer arithmetic the RTL
can build: two table-interpolated logarithms and one table-interpolated ``-ln(1-d)/d``, in fixed
point, to an FP32 result.

The input is the uniform's cell index ``m`` (:func:`memwall.golden.dplena.rng.uniform_mantissa`,
23 bits): ``u = n * 2**-24`` with ``n = 2m + 1`` odd, so ``u`` is in (0, 1) and G is finite.

1. ``t = -ln u``, kept in floating form (an integer significand and a power of two) so that its
   *relative* error stays small everywhere, since ``G``'s absolute error is ``t``'s relative one:

   * ``u < 1/2`` (``n < 2**23``): with ``n = 2**p (1 + f)``, ``-log2 u = 24 - p - log2(1 + f)``
     (``>= 1``, no cancellation); ``t`` is that times ln 2.
   * ``u >= 1/2``: with ``d = 1 - u = (2**24 - n) * 2**-24`` (exact), ``t = d * h(d)``, ``h(d) =
     -ln(1 - d) / d`` in [1, 2 ln 2] on (0, 1/2]. Going through ``log2(1 + f)`` here would cancel
     to nothing as ``u`` nears 1, where G is largest.

2. ``G = -ln t = -ln 2 * (q + log2(1 + g))`` with ``t = 2**q (1 + g)``.

Each table has ``2**TABLE_BITS + 1`` entries on its interval, rounded to ``FRAC_BITS`` fraction
bits; a value is the entry below plus the slope times the remaining bits, truncated. Every
product and sum keeps ``FRAC_BITS`` fraction bits (truncated); G, signed fixed point, is rounded
once, to nearest even, to FP32. :func:`gumbel_fp32` is that arithmetic in NumPy integers, the
model the RTL will match bit for bit; :func:`measure` gives its error against float64 over all
2**23 inputs: at most :data:`MAX_ABS_ERROR` = 2**-15 absolute (tests/dplena/test_gumbel.py
measures it exhaustively), the linear interpolation's, over a range of G from -2.81 to 16.64.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from memwall.golden.common.fixedpoint import bit_length
from memwall.golden.dplena.rng import UNIFORM_BITS

__all__ = ["TABLE_BITS", "FRAC_BITS", "MAX_ABS_ERROR", "log2_table", "h_table", "gumbel_fp32",
           "gumbel_reference", "measure"]

#: Interpolation segments per table: 2**TABLE_BITS.
TABLE_BITS = 6
#: Fraction bits of every fixed-point value.
FRAC_BITS = 24
#: The bound on |G - G_float64| over every input (exhaustively checked).
MAX_ABS_ERROR = 2.0 ** -15
_N_BITS = UNIFORM_BITS + 1               # n = 2m + 1 has 24 bits
_LN2 = round(math.log(2) * (1 << FRAC_BITS))


@cache
def log2_table() -> np.ndarray:
    """``log2(1 + i / 2**TABLE_BITS)``, i = 0 .. 2**TABLE_BITS, in FRAC_BITS fraction bits."""
    x = 1 + np.arange((1 << TABLE_BITS) + 1) / (1 << TABLE_BITS)
    return np.round(np.log2(x) * (1 << FRAC_BITS)).astype(np.int64)


@cache
def h_table() -> np.ndarray:
    """``-ln(1 - d) / d`` at ``d = i / 2**(TABLE_BITS + 1)``, i = 0 .. 2**TABLE_BITS (d in
    [0, 1/2]; 1 at d = 0), in FRAC_BITS fraction bits."""
    d = np.arange((1 << TABLE_BITS) + 1) / (1 << (TABLE_BITS + 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(d == 0, 1.0, -np.log1p(-d) / np.where(d == 0, 1.0, d))
    return np.round(h * (1 << FRAC_BITS)).astype(np.int64)


def _interpolate(table: np.ndarray, frac: np.ndarray, frac_bits: int) -> np.ndarray:
    """Table value at ``frac / 2**frac_bits`` of its interval (``frac`` < 2**frac_bits): the
    entry below plus slope times the remaining bits, truncated."""
    shift = frac_bits - TABLE_BITS
    i = frac >> shift
    rest = frac & ((1 << shift) - 1)
    lo, hi = table[i], table[i + 1]
    return lo + (((hi - lo) * rest) >> shift)


def _to_fp32(value: np.ndarray, frac_bits: int) -> np.ndarray:
    """Signed fixed point (int64, ``frac_bits`` fraction bits) to FP32, round to nearest even:
    one rounding, since ``|value| < 2**53`` is exact in float64 and the scaling by a power of
    two is too (the results are FP32 normals or 0)."""
    return np.ldexp(value.astype(np.float64), -frac_bits).astype(np.float32)


def gumbel_fp32(mantissa) -> np.ndarray:
    """``G = -ln(-ln u)`` for the uniform cell indices ``mantissa`` (uint32, < 2**23), float32,
    by the module docstring's arithmetic (the RTL's model)."""
    m = np.asarray(mantissa, dtype=np.int64)
    if np.any((m < 0) | (m >= (1 << UNIFORM_BITS))):
        raise ValueError(f"mantissa: expected {UNIFORM_BITS}-bit values")
    F = FRAC_BITS
    n = 2 * m + 1
    # 1. t = -ln u as (significand, exponent): t = sig * 2**(exp - F).
    low = n < (1 << (_N_BITS - 1))
    p = bit_length(n) - 1
    f = (n - (np.int64(1) << p)) << (F - p)       # exact: p <= 22 < F on this branch
    a = ((_N_BITS - p) << F) - _interpolate(log2_table(), np.where(low, f, 0), F)
    t_low = (a * _LN2) >> F                        # -ln u, F fraction bits, >= ln 2
    d = (np.int64(1) << _N_BITS) - n               # d * 2**24, 1 .. 2**23
    h = _interpolate(h_table(), np.where(low, 0, d << (F - _N_BITS + 1)), F)
    t_sig = np.where(low, t_low, d * h)            # d * h: F + 24 fraction bits
    t_exp = np.where(low, 0, -_N_BITS)             # t = t_sig * 2**(t_exp - F)
    # 2. normalise t = 2**q (1 + g), g with F fraction bits; G = -ln2 (q + log2(1 + g)).
    bits = bit_length(t_sig)
    q = bits - 1 + t_exp - F
    rest = t_sig - (np.int64(1) << (bits - 1))
    g = np.where(bits - 1 >= F, rest >> np.maximum(bits - 1 - F, 0),
                 rest << np.maximum(F - bits + 1, 0))
    log_t = (q << F) + _interpolate(log2_table(), g, F)
    return _to_fp32(-((log_t * _LN2) >> F), F)


def gumbel_reference(mantissa) -> np.ndarray:
    """``-ln(-ln u)`` in float64, ``u = (m + 1/2) * 2**-23`` (``log1p`` for u near 1)."""
    u_minus_1 = -(((1 << UNIFORM_BITS) - np.asarray(mantissa, np.float64)) - 0.5) * \
        2.0 ** -UNIFORM_BITS
    return -np.log(-np.log1p(u_minus_1))


def measure(mantissa=None) -> dict:
    """:func:`gumbel_fp32` against float64 over ``mantissa`` (default: all 2**23 inputs): the
    largest absolute error, where, and the largest relative one where |G| >= 1."""
    m = np.arange(1 << UNIFORM_BITS, dtype=np.uint32) if mantissa is None else \
        np.asarray(mantissa, dtype=np.uint32)
    got = gumbel_fp32(m).astype(np.float64)
    want = gumbel_reference(m)
    err = np.abs(got - want)
    big = np.abs(want) >= 1
    worst = int(np.argmax(err))
    return {"inputs": int(m.size), "max_abs_error": float(err.max()),
            "at_mantissa": int(m[worst]),
            "g_there": float(want[worst]),
            "max_rel_error_where_abs_g_ge_1": float((err[big] / np.abs(want[big])).max())
            if big.any() else None,
            "g_range": [float(want.min()), float(want.max())]}
