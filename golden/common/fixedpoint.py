"""Fixed-point arithmetic shared by the integer datapaths: rounding shifts, saturation, a
floating scale factor (``RC``), ``2**x`` and Newton–Raphson ``1/x`` and ``1/sqrt(x)``.

Bit-exact with :mod:`memwall.hdl.common.fixed`: every function mirrors the RTL in integer
arithmetic of the same widths, and the ROM contents are computed here once and read by the RTL.
All functions take and return NumPy integer arrays (or Python ints) and work elementwise.

**2**x** (:func:`exp2_float`) is softmax's numerator: a 7-bit float (INT8 mantissa, 3-bit
exponent) so that tokens far below the maximum keep 7 significant bits; a plain INT8 numerator
puts up to 0.5 absolute error on every token, which the output scale magnifies (measured: about
85 % of outputs within 1 LSB on random heads, against 100 % with this format).

**Rounding.** Every right shift that drops bits rounds half up: ``floor(x / 2**s + 1/2)``
(:func:`shift_round`), one adder in hardware. Saturation clamps to the two's-complement range
(:func:`saturate`).

**Scale factor (RC).** A positive real factor is a pair ``(mant, shift)``: ``mant`` has
:data:`RC_MANT_BITS` (25) bits with its top bit set, or is 0 for the factor 0; ``shift`` is in
``0 .. 63``; the value is ``mant * 2**-shift``. Applying it to an integer is one multiply and
one rounding shift (:func:`apply_rc`): the recompute unit (RCU) and post-processing unit (PPU)
of rDXE's VAC. :func:`rc_from_float` (host side) and :func:`rc_mul` (the vector engine folding a
static requantisation factor into a computed one) produce it.

**Newton–Raphson** (:func:`recip_rc`, :func:`invsqrt_rc`). The input ``u`` (``1 .. 2**32 - 1``;
0 is taken as 1) is normalised to a 16-bit mantissa ``m`` (truncated: a relative error below
``2**-15``), a 7-bit seed ROM gives ``y0``, and :data:`NR_ITERATIONS` (2) iterations in Q1.30
fixed point (products truncated) refine it. Both iterations approach the root from below, so
``y`` stays under 1.0 in Q1.30. The result is normalised to an RC.

Measured bounds over every input (``tests/common/test_golden_fixedpoint.py``). The output depends on
``u`` only through its mantissa and exponent, so checking both ends of every mantissa's interval
of ``u`` against float64 covers all ``2**32 - 1`` inputs:

* ``recip_rc(u)`` and ``invsqrt_rc(u)``: relative error in ``(-2**-24, +2**-15)``. The negative
  side is the iteration (from below) and the 25-bit truncation; the positive side is the
  truncated input mantissa (both are exact, to ``2**-24``, when ``u`` has at most 16 significant
  bits, or 15 for ``invsqrt`` at an even exponent).
* ``exp2_float(d)`` (``d <= 0``, ``2**(12 + d/256)`` as a 7-bit float): relative error below
  ``2**-6.5`` where ``m >= 64`` (``2**-7`` wherever ``s > 0``); below that (gradual underflow,
  a second rounding) absolute error below 0.75, and 0 from ``d = -3330`` (exact value under
  0.5). Monotonic in ``d``.

Importable without Amaranth.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = [
    "RC_MANT_BITS", "RC_SHIFT_MAX", "NR_IN_BITS", "NR_FRAC", "NR_SEED_BITS", "NR_ITERATIONS",
    "EXP_FRAC_BITS", "EXP_SHIFT_MAX",
    "shift_round", "saturate", "apply_rc", "rc_from_float", "rc_value", "rc_mul",
    "normalise_rc", "recip_rc", "invsqrt_rc", "recip_seed_table", "invsqrt_seed_table",
    "exp2_table", "exp2_float", "exp2_value", "exp2_reference", "bit_length",
]

#: Bits of an RC mantissa (the paper's 25-bit RC factor).
RC_MANT_BITS = 25
#: Largest RC shift (a 6-bit field).
RC_SHIFT_MAX = 63
#: Bits of the normalised Newton–Raphson input mantissa.
NR_IN_BITS = 16
#: Fraction bits of the Newton–Raphson iterate ``y`` (Q1.30).
NR_FRAC = 30
#: Seed ROM index bits (the mantissa bits below the leading one, or below the top two bits).
NR_SEED_BITS = 7
#: Newton–Raphson iterations.
NR_ITERATIONS = 2
#: Fraction bits of the ``2**x`` argument (x in units of 2**-8).
EXP_FRAC_BITS = 8
#: Largest exponent of the ``2**x`` output's 7-bit float (a lane's product shift).
EXP_SHIFT_MAX = 6


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def shift_round(x, s) -> np.ndarray:
    """``floor(x / 2**s + 1/2)`` for ``s >= 1``, ``x`` for ``s == 0`` (int64 elementwise;
    ``|x| < 2**62``, ``0 <= s <= 63``)."""
    x, s = _i64(x), _i64(s)
    half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
    return np.right_shift(x + half, s)


def saturate(x, bits: int) -> np.ndarray:
    """Clamp to the ``bits``-bit two's-complement range."""
    top = (1 << (bits - 1)) - 1
    return np.clip(_i64(x), -top - 1, top)


def apply_rc(acc, mant, shift, bits: int) -> np.ndarray:
    """The RCU and PPU: ``saturate(shift_round(acc * mant, shift), bits)``.

    ``acc`` is INT32, ``mant`` a 25-bit RC mantissa: the product has 57 bits.
    """
    return saturate(shift_round(_i64(acc) * _i64(mant), shift), bits)


def normalise_rc(y, point) -> tuple[np.ndarray, np.ndarray]:
    """RC of the value ``y * 2**-point`` (``y > 0``, under 2**62) by truncating ``y`` to its top
    25 bits. A ``shift`` above 63 gives the factor 0 ``(0, 63)``; below 0 saturates to
    ``(2**25 - 1, 0)``."""
    y, point = _i64(y), _i64(point)
    top = bit_length(y) - 1
    drop = top - (RC_MANT_BITS - 1)
    mant = np.where(drop >= 0, np.right_shift(y, np.maximum(drop, 0)),
                    np.left_shift(y, np.maximum(-drop, 0)))
    shift = point - drop
    return _clamp_rc(mant, shift)


def _clamp_rc(mant, shift):
    zero = shift > RC_SHIFT_MAX
    huge = shift < 0
    mant = np.where(zero, 0, np.where(huge, (1 << RC_MANT_BITS) - 1, mant))
    shift = np.where(zero, RC_SHIFT_MAX, np.where(huge, 0, shift))
    return mant.astype(np.int64), shift.astype(np.int64)


def bit_length(y) -> np.ndarray:
    """Bit length of each non-negative int64 (0 -> 0), exactly (no float rounding)."""
    y = _i64(y)
    n = np.zeros(y.shape, dtype=np.int64)
    for step in (32, 16, 8, 4, 2, 1):
        n = np.where(np.right_shift(y, n + step) > 0, n + step, n)
    return np.where(y > 0, n + 1, 0)


def rc_from_float(value) -> tuple[np.ndarray, np.ndarray]:
    """The RC nearest below a positive real ``value`` (host side: static requantisation factors).
    0 gives ``(0, 63)``."""
    value = np.asarray(value, dtype=np.float64)
    if np.any(~np.isfinite(value)) or np.any(value < 0):
        raise ValueError("an RC factor must be a finite number >= 0")
    _, e = np.frexp(np.where(value > 0, value, 1.0))   # value = f * 2**e, f in [0.5, 1)
    shift = RC_MANT_BITS - e
    mant = np.floor(np.ldexp(np.where(value > 0, value, 0.0), shift)).astype(np.int64)
    mant = np.where(value > 0, mant, 0)
    shift = np.where(value > 0, shift, RC_SHIFT_MAX)
    return _clamp_rc(mant, shift)


def rc_value(mant, shift) -> np.ndarray:
    """The real value of an RC (float64, exact: 25-bit mantissa)."""
    return np.ldexp(_i64(mant).astype(np.float64), -_i64(shift))


def rc_mul(mant, shift, smant, sshift) -> tuple[np.ndarray, np.ndarray]:
    """RC ``(mant, shift)`` times a static factor ``(smant, sshift)`` (``smant`` 16 bits): the
    50-bit product truncated back to 25 bits. A zero operand gives 0."""
    prod = _i64(mant) * _i64(smant)
    mant2, shift2 = normalise_rc(np.maximum(prod, 1), _i64(shift) + _i64(sshift))
    zero = prod == 0
    return np.where(zero, 0, mant2), np.where(zero, RC_SHIFT_MAX, shift2)


# --- Newton–Raphson ---------------------------------------------------------------------------

@cache
def recip_seed_table() -> tuple[int, ...]:
    """``1/m`` at the midpoint of each of the 128 intervals of ``m in [1, 2)`` (Q1.30)."""
    n = 1 << NR_SEED_BITS
    return tuple(round((1 << NR_FRAC) / (1 + (i + 0.5) / n)) for i in range(n))


@cache
def invsqrt_seed_table() -> tuple[int, ...]:
    """``1/sqrt(m)`` at the midpoint of each interval of ``m in [1, 4)`` (Q1.30), indexed by the
    top 7 bits of the Q2.14 mantissa (32..127; entries 0..31 are never used and hold 0)."""
    n = 1 << NR_SEED_BITS
    q = n // 4      # index of m = 1.0
    return tuple(0 if i < q else round((1 << NR_FRAC) / math.sqrt((i + 0.5) / q))
                 for i in range(n))


def _normalise_input(u, even: bool):
    """``(m, e)`` with ``m`` the 16-bit mantissa of ``u`` (top bit set, or top two bits not both
    clear for ``even``) truncated, ``u ~ m * 2**(e - 15)`` or ``m * 2**(e - 14)`` for ``even``
    (``e`` even)."""
    u = np.maximum(_i64(u), 1)
    top = bit_length(u) - 1                       # 0..31
    if even:
        e = top - (top & 1)                        # u = m' * 4**(e/2), m' in [1, 4)
        lead = NR_IN_BITS - 2
    else:
        e = top
        lead = NR_IN_BITS - 1
    s = e - lead
    m = np.where(s >= 0, np.right_shift(u, np.maximum(s, 0)),
                 np.left_shift(u, np.maximum(-s, 0)))
    return m, e


def _seed(table, index):
    return np.asarray(table, dtype=np.int64)[index]


def recip_rc(u) -> tuple[np.ndarray, np.ndarray]:
    """RC of ``1/u`` for ``u`` in ``1 .. 2**32 - 1`` (0 is taken as 1); see the module bounds.

    ``m`` (Q1.15) -> ``M = m << 15`` (Q1.30); seed ``y`` from the 7 bits below the leading one;
    per iteration ``t = (M*y) >> 30``, ``y = (y * (2**31 - t)) >> 30``. Result ``y * 2**-(30+e)``.
    """
    m, e = _normalise_input(u, even=False)
    big_m = np.left_shift(m, NR_FRAC - (NR_IN_BITS - 1))
    y = _seed(recip_seed_table(), np.right_shift(m, NR_IN_BITS - 1 - NR_SEED_BITS)
              & ((1 << NR_SEED_BITS) - 1))
    for _ in range(NR_ITERATIONS):
        t = np.right_shift(big_m * y, NR_FRAC)
        y = np.right_shift(y * ((2 << NR_FRAC) - t), NR_FRAC)
    return normalise_rc(y, NR_FRAC + e)


def invsqrt_rc(u) -> tuple[np.ndarray, np.ndarray]:
    """RC of ``1/sqrt(u)`` for ``u`` in ``1 .. 2**32 - 1`` (0 is taken as 1).

    ``u ~ m' * 4**j`` with ``m'`` in ``[1, 4)`` as Q2.14 ``m``; ``M = m << 16`` (Q2.30); seed from
    the top 7 bits of ``m``; per iteration ``t = (y*y) >> 30``, ``t = (M*t) >> 30``,
    ``y = (y * (3*2**30 - t)) >> 31``. Result ``y * 2**-(30+j)``.
    """
    m, e = _normalise_input(u, even=True)
    big_m = np.left_shift(m, NR_FRAC - (NR_IN_BITS - 2))
    y = _seed(invsqrt_seed_table(), np.right_shift(m, NR_IN_BITS - NR_SEED_BITS))
    for _ in range(NR_ITERATIONS):
        t = np.right_shift(y * y, NR_FRAC)
        t = np.right_shift(big_m * t, NR_FRAC)
        y = np.right_shift(y * ((3 << NR_FRAC) - t), NR_FRAC + 1)
    return normalise_rc(y, NR_FRAC + np.right_shift(e, 1))


# --- 2**x -------------------------------------------------------------------------------------

@cache
def exp2_table() -> tuple[int, ...]:
    """``round(128 * 2**(-f/256))`` for ``f`` in ``0..255``: 7-bit mantissas in 64..128."""
    n = 1 << EXP_FRAC_BITS
    return tuple(round(128 * 2.0 ** (-f / n)) for f in range(n))


def exp2_float(d) -> tuple[np.ndarray, np.ndarray]:
    """``2**(EXP_SHIFT_MAX + 6) * 2**(d/256)`` for ``d <= 0`` (``d > 0`` is taken as 0) as a
    7-bit float ``(m, s)``, value ``m * 2**s``: ``m`` in 0..127, ``s`` in ``0..EXP_SHIFT_MAX``
    (``m >= 64`` when ``s > 0``).

    ``-d = 256*i + f``: the ROM gives ``r = round(128 * 2**(-f/256))``; ``r = 128`` is taken as
    ``64`` one octave up. The value is ``r * 2**p`` with ``p = EXP_SHIFT_MAX - 1 - i`` (+1 for
    the carry); below ``p = 0`` the mantissa is shifted right with rounding (gradual underflow,
    0 from ``p = -8``). The softmax numerator ``e_t``: a VAC lane multiplies ``m`` by an INT8 and
    shifts the product left by ``s``.
    """
    nd = np.maximum(-_i64(d), 0)
    i = np.minimum(np.right_shift(nd, EXP_FRAC_BITS), 1 << 10)
    rom = np.asarray(exp2_table(), dtype=np.int64)[nd & ((1 << EXP_FRAC_BITS) - 1)]
    carry = rom == 128
    m = np.where(carry, 64, rom)
    p = EXP_SHIFT_MAX - 1 - i + carry
    under = np.minimum(np.maximum(-p, 0), 8)
    m = np.where(p >= 0, m, shift_round(m, under))
    return m, np.maximum(p, 0)


def exp2_value(m, s) -> np.ndarray:
    """The integer value ``m * 2**s`` of :func:`exp2_float`'s output."""
    return np.left_shift(_i64(m), _i64(s))


def exp2_reference(d) -> np.ndarray:
    """``2**(EXP_SHIFT_MAX + 6 + d/256)`` in float64 (the value :func:`exp2_float` rounds)."""
    return np.exp2(EXP_SHIFT_MAX + 6 + np.asarray(d, dtype=np.float64) / (1 << EXP_FRAC_BITS))
