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
from pathlib import Path

from memwall import paths
from memwall.config import load_config
from memwall.files import write_json_atomic
from memwall.gen import generate
from memwall.progress import Progress, plain_progress

from . import hierarchical, synth
from .flat_sta import run_flat_sta
from .pdk import corners, find_pdk
from .sta import DEFAULT_SIGNOFF, SignOff
from .synth import subtree_areas

__all__ = ["run_flow", "metrics_path", "power_by_unit", "fmax_mhz", "BUILD_ROOT"]

BUILD_ROOT = paths.BUILD


def metrics_path(config: str, pdk: str, build_root: Path = BUILD_ROOT) -> Path:
    return build_root / config / "synth" / pdk / "metrics.json"


#: The steps of one flow run, in order, as the progress display names them.
FLOW_STEPS = ("generate RTL", "synthesis (Yosys)", "switching activity (cocotb, Verilator)",
              "timing and power (OpenSTA)")
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


def run_flow(config: str, pdk_name: str, *, build_root: Path = BUILD_ROOT, jobs: int = 2,
             activity: bool = True, progress: Progress | None = None, flat_sta: bool = False,
             boundary: str = "context", memory_idle: float | None = None,
             signoff: SignOff = DEFAULT_SIGNOFF) -> dict:
    """Synthesise, time and power one config on one PDK; returns (and writes) its metrics.

    ``progress`` shows the steps of :data:`FLOW_STEPS` (plain lines on stderr by default).
    ``boundary``: how the per-module timing constrains module boundaries, "context" (from the
    design around each module, :mod:`memwall.flows.budget`) or "fixed" (a flat 20 % budget).
    ``flat_sta``: also link the whole design in one OpenSTA run and time it end to end
    (:mod:`memwall.flows.flat_sta`; small configs only), reported beside the hierarchical WNS.
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
    corner_names = corners(pdk.name) if flat_sta else ()
    steps_total = len(FLOW_STEPS) + len(corner_names)
    with progress.task(f"synth {cfg.name}/{pdk.name}", steps_total) as steps:
        gen_dir = generate(cfg, build_root)
        manifest = json.loads((gen_dir / "manifest.json").read_text())
        out_dir = gen_dir / "synth" / pdk.name
        out_dir.mkdir(parents=True, exist_ok=True)
        steps.advance(FLOW_STEPS[0])

        area = synth.synthesize(gen_dir, pdk, period_ns, out_dir, jobs=jobs,
                                progress=progress)
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
        for corner in corner_names:
            corner_pdk = pdk if corner == pdk.corner else \
                find_pdk(pdk.name, cache_root=build_root / "pdk", corner=corner)
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
        "power_by_module": timing.get("power_by_module", {}),
        "power_by_unit": power_by_unit(manifest, timing.get("power_by_module", {})),
        "activity_source": timing["activity_source"],
        "activity_runs": (switching or {}).get("runs"),   # cycles, seconds, VCD MB per run
        "annotated": timing.get("annotated"),
        "synth": {key: area.get(key) for key in ("runtime_s", "peak_rss_mb", "yosys_version")},
        "flow_runtime_s": round(time.perf_counter() - start, 1),
        "command": f"make synth CONFIG={cfg.name} PDK={pdk.name}",
    }
    if not activity or flat_sta or boundary != "context" or signoff != DEFAULT_SIGNOFF:
        metrics["command"] = f"memwall synth {cfg.name} --pdk {pdk.name}" + \
            " --no-activity" * (not activity) + " --flat-sta" * flat_sta + \
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
