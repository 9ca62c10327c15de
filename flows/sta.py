"""OpenSTA timing and power on a hierarchical gate-level netlist, one unique module at a time.

The design at VLEN 2048 is ~10^7 gates flat, so it is never linked flat. Every unique module's
netlist (``<synth_dir>/netlist/<module>.json``, Yosys' own ``write_json`` of the synthesis run,
children left as instances of other modules; :mod:`memwall.flows.netlist`) is analysed on its
own and its results are multiplied by its instance count, which is how hierarchical synthesis
counts area too.

Per module, two OpenSTA runs (a linked design cannot be swapped inside one 2019 session), plus
one characterisation run with ``boundary="context"``, each on the module rewritten by
:func:`memwall.flows.rewrite.rewrite_module`:

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
  carry the mean load their net sees in the parents; wires the library's wire-load model).
  Memories are black boxes here: their fakeram macros' power comes from
  :mod:`memwall.flows.memory_power`, with the activity this run gives their pins' nets.

Switching activity: VCD names on sources, a zero-delay gate simulation for every other net
(:mod:`memwall.flows.gate_activity`), set on every cell pin. Without a VCD every net gets
``set_power_activity -global`` at :data:`DEFAULT_ACTIVITY` and nothing is propagated.

Debian's OpenSTA (2019) has traps that make its power silently wrong; the workarounds, each
beside the trap it fixes, are in :mod:`memwall.flows.opensta2019`.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memwall.progress import Progress, plain_progress

from .activity import widen_signals
from .gate_activity import DEFAULT_ACTIVITY
from .liberty import pdk_cell_library, pins, table_lookup
from .netlist import NetlistError, bit_key, build_hierarchy, read_netlist
from .opensta2019 import (
    StaError,
    check_run,
    liberty_reads,
    operating_conditions_tcl,
    pin_activity_tcl,
    tcl_word,
)
from .pdk import Pdk
from .rewrite import ModuleRun, rewrite_module

__all__ = [
    "StaError", "DEFAULT_ACTIVITY", "IO_BUDGET", "NOMINAL_INVERTER", "STA_BINARY",
    "nominal_slew", "nominal_load", "nominal_fo4_delay", "buffer_tree",
    "module_tcl", "run_tcl", "parse_power", "parse_timing", "run_module", "run_sta",
]

STA_BINARY = os.environ.get("MEMWALL_STA", "sta")
#: Share of the clock period given to a module boundary, as in ``constraint.sdc``.
IO_BUDGET = 0.2
#: Per PDK the minimum inverter: FO4 load and slew of it set the default port load and the
#: input/clock transition (an ideal 0 ps edge would underestimate every first-stage cell).
NOMINAL_INVERTER = {
    "asap7": ("INVx1_ASAP7_75t_R", "A", "Y"),
    "sky130hd": ("sky130_fd_sc_hd__inv_1", "A", "Y"),
    "nangate45": ("INV_X1", "A", "ZN"),
}


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


# --------------------------------------------------------------------------------------------
# Nominal edges and loads of a PDK.

def nominal_load(pdk: Pdk) -> float:
    """Four minimum-inverter inputs (FO4), in F: the load of a top-level output port."""
    cell, pin, _ = NOMINAL_INVERTER[pdk.name]
    return 4 * pdk_cell_library(pdk).info(cell).inputs[pin]


def nominal_slew(pdk: Pdk) -> float:
    """Transition (s) at the end of a chain of minimum inverters each driving FO4.

    Input ports and the ideal clock get this edge rate: an ideal 0 ps edge would understate
    every first-stage cell and reads the power tables outside their range.
    """
    lib_cells = pdk_cell_library(pdk)
    cell, _, out = NOMINAL_INVERTER[pdk.name]
    liberty = lib_cells.liberty_of(cell)
    pin = [p for n, p in pins(liberty.cell(cell)) if n == out][0]
    timing = pin.find("timing")[0]
    load, slew = nominal_load(pdk) / liberty.cap_f, 0.0
    for _ in range(8):   # converges within a few stages, as a real inverter chain does
        slew = 0.5 * sum(table_lookup(timing.find(kind)[0], liberty.library, slew=slew,
                                      load=load) for kind in ("rise_transition",
                                                              "fall_transition"))
    return slew * liberty.time_s


def nominal_fo4_delay(pdk: Pdk) -> float:
    """Delay (s) of the minimum inverter driving FO4 at :func:`nominal_slew`."""
    lib_cells = pdk_cell_library(pdk)
    cell, _, out = NOMINAL_INVERTER[pdk.name]
    liberty = lib_cells.liberty_of(cell)
    pin = [p for n, p in pins(liberty.cell(cell)) if n == out][0]
    timing = pin.find("timing")[0]
    slew, load = nominal_slew(pdk) / liberty.time_s, nominal_load(pdk) / liberty.cap_f
    return 0.5 * sum(table_lookup(timing.find(kind)[0], liberty.library, slew=slew, load=load)
                     for kind in ("cell_rise", "cell_fall")) * liberty.time_s


def buffer_tree(load_f: float, pdk: Pdk) -> tuple[float, int] | None:
    """(load presented, stages) of a fan-out-of-4 buffer tree for a boundary load above FO16.

    Yosys inserts no buffers, so a control signal broadcast to 2048 lanes reaches a module
    boundary as one gate driving ~20 pF: OpenSTA then reports hundreds of ns, a delay any
    physical flow removes with a buffer tree (``repair_design``). Timing models that tree at
    the boundary: the driver sees FO4, the path gets one FO4 delay per stage. Power keeps the
    whole load on the net (the tree's own power is not counted).
    """
    fo4 = nominal_load(pdk)
    if load_f <= 4 * fo4:
        return None
    return fo4, max(1, math.ceil(math.log(load_f / fo4, 4)))


# --------------------------------------------------------------------------------------------
# OpenSTA scripts, runs and reports.

def prelude_tcl(pdk: Pdk, netlist_paths: list[Path], top: str) -> list[str]:
    """Read the PDK's OpenSTA views (standard cells first: they set the SDC units), the
    netlists, link ``top``, and print what :func:`check_run` checks."""
    std = pdk_cell_library(pdk).libs[0]
    return ["# generated by memwall flows/",
            *liberty_reads(pdk),
            *(f"read_verilog {tcl_word(p)}" for p in netlist_paths),
            f"link_design {top}",
            'puts "MEMWALL_UNITS [sta::unit_scale time] [sta::unit_scale capacitance]"',
            *operating_conditions_tcl(std),
            'puts "MEMWALL_OPCOND [sta::operating_conditions max]"']


#: Tcl that prints what :func:`parse_timing` reads: worst slack, TNS, the worst path.
TIMING_REPORT_TCL = ['puts "MEMWALL_WORST [sta::worst_slack_cmd max]"',
                     'puts "MEMWALL_TNS [sta::total_negative_slack_cmd max]"',
                     'puts "MEMWALL_PATH_BEGIN"',
                     "report_checks -path_delay max -digits 4 -fields {slew cap}",
                     'puts "MEMWALL_PATH_END"']


#: Tcl proc turning a list of port names into port objects (names may hold brackets).
PORTS_PROC = ("proc memwall_ports {names} {\n  set out {}\n  foreach n $names "
              "{ lappend out [get_ports $n] }\n  return $out\n}")


def ports_tcl(names) -> str:
    """A Tcl list of port names, each braced (``{a[3]} {b}``)."""
    return "{" + " ".join("{" + p + "}" for p in names) + "}"


def clock_tcl(clock_port: str | None, period: float, slew: float) -> list[str]:
    """``clk`` on the clock port (library time units), or a virtual one for a combinational
    module (for I/O constraints and activity density)."""
    if clock_port:
        return [f"create_clock -name clk -period {period:.6g} [get_ports {clock_port}]",
                f"set_clock_transition {slew:.6g} [all_clocks]"]
    return [f"create_clock -name clk -period {period:.6g}"]


def boundary_trees(run: ModuleRun, pdk: Pdk) -> dict[str, tuple[float, float]]:
    """Output port -> (load presented, delay in library time units) of the FO4 buffer tree
    :func:`buffer_tree` models behind it, for every port whose load needs one."""
    stage = nominal_fo4_delay(pdk) / (pdk.time_unit_ps * 1e-12)
    trees = {}
    for port, load in run.output_loads.items():
        tree = buffer_tree(load, pdk)
        if tree:
            trees[port] = (tree[0], tree[1] * stage)
    return trees


def load_tcl(run: ModuleRun, pdk: Pdk, *, timing: bool) -> list[str]:
    """Pin and wire loads of the output ports; for timing, a load that needs a buffer tree is
    replaced by what the tree presents (its delay goes into the output delay)."""
    cap_unit = pdk_cell_library(pdk).libs[0].cap_f
    trees = boundary_trees(run, pdk) if timing else {}
    lines = []
    for port, load in sorted(run.output_loads.items()):
        load = trees[port][0] if port in trees else load
        lines.append(f"set_load -pin_load {load / cap_unit:.6g} [get_ports {{{port}}}]")
    for port, load in sorted(run.output_wires.items()):
        lines.append(f"set_load -wire_load {load / cap_unit:.6g} [get_ports {{{port}}}]")
    return lines


def module_tcl(run: ModuleRun, pdk: Pdk, clock_period_ns: float, netlist_path: Path, *,
               mode: str, global_activity: tuple[float, float] | None = None,
               input_slew_s: float | None = None,
               delays: tuple[dict[str, float], dict[str, float]] | None = None) -> str:
    """The OpenSTA script of one run (``mode`` "timing" or "power").

    ``delays``: (input delay per input port, output delay per output port), in library time
    units, as :mod:`memwall.flows.budget` derives them from the design around the module; a
    port missing from them is unconstrained. None: the flat :data:`IO_BUDGET` on every port.
    A modelled buffer tree's delay (:func:`boundary_trees`) is added to a port's output delay.
    """
    time_unit = pdk.time_unit_ps * 1e-12
    period = pdk.to_library_time(clock_period_ns)
    slew = (nominal_slew(pdk) if input_slew_s is None else input_slew_s) / time_unit
    budget = IO_BUDGET * period
    if delays is None:
        delays = (dict.fromkeys(run.input_ports, budget), dict.fromkeys(run.output_loads, budget))
    input_delays, output_delays = delays
    lines = prelude_tcl(pdk, [netlist_path], run.module)
    lines += clock_tcl(run.clock_port, period, slew)
    lines.append(PORTS_PROC)
    if run.input_ports:
        lines += [f"set memwall_inputs [memwall_ports {ports_tcl(run.input_ports)}]",
                  f"set_input_transition {slew:.6g} $memwall_inputs"]
    by_delay: dict[float, list[str]] = defaultdict(list)
    for port in run.input_ports:
        if port in input_delays:
            by_delay[round(input_delays[port], 4)].append(port)
    free = [p for p in run.input_ports if p not in input_delays]
    if free:   # nothing launches there (a constant, a memory without a model): OpenSTA would
        # otherwise start paths at them with a default arrival of 0
        lines.append(f"set_false_path -from [memwall_ports {ports_tcl(free)}]")
    for delay, ports in sorted(by_delay.items()):
        lines.append(f"set_input_delay {delay:.6g} -clock clk "
                     f"[memwall_ports {ports_tcl(ports)}]")
    trees = boundary_trees(run, pdk) if mode == "timing" else {}
    by_delay = defaultdict(list)
    for port in run.output_loads:
        if port in output_delays:
            extra = trees[port][1] if port in trees else 0.0
            by_delay[round(output_delays[port] + extra, 4)].append(port)
    for delay, ports in sorted(by_delay.items()):
        lines.append(f"set_output_delay {delay:.6g} -clock clk "
                     f"[memwall_ports {ports_tcl(ports)}]")
    lines += load_tcl(run, pdk, timing=mode == "timing")
    if mode == "timing":
        lines += TIMING_REPORT_TCL
    else:
        if global_activity is not None:
            lines.append(f"set_power_activity -global -activity {global_activity[0]:.6g} "
                         f"-duty {global_activity[1]:.6g}")
        else:
            # What OpenSTA cannot reach from an annotated source falls back to the default.
            lines.append(f"set_power_activity -input -activity {DEFAULT_ACTIVITY[0]:.6g} "
                         f"-duty {DEFAULT_ACTIVITY[1]:.6g}")
            for port, (toggles, duty) in sorted(run.port_activity.items()):
                lines.append(f"set_power_activity -input_ports [get_ports {{{port}}}] "
                             f"-activity {toggles:.6g} -duty {min(1.0, max(0.0, duty)):.6g}")
            # Every cell pin, the flow's own simulated activity (see pin_activity_tcl).
            lines += pin_activity_tcl(run.pin_activity)
        lines += ['puts "MEMWALL_POWER_BEGIN"', "report_power -digits 6",
                  'puts "MEMWALL_POWER_END"']
    return "\n".join(lines) + "\n"


def run_tcl(script: str, workdir: Path, tag: str) -> str:
    """Run OpenSTA on ``script`` (kept with its log in ``workdir``); returns the output."""
    workdir.mkdir(parents=True, exist_ok=True)
    tcl, log = workdir / f"{tag}.tcl", workdir / f"{tag}.log"
    tcl.write_text(script)
    proc = subprocess.run([STA_BINARY, "-no_init", "-exit", str(tcl)],
                          capture_output=True, text=True, cwd=workdir)
    out = proc.stdout + proc.stderr
    log.write_text(out)
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    if proc.returncode != 0 or errors:
        raise StaError(f"OpenSTA {tag} failed (rc {proc.returncode}), log {log}:\n"
                       + "\n".join(errors[:10] or out.splitlines()[-10:]))
    return out


def parse_power(text: str) -> dict[str, float]:
    """The Total row of ``report_power`` (W): internal, switching, leakage, total."""
    block = text.split("MEMWALL_POWER_BEGIN", 1)[-1].split("MEMWALL_POWER_END", 1)[0]
    for line in block.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == "Total":
            try:
                values = [float(x) for x in fields[1:5]]
            except ValueError:
                continue
            return dict(zip(("internal", "switching", "leakage", "total"), values, strict=True))
    raise StaError("no Total row in the report_power output")


def parse_timing(text: str) -> dict:
    """Worst slack and TNS (s, as OpenSTA's Tcl API returns them) and the critical path."""
    worst = re.search(r"MEMWALL_WORST (\S+)", text)
    tns = re.search(r"MEMWALL_TNS (\S+)", text)
    if not worst or not tns:
        raise StaError("no slack figures in the OpenSTA output")
    path = text.split("MEMWALL_PATH_BEGIN", 1)[-1].split("MEMWALL_PATH_END", 1)[0].strip()
    slack = float(worst.group(1))
    start, end = re.search(r"^Startpoint: (.*)$", path, re.M), \
        re.search(r"^Endpoint: (.*)$", path, re.M)
    return {"worst_slack_s": slack if abs(slack) < 1e20 else math.inf,   # no path: INF
            "tns_s": float(tns.group(1)), "path": path if "Startpoint" in path else "",
            "startpoint": start.group(1).strip() if start else None,
            "endpoint": end.group(1).strip() if end else None}


def run_module(run: ModuleRun, pdk: Pdk, clock_period_ns: float, workdir: Path, *,
               mode: str, global_activity: tuple[float, float] | None = None,
               input_slew_s: float | None = None,
               delays: tuple[dict[str, float], dict[str, float]] | None = None) -> dict:
    """One OpenSTA run of a rewritten module: timing (s) or power (W) figures."""
    workdir.mkdir(parents=True, exist_ok=True)
    netlist = workdir / f"{run.module}.{mode}.v"
    netlist.write_text(run.verilog)
    out = run_tcl(module_tcl(run, pdk, clock_period_ns, netlist, mode=mode,
                             global_activity=global_activity, input_slew_s=input_slew_s,
                             delays=delays),
                  workdir, f"{run.module}.{mode}")
    check_run(out, pdk)
    return parse_timing(out) if mode == "timing" else parse_power(out)


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
            memory_idle: float | None = None) -> dict:
    """Timing and power of a hierarchically synthesised design, one unique module at a time.

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
        memories: :func:`memwall.flows.memory_power.memory_power`; total: all of them),
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
    instances = manifest["instances"]
    per_module = widened((activity or {}).get("modules", {}), netlists)
    zero = dict.fromkeys(("internal", "switching", "leakage", "total"), 0.0)

    def prepare(module: str):
        """The module's timing and power runs, and its power (in parallel, below)."""
        netlist = netlists[module]
        act = None
        if activity is not None:
            act = dict(per_module.get(module, {}))
            act["children"] = {c.type: per_module.get(c.type, {}) for c in netlist.cells
                               if c.type in netlists}
        timing_run = rewrite_module(netlist, hier, cells, activity=None, top_output_load=load)
        power_run = rewrite_module(netlist, hier, cells, activity=act, top_output_load=load) \
            if activity is not None else timing_run
        if power_run.leaf_cells == 0:   # wiring only: nothing to time or power
            return module, timing_run, zero, power_run
        if boundary == "context":
            # The memories' macro pins load what drives them (the flat run sees them too).
            if timing_run is power_run:
                timing_run = rewrite_module(netlist, hier, cells, activity=None,
                                            top_output_load=load)
            add_memory_loads(timing_run, netlist, hier.fan[module], views, cells)
        power = run_module(power_run, pdk, clock_period_ns, work, mode="power",
                           global_activity=None if activity is not None else DEFAULT_ACTIVITY)
        return module, timing_run, power, power_run

    def time_module(module: str, run: ModuleRun, delays) -> dict | None:
        if run.leaf_cells == 0:
            return None
        timing = run_module(run, pdk, clock_period_ns, work, mode="timing", delays=delays)
        timing["buffered"] = {p: c for p, c in run.output_loads.items() if buffer_tree(c, pdk)}
        return timing

    workers = jobs or max(1, min(8, (os.cpu_count() or 2) // 2))
    modules = [m for m in manifest["modules"] if instances.get(m)]
    progress = progress or plain_progress()
    views = {}
    if boundary == "context":
        from .budget import derive_delays
        from .characterise import add_memory_loads
        from .memory_view import memory_views

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
    # Memories (black boxes here): their fakeram macros' power, from their pins' activity.
    from .memory_power import IDLE_ACCESS_FRACTION, memory_power

    area_json = synth_dir / "area.json"
    macros = json.loads(area_json.read_text()).get("macros", []) if area_json.exists() else []
    memories_mw, macros = memory_power(
        macros, netlists, {module: run for module, _t, _p, run in prepared}, pdk, cells,
        clock_period_ns, slew_s=nominal_slew(pdk),
        idle=IDLE_ACCESS_FRACTION if memory_idle is None else memory_idle)
    total = dict(zero)
    by_module: dict[str, dict] = {}
    annotated: dict[str, int] = defaultdict(int)
    worst, tns, critical = math.inf, 0.0, None
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
    return {
        "wns_ns": worst if worst != math.inf else None,
        "tns_ns": tns,
        "critical_path": critical,
        "power_mw": total,
        "macros": macros,
        "power_by_module": by_module,
        "activity_source": source,
        "annotated": summary,
        "black_boxes": dict(sorted(boxes.items())),
        "boundary": budget_summary,
        "notes": [BOUNDARY_NOTES[boundary],
                  "A boundary load above FO16 is timed behind a modelled FO4 buffer tree "
                  "(Yosys inserts none; see buffer_trees_modelled, fF); high-fan-out nets "
                  "inside a module are timed unbuffered.",
                  "Power is each module's own cells x its instances; a net crossing a boundary "
                  "is counted once, at its driver, with the load on the other side.",
                  "Memories (memwall_ram black boxes) are cut out of the modules' runs: "
                  "power_mw['memories'] is their fakeram macros' Liberty power from the "
                  "activity of their enable, address and data nets "
                  "(memwall.flows.memory_power; per memory under 'power' in 'macros'), "
                  "included in power_mw['total']; other black boxes have no power model."],
    }
