"""rDXE analytic models on top of the exact command cycles (:mod:`memwall.golden.rdxe.cycles`).

**Decoder layer on one DXE** (:func:`layer_cycles`), one decode token at context ``t``: the
GEMV rows split evenly over the DXE's ``dxts`` tiles (they run in parallel), attention heads
``dxts`` at a time. Operations, in order: RMSNorm + QKV GEMV, QK and P.V per head, the output
projection, RMSNorm + FFN up, FFN down. The FFN activation (GELU in the VE) and the residual
adds are not counted (the same in every mode). OPT uses LayerNorm; its mean term folds into the
same fused GEMV (``W'x - mu W'1``, one more statistic), so it is counted as RMSNorm.
Fused vs sequential switches only the mode of the RMSNorm GEMVs and of P.V; iWuR vs baseline
only P.V's V layout. "Non-linear cycles" are a command's cycles less those of the same GEMV
without the normalisation (plain, static RC).

**Ring of DXEs** (:func:`ring`): ``dxes`` DXEs hold ``layers / dxes`` layers each; a token
moves one DXE per step, every DXE working on a different token. A request's prompt tokens
enter back to back; each generated token enters when the previous one has left the ring
(autoregression). Requests join and leave at token granularity. A step lasts as long as its
slowest DXE; utilisation is work (the DXEs' busy cycles) over ``dxes`` x the steps' cycles.
**Padded batching** with ``B`` lanes: requests in arrival order, ``B`` to a batch, every
request padded to the batch's longest prompt and longest output; utilisation is the requests'
tokens over ``B`` x the padded tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memwall.golden.rdxe.cycles import mac_cycles

__all__ = ["LayerShape", "MODELS", "layer_cycles", "ring", "padded_utilisation",
           "requests", "evaluate", "format_report"]


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


def _gemv(cfg, n: int, d: int, mode: str | None) -> int:
    per_tile = math.ceil(n / cfg.dxts)
    groups, beats = math.ceil(per_tile / cfg.vacs), math.ceil(d / cfg.lanes)
    return mac_cycles(cfg.vacs, cfg.lanes, groups, beats, per_tile,
                      fused=mode == "fused", sequential=mode == "sequential",
                      invsqrt=mode is not None)


def _attention(cfg, shape: LayerShape, t: int, mode: str, layout: str) -> int:
    dh = shape.head_dim
    qk = mac_cycles(cfg.vacs, cfg.lanes, math.ceil(t / cfg.vacs), dh // cfg.lanes, t)
    pv = mac_cycles(cfg.vacs, cfg.lanes, max(1, dh // cfg.vacs), math.ceil(t / cfg.lanes), dh,
                    gather=layout == "baseline", fused=mode == "fused",
                    sequential=mode == "sequential")
    rounds = math.ceil(shape.heads / cfg.dxts)
    return rounds * (qk + pv)


def layer_cycles(cfg, shape: LayerShape, t: int, mode: str = "fused",
                 layout: str = "iwur") -> dict:
    """Cycles of one decoder layer for one token at context ``t``, by operation, plus the
    non-linear cycles of the normalisations and the softmax."""
    qkv = (shape.heads + 2 * shape.kv_heads) * shape.head_dim
    ops = {
        "rmsnorm_qkv": _gemv(cfg, qkv, shape.d_model, mode),
        "attention": _attention(cfg, shape, t, mode, layout),
        "out_proj": _gemv(cfg, shape.d_model, shape.heads * shape.head_dim, None),
        "rmsnorm_ffn_up": _gemv(cfg, shape.ffn, shape.d_model, mode),
        "ffn_down": _gemv(cfg, shape.d_model, shape.ffn, None),
    }
    plain = (_gemv(cfg, qkv, shape.d_model, None) + _gemv(cfg, shape.ffn, shape.d_model, None)
             + _attention(cfg, shape, t, "plain", layout))
    nonlinear = ops["rmsnorm_qkv"] + ops["rmsnorm_ffn_up"] + ops["attention"] - plain
    return {"ops": ops, "total": sum(ops.values()), "nonlinear": nonlinear}


# --- the ring ---------------------------------------------------------------------------------

def requests(count: int, seed: int, prompt=(16, 256), output=(8, 128), gap=(0, 64)):
    """Seeded requests: arrival step, prompt tokens, output tokens."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.integers(gap[0], gap[1] + 1, count))
    return [(int(a), int(rng.integers(prompt[0], prompt[1] + 1)),
             int(rng.integers(output[0], output[1] + 1))) for a in arrivals]


def ring(stage_cycles, dxes: int, reqs) -> dict:
    """Token-level pipeline over ``dxes`` DXEs. ``stage_cycles(t)``: one DXE's cycles for a
    token at context ``t``. Returns utilisation, steps, cycles and per-request latency
    (cycles from arrival to the last token leaving the ring)."""
    n = len(reqs)
    next_token = [0] * n                  # tokens of the request already entered
    ready_at = [a for a, _, _ in reqs]    # step at which its next token may enter
    done_at = [None] * n
    slots = [None] * dxes                 # (request, context) per DXE
    step, work, t_now = 0, 0, 0
    finished = 0
    step_start = []                       # cycle at which each step starts
    while finished < n:
        leaving = slots[-1]
        slots = [None] + slots[:-1]
        if leaving is not None:
            r, ctx = leaving
            p, o = reqs[r][1], reqs[r][2]
            if ctx + 1 == p + o:
                done_at[r] = step
                finished += 1
            elif ctx + 1 >= p:            # a generated token: the next one may now enter
                ready_at[r] = step
        for r in range(n):                # first ready request (arrival order)
            p, o = reqs[r][1], reqs[r][2]
            if next_token[r] < p + o and ready_at[r] is not None and ready_at[r] <= step:
                ctx = next_token[r]
                slots[0] = (r, ctx)
                next_token[r] += 1
                # Prompt tokens follow each other; a generated token waits for this one.
                ready_at[r] = step + 1 if ctx + 1 < p else None
                break
        times = [stage_cycles(slot[1] + 1) for slot in slots if slot is not None]
        step_start.append(t_now)
        work += sum(times)
        t_now += max(times, default=0)    # an empty ring waits a step of no cycles
        step += 1
        if step > 10_000_000:
            raise RuntimeError("ring simulation does not finish")
    latency = [step_start[min(done_at[r], len(step_start) - 1)]
               - step_start[min(reqs[r][0], len(step_start) - 1)] for r in range(n)]
    return {"utilisation": work / (t_now * dxes) if t_now else 0.0, "steps": step,
            "cycles": t_now, "latency_cycles": latency}


def padded_utilisation(reqs, lanes: int) -> float:
    """Useful tokens over ``lanes`` x padded tokens, batches of ``lanes`` in arrival order."""
    useful = padded = 0
    for i in range(0, len(reqs), lanes):
        batch = reqs[i:i + lanes]
        useful += sum(p + o for _, p, o in batch)
        padded += lanes * (max(p for _, p, _ in batch) + max(o for _, _, o in batch))
    return useful / padded


# --- the report -------------------------------------------------------------------------------

CONTEXTS = (128, 512, 1024)


def evaluate(cfg, seed: int = 1, count: int = 64) -> dict:
    out = {"config": cfg.name, "clock_mhz": cfg.clock_mhz, "peak_tops": cfg.peak_tops,
           "vrc": [], "iwur": [], "gqa": [], "ring": {}}
    for shape in MODELS.values():
        for t in CONTEXTS:
            fused = layer_cycles(cfg, shape, t, "fused")
            seq = layer_cycles(cfg, shape, t, "sequential")
            out["vrc"].append({"model": shape.name, "tokens": t,
                               "fused_layer": fused["total"], "sequential_layer": seq["total"],
                               "fused_nonlinear": fused["nonlinear"],
                               "sequential_nonlinear": seq["nonlinear"],
                               "layer_speedup": seq["total"] / fused["total"],
                               "nonlinear_speedup": seq["nonlinear"] / fused["nonlinear"]})
            base = layer_cycles(cfg, shape, t, "fused", "baseline")
            out["iwur"].append({"model": shape.name, "tokens": t, "iwur_layer": fused["total"],
                                "baseline_layer": base["total"],
                                "iwur_attention": fused["ops"]["attention"],
                                "baseline_attention": base["ops"]["attention"],
                                "layer_speedup": base["total"] / fused["total"]})
    for group in (1, 2, 3, 6):
        out["gqa"].append({"heads_per_kv_head": group, "kv_capacity": 1 / group,
                           "reduction": 1 - 1 / group})
    shape = MODELS["mt5-small"]
    layers = math.ceil(shape.layers / cfg.dxes)
    reqs = requests(count, seed)

    def stage(t):
        return layers * layer_cycles(cfg, shape, t)["total"]
    r = ring(stage, cfg.dxes, reqs)
    out["ring"] = {"model": shape.name, "dxes": cfg.dxes, "layers_per_dxe": layers,
                   "requests": count, "seed": seed, "utilisation": r["utilisation"],
                   "steps": r["steps"], "cycles": r["cycles"],
                   "mean_latency_ms": float(np.mean(r["latency_cycles"])) / (cfg.clock_mhz * 1e3),
                   "padded_8": padded_utilisation(reqs, 8),
                   "padded_16": padded_utilisation(reqs, 16)}
    return out


def format_report(result: dict) -> str:
    lines = [f"rDXE cycle model, config {result['config']} ({result['peak_tops']:.4f} TOPS "
             f"peak at {result['clock_mhz']:g} MHz)", "",
             "VRC, fused vs sequential (one decoder layer, one token):"]
    for row in result["vrc"]:
        lines.append(f"  {row['model']:10s} t={row['tokens']:5d}: layer {row['fused_layer']:7d} vs "
                     f"{row['sequential_layer']:7d} cycles ({row['layer_speedup']:.2f}x); "
                     f"non-linear {row['fused_nonlinear']:6d} vs "
                     f"{row['sequential_nonlinear']:6d} ({row['nonlinear_speedup']:.2f}x)")
    lines += ["", "KV layout, iWuR vs baseline (fused):"]
    for row in result["iwur"]:
        lines.append(f"  {row['model']:10s} t={row['tokens']:5d}: layer {row['iwur_layer']:7d} vs "
                     f"{row['baseline_layer']:7d} cycles ({row['layer_speedup']:.2f}x); "
                     f"attention {row['iwur_attention']} vs {row['baseline_attention']}")
    lines += ["", "GQA KV capacity:"]
    for row in result["gqa"]:
        lines.append(f"  {row['heads_per_kv_head']} heads per KV head: "
                     f"{row['kv_capacity']:.3f} of MHA (-{100 * row['reduction']:.1f} %)")
    r = result["ring"]
    lines += ["", f"Ring: {r['dxes']} DXEs x {r['layers_per_dxe']} {r['model']} layers, "
              f"{r['requests']} seeded requests (seed {r['seed']}):",
              f"  utilisation {100 * r['utilisation']:.1f} %, mean latency "
              f"{r['mean_latency_ms']:.2f} ms; padded batching 8-way "
              f"{100 * r['padded_8']:.1f} %, 16-way {100 * r['padded_16']:.1f} %"]
    return "\n".join(lines)
