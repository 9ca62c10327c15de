"""One rDXE decoder layer on one DXE, composed from the exact command cycles
(:mod:`memwall.golden.rdxe.cycles`).

:func:`layer_cycles`: one decode token at context ``t``. The GEMV rows split evenly over the
DXE's ``dxts`` tiles (they run in parallel), attention heads ``dxts`` at a time, KV heads'
write-backs ``dxts`` at a time. Operations, in order: RMSNorm + QKV GEMV, the new token's K and
V write-back, QK and P.V per head, the output projection, RMSNorm + FFN up, FFN down. The FFN
activation (GELU in the VE) and the residual adds are not counted (the same in every mode). OPT
uses LayerNorm; its mean term folds into the same fused GEMV (``W'x - mu W'1``, one more
statistic), so it is counted as RMSNorm. "Non-linear cycles" are the layer's cycles less those
of the same layer with every normalisation replaced by a static factor (``mode="plain"``).

Fused (the VRC) and iWuR are the RTL's commands, exactly. Their baselines are named options
(:data:`~memwall.golden.rdxe.baselines.BASELINE_OPTIONS`) or models:

* ``vrc_baseline`` (``mode="sequential"``): ``"paper"`` (default), the paper's reading of a
  conventional unfused path, a MODEL (:class:`~memwall.golden.rdxe.baselines.UnfusedVrc`:
  plain GEMVs, then a narrow vector unit's passes through a feature buffer); ``"rtl"``, the
  RTL's sequential commands (statistics, normalisation and MAC passes in the tile, ``lanes``
  elements a cycle); or an ``UnfusedVrc`` with other constants.
* ``kv_baseline`` (``layout="baseline"``): ``"paper"`` (default), a MODEL
  (:class:`~memwall.golden.rdxe.baselines.KvBaseline`: packed bytes, KV reads at 0.8 of iWuR's,
  iWuR's byte-write command); ``"word"``, a MODEL (each VAC's outputs as whole words, reads at
  the efficiency that layout gives); ``"rtl"``, the RTL's row-by-row V layout (P.V gathers one
  byte per read; the same K/V write-back command as iWuR); or a ``KvBaseline``.

**MAC efficiency** of an operation: its useful multiply-accumulates (:func:`layer_macs`) over
``dxts * vacs * lanes`` times its cycles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memwall.golden.rdxe.baselines import BASELINE_OPTIONS, KvBaseline, UnfusedVrc
from memwall.golden.rdxe.cycles import kv_write_cycles, mac_cycles

__all__ = ["LayerShape", "MODELS", "GQA_MODEL", "MODES", "layer_cycles", "layer_macs",
           "peak_macs_per_cycle"]

MODES = ("fused", "sequential", "plain")


@dataclass(frozen=True)
class LayerShape:
    name: str
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: int


#: OPT-350M (hidden 1024, 16 heads, FFN 4096, 24 layers) and MT5-small's decoder (the paper's
#: d_model 512, 6 heads, d_ff 1024; 8 layers; head dimension 64).
MODELS = {
    "opt-350m": LayerShape("OPT-350M", 1024, 16, 16, 64, 4096, 24),
    "mt5-small": LayerShape("MT5-small", 512, 6, 6, 64, 1024, 8),
}
#: The paper's GQA study (Sec. III-C): GPT-2 small, 12 heads of 64, 12 layers.
GQA_MODEL = LayerShape("GPT-2 small", 768, 12, 12, 64, 3072, 12)


def peak_macs_per_cycle(cfg) -> int:
    return cfg.dxts * cfg.vacs * cfg.lanes


def _option(value, kind: type, name: str):
    """A named option of baseline ``name`` (:data:`BASELINE_OPTIONS`: a model, or None for the
    RTL's commands), or a model of ``kind``."""
    if isinstance(value, kind):
        return value
    options = BASELINE_OPTIONS[name]
    if isinstance(value, str) and value in options:
        return options[value]
    raise ValueError(f"{name} must be one of {', '.join(map(repr, options))} or a "
                     f"{kind.__name__}, got {value!r}")


def _gemv(cfg, n: int, d: int, mode: str | None) -> int:
    per_tile = math.ceil(n / cfg.dxts)
    groups, beats = math.ceil(per_tile / cfg.vacs), math.ceil(d / cfg.lanes)
    return mac_cycles(cfg.vacs, cfg.lanes, groups, beats, per_tile,
                      fused=mode == "fused", sequential=mode == "sequential",
                      invsqrt=mode is not None)


def _norm_gemv(cfg, n: int, d: int, mode: str, vrc: UnfusedVrc | None) -> int:
    if mode == "plain":
        return _gemv(cfg, n, d, None)
    if mode == "sequential" and vrc is not None:      # the paper's reading: norm, then GEMV
        return vrc.rmsnorm_cycles(d) + _gemv(cfg, n, d, None)
    return _gemv(cfg, n, d, mode)


def _qk(cfg, dh: int, t: int, kv: KvBaseline | None) -> int:
    beats = dh // cfg.lanes
    if kv is not None:
        beats = kv.read_beats(beats, dh, cfg.vacs, cfg.lanes)
    return mac_cycles(cfg.vacs, cfg.lanes, math.ceil(t / cfg.vacs), beats, t)


def _pv(cfg, dh: int, t: int, mode: str, gather: bool, kv: KvBaseline | None,
        vrc: UnfusedVrc | None) -> int:
    beats = math.ceil(t / cfg.lanes)
    if kv is not None:
        beats = kv.read_beats(beats, dh, cfg.vacs, cfg.lanes)
    groups = max(1, dh // cfg.vacs)
    if mode == "sequential" and vrc is not None:      # the paper's reading: softmax, then P.V
        return vrc.softmax_cycles(t) + mac_cycles(cfg.vacs, cfg.lanes, groups, beats, dh,
                                                  gather=gather)
    return mac_cycles(cfg.vacs, cfg.lanes, groups, beats, dh, gather=gather,
                      fused=mode == "fused", sequential=mode == "sequential")


def layer_macs(shape: LayerShape, t: int) -> dict:
    """Useful multiply-accumulates of each operation of one layer for one token at ``t``."""
    qkv = (shape.heads + 2 * shape.kv_heads) * shape.head_dim
    attention = shape.heads * t * shape.head_dim
    return {"rmsnorm_qkv": qkv * shape.d_model, "kv_write": 0, "qk": attention,
            "pv": attention, "out_proj": shape.d_model * shape.heads * shape.head_dim,
            "rmsnorm_ffn_up": shape.ffn * shape.d_model, "ffn_down": shape.d_model * shape.ffn}


def _ops(cfg, shape: LayerShape, t: int, mode: str, layout: str, vrc, kv) -> dict:
    dh = shape.head_dim
    qkv = (shape.heads + 2 * shape.kv_heads) * dh
    baseline = layout == "baseline"
    kv_reads = kv if baseline else None
    rounds = math.ceil(shape.heads / cfg.dxts)
    if baseline and kv is not None:
        write = 2 * kv.write_cycles(dh, cfg.vacs, cfg.lanes)
    else:                                             # K and V: the RTL's write-back command
        write = 2 * kv_write_cycles(dh)
    return {
        "rmsnorm_qkv": _norm_gemv(cfg, qkv, shape.d_model, mode, vrc),
        "kv_write": math.ceil(shape.kv_heads / cfg.dxts) * write,
        "qk": rounds * _qk(cfg, dh, t, kv_reads),
        "pv": rounds * _pv(cfg, dh, t, mode, baseline and kv is None, kv_reads, vrc),
        "out_proj": _gemv(cfg, shape.d_model, shape.heads * dh, None),
        "rmsnorm_ffn_up": _norm_gemv(cfg, shape.ffn, shape.d_model, mode, vrc),
        "ffn_down": _gemv(cfg, shape.d_model, shape.ffn, None),
    }


def layer_cycles(cfg, shape: LayerShape, t: int, mode: str = "fused", layout: str = "iwur",
                 vrc_baseline="paper", kv_baseline="paper") -> dict:
    """Cycles of one decoder layer for one token at context ``t``, by operation; the
    non-linear cycles; the useful MACs and the MAC efficiency, by operation and in all."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if layout not in ("iwur", "baseline"):
        raise ValueError(f"layout must be iwur or baseline, got {layout!r}")
    vrc = _option(vrc_baseline, UnfusedVrc, "vrc_baseline")
    kv = _option(kv_baseline, KvBaseline, "kv_baseline")
    ops = _ops(cfg, shape, t, mode, layout, vrc, kv)
    plain = _ops(cfg, shape, t, "plain", layout, vrc, kv)
    macs = layer_macs(shape, t)
    peak = peak_macs_per_cycle(cfg)
    total = sum(ops.values())
    return {"ops": ops, "total": total, "nonlinear": total - sum(plain.values()),
            "macs": sum(macs.values()), "mac_efficiency": sum(macs.values()) / (peak * total),
            "op_mac_efficiency": {k: macs[k] / (peak * ops[k]) for k in ops}}
