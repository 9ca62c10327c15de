"""The sampling noise's random numbers: Threefry-2x32-20, keyed by (seed, step), counted by
(row, token), and the uniform it gives each logit.

**Why Threefry-2x32-20** (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
JAX's default generator): a counter-based generator, so every lane computes its own numbers from
its own counter with no state to carry or share, and a run reproduces from (seed, step) alone.
Its rounds are 32-bit adds, rotations by constants and XORs: no multiplier. Philox-4x32-10
(cuRAND's, PyTorch's) needs two 32 x 32 -> 64-bit multiplies a round, ten rounds: for the
lanes' worth of generators a vector core needs, those multipliers would be most of the unit.

**The algorithm** (Random123's ``threefry2x32_R(20, ...)``, bit-exact with JAX's
``jax.extend.random.threefry_2x32``; tests/dplena/test_rng.py checks the published known-answer
vectors and JAX): key ``(k0, k1)``, ``k2 = k0 ^ k1 ^ 0x1BD11BDA``; ``x = ctr + (k0, k1)``; 20
rounds ``x0 += x1; x1 = rotl(x1, R[r % 8]) ^ x0`` with ``R = 13 15 26 6 17 29 16 24``, and after
every fourth round the key schedule injection ``x0 += ks[(s) % 3]; x1 += ks[(s + 1) % 3] + s``
(s = 1 .. 5).

**Streams.** The noise of token ``v`` at row ``r`` (``r = b * L + l``: batch row ``b``, block
position ``l``) of sampling step ``step`` under ``seed`` is word ``v & 1`` of
``threefry2x32(key = (seed, step), ctr = (v >> 1, r))``: one call serves two neighbouring tokens,
and no two (seed, step, row, token) share a word, so lanes never share a stream.

**Uniform.** The top 23 bits ``m`` of the word give ``u = (m + 1/2) * 2**-23``: the midpoints of
2**23 equal cells of (0, 1), so ``u`` is never 0 or 1 and ``-log(-log u)`` is always finite.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ROTATIONS", "KS_PARITY", "threefry2x32", "noise_words", "uniform_mantissa",
           "uniform", "UNIFORM_BITS", "MAX_SEED"]

ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
KS_PARITY = 0x1BD11BDA
#: Bits of the uniform: ``u = (m + 1/2) * 2**-UNIFORM_BITS``.
UNIFORM_BITS = 23
#: Seeds are 32-bit (the key's first word).
MAX_SEED = (1 << 32) - 1
_MASK = np.uint64(0xFFFFFFFF)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _MASK


def threefry2x32(key, ctr) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds: ``key`` and ``ctr`` are pairs of uint32 arrays (they
    broadcast); returns the pair of output words (uint32)."""
    k0, k1 = (np.asarray(k, dtype=np.uint64) & _MASK for k in key)
    x0, x1 = (np.asarray(c, dtype=np.uint64) & _MASK for c in ctr)
    ks = (k0, k1, k0 ^ k1 ^ np.uint64(KS_PARITY))
    x0, x1 = (x0 + ks[0]) & _MASK, (x1 + ks[1]) & _MASK
    for r in range(20):
        x0 = (x0 + x1) & _MASK
        x1 = _rotl(x1, ROTATIONS[r % 8]) ^ x0
        if r % 4 == 3:
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & _MASK
            x1 = (x1 + ks[(s + 1) % 3] + np.uint64(s)) & _MASK
    return x0.astype(np.uint32), x1.astype(np.uint32)


def noise_words(seed: int, step: int, rows, tokens) -> np.ndarray:
    """The 32-bit word of every (row, token): ``rows`` (R,) and ``tokens`` (V,) give (R, V)."""
    if not 0 <= int(seed) <= MAX_SEED or not 0 <= int(step) <= MAX_SEED:
        raise ValueError(f"seed and step must be 32-bit unsigned, got {seed} and {step}")
    rows = np.asarray(rows, dtype=np.uint64)[:, None]
    tokens = np.asarray(tokens, dtype=np.uint64)[None, :]
    w0, w1 = threefry2x32((np.uint64(seed), np.uint64(step)), (tokens >> np.uint64(1), rows))
    return np.where((tokens & np.uint64(1)) == 0, w0, w1).astype(np.uint32)


def uniform_mantissa(words) -> np.ndarray:
    """The uniform's cell index ``m`` (the word's top 23 bits)."""
    return (np.asarray(words, dtype=np.uint32) >> np.uint32(32 - UNIFORM_BITS)).astype(np.uint32)


def uniform(words) -> np.ndarray:
    """``u = (m + 1/2) * 2**-23`` in float64 (exact)."""
    return (uniform_mantissa(words).astype(np.float64) + 0.5) * 2.0 ** -UNIFORM_BITS
