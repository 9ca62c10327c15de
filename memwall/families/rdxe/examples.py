"""The example inputs of ``memwall golden|run rdxe`` (``examples/rdxe/``), for rdxe_small:
``rmsnorm_gemv.npz`` (``x`` (d,), ``gamma`` (d,), ``w`` (n, d) floats) and ``attention.npz``
(``q`` (heads, dh), ``k`` and ``v`` (t, kv_heads, dh) floats)."""

from __future__ import annotations

import numpy as np

__all__ = ["arrays"]


def arrays() -> dict:
    return {"rmsnorm_gemv.npz": _rmsnorm_gemv(), "attention.npz": _attention()}


def _rmsnorm_gemv() -> dict:
    rng = np.random.default_rng(3)
    d, n = 16, 10
    return {"x": rng.standard_normal(d).astype(np.float32),
            "gamma": 1 + 0.1 * rng.standard_normal(d), "w": rng.standard_normal((n, d)) / 4}


def _attention() -> dict:
    rng = np.random.default_rng(4)
    heads, kv_heads, t, dh = 4, 2, 9, 16
    return {"q": rng.standard_normal((heads, dh)),
            "k": rng.standard_normal((t, kv_heads, dh)),
            "v": rng.standard_normal((t, kv_heads, dh))}
