"""The example inputs of ``memwall golden|run dplena`` (``examples/dplena/``): one sampling
step of dplena32, ``logits`` (B, L, V) float32, ``x`` (B, L) token ids with masked positions,
``mask_id`` and ``k`` (B,) tokens to unmask per row."""

from __future__ import annotations

import numpy as np

__all__ = ["arrays"]

MASK_ID = 126336          # LLaDA's mask token, outside the vocabulary used here


def arrays() -> dict:
    return {"step.npz": _step()}


def _step() -> dict:
    rng = np.random.default_rng(1)
    b, length, vocab = 2, 8, 50            # L = block_len of dplena32
    x = rng.integers(0, vocab, (b, length)).astype(np.int64)
    x[0, [1, 3, 4, 6]] = MASK_ID
    x[1, [0, 2, 5, 6, 7]] = MASK_ID
    return {"logits": rng.normal(0.0, 3.0, (b, length, vocab)).astype(np.float32), "x": x,
            "mask_id": np.array(MASK_ID, dtype=np.int64), "k": np.array([2, 3], dtype=np.int64)}
