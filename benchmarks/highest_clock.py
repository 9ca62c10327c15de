"""The highest clock a config meets: its design synthesised and timed again at faster clocks.

A row of ``memwall report`` times the design at the config's clock, and its fmax,
``1 / (period - WNS)``, is first order: the netlist was mapped for that clock. This search puts
a copy of the config (its own name, its own build folder, ``build/highest_clock/``) through the
whole flow at a faster clock, with the same sign-off conditions (setup margin, hold, wire load,
flat timing where it fits; no activity run: timing and area only):

1. the first clock tried is the report row's fmax (TT, with the margin), rounded down to
   ``--grain`` MHz;
2. if timing is not met there (hierarchical or flat WNS < 0), the next is that run's own fmax
   rounded down, and at least ``--grain`` lower; at most ``--tries`` clocks.

"Highest clock met" is the fastest clock tried that met: a lower bound on the true one, which
a finer search could raise by less than the grain. Writes
``reports/<family>/highest_clock.{md,json}``; every number in them is from this run::

    .venv/bin/python benchmarks/highest_clock.py --config rdxe_paper rdxe_paper_fused
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import yaml

from memwall import paths
from memwall.config import load_config
from memwall.files import write_json_atomic, write_text_atomic
from memwall.flows.flow import BUILD_ROOT, metrics_path, run_flow
from memwall.flows.report import fmax_mhz, markdown_table, timing_met

REPO = paths.REPO
ROOT = BUILD_ROOT / "highest_clock"


def config_at(base: str, pdk: str, mhz: int, folder: Path) -> Path:
    """A copy of config ``base`` whose clock on ``pdk`` is ``mhz`` (its own name)."""
    raw = yaml.safe_load((REPO / "configs" / f"{base}.yaml").read_text())
    clocks = raw.get("pdk_clock_mhz") or {}
    if pdk in clocks:
        clocks[pdk] = mhz
    else:
        raw["clock_mhz"] = mhz
    path = folder / f"{base}_{mhz}mhz.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _row(metrics: dict, flow_s: float) -> dict:
    return {"clock_mhz": metrics["clock_mhz"], "wns_ns": metrics["wns_ns"],
            "flat_wns_ns": metrics.get("flat_wns_ns"), "met": timing_met(metrics),
            "fmax_mhz": fmax_mhz(metrics), "area_um2": metrics["area_um2"],
            "flow_s": round(flow_s, 1)}


def search(base: str, pdk: str, grain: int, tries: int) -> dict:
    """The tried clocks of ``base`` on ``pdk``, from its report row (``build/``)."""
    start_path = metrics_path(base, pdk, BUILD_ROOT)
    if not start_path.exists():
        raise SystemExit(f"highest_clock: no report row for {base} on {pdk} ({start_path}); "
                         f"run `memwall report --run --only {load_config(base).unit_name}` first")
    start = json.loads(start_path.read_text())
    result = {"config": base, "pdk": pdk,
              "report_row": _row(start, start.get("flow_runtime_s", 0.0)),
              "tried": []}
    mhz = math.floor(fmax_mhz(start) / grain) * grain
    for _ in range(tries):
        path = config_at(base, pdk, mhz, ROOT / "configs")
        began = time.perf_counter()
        metrics = run_flow(str(path), pdk, jobs=2, activity=False, build_root=ROOT,
                           flat_sta=None)     # flat where it fits, as the report's rows
        row = _row(metrics, time.perf_counter() - began)
        result["tried"].append(row)
        print(f"highest_clock: {base}/{pdk} at {mhz} MHz: WNS {row['wns_ns']:.3f} ns, flat "
              f"{row['flat_wns_ns']}, {'met' if row['met'] else 'not met'}", flush=True)
        if row["met"]:
            break
        mhz = min(mhz - grain, math.floor(row["fmax_mhz"] / grain) * grain)
        if mhz <= start["clock_mhz"]:
            break
    met = [r["clock_mhz"] for r in result["tried"] if r["met"]]
    result["highest_met_mhz"] = max(met) if met else (
        start["clock_mhz"] if result["report_row"]["met"] else None)
    return result


def _ns(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def write(results: list[dict], family: str, grain: int, elapsed: float) -> Path:
    out = REPO / "reports" / family
    write_json_atomic(out / "highest_clock.json", {"grain_mhz": grain, "configs": results})
    rows = []
    for r in results:
        for label, row in [("report row", r["report_row"])] + [("search", t)
                                                                for t in r["tried"]]:
            rows.append([r["config"], r["pdk"], label, f"{row['clock_mhz']:g}",
                         _ns(row["wns_ns"]), _ns(row["flat_wns_ns"]),
                         "yes" if row["met"] else "no", f"{row['fmax_mhz']:.0f}",
                         f"{row['area_um2']:,.0f}"])
    summary = [[r["config"], r["pdk"], f"{r['report_row']['clock_mhz']:g}",
                "—" if r["highest_met_mhz"] is None else f"{r['highest_met_mhz']:g}"]
               for r in results]
    text = "\n".join([
        f"# {family}: the highest clock each config meets",
        "",
        "Generated by `.venv/bin/python benchmarks/highest_clock.py --config "
        f"{' '.join(r['config'] for r in results)}` ({elapsed / 60:.0f} min on this machine); "
        "every number is in `highest_clock.json`. Each clock is a copy of the config put "
        "through the whole flow again at that clock (synthesis maps for it), under the report's "
        "sign-off conditions: TT, the setup margin and hold check, the wire-load model, flat "
        "timing where it fits. Timing and area only (no activity run). \"Met\" is hierarchical "
        "and flat WNS >= 0. The first clock tried is the report row's fmax rounded down to "
        f"{grain} MHz; after a miss, that run's fmax rounded down, at least {grain} MHz lower. "
        "The highest clock met is the fastest tried that met: a lower bound, within one grain.",
        "",
        markdown_table(["config", "pdk", "config clock MHz", "highest clock met MHz"], summary),
        "",
        markdown_table(["config", "pdk", "run", "clock MHz", "WNS ns", "flat WNS ns", "met",
                        "fmax MHz", "area µm²"], rows),
        ""])
    write_text_atomic(out / "highest_clock.md", text)
    return out / "highest_clock.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", nargs="+", required=True, help="configs of one family")
    parser.add_argument("--pdk", default="asap7")
    parser.add_argument("--grain", type=int, default=10, help="MHz (default 10)")
    parser.add_argument("--tries", type=int, default=3, help="clocks per config (default 3)")
    args = parser.parse_args(argv)
    families = {load_config(c).unit_name for c in args.config}
    if len(families) != 1:
        parser.error(f"--config: one family's configs, got {sorted(families)}")
    if args.grain < 1 or args.tries < 1:
        parser.error("--grain and --tries must be >= 1")
    began = time.perf_counter()
    results = [search(c, args.pdk, args.grain, args.tries) for c in args.config]
    print(f"wrote {write(results, families.pop(), args.grain, time.perf_counter() - began)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
