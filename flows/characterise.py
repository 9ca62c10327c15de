"""Step 1 of :mod:`memwall.flows.budget`: one module's boundary, grouped, and its own cells
characterised between the groups in one OpenSTA run.

A module's timing run (:func:`memwall.flows.rewrite.rewrite_module`) has ports for its own
inputs and outputs and for the pins of the children it cut out. :func:`boundary` groups them:
per bit for a port up to :data:`BITWISE_MAX` bits wide (which bit of a bus arrives late, and
which one has the long path behind it, matters), per bus above; per child instance for a type
with up to :data:`PER_INSTANCE_MAX` instances in the module, grouped over all instances above
(a lane array). It also finds the plain wires, nets no own cell drives, that the timing run
cannot see.

:func:`characterise` then times the module's own cells with zero external delay, each source
group launching on a virtual clock of its own (same period and waveform as ``clk``): one
timing update gives, per sink port, the latest arrival from each source group (the
combinational delay) and from the module's registers (clock to output), and, per source port,
the latest arrival its own register endpoints allow (``clk`` capture, setup included).
Memories are their macro views (:mod:`memwall.flows.memory_view`), all characterised in one
run (:func:`memories_run`). Times are in the standard cells' library unit (ps on ASAP7).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .constants import MEMORY_CELL
from .errors import StaError
from .memory_view import MemoryView, memory_pin_caps
from .netlist import Fanout, Netlist, bit_key
from .opensta2019 import check_run
from .pdk import Pdk
from .rewrite import BOUNDARY_PREFIX, ModuleRun
from .sta import (
    PORTS_PROC,
    boundary_trees,
    clock_tcl,
    load_tcl,
    nominal_load,
    nominal_slew,
    ports_tcl,
    prelude_tcl,
    run_tcl,
)

__all__ = ["Group", "Boundary", "BITWISE_MAX", "PER_INSTANCE_MAX", "BUS", "MEMORIES", "SEP",
           "group_bit", "boundary", "memories_run", "add_memory_loads", "Characterisation",
           "characterise_tcl", "parse_characterisation", "characterise"]

INF = math.inf
#: (kind, child type, port, bit, instance): kind "in"/"out" (the module's own ports, child
#: type and instance ""), "ci"/"co" (a child's input/output pin); bit the port's bit index, or
#: :data:`BUS` for a port grouped whole; instance the child's instance name, or "" for a type
#: with more than :data:`PER_INSTANCE_MAX` instances here, grouped over all of them.
Group = tuple
#: A child type with this many instances in a module or fewer is timed per instance there
#: (two multipliers in series are two groups, not a loop); more (a lane array) are grouped.
PER_INSTANCE_MAX = 8
#: A port this wide or narrower is timed per bit (which bit of a bus arrives late, and which
#: one has the long path behind it, matters: a count through a chain of splitters); a wider
#: one as a whole, so the clocks of a characterisation stay few.
BITWISE_MAX = 64
BUS = -1
_CUT_PORT = re.compile(rf"^{BOUNDARY_PREFIX}(co|ci)(\d+)(?:_|$)")
#: The memories' characterisation run: one module holding every memory view.
MEMORIES = "memwall_memories"
SEP = "__"


@dataclass
class Boundary:
    """One module's timing-run ports in their groups, and its plain wires."""
    module: str
    sources: dict[str, Group]                  # run input port -> its group
    sinks: dict[str, tuple[Group, ...]]        # run output port -> the groups it reaches
    wires: set[tuple[Group, Group]]            # joined by a net that no own cell drives
    trees: dict[str, float] = field(default_factory=dict)   # output port -> tree delay
    merged: dict[str, int] = field(default_factory=dict)    # child type grouped -> instances


def _child_type(module: str, cell, modules, views: dict[tuple[str, str], MemoryView]):
    if cell.type in modules:
        return cell.type
    if cell.type == MEMORY_CELL and (module, cell.name) in views:
        return views[(module, cell.name)].wrapper
    return None   # another black box: nothing timed through it


def group_bit(index: int | None, width: int) -> int:
    """The bit of a group: the port's bit index when it is timed per bit, else :data:`BUS`."""
    return (index or 0) if width <= BITWISE_MAX else BUS


def boundary(run: ModuleRun, netlist: Netlist, fan: Fanout, netlists: dict[str, Netlist],
             views: dict[tuple[str, str], MemoryView], pdk: Pdk) -> Boundary:
    """The groups of ``run``'s ports (see the module docstring) and the module's plain wires."""
    module = netlist.name
    width = {p: len(netlist.port_bits[p]) for p, _d, _r in netlist.ports}
    bit_port = {bit_key(p, i): ("", p, group_bit(i, width[p]), "") for p, _d, _r in netlist.ports
                for i in netlist.port_indices(p)}
    counts: dict[str, int] = defaultdict(int)
    for cell in netlist.cells:
        if cell.type in netlists:
            counts[cell.type] += 1
    merged = {t: n for t, n in counts.items() if n > PER_INSTANCE_MAX}

    def instance(cell) -> str:
        return "" if cell.type in merged else cell.name

    pin_indices: dict[tuple[str, str], list] = {}   # a lane array asks for the same pins

    def child_groups(kind: str, entries) -> list[Group]:
        groups = []
        for cell, pin, k, _t in entries:
            child = _child_type(module, cell, netlists, views)
            if child is None:
                continue
            n = len(cell.pins[pin])
            if child in netlists:   # the child's own bit index of the pin
                indices = pin_indices.get((child, pin))
                if indices is None:
                    indices = pin_indices[(child, pin)] = netlists[child].port_indices(pin)
                pos = k - n + len(indices)
                index = indices[pos] if 0 <= pos < len(indices) else k
                groups.append((kind, child, pin, group_bit(index, len(indices)), instance(cell)))
            else:                   # a memory view: ports [width-1:0]
                groups.append((kind, child, pin, group_bit(n - 1 - k, n), ""))
        return list(dict.fromkeys(groups))

    sources: dict[str, Group] = {}
    for port in run.input_ports:
        cut = _CUT_PORT.match(port)
        if cut:
            groups = child_groups("co", fan.child_drivers.get(int(cut.group(2)), []))
            if groups:
                sources[port] = groups[0]
        elif port in bit_port:
            sources[port] = ("in", *bit_port[port])
    sinks: dict[str, tuple[Group, ...]] = {}
    for port in run.output_loads:
        cut = _CUT_PORT.match(port)
        if cut:
            groups = child_groups("ci", fan.child_loads.get(int(cut.group(2)), []))
            if groups:
                sinks[port] = tuple(groups)
        elif port in bit_port:
            sinks[port] = (("out", *bit_port[port]),)
    # Nets that no own cell drives: a wire from an input or a child output straight to child
    # inputs or output ports (the timing run does not see these).
    net_in: dict[int, Group] = {}
    net_out: dict[int, list[Group]] = defaultdict(list)
    for p, d, _r in netlist.ports:
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            if isinstance(n, int):
                if d == "input":
                    net_in[n] = ("in", "", p, group_bit(i, width[p]), "")
                else:
                    net_out[n].append(("out", "", p, group_bit(i, width[p]), ""))
    wires: set[tuple[Group, Group]] = set()
    for n in set(net_in) | set(fan.child_drivers):
        if fan.leaf_drivers.get(n):
            continue
        srcs = [net_in[n]] if n in net_in else []
        srcs += child_groups("co", fan.child_drivers.get(n, []))
        dsts = net_out.get(n, []) + child_groups("ci", fan.child_loads.get(n, []))
        wires.update((s, d) for s in srcs for d in dsts)
    trees = {p: t[1] for p, t in boundary_trees(run, pdk).items()}
    return Boundary(module, sources, sinks, wires, trees, merged)


def memories_run(views: list[MemoryView], pdk: Pdk) -> tuple[ModuleRun, Boundary]:
    """One timing run holding every memory view, its ports ``<wrapper>__<PORT>``, and their
    groups (``("in"|"out", "", "<wrapper>__<PORT>", bit, "")``)."""
    ports, decls, body, inputs, outputs = ["clk"], ["  input clk;"], [], [], []
    sources, sinks = {}, {}
    for view in views:
        conns = []
        for port in sorted(view.widths):
            width, direction = view.widths[port], view.directions[port]
            if port in ("RD_CLK", "WR_CLK"):
                conns.append(f".{port}(clk)")   # one bit
                continue
            name = f"{view.wrapper}{SEP}{port}"
            ports.append(name)
            decls.append(f"  {direction} [{width - 1}:0] {name};")
            conns.append(f".{port}({name})")
            kind = "in" if direction == "input" else "out"
            for i in range(width):
                group = (kind, "", name, group_bit(i, width), "")
                if kind == "in":
                    inputs.append(f"{name}[{i}]")
                    sources[f"{name}[{i}]"] = group
                else:
                    outputs.append(f"{name}[{i}]")
                    sinks[f"{name}[{i}]"] = (group,)
        body.append(f"  {view.wrapper} m_{view.wrapper} ({', '.join(conns)});")
    verilog = "".join(v.verilog for v in views) + \
        f"module {MEMORIES} ({', '.join(ports)});\n" + "\n".join(decls + body) + "\nendmodule\n"
    load = nominal_load(pdk)
    run = ModuleRun(MEMORIES, verilog, "clk", inputs, dict.fromkeys(outputs, load),
                    {}, {}, {}, {}, len(views))
    return run, Boundary(MEMORIES, sources, sinks, set())


# --------------------------------------------------------------------------------------------
# Step 1: characterisation.

_DUMP_TCL = r"""
proc memwall_arrivals {ports clocks} {
  foreach name $ports {
    set pin [sta::get_port_pin_error "pin" $name]
    set out {}
    foreach clk $clocks {
      set best ""
      foreach vertex [$pin vertices] {
        foreach clk_rf {rise fall} {
          foreach rf {rise fall} {
            set a [lindex [$vertex arrivals_clk_delays $rf $clk $clk_rf 4] 1]
            if {$a ne "-INF" && $a ne "INF" && ($best eq "" || $a > $best)} { set best $a }
          }
        }
      }
      if {$best ne ""} { lappend out [get_name $clk] $best }
    }
    if {$out ne {}} { puts "MEMWALL_A $name $out" }
  }
}
proc memwall_requireds {ports clk} {
  foreach name $ports {
    set pin [sta::get_port_pin_error "pin" $name]
    set best ""
    foreach vertex [$pin vertices] {
      foreach rf {rise fall} {
        set r [lindex [$vertex requireds_clk_delays $rf $clk rise 4] 1]
        if {$r ne "INF" && $r ne "-INF" && ($best eq "" || $r < $best)} { set best $r }
      }
    }
    if {$best ne ""} { puts "MEMWALL_R $name $best" }
  }
}
"""


@dataclass
class Characterisation:
    """One module's own cells between its port groups (library time units)."""
    clk_arrival: dict[Group, float]              # sink group -> latest arrival from registers
    comb: dict[Group, dict[Group, float]]        # source -> sink -> latest arrival
    required: dict[Group, float]                 # source group -> latest arrival allowed


def characterise_tcl(run: ModuleRun, groups: Boundary, pdk: Pdk, clock_period_ns: float,
                     netlist_path: Path) -> tuple[str, dict[str, Group]]:
    """The characterisation script and the virtual clock of each source group."""
    period = pdk.to_library_time(clock_period_ns)
    slew = nominal_slew(pdk) / (pdk.time_unit_ps * 1e-12)
    lines = prelude_tcl(pdk, [netlist_path], run.module)
    lines += clock_tcl(run.clock_port, period, slew)
    lines += [PORTS_PROC, _DUMP_TCL]
    if run.input_ports:
        lines.append(f"set_input_transition {slew:.6g} "
                     f"[memwall_ports {ports_tcl(run.input_ports)}]")
    by_group: dict[Group, list[str]] = defaultdict(list)
    for port, group in groups.sources.items():
        by_group[group].append(port)
    clocks: dict[str, Group] = {}
    for k, (group, ports) in enumerate(sorted(by_group.items())):
        name = f"memwall_src{k}"
        clocks[name] = group
        lines += [f"create_clock -name {name} -period {period:.6g}   ;# {group}",
                  f"set_input_delay 0 -clock {name} [memwall_ports {ports_tcl(ports)}]"]
    lines += load_tcl(run, pdk, timing=True)
    lines.append('puts "MEMWALL_WORST [sta::worst_slack_cmd max]"')   # a full update
    sinks = sorted(groups.sinks)
    if sinks:
        lines.append(f"memwall_arrivals {ports_tcl(sinks)} [all_clocks]")
    for name, group in clocks.items():
        lines.append(f"memwall_requireds {ports_tcl(by_group[group])} [get_clocks {name}]")
    return "\n".join(lines) + "\n", clocks


def parse_characterisation(text: str, groups: Boundary,
                           clocks: dict[str, Group]) -> Characterisation:
    """The figures :func:`characterise_tcl`'s script printed, per group."""
    char = Characterisation({}, defaultdict(dict), {})
    for line in text.splitlines():
        if line.startswith("MEMWALL_A "):
            fields = line.split()
            port, pairs = fields[1], fields[2:]
            if port not in groups.sinks:
                raise StaError(f"characterisation of {groups.module}: unknown port {port}")
            extra = groups.trees.get(port, 0.0)
            for clock, value in zip(pairs[::2], pairs[1::2], strict=True):
                arrival = float(value) + extra
                for sink in groups.sinks[port]:
                    if clock == "clk":
                        char.clk_arrival[sink] = max(char.clk_arrival.get(sink, -INF), arrival)
                    elif clock in clocks:
                        row = char.comb[clocks[clock]]
                        row[sink] = max(row.get(sink, -INF), arrival)
        elif line.startswith("MEMWALL_R "):
            _, port, value = line.split()
            source = groups.sources[port]
            char.required[source] = min(char.required.get(source, INF), float(value))
    char.comb = dict(char.comb)
    return char


# --------------------------------------------------------------------------------------------
# Running it.

def add_memory_loads(run: ModuleRun, netlist: Netlist, fan: Fanout,
                     views: dict[tuple[str, str], MemoryView], cells) -> None:
    """Add to ``run``'s cut ports the input capacitance of the memory macros they drive (a
    black box presents none in :func:`memwall.flows.netlist.build_hierarchy`)."""
    caps = {key: memory_pin_caps(view, cells) for key, view in views.items()
            if key[0] == netlist.name}
    for port in list(run.output_loads):
        cut = _CUT_PORT.match(port)
        if not cut or cut.group(1) != "ci":
            continue
        for cell, pin, k, _t in fan.child_loads.get(int(cut.group(2)), []):
            if cell.type == MEMORY_CELL and (netlist.name, cell.name) in caps:
                width = len(cell.pins[pin])
                run.output_loads[port] += caps[(netlist.name, cell.name)].get(
                    f"{pin}[{width - 1 - k}]", 0.0)


def characterise(run: ModuleRun, groups: Boundary, pdk: Pdk, clock_period_ns: float,
                 work: Path) -> Characterisation:
    """Step 1 for one module (nothing to run for a module of wires only)."""
    if run.leaf_cells == 0:
        return Characterisation({}, {}, {})
    work.mkdir(parents=True, exist_ok=True)
    netlist = work / f"{run.module}.characterise.v"
    netlist.write_text(run.verilog)
    script, clocks = characterise_tcl(run, groups, pdk, clock_period_ns, netlist)
    out = run_tcl(script, work, f"{run.module}.characterise")
    check_run(out, pdk)
    return parse_characterisation(out, groups, clocks)
