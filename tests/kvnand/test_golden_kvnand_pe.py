"""The KVNAND PE's golden model against float64, its exact steps, and the page balance the
paper sizes the PE by (golden/kvnand/pe.py)."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.common.formats import FP32
from memwall.golden.common.fparith import fp_mul
from memwall.golden.kvnand import pe

U = 2.0 ** -24          # FP32 unit roundoff


def _f32(bits):
    return np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)


def _bf16(rng, shape, octaves=8):
    v = rng.standard_normal(shape) * 2.0 ** rng.integers(-octaves, octaves, shape)
    return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _bound(terms, adds: int):
    """First-order bound of an FP32 sum of exact products: adds * u * sum |terms|, as
    gamma_adds = adds*u / (1 - adds*u)."""
    gamma = adds * U / (1 - adds * U)
    return gamma * np.abs(terms).sum(axis=-1)


@pytest.mark.parametrize("n", [1, 4, 16])
def test_gemv_within_the_summation_bound(n):
    rng = np.random.default_rng(n)
    rows, cols = 8, 8 * n
    w, x = _bf16(rng, (rows, cols)), _bf16(rng, cols)
    y = _f32(pe.gemv(pe.page_fp32(w, "bf16").reshape(rows, cols), pe.input_fp32(x, "bf16"), n))
    terms = _f32(pe.page_fp32(w, "bf16")).reshape(rows, cols) * _f32(pe.input_fp32(x, "bf16"))
    exact = terms.sum(axis=1)
    assert np.all(np.abs(y - exact) <= _bound(terms, cols // n + n.bit_length() - 1))


@pytest.mark.parametrize("heads", [1, 2, 8])
def test_logit_and_attend_within_the_summation_bound(heads):
    rng = np.random.default_rng(heads)
    n, tokens, d = 16, 6, 64
    k, q = _bf16(rng, (tokens, d)), _bf16(rng, (heads, d))
    k32, q32 = pe.page_fp32(k, "bf16").reshape(tokens, d), pe.input_fp32(q, "bf16")
    z = _f32(pe.logit(k32, q32, n))
    terms = _f32(k32)[:, None, :] * _f32(q32)[None, :, :]
    lanes = n // heads
    assert np.all(np.abs(z - terms.sum(-1)) <= _bound(terms, d // lanes + lanes.bit_length() - 1))
    p = _bf16(rng, (tokens, heads))
    o = _f32(pe.attend(k32, pe.input_fp32(p, "bf16"), n))
    terms = _f32(k32)[:, None, :] * _f32(pe.input_fp32(p, "bf16"))[:, :, None]   # (t, g, d)
    assert np.all(np.abs(o - terms.sum(0)) <= _bound(np.moveaxis(terms, 0, -1), tokens))


@pytest.mark.parametrize("kind, inputs", [("int8", "int8"), ("int4", "bf16")])
def test_scaled_products_are_exact(kind, inputs):
    """Integer element x BF16 scale x input is exact in FP32 for every code and sign (the
    contract's claim), so only the sums round."""
    rng = np.random.default_rng(7)
    lo, hi = (-128, 127) if kind == "int8" else (-8, 7)
    codes = np.arange(lo, hi + 1).repeat(4)
    scales = _bf16(rng, codes.size, octaves=20)
    a = pe.page_fp32(codes, kind, scales, 1)
    assert np.array_equal(_f32(a), codes * _f32(pe.page_fp32(scales, "bf16")))
    b = np.resize(np.arange(-128, 128), codes.size) if inputs == "int8" else \
        _bf16(rng, codes.size)
    b32 = pe.input_fp32(b, inputs)
    prod = _f32(fp_mul(a, b32, FP32))
    assert np.array_equal(prod, _f32(a) * _f32(b32))


def test_page_packing_round_trips():
    rng = np.random.default_rng(3)
    for kind, lo, hi in (("int8", -128, 127), ("int4", -8, 7)):
        codes = rng.integers(lo, hi + 1, 200)
        page = pe.pack_page(codes, kind, 256)
        assert np.array_equal(pe.unpack_page(page, kind, 200), codes)
    bits = _bf16(rng, 100)
    assert np.array_equal(pe.unpack_page(pe.pack_page(bits, "bf16", 256), "bf16", 100), bits)
    with pytest.raises(ValueError, match="int4 elements must lie in -8..7"):
        pe.pack_page([8], "int4", 64)
    with pytest.raises(ValueError, match="a page holds 64"):
        pe.pack_page(np.zeros(65), "int8", 64)


def test_bad_shapes_and_names():
    with pytest.raises(ValueError, match="multiple of the FMACs"):
        pe.gemv(np.zeros((2, 6), np.uint32), np.zeros(6, np.uint32), 4)
    with pytest.raises(ValueError, match="at most the FMACs"):
        pe.logit(np.zeros((2, 8), np.uint32), np.zeros((8, 8), np.uint32), 4)
    with pytest.raises(ValueError, match="allowed: bf16, w8a8, w4a16"):
        pe.page_kind("fp8", "gemv")



def _codes_of(p, p_exp: int) -> np.ndarray:
    """INT8 codes of probabilities in units of ``2**p_exp``: rounded, clipped to 0..127."""
    return np.clip(np.rint(p / 2.0 ** p_exp), 0, 127).astype(np.int64)


def _softmax(rng, tokens: int, heads: int, spread: float) -> np.ndarray:
    logits = rng.standard_normal((tokens, heads)) * spread
    p = np.exp(logits - logits.max(0))
    return p / p.sum(0)


def test_w8a8_attend_probability_scale():
    """W8A8 ATTEND's probabilities are p = c * 2**e (golden/kvnand/pe.py). Two pages of one V
    stream: softmax probabilities in units of 1/128 (e = -7), then probabilities 256 times
    smaller (a long context's) in units of 2**-14. Folding 2**e into the V page's group
    scales (prob_scales, what the controller writes) gives, bit for bit, the sums of the V
    pages times p itself; the sums are within the docstring's gamma_T bound of the float64
    sum of the dequantised V times p = c * 2**e, and within that plus the codes' rounding (at
    most half a unit a probability, 2**(e-1)) of the same sum with the unrounded
    probabilities."""
    rng = np.random.default_rng(38)
    n, heads, tokens, d, group = 16, 8, 16, 128, 128
    acc = plain_acc = None
    terms, real, rounding = [], np.zeros((heads, d)), np.zeros((heads, d))
    for p_exp, shrink in ((-7, 1), (-14, 256)):
        v = rng.integers(-128, 128, (tokens, d))
        v[0, :2] = (-128, 127)
        scales = _bf16(rng, tokens * d // group, octaves=6)
        p = _softmax(rng, tokens, heads, 2.0) / shrink
        codes = _codes_of(p, p_exp)
        assert np.abs(p - codes * 2.0 ** p_exp).max() <= 2.0 ** (p_exp - 1)
        v32 = pe.page_fp32(v, "int8", pe.prob_scales(scales, p_exp), group).reshape(tokens, d)
        acc = pe.attend(v32, pe.input_fp32(codes, "int8"), n, acc)
        plain = pe.page_fp32(v, "int8", scales, group).reshape(tokens, d)
        p32 = np.asarray(codes * 2.0 ** p_exp, np.float32).view(np.uint32)   # exact
        plain_acc = pe.attend(plain, p32, n, plain_acc)
        assert np.array_equal(acc, plain_acc)
        dequant = _f32(plain)                                # v * s, exact
        terms.append(dequant[:, None, :] * (codes * 2.0 ** p_exp)[:, :, None])   # (t, g, d)
        real += np.einsum("td,tg->gd", dequant, p)
        rounding += np.einsum("td,tg->gd", np.abs(dequant), np.abs(p - codes * 2.0 ** p_exp))
    o = _f32(acc)
    terms = np.concatenate(terms)
    bound = _bound(np.moveaxis(terms, 0, -1), 2 * tokens)
    assert np.all(np.abs(o - terms.sum(0)) <= bound)
    assert np.all(np.abs(o - real) <= bound + rounding)
    assert np.any(np.abs(o - terms.sum(0)) > 0)             # the sums did round somewhere


def test_probability_scale_is_exact_or_refused():
    s = np.array([0x3F80, 0x0000, 0x7FC0, 0xC040], np.uint16)        # 1, +0, NaN, -3
    assert pe.prob_scales(s, -7).tolist() == [0x3C00, 0x0000, 0x7FC0, 0xBCC0]
    assert pe.prob_scales(s[:1], -127).tolist() == [0x0040]          # 2**-127: a subnormal
    with pytest.raises(ValueError, match=r"scale 1 \(1.99219\) times 2\*\*-127 = .* not a "
                                         r"BF16 value"):                # 255 * 2**-134
        pe.prob_scales(np.array([0x3F80, 0x3FFF], np.uint16), -127)
    with pytest.raises(ValueError, match=r"p_exp 128: an integer in -127..127"):
        pe.prob_scales(s, 128)
    with pytest.raises(ValueError, match="overflows"):
        pe.prob_scales(np.array([0x7F00], np.uint16), 2)
