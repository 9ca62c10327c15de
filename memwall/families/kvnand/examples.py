"""The example inputs of ``memwall golden|run kvnand`` (``examples/kvnand/``), for
kvnand_small: ``bch.npz`` (``message`` (N, 8192) bits) and ``logit.npz`` (a BF16 K page of 4
tokens of 16 elements, ``page`` uint8, and ``q`` (4 heads, 16) floats)."""

from __future__ import annotations

import numpy as np

__all__ = ["arrays"]


def arrays() -> dict:
    return {"bch.npz": _bch(), "logit.npz": _logit()}


def _bch() -> dict:
    from memwall.golden.kvnand import bch

    rng = np.random.default_rng(5)
    return {"message": rng.integers(0, 2, (2, bch.K)).astype(np.uint8)}


def _logit() -> dict:
    import ml_dtypes

    from memwall.config import load_config
    from memwall.golden.kvnand import pe

    rng = np.random.default_rng(6)
    k = rng.standard_normal(4 * 16).astype(ml_dtypes.bfloat16)
    page = pe.pack_page(k.view(np.uint16), "bf16", load_config("kvnand_small").page_bytes)
    return {"page": page, "q": rng.standard_normal((4, 16))}
