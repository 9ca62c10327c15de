"""Regenerate ``reports/dplena/``: sampling-step cycles against the paper's Table II and the
bound, and the paper's Fig. 5 sweeps (``python -m memwall.families.dplena.report``, part of
``make bench``).

Every figure comes from the cycle model (:mod:`memwall.golden.dplena.model`), which runs the
program the RTL runs and equals the RTL's cycle count on the regression workloads
(``tests/dplena/test_sim_core.py``).
Writes ``cycles.json`` (every number), ``README.md`` (the tables) and ``fig5_sweeps.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path

from memwall import paths
from memwall.config import load_config
from memwall.files import write_json_atomic
from memwall.golden.dplena.model import default_v_chunk, estimate
from memwall.golden.dplena.program import Workload

__all__ = ["table_ii", "formats", "fig5", "main"]

ROOT = paths.REPO
DEFAULT_OUT = ROOT / "reports" / "dplena"
#: Table II workload: T=1, B=16, L=32, V=126464 (LLaDA's vocabulary), paper latency in ms.
TABLE_II = {"B": 16, "L": 32, "V": 126464, "T": 1}
PAPER_MS = {512: 3.41, 1024: 1.79, 2048: 0.99}
#: The logits formats of the per-format table, one per element width (E5M2 and E2M3 stream as
#: their width's other format does).
FORMATS_COMPARED = ("mxfp8_e4m3", "mxfp6_e3m2", "mxfp4_e2m1")
#: Issue 41's goal for the MXFP4 Table II step: within 1.1x its port bound.
GOAL_RATIO = 1.1
#: Fig. 5: L = 64; (a) B and (b) T in {2..32} at V = 2k, V_chunk = 128; (c) V 2k..128k at
#: B = 2, T = 1, V_chunk = 128; (d) V_chunk 128..30k at V = 128k, B = 2, T = 1.
FIG5_L = 64
FIG5_VLEN = 64
SWEEP_BT = (2, 4, 8, 16, 32)
SWEEP_V = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
SWEEP_VCHUNK = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 30720)


def _run(cfg, batch, block_len, vocab, steps, v_chunk=None) -> dict:
    v_chunk = v_chunk or default_v_chunk(cfg, vocab)
    wl = Workload(batch, block_len, vocab, v_chunk, (min(block_len, cfg.k_max),) * batch,
                  logits_format=cfg.logits_format)
    result = estimate(cfg, wl, steps).as_dict()
    result["latency_ms"] = result["cycles"] / (cfg.clock_mhz * 1e3)
    # What crosses the port (beats, padding and the second read of two_pass included).
    result["hbm_gb_s"] = result["streamed_bytes"] / result["cycles"] * cfg.clock_mhz / 1e3
    return result


def table_ii() -> list[dict]:
    """Table II workload on every d-PLENA VLEN: paper, two_pass (paper SRAM and fused SRAM),
    fused, and fused with a 256 B/cycle port at VLEN 2048."""
    w = TABLE_II
    rows = []
    for vlen, paper_ms in PAPER_MS.items():
        fused = load_config(f"dplena{vlen}")
        variants = {
            "two_pass (paper SRAM)": load_config(f"dplena{vlen}_paper"),
            "two_pass (fused SRAM)": dataclasses.replace(fused, stable_max="two_pass"),
            "fused": fused,
        }
        if vlen == 2048:
            variants["fused, 256 B/cycle"] = load_config("dplena2048_hbm256")
        for label, cfg in variants.items():
            r = _run(cfg, w["B"], w["L"], w["V"], w["T"])
            rows.append({"vlen": vlen, "variant": label, "config": cfg.name,
                         "paper_ms": paper_ms, "vector_sram_kib": cfg.vector_sram_kib,
                         "hbm_bytes_per_cycle": cfg.hbm_bytes_per_cycle, **r})
    return rows


def formats() -> list[dict]:
    """The fused Table II step at each VLEN with the dequantiser built for each element width
    (``FORMATS_COMPARED``), the config otherwise unchanged."""
    w = TABLE_II
    rows = []
    for vlen in PAPER_MS:
        for fmt in FORMATS_COMPARED:
            cfg = dataclasses.replace(load_config(f"dplena{vlen}"), logits_format=fmt)
            r = _run(cfg, w["B"], w["L"], w["V"], w["T"])
            rows.append({"vlen": vlen, "logits_format": fmt, "config": cfg.name,
                         "bank_lanes": cfg.bank_lanes, **r})
    return rows


def _fig5_config(mode: str, v_chunk: int, batch: int):
    """A VLEN-64, L-64 core with just enough Vector SRAM for ``v_chunk`` (the paper's edge
    setting) and INT SRAM for the batch."""
    base = dataclasses.replace(load_config("dplena64"), block_len=FIG5_L, k_max=FIG5_L,
                               fp_sram_words=FIG5_L, hbm_bytes_per_cycle=FIG5_VLEN,
                               stable_max=mode, imem_words=1024)
    rows_needed = 2 * (-(-v_chunk // FIG5_VLEN) + 3)
    kib = 1
    while kib * 1024 // (2 * FIG5_VLEN) < max(rows_needed, 8):
        kib *= 2
    ints = 2
    while ints < 2 * batch * FIG5_L + batch:
        ints *= 2
    return dataclasses.replace(base, vector_sram_kib=kib, int_sram_words=ints)


def _reduction_fill() -> int:
    """Cycles a V_RED_MAX of the Fig. 5 core takes beyond one a row (cycle model's table)."""
    cfg = _fig5_config("two_pass", 128, 2)
    return 3 + cfg.stages.tree_latency(int(math.log2(cfg.vlen)))


def fig5() -> dict:
    out = {}
    for mode in ("two_pass", "fused"):
        sweeps = {}
        sweeps["B"] = [{"x": b, **_run(_fig5_config(mode, 128, b), b, FIG5_L, 2048, 1, 128)}
                       for b in SWEEP_BT]
        sweeps["T"] = [{"x": t, **_run(_fig5_config(mode, 128, 2), 2, FIG5_L, 2048, t, 128)}
                       for t in SWEEP_BT]
        sweeps["V"] = [{"x": v, **_run(_fig5_config(mode, 128, 2), 2, FIG5_L, v, 1, 128)}
                       for v in SWEEP_V]
        sweeps["V_chunk"] = [{"x": c, **_run(_fig5_config(mode, c, 2), 2, FIG5_L, 131072, 1,
                                              c)} for c in SWEEP_VCHUNK]
        out[mode] = sweeps
    return out


def _plot(fig5_data: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"B": "(a) batch B (V=2k, V_chunk=128)", "T": "(b) steps T (V=2k, V_chunk=128)",
              "V": "(c) vocabulary V (B=2, V_chunk=128)", "V_chunk": "(d) V_chunk (V=128k, B=2)"}
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5), sharex="col")
    for col, key in enumerate(titles):
        for mode, style in (("two_pass", "o-"), ("fused", "s--")):
            pts = fig5_data[mode][key]
            xs = [p["x"] for p in pts]
            axes[0, col].plot(xs, [p["latency_ms"] for p in pts], style, label=mode)
            axes[1, col].plot(xs, [p["hbm_gb_s"] for p in pts], style, label=mode)
        axes[0, col].set_title(titles[key], fontsize=9)
        axes[1, col].set_xlabel(key)
        for row in range(2):
            axes[row, col].set_xscale("log", base=2)
            axes[row, col].grid(alpha=0.3)
        axes[0, col].set_yscale("log")
    axes[0, 0].set_ylabel("latency (ms at 1 GHz)")
    axes[1, 0].set_ylabel("HBM bandwidth used (GB/s)")
    axes[0, 0].legend()
    fig.suptitle(f"d-PLENA sampling, VLEN={FIG5_VLEN}, L={FIG5_L}, 64 B/cycle port "
                 "(cycle model of the generated program)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _formats_section(rows: list[dict]) -> list[str]:
    lines = [
        "## Table II step by logits format (fused)",
        "",
        "The same step with the dequantiser generated for 8-, 6- and 4-bit MX elements "
        "(`logits_format`; 6.25 and 4.25 bits a logit against 8.25, so the port bound falls in "
        "proportion). A 4- or 6-bit core writes twice the port's bytes in lanes a cycle (the "
        "Vector SRAM bank is that wide). The goal is the MXFP4 step within "
        f"{GOAL_RATIO}x its bound; these are cycles only: the 4- and 6-bit cores are not in "
        "the sign-off matrix yet, so no row here says 1 GHz is met.",
        "",
        "| VLEN | logits | lanes a write | V_chunk | cycles | bound | cycles / bound | vector "
        f"cycles | MXFP4 cycles within {GOAL_RATIO}x the bound |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        goal = ""
        if r["logits_format"] == "mxfp4_e2m1":
            goal = ("met" if r["ratio_to_bound"] <= GOAL_RATIO else
                    f"missed: {r['ratio_to_bound'] / GOAL_RATIO:.2f}x the goal")
        lines.append(
            f"| {r['vlen']} | {r['logits_format']} | {r['bank_lanes']} | {r['v_chunk']} | "
            f"{r['cycles']:,} | {r['bound_cycles']:,.0f} | {r['ratio_to_bound']:.3f} | "
            f"{r['breakdown']['vector']:,} | {goal} |")
    compute_bound = sorted({r["vlen"] for r in rows if r["logits_format"] == "mxfp4_e2m1"
                            and r["ratio_to_bound"] > GOAL_RATIO})
    lines += [""]
    if compute_bound:
        lines.append(
            f"Where the goal is missed (VLEN {', '.join(map(str, compute_bound))}), the vector "
            "cycles alone exceed the 4-bit port time: four VLEN-wide passes over every chunk "
            "(max, subtract, exp, sum), each with its pipeline fill, over chunks that a 64 KiB "
            "Vector SRAM keeps small. Fewer bytes a logit only pays where the step was "
            "port-bound already.")
        lines.append("")
    return lines


def _readme(rows: list[dict], fig5_data: dict, elapsed: float,
            format_rows: list[dict]) -> str:
    w = TABLE_II
    fused_ratios = [r["ratio_to_bound"] for r in rows if r["variant"] == "fused"]
    (wide,) = [r for r in rows if r["variant"] == "fused, 256 B/cycle"]
    depth = {load_config(f"dplena{r['vlen']}").fp_stages for r in rows}
    depth = depth.pop() if len(depth) == 1 else "/".join(map(str, sorted(depth)))
    lines = [
        "# d-PLENA sampling step: cycles",
        "",
        "Regenerate with `python -m memwall.families.dplena.report` (or `make bench`). "
        "Numbers are from "
        "the cycle model (`memwall model dplena`), which runs the same program image as the "
        "RTL and matches the RTL's cycle count on every regression workload "
        "(`tests/dplena/test_sim_core.py`). 1 GHz clock.",
        "",
        f"## Table II workload (T={w['T']}, B={w['B']}, L={w['L']}, V={w['V']}, MXFP8 logits)",
        "",
        "Bound = max(HBM bytes / port width, elements / VLEN): the port time of the logits "
        "(1 byte per element + 1 scale byte per 32) or one vector pass.",
        "",
        "| VLEN | variant | Vector SRAM | port | V_chunk | cycles | ms | paper ms | bound | "
        "cycles / bound | speed-up vs paper |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['vlen']} | {r['variant']} | {r['vector_sram_kib']} KiB | "
            f"{r['hbm_bytes_per_cycle']} B | {r['v_chunk']} | {r['cycles']:,} | "
            f"{r['latency_ms']:.3f} | {r['paper_ms']} | {r['bound_cycles']:,.0f} | "
            f"{r['ratio_to_bound']:.3f} | {r['paper_ms'] / r['latency_ms']:.2f}x |")
    lines += [
        "",
        "Cycle breakdown (the Table III categories: vector instructions; memory = prefetch issue "
        "and waiting for the port, output stores; scalar; control = loop and address "
        "arithmetic):",
        "",
        "| VLEN | variant | vector | memory | scalar | control |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        b = r["breakdown"]
        tot = r["cycles"]
        lines.append(f"| {r['vlen']} | {r['variant']} | " + " | ".join(
            f"{b[k]:,} ({100 * b[k] / tot:.1f} %)" for k in ("vector", "memory", "scalar",
                                                               "control")) + " |")
    lines += [
        "",
        "Reading the table:",
        "",
        "- The paper's 3.41 / 1.79 / 0.99 ms fall roughly as 1/VLEN, so its vector work "
        "dominates until VLEN 2048, where it meets the logits' port time (66.8 MB of MXFP8 at "
        "67.7 GB/s = 0.99 ms). Here the prefetch of chunk j+1 overlaps the compute on chunk j, "
        "so every variant whose buffers hold a whole row, or that reads each logit once, runs "
        "at the port's speed at all three VLENs (our 64 B/cycle port is 5 % slower than the "
        "paper's 67.7 GB/s, hence 0.95x at VLEN 2048).",
        "- `two_pass (paper SRAM)` keeps the paper's structure (max pass, then exp/sum pass) "
        "with two whole rows of logits buffered (512-1024 KiB). With the fused configs' "
        "64-512 KiB the rows no longer fit, each chunk is fetched twice and the step takes "
        "about 2x the bound: `two_pass (fused SRAM)`.",
        "- `fused` (online softmax) reads each logit once from buffers of a few chunks: "
        f"{min(fused_ratios):.2f}-{max(fused_ratios):.2f}x the bound with the paper-class "
        "64 B/cycle port, and with a 256 B/cycle port at VLEN 2048 "
        f"{wide['cycles'] / 1e6:.2f} M cycles ({wide['ratio_to_bound']:.2f}x). What is above the "
        "bound is mostly the reductions' pipeline fill: at the configs' default depth "
        f"(`fp_stages` {depth}, the shallowest at which dplena32 meets 1 GHz on ASAP7) makes each "
        "reduction-tree level an FP32 add of that many stages plus a register; "
        "`reports/dplena/pipeline_depth.md` gives the cycles at every depth.",
        "",
        *_formats_section(format_rows),
        f"## Fig. 5 sweeps (VLEN {FIG5_VLEN}, L {FIG5_L})",
        "",
        "![Fig. 5 sweeps](fig5_sweeps.png)",
        "",
        "At VLEN 64 the vector unit, not the 64 B/cycle port, is the limit: both modes make "
        "four VLEN-wide passes over every chunk (max, subtract, exp, sum), so at most 16 "
        "logits a cycle. Latency grows linearly with B, T and V at constant bandwidth (a-c), as "
        "in the paper. With V_chunk = 128 (two rows) every instruction's pipeline fill (a "
        f"V_RED_MAX is n + {_reduction_fill()} cycles for n rows) and the per-chunk scalar "
        "work dominate; (d) shows "
        "the bandwidth rising with V_chunk and saturating above about 4-8k logits, which is the "
        "paper's observation. fused pays a few more scalar instructions per chunk (the rescale), "
        "so it trails two_pass at small chunks; two_pass streams every logit twice here (the "
        "bandwidth counts both reads).",
        "",
        f"Generated in {elapsed:.1f} s.",
        "",
    ]
    return "\n".join(lines)


def build_report(out: Path = DEFAULT_OUT) -> dict:
    start = time.perf_counter()
    rows = table_ii()
    format_rows = formats()
    sweeps = fig5()
    elapsed = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    data = {"table_ii": rows, "formats": format_rows, "fig5": sweeps,
            "model_seconds": round(elapsed, 2)}
    write_json_atomic(out / "cycles.json", data)
    _plot(sweeps, out / "fig5_sweeps.png")
    (out / "README.md").write_text(_readme(rows, sweeps, elapsed, format_rows))
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwall.families.dplena.report",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args(argv)
    data = build_report(args.out)
    for r in data["table_ii"]:
        print(f"VLEN {r['vlen']:5d} {r['variant']:24s} {r['cycles']:>10,} cycles "
              f"({r['ratio_to_bound']:.3f}x bound, paper {r['paper_ms']} ms)")
    print(f"memwall: wrote {args.out}/README.md, cycles.json, fig5_sweeps.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
