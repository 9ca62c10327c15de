"""``memwall report``: area/power tables and plots from every ``metrics.json`` in the build.

Writes ``reports/area_power.md`` and ``reports/area_power.csv``: every config x PDK with its
area, timing, power and activity source, its provenance, and the flow's cost. Each family adds
its own section and plots through ``Family.report_sections`` (d-PLENA: the paper's Table IV side
by side, scaling with VLEN).

Provenance (:mod:`memwall.flows.provenance`): a row is *current* when its ``metrics.json``
records the RTL, config and flow this checkout generates for its config now; *stale* when one
of them differs; of *unknown provenance* when it records none (written before the flow
recorded it). By default the report refuses anything but current rows
(:class:`~memwall.flows.errors.StaleRowsError`, exit status 2, naming each row and the command
that regenerates it); with ``allow_stale`` it writes them, marked, and leaves them out of every
family section (paper comparisons, fits, plots). Rows of one config side by side therefore
always share one RTL: the checkout's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memwall import paths

from .errors import StaleRowsError
from .flow import BUILD_ROOT
from .pdk import corners as pdk_corners
from .provenance import current_design, flow_version, stale_reasons
from .sta import IO_BUDGET

__all__ = ["collect", "write_report", "unit_group", "group_areas", "group_powers",
           "linear_fit", "markdown_table", "timing_met", "fmax_mhz", "achieved_mhz",
           "worst_path", "internal_fmax_mhz", "fmax_label", "top_module",
           "subtree_figures", "write_synthesis_report", "synth_metrics", "row_provenance",
           "provenance_label"]

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
    """WNS >= 0 at the config's clock, hierarchical and (where the flow timed it) flat, with
    the sign-off margin: the only rows a paper's area and power may stand by."""
    flat = row.get("flat_wns_ns")
    return row["wns_ns"] is not None and row["wns_ns"] >= 0 and (flat is None or flat >= 0)


def fmax_mhz(row: dict) -> float | None:
    """The clock at which the worst slack is zero: ``1 / (period - WNS)``, to first order
    (path delays, and the boundary budgets derived from them, as synthesised for the
    config's clock). None without a timed path."""
    if row["wns_ns"] is None:
        return None
    return 1000.0 / (1000.0 / row["clock_mhz"] - row["wns_ns"])


#: How OpenSTA names a path end at a port of the design it times.
_PORT_ENDS = ("(input port", "(output port")


def top_module(hierarchy: dict[str, dict[str, int]]) -> str | None:
    """The top of a metrics row's ``hierarchy``: the one module no module instantiates (None
    if there is not exactly one)."""
    children = {child for kids in hierarchy.values() for child in kids}
    roots = [m for m in hierarchy if m not in children]
    return roots[0] if len(roots) == 1 else None


def _through_port(text: str | None) -> bool:
    return bool(text) and any(end in text for end in _PORT_ENDS)


def _flat_through_port(corner: dict) -> bool:
    # The flat run links the whole design: its only ports are the top's.
    return any(map(_through_port, str(corner.get("critical_path", "")).split(" -> ")))


def worst_path(row: dict) -> str | None:
    """Where the hierarchical worst path runs: ``"top-level I/O"`` where it starts or ends at
    a port of the top, whose external delay is :data:`memwall.flows.sta.IO_BUDGET` of the
    period (an assumption about the design around this one, which scales with the clock);
    ``"internal"`` where it runs between registers or memories. A path across a child's
    boundary is timed from the design around the child (:mod:`memwall.flows.budget`), which
    may itself lead to a top-level port: the flat run's worst path decides where it exists,
    else it counts as internal. None without a timed path."""
    path = row.get("critical_path")
    if row.get("wns_ns") is None or not path:
        return None
    ends = (path.get("startpoint"), path.get("endpoint"))
    if not any(map(_through_port, ends)):
        return "internal"
    if path.get("module") == top_module(row.get("hierarchy") or {}):
        return "top-level I/O"
    flat = (row.get("flat_by_corner") or {}).get("tt")
    return "top-level I/O" if flat and _flat_through_port(flat) else "internal"


def internal_fmax_mhz(row: dict) -> float | None:
    """:func:`fmax_mhz`, but None where the worst path runs through a top-level port, whose
    fmax the assumed I/O delays set rather than the design."""
    return None if worst_path(row) == "top-level I/O" else fmax_mhz(row)


def _fmax_cell(fmax: float | None, kind: str | None) -> str:
    return "I/O-limited" if kind == "top-level I/O" else _mhz(fmax)


def fmax_label(row: dict) -> str:
    """A row's fmax as a report prints it: ``"1005 MHz"``, or ``"I/O-limited"``."""
    cell = _fmax_cell(fmax_mhz(row), worst_path(row))
    return cell if cell in ("I/O-limited", "—") else f"{cell} MHz"


def _corner_fmax_cell(corner: dict) -> str:
    return _fmax_cell(corner.get("fmax_mhz"),
                      "top-level I/O" if _flat_through_port(corner) else "internal")


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


def row_provenance(rows: list[dict], current: Callable[[str], dict] = current_design,
                   flow: str | None = None) -> list[tuple[str, list[str]]]:
    """Each row's provenance status and why: ``("current", [])``, ``("stale", reasons)`` or
    ``("unknown", [...])``.

    ``current``: config name -> the design the checkout generates for it
    (:func:`memwall.flows.provenance.current_design`, called once per config); ``flow``: the
    checkout's flow version (default: :func:`memwall.flows.provenance.flow_version`).
    """
    flow = flow_version() if flow is None else flow
    designs: dict[str, dict] = {}
    status = []
    for row in rows:
        record = row.get("provenance")
        if not record:
            status.append(("unknown", ["unknown provenance: no commit, RTL hash or flow "
                                       "version recorded"]))
            continue
        if row["config"] not in designs:
            designs[row["config"]] = current(row["config"])
        reasons = stale_reasons(record, designs[row["config"]], flow)
        status.append(("stale", reasons) if reasons else ("current", []))
    return status


def provenance_label(row: dict) -> str:
    """Short commit (``+dirty`` if tracked sources differed from it), first 10 hex of the RTL
    hash and of the flow version; ``unknown provenance`` for a row that records none."""
    record = row.get("provenance")
    if not record:
        return "unknown provenance"
    commit = "no commit" if record.get("commit") is None else \
        record["commit"][:7] + "+dirty" * bool(record.get("dirty"))
    return (f"{commit}, RTL {str(record.get('rtl_sha256'))[:10]}, "
            f"flow {str(record.get('flow_version'))[:10]}")


def _refusal(rows: list[dict], status: list[tuple[str, list[str]]]) -> str:
    bad = [(r, reasons) for r, (s, reasons) in zip(rows, status, strict=True) if s != "current"]
    named = "; ".join(f"{r['config']}/{r['pdk']} ({', '.join(reasons)})" for r, reasons in bad)
    commands = ", ".join(f"`{r['command']}`" for r, _ in bad)
    return (f"report: {len(bad)} of {len(rows)} rows are not of this checkout's RTL "
            f"and flow: {named}. Regenerate them with {commands} (or every row of the report "
            "matrix with `memwall report --run --force`), or write them marked stale, left out "
            "of every paper comparison and fit, with `memwall report --allow-stale` "
            "(`make report ALLOW_STALE=1`)")


def _csv(rows: list[dict], status: list[tuple[str, list[str]]]) -> str:
    out = io.StringIO()
    fields = ["config", "unit", "pdk", "vlen", "clock_mhz", "fmax_mhz", "worst_path",
              "area_um2", "cells",
              "wns_ns", "tns_ns", "internal_mw", "switching_mw", "leakage_mw", "memories_mw",
              "clock_tree_mw", "total_mw", "gated_total_mw", "activity_source", "command",
              "provenance", "commit", "dirty",
              "rtl_sha256", "flow_version", "stale_reasons"]
    writer = csv.DictWriter(out, fields, lineterminator="\n")
    writer.writeheader()
    for r, (state, reasons) in zip(rows, status, strict=True):
        record = r.get("provenance") or {}
        writer.writerow({"config": r["config"], "unit": r["unit"], "pdk": r["pdk"],
                         "vlen": r["parameters"].get("vlen", ""), "clock_mhz": r["clock_mhz"],
                         "fmax_mhz": None if internal_fmax_mhz(r) is None else
                         round(internal_fmax_mhz(r), 1),
                         "worst_path": worst_path(r),
                         "memories_mw": r["power_mw"].get("memories"),
                         "clock_tree_mw": r["power_mw"].get("clock_tree"),
                         "gated_total_mw": (r.get("clock_gating") or {}).get("gated_total_mw"),
                         "area_um2": round(r["area_um2"], 3), "cells": r["cells"],
                         "wns_ns": r["wns_ns"], "tns_ns": r["tns_ns"],
                         **{f"{k}_mw": round(r["power_mw"][k], 6)
                            for k in ("internal", "switching", "leakage", "total")},
                         "activity_source": r["activity_source"], "command": r["command"],
                         "provenance": "unknown provenance" if state == "unknown" else state,
                         "commit": record.get("commit"), "dirty": record.get("dirty"),
                         "rtl_sha256": record.get("rtl_sha256"),
                         "flow_version": record.get("flow_version"),
                         "stale_reasons": "; ".join(reasons) if state == "stale" else ""})
    return out.getvalue()


def _wires(signoff: dict) -> str:
    wires = signoff.get("wires", "not stated")
    return wires if isinstance(wires, str) else \
        f"{wires['model']} ({wires['block_gates']:,} NAND2 eq.)"


def _signoff_section(rows: list[dict]) -> str:
    """Per row: the sign-off conditions, hierarchical and flat WNS at TT with their difference,
    hold, and fmax at every corner the flat run timed."""
    lines = []
    for r in rows:
        signoff = r.get("signoff") or {}
        corners = r.get("flat_by_corner") or {}
        flat = r.get("flat_wns_ns")
        met = timing_met(r)
        lines.append([
            r["config"], r["pdk"], f"{r['clock_mhz']:g}",
            f"{signoff.get('setup_margin_ps', '—')} / {signoff.get('hold_margin_ps', '—')}",
            _wires(signoff), _ns(r["wns_ns"]), "—" if flat is None else _ns(flat),
            "—" if flat is None or r["wns_ns"] is None else f"{(r['wns_ns'] - flat) * 1e3:+.1f}",
            _ns(r.get("flat_hold_wns_ns", r.get("hold_wns_ns"))),
            _fmax_cell(fmax_mhz(r), worst_path(r)),
            *(_corner_fmax_cell(corners[c]) if c in corners else
              "not timed" if c in pdk_corners(r["pdk"]) else "no such corner"
              for c in ("tt", "ss")),
            "yes" if met else "no"])
    return ("\n## Timing sign-off\n\n"
            "Pre-layout, ideal clock: setup / hold margin (clock uncertainty, ps), the buffered "
            "netlist, the wire-load model every net is timed with, typical corner. WNS "
            "(hierarchical, every row) and flat WNS (the whole design linked in one OpenSTA run, "
            "where it fits: `flow.FLAT_MAX_CELLS`) at TT; hier − flat in ps; hold WNS (flat "
            "where run); fmax = 1 / (period − WNS) from the hierarchical WNS and, per corner, "
            "from the flat run (ASAP7 SS: 0.63 V, 100 °C), *I/O-limited* where that worst "
            "path starts or ends at a top-level port. A row meets its clock only with "
            "both WNS ≥ 0 at TT.\n\n"
            + markdown_table(["config", "pdk", "clock MHz", "margin ps (setup / hold)",
                              "wires", "WNS ns", "flat WNS ns", "hier − flat ps",
                              "hold WNS ns", "fmax MHz", "flat fmax TT", "flat fmax SS",
                              "meets clock"], lines))


def write_report(build_root: Path = BUILD_ROOT, out: Path = REPORTS,
                 units: list[str] | None = None, *, allow_stale: bool = False,
                 current: Callable[[str], dict] = current_design) -> Path:
    """Write the tables (and the families' sections and plots) for every metrics row under
    ``build_root``, or only those of ``units``.

    Rows that are not current (:func:`row_provenance`; ``current`` gives the checkout's design
    of a config) raise :class:`~memwall.flows.errors.StaleRowsError` before anything is
    written, or with ``allow_stale`` are written marked and left out of the families' sections.
    """
    rows = [r for r in collect(build_root) if not units or r["unit"] in units]
    if not rows:
        raise FileNotFoundError(f"no metrics.json under {build_root}/*/synth/*/: run "
                                f"`make synth CONFIG=<name> PDK=<pdk>` first")
    status = row_provenance(rows, current)
    if not allow_stale and any(state != "current" for state, _ in status):
        raise StaleRowsError(_refusal(rows, status))
    compared = [r for r, (state, _) in zip(rows, status, strict=True) if state == "current"]
    out.mkdir(parents=True, exist_ok=True)
    (out / "area_power.csv").write_text(_csv(rows, status))
    plots: list[str] = []

    sources = sorted({r["activity_source"] for r in rows})
    md = ["# Area, timing and power\n",
          "Generated by `make report` from `build/*/synth/*/metrics.json`; each row was produced "
          "by the command in its last column. Switching activity ('activity' column):\n",
          "".join(f"- {s}\n" for s in sources)]
    md.append("The clock is the config's clock on that PDK; fmax is the clock at which the "
              "worst slack would be zero, 1 / (period − WNS), to first order, given only where "
              "the worst path is internal. Where it starts or ends at a top-level port the "
              "cell reads *I/O-limited*: that port's external delay is an assumed "
              f"{IO_BUDGET:.0%} of the period, so the slack scales with the clock and 1 / "
              "(period − WNS) says nothing of the design (the CSV's `worst_path` names it, "
              "its `fmax_mhz` is empty). Power is at the "
              "config's clock: logic (internal, switching, leakage: OpenSTA at the workload's "
              "activity), memories (the SRAM model at the simulated accesses) and the clock "
              "tree (an estimate: `flows/clock_tree.py`) add up to the total; the last power "
              "column is that total with every register whose RTL has an enable behind an "
              "integrated clock gate (ICG cost included).\n\n")
    md.append("Provenance: the commit the row was made at (+dirty: tracked sources under "
              "hdl/ golden/ verif/ flows/ memwall/ configs/ differed from it), the first 10 hex "
              "of the SHA-256 of its generated RTL (every file of build/<config>/rtl), and of "
              "the flow's sources (flows/*.py but report.py). A row is compared with a paper or "
              "another row only when its RTL, config and flow are the ones this checkout "
              "generates for its config now, so rows of one config side by side share one RTL. "
              "`make report` refuses any other row (stale, or of unknown provenance) and names "
              "the command that regenerates it; `memwall report --allow-stale` writes such "
              "rows marked **stale** or *unknown provenance*, outside every comparison and "
              "fit.\n\n")
    md.append(markdown_table(
        ["config", "pdk", "clock MHz", "fmax MHz", "area mm²", "cells", "WNS ns", "TNS ns",
         "internal mW", "switching mW", "leakage mW", "memories mW", "clock tree mW",
         "total mW", "total, enables clock-gated mW", "activity", "provenance", "command"],
        [[r["config"], r["pdk"], f"{r['clock_mhz']:g}", _fmax_cell(fmax_mhz(r), worst_path(r)),
          f"{r['area_um2'] / 1e6:.4f}", r["cells"], _ns(r["wns_ns"]), f"{r['tns_ns']:.3f}",
          *(f"{r['power_mw'][k]:.4g}" for k in ("internal", "switching", "leakage")),
          _mw(r["power_mw"].get("memories")), _mw(r["power_mw"].get("clock_tree")),
          f"{r['power_mw']['total']:.4g}",
          _mw((r.get("clock_gating") or {}).get("gated_total_mw")),
          r["activity_source"].split(":")[0],
          ("**stale**: " if state == "stale" else "") + provenance_label(r),
          f"`{r['command']}`"] for r, (state, _) in zip(rows, status, strict=True)]))
    left_out = [(r, state, reasons) for r, (state, reasons) in zip(rows, status, strict=True)
                if state != "current"]
    if left_out:
        md.append("\n## Rows left out of every comparison and fit\n\n"
                  "Written with `--allow-stale`: these rows are not of this checkout's RTL and "
                  "flow. Regenerate each with its command.\n\n")
        md.append(markdown_table(
            ["config", "pdk", "provenance", "why", "command"],
            [[r["config"], r["pdk"], "stale" if state == "stale" else "unknown provenance",
              "; ".join(reasons), f"`{r['command']}`"] for r, state, reasons in left_out]))

    md.append(_signoff_section(rows))
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
        own = [r for r in compared if r["unit"] == name]
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
