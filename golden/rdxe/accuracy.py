"""Accuracy of the rDXE datapath's fused (VRC) and sequential paths against float64.

Each path is compared with float64 evaluated on its own INT8 operands, in units of the output's
INT8 LSB (the contract of :mod:`memwall.golden.rdxe.datapath`). The workloads are seeded random
layers and heads over the shapes the CLI accepts: Gaussian, heavy-tailed and outlier activations;
diffuse and peaked attention. :func:`study` gives the figures ``reports/rdxe/`` records and the
tests gate (fused within 1 LSB on at least 99.9 % of elements, never worse than sequential).
"""

from __future__ import annotations

import numpy as np

from memwall.golden.rdxe import datapath as rdxe

__all__ = ["study", "rmsnorm_cases", "attention_cases"]


def rmsnorm_cases(rng, count: int = 200):
    """``(x, gamma, w, eps)`` of RMSNorm-GEMV layers: d 16-512, n 16-128, activations Gaussian,
    Student-t (3) or with one outlier channel (x40), scaled over four decades."""
    for _ in range(count):
        d = int(rng.choice([16, 64, 256, 512]))
        n = int(rng.choice([16, 64, 128]))
        kind = rng.integers(3)
        x = rng.standard_normal(d) if kind == 0 else rng.standard_t(3, d)
        if kind == 2:
            x[rng.integers(d)] *= 40                                   # one outlier channel
        x *= 10.0 ** rng.uniform(-2, 2)
        gamma = 1 + 0.2 * rng.standard_normal(d)
        w = rng.standard_normal((n, d)) / np.sqrt(d)
        yield x, gamma, w, float(rng.choice([1e-6, 1e-5, 1e-2]))


def attention_cases(rng, count: int = 160):
    """``(q, k, v)`` of attention heads: 1-1024 tokens, dh 16 or 64, MHA or GQA (3 query heads
    per KV head), query scale from diffuse to peaked softmax."""
    for _ in range(count):
        t = int(rng.choice([1, 7, 64, 300, 1024]))
        dh = int(rng.choice([16, 64]))
        kv_heads = int(rng.choice([1, 2]))
        heads = kv_heads * int(rng.choice([1, 3]))
        sharp = 10.0 ** rng.uniform(-1, 0.8)                          # diffuse .. peaked
        yield (rng.standard_normal((heads, dh)) * sharp, rng.standard_normal((t, kv_heads, dh)),
               rng.standard_normal((t, kv_heads, dh)))


def _errors(got, ref):
    return np.abs(np.asarray(got, np.float64) - ref).ravel()


def _summary(fused: list, seq: list) -> dict:
    f, s = np.concatenate(fused), np.concatenate(seq)
    return {"elements": int(f.size),
            "fused_within_1lsb": float(np.mean(f <= 1)),
            "sequential_within_1lsb": float(np.mean(s <= 1)),
            "fused_max_lsb": float(f.max()), "sequential_max_lsb": float(s.max()),
            "fused_mean_lsb": float(f.mean()), "sequential_mean_lsb": float(s.mean())}


def study(rms_seed: int = 11, attention_seed: int = 12) -> dict:
    """Errors in output LSBs of both paths on the seeded workloads, per operation."""
    fused, seq = [], []
    for x, gamma, w, eps in rmsnorm_cases(np.random.default_rng(rms_seed)):
        q = rdxe.quantise_rmsnorm_gemv(x, gamma, w, eps)
        f = rdxe.rmsnorm_gemv(q.x, q.w_merged, q.eps_sum, q.fused_static)
        s = rdxe.rmsnorm_gemv(q.x, q.w, q.eps_sum, q.seq_out_static, "sequential", q.g,
                              q.seq_norm_static)
        fused.append(_errors(f["y"], q.ref_fused))
        seq.append(_errors(s["y"], q.ref_seq))
    out = {"rmsnorm_gemv": _summary(fused, seq)}
    fused, seq = [], []
    for q, k, v in attention_cases(np.random.default_rng(attention_seed)):
        a = rdxe.quantise_attention(q, k, v)
        f = rdxe.attention(a.q, a.k, a.v, a.score_rc, a.out_static)
        s = rdxe.attention(a.q, a.k, a.v, a.score_rc, a.seq_out_static, "sequential")
        fused.append(_errors(f["o"], a.ref))
        seq.append(_errors(s["o"], a.ref))
    out["attention"] = _summary(fused, seq)
    return out
