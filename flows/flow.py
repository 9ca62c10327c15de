"""``memwall synth``: generate -> hierarchical synthesis -> activity -> OpenSTA -> metrics.json.

``build/<config>/synth/<pdk>/metrics.json`` is the one record every report reads. The steps are
in :mod:`memwall.flows.synth` (Yosys, one run per unique module), :mod:`memwall.flows.workload`
and :mod:`memwall.flows.activity` (switching activity from the family's cocotb runs) and
:mod:`memwall.flows.hierarchical` (OpenSTA timing and power; the memories' macro power from
:mod:`memwall.flows.memory_power`).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from memwall import paths
from memwall.config import load_config
from memwall.files import write_json_atomic
from memwall.gen import generate
from memwall.progress import Progress, plain_progress

from . import hierarchical, synth
from .flat_sta import run_flat_sta
from .pdk import Pdk, corners, find_pdk, pdk_cell_library
from .provenance import provenance
from .sta import DEFAULT_SIGNOFF, SignOff
from .synth import subtree_areas
from .wire_load import NAND2, SIGNAL_RC, wire_load_for

__all__ = ["run_flow", "metrics_path", "power_by_unit", "fmax_mhz", "BUILD_ROOT"]

BUILD_ROOT = paths.BUILD


def metrics_path(config: str, pdk: str, build_root: Path = BUILD_ROOT) -> Path:
    return build_root / config / "synth" / pdk / "metrics.json"


#: The steps of one flow run, in order, as the progress display names them.
FLOW_STEPS = ("generate RTL", "synthesis (Yosys)", "switching activity (cocotb, Verilator)",
              "timing and power (OpenSTA)")
#: ``flat_sta=None`` (what ``memwall report --run`` asks for) times a design flat when it has at
#: most this many standard cells after synthesis: dplena512 (2.8 M cells) is, dplena1024 is not.
#: A decision on this 24 GiB machine, where two flows may run side by side and OpenSTA holds
#: the whole linked netlist; each flat run's peak memory is not yet recorded.
FLAT_MAX_CELLS = 3_000_000
#: The optional last step (``flat_sta=True``).
FLAT_STEP = "flat end-to-end timing (OpenSTA)"


def power_by_unit(manifest: dict, power_by_module: dict) -> dict:
    """Logic power of each direct child of the top with everything below it (as
    ``area_by_unit``), plus the top's own cells: per-instance power times instances."""
    own = {module: entry.get("per_instance_mw", {}).get("total", 0.0)
           for module, entry in power_by_module.items()}
    hierarchy, top = manifest["hierarchy"], manifest["top"]
    for module in hierarchy:
        own.setdefault(module, 0.0)
    subtree = subtree_areas(hierarchy, own)
    units = {child: {"instances": n, "power_mw": n * subtree[child]}
             for child, n in hierarchy.get(top, {}).items()}
    units[top] = {"instances": 1, "power_mw": own.get(top, 0.0), "note": "top-level cells only"}
    return units


def fmax_mhz(period_ns: float, wns_ns: float | None) -> float | None:
    """The clock at which the worst path would just keep its margin: 1 / (period - WNS).

    An estimate: it holds for register-to-register paths, whose delay does not depend on the
    period; a path through a top-level port, whose I/O budget is a share of the period, would
    get a little more room. None when no path is timed.
    """
    if wns_ns is None or period_ns - wns_ns <= 0:
        return None
    return 1000.0 / (period_ns - wns_ns)


#: ABC's delay target as a share of what the sign-off leaves of the period (period less the
#: setup margin). ABC times its mapping without wires, without the buffers repair adds and with
#: its own loads: on dplena32 (fp_stages 3) it put the sequencer at 866 ps where flat OpenSTA,
#: with the wire-load model, measured 1,050 ps (ABC sees 82 %). Decision: 0.8.
ABC_TARGET_SHARE = 0.8


def abc_target_ns(period_ns: float, signoff: SignOff) -> float:
    """The delay ABC maps each module for (:data:`ABC_TARGET_SHARE`)."""
    return (period_ns - signoff.setup_margin_ps / 1000.0) * ABC_TARGET_SHARE


def with_wire_load(pdk: Pdk, area: dict, out_dir: Path) -> Pdk:
    """``pdk`` with the design's wire-load model (:mod:`memwall.flows.wire_load`) where its
    Liberty has none, sized by the design's standard-cell area (``area``: synthesis's
    ``area.json``), its Liberty view written to ``out_dir/wire_load.lib``."""
    if pdk.name not in SIGNAL_RC:
        return pdk
    std_area = area["area_um2"] - sum(m.get("total_um2", 0.0) for m in area.get("macros", []))
    cells = pdk_cell_library(pdk)
    nand2 = cells.liberty_of(NAND2[pdk.name]).cell_area(NAND2[pdk.name])
    model = wire_load_for(pdk.name, std_area, nand2).write(out_dir / "wire_load.lib")
    return replace(pdk, wire_load=model)


def run_flow(config: str, pdk_name: str, *, build_root: Path = BUILD_ROOT, jobs: int = 2,
             activity: bool = True, progress: Progress | None = None,
             flat_sta: bool | None = False,
             boundary: str = "context", memory_idle: float | None = None,
             signoff: SignOff = DEFAULT_SIGNOFF) -> dict:
    """Synthesise, time and power one config on one PDK; returns (and writes) its metrics.

    ``progress`` shows the steps of :data:`FLOW_STEPS` (plain lines on stderr by default).
    ``boundary``: how the per-module timing constrains module boundaries, "context" (from the
    design around each module, :mod:`memwall.flows.budget`) or "fixed" (a flat 20 % budget).
    ``flat_sta``: also link the whole design in one OpenSTA run and time it end to end
    (:mod:`memwall.flows.flat_sta`; small configs only), reported beside the hierarchical WNS;
    None: when the design has at most :data:`FLAT_MAX_CELLS` cells.
    ``memory_idle``: the share of an SRAM macro's access energy charged for a cycle without an
    access (default :data:`memwall.flows.memory_power.IDLE_ACCESS_FRACTION`).
    ``signoff``: the margins every timing run keeps (:class:`memwall.flows.sta.SignOff`); the
    hierarchical run and the flat run time the typical corner, and the flat run also every
    other corner of the PDK (:func:`memwall.flows.pdk.corners`), each with its fmax
    (:func:`fmax_mhz`).
    """
    progress = progress or plain_progress()
    cfg = load_config(config)
    pdk = find_pdk(pdk_name, cache_root=build_root / "pdk")
    period_ns = cfg.clock_period_ns_on(pdk.name)     # the PDK's own clock, where given
    start = time.perf_counter()
    corner_names = corners(pdk.name) if flat_sta is not False else ()
    steps_total = len(FLOW_STEPS) + len(corner_names)
    with progress.task(f"synth {cfg.name}/{pdk.name}", steps_total) as steps:
        gen_dir = generate(cfg, build_root)
        # What made this run, taken before it starts: a source edited during a long run must
        # not lend the row its new flow version.
        origin = provenance(gen_dir)
        manifest = json.loads((gen_dir / "manifest.json").read_text())
        out_dir = gen_dir / "synth" / pdk.name
        out_dir.mkdir(parents=True, exist_ok=True)
        steps.advance(FLOW_STEPS[0])

        area = synth.synthesize(gen_dir, pdk, period_ns, out_dir, jobs=jobs,
                                progress=progress, abc_target_ns=abc_target_ns(period_ns, signoff))
        pdk = with_wire_load(pdk, area, out_dir)
        steps.advance(FLOW_STEPS[1])
        switching = None
        if activity:
            from .workload import collect_activity

            switching = collect_activity(cfg, out_dir / "activity", progress)
        steps.advance(FLOW_STEPS[2] if activity else "no activity run (--no-activity)")
        timing = hierarchical.run_sta(out_dir, manifest, pdk, period_ns, switching,
                                      progress=progress, boundary=boundary,
                                      memory_idle=memory_idle, signoff=signoff)
        steps.advance(FLOW_STEPS[3])
        flat, by_corner = None, {}
        if flat_sta is None and area["cells"] > FLAT_MAX_CELLS:
            for corner in corner_names:
                steps.advance(f"no flat timing at {corner}: {area['cells']:,} cells > "
                              f"{FLAT_MAX_CELLS:,}")
            corner_names = ()
        for corner in corner_names:
            corner_pdk = pdk if corner == pdk.corner else replace(
                find_pdk(pdk.name, cache_root=build_root / "pdk", corner=corner),
                wire_load=pdk.wire_load)     # the wires are the same at every corner
            result = run_flat_sta(out_dir, manifest, corner_pdk, period_ns, signoff)
            flat = flat or result           # the typical corner's: flat_wns_ns and the rest
            by_corner[corner] = {"wns_ns": result["flat_wns_ns"],
                                 "hold_wns_ns": result["flat_hold_wns_ns"],
                                 "fmax_mhz": fmax_mhz(period_ns, result["flat_wns_ns"]),
                                 "critical_path": result["flat_critical_path"]["startpoint"]
                                 + " -> " + str(result["flat_critical_path"]["endpoint"])}
            steps.advance(f"{FLAT_STEP}, {corner}")


    metrics = {
        "config": cfg.name,
        "unit": cfg.unit_name,
        "pdk": pdk.name,
        "clock_mhz": cfg.clock_mhz_on(pdk.name),
        "parameters": manifest["config"],
        "area_um2": area["area_um2"],
        "area_by_module": area["area_by_module"],
        "area_by_unit": area.get("area_by_unit", {}),
        "hierarchy": manifest["hierarchy"],      # module -> {child: instances}
        "cells": area["cells"],
        "macros": timing.get("macros", area.get("macros", [])),   # with each one's power
        "wns_ns": timing["wns_ns"],
        "hold_wns_ns": timing["hold_wns_ns"],
        "fmax_mhz": fmax_mhz(period_ns, timing["wns_ns"]),
        "signoff": timing["signoff"],
        "tns_ns": timing["tns_ns"],
        "critical_path": timing.get("critical_path"),
        "boundary": timing.get("boundary"),
        "power_mw": timing["power_mw"],
        # the clock tree (in power_mw) and the total with the enable registers clock-gated
        "clock_gating": timing.get("clock_gating"),
        "power_by_module": timing.get("power_by_module", {}),
        "power_by_unit": power_by_unit(manifest, timing.get("power_by_module", {})),
        "activity_source": timing["activity_source"],
        "activity_runs": (switching or {}).get("runs"),   # cycles, seconds, VCD MB per run
        "annotated": timing.get("annotated"),
        "synth": {key: area.get(key) for key in ("runtime_s", "peak_rss_mb", "yosys_version")},
        "flow_runtime_s": round(time.perf_counter() - start, 1),
        "command": f"make synth CONFIG={cfg.name} PDK={pdk.name}",
        # commit, RTL hash, config and flow version: what `memwall report` checks a row by
        "provenance": {**origin, "tools": {**origin["tools"],
                                           "yosys": area.get("yosys_version")}},
    }
    if not activity or flat is not None or boundary != "context" or signoff != DEFAULT_SIGNOFF:
        metrics["command"] = f"memwall synth {cfg.name} --pdk {pdk.name}" + \
            " --no-activity" * (not activity) + " --flat-sta" * (flat is not None) + \
            (f" --boundary {boundary}" if boundary != "context" else "") + \
            (f" --setup-margin-ps {signoff.setup_margin_ps:g} --hold-margin-ps "
             f"{signoff.hold_margin_ps:g}" if signoff != DEFAULT_SIGNOFF else "")
    if flat is not None:
        metrics.update(flat)
        metrics["flat_by_corner"] = by_corner
        hier, whole = metrics["wns_ns"], flat["flat_wns_ns"]
        if hier is not None and whole is not None:
            metrics["flat_vs_hierarchical"] = {
                "difference_ns": hier - whole,
                "fraction_of_period": (hier - whole) / period_ns,
                "note": "hierarchical WNS minus flat WNS; negative: the hierarchical method is "
                        "the more pessimistic"}
    write_json_atomic(out_dir / "metrics.json", metrics)
    wns = "no timed path" if metrics["wns_ns"] is None else f"{metrics['wns_ns']:.3f} ns"
    if flat is not None and flat["flat_wns_ns"] is not None:
        wns += f" (flat {flat['flat_wns_ns']:.3f} ns)"
    progress.log(f"memwall synth: {cfg.name}/{pdk.name}: {metrics['area_um2'] / 1e6:.4f} mm^2, "
                 f"WNS {wns}, {metrics['power_mw']['total']:.2f} mW "
                 f"-> {out_dir / 'metrics.json'}")
    return metrics
