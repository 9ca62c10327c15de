"""Temperature sampling of x0 by the Gumbel-max trick, LLaDA's ``add_gumbel_noise``, in float64.

LLaDA draws ``x0 = argmax(exp(z) / (-ln u)**T)`` with ``u`` uniform per logit; taking logs,
that is ``argmax(z + T * G)`` with ``G = -ln(-ln u)`` standard Gumbel, whose winner is
distributed as ``softmax(z / T)`` for ``T > 0`` (the Gumbel-max trick); ``T = 0`` is the plain
argmax, the paper's (and memwall's until now) greedy step. The confidence that ranks positions
stays the *clean* softmax probability of the chosen token, as in LLaDA
(``p = softmax(logits); x0_p = p[x0]``).

The uniforms are the core's (:mod:`memwall.golden.dplena.rng`: Threefry-2x32-20 keyed by
(seed, step), counted by (row, token)), taken here as exact float64 values; the core's own
``G`` is :func:`memwall.golden.dplena.gumbel.gumbel_fp32` of the same cells.

**The hardware's arithmetic** (:func:`noisy_keys_hw`, :func:`noisy_argmax_hw`; the RTL's model,
bit for bit). Each logit ``z`` (BF16, as the dequantiser writes it) gets the FP32 key
``fp32(z) + T * G``: one FP32 multiply and one FP32 add, each RNE
(:func:`memwall.golden.common.fparith.fp_mul`, ``fp_add``), ``T`` the FP32 temperature register,
``G`` the FP32 Gumbel variate of its cell. The winner is the first (lowest token) of the largest
keys in :func:`fp32_key`'s total order, BF16's (:func:`~memwall.golden.common.fparith.bf16_key`)
widened: ``+0 == -0``, every NaN equal and above ``+inf``. Its *clean* logit travels with it, for
the confidence. At ``T = +-0`` every finite key is ``z`` itself (``z + +-0``, only ``-0``
becoming ``+0``, which the order does not tell apart), infinities and NaNs stay what they were,
so the winner is the greedy argmax's (:func:`memwall.golden.common.fparith.reduce_max_idx`) bit
for bit. **Error against the float64 draw:** ``G``'s own (at most
:data:`~memwall.golden.dplena.gumbel.MAX_ABS_ERROR`) times ``T``, plus the two FP32 roundings
(half an ulp of ``T * G`` and of the key); they move a winner only where two noisy keys are that
close, which the distribution test (tests/dplena/test_noise.py) cannot tell from the float64
sampler's.
"""

from __future__ import annotations

import numpy as np

from memwall.golden.common.formats import FP32
from memwall.golden.common.fparith import bf16_to_fp32, fp_add, fp_mul
from memwall.golden.dplena.gumbel import gumbel_fp32, gumbel_reference
from memwall.golden.dplena.rng import noise_words, uniform_mantissa

__all__ = ["gumbel_noise", "noisy_x0", "FP32_NAN_KEY", "fp32_key", "gumbel_bits", "noisy_keys_hw",
           "noisy_argmax_hw"]

#: The key of every FP32 NaN: one above +inf's ``0x7F800000``, so NaN is the maximum.
FP32_NAN_KEY = 0x7F800001


def gumbel_noise(seed: int, step: int, shape: tuple[int, ...]) -> np.ndarray:
    """Float64 Gumbel variates of the logits of shape (B, L, V) at (seed, step): row
    ``b * L + l``, token ``v`` of :func:`~memwall.golden.dplena.rng.noise_words`."""
    batch, length, vocab = shape
    words = noise_words(seed, step, np.arange(batch * length), np.arange(vocab))
    return gumbel_reference(uniform_mantissa(words)).reshape(shape)


def noisy_x0(logits, temperature: float, seed: int, step: int) -> np.ndarray:
    """``argmax(z + T * G)`` over the last axis (first index on ties), int64 (B, L); with
    ``temperature == 0`` the argmax of the logits themselves (no noise is drawn)."""
    z = np.asarray(logits, dtype=np.float64)
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature: expected a finite value >= 0, got {temperature}")
    if temperature == 0:
        return np.argmax(z, axis=-1).astype(np.int64)
    return np.argmax(z + temperature * gumbel_noise(seed, step, z.shape), axis=-1).astype(np.int64)


def fp32_key(bits) -> np.ndarray:
    """Total-order key (int64) of FP32 bit patterns: ``+(bits & 0x7FFFFFFF)`` for sign 0,
    ``-(bits & 0x7FFFFFFF)`` for sign 1 (``+0 == -0``), :data:`FP32_NAN_KEY` for every NaN;
    :func:`memwall.golden.common.fparith.bf16_key`'s order on FP32. Keys fit 33-bit signed."""
    bits = np.asarray(bits, dtype=np.uint32)
    mag = (bits & np.uint32(0x7FFFFFFF)).astype(np.int64)
    key = np.where(bits >> np.uint32(31) != 0, -mag, mag)
    return np.where(mag > 0x7F800000, np.int64(FP32_NAN_KEY), key)


def gumbel_bits(seed: int, step: int, rows, tokens) -> np.ndarray:
    """FP32 bit patterns (uint32, (R, V)) of the core's Gumbel variates at (``seed``, ``step``):
    :func:`~memwall.golden.dplena.gumbel.gumbel_fp32` of each (row, token)'s uniform cell."""
    words = noise_words(seed, step, rows, tokens)
    return gumbel_fp32(uniform_mantissa(words)).astype(np.float32).view(np.uint32)


def noisy_keys_hw(z_bits, temperature_bits: int, seed: int, step: int, rows, tokens
                  ) -> np.ndarray:
    """The FP32 keys ``fp32(z) + T * G`` (uint32, (R, V)) of BF16 logits ``z_bits`` (uint16,
    (R, V)) at rows ``rows`` (R,) and tokens ``tokens`` (V,), ``T`` the FP32 pattern
    ``temperature_bits`` (the module docstring has the arithmetic)."""
    z = np.asarray(z_bits, dtype=np.uint16)
    g = gumbel_bits(seed, step, rows, tokens)
    t = np.uint32(_fp32_pattern(temperature_bits))
    return fp_add(bf16_to_fp32(z), fp_mul(t, g, FP32), FP32)


def noisy_argmax_hw(z_bits, temperature_bits: int, seed: int, step: int, rows=None,
                    tokens=None) -> dict[str, np.ndarray]:
    """The noisy argmax of each row of BF16 logits ``z_bits`` (uint16, (R, V)), as the core
    computes it: ``index`` (int64, the first token of the largest :func:`fp32_key`; counted
    within ``tokens``), ``value`` (uint16, that token's clean logit), ``key`` (uint32, its noisy
    key). ``rows`` default ``0..R-1``, ``tokens`` ``0..V-1`` (the noise's counters)."""
    z = np.asarray(z_bits, dtype=np.uint16)
    if z.ndim != 2 or z.shape[1] == 0:
        raise ValueError(f"z_bits: expected (rows, tokens) with tokens >= 1, got {z.shape}")
    rows = np.arange(z.shape[0]) if rows is None else np.asarray(rows)
    tokens = np.arange(z.shape[1]) if tokens is None else np.asarray(tokens)
    keys = noisy_keys_hw(z, temperature_bits, seed, step, rows, tokens)
    index = np.argmax(fp32_key(keys), axis=1)            # the first of equal maxima
    pick = np.arange(z.shape[0])
    return {"index": index.astype(np.int64), "value": z[pick, index], "key": keys[pick, index]}


def _fp32_pattern(bits) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) \
            or not 0 <= int(bits) < 1 << 32:
        raise ValueError(f"temperature_bits: expected a 32-bit FP32 pattern, got {bits!r}")
    return int(bits)
