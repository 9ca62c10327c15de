"""The ``pim`` family's retention-aware scheduler: the closed-form counts of a schedule
(:mod:`memwall.golden.pim.closed_form`), the search for the minimum-energy schedule
(:mod:`memwall.golden.pim.search`), both re-exported here, and the comparison with the eDRAM
and Neural Cache baselines and the feature ablation (:func:`compare`).

The search's space is every tile size 1..D of each dimension, every loop order and every VPD
level, kept when the schedule fits; its result is the minimum energy over that whole space
(ties broken by energy, cycles, order index, tm, tk, tn, vpd), with the proof in
:mod:`memwall.golden.pim.search`.
"""

from __future__ import annotations

import dataclasses

from memwall.golden.pim import neural_cache
from memwall.golden.pim.closed_form import (
    _steps,
    _weight_rows,
    counts,
    evaluate,
    macro_refreshes,
    peak_psum_closed_form,
    timing,
    walk,
)
from memwall.golden.pim.logic import logic_terms
from memwall.golden.pim.search import (
    CHUNK,
    DEFAULT_BOUND,
    EVAL_OVERHEAD_STEPS,
    UNBOUNDED,
    NoSchedule,
    SearchBound,
    SearchTooLarge,
    _key,
    _too_large,
    candidates,
    search,
    space_size,
    tile_classes,
)

__all__ = ["counts", "evaluate", "walk", "timing", "macro_refreshes", "search", "compare",
           "candidates", "tile_classes", "space_size", "peak_psum_closed_form",
           "neural_cache_baseline",
           "run_json", "as_json", "format_report", "NoSchedule", "SearchTooLarge", "SearchBound",
           "DEFAULT_BOUND", "UNBOUNDED", "CHUNK", "EVAL_OVERHEAD_STEPS"]


def neural_cache_baseline(cfg, M: int, K: int, N: int) -> dict | None:
    """The Neural Cache baseline of the GEMM (:mod:`memwall.golden.pim.neural_cache`):
    ``{"energy", "cycles", "plan"}``, or None where the array's rows cannot map it."""
    try:
        return {"energy": neural_cache.energy(cfg, M, K, N),
                "cycles": neural_cache.cycles(cfg, M, K, N)["total"],
                "plan": neural_cache.plan(cfg, M, K, N)}
    except neural_cache.NoNeuralCacheMapping:
        return None


# --- baselines and ablation -----------------------------------------------------------------

def compare(cfg, M: int, K: int, N: int, *, ones: float | None = None,
            bound: SearchBound = UNBOUNDED) -> dict:
    """The proposed schedule, the two baselines and the feature ablation of one GEMM.

    * eDRAM baseline: a retention-unaware scheduler (the minimum of the refresh-free energy at
      VPD = VSS, no gating), VPD = VSS, every written row refreshed every interval.
    * ablation, each step on top of the last: + refresh skipping (same schedule), + VPD choice
      (best level for that schedule), + sense-amp gating, + retention-aware schedule search
      (the proposed result). Each step takes a minimum over a set holding the previous step's
      choice, so energy never increases along it.
    * Neural Cache: its own bit-serial algorithm on SRAM of the same geometry
      (:func:`neural_cache_baseline`; None where the rows cannot hold its scratch rows).
    """
    naive_search = search(cfg, M, K, N, ones=ones, levels=[0], gating=False, refresh="off",
                          bound=bound)
    naive = naive_search["schedule"]
    if bound.search_steps is not None:   # one budget for both searches and the baselines
        # The eDRAM baseline walks every row write and every refresh of the naive schedule
        # in Python (refresh "all"): at most its cycles / interval x the rows written, each
        # charged as a step; then it is evaluated at each VPD level and gated.
        tiles = int(_steps(M, K, N, naive.tm, naive.tk, naive.tn))
        written = tiles * int(_weight_rows(cfg, naive.tk, naive.tn))
        cycles = counts(cfg, naive, ones=ones, refresh="off")["cycles"]
        refreshes = cycles // cfg.refresh_interval(0) * min(cfg.rows, written)
        baselines = written + refreshes + (cfg.levels + 2) * (tiles + EVAL_OVERHEAD_STEPS)
        left = bound.search_steps - naive_search["work_steps"] - baselines
        if left <= 0:
            raise _too_large(f"needs about {baselines:,} steps for the eDRAM baseline of its "
                             f"naive schedule ({tiles:,} tiles, up to {refreshes:,} row "
                             f"refreshes walked), past its bound of {bound.search_steps:,}",
                             M, K, N, cfg, f"{cycles:,} cycles")
        bound = dataclasses.replace(bound, search_steps=left)
    base = evaluate(cfg, naive, ones=ones, gating=False, refresh="all")
    skip = evaluate(cfg, naive, ones=ones, gating=False)
    vpd = min((evaluate(cfg, dataclasses.replace(naive, vpd=v), ones=ones, gating=False)
               for v in range(cfg.levels)), key=_key)
    gated = evaluate(cfg, vpd["schedule"], ones=ones)
    best = search(cfg, M, K, N, ones=ones, bound=bound)
    cache = neural_cache_baseline(cfg, M, K, N)
    steps = [("eDRAM baseline", base), ("+ refresh skipping", skip), ("+ VPD choice", vpd),
             ("+ sense-amp gating", gated), ("+ retention-aware schedule", best)]
    macro = ("pim_access", "pim_sense", "pim_write", "pim_refresh")
    return {"gemm": (M, K, N), "config": cfg.name, "proposed": best, "edram_baseline": base,
            "neural_cache": cache, "ablation": steps, "logic": dict(logic_terms(cfg)),
            "vs_edram": base["energy"]["total"] / best["energy"]["total"],
            # Both schemes fetch the same weights from DRAM: the ratio of what they spend on
            # chip (macro, buffer, logic) leaves that shared term out.
            "vs_edram_on_chip": (base["energy"]["total"] - base["energy"]["weight_fetch"])
            / (best["energy"]["total"] - best["energy"]["weight_fetch"]),
            "vs_neural_cache": cache["energy"]["total"] / best["energy"]["total"]
            if cache else None,
            "macro_saving_vs_edram": 1 - sum(best["energy"][k] for k in macro)
            / sum(base["energy"][k] for k in macro)}


def run_json(e: dict) -> dict:
    """One :func:`evaluate` result as JSON: schedule, cycles, counters, energy (pJ)."""
    return {"schedule": dataclasses.asdict(e["schedule"]), "cycles": int(e["cycles"]),
            "counters": {k: float(v) if isinstance(v, float) else int(v)
                         for k, v in e["counters"].items()},
            "energy_pj": {k: float(v) for k, v in e["energy"].items()}}


def as_json(result: dict) -> dict:
    best = result["proposed"]
    return {"config": result["config"], "gemm": dict(zip("MKN", result["gemm"], strict=True)),
            "proposed": run_json(best), "edram_baseline": run_json(result["edram_baseline"]),
            "neural_cache": None if result["neural_cache"] is None else {
                "energy_pj": {k: float(v) for k, v in result["neural_cache"]["energy"].items()},
                "cycles": result["neural_cache"]["cycles"],
                "plan": result["neural_cache"]["plan"]},
            "ablation": [{"step": name, "energy_pj": float(e["energy"]["total"]),
                          "schedule": dataclasses.asdict(e["schedule"])}
                         for name, e in result["ablation"]],
            "ratios": {"vs_edram": result["vs_edram"],
                       "vs_neural_cache": result["vs_neural_cache"],
                       "macro_saving_vs_edram": result["macro_saving_vs_edram"]},
            "search": {"candidates": best["searched"], "classes": best["classes"],
                       "evaluated": best["evaluated"], "walked": best["walked"],
                       "seconds": best["seconds"]},
            "logic_energy": result["logic"]}


def format_report(result: dict) -> str:
    best, base = result["proposed"], result["edram_baseline"]
    s = best["schedule"]
    M, K, N = result["gemm"]
    lines = [f"GEMM {M}x{K}x{N} on {result['config']}",
             f"schedule: order {s.order}, tiles tm={s.tm} tk={s.tk} tn={s.tn}, VPD level "
             f"{s.vpd}; {best['cycles']:,} cycles",
             f"search: {best['searched']:,} candidates (every tile size, order and VPD level "
             f"that fits) in {best['classes']:,} classes, {best['evaluated']:,} evaluated "
             f"exactly ({best['walked']:,} step walks), {best['seconds']:.3f} s",
             "logic (controller and PU) energy: " + result["logic"]["source"], "",
             "energy (pJ)      proposed   eDRAM base"]
    for part in best["energy"]:
        lines.append(f"  {part:<14}{best['energy'][part]:>11.1f}{base['energy'][part]:>13.1f}")
    cache = result["neural_cache"]
    if cache is None:
        lines += ["", "Neural Cache: the array's rows cannot hold its scratch rows and a weight"]
    else:
        p = cache["plan"]
        lines += ["", f"Neural Cache (bit-serial, transposed; {p['kc']} weights a lane, "
                  f"{p['lanes']} lanes an output, {p['waves']} waves): {cache['cycles']:,} "
                  "cycles"]
        lines += [f"  {part:<14}{value:>11.1f}" for part, value in cache["energy"].items()]
    lines += ["", "counters         proposed   eDRAM base"]
    for name, value in best["counters"].items():
        lines.append(f"  {name:<20}{value:>11,.0f}{base['counters'][name]:>13,.0f}")
    lines += ["", "ablation (pJ)"]
    for name, e in result["ablation"]:
        lines.append(f"  {name:<30}{e['energy']['total']:>13.1f}")
    versus = (f"{result['vs_neural_cache']:.2f}x less than Neural Cache"
              if result["vs_neural_cache"] else "no Neural Cache mapping")
    lines += ["", f"{result['vs_edram']:.2f}x less energy than the eDRAM baseline, {versus}; "
              f"eDRAM macro energy {100 * result['macro_saving_vs_edram']:.1f} % below the "
              "baseline's"]
    return "\n".join(lines)
