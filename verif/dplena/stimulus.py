"""Random and directed BF16 stimulus shared by the d-PLENA testbenches."""

from __future__ import annotations

import numpy as np

from memwall.golden.common.formats import bf16_bits

__all__ = ["bf16_vector", "fp32_sticky_ties", "SPECIALS"]

SPECIALS = np.array([
    0x0000, 0x8000,            # +0, -0
    0x7F80, 0xFF80,            # +inf, -inf
    0x0001, 0x8001, 0x007F,    # subnormals
    0x0080, 0x8080,            # smallest normals
    0x7F7F, 0xFF7F,            # largest finite
    0x3F80, 0xBF80,            # +1, -1
], dtype=np.uint16)


def bf16_vector(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """``n`` BF16 bit patterns of a given ``kind`` of stimulus."""
    if kind == "random":
        return bf16_bits(rng.normal(0, 4, n))
    if kind == "wide":          # any finite bit pattern: all exponents, both signs
        x = rng.integers(0, 1 << 16, n, dtype=np.uint16)
        return np.where((x & 0x7F80) == 0x7F80, x & 0xBFFF, x).astype(np.uint16)
    if kind == "ties":          # few distinct values: many equal maxima
        return bf16_bits(rng.integers(-3, 3, n).astype(np.float32))
    if kind == "near_ties":     # one sign, a few units apart: a wrong low bit of an ordered
        #                         compare flips them, where random values are far apart
        base = int(rng.integers(0x0100, 0x7E00)) | int(rng.integers(2)) << 15
        return (base + rng.integers(-40, 41, n)).astype(np.uint16)
    if kind == "all_negative":
        return bf16_bits(-np.abs(rng.normal(0, 4, n)) - 0.5)
    if kind == "masked":        # masked logits: -inf but for about one lane in eight, so
        #                         whole sub-trees and chunks have -inf as their maximum
        x = bf16_bits(rng.normal(0, 4, n))
        return np.where(rng.random(n) < 0.125, x, 0xFF80).astype(np.uint16)
    if kind == "zeros":
        return rng.choice(np.array([0x0000, 0x8000], np.uint16), n)
    if kind == "specials":
        return rng.choice(SPECIALS, n)
    if kind == "nan":
        x = bf16_bits(rng.normal(0, 4, n))
        x[rng.integers(0, n, max(1, n // 8))] = rng.choice(np.array([0x7FC0, 0xFFC1, 0x7F81],
                                                                    np.uint16))
        return x
    if kind == "denormal":
        return (rng.integers(0, 0x80, n) | (rng.integers(0, 2, n) << 15)).astype(np.uint16)
    raise ValueError(f"unknown stimulus kind {kind!r}")


def fp32_sticky_ties(high: np.ndarray, turn: np.ndarray) -> np.ndarray:
    """FP32 words that round to BF16 as ties but for one sticky bit: the upper half of
    ``high``, then the rounding bit and bit ``turn % 15`` of the 15 below it; the BF16 result
    is even for even ``turn // 15`` (else it keeps ``high``'s last bit). A rounding that leaves
    a sticky bit out takes them to even."""
    turn = np.asarray(turn, dtype=np.int64)
    even = np.where(turn // 15 % 2 == 0, 0xFFFE0000, 0xFFFF0000)
    return ((np.asarray(high, dtype=np.int64) & even) | 0x8000 | (1 << (turn % 15))
            ).astype(np.uint32)
