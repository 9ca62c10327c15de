"""The example inputs of ``memwall golden|run pim`` (``examples/pim/``): ``a`` (M, K) and
``b`` (K, N) int8 for pim_small."""

from __future__ import annotations

import numpy as np

__all__ = ["arrays"]


def arrays() -> dict:
    return {"gemm.npz": _gemm()}


def _gemm() -> dict:
    rng = np.random.default_rng(2)
    return {"a": rng.integers(-128, 128, (2, 8)).astype(np.int8),
            "b": rng.integers(-128, 128, (8, 3)).astype(np.int8)}
