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
"""

from __future__ import annotations

import numpy as np

from memwall.golden.dplena.gumbel import gumbel_reference
from memwall.golden.dplena.rng import noise_words, uniform_mantissa

__all__ = ["gumbel_noise", "noisy_x0"]


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
