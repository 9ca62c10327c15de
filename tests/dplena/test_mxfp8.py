"""MXFP8 (E4M3 + E8M0, blocks of 32) golden model: bounds, ml_dtypes consistency, edge cases."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from memwall.golden.common.formats import BF16, bf16_values
from memwall.golden.dplena.mxfp8 import BLOCK, dequantize, num_blocks, quantize

E4M3 = ml_dtypes.float8_e4m3fn
E8M0 = ml_dtypes.float8_e8m0fnu
QNAN = BF16.qnan_bits


def _scale_exp(scales: np.ndarray, n: int) -> np.ndarray:
    """Per-element unbiased scale exponent (int) for elements (..., n)."""
    return np.repeat(scales.astype(np.int64) - 127, BLOCK, axis=-1)[..., :n]


def _block_max(x: np.ndarray) -> np.ndarray:
    """Per-element max |x| of its block."""
    n = x.shape[-1]
    pad = num_blocks(n) * BLOCK - n
    xp = np.pad(np.abs(x), [(0, 0)] * (x.ndim - 1) + [(0, pad)])
    m = xp.reshape(x.shape[:-1] + (-1, BLOCK)).max(axis=-1)
    return np.repeat(m, BLOCK, axis=-1)[..., :n]


def _random_blocks(rng, shape) -> np.ndarray:
    """float32 data with a random magnitude per block and a wide spread inside blocks."""
    x = rng.standard_normal(shape) * np.exp2(rng.uniform(-6, 6, shape))
    nb = num_blocks(shape[-1])
    blk = np.exp2(rng.integers(-100, 100, shape[:-1] + (nb,)).astype(np.float64))
    x = x * np.repeat(blk, BLOCK, axis=-1)[..., :shape[-1]]
    return x.astype(np.float32)


# --- error bounds -----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [32, 100, 1, 31, 33])
def test_round_trip_error_bound(n):
    """Per element, with s the block's scale exponent (2**s <= M * 2**-8 for block max M):

    * E4M3 normal range (2**(s-6) <= |x| <= 448 * 2**s): |err| <= 2**-4 |x| (half an ulp of a
      4-significant-bit value);
    * E4M3 subnormal range (|x| < 2**(s-6)): |err| <= 2**(s-10) <= 2**-18 M;
    * saturation (|x| > 448 * 2**s, i.e. |x| in (448, 512) * 2**s): |err| = |x| - 448 * 2**s
      < |x| / 8;
    * plus at most 2**-134 where the decoded value is a BF16 subnormal.
    In sum |err| <= 2**-4 |x| + 2**-18 M for unsaturated elements, and < |x| / 8 for saturated.
    """
    rng = np.random.default_rng(1000 + n)
    x = _random_blocks(rng, (64, n))
    el, sc = quantize(x)
    assert el.shape == x.shape and el.dtype == np.uint8
    assert sc.shape == (64, num_blocks(n)) and sc.dtype == np.uint8
    y = bf16_values(dequantize(el, sc)).astype(np.float64)
    xd = x.astype(np.float64)
    ax = np.abs(xd)
    err = np.abs(y - xd)
    s = _scale_exp(sc, n)
    unit = np.exp2(s.astype(np.float64))
    m = _block_max(xd)
    sat = ax > 448 * unit
    sub = ax < 2.0 ** -6 * unit
    bound = np.where(sat, ax - 448 * unit, np.where(sub, 2.0 ** -10 * unit, 2.0 ** -4 * ax))
    bound = bound + 2.0 ** -134
    assert np.all(err <= bound)
    # Block-max form of the same bound.
    assert np.all(err[~sat] <= 2.0 ** -4 * ax[~sat] + 2.0 ** -18 * m[~sat] + 2.0 ** -134)
    assert np.all(err[sat] < ax[sat] / 8)
    # The scale is floor(log2 M) - 8 (no clamping for these magnitudes).
    assert np.all(s == np.floor(np.log2(m)) - 8)
    # Sign is always preserved (zeros included).
    assert np.all(np.signbit(y) == np.signbit(xd))


def test_saturation_happens_only_above_464():
    # Block max 1.8125 * 2**8 = 464 is the RNE midpoint between 448 and (non-existent) 480.
    x = np.array([[463.9, 1.0], [464.0, 1.0], [480.0, 1.0], [511.9, -1.0]], np.float32)
    el, sc = quantize(x)
    assert np.all(sc == 127)
    assert np.all(bf16_values(dequantize(el, sc))[:, 0].astype(np.float32) == 448.0)
    # 463.9 rounds to 448 (not saturated); 464 ties to even -> 448; 480, 511.9 saturate.
    assert np.all(el[:, 0] == 0x7E)


# --- consistency with ml_dtypes ----------------------------------------------------------------

def test_quantize_matches_ml_dtypes():
    rng = np.random.default_rng(7)
    x = _random_blocks(rng, (8, 3, 96))
    el, sc = quantize(x)
    s = _scale_exp(sc, x.shape[-1])
    # The E8M0 byte is ml_dtypes' encoding of 2**s.
    assert np.all(np.exp2(s.astype(np.float64)).astype(np.float32).astype(E8M0).view(np.uint8)
                  == np.repeat(sc, BLOCK, axis=-1))
    assert np.all(sc.view(E8M0).astype(np.float64) == np.exp2(sc.astype(np.float64) - 127))
    # Elements: ml_dtypes RNE of the (exact) quotient, after saturation.
    q = np.clip(x.astype(np.float64) / np.exp2(s.astype(np.float64)), -448, 448)
    assert np.all(q.astype(np.float32).astype(E4M3).view(np.uint8) == el)


def _bf16_exact_rne(v: np.ndarray) -> np.ndarray:
    """Independent oracle: RNE of exact float64 values to BF16 bits via a table of all BF16."""
    pos = np.arange(0x0000, 0x7F80, dtype=np.uint16)          # +0 .. max finite
    table = pos.view(ml_dtypes.bfloat16).astype(np.float64)
    a = np.abs(v)
    hi = np.searchsorted(table, a, side="left").clip(1, len(table) - 1)
    lo = hi - 1
    dlo, dhi = a - table[lo], table[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    pick = np.where(a == table[hi], hi, pick)
    bits = pos[pick].astype(np.uint16)
    # Above max finite (2 - 2**-7) * 2**127: below the midpoint to 2**128 -> max, else inf
    # (the midpoint itself ties to the even pattern, i.e. to inf).
    top = table[-1]
    over = np.where(a >= top + 2.0 ** 119, np.uint16(0x7F80), np.uint16(0x7F7F))
    bits = np.where(a > top, over, bits)
    return np.where(np.signbit(v), bits | np.uint16(0x8000), bits).astype(np.uint16)


def test_dequantize_exhaustive():
    """All 256 elements x 255 non-NaN scales against an exact oracle; NaN scale separately."""
    el = np.tile(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)  # row = scale
    sc = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256 // BLOCK, axis=1)
    out = dequantize(el, sc)
    assert out.dtype == np.uint16 and out.shape == (256, 256)
    val = el.view(E4M3).astype(np.float64)
    exact = val * np.exp2(np.arange(256, dtype=np.float64)[:, None] - 127)
    nan = np.isnan(val) | (np.arange(256)[:, None] == 0xFF)
    with np.errstate(invalid="ignore"):
        want = _bf16_exact_rne(np.where(nan, 0.0, exact))
    want = np.where(nan, np.uint16(QNAN), want)
    assert np.array_equal(out, want)
    # The RTL-facing facts the docstring states.
    assert np.all(out[0xFF] == QNAN)
    assert out[0xFE, 0x7E] == 0x7F80 and out[0xFE, 0xFE] == 0xFF80      # 448 * 2**127 -> inf
    assert out[0xF7, 0x7E] == 0x7F80 and out[0xF6, 0x7E] == 0x7F60      # 1.75 * 2**128 / 127
    assert out[0x00, 0x01] == 0x0000                                     # 2**-136 -> +0
    assert out[0x00, 0x81] == 0x8000                                     # -2**-136 -> -0
    assert out[0x01, 0x03] == 0x0001                                     # 3*2**-135 -> 2**-133
    assert out[0x00, 0x03] == 0x0000                                     # 3*2**-136 -> +0
    assert out[0x00, 0x80] == 0x8000 and out[0x7F, 0x00] == 0x0000       # +-0 stay +-0


def test_requantize_is_idempotent():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((16, 200)) * 5).astype(np.float32)
    el, sc = quantize(x)
    y = bf16_values(dequantize(el, sc)).astype(np.float32)
    el2, sc2 = quantize(y)
    assert np.array_equal(el, el2) and np.array_equal(sc, sc2)


# --- directed cases ----------------------------------------------------------------------------

def test_zero_blocks():
    x = np.zeros((2, 40), np.float32)
    x[1, :32] = -0.0
    el, sc = quantize(x)
    assert np.all(sc == 0)                          # 2**-127, the reference's convention
    assert np.all(el[0] == 0) and np.all(el[1, :32] == 0x80) and np.all(el[1, 32:] == 0)
    out = dequantize(el, sc)
    assert np.all(out[0] == 0) and np.all(out[1, :32] == 0x8000)


def test_max_values():
    f32max = np.finfo(np.float32).max
    x = np.array([448.0, -448.0, f32max, -f32max], np.float32).reshape(4, 1)
    el, sc = quantize(x)
    assert list(sc[:, 0]) == [127, 127, 127 + 119, 127 + 119]
    assert list(el[:, 0]) == [0x7E, 0xFE, 0x7E, 0xFE]   # f32max / 2**119 ~ 512 saturates
    out = bf16_values(dequantize(el, sc)).astype(np.float64)[:, 0]
    assert list(out) == [448.0, -448.0, 1.75 * 2.0 ** 127, -1.75 * 2.0 ** 127]


def test_tiny_values_clamp_scale():
    tiny = np.float32(2.0 ** -149)
    x = np.array([[tiny, -tiny], [2.0 ** -120, 2.0 ** -136]], np.float32)
    el, sc = quantize(x)
    assert np.all(sc == 0)                          # floor(log2) - 8 < -127 -> clamped
    assert list(el[0]) == [0x00, 0x80]              # 2**-22 of the element grid -> +-0
    assert el[1, 0] == 0x70                         # 2**-120 * 2**127 = 128 = 1.0 * 2**7
    assert el[1, 1] == 0x01                         # 2**-9: smallest E4M3 subnormal
    out = dequantize(el, sc)
    assert list(out[0]) == [0x0000, 0x8000]
    assert bf16_values(out[1, :1]).astype(np.float64)[0] == 2.0 ** -120
    assert out[1, 1] == 0x0000                      # 2**-136 rounds to 0 in BF16


def test_negative_and_subnormal_elements():
    x = np.array([256.0, -1.5, -2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -10], np.float32)
    el, sc = quantize(x)
    assert sc[0] == 127
    assert list(el) == [0x78, 0xBC, 0x81, 0x00, 0x02]  # 2**-10 ties to even (0)
    out = bf16_values(dequantize(el, sc)).astype(np.float64)
    assert list(out) == [256.0, -1.5, -2.0 ** -9, 0.0, 2.0 ** -8]


@pytest.mark.parametrize("n", [1, 5, 31, 32, 33, 63, 65])
def test_partial_block(n):
    x = np.arange(1, n + 1, dtype=np.float32)
    x[32:] *= 1000  # the second block has its own, larger, scale
    el, sc = quantize(x)
    assert el.shape == (n,) and sc.shape == (num_blocks(n),)
    assert sc[0] == 127 + int(np.floor(np.log2(min(n, 32)))) - 8
    if n > 32:
        assert sc[1] == 127 + int(np.floor(np.log2(x[32:].max()))) - 8
    # Same result as quantising each block alone.
    for j in range(num_blocks(n)):
        e1, s1 = quantize(x[32 * j:32 * (j + 1)])
        assert np.array_equal(e1, el[32 * j:32 * (j + 1)]) and s1[0] == sc[j]


def test_leading_axes():
    rng = np.random.default_rng(5)
    x = _random_blocks(rng, (2, 3, 70))
    el, sc = quantize(x)
    assert el.shape == (2, 3, 70) and sc.shape == (2, 3, 3)
    out = dequantize(el, sc)
    for i in range(2):
        for j in range(3):
            e1, s1 = quantize(x[i, j])
            assert np.array_equal(e1, el[i, j]) and np.array_equal(s1, sc[i, j])
            assert np.array_equal(dequantize(e1, s1), out[i, j])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_poison_their_block_only(bad):
    x = np.ones(70, np.float32)
    x[40] = bad
    el, sc = quantize(x)
    assert list(sc) == [127 - 8, 0xFF, 127 - 8]
    assert np.all(el[32:64] == 0x7F)
    out = dequantize(el, sc)
    assert np.all(out[32:64] == QNAN)
    assert np.all(bf16_values(out[:32]).astype(np.float32) == 1.0)
    assert np.all(bf16_values(out[64:]).astype(np.float32) == 1.0)


def test_nan_inputs_to_dequantize():
    el = np.array([0x38, 0x7F, 0xFF, 0x00], np.uint8)        # 1.0, NaN, -NaN, 0
    out = dequantize(el, np.array([127], np.uint8))
    assert list(out) == [0x3F80, QNAN, QNAN, 0x0000]
    out = dequantize(el, np.array([0xFF], np.uint8))
    assert np.all(out == QNAN)


def test_empty_and_bad_arguments():
    el, sc = quantize(np.zeros((3, 0), np.float32))
    assert el.shape == (3, 0) and sc.shape == (3, 0)
    assert dequantize(el, sc).shape == (3, 0)
    with pytest.raises(TypeError):
        quantize(np.arange(4))
    with pytest.raises(ValueError):
        quantize(np.float32(1.0))
    with pytest.raises(TypeError):
        dequantize(np.zeros(4, np.int8), np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="scales shape"):
        dequantize(np.zeros(40, np.uint8), np.zeros(1, np.uint8))
