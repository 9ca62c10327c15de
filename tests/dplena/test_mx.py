"""The MX logits formats (golden/dplena/mx.py) against float64 and ml_dtypes, independently."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from memwall.golden.common.formats import BF16
from memwall.golden.dplena import mx, mxfp8

NAMES = list(mx.FORMATS)


def _bf16_of_float64(v: np.ndarray) -> np.ndarray:
    """BF16 bits of float64 values, one RNE rounding (ml_dtypes), NaN canonical."""
    with np.errstate(over="ignore"):             # beyond BF16: inf, as wanted
        return BF16.canonicalize_nan(v.astype(ml_dtypes.bfloat16).view(np.uint16))


def _heavy_tailed(shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = rng.uniform(-20, 20, size=shape[:-1] + (1,))
    return (rng.standard_t(3, size=shape) * np.exp2(scale)).astype(np.float32)


def test_the_formats_are_the_spec_s():
    got = {f.name: (f.bits, f.emax, f.emin, f.mbits, f.max_normal) for f in mx.FORMATS.values()}
    assert got == {"mxfp8_e4m3": (8, 8, -6, 3, 448.0), "mxfp8_e5m2": (8, 15, -14, 2, 57344.0),
                   "mxfp6_e3m2": (6, 4, -2, 2, 28.0), "mxfp6_e2m3": (6, 2, 0, 3, 7.5),
                   "mxfp4_e2m1": (4, 2, 0, 1, 6.0)}
    assert [mx.bits_per_element(f) for f in mx.FORMATS.values()] == [8.25, 8.25, 6.25, 6.25, 4.25]
    assert [mx.block_bytes(f) for f in mx.FORMATS.values()] == [33, 33, 25, 25, 17]


def test_the_config_names_the_golden_formats():
    """The spec states the formats a core may be built for (it imports no layer): the golden ones,
    at their widths, in the same order."""
    from memwall.families.dplena.config import MX_ELEMENT_BITS
    assert list(MX_ELEMENT_BITS.items()) == [(f.name, f.bits) for f in mx.FORMATS.values()]


@pytest.mark.parametrize("name", NAMES)
def test_every_code_at_every_scale_dequantises_to_the_rounded_exact_value(name):
    """All 2**bits codes x all 255 finite scales, against float64 and one BF16 rounding."""
    fmt = mx.FORMATS[name]
    codes = np.arange(1 << fmt.bits, dtype=np.uint8)
    scales = np.arange(255, dtype=np.uint8)
    elems = np.tile(codes, (len(scales), 1))                     # one block row per scale
    reps = -(-elems.shape[1] // mx.BLOCK)
    pad = np.zeros((len(scales), reps * mx.BLOCK - elems.shape[1]), np.uint8)
    elems = np.concatenate([elems, pad], axis=1)
    block_scales = np.repeat(scales[:, None], reps, axis=1)
    got = mx.dequantize(elems, block_scales, name)
    values = elems.view(fmt.dtype).astype(np.float64)
    exact = values * np.exp2(block_scales.astype(np.float64) - 127).repeat(mx.BLOCK, axis=1)
    want = _bf16_of_float64(exact)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_quantise_is_within_its_bound_of_float64(name):
    x = _heavy_tailed((64, 4096), seed=NAMES.index(name))
    codes, scales = mx.quantize(x, name)
    got = BF16.from_bits(mx.dequantize(codes, scales, name)).astype(np.float64)
    err = np.abs(got - x.astype(np.float64))
    # The BF16 rounding adds nothing in its normal range (at most 4 significant bits).
    assert np.all(err <= mx.error_bound(x, name))
    # and the bound is tight: some element is at least half its bound off
    assert np.any(err >= 0.5 * mx.error_bound(x, name))


@pytest.mark.parametrize("name", NAMES)
def test_scale_choice_rounding_and_saturation(name):
    fmt = mx.FORMATS[name]
    top = fmt.max_normal
    # The block maximum's quotient lies in [2**emax, 2**(emax + 1)): with max 1.9 * 2**(emax+3)
    # the shared exponent is 3.
    x = np.zeros(32, np.float32)
    x[0] = 1.9 * 2.0 ** (fmt.emax + 3)
    codes, scales = mx.quantize(x, name)
    assert scales[0] == 127 + 3
    # 1.9 * 2**emax saturates to the largest normal wherever that is below it
    q = float(codes[:1].view(fmt.dtype).astype(np.float64)[0])
    assert q == min(top, float(np.float32(1.9 * 2 ** fmt.emax).astype(fmt.dtype)))
    # representable values quantise to themselves (idempotence), every code
    values = np.arange(1 << fmt.bits, dtype=np.uint8).view(fmt.dtype).astype(np.float32)
    values = values[np.isfinite(values)]
    block = np.concatenate([values, np.zeros(-len(values) % 32, np.float32)])
    block = block.reshape(-1, 32)
    block[:, -1] = top                         # a fixed block maximum: shared exponent 0
    c, s = mx.quantize(block, name)
    assert np.all(s == 127)
    assert np.array_equal(c.view(fmt.dtype).astype(np.float32), block)


@pytest.mark.parametrize("name", NAMES)
def test_non_finite_blocks_are_nan_and_zero_blocks_zero(name):
    x = np.ones((3, 64), np.float32)
    x[0, 5], x[1, 40], x[2, :32] = np.nan, -np.inf, 0.0
    x[2, 3] = -0.0
    codes, scales = mx.quantize(x, name)
    assert scales[0, 0] == scales[1, 1] == mx.SCALE_NAN and scales[2, 0] == 0
    out = mx.dequantize(codes, scales, name)
    assert np.all(out[0, :32] == BF16.qnan_bits) and np.all(out[1, 32:] == BF16.qnan_bits)
    assert np.all(out[2, :32] & 0x7FFF == 0) and out[2, 3] == 0x8000


def test_e4m3_is_the_shipped_mxfp8():
    x = _heavy_tailed((16, 1000))
    x[0, 7] = np.nan
    assert all(np.array_equal(a, b) for a, b in zip(mx.quantize(x, "mxfp8_e4m3"),
                                                    mxfp8.quantize(x), strict=True))


def test_bad_formats_and_codes_are_named():
    with pytest.raises(ValueError, match="allowed: mxfp8_e4m3, mxfp8_e5m2"):
        mx.mx_format("mxfp5")
    with pytest.raises(ValueError, match="wider than mxfp4_e2m1's 4 bits"):
        mx.dequantize(np.full(32, 0x10, np.uint8), np.zeros(1, np.uint8), "mxfp4_e2m1")
