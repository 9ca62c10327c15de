"""``memwall report``: area/power tables and plots from every ``metrics.json`` in the build.

Writes ``reports/area_power.md``, ``reports/area_power.csv`` and PNG plots: area and power vs
VLEN per PDK with a least-squares line and its R^2, the area breakdown by unit, and the d-PLENA
Table IV comparison (ours vs the paper, per lane and total).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from .flow import BUILD_ROOT

__all__ = ["collect", "write_report", "PAPER_TABLE_IV", "unit_group", "linear_fit"]

REPORTS = Path(__file__).resolve().parents[1] / "reports"

#: d-PLENA Table IV (Synopsys DC, ASAP7, 1 GHz): VLEN -> (vector area mm^2, total power mW).
#: The paper's scalar area is a constant 661 um^2.
PAPER_TABLE_IV = {512: (0.731, 381.72), 1024: (1.464, 762.65), 2048: (2.931, 1524.53)}
PAPER_SCALAR_UM2 = 661.0

#: Module-name prefixes of the d-PLENA core's units: the VLEN-wide compute (the paper's
#: "vector"), the sequencer with its scalar units and small memories ("scalar"), the Vector SRAM
#: banks and the MXFP8 dequantiser.
UNIT_GROUPS = {"reduction_unit": "vector", "elementwise_unit": "vector", "sequencer": "scalar",
               "vector_sram_bank": "vector SRAM", "mx_dequantiser": "dequantiser"}


def unit_group(module: str) -> str:
    for prefix, group in UNIT_GROUPS.items():
        if module.startswith(prefix):
            return group
    return "other"


def collect(build_root: Path = BUILD_ROOT) -> list[dict]:
    """Every metrics.json under ``build_root/<config>/synth/<pdk>/``, sorted."""
    rows = [json.loads(p.read_text()) for p in build_root.glob("*/synth/*/metrics.json")]
    return sorted(rows, key=lambda r: (r["unit"], r["pdk"], r["parameters"].get("vlen", 0),
                                       r["config"]))


def linear_fit(x, y) -> tuple[float, float, float]:
    """Least-squares ``y = a x + b``; returns (a, b, R^2)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    a, b = np.polyfit(x, y, 1)
    residual = y - (a * x + b)
    total = ((y - y.mean()) ** 2).sum()
    return float(a), float(b), float(1 - (residual ** 2).sum() / total) if total else 1.0


def _unit_area(entry: dict) -> float:
    """Area (um^2) of one ``area_by_unit`` entry of synth.py: the unit's whole subtree."""
    return entry["area_um2"]


def _unit_areas(row: dict) -> dict[str, float]:
    groups: dict[str, float] = {}
    for module, entry in row.get("area_by_unit", {}).items():
        groups[unit_group(module)] = groups.get(unit_group(module), 0.0) + _unit_area(entry)
    return groups


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    fields = ["config", "unit", "pdk", "vlen", "clock_mhz", "area_um2", "cells", "wns_ns",
              "tns_ns", "internal_mw", "switching_mw", "leakage_mw", "total_mw",
              "activity_source", "command"]
    writer = csv.DictWriter(out, fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({"config": r["config"], "unit": r["unit"], "pdk": r["pdk"],
                         "vlen": r["parameters"].get("vlen", ""), "clock_mhz": r["clock_mhz"],
                         "area_um2": round(r["area_um2"], 3), "cells": r["cells"],
                         "wns_ns": r["wns_ns"], "tns_ns": r["tns_ns"],
                         **{f"{k}_mw": round(r["power_mw"][k], 6)
                            for k in ("internal", "switching", "leakage", "total")},
                         "activity_source": r["activity_source"], "command": r["command"]})
    return out.getvalue()


def _plots(rows: list[dict], out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    dplena = [r for r in rows if r["unit"] == "dplena"]
    pdks = sorted({r["pdk"] for r in dplena})
    for quantity, label, getter in (
            ("area", "area (mm$^2$)", lambda r: r["area_um2"] / 1e6),
            ("power", "total power (mW)", lambda r: r["power_mw"]["total"])):
        fig, ax = plt.subplots(figsize=(6, 4))
        for pdk in pdks:
            pts = sorted((r["parameters"]["vlen"], getter(r)) for r in dplena if r["pdk"] == pdk)
            if len(pts) < 2:
                continue
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, "o", label=f"{pdk}")
            if len(pts) >= 3:   # a line through two points says nothing about linearity
                a, b, r2 = linear_fit(x, y)
                grid = np.linspace(min(x), max(x), 50)
                ax.plot(grid, a * grid + b, "--",
                        label=f"{pdk} fit: {a:.3g}/lane, R$^2$={r2:.4f}")
        if quantity == "area":
            ax.plot(list(PAPER_TABLE_IV), [v[0] for v in PAPER_TABLE_IV.values()], "k^",
                    label="paper Table IV (vector, DC ASAP7)")
        else:
            ax.plot(list(PAPER_TABLE_IV), [v[1] for v in PAPER_TABLE_IV.values()], "k^",
                    label="paper Table IV (DC ASAP7)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")   # the PDKs differ by 30x
        ax.set_xlabel("VLEN")
        ax.set_ylabel(label)
        ax.set_title(f"d-PLENA datapath {quantity} vs VLEN")
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"dplena_{quantity}_vs_vlen.png"
        fig.savefig(out / name, dpi=120)
        plt.close(fig)
        written.append(name)

    asap7 = [r for r in dplena if r["pdk"] == "asap7" and r.get("area_by_unit")]
    if asap7:
        fig, ax = plt.subplots(figsize=(7, 4))
        bottom = np.zeros(len(asap7))
        units = sorted({m for r in asap7 for m in r["area_by_unit"]})
        names = [r["config"] for r in asap7]
        for unit in units:
            vals = np.array([_unit_area(r["area_by_unit"][unit]) / 1e6
                             if unit in r["area_by_unit"] else 0.0 for r in asap7])
            ax.bar(names, vals, bottom=bottom, label=unit.split("_vlen")[0].split("_lanes")[0])
            bottom += vals
        ax.set_ylabel("area (mm$^2$)")
        ax.set_title("d-PLENA area by unit (ASAP7)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / "dplena_area_by_unit.png", dpi=120)
        plt.close(fig)
        written.append("dplena_area_by_unit.png")
    return written


def write_report(build_root: Path = BUILD_ROOT, out: Path = REPORTS) -> Path:
    rows = collect(build_root)
    if not rows:
        raise FileNotFoundError(f"no metrics.json under {build_root}/*/synth/*/: run "
                                f"`make synth CONFIG=<name> PDK=<pdk>` first")
    out.mkdir(parents=True, exist_ok=True)
    (out / "area_power.csv").write_text(_csv(rows))
    plots = _plots(rows, out)

    sources = sorted({r["activity_source"] for r in rows})
    md = ["# Area, timing and power\n",
          "Generated by `make report` from `build/*/synth/*/metrics.json`; each row was produced "
          "by the command in its last column. Switching activity ('activity' column):\n",
          "".join(f"- {s}\n" for s in sources)]
    md.append(_table(
        ["config", "pdk", "area mm²", "cells", "WNS ns", "TNS ns", "internal mW",
         "switching mW", "leakage mW", "total mW", "activity", "command"],
        [[r["config"], r["pdk"], f"{r['area_um2'] / 1e6:.4f}", r["cells"], f"{r['wns_ns']:.3f}",
          f"{r['tns_ns']:.3f}", *(f"{r['power_mw'][k]:.4g}" for k in
                                  ("internal", "switching", "leakage", "total")),
          r["activity_source"].split(":")[0], f"`{r['command']}`"] for r in rows]))

    md.append("\n## Flow cost (this 2-core machine)\n\n")
    md.append("Peak RSS is the largest Yosys process the running `memwall` had started so far.\n\n")
    md.append(_table(["config", "pdk", "synthesis s", "synthesis peak RSS MB", "whole flow s"],
                     [[r["config"], r["pdk"], r.get("synth", {}).get("runtime_s"),
                       r.get("synth", {}).get("peak_rss_mb"), r.get("flow_runtime_s")]
                      for r in rows]))

    paper_rows = []
    for r in rows:
        vlen = r["parameters"].get("vlen")
        if r["unit"] != "dplena" or r["pdk"] != "asap7" or vlen not in PAPER_TABLE_IV:
            continue
        groups = _unit_areas(r)
        paper_area, paper_power = PAPER_TABLE_IV[vlen]
        vector_mm2 = groups.get("vector", float("nan")) / 1e6
        paper_rows.append([
            vlen, f"{vector_mm2:.3f}", f"{paper_area:.3f}",
            f"{vector_mm2 / paper_area:.2f}", f"{vector_mm2 * 1e6 / vlen:.1f}",
            f"{paper_area * 1e6 / vlen:.1f}", f"{groups.get('scalar', float('nan')):.0f}",
            f"{PAPER_SCALAR_UM2:.0f}", f"{groups.get('vector SRAM', 0) / 1e6:.3f}",
            f"{groups.get('dequantiser', 0):.0f}", f"{r['power_mw']['total']:.1f}",
            f"{paper_power:.1f}", f"{r['power_mw']['total'] / vlen:.3f}",
            f"{paper_power / vlen:.3f}"])
    if paper_rows:
        md.append("\n## d-PLENA Table IV, side by side (ASAP7, 1 GHz)\n")
        md.append("Ours: open flow (Yosys + abc, OpenSTA) on memwall's sampling core; paper: "
                  "Synopsys DC. 'Vector' is the reduction and elementwise units; 'scalar' the "
                  "sequencer (decoder, register files, FP unit, top-k, INT select lane, and its "
                  "FP/INT/instruction memories and FIFO as fakeram macros). The Vector SRAM "
                  "(fakeram macros tiled over each bank) and the dequantiser are listed apart; "
                  "the paper's table has neither. Memory macros carry area but no power "
                  "model.\n\n")
        md.append(_table(["VLEN", "vector mm² (ours)", "vector mm² (paper)", "ratio",
                          "µm²/lane (ours)", "µm²/lane (paper)", "scalar µm² (ours)",
                          "scalar µm² (paper)", "Vector SRAM mm² (ours)",
                          "dequantiser µm² (ours)", "power mW (ours)", "power mW (paper)",
                          "mW/lane (ours)", "mW/lane (paper)"], paper_rows))
    dplena = [r for r in rows if r["unit"] == "dplena"]
    fits = []
    for pdk in sorted({r["pdk"] for r in dplena}):
        pts = [(r["parameters"]["vlen"], r["area_um2"] / 1e6, r["power_mw"]["total"])
               for r in dplena if r["pdk"] == pdk]
        if len(pts) >= 3:
            x, area, power = zip(*sorted(pts), strict=True)
            a, b, r2 = linear_fit(x, area)
            pa, pb, pr2 = linear_fit(x, power)
            fits.append([pdk, f"{a * 1e6:.1f} µm²/lane + {b:.4f} mm²", f"{r2:.5f}",
                         f"{pa:.4f} mW/lane + {pb:.2f} mW", f"{pr2:.5f}"])
    if fits:
        md.append("\n## Scaling with VLEN (least squares over the d-PLENA configs)\n\n")
        md.append(_table(["pdk", "area fit", "R²", "power fit", "R²"], fits))
    if plots:
        md.append("\n## Plots\n\n" + "".join(f"![{p}]({p})\n" for p in plots))
    (out / "area_power.md").write_text("\n".join(md))
    return out / "area_power.md"
