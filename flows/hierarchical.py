"""OpenSTA timing and power on a hierarchical gate-level netlist, one unique module at a time.

The design at VLEN 2048 is ~10^7 gates flat, so it is never linked flat. Every unique module's
netlist (``<synth_dir>/netlist/<module>.json``, Yosys' own ``write_json`` of the synthesis run,
children left as instances of other modules; :mod:`memwall.flows.netlist`) is analysed on its
own and its results are multiplied by its instance count, which is how hierarchical synthesis
counts area too.

Per module, two OpenSTA runs (:mod:`memwall.flows.sta`; a linked design cannot be swapped
inside one 2019 session), plus one characterisation run with ``boundary="context"``, each on
the module rewritten by :func:`memwall.flows.rewrite.rewrite_module`:

- **timing** on the module's own cells. Child instances are cut out and their pins become
  boundary ports: a child's output drives the parent's logic from an input port, a child's
  input is an output port loaded with the child's input capacitance. Paths inside a module are
  timed exactly. The boundary ports (``boundary="context"``, the default) are constrained from
  the design around the module (:mod:`memwall.flows.budget`: one characterisation run per
  unique module, then arrivals and required times propagated over the hierarchy), so a path
  crossing module boundaries is timed end to end up to per-bus/per-bit grouping; the top's
  own ports keep the 20 % I/O budget of ``constraint.sdc``. ``boundary="fixed"`` is the
  earlier method: ``set_input_delay`` / ``set_output_delay`` of 0.2 T on every port, so a
  crossing path is timed only up to that budget. :mod:`memwall.flows.flat_sta` times a small
  design flat, end to end, as the reference.
- **power** on the same netlist: only the module's own cells (children are counted in their
  own run); every net is counted once, at the module of its driver, with its whole load (child
  input pins count as the capacitance they present, summed through the hierarchy; output ports
  carry the mean load their net sees in the parents; wires the design's wire-load model,
  :attr:`memwall.flows.pdk.Pdk.wire_load`, else the library's). Memories are black boxes here:
  their macros' power comes from :mod:`memwall.flows.memory_power` (at the SRAM model's
  energies), with the activity this run gives their pins' nets; the clock tree and the clock
  gating of enable registers from :mod:`memwall.flows.clock_tree` and
  :mod:`memwall.flows.clock_gating`.

Switching activity: VCD names on sources, a zero-delay gate simulation for every other net
(:mod:`memwall.flows.gate_activity`), set on every cell pin. Without a VCD every net gets
``set_power_activity -global`` at :data:`DEFAULT_ACTIVITY` and nothing is propagated.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memwall.progress import Progress, plain_progress

from .activity import widen_signals
from .budget import derive_delays
from .characterise import add_memory_loads
from .clock_gating import clock_gating
from .enable_registers import rtl_enable_bits, scan_registers
from .errors import NetlistError, StaError
from .gate_activity import DEFAULT_ACTIVITY
from .memory_power import IDLE_ACCESS_FRACTION, memory_power
from .memory_view import memory_views
from .netlist import bit_key, boundary_slews, build_hierarchy, read_netlist
from .pdk import Pdk, pdk_cell_library
from .rewrite import ModuleRun, rewrite_module
from .sram_model import with_estimate
from .sta import (
    DEFAULT_SIGNOFF,
    IO_BUDGET,
    SignOff,
    buffer_tree,
    nominal_load,
    nominal_slew,
    run_module,
)

__all__ = ["BOUNDARY_NOTES", "widened", "run_sta"]


#: How ``run_sta`` constrains module boundaries (its ``boundary`` argument), as metrics say.
BOUNDARY_NOTES = {
    "context": "Each module is timed on its own cells; its boundary ports are constrained from "
               "the design around it (memwall.flows.budget): input delay = the latest arrival "
               "there and output delay = period - the earliest required time, from the real "
               "drivers and loads, worst over instances and per bus; the top's ports keep a "
               f"{IO_BUDGET:.0%} I/O budget.",
    "fixed": "Each module is timed on its own cells; a path that crosses a module boundary is "
             f"timed against a {IO_BUDGET:.0%} clock budget at the boundary, not end to end.",
}


def widened(per_module: dict, netlists: dict) -> dict:
    """Activity records flagged ``widen`` (from a narrower module of the same generator,
    :mod:`memwall.flows.workload`) with every bit of the module's ports and named nets that
    they lack (:func:`memwall.flows.activity.widen_signals`)."""
    out = dict(per_module)
    for module, record in per_module.items():
        netlist = netlists.get(module)
        if not record.get("widen") or netlist is None:
            continue
        names = [bit_key(p, i) for p, _d, _r in netlist.ports for i in netlist.port_indices(p)]
        names += [n for aliases in netlist.net_names.values() for n in aliases]
        out[module] = {**record, "signals": widen_signals(record.get("signals", {}), names)}
    return out


def run_sta(synth_dir: Path, manifest: dict, pdk: Pdk, clock_period_ns: float,
            activity: dict | None, *, jobs: int | None = None,
            progress: Progress | None = None, boundary: str = "context",
            memory_idle: float | None = None, signoff: SignOff = DEFAULT_SIGNOFF) -> dict:
    """Timing and power of a hierarchically synthesised design, one unique module at a time,
    timed under ``signoff``'s margins.

    Parameters
    ----------
    synth_dir
        ``build/<cfg>/synth/<pdk>`` with ``netlist/<module>.json`` for every module of
        ``manifest["modules"]``; scripts and logs go to ``synth_dir / "sta"``.
    manifest
        ``manifest.json`` of :func:`memwall.gen.generate` (modules, hierarchy, instances, top).
    pdk
        From :func:`memwall.flows.pdk.find_pdk`.
    clock_period_ns
        The config's clock period; converted to the library time unit for OpenSTA.
    activity
        :func:`memwall.flows.activity.activity_from_vcd` output, or None: then every net gets
        the default global activity (:data:`DEFAULT_ACTIVITY`).
    jobs
        Parallel OpenSTA processes (default: half the CPUs, at most 8).
    progress
        Shows the modules done out of the total (plain lines on stderr by default).
    boundary
        How module boundaries are constrained: "context" (from the design around each module,
        :mod:`memwall.flows.budget`) or "fixed" (:data:`IO_BUDGET` at every port).
    memory_idle
        Share of a macro's access energy charged for a cycle without an access (default
        :data:`memwall.flows.memory_power.IDLE_ACCESS_FRACTION`).

    Returns
    -------
    dict
        ``wns_ns`` (the worst module's slack, signed: positive when timing is met, None when
        no path is timed), ``tns_ns``
        (module TNS x instances, summed), ``critical_path`` (module, slack_ns, startpoint,
        endpoint, text), ``boundary`` (the method and its summary),
        ``power_mw`` (internal, switching, leakage: own power x instances, summed;
        memories: :func:`memwall.flows.memory_power.memory_power`; clock_tree:
        :func:`memwall.flows.clock_tree.clock_tree`; total: all of them), ``clock_gating``
        (:func:`memwall.flows.clock_gating.clock_gating`: the total with the enable registers
        gated),
        ``macros`` (area.json's memory entries, each with its ``power`` record),
        ``power_by_module``, ``activity_source``, ``annotated`` (per source kind how many took
        VCD activity and how many the default, weighted by instances) and ``notes``.
    """
    synth_dir = Path(synth_dir)
    work = synth_dir / "sta"
    cells = pdk_cell_library(pdk)
    netlists = {}
    for module in manifest["modules"]:
        try:
            netlists[module] = read_netlist(synth_dir / "netlist" / f"{module}.json", module)
        except NetlistError as exc:
            raise StaError(f"no netlist for module {module}: {exc}") from None
    load = nominal_load(pdk)
    hier = build_hierarchy(netlists, manifest, cells, load)
    boundary_slews(hier, cells, nominal_slew(pdk))
    instances = manifest["instances"]
    per_module = widened((activity or {}).get("modules", {}), netlists)
    zero = dict.fromkeys(("internal", "switching", "leakage", "total"), 0.0)
    registers = {}   # module -> flip-flops and enable registers (memwall.flows.enable_registers)

    def prepare(module: str):
        """The module's timing and power runs, and its power (in parallel, below)."""
        netlist = netlists[module]
        act = None
        if activity is not None:
            act = dict(per_module.get(module, {}))
            act["children"] = {c.type: per_module.get(c.type, {}) for c in netlist.cells
                               if c.type in netlists}
        # Timing: each output at its largest load over the instances; power: the mean.
        timing_run = rewrite_module(netlist, hier, cells, activity=None, top_output_load=load,
                                    worst_loads=True)
        registers[module] = regs = scan_registers(netlist, cells, netlists)
        regs.yosys = rtl_enable_bits(synth_dir / "work" / "rtl", module,   # cross-check
                                     manifest.get("hierarchy", {}).get(module, {}))
        power_run = rewrite_module(netlist, hier, cells, activity=act, top_output_load=load,
                                   observe=regs.observe)
        if power_run.leaf_cells == 0:   # wiring only: nothing to time or power
            return module, timing_run, zero, power_run
        if boundary == "context":
            # The memories' macro pins load what drives them (the flat run sees them too).
            add_memory_loads(timing_run, netlist, hier.fan[module], views, cells)
        power = run_module(power_run, pdk, clock_period_ns, work, mode="power",
                           global_activity=None if activity is not None else DEFAULT_ACTIVITY)
        return module, timing_run, power, power_run

    def time_module(module: str, run: ModuleRun, delays) -> dict | None:
        if run.leaf_cells == 0:
            return None
        timing = run_module(run, pdk, clock_period_ns, work, mode="timing", delays=delays,
                            signoff=signoff)
        timing["buffered"] = {p: c for p, c in run.output_loads.items() if buffer_tree(c, pdk)}
        return timing

    workers = jobs or max(1, min(8, (os.cpu_count() or 2) // 2))
    modules = [m for m in manifest["modules"] if instances.get(m)]
    progress = progress or plain_progress()
    views = {}
    if boundary == "context":
        views = memory_views(synth_dir, netlists, pdk, cells)
    elif boundary != "fixed":
        raise ValueError(f"boundary must be 'context' or 'fixed', not {boundary!r}")
    with ThreadPoolExecutor(workers) as pool:
        def counted(task, function):
            def run(item):
                result = function(item)
                task.advance(item[0].module if isinstance(item, tuple) else item)
                return result
            return run

        with progress.task(f"OpenSTA power: modules of {manifest['top']}", len(modules)) as task:
            prepared = list(pool.map(counted(task, prepare), modules))
        runs = {module: timing_run for module, timing_run, _p, _r in prepared}
        delays: dict = dict.fromkeys(modules)
        budget_summary = {"method": "fixed", "io_budget": IO_BUDGET}
        if boundary == "context":
            with progress.task("OpenSTA: characterise module boundaries",
                               len(modules) + bool(views)) as task:
                delays, budget_summary = derive_delays(
                    runs, hier, views, pdk, clock_period_ns, work / "characterise",
                    lambda f, items: list(pool.map(counted(task, f), items)))
        with progress.task(f"OpenSTA timing: modules of {manifest['top']}",
                           len(modules)) as task:
            timings = list(pool.map(counted(task, lambda m: time_module(m, runs[m], delays[m])),
                                    modules))
    results = [(module, timing, power, power_run) for (module, _t, power, power_run), timing
               in zip(prepared, timings, strict=True)]
    # Memories (black boxes here): their macros' power, from their pins' activity, at the SRAM
    # model's access energy and leakage (the fakeram7 Liberty states one figure for every size).
    area_json = synth_dir / "area.json"
    macros = json.loads(area_json.read_text()).get("macros", []) if area_json.exists() else []
    memories_mw, macros = memory_power(
        macros, netlists, {module: run for module, _t, _p, run in prepared}, pdk, cells,
        clock_period_ns, slew_s=nominal_slew(pdk),
        idle=IDLE_ACCESS_FRACTION if memory_idle is None else memory_idle,
        priced=lambda macro, model: with_estimate(pdk, macro, model))
    total = dict(zero)
    by_module: dict[str, dict] = {}
    annotated: dict[str, int] = defaultdict(int)
    worst, hold_worst, tns, critical = math.inf, math.inf, 0.0, None
    for module, timing, power, run in results:
        count = instances[module]
        own = {k: v * 1e3 for k, v in power.items()}
        entry = {"instances": count, "per_instance_mw": own, "total_mw": own["total"] * count,
                 "annotated": run.annotated, "simulated_vs_vcd": run.check}
        if activity is not None:
            entry["activity"] = per_module.get(module, {}).get(
                "from", "VCD" if module in per_module else "default")
        for k in total:
            total[k] += own[k] * count
        for k, v in run.annotated.items():
            annotated[k] += v * count
        if timing is not None:
            slack_ns = timing["worst_slack_s"] * 1e9
            entry["worst_slack_ns"] = slack_ns if slack_ns != math.inf else None
            hold_worst = min(hold_worst, timing["hold_slack_s"] * 1e9)
            entry["tns_ns"] = timing["tns_s"] * 1e9
            if timing["buffered"]:
                entry["buffer_trees_modelled"] = {p: round(c * 1e15, 1) for p, c in
                                                  sorted(timing["buffered"].items())}
            tns += timing["tns_s"] * 1e9 * count
            if slack_ns < worst:
                worst = slack_ns
                critical = {"module": module, "slack_ns": slack_ns,
                            "startpoint": timing["startpoint"], "endpoint": timing["endpoint"],
                            "text": timing["path"]}
        by_module[module] = entry
    boxes: dict[str, int] = defaultdict(int)
    for module, netlist in netlists.items():
        for cell in netlist.cells:
            if cell.type not in netlists and cell.type not in cells:
                boxes[cell.type] += instances.get(module, 0)
    summary: dict = {"global_default": list(DEFAULT_ACTIVITY)} if activity is None else {}
    if activity is not None:
        for kind in ("inputs", "registers", "child outputs"):
            a, d = annotated.get(f"{kind} annotated", 0), annotated.get(f"{kind} defaulted", 0)
            summary[kind] = {"from_vcd": a, "not_matched": d,
                             "fraction": round(a / (a + d), 4) if a + d else None}
        summary["not_matched_means"] = {
            "inputs": f"default {list(DEFAULT_ACTIVITY)} (toggles/cycle, duty)",
            "registers": "the activity the simulation gives their D net",
            "child outputs": "the child module's own port activity, else the default"}
        summary["modules_without_vcd"] = sorted(m for m in manifest["modules"]
                                                if instances.get(m) and m not in per_module)
        summary["activity_from"] = {
            m: per_module[m].get("from", "VCD of this module type")
            for m in manifest["modules"] if instances.get(m) and m in per_module}
        summary["propagated"] = ("every other net: zero-delay simulation of each module's own "
                                 "gates from the sources above (VCD traces replayed), set on "
                                 "every cell pin in OpenSTA; OpenSTA's own propagation is not "
                                 "used")
    source = (f"{activity.get('source', 'vcd')}: VCD toggle rates and static probabilities "
              "on input ports, register outputs and child outputs; every other net from a "
              "zero-delay simulation of the gates, all set per pin in OpenSTA"
              if activity is not None else
              f"default: global activity {DEFAULT_ACTIVITY[0]} toggles/cycle, duty "
              f"{DEFAULT_ACTIVITY[1]} on every net (no VCD)")
    total["memories"] = memories_mw
    total["total"] += memories_mw
    # The clock tree the ideal clock leaves out, and clock gating of the enable registers.
    clock = clock_gating(registers, manifest, macros, pdk, clock_period_ns, total["total"])
    total["clock_tree"] = clock["clock_tree_mw"]
    total["total"] += clock["clock_tree_mw"]
    return {
        "wns_ns": worst if worst != math.inf else None,
        "hold_wns_ns": hold_worst if hold_worst != math.inf else None,
        "signoff": signoff.as_dict(pdk),
        "tns_ns": tns,
        "critical_path": critical,
        "power_mw": total,
        "macros": macros,
        "power_by_module": by_module,
        "activity_source": source,
        "annotated": summary,
        "black_boxes": dict(sorted(boxes.items())),
        "clock_gating": clock,
        "boundary": budget_summary,
        "notes": [BOUNDARY_NOTES[boundary],
                  "A boundary load above FO16 is timed behind a modelled FO4 buffer tree "
                  "(Yosys inserts none; see buffer_trees_modelled, fF); high-fan-out nets "
                  "inside a module are timed unbuffered.",
                  "Power is each module's own cells x its instances; a net crossing a boundary "
                  "is counted once, at its driver, with the load on the other side.",
                  "Memories (memwall_ram black boxes) are cut out of the modules' runs: "
                  "power_mw['memories'] is their macros' power at the SRAM model's energies "
                  "from the "
                  "activity of their enable, address and data nets "
                  "(memwall.flows.memory_power; per memory under 'power' in 'macros'), "
                  "included in power_mw['total']; other black boxes have no power model.",
                  "power_mw['clock_tree'] is the estimated clock tree (buffers, clock wire and "
                  "the sink pins OpenSTA's ideal clock does not charge; "
                  "memwall.flows.clock_tree), included in power_mw['total']; clock_gating "
                  "gives the total with and without gating the enable registers."],
    }
