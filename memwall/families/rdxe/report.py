"""Regenerate ``reports/rdxe/`` (``python -m memwall.families.rdxe.report``; also ``make bench``).

Every figure of the cycle and serving models comes from
:func:`memwall.golden.rdxe.model.evaluate` on ``rdxe_paper``, the accuracy figures from
:func:`memwall.golden.rdxe.accuracy.study`; both are written to ``results.json``, and
``README.md`` is built from what that file holds alone. The fused VRC and the iWuR layout are
the RTL's commands (the cycle model equals the RTL's cycles command for command on the
regression session); each baseline is shown as the paper's reading (a MODEL with cited or
derived constants, :mod:`memwall.golden.rdxe.baselines`) and as our RTL's own mode. Every row
says what is divided by what; "within 10 %" is the only agreement claimed (:data:`TOLERANCE`),
and every verdict is computed from the figures (:mod:`memwall.families.rdxe.paper`).
Deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memwall import paths
from memwall.config import load_config
from memwall.families.rdxe.paper import (
    PAPER,
    TOLERANCE,
    WITHIN,
    against_max,
    against_range,
    against_value,
    near,
    pct,
    span,
)
from memwall.families.rdxe.report_sections import (
    constants,
    details,
    iwur_readings,
    paper_derivation,
    qk_bound,
    rows,
    split,
    tokens,
    why,
)
from memwall.files import dumps_json, write_text_atomic
from memwall.golden.rdxe import model as rdxe_model
from memwall.golden.rdxe.accuracy import MEASURE

__all__ = ["build_report", "readme", "results", "load_results", "PAPER", "CONFIG", "TOLERANCE"]

ROOT = paths.REPO
DEFAULT_OUT = ROOT / "reports" / "rdxe"
CONFIG = "rdxe_paper"

def results() -> dict:
    from memwall.golden.rdxe.accuracy import study

    return {**rdxe_model.evaluate(load_config(CONFIG)), "accuracy": study()}


# --- accuracy ----------------------------------------------------------------------------------

def _accuracy_leaves(accuracy):
    """``(path, fused, sequential)`` for every case of the study: ``[op][workload][scale]``,
    each holding a ``fused`` and a ``sequential`` summary."""
    for op, workloads in accuracy.items():
        for workload, scales in workloads.items():
            for scale, modes in scales.items():
                yield (op, workload, scale), modes["fused"], modes["sequential"]


def _accuracy_summary(accuracy) -> list[str]:
    leaves = list(_accuracy_leaves(accuracy))
    return ["| accuracy: outputs within 1 INT8 LSB of float64, fused (sequential) | share of a "
            "case's outputs within 1 LSB of float64 on the float inputs (the error as section "
            f"Accuracy defines it); range over {len(leaves)} cases (workload x scale "
            "granularity) | a slight loss from quantisation (no figure) | "
            f"{pct([f['within_1lsb'] for _, f, _ in leaves])} "
            f"({pct([s['within_1lsb'] for _, _, s in leaves])}) | same | no paper figure "
            "to compare |"]


def _accuracy_section(accuracy) -> list[str]:
    lines = ["## Accuracy", "",
             "Each case of `golden/rdxe/accuracy.py`'s study (`python -m "
             "memwall.golden.rdxe.accuracy`): outputs within 1 INT8 LSB of float64, and the "
             f"worst error, in LSB; error = {MEASURE}. The scale granularity is the "
             "quantisation contract's (`golden/rdxe/quantise.py`): per row or per tensor for "
             "the weights, per KV head or per tensor for k and v.", "",
             "| case | outputs | fused within 1 LSB | sequential within 1 LSB | fused worst | "
             "sequential worst |", "|---|---|---|---|---|---|"]
    for path, f, s in _accuracy_leaves(accuracy):
        lines.append(f"| {' / '.join(path)} | {f['elements']:,} | "
                     f"{100 * f['within_1lsb']:.1f} % | {100 * s['within_1lsb']:.1f} % | "
                     f"{f['max_lsb']:.2f} LSB | {s['max_lsb']:.2f} LSB |")
    return lines


# --- the README --------------------------------------------------------------------------------

def _gain_cells(ring: dict, batches) -> tuple[str, str, str]:
    """Paper's and our gains over padded batching, signed, and the verdicts."""
    paper = " / ".join(f"{100 * PAPER[f'ring_gain_{b}']:+.1f} %" for b in batches)
    ours = " / ".join(f"{100 * ring[f'gain_{b}']:+.1f} %" for b in batches)
    verdict = ", ".join(f"{b}-way " + against_value([ring[f"gain_{b}"]], PAPER[f"ring_gain_{b}"])
                        for b in batches)
    return paper, ours, verdict


def side_by_side(res: dict) -> list[str]:
    """The side-by-side table: every figure against the paper's, with its verdicts."""
    c, ring, vrc, g6 = res["constants"], res["ring"], res["vrc"], res["gqa"][-1]
    opt = rows(res, "vrc", "OPT-350M")
    f, exposed = c["implied_nonlinear_share"], c["exposed_nonlinear_share"]
    nl_max, layer_max = PAPER["nonlinear_speedup_max"], PAPER["layer_speedup_max"]
    iw = iwur_readings(res)
    qk = [r["qk"] for r in rows(res, "mac_efficiency", "OPT-350M")]
    shares = [r["nonlinear_share"] for r in opt]
    shares_rtl = [r["nonlinear_share_rtl"] for r in opt]
    top = max(opt, key=lambda r: r["nonlinear_share"])
    by_tokens = ", ".join(f"{100 * r['nonlinear_share']:.1f} % at {r['tokens']}" for r in opt)
    context = tokens(res)
    batches = c["batches"]
    gain_paper, gain_ours, gain_verdict = _gain_cells(ring, batches)
    gqa_verdict = ("= 1 - 1/g by construction (the measurement tests single storage)"
                   if abs(g6["reduction"] - g6["formula"]) < 1e-12 else
                   f"differs from 1 - 1/g = {100 * g6['formula']:.1f} %: a KV head stored more "
                   "than once")
    rtl_range = span(iw["rtl"])
    return [
        "| figure | definition (ours) | paper | ours, paper's baseline | ours, our RTL's "
        "baseline | verdict (paper's baseline; our RTL's) |",
        "|---|---|---|---|---|---|",
        "| VRC: non-linear share of the unfused OPT-350M layer | non-linear cycles / unfused "
        f"layer cycles, one token, {context} of context | up to {100 * f:.1f} % (derived: "
        f"{paper_derivation(c)}; ASSUMPTION: both 'up to' figures from one workload) | "
        f"{by_tokens} tokens | {pct(shares_rtl)} | {against_max(shares, f)} "
        f"({100 * top['nonlinear_share']:.1f} % at {top['tokens']} tokens); "
        f"{against_max(shares_rtl, f)} |",
        f"| VRC: one OPT-350M layer, unfused / fused | layer cycles, one token, {context} "
        f"| up to {layer_max}x | {span([r['layer_speedup'] for r in opt])} "
        f"| {span([r['layer_speedup_rtl'] for r in opt])} | "
        f"{against_max([r['layer_speedup'] for r in opt], layer_max)}; "
        f"{against_max([r['layer_speedup_rtl'] for r in opt], layer_max)} |",
        "| VRC: non-linear cycles, unfused / fused | non-linear cycles (the layer less the same "
        f"layer with static factors), OPT-350M and MT5-small, {context} | up to "
        f"{nl_max}x | {span([r['nonlinear_speedup'] for r in vrc])} | "
        f"{span([r['nonlinear_speedup_rtl'] for r in vrc])} | "
        f"{against_max([r['nonlinear_speedup'] for r in vrc], nl_max)}; "
        f"{against_max([r['nonlinear_speedup_rtl'] for r in vrc], nl_max)} |",
        "| VRC: non-linear share left in the fused OPT-350M layer | fused non-linear cycles / "
        f"fused layer cycles | {100 * exposed:.1f} % (derived: f / {nl_max} over 1 - f + f / "
        f"{nl_max}, the same ASSUMPTION) | {pct([r['fused_nonlinear_share'] for r in opt])} | "
        "same (the fused path is the RTL's) | "
        f"{against_value([r['fused_nonlinear_share'] for r in opt], exposed)} |",
        f"| iWuR: one MT5-small layer, baseline / iWuR; baseline '{iw['plus']}' (packed: reads "
        f"at {iw['eff']:.2f}, iWuR's byte writes) | layer cycles including the new token's K/V "
        f"write-back, one token, {context} | {iw['lo']}-{iw['hi']}x | {span(iw['packed'])} | "
        f"{rtl_range} | {against_range(iw['packed'], iw['lo'], iw['hi'])}; "
        f"{against_range(iw['rtl'], iw['lo'], iw['hi'])} |",
        "| iWuR: the same, baseline word per VAC (word writes, reads at "
        f"{iw['word_eff']:.2f}) | the same | {iw['lo']}-{iw['hi']}x | {span(iw['word'])} | "
        f"{rtl_range} (as above) | {against_range(iw['word'], iw['lo'], iw['hi'])} |",
        "| iWuR: baseline read efficiency | useful bytes per KV read, over iWuR's (1) | "
        f"{iw['eff']:.2f} (derived from '{iw['plus']} utilisation': u x {iw['gain']} = 1) | "
        f"{iw['eff']:.2f} (packed); {iw['word_eff']:.2f} (word per VAC: {iw['share']:g} "
        f"useful bytes of {res['lanes']}); {iw['needed']} (packed) would give the paper's "
        f"{iw['lo']}-{iw['hi']}x | 1/{res['lanes']} (one byte a read) | {iw['verdict']} |",
        f"| GQA: KV capacity at {g6['heads_per_kv_head']} query heads per KV head | 1 - bytes "
        "the K/V write-back fills with GQA / with MHA, counted on the KV images "
        f"(`layout.kv_footprint`), {g6['model']} ({g6['kv_heads'] * g6['heads_per_kv_head']} "
        f"heads), {g6['tokens']} tokens | -{100 * PAPER['gqa_reduction_6']:.0f} % | "
        f"-{100 * g6['reduction']:.1f} % | -{100 * g6['baseline']['bytes_reduction']:.1f} % "
        f"(baseline V layout) | {gqa_verdict}; "
        f"{against_value([g6['reduction']], PAPER['gqa_reduction_6'])} |",
        "| ring: MAC utilisation | useful MACs (every layer once) / (DXEs x peak MACs a cycle "
        f"x cycles), {split(ring)}, {ring['requests']} seeded requests at offered load "
        f"{ring['offered_load']} | {100 * PAPER['ring_utilisation']:.1f} % ('utilization', not "
        f"defined) | {100 * ring['utilisation']:.1f} % | same (no baseline) | "
        f"{against_value([ring['utilisation']], PAPER['ring_utilisation'])} |",
        "| ring: DXE occupancy | busy DXE-cycles / (DXEs x cycles), the same run | (none) | "
        f"{100 * ring['dxe_occupancy']:.1f} % | same | not a utilisation of the MACs (layer "
        f"balance of the split: {100 * ring['layer_balance']:.1f} %) |",
        f"| ring over {' / '.join(f'{b}-way' for b in batches)} padded batching | ring MAC "
        "utilisation / padded batching's MAC utilisation - 1, the same requests and arrivals | "
        f"{gain_paper} | {gain_ours} | same | {gain_verdict} |",
        "| QK MAC utilisation | QK's useful MACs / (peak MACs a cycle x QK's cycles), "
        f"OPT-350M, {context} | (none) | {pct(qk)} | same | bound: "
        f"{100 * qk_bound(res, 'OPT-350M')[1]:.0f} % (see below) |",
        *_accuracy_summary(res["accuracy"]),
    ]


def readme(res: dict) -> str:
    lo, hi = PAPER["peak_tops"]
    ours = res["peak_tops"]
    peak = (f"ours matches its low end ({WITHIN})" if near(ours, lo) else
            f"ours {'above' if ours > lo else 'below'} its low end")
    lines = [
        "# rDXE: cycle model against the paper",
        "",
        "Generated by `python -m memwall.families.rdxe.report` (`make bench`); every number is "
        "in `results.json`. The cycle, layer, GQA and serving figures are "
        f"`memwall model rdxe --config {CONFIG}`; the accuracy figures are "
        "`python -m memwall.golden.rdxe.accuracy` (`golden/rdxe/accuracy.py`'s study). The "
        "fused VRC and iWuR are the sequencer's cycles, exactly (the regression session checks "
        "them command by command against the RTL), composed into one decoder layer on one DXE "
        f"({res['peak_tops']:.4f} TOPS peak at {res['clock_mhz']:g} MHz; the paper's table, "
        f"Fig. 6: {lo}-{hi} TOPS at the fastest voltage and frequency, {peak}). Each baseline "
        "is shown as the **paper's reading**, a model the RTL does not build "
        "(`golden/rdxe/baselines.py`, constants below), and as **our RTL's** own mode. "
        f"Agreement is claimed only {WITHIN} (relative); every verdict is computed from the "
        "figures.",
        "",
        "## Side by side",
        "",
        *side_by_side(res),
        "",
        *details(res),
        "",
        *constants(res),
        "",
        *_accuracy_section(res["accuracy"]),
        "",
        *why(res),
        "",
        "![layer speed-ups against context](speedups.png)",
        "",
        "![serving: the ring against padded batching](serving.png)",
        "",
        "Area, timing and power of the configs, and the VRC's area and power fused against "
        "sequential: `synthesis.md` (`python -m memwall.families.rdxe.report --synthesis`).",
        "",
    ]
    return "\n".join(lines)


def build_report(folder: Path = DEFAULT_OUT, *, figures: bool = True) -> dict:
    """Writes ``results.json``, ``README.md`` and (with ``figures``) the plots
    (:mod:`memwall.families.rdxe.plots`). The README is rendered first, from the JSON text as
    written (what the docs test reads back), so a failure writes neither file; each is then
    replaced atomically."""
    res = results()
    text = dumps_json(res) + "\n"
    page = readme(json.loads(text))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / "results.json", text)
    write_text_atomic(folder / "README.md", page)
    if figures:
        from memwall.families.rdxe.plots import plots

        plots(json.loads(text), folder)
    return res


def load_results(folder: Path = DEFAULT_OUT) -> dict:
    return json.loads((Path(folder) / "results.json").read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--synthesis", action="store_true",
                        help="write only synthesis.md and .json, from the configs' asap7 "
                             "metrics (memwall synth <config> --pdk asap7)")
    parser.add_argument("--build-root", type=Path, default=ROOT / "build",
                        help="with --synthesis: the build folder holding the metrics (default: "
                             "the checkout's build/)")
    args = parser.parse_args(argv)
    if args.synthesis:
        from memwall.families.rdxe.synthesis import collect, render
        from memwall.flows.report import write_synthesis_report

        path = write_synthesis_report(Path(args.out), lambda: collect(args.build_root), render)
        print(f"memwall: wrote {path} and synthesis.json", file=sys.stderr)
        return 0
    build_report(Path(args.out))
    print(f"memwall: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
