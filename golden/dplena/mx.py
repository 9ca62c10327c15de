"""OCP Microscaling (MX v1.0) logits formats: MXFP8 (E4M3, E5M2), MXFP6 (E3M2, E2M3), MXFP4
(E2M1), each with one E8M0 scale per 32 elements; the golden model of every one.

One rule for all five formats, the spec's conversion (Sec. 6.3) as its authors' reference
library implements it (microsoft/microxcaling, ``_quantize_mx``), element types from ml_dtypes
(``float8_e4m3fn``, ``float8_e5m2``, ``float6_e3m2fn``, ``float6_e2m3fn``, ``float4_e2m1fn``),
so no element is rounded by hand here:

* **Scale choice.** ``shared_exp = floor(log2(max_i |V_i|)) - emax`` with ``emax`` the exponent
  of the element format's largest normal (E4M3 8, E5M2 15, E3M2 4, E2M3 2, E2M1 2), computed
  exactly from the float32 exponent (``np.frexp``), clamped to E8M0's [-127, 127]. An all-zero
  block takes the reference's ``log2(FP32_MIN_NORMAL) = -126``, so its scale byte is ``0x00``.
* **Rounding.** ``P_i = elem(V_i / 2**shared_exp)``, round to nearest, ties to even (ml_dtypes'
  cast from float32; the quotient is exact in float32 whenever it is large enough to round to
  a non-zero element, since it only changes the exponent).
* **Saturation.** Magnitudes beyond the element's largest normal (448, 57344, 28, 7.5, 6)
  become +-that value, as the reference does (``saturate_normals=True``). It happens: the block
  maximum's quotient lies in ``[2**emax, 2**(emax+1))`` and rounds past the largest normal when
  its significand exceeds the format's top one.
* **Non-finite input.** A NaN or +-inf anywhere in a block makes its scale byte ``0xFF`` (NaN):
  by the spec a NaN scale makes the whole block NaN, whatever its elements hold (they are set to
  the format's NaN where it has one, else 0). No MX format keeps an infinity.
* A partial last block takes its scale from the elements present; codes are one per element in
  a ``uint8`` (the element's bit pattern in the low ``bits`` bits), unpacked; HBM packing is
  :mod:`memwall.golden.dplena.hbm`'s.

Dequantisation (:func:`dequantize`) is what the RTL dequantiser computes, bit for bit:
``BF16_RNE(P_i * 2**(S - 127))``, as a float32 product rounded once. The product is exact in
float32 below 2**128 for every format (at most 4 significant bits; the smallest product,
E5M2's 2**-16 at scale 2**-127, is 2**-143 > 2**-149), and at or above 2**128 both it and the
exact value round to BF16 inf; so results are exact in the BF16 normal range, rounded RNE to
BF16 subnormals below it (kept, not flushed), and +-inf only with the largest scales. A NaN
element (E4M3, E5M2) or a NaN scale gives the canonical BF16 NaN ``0x7FC0``.

Bound against float64 (:func:`error_bound`, checked by tests/dplena/test_mx.py): in a finite
block whose scale is not clamped, each element is off by at most half an element ulp at its
binade, ``2**(max(floor(log2 |q|), emin) - mbits - 1) * 2**shared_exp`` with ``q = V /
2**shared_exp`` (a relative ``2**-(mbits + 1)`` in the element's normal range), or, saturated,
by its distance to the largest normal (under two ulps of the top binade: the block maximum's
``q`` is below ``2**(emax + 1)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from memwall.golden.common.formats import BF16, round_to_bf16

__all__ = ["BLOCK", "SCALE_BIAS", "SCALE_NAN", "MxFormat", "FORMATS", "mx_format", "num_blocks",
           "quantize", "dequantize", "error_bound", "bits_per_element", "block_bytes"]

BLOCK = 32
"""Elements per MX block (OCP MX v1.0 fixes k = 32 for every concrete format)."""
SCALE_BIAS = 127
SCALE_NAN = 0xFF
SCALE_MIN_EXP = -127
SCALE_MAX_EXP = 127


@dataclass(frozen=True)
class MxFormat:
    """One MX element format: its config name, ml_dtypes type, bit width, ``emax`` (exponent of
    its largest normal), ``emin`` (of its smallest normal), mantissa bits, largest normal and its
    NaN code (None: the format has none)."""
    name: str
    dtype: type
    bits: int
    emax: int
    emin: int
    mbits: int
    max_normal: float
    nan_code: int | None


def _format(name: str, dtype, nan_code: int | None) -> MxFormat:
    info = ml_dtypes.finfo(dtype)
    return MxFormat(name=name, dtype=dtype, bits=int(info.bits), emax=int(info.maxexp) - 1,
                    emin=int(info.minexp), mbits=int(info.nmant), max_normal=float(info.max),
                    nan_code=nan_code)


#: The logits formats of the d-PLENA dequantiser, by their config names.
FORMATS: dict[str, MxFormat] = {f.name: f for f in (
    _format("mxfp8_e4m3", ml_dtypes.float8_e4m3fn, 0x7F),
    _format("mxfp8_e5m2", ml_dtypes.float8_e5m2, 0x7F),
    _format("mxfp6_e3m2", ml_dtypes.float6_e3m2fn, None),
    _format("mxfp6_e2m3", ml_dtypes.float6_e2m3fn, None),
    _format("mxfp4_e2m1", ml_dtypes.float4_e2m1fn, None),
)}


def mx_format(name: str) -> MxFormat:
    """The :class:`MxFormat` of a config name; ValueError naming the allowed ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"MX format {name!r}; allowed: {', '.join(FORMATS)}") from None


def bits_per_element(fmt: MxFormat) -> float:
    """HBM bits per logit: the element plus its share of the 8-bit scale (8.25, 6.25, 4.25)."""
    return fmt.bits + 8 / BLOCK


def block_bytes(fmt: MxFormat) -> int:
    """Bytes of one packed block: 32 elements and the scale byte (33, 25, 17)."""
    return BLOCK * fmt.bits // 8 + 1


def num_blocks(n: int) -> int:
    """Number of MX blocks (and scale bytes) for ``n`` elements: ``ceil(n / 32)``."""
    return -(-int(n) // BLOCK)


def _blocked(a: np.ndarray, fill) -> np.ndarray:
    """View ``(..., N)`` as ``(..., nb, 32)``, padding the last block with ``fill``."""
    n = a.shape[-1]
    pad = num_blocks(n) * BLOCK - n
    if pad:
        a = np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, pad)], constant_values=fill)
    return a.reshape(a.shape[:-1] + (num_blocks(n), BLOCK))


def _shared_exp(xb: np.ndarray, fmt: MxFormat) -> tuple[np.ndarray, np.ndarray]:
    """(clamped shared exponent, block is non-finite) per block of ``xb`` (..., nb, 32)."""
    absmax = np.max(np.abs(xb), axis=-1, initial=0.0)   # NaN propagates, as wanted
    bad = ~np.isfinite(absmax)
    # frexp: absmax = m * 2**e, m in [0.5, 1) -> floor(log2(absmax)) = e - 1, exact also for
    # float32 subnormals.
    _, e = np.frexp(np.where(bad, 1.0, absmax).astype(np.float64))
    floor_log2 = np.where(absmax == 0, -126, e.astype(np.int64) - 1)
    return np.clip(floor_log2 - fmt.emax, SCALE_MIN_EXP, SCALE_MAX_EXP), bad


def quantize(x, fmt: str | MxFormat) -> tuple[np.ndarray, np.ndarray]:
    """Quantise the last axis of ``x`` to an MX format.

    Returns ``(codes, scales)``: ``codes`` uint8 (..., N), each element's bit pattern in its low
    ``fmt.bits`` bits; ``scales`` uint8 (..., ceil(N / 32)), E8M0 (bias 127, ``0xFF`` NaN).
    The rules are the module docstring's.
    """
    fmt = mx_format(fmt) if isinstance(fmt, str) else fmt
    x = np.asarray(x)
    if not (np.issubdtype(x.dtype, np.floating) or x.dtype == ml_dtypes.bfloat16):
        raise TypeError(f"quantize: expected a floating-point array, got dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError("quantize: expected at least one axis (..., N), got a scalar")
    x = x.astype(np.float32)
    n = x.shape[-1]
    xb = _blocked(x, 0.0)               # +0 padding changes neither the max nor any element
    shared, bad = _shared_exp(xb, fmt)
    scales = np.where(bad, SCALE_NAN, shared + SCALE_BIAS).astype(np.uint8)
    # 2**-shared lies in [2**-127 .. 2**127]: a float32 (2**-127 subnormal, exact).
    inv = np.ldexp(np.float32(1.0), (-shared).astype(np.int32)).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = np.clip(xb * inv[..., None], -fmt.max_normal, fmt.max_normal)
    y = np.where(bad[..., None], np.float32(0.0), y)   # the scale alone says NaN
    codes = y.astype(fmt.dtype).view(np.uint8) & np.uint8((1 << fmt.bits) - 1)
    if fmt.nan_code is not None:
        codes = np.where(bad[..., None], np.uint8(fmt.nan_code), codes)
    codes = codes.reshape(codes.shape[:-2] + (-1,))[..., :n]
    return np.ascontiguousarray(codes, dtype=np.uint8), scales


def dequantize(codes, scales, fmt: str | MxFormat) -> np.ndarray:
    """Decode MX codes and scales to BF16 bit patterns (uint16, shape of ``codes``), as the RTL
    dequantiser does: ``RNE_bf16(element * 2**(scale - 127))``, NaN element or scale ``0x7FC0``."""
    fmt = mx_format(fmt) if isinstance(fmt, str) else fmt
    codes, scales = np.asarray(codes), np.asarray(scales)
    if codes.dtype != np.uint8 or scales.dtype != np.uint8:
        raise TypeError(f"dequantize: expected uint8 bit patterns, got {codes.dtype} and "
                        f"{scales.dtype}")
    if codes.ndim == 0:
        raise ValueError("dequantize: expected codes of shape (..., N), got a scalar")
    if np.any(codes >> fmt.bits):
        raise ValueError(f"dequantize: a code wider than {fmt.name}'s {fmt.bits} bits")
    n = codes.shape[-1]
    want = codes.shape[:-1] + (num_blocks(n),)
    if scales.shape != want:
        raise ValueError(f"dequantize: scales shape {scales.shape} does not match codes shape "
                         f"{codes.shape}; expected {want}")
    vals = _blocked(codes, 0).view(fmt.dtype).astype(np.float32)
    s = scales.astype(np.int32)
    pow2 = np.ldexp(np.float32(1.0), np.where(s == SCALE_NAN, 0, s - SCALE_BIAS)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = vals * pow2[..., None]   # exact unless |prod| >= 2**128 (-> inf, still correct)
    prod = np.where((s == SCALE_NAN)[..., None], np.float32(np.nan), prod)
    prod = prod.reshape(prod.shape[:-2] + (-1,))[..., :n]
    return BF16.canonicalize_nan(round_to_bf16(prod).view(np.uint16))


def error_bound(x, fmt: str | MxFormat) -> np.ndarray:
    """Per element of ``x`` (finite), the largest absolute error the MX rounding may make (before
    the BF16 rounding of :func:`dequantize`, which is exact in the BF16 normal range): half an
    element ulp at the element's binade, ``2**(max(floor(log2 |q|), emin) - mbits - 1)`` in the
    element's own scale, times ``2**shared_exp``; for a saturated element, its distance to the
    largest normal. Clamped scales (blocks below 2**-127 * 2**emax) are not covered."""
    fmt = mx_format(fmt) if isinstance(fmt, str) else fmt
    x = np.asarray(x, dtype=np.float32)
    n = x.shape[-1]
    xb = _blocked(x, 0.0).astype(np.float64)
    shared, _ = _shared_exp(xb.astype(np.float32), fmt)
    q = np.abs(xb) * np.exp2(-shared.astype(np.float64))[..., None]
    _, e = np.frexp(np.where(q == 0, 1.0, q))
    binade = np.maximum(e - 1, fmt.emin)
    half_ulp = np.exp2(binade - fmt.mbits - 1.0)
    bound = np.where(q > fmt.max_normal, q - fmt.max_normal, half_ulp)
    bound = bound * np.exp2(shared.astype(np.float64))[..., None]
    return bound.reshape(bound.shape[:-2] + (-1,))[..., :n]
