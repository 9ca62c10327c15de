"""Regenerate ``reports/kvnand/`` (``python -m memwall.families.kvnand.report``, ``make bench``).

Every figure comes from :func:`memwall.golden.kvnand.model.evaluate` (the KVNAND design-space
model at its default parameters) and ``report_figures.extra_results`` (the same-die figures
with their verdicts and counterfactual runs; the energy readings, one of them from
``synthesis.json``) and is written to ``results.json``; ``README.md`` is written from
``results.json`` alone (:func:`readme`) and puts the paper's figures beside ours, with both
readings of the paper's two inconsistencies and why ours differ. ``fig15_dse.png`` draws the
Fig. 15 heatmaps, ``fig12_throughput.png`` the decode throughput of every system against the
context. Deterministic.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from memwall import paths
from memwall.families.kvnand import report_figures
from memwall.families.kvnand.report_figures import (  # noqa: F401  (plots.py imports some)
    PAPER_COST,
    PAPER_DSE,
    _ctx,
    _ctxs,
    _ms,
    _pct,
    _rel,
    _x,
    _yes,
)
from memwall.files import dumps_json
from memwall.golden.kvnand import model as kvnand_model
from memwall.golden.kvnand.systems import BUFFER_READINGS, DRAM_READINGS, Params

__all__ = ["build_report", "load_results", "readme", "results", "main", "PLOTS",
           "TABLE_I", "PAPER_DSE", "PAPER_COST", "BALANCE"]

ROOT = paths.REPO
DEFAULT_OUT = ROOT / "reports" / "kvnand"
PLOTS = ("fig15_dse.png", "fig12_throughput.png")
#: Table I's capacities (Gib: 2**30 bits), the paper's figures beside our arithmetic, and its
#: DRAM entry as printed.
TABLE_I = {"plane_gib": 4.1484, "die_gib": 132.75, "dram": "LPDDR5X, 16Gb"}
#: §IV-C's balance statements: a weight (BF16) page's MACs on 2 FMACs at 400 MHz take about
#: tR; a GQA head group of 8 query heads needs 16 FMACs for its Logit pages.
BALANCE = {"gemv_fmacs": 2, "logit_heads": 8}


def results() -> dict:
    """The model's :func:`~memwall.golden.kvnand.model.evaluate`, the figures that discriminate
    and the energy readings (:mod:`memwall.families.kvnand.report_figures`)."""
    return {**kvnand_model.evaluate(), **report_figures.extra_results()}


def load_results(folder: Path = DEFAULT_OUT) -> dict:
    return json.loads((Path(folder) / "results.json").read_text())


# --- formatting ---------------------------------------------------------------------------

def _reading(res: dict) -> tuple[str, str]:
    """The names of the DRAM and KV-buffer readings the headline runs on."""
    p = res["params"]
    dram = next((k for k, v in DRAM_READINGS.items() if v == p["dram_capacity"]), "custom")
    buf = next((k for k, kw in BUFFER_READINGS.items()
                if all(p[f] == v for f, v in kw.items())), "custom")
    return dram, buf


def _params(res: dict) -> Params:
    return Params(**res["params"])


def _models(res: dict) -> list[str]:
    """The paper's model order (that of the headline's rows; results.json sorts its keys)."""
    return list(dict.fromkeys(r["model"] for r in res["headline"]["rows"]))


def _cases(res: dict) -> list[str]:
    """Fig. 15's panels in the paper's order (kvnand_model.DSE_CASES)."""
    return [f"{m} {f}" for m, f in kvnand_model.DSE_CASES if f"{m} {f}" in res["dse"]]


def _labels(cells: dict) -> list[str]:
    """KVNAND-D splits by G1, then KVNAND-C."""
    return sorted(cells, key=lambda k: (k.startswith("C"), int(k[2:].split("+")[0].strip("(-"))))


# --- README sections ------------------------------------------------------------------------

def _headline(res: dict) -> list[str]:
    h, paper = res["headline"], res["paper"]
    band = paper["bands"]["geomean"]
    rows, dies = h["rows"], sum(h["rows"][0]["kvnand_d_split"])
    lines = [
        "## Speedup over Base-1 at different die counts (abstract, Fig. 12)", "",
        f"A different-die-count comparison: KVNAND has {dies} IFC dies, Base-1 "
        f"{res['params']['channels']} (and {res['params']['channels']} LPDDR5X dies), so this "
        "figure is mostly the die ratio and cannot fail on its own (the same-die figures: "
        "the section above). "
        f"Geomean over the models where Base-1 fits (`models`) of Base-1's decode latency over "
        f"ours, BF16, {dies} IFC dies. *paper*: the abstract's speedup of KVNAND over "
        "DRAM-equipped IFC; *best KVNAND*: the faster of KVNAND-C-"
        f"{dies} and the best KVNAND-D split (the figure gated against the paper, target band "
        f"±{100 * band:.0f} %); then the best D split alone and KVNAND-C-{dies} alone.", "",
        "| context | paper | ours: best KVNAND | ours vs paper | within ±"
        f"{100 * band:.0f} % | ours: best D split | ours: KVNAND-C-{dies} | models |",
        "|---|---:|---:|---:|---|---:|---:|---:|"]
    for c in _ctxs(h["geomean_vs_base1"]):
        g, pv = h["geomean_vs_base1"][c], paper["geomean_vs_base1"].get(c)
        lines.append(
            f"| {_ctx(c)} | {_x(pv)} | {_x(g['kvnand'])} | "
            f"{_rel(g['kvnand'], pv) if pv else '-'} | "
            f"{_yes(abs(g['kvnand'] / pv - 1) <= band) if pv else '-'} | {_x(g['kvnand_d'])} | "
            f"{_x(g['kvnand_c16'])} | {g['models']} |")
    lines += ["", f"KVNAND-C-{dies} over the best KVNAND-D split at 128 tokens, the same dies: "
              "the section above.", ""]
    d = h["d_over_base2_100k"]
    band2 = paper["bands"]["d_over_base2_100k"]
    at = {(r["model"], int(r["context"])): r for r in rows}
    lines += [
        "## KVNAND-D over Base-2 at 100K (Fig. 12)", "",
        "Base-2's decode latency over the best KVNAND-D split's, per model, BF16, 100K tokens. "
        f"*paper*: §V-B's figures; target band ±{100 * band2:.0f} % with the paper's ranking "
        "kept.", "",
        f"| model | paper | ours | ours vs paper | within ±{100 * band2:.0f} % | best split "
        "(G1+G2) | Base-2 ms | KVNAND-D ms |", "|---|---:|---:|---:|---|---|---:|---:|"]
    for m in _models(res):
        v, r, pv = d[m], at[m, 100_000], paper["d_over_base2_100k"][m]
        lines.append(f"| {m} | {_x(pv)} | {_x(v)} | {_rel(v, pv)} | "
                     f"{_yes(abs(v / pv - 1) <= band2)} | "
                     f"D-({r['kvnand_d_split'][0]}+{r['kvnand_d_split'][1]}) | "
                     f"{_ms(r['base2_ms'])} | {_ms(r['kvnand_d_ms'])} |")
    pp = paper["d_over_base2_100k"]
    lines += ["", f"Ranking, slowest gain first: paper {', '.join(sorted(pp, key=pp.get))}; "
              f"ours {', '.join(sorted(d, key=d.get))}; kept: {_yes(h['ranking_kept'])}.", ""]
    return lines


def _systems(res: dict) -> list[str]:
    h = res["headline"]
    dies = sum(h["rows"][0]["kvnand_d_split"])
    lines = ["## Every system, model and context (Fig. 12)", "",
             f"Decode latency of one token (ms; OOM: the weights or the KV cache do not fit), "
             f"BF16, {dies} IFC dies for KVNAND; the best D split is the fastest (G1+G2) that "
             "fits; *best* is the faster KVNAND; the speedups are the best KVNAND's over Base-1 "
             "and the best D split's over Base-2.", "",
             f"| model | context | Base-1 | Base-2 | KVNAND-C-{dies} | best D split | best | "
             "x Base-1 | D x Base-2 |", "|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in h["rows"]:
        split = r["kvnand_d_split"]
        sp1 = r["base1_ms"] / r["kvnand_ms"] if r["base1_ms"] and r["kvnand_ms"] else None
        sp2 = r["base2_ms"] / r["kvnand_d_ms"] if r["base2_ms"] and r["kvnand_d_ms"] else None
        lines.append(f"| {r['model']} | {_ctx(r['context'])} | {_ms(r['base1_ms'])} | "
                     f"{_ms(r['base2_ms'])} | {_ms(r['kvnand_c16_ms'])} | "
                     f"{_ms(r['kvnand_d_ms'])}{f' ({split[0]}+{split[1]})' if split else ''} | "
                     f"{r['kvnand_system'] or 'OOM'} | "
                     f"{_x(sp1)} | {_x(sp2)} |")
    lines += ["", "![decode throughput against context](fig12_throughput.png)", ""]
    return lines


def _ablations(res: dict) -> list[str]:
    a, paper = res["ablations"], res["paper"]
    hg, mp = a["hg_pipeline_latency_ratio"], a["mapping_read_time_ratio"]
    ctxs = _ctxs(next(iter(hg.values())))
    best = min(hg, key=lambda m: hg[m]["10000"]["serial"])
    lines = ["## Ablations (Fig. 14)", "",
             "**Head-group pipelining.** Latency of the best KVNAND-D split with head-group "
             "pipelining over the same split without it: *serial* keeps the per-head-group "
             "attention but starts it after the whole QKV GEMV (only the overlap removed); "
             "*batched* runs QKV, then one attention over all heads (no head groups). BF16. "
             f"Paper: at 10K, latency drops to as low as {_pct(paper['hg_ablation_10k'])}; ours "
             f"at 10K: {_pct(a['hg_min_at_10k']['serial'])} of serial ({best}), "
             f"{_pct(a['hg_min_at_10k']['batched'])} of batched at best.", "",
             "| model | " + " | ".join(f"{_ctx(c)} / serial | {_ctx(c)} / batched"
                                      for c in ctxs) + " |",
             "|---|" + "---:|---:|" * len(ctxs)]
    for m in _models(res):
        v = hg[m]
        lines.append(f"| {m} | " + " | ".join(f"{v[c]['serial']:.3f} | {v[c]['batched']:.3f}"
                                              for c in ctxs) + " |")
    dies = sum(res["headline"]["rows"][0]["kvnand_d_split"])
    lines += ["", "**Page-level KV mapping.** Attention flash-read time with page-level mapping "
              "over the same system with the naive mapping (K/V slices written in generation "
              f"order), KVNAND-C-{dies} and the best D split, BF16, every stream buffered. Paper: "
              f"{_pct(paper['mapping_ablation_opt30b_100k'])} for OPT-30B on KVNAND-C at 100K, "
              f"GQA models' gains 'diminished'; ours: "
              f"{_pct(mp['OPT-30B']['100000']['kvnand_c16'], 2)}.", "",
              "| model | " + " | ".join(f"C-{dies} {_ctx(c)}" for c in ctxs) + " | "
              + " | ".join(f"D {_ctx(c)}" for c in ctxs) + " |",
              "|---|" + "---:|" * (2 * len(ctxs))]
    for m in _models(res):
        v = mp[m]
        lines.append(f"| {m} | " + " | ".join(_pct(v[c]["kvnand_c16"], 2) for c in ctxs)
                     + " | " + " | ".join(_pct(v[c]["kvnand_d"], 2) for c in ctxs) + " |")
    return lines + [""]


def _dse(res: dict) -> list[str]:
    dse = res["dse"]
    cases = _cases(res)
    ctxs = _ctxs(dse[cases[0]])
    ck = dse["checks"]
    w4 = dse["LLaMA3.1-70B w4a16"]
    c_label = next(k for k in w4[ctxs[0]]["cells"] if k.startswith("C-"))
    dies = int(c_label[2:])
    beyond = str(PAPER_DSE["70b_w4a16_d_beats_c_beyond"])
    row = w4[beyond]["cells"]
    best_d = min((v, k) for k, v in row.items() if k.startswith("D") and v is not None)
    lines = [f"## Design space at {dies} dies (Fig. 15)", "",
             f"KVNAND-D-(G1+G2) with G1 = 1..{dies - 1} and KVNAND-C-{dies}, latency (ms) per "
             "context; blank and hatched: OOM; outlined in red: the best (fastest that fits) of "
             "each column.", "", "![Fig. 15 design space](fig15_dse.png)", "",
             "The best configuration per context (its latency, ms):", "",
             "| model, format | " + " | ".join(_ctx(c) for c in ctxs) + " |",
             "|---|" + "---|" * len(ctxs)]
    for case in cases:
        cells = [f"{dse[case][c]['best']} ({_ms(dse[case][c]['cells'][dse[case][c]['best']])})"
                 if dse[case][c]["best"] else "all OOM" for c in ctxs]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    w4_faster = ck["w4a16_faster_than_w8a8_70b"]
    lines += ["", "| the paper's statement (§V-B) | ours |", "|---|---|",
              f"| LLaMA3.1-70B W4A16: the optimum at 100K has 4 dies in G2 "
              f"({PAPER_DSE['70b_w4a16_best_100k']}) | {ck['70b_w4a16_best_100k']} |",
              f"| LLaMA3.1-70B W4A16: KVNAND-D outperforms KVNAND-C beyond {_ctx(beyond)} tokens "
              f"| on these columns, from {_ctx(ck['70b_w4a16_d_beats_c_from'][0])} on (at "
              f"{_ctx(beyond)}: "
              f"{c_label} {_ms(row[c_label])} ms, best D {best_d[1]} {_ms(best_d[0])} ms; "
              "scanned, D stays ahead from "
              f"{res['discriminating']['rows']['crossover']['ours']:,} tokens: first section) |",
              "| W4A16 is faster than W8A8 (LLaMA3.1-70B, best of each column) | "
              + ("at every context" if all(w4_faster.values()) else
                 "at " + ", ".join(_ctx(c) for c, v in w4_faster.items() if v)) + " |",
              "| MHA models run out of memory at long contexts (OPT-30B) | OPT-30B W4A16 at "
              f"100K: {'every cell OOM' if ck['opt30b_w4a16_100k_all_oom'] else 'some fit'} |",
              "", "The same grid for both KV-buffer readings runs through the project's sweep "
              "runner (`memwall.golden.kvnand.dse.run_dse`: local processes, or a Ray cluster)."
              "", ""]
    return lines


def _table_i(res: dict) -> list[str]:
    p = _params(res)
    gib = 2 ** 30
    two = replace(p, fmacs_per_plane=BALANCE["gemv_fmacs"])
    gemv2, gemv16 = two.t_mac("bf16", "gemv"), p.t_mac("bf16", "gemv")
    logit = p.t_mac("bf16", "logit", BALANCE["logit_heads"])
    attend = p.t_mac("bf16", "attend", BALANCE["logit_heads"])
    attend8 = p.t_mac("w8a8", "attend", BALANCE["logit_heads"])
    elements = p.page_bytes // 2
    us = 1e6
    lines = [
        "## Table I arithmetic", "",
        "The model's parameters (`results.json` `params`) and its page-time functions "
        "(`Params.t_mac`: the plane PE's cycles for a page, the RTL's count) against Table I "
        "and §IV-C.", "",
        "| quantity | paper | ours | how |", "|---|---:|---:|---|",
        f"| plane capacity | {TABLE_I['plane_gib']:g} Gib | {8 * p.plane_bytes / gib:.4f} Gib | "
        f"{p.page_bytes} B x {p.pages_per_block} pages x {p.blocks_per_plane} blocks |",
        f"| die capacity | {TABLE_I['die_gib']:g} Gib | {8 * p.die_bytes / gib:.2f} Gib | "
        f"{p.planes_per_die} planes |",
        f"| ECC decode of a page, t_ecc | - | {p.t_ecc * us:.2f} µs | "
        f"{p.sectors_per_page} x BCH({p.ecc_n}, {p.ecc_k}) codewords / "
        f"{p.ecc_rate / 1e9:g} Gb/s |",
        f"| BF16 GEMV page on {BALANCE['gemv_fmacs']} FMACs at {p.f_mac / 1e6:g} MHz | about "
        f"tR = {p.t_read * us:g} µs | {gemv2 * us:.2f} µs | {elements} MACs / "
        f"{BALANCE['gemv_fmacs']} + pipeline latency |",
        f"| Logit page, G = {BALANCE['logit_heads']}, on {p.fmacs_per_plane} FMACs | about "
        f"tR = {p.t_read * us:g} µs | {logit * us:.2f} µs | {elements} x "
        f"{BALANCE['logit_heads']} MACs / {p.fmacs_per_plane} + pipeline latency |",
        f"| Attend page, G = {BALANCE['logit_heads']}, on {p.fmacs_per_plane} FMACs | - | "
        f"{attend * us:.2f} µs (+ {p.t_emit('bf16', BALANCE['logit_heads'], 128) * us:.2f} µs "
        f"emit per head group's V stream) | {elements} x {BALANCE['logit_heads']} MACs / "
        f"{p.fmacs_per_plane} + pipeline latency, as Logit; the emit: G x d = "
        f"{BALANCE['logit_heads']} x 128 outputs |",
        f"| W8A8 Attend page, G = {BALANCE['logit_heads']} | - | {attend8 * us:.2f} µs | "
        f"{p.page_bytes} INT8 x {BALANCE['logit_heads']} MACs / {p.fmacs_per_plane}: "
        f"{'above' if attend8 > p.t_read else 'within'} tR, as the W8A8 Logit page "
        f"({p.t_mac('w8a8', 'logit', BALANCE['logit_heads']) * us:.2f} µs) |",
        f"| BF16 GEMV page on {p.fmacs_per_plane} FMACs (the configuration) | - | "
        f"{gemv16 * us:.2f} µs | so a weight page streams at max(tR, t_ecc, t_mac) = "
        f"{max(p.t_read, p.t_ecc, gemv16) * us:g} µs |", ""]
    return lines


def _inconsistencies(res: dict) -> list[str]:
    inc = res["inconsistencies"]
    dram, buf = _reading(res)
    dr = inc["dram_capacity"]
    names = [k for k in DRAM_READINGS if k in dr]
    lines = [
        "## The paper's inconsistencies, both readings", "",
        f"**Base-1's DRAM capacity** (`dram_capacity`). Table I gives \"{TABLE_I['dram']}\" "
        "with one "
        f"device on each of {res['params']['channels']} channels. §V-B's OOM statements (every "
        "model OOMs at 100K; the GQA models already at 50K) need less than "
        f"{dr['implied_upper_bound_gb']:.2f} GB, Fig. 12's 10K points and Fig. 16's 30K points "
        f"need at least {dr['implied_lower_bound_gb']:.2f} GB: no capacity satisfies both. "
        f"The headline runs on `{dram}`.", "",
        "| reading | capacity GB | all OOM at 100K | GQA OOM at 50K | all fit at 10K | Fig. 16's "
        "30K points fit | speedup at 10K (models) | Base-1 OOM |",
        "|---|---:|---|---|---|---|---|---|"]
    for k in names:
        v = dr[k]
        oom = ", ".join(f"{m} {_ctx(c)}" for m, c in v["base1_oom"])
        lines.append(f"| `{k}` | {v['capacity_gb']:.2f} | {_yes(v['all_oom_at_100k'])} | "
                     f"{_yes(v['gqa_oom_at_50k'])} | {_yes(v['all_fit_at_10k'])} | "
                     f"{_yes(v['fig16_30k_fits'])} | {_x(v['geomean_10k'])} "
                     f"({', '.join(v['geomean_10k_models'])}) | {oom} |")
    other = next(k for k in names if k != dram)
    lost = [m for m in dr[dram]["geomean_10k_models"] if m not in dr[other]["geomean_10k_models"]]
    lines += ["", f"Effect: under `{dram}` the 10K geomean covers "
              f"{len(dr[dram]['geomean_10k_models'])} models and the OOM statements do not all "
              f"hold; under `{other}` they hold, but Base-1 then has no 10K point for "
              f"{', '.join(lost)} (Fig. 12 plots them) and the 10K geomean becomes "
              f"{_x(dr[other]['geomean_10k'])}.",
              ""]
    kb = inc["kv_buffer"]
    dies = sum(res["headline"]["rows"][0]["kvnand_d_split"])
    p = _params(res)
    ctxs = [c for c in ("128", "1000", "10000") if c in kb[buf]["geomean_vs_base1"]]
    models = _models(res)
    lim = next(k for k in kb if k != buf)
    over = {m: 2 * res["models"][m]["layers"] * res["models"][m]["kv_heads"] for m in models}
    over = {m: n for m, n in over.items() if n > kb[lim]["d_open_streams"]}
    lines += [
        "**KV buffer** (`c_open_streams`, `d_open_streams`). Under the page-level mapping a "
        "KVNAND-C plane receives one K (or V) stream per layer, each needing an open "
        f"{p.page_bytes // 1024} KiB page until it fills, but Table I gives each plane "
        f"{p.c_kv_buffer // 1024} KiB of KV buffer; KVNAND-D's {p.d_kv_buffer / 2 ** 20:g} MiB SoC "
        f"buffer holds {kb[lim]['d_open_streams']} pages, fewer than D's 2 x layers x KV heads "
        "streams for " + ", ".join(f"{m} ({n:,})" for m, n in over.items()) + ". "
        "`paper_sufficient`: every stream is buffered, as the paper assumes. `buffer_limited`: "
        "only as many streams as the buffers hold pages; the others are flushed every token "
        f"with a partial-page program of one {p.sector_bytes // 1024} KiB ECC sector. The "
        f"headline runs on `{buf}`.", "",
        "| reading | open streams C / D | " + " | ".join(
            f"best KVNAND x Base-1 {_ctx(c)}" for c in ctxs)
        + f" | C-{dies} x Base-1 {_ctx(ctxs[-1])} | D x Base-2 100K: "
        + ", ".join(models) + f" | C-{dies} ms 100K |",
        "|---|---|" + "---:|" * len(ctxs) + "---:|---|---|"]
    for k in (k for k in BUFFER_READINGS if k in kb):
        v = kb[k]
        streams = " / ".join("all" if v[f] is None else str(v[f])
                             for f in ("c_open_streams", "d_open_streams"))
        lines.append(
            f"| `{k}` | {streams} | "
            + " | ".join(_x(v["geomean_vs_base1"][c]["kvnand"]) for c in ctxs)
            + f" | {_x(v['geomean_vs_base1'][ctxs[-1]]['kvnand_c16'])} | "
            + ", ".join(f"{v['d_over_base2_100k'][m]:.2f}" for m in models) + " | "
            + ", ".join(_ms(v["c16_ms_100k"][m]) for m in models) + " |")
    lines += ["", f"Effect: with the buffers as Table I sizes them (`{lim}`), KVNAND-C loses its "
              f"long-context advantage (C-{dies} alone at {_ctx(ctxs[-1])}: "
              f"{_x(kb[lim]['geomean_vs_base1'][ctxs[-1]]['kvnand_c16'])} of Base-1's speed "
              f"against {_x(kb[buf]['geomean_vs_base1'][ctxs[-1]]['kvnand_c16'])}), the best "
              "KVNAND is a D split at "
              + ", ".join(_ctx(c) for c in ctxs if kb[lim]["geomean_vs_base1"][c]["kvnand"]
                          == kb[lim]["geomean_vs_base1"][c]["kvnand_d"])
              + " for every model, and the abstract's geomeans at "
              + ", ".join(_ctx(c) for c in ctxs if abs(
                  kb[lim]["geomean_vs_base1"][c]["kvnand"] / res["paper"]["geomean_vs_base1"][c]
                  - 1) > res["paper"]["bands"]["geomean"])
              + f" fall outside the ±{100 * res['paper']['bands']['geomean']:.0f} % band; the "
              f"paper's figures need the `{buf}` reading.", ""]
    return lines


def _calibrated(res: dict) -> list[str]:
    cal = res["calibrated"]
    moe, paper = cal["moe_layout"], res["paper"]
    used = res["params"]["moe_layout"]
    ctxs = _ctxs(moe[used]["vs_base1"])
    lines = ["## Calibrated choices, both ways", "",
             "**MoE expert layout** (`moe_layout`, Mixtral-8x7B, BF16). *striped*: every "
             "expert's rows over all planes; *expert_planes*: each plane holds one expert's "
             f"shard. Used: `{used}`.", "",
             f"| layout | D x Base-2 100K (paper {_x(paper['d_over_base2_100k']['Mixtral-8x7B'])}"
             ") | " + " | ".join(f"best KVNAND x Base-1 {_ctx(c)}" for c in ctxs) + " |",
             "|---|---:|" + "---:|" * len(ctxs)]
    for k, v in moe.items():
        lines.append(f"| `{k}` | {_x(v['d_over_base2_100k'])} | "
                     + " | ".join(_x(v["vs_base1"][c]) for c in ctxs) + " |")
    lines += ["", "**Energy scope** (`energy_scope`) is not calibrated: its default, "
              "`paper_access`, is the paper's reading; the Energy section gives the others.",
              ""]
    return lines


def _why(res: dict) -> list[str]:
    h, paper, models = res["headline"], res["paper"], res["models"]
    p = _params(res)
    rows = {(r["model"], int(r["context"])): r for r in h["rows"]}
    dies = sum(h["rows"][0]["kvnand_d_split"])
    planes = dies * p.planes_per_die

    def ph(m: str) -> int:
        return planes // (models[m]["heads"] + 2 * models[m]["kv_heads"])

    g = h["geomean_vs_base1"]
    first = ["128", "1000", "10000"]
    c_best = sum(rows[m, int(c)]["kvnand_system"].startswith("KVNAND-C")
                 for m in models for c in first)
    n_points = len(models) * len(first)
    l8 = "LLaMA3.1-8B"
    sp = {k: r["base1_ms"] / r["kvnand_ms"] for k, r in rows.items()
          if r["base1_ms"] and r["kvnand_ms"]}
    sp128 = [sp[m, 128] for m in models]
    order = _models(res)
    mha = [m for m in order if models[m]["heads"] == models[m]["kv_heads"]]
    gqa = [m for m in order if m not in mha]

    def k_planes(m: str) -> int:
        return 2 * models[m]["kv_heads"] * ph(m)
    l70 = models["LLaMA3.1-70B"]
    d_implied = paper["geomean_vs_base1"]["128"] / paper["c_over_d_128"]
    d = h["d_over_base2_100k"]
    worst = min(d, key=lambda m: d[m] / paper["d_over_base2_100k"][m])
    r100 = rows[l8, 100_000]
    implied_ms = r100["base2_ms"] / paper["d_over_base2_100k"][l8]
    a = res["ablations"]
    mp = a["mapping_read_time_ratio"]
    sl70 = math.ceil(l70["head_dim"] / ph("LLaMA3.1-70B")) * res["formats"]["bf16"]["kv"]
    e, ep = res["energy"], paper["energy_ratio"]
    other = res["energy_readings"]["readings"]["logic_paper_power"]
    ours = res["energy_readings"]["readings"]["logic_synthesised"]
    dse = res["dse"]
    w4 = dse["LLaMA3.1-70B w4a16"]
    beyond = str(PAPER_DSE["70b_w4a16_d_beats_c_beyond"])
    c_label = next(k for k in w4[beyond]["cells"] if k.startswith("C-"))
    best_d, best_d_label = min((v, k) for k, v in w4[beyond]["cells"].items()
                               if k.startswith("D") and v)
    moe = res["calibrated"]["moe_layout"]
    mix = paper["d_over_base2_100k"]["Mixtral-8x7B"]
    attend8 = p.t_mac("w8a8", "attend", BALANCE["logit_heads"])
    dram, buf = _reading(res)
    return [
        "## Why ours differ", "",
        f"- **Speedup over Base-1, {'/'.join(_ctx(c) for c in first)}** "
        f"({', '.join(_rel(g[c]['kvnand'], paper['geomean_vs_base1'][c]) for c in first)}; "
        f"inside the band). The best KVNAND is KVNAND-C-{dies} at "
        + (f"every one of the {n_points}" if c_best == n_points else f"{c_best} of the "
           f"{n_points}") + " model-context points. Its gain is having "
        f"{dies} dies' planes for the weight GEMVs where Base-1 has {p.channels}, so at 128 "
        f"every model sits near {dies / p.channels:g}x ({_x(min(sp128))}-{_x(max(sp128))}). "
        "At 10K the MHA models rise above it ("
        + ", ".join(f"{m} {_x(sp[m, 10_000])}" for m in mha) + "): head parallelism gives "
        f"their K and V 2 x KV heads x P_h planes ({mha[0]}: P_h = {ph(mha[0])}, "
        f"{k_planes(mha[0])} of {planes} planes), which read the KV cache faster than "
        "Base-1's DRAM channels. The GQA models fall ("
        + ", ".join(f"{m} {_x(sp[m, 128])} -> {_x(sp[m, 10_000])}" for m in gqa) + "): their "
        f"K and V sit on far fewer planes ({gqa[0]}: {k_planes(gqa[0])} of {planes}), whose "
        "attention gains little over Base-1's DRAM stream, so as attention's share grows the "
        "speedup moves from the weights' die ratio toward the attention's. The paper's "
        f"{_x(paper['geomean_vs_base1']['10000'])} at 10K needs the GQA models to keep their "
        "gain; it does not say how KVNAND-C's K/V planes are laid out beyond head parallelism.",
        f"- **KVNAND-C over KVNAND-D at 128** (paper {_x(paper['c_over_d_128'])}, ours "
        f"{_x(h['c_over_d_128'])}), D alone over Base-1 ({_x(g['128']['kvnand_d'])}; the "
        f"paper implies {_x(d_implied)}), head-group pipelining, the Fig. 15 crossover and "
        "LLaMA3.1-8B's tokens/s: the first section, each gap's cause measured by a run "
        "without it.",
        f"- **KVNAND-D over Base-2 at 100K** (inside ±"
        f"{100 * paper['bands']['d_over_base2_100k']:.0f} % for every model; furthest: {worst} "
        f"{_rel(d[worst], paper['d_over_base2_100k'][worst])}), and **LLaMA3.1-8B's "
        f"tokens/s** (ours {h['llama31_8b_100k_tokens_per_s']:.2f}, paper "
        f"~{paper['llama31_8b_100k_tokens_per_s']:g}). Our Base-2 agrees with the paper's: with "
        f"our Base-2 ({_ms(r100['base2_ms'])} ms) the paper's "
        f"{_x(paper['d_over_base2_100k'][l8])} implies a KVNAND-D token of "
        f"{implied_ms:.1f} ms, i.e. {1e3 / implied_ms:.1f} tokens/s, the paper's own figure. "
        f"The gap is in our D ({_ms(r100['kvnand_d_ms'])} ms on D-"
        f"({r100['kvnand_d_split'][0]}+{r100['kvnand_d_split'][1]})): its G1 has "
        f"{r100['kvnand_d_split'][0]} dies, as many as Base-2's IFC dies, so the weight GEMVs "
        "gain nothing; G2's chained head groups and then the KV read floor account for the "
        "rest (first section).",
        f"- **Head-group pipelining at 10K** (paper {_pct(paper['hg_ablation_10k'])}, ours "
        f"{_pct(a['hg_min_at_10k']['serial'])} of serial, "
        f"{_pct(a['hg_min_at_10k']['batched'])} of batched): the overlap hides at most the "
        "shorter of QKV generation and attention (first section for the rest).",
        f"- **Page-level mapping at 100K** (OPT-30B: paper "
        f"{_pct(paper['mapping_ablation_opt30b_100k'])}, ours "
        f"{_pct(mp['OPT-30B']['100000']['kvnand_c16'], 2)}). The naive mapping's cost is how "
        "many pages a stream's slices touch when all layers' slices are written in generation "
        f"order; ours counts them exactly. {l8} ({_pct(mp[l8]['100000']['kvnand_c16'], 2)}) "
        "shows the paper's 'diminished' GQA gain, but LLaMA3.1-70B "
        f"({_pct(mp['LLaMA3.1-70B']['100000']['kvnand_c16'], 2)}) does not: its "
        f"{l70['layers']} layers of {sl70}-B slices (P_h = {ph('LLaMA3.1-70B')} planes per "
        f"head on C-{dies}) fill about a page per token in generation order, so the naive "
        "mapping reads a page per token and the page-level one a page per "
        f"{p.page_bytes // sl70} tokens.",
        f"- **Energy** (LLaMA2-7B 10K {e['LLaMA2-7B']['10000']['ratio']:.3f} vs "
        f"{ep['LLaMA2-7B']['10000']:.2f}; LLaMA3.1-70B 100K "
        f"{e['LLaMA3.1-70B']['100000']['ratio']:.3f} vs {ep['LLaMA3.1-70B']['100000']:.2f}). "
        "The paper's Fig. 16 ratios are those of access energy: counting the logic die's "
        "power as well raises ours to "
        f"{other['ratio']['LLaMA2-7B']['10000']:.3f} and "
        f"{other['ratio']['LLaMA3.1-70B']['100000']:.3f} at the paper's plane power"
        + (f", {ours['ratio']['LLaMA2-7B']['10000']:.3f} and "
           f"{ours['ratio']['LLaMA3.1-70B']['100000']:.3f} at our synthesised plane's"
           if ours else "") + " (the Energy section). Per-bit energies are Table I's; the "
        "paper's read energy per page (data only or with spare) is not given (ours: data + "
        "spare).",
        f"- **Fig. 15, LLaMA3.1-70B W4A16**: at {_ctx(beyond)} our {c_label} is "
        f"{_pct(best_d / w4[beyond]['cells'][c_label] - 1)} faster than the best D split. "
        f"{c_label}'s weight GEMVs use all {c_label[2:]} dies, the best D split's ("
        f"{best_d_label}) {best_d_label[3:].split('+')[0]}; with {l70['kv_heads']} KV heads the "
        f"KV cache at {_ctx(beyond)} is still small beside the weights, so D's attention gain "
        "does not yet pay for the weight dies it gives up and its per-head-group costs (the "
        "scanned crossover and a run without those costs: first section).",
        f"- **Attend pages** are costed as the RTL runs them (`Params.t_mac`, checked against "
        "the RTL in every mode by tests/kvnand/test_sim_kvnand_model_cost.py): G x a GEMV "
        "page's MACs, and the head group's sums emitted once per V stream on a plane. A W8A8 "
        f"Attend page of a GQA head group takes {attend8 * 1e6:.2f} µs on "
        f"{p.fmacs_per_plane} FMACs, {'above' if attend8 > p.t_read else 'within'} tR "
        f"({p.t_read * 1e6:g} µs): §IV-C balances the BF16 Logit page only, so W8A8 GQA "
        f"attention is {'compute' if attend8 > p.t_read else 'read'}-bound here "
        f"(LLaMA3.1-70B W8A8's best at 50K: {dse['LLaMA3.1-70B w8a8']['50000']['best']}).",
        f"- **Mixtral-8x7B** (calibrated `moe_layout`): with every expert striped over all "
        f"planes its D speedup over Base-2 at 100K is {_x(moe['striped']['d_over_base2_100k'])}"
        f", above LLaMA3.1-70B's, against the paper's {_x(mix)} and its ranking; one expert "
        f"per plane gives {_x(moe['expert_planes']['d_over_base2_100k'])}. The paper says only "
        "that experts are sharded over the dies (TP).",
        f"- **Readings**: the headline uses `{dram}` for the DRAM and `{buf}` for the KV "
        "buffer, the readings the paper's Fig. 12 needs (Base-1 at 10K for every model, "
        "KVNAND-C's long-context points); the other readings' effects are in the tables above.",
        "- **Cost** matches: the paper rounds $/GB to cents before multiplying "
        f"(${res['cost']['flash_per_gb_exact']:.4f} -> ${res['cost']['flash_per_gb']:.2f}); its "
        f"LPDDR5 price is implied (${res['cost']['dram_per_gb_implied']:.2f}/GB).", ""]


def readme(res: dict) -> str:
    dram, buf = _reading(res)
    h = res["headline"]
    dies = sum(h["rows"][0]["kvnand_d_split"])
    lines = [
        "# KVNAND: the design-space model against the paper", "",
        "Generated by `python -m memwall.families.kvnand.report` (also `make bench`) from "
        "`memwall.golden.kvnand.model.evaluate()`; every number here is formatted from "
        "`results.json`. The model (`golden/kvnand/model.py`, `golden/kvnand/systems.py`) "
        "gives the latency and energy of one single-batch decode token: flash page pipeline "
        "(tR, ECC, the plane PE's MACs), ONFI transfers, NPU work and capacity (OOM). Systems: "
        f"Base-1 ({res['params']['channels']} IFC dies holding the weights plus LPDDR5X for "
        "the KV cache, attention on the NPU), Base-2 (plain NAND instead of the DRAM), "
        "KVNAND-D-(G1+G2) (G1 IFC dies for the weights, G2 for the KV cache and its attention) "
        f"and KVNAND-C-x (weights and KV cache on the same x dies); KVNAND has {dies} dies in "
        f"Fig. 12 and 16. Contexts are decimal (1K = 1,000). Runs on the `{dram}` DRAM and "
        f"`{buf}` KV-buffer readings (both readings of each: below).", ""]
    lines += report_figures.discriminating_section(res) + _headline(res) + _systems(res)
    lines += report_figures.energy_section(res) + _ablations(res) + _dse(res)
    lines += _table_i(res) + report_figures.cost_section(res) + _inconsistencies(res)
    lines += _calibrated(res) + report_figures.motivation_section(res) + _why(res)
    lines += ["The plane logic's area, timing and power through the flow (PE, KV buffer, BCH "
              "encoder): `synthesis.md` (`python -m memwall.families.kvnand.synthesis`).", ""]
    return "\n".join(lines)


# --- entry points ---------------------------------------------------------------------------

def build_report(folder: Path = DEFAULT_OUT, *, figures: bool = True) -> dict:
    res = results()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(dumps_json(res, indent=1) + "\n")
    stored = load_results(folder)      # the README is written from the file, as checked
    (folder / "README.md").write_text(readme(stored))
    if figures:
        from memwall.families.kvnand.plots import plots

        plots(stored, folder)
    return res


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG plots")
    args = parser.parse_args(argv)
    build_report(Path(args.out), figures=not args.no_figures)
    print(f"memwall: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
