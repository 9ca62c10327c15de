"""The figures ``reports/rdxe`` puts beside the paper's, each with its definition.

:func:`evaluate` runs :mod:`memwall.golden.rdxe.layer` with each baseline's named options
(:data:`~memwall.golden.rdxe.baselines.BASELINE_OPTIONS`: ``"paper"``, the paper's reading;
for the KV cache also ``"word"``, a word-per-VAC layout; ``"rtl"``, our hardware's own mode),
the sensitivity of the paper-reading baselines to their assumed constants, every operation's
MAC efficiency, the GQA capacity measured on the KV images
(:func:`memwall.golden.rdxe.layout.kv_footprint`), and the ring against padded batching in MAC
utilisation under arrival gaps, the model's layers split over the DXEs
(:func:`~memwall.golden.rdxe.serving.layer_split`). Deterministic.
"""

from __future__ import annotations

import numpy as np

from memwall.golden.rdxe import baselines as bl
from memwall.golden.rdxe.layer import (
    GQA_MODEL,
    MODELS,
    layer_cycles,
    layer_macs,
    peak_macs_per_cycle,
)
from memwall.golden.rdxe.layout import LAYOUTS, kv_footprint
from memwall.golden.rdxe.serving import (
    GAP,
    OUTPUT,
    PROMPT,
    layer_balance,
    layer_split,
    padded_utilisation,
    requests,
    serve,
)

__all__ = ["CONTEXTS", "GQA_TOKENS", "GQA_GROUPS", "LOADS", "LOAD", "BATCHES", "evaluate",
           "format_report"]

CONTEXTS = (128, 512, 1024)
#: Tokens of the GQA measurement: not a whole number of KV words (16 tokens), so words the
#: last tokens fill only in part are in the count.
GQA_TOKENS = 1000
#: Query heads per KV head: MHA, and the paper's 3-6 (Sec. III-C) on GPT-2 small's 12 heads.
GQA_GROUPS = (1, 2, 3, 6)
#: Offered loads of the serving study (see :func:`_ring`): None = every request at once;
#: 1 = requests arrive, on average, as fast as the ring takes their tokens (the headline).
LOADS = (None, 4, 2, 1, 0.5)
LOAD = 1
#: Batch sizes of padded batching: the paper's 8-way and 16-way baselines (Sec. III-A).
BATCHES = (8, 16)
#: Unfused-VRC constants swept to show the sensitivity of the non-linear share.
VE_LANES_SWEEP = (1, 2, 4, 16)
FBUF_SWEEP = (4, 16)


def _vrc(cfg) -> tuple[list, list]:
    rows = []
    for shape in MODELS.values():
        for t in CONTEXTS:
            fused = layer_cycles(cfg, shape, t, "fused")
            seq = layer_cycles(cfg, shape, t, "sequential")
            rtl = layer_cycles(cfg, shape, t, "sequential", vrc_baseline="rtl")
            rows.append({
                "model": shape.name, "tokens": t, "fused_layer": fused["total"],
                "sequential_layer": seq["total"], "sequential_layer_rtl": rtl["total"],
                "fused_nonlinear": fused["nonlinear"], "sequential_nonlinear": seq["nonlinear"],
                "sequential_nonlinear_rtl": rtl["nonlinear"],
                "layer_speedup": seq["total"] / fused["total"],
                "layer_speedup_rtl": rtl["total"] / fused["total"],
                "nonlinear_speedup": seq["nonlinear"] / fused["nonlinear"],
                "nonlinear_speedup_rtl": rtl["nonlinear"] / fused["nonlinear"],
                "nonlinear_share": seq["nonlinear"] / seq["total"],
                "nonlinear_share_rtl": rtl["nonlinear"] / rtl["total"],
                "fused_nonlinear_share": fused["nonlinear"] / fused["total"]})
    shape = MODELS["opt-350m"]
    sweep = []
    for lanes in VE_LANES_SWEEP:
        for port in FBUF_SWEEP:
            vrc = bl.UnfusedVrc(ve_lanes=lanes, fbuf_bytes_per_cycle=port)
            for t in CONTEXTS:
                seq = layer_cycles(cfg, shape, t, "sequential", vrc_baseline=vrc)
                fused = layer_cycles(cfg, shape, t, "fused")["total"]
                sweep.append({"model": shape.name, "ve_lanes": lanes, "fbuf_bytes_per_cycle": port,
                              "tokens": t, "nonlinear_share": seq["nonlinear"] / seq["total"],
                              "layer_speedup": seq["total"] / fused})
    return rows, sweep


def _attention(layer: dict) -> int:
    """The cycles of the commands that read the KV caches: QK and P.V."""
    return layer["ops"]["qk"] + layer["ops"]["pv"]


def _efficiency_for(cfg, shape, t: int, speedup: float) -> float:
    """The read efficiency of a packed baseline (iWuR's writes, :class:`~.baselines.KvBaseline`)
    at which the layer speed-up of iWuR is ``speedup`` (bisection; the speed-up falls as the
    efficiency rises). 0 if even the worst reading (one byte of a word) does not reach it."""
    iwur = layer_cycles(cfg, shape, t, "fused")["total"]

    def gain(e):
        kv = bl.KvBaseline(e)
        return layer_cycles(cfg, shape, t, "fused", "baseline", kv_baseline=kv)["total"] / iwur

    lo, hi = 1 / cfg.lanes, 1.0
    if gain(lo) < speedup:
        return 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gain(mid) >= speedup else (lo, mid)
    return lo


#: The KV baselines of the iWuR comparison, by the suffix of their keys: the named options.
KV_READINGS = {"": "paper", "_word": "word", "_rtl": "rtl"}


def _iwur(cfg) -> tuple[list, list, list]:
    rows = []
    for shape in MODELS.values():
        for t in CONTEXTS:
            iwur = layer_cycles(cfg, shape, t, "fused")
            row = {"model": shape.name, "tokens": t, "iwur_layer": iwur["total"],
                   "iwur_attention": _attention(iwur), "iwur_kv_write": iwur["ops"]["kv_write"],
                   "word_read_efficiency": bl.word_read_efficiency(shape.head_dim, cfg.vacs,
                                                                   cfg.lanes)}
            for suffix, option in KV_READINGS.items():
                base = layer_cycles(cfg, shape, t, "fused", "baseline", kv_baseline=option)
                row.update({f"baseline_layer{suffix}": base["total"],
                            f"baseline_attention{suffix}": _attention(base),
                            f"baseline_kv_write{suffix}": base["ops"]["kv_write"],
                            f"layer_speedup{suffix}": base["total"] / iwur["total"],
                            f"attention_speedup{suffix}": _attention(base) / _attention(iwur)})
            rows.append(row)
    sweep = []
    for efficiency in (bl.BASELINE_READ_EFFICIENCY, bl.BASELINE_READ_EFFICIENCY_POINTS):
        kv = bl.KvBaseline(efficiency)
        for shape in MODELS.values():
            for t in CONTEXTS:
                iwur = layer_cycles(cfg, shape, t, "fused")
                base = layer_cycles(cfg, shape, t, "fused", "baseline", kv_baseline=kv)
                sweep.append({"read_efficiency": efficiency, "model": shape.name, "tokens": t,
                              "layer_speedup": base["total"] / iwur["total"],
                              "attention_speedup": _attention(base) / _attention(iwur)})
    shape = MODELS["mt5-small"]
    needed = [{"model": shape.name, "tokens": t, "paper_speedup": s,
               "read_efficiency": _efficiency_for(cfg, shape, t, s)}
              for t in CONTEXTS for s in bl.PAPER_IWUR_SPEEDUP]
    return rows, sweep, needed


def _mac_efficiency(cfg) -> list:
    rows = []
    for shape in MODELS.values():
        for t in CONTEXTS:
            layer = layer_cycles(cfg, shape, t, "fused")
            rows.append({"model": shape.name, "tokens": t, "layer": layer["mac_efficiency"],
                         **{op: e for op, e in layer["op_mac_efficiency"].items()
                            if op != "kv_write"}})
    return rows


def _gqa(cfg) -> list:
    shape, rows = GQA_MODEL, []
    # A config smaller than the model (rdxe_small) measures the heads it can hold.
    tokens, dh = min(GQA_TOKENS, cfg.max_tokens), min(shape.head_dim, cfg.max_head_dim)
    mha = {}
    for group in GQA_GROUPS:
        kv_heads = shape.heads // group
        row = {"model": shape.name, "heads_per_kv_head": group, "kv_heads": kv_heads,
               "tokens": tokens, "head_dim": dh, "formula": 1 - 1 / group}
        for layout in LAYOUTS:
            used = kv_footprint(tokens, dh, kv_heads, cfg.vacs, cfg.lanes, cfg.max_tokens,
                                cfg.max_head_dim, layout)
            mha.setdefault(layout, used)
            row[layout] = {**used, "word_fill": used["bytes"] / (used["words"] * cfg.lanes),
                           "bytes_reduction": 1 - used["bytes"] / mha[layout]["bytes"],
                           "words_reduction": 1 - used["words"] / mha[layout]["words"]}
        # The design's figure: bytes the iWuR write-back fills, against MHA's.
        row["reduction"] = row["iwur"]["bytes_reduction"]
        row["kv_capacity"] = 1 - row["reduction"]
        rows.append(row)
    return rows


def _stage(cfg, shape, most: int) -> tuple[list, list]:
    """One layer's cycles and useful MACs for a token at each context ``0 .. most``."""
    cycles = [0] + [layer_cycles(cfg, shape, c)["total"] for c in range(1, most + 1)]
    macs = [0] + [sum(layer_macs(shape, c).values()) for c in range(1, most + 1)]
    return cycles, macs


def _ring(cfg, seed: int, count: int) -> tuple[dict, list]:
    shape = MODELS["mt5-small"]
    split = layer_split(shape.layers, cfg.dxes)
    reqs = requests(count, seed)
    # Padded batches reach the longest prompt plus the longest output.
    cycles, macs = _stage(cfg, shape, max(p for _, p, _ in reqs) + max(o for _, _, o in reqs))
    # Offered load: a request's tokens at one ring step each (a step of the slowest DXE at the
    # workload's mean token context) over the mean arrival gap.
    contexts = np.concatenate([np.arange(1, p + o + 1) for _, p, o in reqs])
    step = max(split) * cycles[int(round(contexts.mean()))]
    service = float(np.mean([p + o for _, p, o in reqs])) * step
    mean_gap = reqs[-1][0] / len(reqs)             # seeded gaps, in their own units
    peak, ms = peak_macs_per_cycle(cfg), 1e3 * cfg.clock_mhz

    def run(load):
        unit = 0.0 if load is None else service / (load * mean_gap)
        timed = [(int(round(a * unit)), p, o) for a, p, o in reqs]
        return {b: serve(cycles, macs, split, peak, timed, b) for b in (None, *BATCHES)}

    sweep = []
    for load in LOADS:
        r = run(load)
        sweep.append({"offered_load": load, **{
            ("ring" if b is None else f"padded_{b}"): {
                "mac_utilisation": r[b]["mac_utilisation"], "dxe_occupancy": r[b]["dxe_occupancy"],
                "mean_latency_ms": float(np.mean(r[b]["latency_cycles"])) / ms} for b in r}})
    r = run(LOAD)
    ring = r[None]
    out = {"model": shape.name, "layers": shape.layers, "dxes": len(split),
           "layer_split": list(split), "layer_balance": layer_balance(split),
           "requests": count, "seed": seed, "prompt_tokens": list(PROMPT),
           "output_tokens": list(OUTPUT), "gap": list(GAP), "offered_load": LOAD,
           "step_cycles": int(step), "mean_gap_cycles": service / LOAD, "cycles": ring["cycles"],
           "macs": ring["macs"], "utilisation": ring["mac_utilisation"],
           "dxe_occupancy": ring["dxe_occupancy"],
           "busy_mac_efficiency": ring["mac_utilisation"] / ring["dxe_occupancy"],
           "mean_latency_ms": float(np.mean(ring["latency_cycles"])) / ms}
    for b in BATCHES:
        out[f"padded_{b}"] = r[b]["mac_utilisation"]
        out[f"padded_{b}_dxe_occupancy"] = r[b]["dxe_occupancy"]
        out[f"padded_{b}_lane_occupancy"] = padded_utilisation(reqs, b)
        out[f"padded_{b}_mean_latency_ms"] = float(np.mean(r[b]["latency_cycles"])) / ms
        out[f"gain_{b}"] = ring["mac_utilisation"] / r[b]["mac_utilisation"] - 1
    return out, sweep


def _shapes() -> dict:
    return {shape.name: {"d_model": shape.d_model, "heads": shape.heads,
                         "kv_heads": shape.kv_heads, "head_dim": shape.head_dim,
                         "ffn": shape.ffn, "layers": shape.layers}
            for shape in (*MODELS.values(), GQA_MODEL)}


def evaluate(cfg, seed: int = 1, count: int = 64) -> dict:
    vrc, vrc_sweep = _vrc(cfg)
    iwur, iwur_sweep, iwur_needed = _iwur(cfg)
    ring, ring_sweep = _ring(cfg, seed, count)
    return {
        "config": cfg.name, "clock_mhz": cfg.clock_mhz, "peak_tops": cfg.peak_tops,
        "dxts": cfg.dxts, "vacs": cfg.vacs, "lanes": cfg.lanes,
        "peak_macs_per_cycle": peak_macs_per_cycle(cfg), "models": _shapes(),
        "contexts": list(CONTEXTS),
        "constants": {
            "paper_nonlinear_speedup": bl.PAPER_NONLINEAR_SPEEDUP,
            "paper_layer_speedup": bl.PAPER_LAYER_SPEEDUP,
            "implied_nonlinear_share": bl.implied_nonlinear_share(),
            "exposed_nonlinear_share": bl.exposed_nonlinear_share(),
            "unfused_vrc": {"ve_lanes": bl.PAPER_VRC.ve_lanes,
                            "fbuf_bytes_per_cycle": bl.PAPER_VRC.fbuf_bytes_per_cycle,
                            "ve_per_dxt": 1, "int8_bytes": bl.INT8_BYTES,
                            "score_bytes": bl.SCORE_BYTES},
            "gbus_bytes": bl.GBUS_BYTES,
            "paper_iwur_speedup": list(bl.PAPER_IWUR_SPEEDUP),
            "iwur_utilisation_gain": bl.IWUR_UTILISATION_GAIN,
            "baseline_read_efficiency": bl.PAPER_KV.read_efficiency,
            "baseline_read_efficiency_points": bl.BASELINE_READ_EFFICIENCY_POINTS,
            "loads": list(LOADS), "batches": list(BATCHES)},
        "vrc": vrc, "vrc_sensitivity": vrc_sweep, "iwur": iwur, "iwur_sensitivity": iwur_sweep,
        "iwur_efficiency_needed": iwur_needed,
        "mac_efficiency": _mac_efficiency(cfg), "gqa": _gqa(cfg), "ring": ring,
        "ring_sensitivity": ring_sweep}


def format_report(result: dict) -> str:
    c = result["constants"]
    lines = [f"rDXE cycle model, config {result['config']} ({result['peak_tops']:.4f} TOPS "
             f"peak at {result['clock_mhz']:g} MHz)", "",
             "VRC, fused vs sequential (one decoder layer, one token); baseline: the paper's "
             f"reading (VE {c['unfused_vrc']['ve_lanes']} lanes, feature buffer "
             f"{c['unfused_vrc']['fbuf_bytes_per_cycle']} B/cycle) [our RTL's sequential mode]:"]
    for r in result["vrc"]:
        lines.append(f"  {r['model']:10s} t={r['tokens']:5d}: layer {r['fused_layer']:6d} vs "
                     f"{r['sequential_layer']:6d} [{r['sequential_layer_rtl']}] cycles "
                     f"({r['layer_speedup']:.2f}x [{r['layer_speedup_rtl']:.2f}x]); non-linear "
                     f"share of the unfused layer {100 * r['nonlinear_share']:.1f} % "
                     f"[{100 * r['nonlinear_share_rtl']:.1f} %] (paper: "
                     f"{100 * c['implied_nonlinear_share']:.1f} %)")
    lines += ["", "KV layout, iWuR vs baseline (fused); baselines: packed (reads at "
              f"{c['baseline_read_efficiency']:.2f}, iWuR's byte writes) / word per VAC (word "
              "writes, reads at the efficiency they give) [our RTL's row-by-row V]:"]
    for r in result["iwur"]:
        lines.append(f"  {r['model']:10s} t={r['tokens']:5d}: layer {r['iwur_layer']:6d} vs "
                     f"{r['baseline_layer']:6d} / {r['baseline_layer_word']} "
                     f"[{r['baseline_layer_rtl']}] cycles ({r['layer_speedup']:.2f}x / "
                     f"{r['layer_speedup_word']:.2f}x [{r['layer_speedup_rtl']:.2f}x]); K/V "
                     f"write {r['iwur_kv_write']} vs {r['baseline_kv_write']} / "
                     f"{r['baseline_kv_write_word']} [{r['baseline_kv_write_rtl']}]")
    lines += ["", "MAC efficiency of the fused iWuR layer (useful MACs / peak MACs x cycles):"]
    for r in result["mac_efficiency"]:
        lines.append(f"  {r['model']:10s} t={r['tokens']:5d}: layer {100 * r['layer']:.1f} %, "
                     f"QK {100 * r['qk']:.1f} %, P.V {100 * r['pv']:.1f} %")
    g = result["gqa"][0]
    lines += ["", f"GQA KV capacity, measured on the KV images ({g['tokens']} tokens, heads of "
              f"{g['head_dim']}):"]
    for r in result["gqa"]:
        lines.append(f"  {r['model']} {r['heads_per_kv_head']} heads per KV head: iWuR "
                     f"{r['iwur']['bytes']:,} bytes in {r['iwur']['words']:,} words "
                     f"(-{100 * r['reduction']:.1f} %), baseline layout "
                     f"{r['baseline']['words']:,} words")
    r = result["ring"]
    split = "+".join(map(str, r["layer_split"]))
    padded = ", ".join(f"{b}-way {100 * r[f'padded_{b}']:.1f} %" for b in c["batches"])
    lines += ["", f"Ring: {r['layers']} {r['model']} layers on {r['dxes']} DXEs ({split}), "
              f"{r['requests']} seeded requests (seed {r['seed']}), MAC utilisation:",
              f"  ring {100 * r['utilisation']:.1f} % (DXE occupancy "
              f"{100 * r['dxe_occupancy']:.1f} %), mean latency {r['mean_latency_ms']:.2f} ms; "
              f"padded batching {padded}"]
    return "\n".join(lines)
