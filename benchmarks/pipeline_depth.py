"""The d-PLENA pipeline-depth trade-off: fmax, area and cycles against ``fp_stages``.

For every depth ``0 .. max_fp_stages()`` the config (default ``dplena32``) is put through the
project's own flow at that depth (``memwall synth``: hierarchical Yosys, OpenSTA with
boundaries from each module's context, no activity run: timing and area only), and the cycle
model gives the Table II step on the paper's VLENs at that depth. Writes
``reports/dplena/pipeline_depth.{md,json,png}``; every number in them is from this run::

    .venv/bin/python benchmarks/pipeline_depth.py            # make depth
    .venv/bin/python benchmarks/pipeline_depth.py --config dplena64 --pdk asap7

fmax is ``1 / (period - WNS)`` at the config's clock on that PDK (first order: the netlists
are synthesised for that clock). Cycles per bound is the cycle model's step over the HBM
bound (``memwall.golden.dplena.model``), so the plot shows what each stage of latency costs
the sampling step beside what it buys in clock.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
from pathlib import Path

import yaml

from memwall import paths
from memwall.config import load_config
from memwall.families.dplena.config import max_fp_stages
from memwall.families.dplena.report import PAPER_MS, TABLE_II, _run
from memwall.files import write_json_atomic, write_text_atomic
from memwall.flows.flow import BUILD_ROOT, run_flow
from memwall.flows.report import fmax_mhz, markdown_table

REPO = paths.REPO
OUT = REPO / "reports" / "dplena"


def _config_file(base: str, depth: int, folder: Path) -> Path:
    """A copy of config ``base`` at ``fp_stages = depth`` (its own name: its own build)."""
    raw = yaml.safe_load((REPO / "configs" / f"{base}.yaml").read_text())
    raw["fp_stages"] = depth
    path = folder / f"{base}_fp{depth}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def measure(base: str, pdk: str, depths: list[int]) -> list[dict]:
    rows = []
    # A build root of its own: `memwall report` reads build/*/synth/*/metrics.json, and these
    # depth variants are not rows of the report's matrix.
    root = BUILD_ROOT / "pipeline_depth"
    for depth in depths:
        path = _config_file(base, depth, root / "configs")
        start = time.perf_counter()
        metrics = run_flow(str(path), pdk, jobs=1, activity=False, build_root=root)
        row = {"depth": depth, "config": metrics["config"], "pdk": pdk,
               "clock_mhz": metrics["clock_mhz"], "wns_ns": metrics["wns_ns"],
               "fmax_mhz": fmax_mhz(metrics), "area_um2": metrics["area_um2"],
               "flow_s": round(time.perf_counter() - start, 1), "cycles_per_bound": {}}
        for vlen in PAPER_MS:
            cfg = dataclasses.replace(load_config(f"dplena{vlen}"), fp_stages=depth)
            w = TABLE_II
            result = _run(cfg, w["B"], w["L"], w["V"], w["T"])
            row["cycles_per_bound"][vlen] = result["ratio_to_bound"]
        rows.append(row)
        print(f"pipeline_depth: {base} fp_stages={depth}: WNS {row['wns_ns']:.3f} ns, fmax "
              f"{row['fmax_mhz']:.0f} MHz, {row['area_um2']:.0f} um2", flush=True)
    return rows


def _plot(rows: list[dict], path: Path, base: str, pdk: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depths = [r["depth"] for r in rows]
    fig, (ax1, ax3) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(depths, [r["fmax_mhz"] for r in rows], "o-", label="fmax")
    ax1.axhline(rows[0]["clock_mhz"], color="k", ls=":", label="target clock")
    ax1.set_xlabel("fp_stages")
    ax1.set_ylabel("fmax (MHz)")
    ax2 = ax1.twinx()
    ax2.plot(depths, [r["area_um2"] / 1e6 for r in rows], "s--", color="tab:red", label="area")
    ax2.set_ylabel("area (mm$^2$)")
    ax1.set_title(f"{base} on {pdk}: fmax and area")
    lines = ax1.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax1.legend(lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7)
    for vlen in PAPER_MS:
        ax3.plot(depths, [r["cycles_per_bound"][vlen] for r in rows], "o-",
                 label=f"VLEN {vlen}")
    ax3.set_xlabel("fp_stages")
    ax3.set_ylabel("cycles / HBM bound")
    ax3.set_title("Table II step (cycle model)")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(rows: list[dict], base: str, pdk: str, elapsed: float) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    _plot(rows, OUT / "pipeline_depth.png", base, pdk)
    table = markdown_table(
        ["fp_stages", "clock MHz", "WNS ns", "fmax MHz", "area µm²",
         *(f"cycles/bound VLEN {v}" for v in PAPER_MS)],
        [[r["depth"], f"{r['clock_mhz']:g}", f"{r['wns_ns']:.3f}", f"{r['fmax_mhz']:.0f}",
          f"{r['area_um2']:.0f}", *(f"{r['cycles_per_bound'][v]:.3f}" for v in PAPER_MS)]
         for r in rows])
    met = [r["depth"] for r in rows if r["wns_ns"] >= 0]
    default = load_config(base).fp_stages
    verdict = ("the shallowest of them" if met and default == min(met) else
               "not the shallowest depth that meets it (update the default)")
    text = ("# d-PLENA pipeline depth: fmax and area against `fp_stages`\n\n"
            f"Generated by `.venv/bin/python benchmarks/pipeline_depth.py --config {base} "
            f"--pdk {pdk}` (`make depth`; {platform.python_version()}, "
            f"{elapsed / 60:.0f} min). Every number below is from that run; "
            "`pipeline_depth.json` has them all.\n\n"
            "Area and WNS: the project's flow (hierarchical Yosys, OpenSTA with each module's "
            "boundaries from its context, no activity run) on the config at each depth. fmax: "
            "1 / (period − WNS). Cycles per bound: the cycle model's Table II step "
            f"(B={TABLE_II['B']}, L={TABLE_II['L']}, V={TABLE_II['V']}) on the paper's VLENs "
            "at that depth, over the HBM bound.\n\n" + table +
            f"\nDepths that meet the clock: {', '.join(map(str, met)) or 'none'}. The configs' "
            f"default, `fp_stages` {default}, is {verdict}.\n\n"
            "![pipeline depth](pipeline_depth.png)\n")
    write_text_atomic(OUT / "pipeline_depth.md", text)
    write_json_atomic(OUT / "pipeline_depth.json", {"config": base, "pdk": pdk, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="dplena32")
    parser.add_argument("--pdk", default="asap7")
    parser.add_argument("--depths", help="comma-separated (default: all)")
    args = parser.parse_args(argv)
    depths = ([int(d) for d in args.depths.split(",")] if args.depths
              else list(range(max_fp_stages() + 1)))
    start = time.perf_counter()
    rows = measure(args.config, args.pdk, depths)
    write(rows, args.config, args.pdk, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
