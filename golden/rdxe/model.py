"""rDXE analytic models on top of the exact command cycles (:mod:`memwall.golden.rdxe.cycles`).

**Decoder layer on one DXE** (:func:`layer_cycles`), one decode token at context ``t``: the
GEMV rows split evenly over the DXE's ``dxts`` tiles (they run in parallel), attention heads
``dxts`` at a time, KV heads' write-backs ``dxts`` at a time. Operations, in order: RMSNorm +
QKV GEMV, the new token's K and V write-back, QK and P.V per head, the output projection,
RMSNorm + FFN up, FFN down. The FFN activation (GELU in the VE) and the residual adds are not
counted (the same in every mode). OPT uses LayerNorm; its mean term folds into the same fused
GEMV (``W'x - mu W'1``, one more statistic), so it is counted as RMSNorm. "Non-linear cycles"
are the layer's cycles less those of the same layer with every normalisation replaced by a
static factor (``mode="plain"``).

Fused (the VRC) and iWuR are the RTL's commands, exactly. Their baselines are named options
(:data:`~memwall.golden.rdxe.baselines.BASELINE_OPTIONS`):

* ``vrc_baseline`` (``mode="sequential"``): ``"paper"`` (default), the paper's reading of a
  conventional unfused path, a MODEL (:class:`~memwall.golden.rdxe.baselines.UnfusedVrc`:
  plain GEMVs, then a narrow vector unit's passes through a feature buffer); ``"rtl"``, the
  RTL's sequential commands (statistics, normalisation and MAC passes in the tile, 16 lanes);
  or an ``UnfusedVrc`` with other constants.
* ``kv_baseline`` (``layout="baseline"``): ``"paper"`` (default), a MODEL
  (:class:`~memwall.golden.rdxe.baselines.KvBaseline`: KV reads at 0.8 of iWuR's, word
  writes); ``"rtl"``, the RTL's row-by-row V layout (P.V gathers one byte per read; the same
  K/V write-back command as iWuR); or a ``KvBaseline``.

**MAC efficiency** of an operation: its useful multiply-accumulates over ``dxts * vacs *
lanes`` times its cycles (:func:`layer_macs`).

**Serving** (:func:`serve`), on one clock: requests arrive at given cycles. *Token-level
pipelining* (the rDXE ring): ``dxes`` DXEs hold ``layers / dxes`` layers each; a token moves
one DXE per step, every DXE working on a different token; a request's prompt tokens enter back
to back, each generated token when the previous one has left the ring (autoregression);
requests join and leave at token granularity; a step lasts as long as its slowest DXE; an empty
ring waits, idle, for the next arrival. *Padded batching* (``batch=B``): requests in arrival
order, ``B`` to a batch; a batch starts when its last member has arrived and the previous batch
has left; every member is padded to the batch's longest prompt and longest output and the
batch runs on the same ring (the most favourable reading of it: its ``B >= dxes`` lanes keep
the ring full). Both are measured as **MAC utilisation**: useful MACs (each request's real
tokens at their real contexts) over ``dxes * dxts * vacs * lanes`` times the cycles from the
first arrival to the last token out. **DXE occupancy** (busy DXE-cycles over ``dxes`` times
those cycles) is reported beside it; it is not MAC utilisation.

:func:`ring` and :func:`padded_utilisation` are the step-based model and the token ratio this
report used before (kept: the CLI's tests use them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memwall.golden.rdxe.baselines import PAPER_KV, PAPER_VRC, KvBaseline, UnfusedVrc
from memwall.golden.rdxe.cycles import kv_write_cycles, mac_cycles

__all__ = ["LayerShape", "MODELS", "GQA_MODEL", "MODES", "layer_cycles", "layer_macs",
           "peak_macs_per_cycle", "ring", "serve", "padded_utilisation", "requests", "evaluate",
           "format_report"]

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


def _option(value, paper, kind: type, name: str):
    """``"paper"`` -> the paper's model, ``"rtl"`` -> None (the RTL's commands), or a model."""
    if isinstance(value, kind):
        return value
    if value == "paper":
        return paper
    if value == "rtl":
        return None
    raise ValueError(f"{name} must be 'paper', 'rtl' or a {kind.__name__}, got {value!r}")


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
        beats = kv.read_beats(beats)
    return mac_cycles(cfg.vacs, cfg.lanes, math.ceil(t / cfg.vacs), beats, t)


def _pv(cfg, dh: int, t: int, mode: str, gather: bool, kv: KvBaseline | None,
        vrc: UnfusedVrc | None) -> int:
    beats = math.ceil(t / cfg.lanes)
    if kv is not None:
        beats = kv.read_beats(beats)
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
    vrc = _option(vrc_baseline, PAPER_VRC, UnfusedVrc, "vrc_baseline")
    kv = _option(kv_baseline, PAPER_KV, KvBaseline, "kv_baseline")
    ops = _ops(cfg, shape, t, mode, layout, vrc, kv)
    plain = _ops(cfg, shape, t, "plain", layout, vrc, kv)
    macs = layer_macs(shape, t)
    peak = peak_macs_per_cycle(cfg)
    total = sum(ops.values())
    return {"ops": ops, "total": total, "nonlinear": total - sum(plain.values()),
            "macs": sum(macs.values()), "mac_efficiency": sum(macs.values()) / (peak * total),
            "op_mac_efficiency": {k: macs[k] / (peak * ops[k]) for k in ops}}


# --- serving: the ring and padded batching -----------------------------------------------------

def requests(count: int, seed: int, prompt=(16, 256), output=(8, 128), gap=(0, 64)):
    """Seeded requests: arrival (in ``gap`` units), prompt tokens, output tokens."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.integers(gap[0], gap[1] + 1, count))
    return [(int(a), int(rng.integers(prompt[0], prompt[1] + 1)),
             int(rng.integers(output[0], output[1] + 1))) for a in arrivals]


def ring(stage_cycles, dxes: int, reqs) -> dict:
    """Token-level pipeline over ``dxes`` DXEs, arrivals in steps, an empty step lasting no
    cycles. ``stage_cycles(t)``: one DXE's cycles for a token at context ``t``. Returns DXE
    occupancy (``utilisation``), steps, cycles and per-request latency in cycles."""
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


def _pipeline(stage_cycles, stage_macs, dxes: int, reqs, start: int) -> dict:
    """The ring on one clock from cycle ``start``: ``reqs`` are (arrival cycle, prompt,
    output); ``stage_cycles[c]``, ``stage_macs[c]``: one DXE's cycles and MACs for a token at
    context ``c``. Returns the end cycle, busy DXE-cycles, MACs and each request's end."""
    n = len(reqs)
    length = [p + o for _, p, o in reqs]
    next_token, ready_at, done = [0] * n, [0] * n, [0] * n
    slots = [None] * dxes                 # (request, context) per DXE
    t, step, busy, macs, finished, first = start, 0, 0, 0, 0, 0
    while finished < n:
        leaving = slots[-1]
        slots = [None] + slots[:-1]
        if leaving is not None:
            r, ctx = leaving
            if ctx + 1 == length[r]:
                done[r] = t
                finished += 1
            elif ctx + 1 >= reqs[r][1]:   # a generated token: the next one may now enter
                ready_at[r] = step
        if finished == n:
            break
        while True:
            chosen = None
            for r in range(first, n):     # first ready request (arrival order)
                if (next_token[r] < length[r] and ready_at[r] is not None
                        and ready_at[r] <= step and reqs[r][0] <= t):
                    chosen = r
                    break
            if chosen is not None or any(s is not None for s in slots):
                break
            t = max(t, min(reqs[r][0] for r in range(first, n) if next_token[r] < length[r]))
        if chosen is not None:
            ctx = next_token[chosen]
            slots[0] = (chosen, ctx)
            next_token[chosen] += 1
            ready_at[chosen] = step + 1 if ctx + 1 < reqs[chosen][1] else None
            while first < n and next_token[first] == length[first]:
                first += 1                # every token of it entered: skip it from now on
        occupied = [slot[1] + 1 for slot in slots if slot is not None]
        busy += sum(stage_cycles[c] for c in occupied)
        macs += sum(stage_macs[c] for c in occupied)
        t += max(stage_cycles[c] for c in occupied)
        step += 1
    return {"end": t, "busy": busy, "macs": macs, "done": done}


def serve(stage_cycles, stage_macs, dxes: int, peak_per_dxe: int, reqs,
          batch: int | None = None) -> dict:
    """Serve ``reqs`` (arrival cycle, prompt, output; in arrival order) on ``dxes`` DXEs by
    token-level pipelining (``batch`` None) or padded batching of ``batch`` requests (module
    docstring). ``peak_per_dxe``: MACs a cycle of one DXE. Returns MAC utilisation, DXE
    occupancy, the cycles and each request's latency in cycles."""
    start = min(a for a, _, _ in reqs)
    if batch is None:
        r = _pipeline(stage_cycles, stage_macs, dxes, reqs, start)
        end, busy, useful, done = r["end"], r["busy"], r["macs"], r["done"]
    else:
        prefix = np.concatenate([[0], np.cumsum(stage_macs[1:])])   # MACs of tokens 1..c
        end, busy, useful, done = start, 0, 0, []
        for i in range(0, len(reqs), batch):
            members = reqs[i:i + batch]
            begin = max(end, max(a for a, _, _ in members))
            padded = (begin, max(p for _, p, _ in members), max(o for _, _, o in members))
            r = _pipeline(stage_cycles, stage_macs, dxes, [padded] * len(members), begin)
            end, busy = r["end"], busy + r["busy"]
            useful += dxes * int(sum(prefix[p + o] for _, p, o in members))
            done += r["done"]
    span = end - start
    return {"mac_utilisation": useful / (dxes * peak_per_dxe * span),
            "dxe_occupancy": busy / (dxes * span), "cycles": span,
            "latency_cycles": [d - a for d, (a, _, _) in zip(done, reqs, strict=True)]}


def padded_utilisation(reqs, lanes: int) -> float:
    """Lane occupancy of padded batching: the requests' tokens over ``lanes`` x the padded
    tokens, batches of ``lanes`` in arrival order (a token ratio, not a utilisation in time)."""
    useful = padded = 0
    for i in range(0, len(reqs), lanes):
        batch = reqs[i:i + lanes]
        useful += sum(p + o for _, p, o in batch)
        padded += lanes * (max(p for _, p, _ in batch) + max(o for _, _, o in batch))
    return useful / padded


# --- the comparison with the paper (memwall.golden.rdxe.comparison) ---------------------------

def evaluate(cfg, seed: int = 1, count: int = 64) -> dict:
    """Every figure of ``reports/rdxe``: :func:`memwall.golden.rdxe.comparison.evaluate`."""
    from memwall.golden.rdxe.comparison import evaluate as _evaluate

    return _evaluate(cfg, seed, count)


def format_report(result: dict) -> str:
    from memwall.golden.rdxe.comparison import format_report as _format

    return _format(result)
