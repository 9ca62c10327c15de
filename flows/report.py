"""``memwall report``: area/power tables and plots from every ``metrics.json`` in the build.

Writes ``reports/area_power.md`` and ``reports/area_power.csv``: every config x PDK with its
area, timing, power and activity source, and the flow's cost. Each family adds its own section
and plots through ``Family.report_sections`` (d-PLENA: the paper's Table IV side by side,
scaling with VLEN).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from memwall import paths

from .flow import BUILD_ROOT

__all__ = ["collect", "write_report", "unit_group", "group_areas", "group_powers",
           "linear_fit", "markdown_table", "timing_met", "fmax_mhz", "achieved_mhz",
           "subtree_figures", "write_synthesis_report", "synth_metrics"]

REPORTS = paths.REPORTS


def unit_group(module: str, unit: str) -> str:
    """The report group (``vector``, ``scalar``, ...) of a module of a ``unit`` design."""
    from memwall.family import family

    return family(unit).report_group(module) or "other"


def collect(build_root: Path = BUILD_ROOT) -> list[dict]:
    """Every metrics.json under ``build_root/<config>/synth/<pdk>/``, by family, PDK and size."""
    rows = [json.loads(p.read_text()) for p in build_root.glob("*/synth/*/metrics.json")]
    return sorted(rows, key=lambda r: (r["unit"], r["pdk"], r["area_um2"], r["config"]))


def timing_met(row: dict) -> bool:
    """WNS >= 0 at the config's clock: the only rows a paper's area and power may stand by."""
    return row["wns_ns"] is not None and row["wns_ns"] >= 0


def fmax_mhz(row: dict) -> float | None:
    """The clock at which the worst slack is zero: ``1 / (period - WNS)``, to first order
    (path delays, and the boundary budgets derived from them, as synthesised for the
    config's clock). None without a timed path."""
    if row["wns_ns"] is None:
        return None
    return 1000.0 / (1000.0 / row["clock_mhz"] - row["wns_ns"])


def achieved_mhz(row: dict) -> float | None:
    """The clock a row's design runs at: its own clock where timing is met, else fmax."""
    fmax = fmax_mhz(row)
    return None if fmax is None else min(row["clock_mhz"], fmax)


def linear_fit(x, y) -> tuple[float, float, float]:
    """Least-squares ``y = a x + b``; returns (a, b, R^2)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    a, b = np.polyfit(x, y, 1)
    residual = y - (a * x + b)
    total = ((y - y.mean()) ** 2).sum()
    return float(a), float(b), float(1 - (residual ** 2).sum() / total) if total else 1.0


def group_powers(row: dict) -> dict[str, float]:
    """Logic power (mW) per report group, from a metrics row's ``power_by_unit`` (each direct
    child of the top with its subtree, as ``area_by_unit``; memory macros are in
    ``power_mw["memories"]``)."""
    powers: dict[str, float] = {}
    for module, entry in row.get("power_by_unit", {}).items():
        group = unit_group(module, row["unit"])
        powers[group] = powers.get(group, 0.0) + entry["power_mw"]
    return powers


def group_areas(row: dict) -> dict[str, float]:
    """Area (um^2) per report group (:attr:`memwall.family.Family.report_groups`) of a metrics
    row's ``area_by_unit``."""
    areas: dict[str, float] = {}
    for module, entry in row.get("area_by_unit", {}).items():
        group = unit_group(module, row["unit"])
        areas[group] = areas.get(group, 0.0) + entry["area_um2"]
    return areas


def subtree_figures(row: dict, hierarchy: dict[str, dict[str, int]]) -> dict[str, dict]:
    """Per instance of each module of a metrics row, with everything below it (``hierarchy``:
    the generated design's manifest): ``area_um2`` (memory macros included), ``logic_mw`` and
    ``memories_mw`` (the macros' power) at the row's clock under its power workload."""
    from .synth import subtree_areas

    modules = set(row["area_by_module"]) | set(hierarchy)
    area = {m: row["area_by_module"].get(m, {}).get("own_um2", 0.0) for m in modules}
    logic = {m: row.get("power_by_module", {}).get(m, {}).get("per_instance_mw", {})
             .get("total", 0.0) for m in modules}
    memories = dict.fromkeys(modules, 0.0)
    for macro in row.get("macros", []):
        memories[macro["module"]] += macro.get("power", {}).get("power_mw", 0.0)
    sums = {name: subtree_areas(hierarchy, own)
            for name, own in (("area_um2", area), ("logic_mw", logic),
                              ("memories_mw", memories))}
    return {m: {name: sums[name][m] for name in sums} for m in modules}


def synth_metrics(build_root: Path, config: str, pdk: str) -> tuple[dict, dict] | None:
    """``(metrics, manifest)`` of ``memwall synth <config> --pdk <pdk>`` under
    ``build_root``, or None where it has not run."""
    path = Path(build_root) / config / "synth" / pdk / "metrics.json"
    if not path.is_file():
        return None
    manifest = json.loads((Path(build_root) / config / "manifest.json").read_text())
    return json.loads(path.read_text()), manifest


def write_synthesis_report(out: Path, collect, render) -> Path:
    """A family's ``synthesis.json`` (``collect()``: figures from the configs' metrics) and
    ``synthesis.md`` (``render`` of them, which a test re-renders from the json) in ``out``."""
    from memwall.files import dumps_json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = collect()
    (out / "synthesis.json").write_text(dumps_json(data, indent=1) + "\n")
    (out / "synthesis.md").write_text(render(data))
    return out / "synthesis.md"


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _ns(value: float | None) -> str:
    return "no timed path" if value is None else f"{value:.3f}"


def _mhz(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _mw(value: float | None) -> str:
    return "not modelled" if value is None else f"{value:.4g}"


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    fields = ["config", "unit", "pdk", "vlen", "clock_mhz", "fmax_mhz", "area_um2", "cells",
              "wns_ns", "tns_ns", "internal_mw", "switching_mw", "leakage_mw", "memories_mw",
              "total_mw", "activity_source", "command"]
    writer = csv.DictWriter(out, fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({"config": r["config"], "unit": r["unit"], "pdk": r["pdk"],
                         "vlen": r["parameters"].get("vlen", ""), "clock_mhz": r["clock_mhz"],
                         "fmax_mhz": None if fmax_mhz(r) is None else round(fmax_mhz(r), 1),
                         "memories_mw": r["power_mw"].get("memories"),
                         "area_um2": round(r["area_um2"], 3), "cells": r["cells"],
                         "wns_ns": r["wns_ns"], "tns_ns": r["tns_ns"],
                         **{f"{k}_mw": round(r["power_mw"][k], 6)
                            for k in ("internal", "switching", "leakage", "total")},
                         "activity_source": r["activity_source"], "command": r["command"]})
    return out.getvalue()


def write_report(build_root: Path = BUILD_ROOT, out: Path = REPORTS,
                 units: list[str] | None = None) -> Path:
    """Write the tables (and the families' sections and plots) for every metrics row under
    ``build_root``, or only those of ``units``."""
    rows = [r for r in collect(build_root) if not units or r["unit"] in units]
    if not rows:
        raise FileNotFoundError(f"no metrics.json under {build_root}/*/synth/*/: run "
                                f"`make synth CONFIG=<name> PDK=<pdk>` first")
    out.mkdir(parents=True, exist_ok=True)
    (out / "area_power.csv").write_text(_csv(rows))
    plots: list[str] = []

    sources = sorted({r["activity_source"] for r in rows})
    md = ["# Area, timing and power\n",
          "Generated by `make report` from `build/*/synth/*/metrics.json`; each row was produced "
          "by the command in its last column. Switching activity ('activity' column):\n",
          "".join(f"- {s}\n" for s in sources)]
    md.append("The clock is the config's clock on that PDK; fmax is the clock at which the "
              "worst slack would be zero, 1 / (period − WNS), to first order. Power is at the "
              "config's clock.\n\n")
    md.append(markdown_table(
        ["config", "pdk", "clock MHz", "fmax MHz", "area mm²", "cells", "WNS ns", "TNS ns",
         "internal mW", "switching mW", "leakage mW", "memories mW", "total mW", "activity",
         "command"],
        [[r["config"], r["pdk"], f"{r['clock_mhz']:g}", _mhz(fmax_mhz(r)),
          f"{r['area_um2'] / 1e6:.4f}", r["cells"], _ns(r["wns_ns"]), f"{r['tns_ns']:.3f}",
          *(f"{r['power_mw'][k]:.4g}" for k in ("internal", "switching", "leakage")),
          _mw(r["power_mw"].get("memories")), f"{r['power_mw']['total']:.4g}",
          r["activity_source"].split(":")[0], f"`{r['command']}`"] for r in rows]))

    md.append("\n## Flow cost (this 2-core machine)\n\n")
    md.append("Peak RSS is the largest Yosys process the running `memwall` had started so far.\n\n")
    md.append(markdown_table(
        ["config", "pdk", "synthesis s", "synthesis peak RSS MB", "whole flow s"],
        [[r["config"], r["pdk"], r.get("synth", {}).get("runtime_s"),
          r.get("synth", {}).get("peak_rss_mb"), r.get("flow_runtime_s")] for r in rows]))

    md.append("\n## Area by unit group\n\nEach family names its groups (module-name prefixes "
              "in its description); 'other' is what no prefix matches.\n\n")
    md.append(markdown_table(
        ["config", "pdk", "area µm² by group"],
        [[r["config"], r["pdk"], ", ".join(f"{g} {a:.0f}" for g, a in
                                           sorted(group_areas(r).items()))] for r in rows]))

    from memwall.family import families

    for name, fam in families().items():
        own = [r for r in rows if r["unit"] == name]
        if own and fam.report_sections is not None:
            folder = out / name   # a family's plots go in its own report folder
            folder.mkdir(parents=True, exist_ok=True)
            text, files = fam.report_sections(own, folder)
            md.append(text)
            plots += [f"{name}/{f}" for f in files]
    if plots:
        md.append("\n## Plots\n\n" + "".join(f"![{p}]({p})\n" for p in plots))
    (out / "area_power.md").write_text("\n".join(md))
    return out / "area_power.md"
