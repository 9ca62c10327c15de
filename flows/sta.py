"""OpenSTA sessions: the script of one run on one rewritten module, the run, its reports.

One OpenSTA run times or powers one module as :func:`memwall.flows.rewrite.rewrite_module`
rewrote it (children cut out, boundary ports loaded): :func:`module_tcl` writes its script
(:func:`prelude_tcl` reads the PDK's OpenSTA views and the netlist and links it; then the
clock, the boundary constraints, the loads and the report), :func:`run_tcl` runs it, and
:func:`parse_timing` / :func:`parse_power` read the figures back (:func:`run_module`: all
three). A PDK's nominal edge and load (:func:`nominal_slew`, :func:`nominal_load`: a chain of
minimum inverters driving FO4) give input ports and the ideal clock their transition and
top-level outputs their load; a boundary load above FO16 is timed behind a modelled FO4
buffer tree (:func:`buffer_tree`).

The hierarchical run, every unique module timed and powered this way and the results
multiplied by instance counts, is :mod:`memwall.flows.hierarchical`; the characterisation of
module boundaries (:mod:`memwall.flows.characterise`) and flat timing
(:mod:`memwall.flows.flat_sta`) build their scripts from the same pieces. Debian's OpenSTA
(2019) has traps that make its power silently wrong; the workarounds, each beside the trap it
fixes, are in :mod:`memwall.flows.opensta2019`.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .errors import StaError
from .gate_activity import DEFAULT_ACTIVITY
from .liberty import pins, table_lookup
from .opensta2019 import (
    check_run,
    liberty_reads,
    operating_conditions_tcl,
    pin_activity_tcl,
    tcl_word,
)
from .pdk import Pdk, pdk_cell_library
from .rewrite import ModuleRun

__all__ = [
    "IO_BUDGET", "NOMINAL_INVERTER", "STA_BINARY", "SignOff", "DEFAULT_SIGNOFF",
    "nominal_slew", "nominal_load", "nominal_fo4_delay", "buffer_tree",
    "module_tcl", "run_tcl", "parse_power", "parse_timing", "run_module",
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

def wires_stated(pdk: Pdk) -> dict | str:
    """The wire estimate every net is timed and powered with, as the sign-off prints it."""
    if pdk.wire_load is not None:
        return pdk.wire_load.as_dict()
    name = pdk_cell_library(pdk).libs[0].library.attr("default_wire_load")
    return f"the Liberty's default wire-load model {name}" if name else \
        "none (the Liberty has no wire-load model)"


def prelude_tcl(pdk: Pdk, netlist_paths: list[Path], top: str) -> list[str]:
    """Read the PDK's OpenSTA views (standard cells first: they set the SDC units), the
    netlists, link ``top``, apply the design's wire-load model (where the PDK's Liberty has
    none, :mod:`memwall.flows.wire_load`), and print what :func:`check_run` checks."""
    std = pdk_cell_library(pdk).libs[0]
    return ["# generated by memwall flows/",
            *liberty_reads(pdk),
            *(f"read_verilog {tcl_word(p)}" for p in netlist_paths),
            f"link_design {top}",
            *(pdk.wire_load.tcl() if pdk.wire_load is not None else []),
            'puts "MEMWALL_UNITS [sta::unit_scale time] [sta::unit_scale capacitance]"',
            *operating_conditions_tcl(std),
            'puts "MEMWALL_OPCOND [sta::operating_conditions max]"']


@dataclass(frozen=True)
class SignOff:
    """The conditions every WNS is timed and printed with (pre-layout: wires estimated).

    ``setup_margin_ps`` and ``hold_margin_ps`` are clock uncertainty on every capture
    (``set_clock_uncertainty``): the margin a pre-layout result keeps for clock skew, jitter and
    the wires it does not see. Decision: 50 ps setup (5 % of a 1 GHz period, the customary
    pre-layout margin) and 10 ps hold; both are arguments of ``memwall synth``. The corner is
    the PDK's (:attr:`memwall.flows.pdk.Pdk.corner`).
    """
    setup_margin_ps: float = 50.0
    hold_margin_ps: float = 10.0

    def as_dict(self, pdk: Pdk) -> dict:
        """The conditions as ``metrics.json`` prints them, on ``pdk``'s corner and wires."""
        return {"setup_margin_ps": self.setup_margin_ps, "hold_margin_ps": self.hold_margin_ps,
                "corner": pdk.corner, "clock": "ideal (uncertainty as above)",
                "netlist": "buffered (memwall.flows.repair)", "wires": wires_stated(pdk)}

    def uncertainty_tcl(self, pdk: Pdk) -> list[str]:
        unit = pdk.time_unit_ps
        return [f"set_clock_uncertainty -setup {self.setup_margin_ps / unit:.6g} [all_clocks]",
                f"set_clock_uncertainty -hold {self.hold_margin_ps / unit:.6g} [all_clocks]"]


#: What a timing run is signed off with unless told otherwise.
DEFAULT_SIGNOFF = SignOff()

#: Tcl that prints what :func:`parse_timing` reads: worst and hold slack, TNS, the worst path.
TIMING_REPORT_TCL = ['puts "MEMWALL_WORST [sta::worst_slack_cmd max]"',
                     'puts "MEMWALL_HOLD [sta::worst_slack_cmd min]"',
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


def clock_tcl(clock_port: str | None, period: float, slew: float,
              margins: list[str] = ()) -> list[str]:
    """``clk`` on the clock port (library time units), or a virtual one for a combinational
    module (for I/O constraints and activity density), with ``margins``
    (:meth:`SignOff.uncertainty_tcl`)."""
    if clock_port:
        return [f"create_clock -name clk -period {period:.6g} [get_ports {clock_port}]",
                f"set_clock_transition {slew:.6g} [all_clocks]", *margins]
    return [f"create_clock -name clk -period {period:.6g}", *margins]


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
               delays: tuple[dict[str, float], dict[str, float]] | None = None,
               signoff: SignOff = DEFAULT_SIGNOFF) -> str:
    """The OpenSTA script of one run (``mode`` "timing" or "power"), timed under ``signoff``.

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
    lines += clock_tcl(run.clock_port, period, slew, signoff.uncertainty_tcl(pdk))
    lines.append(PORTS_PROC)
    if run.input_ports:
        lines += [f"set memwall_inputs [memwall_ports {ports_tcl(run.input_ports)}]",
                  f"set_input_transition {slew:.6g} $memwall_inputs"]
    if mode == "timing" and input_slew_s is None:
        # Each boundary switches with the edge its driver gives it (netlist.boundary_slews).
        by_slew: dict[float, list[str]] = defaultdict(list)
        for port, port_slew in run.input_slews.items():
            if port in run.input_ports:
                by_slew[round(port_slew / time_unit, 3)].append(port)
        lines += [f"set_input_transition {value:.6g} [memwall_ports {ports_tcl(ports)}]"
                  for value, ports in sorted(by_slew.items())]
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
    hold = re.search(r"MEMWALL_HOLD (\S+)", text)
    tns = re.search(r"MEMWALL_TNS (\S+)", text)
    if not worst or not tns:
        raise StaError("no slack figures in the OpenSTA output")
    path = text.split("MEMWALL_PATH_BEGIN", 1)[-1].split("MEMWALL_PATH_END", 1)[0].strip()
    slack = float(worst.group(1))
    start, end = re.search(r"^Startpoint: (.*)$", path, re.M), \
        re.search(r"^Endpoint: (.*)$", path, re.M)
    hold_slack = float(hold.group(1)) if hold else math.inf
    return {"worst_slack_s": slack if abs(slack) < 1e20 else math.inf,   # no path: INF
            "hold_slack_s": hold_slack if abs(hold_slack) < 1e20 else math.inf,
            "tns_s": float(tns.group(1)), "path": path if "Startpoint" in path else "",
            "startpoint": start.group(1).strip() if start else None,
            "endpoint": end.group(1).strip() if end else None}


def run_module(run: ModuleRun, pdk: Pdk, clock_period_ns: float, workdir: Path, *,
               mode: str, global_activity: tuple[float, float] | None = None,
               input_slew_s: float | None = None,
               delays: tuple[dict[str, float], dict[str, float]] | None = None,
               signoff: SignOff = DEFAULT_SIGNOFF) -> dict:
    """One OpenSTA run of a rewritten module: timing (s) or power (W) figures."""
    workdir.mkdir(parents=True, exist_ok=True)
    netlist = workdir / f"{run.module}.{mode}.v"
    netlist.write_text(run.verilog)
    out = run_tcl(module_tcl(run, pdk, clock_period_ns, netlist, mode=mode,
                             global_activity=global_activity, input_slew_s=input_slew_s,
                             delays=delays, signoff=signoff),
                  workdir, f"{run.module}.{mode}")
    check_run(out, pdk)
    return parse_timing(out) if mode == "timing" else parse_power(out)
