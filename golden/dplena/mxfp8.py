"""MXFP8 (E4M3 elements, E8M0 shared scale) golden model: OCP Microscaling Formats v1.0.

An MX block is ``BLOCK = 32`` consecutive elements along the last axis that share one E8M0
scale. The value of element ``i`` of a block is ``P_i * 2**(S - 127)``, where ``P_i`` is an
E4M3 (``float8_e4m3fn``: bias 7, no inf, ``S.1111.111`` = NaN, max normal 448, min subnormal
2**-9) and ``S`` is the E8M0 byte (unsigned biased exponent, bias 127, ``0xFF`` = NaN, no zero,
no sign, so the representable scales are 2**-127 .. 2**127).

Bit patterns are held in ``uint8`` arrays, as the HBM stream and the RTL see them. The
conversion is :mod:`memwall.golden.dplena.mx`'s, the one rule of every MX format; this module
is its E4M3 instance, with the format's particulars.

Quantisation (:func:`quantize`) follows the conversion of the spec (Sec. 6.3) as implemented by
its authors' reference library (microsoft/microxcaling, ``_quantize_mx``):

* ``shared_exp = floor(log2(max_i |V_i|)) - EMAX_ELEM`` with ``EMAX_ELEM = 8`` (the exponent of
  E4M3's largest normal, 448 = 1.75 * 2**8); computed exactly from the float32 exponent field
  (``np.frexp``), not with a floating ``log2``.
* Clamped to the E8M0 range: below -127 it becomes -127 (the block's elements then quantise
  towards zero); it can never exceed 127 for float32 input (``floor(log2) <= 127`` so
  ``shared_exp <= 119``).
* All-zero block (incl. ``-0``): the reference uses ``log2(FP32_MIN_NORMAL) = -126`` for a zero
  max, i.e. ``-134`` before clamping, so the scale byte is ``0x00`` (2**-127) and every element
  is ``+-0`` (sign kept).
* ``P_i = E4M3(V_i / 2**shared_exp)`` with round-to-nearest-even and *saturation*: magnitudes
  beyond 448 become +-448. The MX spec leaves element overflow to the implementation (the
  OCP FP8 conversions come in saturating and non-saturating flavours); we saturate, as the
  spec authors' reference library does (``saturate_normals=True``).
  Overflow does happen: ``|V_i| / 2**shared_exp`` lies in ``[256, 512)`` for the block maximum,
  and values in ``(464, 512)`` (block max with significand >= 1.8125) would round past 448.
  Subnormal E4M3 results are kept (no flush to zero).
* NaN or +-inf anywhere in a block: the scale byte is ``0xFF`` (NaN), as in the reference
  (``log2`` of inf/NaN max gives NaN) and every element of that block is ``0x7F`` (E4M3 NaN);
  by the spec a NaN scale makes the whole block NaN whatever the elements hold. MXFP8 has no
  infinity (neither E4M3-fn nor E8M0 has one), so an infinite input is *not* preserved: its
  whole block decodes to NaN.
* A partial last block (``N % 32 != 0``) takes its scale from the elements present; there is no
  padding in the output.
* Input is converted to float32 first (the logits are float32); ``V_i / 2**shared_exp`` is then
  exact in float32 because it only changes the exponent and the quotient stays in the float32
  normal range whenever it is large enough (>= 2**-10) to round to a non-zero E4M3 value, so
  ml_dtypes' float32 -> float8 RNE is a single, correct rounding.

Dequantisation (:func:`dequantize`) is the behaviour the RTL dequantiser implements bit for bit:

* ``out = BF16_RNE(P_i * 2**(S - 127))``, computed as a float32 product and then rounded with
  :func:`~memwall.golden.common.formats.round_to_bf16`.
* The float32 product is exact except when it overflows: ``P_i`` has 4 significant bits and
  ``|P_i * 2**(S-127)|`` lies in ``[2**-136, 1.75 * 2**135]``; every such value below 2**128 is a
  float32 (normal, or subnormal with its lowest set bit >= 2**-139 > 2**-149). Products
  ``>= 2**128`` become +-inf in float32, and the exact value also rounds to inf in BF16 (BF16's
  overflow threshold is ``(2 - 2**-8) * 2**127 < 2**128``), so the result is the correctly
  rounded BF16 of the exact product in every case.
* Hence: results in the BF16 normal range are exact (4 <= 8 significant bits); results below
  2**-126 are rounded RNE to BF16 *subnormals* (kept, not flushed; lsb 2**-133, so e.g.
  ``2**-136`` rounds to ``+0`` and ``3 * 2**-135`` to ``2**-133``); results ``>= 2**128`` in
  magnitude (only possible with ``S >= 0xF7``) become +-inf.
* ``+-0`` elements give ``+-0`` (``0x0000`` / ``0x8000``) for any non-NaN scale.
* A NaN element (``0x7F``/``0xFF``) or a NaN scale (``0xFF``, whole block) gives the canonical
  BF16 quiet NaN ``0x7FC0`` (:attr:`BF16.qnan_bits`), the only NaN memwall blocks emit.
"""

from __future__ import annotations

import numpy as np

from memwall.golden.dplena import mx

__all__ = [
    "BLOCK",
    "ELEM_MAX",
    "ELEM_NAN",
    "EMAX_ELEM",
    "SCALE_BIAS",
    "SCALE_NAN",
    "dequantize",
    "num_blocks",
    "quantize",
]

FORMAT = mx.FORMATS["mxfp8_e4m3"]
BLOCK = mx.BLOCK
"""Elements per MX block (OCP MX v1.0 fixes k = 32 for MXFP8)."""
EMAX_ELEM = FORMAT.emax
"""Exponent of the largest normal E4M3 value (448 = 1.75 * 2**8)."""
SCALE_BIAS = mx.SCALE_BIAS
SCALE_NAN = mx.SCALE_NAN
SCALE_MIN_EXP = mx.SCALE_MIN_EXP
SCALE_MAX_EXP = mx.SCALE_MAX_EXP
ELEM_NAN = FORMAT.nan_code
ELEM_MAX = FORMAT.max_normal


def num_blocks(n: int) -> int:
    """Number of MX blocks (and scale bytes) for ``n`` elements: ``ceil(n / 32)``."""
    return mx.num_blocks(n)


def quantize(x) -> tuple[np.ndarray, np.ndarray]:
    """Quantise to MXFP8 (E4M3 elements, one E8M0 scale per 32 elements of the last axis):
    :func:`memwall.golden.dplena.mx.quantize` at ``mxfp8_e4m3``.

    Parameters
    ----------
    x : array_like, shape (..., N)
        Values; converted to float32 first (exact for float16/float32 input). ``N >= 0``; the
        last block may be partial.

    Returns
    -------
    elements : np.ndarray of uint8, shape (..., N)
        E4M3 (``float8_e4m3fn``) bit patterns.
    scales : np.ndarray of uint8, shape (..., ceil(N / 32))
        E8M0 bit patterns (biased exponent, bias 127; ``0xFF`` = NaN).

    Notes
    -----
    Rounding, saturation, zero and NaN/inf rules are in the module docstring.
    """
    return mx.quantize(x, FORMAT)


def dequantize(elements, scales) -> np.ndarray:
    """Decode MXFP8 to BF16 bit patterns, exactly as the RTL dequantiser does
    (:func:`memwall.golden.dplena.mx.dequantize` at ``mxfp8_e4m3``).

    Parameters
    ----------
    elements : array_like of uint8, shape (..., N)
        E4M3 bit patterns.
    scales : array_like of uint8, shape (..., ceil(N / 32))
        E8M0 bit patterns; scale ``j`` applies to elements ``32*j .. 32*j + 31``.

    Returns
    -------
    np.ndarray of uint16, shape (..., N)
        BF16 bit patterns: ``RNE_bf16(element * 2**(scale - 127))``; NaN element or NaN scale
        gives ``0x7FC0``. See the module docstring for exactness, subnormals and overflow.
    """
    return mx.dequantize(elements, scales, FORMAT)
