"""One module as OpenSTA sees it: children cut out, boundary loads, every pin's activity.

The design is analysed one unique module at a time (:mod:`memwall.flows.hierarchical`).
:func:`rewrite_module` turns a module's :class:`~memwall.flows.netlist.Netlist` into the
Verilog of its own cells only: a child output that drives this module's cells becomes a new
input port, a child input driven by them a new output port loaded with the child's input
capacitance (:class:`~memwall.flows.netlist.Hierarchy`). With a VCD's activity, it also finds
the activity of every source and simulates every other net
(:mod:`memwall.flows.gate_activity`), for the power run to set on every cell pin.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from .gate_activity import (
    DEFAULT_ACTIVITY,
    buffered_nets,
    compare,
    invert_trace,
    register_match,
    register_state_nets,
    simulate_activity,
    vcd_lookup,
)
from .liberty import CellLibrary
from .netlist import Hierarchy, Netlist, bit_key, fanout, is_leaf

__all__ = ["BOUNDARY_PREFIX", "ModuleRun", "rewrite_module", "verilog_name"]

#: Names of the boundary ports the flow adds start with this.
BOUNDARY_PREFIX = "memwall_"


@dataclass
class ModuleRun:
    """The rewritten netlist of one module and the constraints and activities it needs."""
    module: str
    verilog: str
    clock_port: str | None
    input_ports: list[str]                           # non-clock input bits, OpenSTA names
    output_loads: dict[str, float]                   # output port bit -> pin load (F)
    output_wires: dict[str, float]                   # output port bit -> wire load (F)
    port_activity: dict[str, tuple[float, float]]    # input bit -> (toggles/cycle, duty)
    pin_activity: dict[str, tuple[float, float]]     # "inst/pin" -> (toggles/cycle, duty)
    annotated: dict[str, int]                        # source kind -> count
    leaf_cells: int = 0
    check: dict | None = None                        # simulated vs VCD on non-source nets
    input_slews: dict[str, float] = field(default_factory=dict)   # input bit -> transition (s)


def verilog_name(name: str) -> str:
    """``name`` as a Verilog identifier (escaped when it is not a plain one)."""
    return name if re.fullmatch(r"[A-Za-z_][\w$]*", name) else "\\" + name + " "


def _port_ref(port: str, index: int | None) -> str:
    return verilog_name(port) if index is None else f"{verilog_name(port)}[{index}]"


def rewrite_module(netlist: Netlist, hier: Hierarchy | None, cells: CellLibrary, *,
                   activity: dict | None, default: tuple[float, float] = DEFAULT_ACTIVITY,
                   top_output_load: float = 0.0, seed: int = 1,
                   worst_loads: bool = False, observe=None) -> ModuleRun:
    """The module as OpenSTA sees it, with loads and (given ``activity``) every pin's activity.

    Child instances are removed. A child output that drives this module's own cells becomes a
    new input port (``memwall_co<net>``); a child input driven by this module's cells becomes a
    new output port (``memwall_ci<net>``) loaded with the child's input capacitance.

    ``activity`` is this module's entry of :func:`memwall.flows.activity.activity_from_vcd`
    (``signals``, ``traces``, ``trace_cycles``) with, under ``"children"``, the child modules'
    entries, whose port activities back up the names of this module's wires; None leaves the
    activity to a global default. Sources (input ports, child outputs, registers) take the VCD
    activity their names find, else ``default``; :func:`simulate_activity` gives every other
    net its activity, replaying the traced sources cycle by cycle; ``observe`` is handed to
    :func:`simulate_activity` (the simulated streams, for the clock-gating estimate).
    """
    modules = hier.netlists if hier else {}
    fan = hier.fan[netlist.name] if hier and netlist.name in hier.fan \
        else fanout(netlist, cells, modules)
    act = activity or {}
    signals, traces = act.get("signals", {}), act.get("traces", {})
    counts: dict[str, int] = defaultdict(int)

    lookup = vcd_lookup(signals)

    # Every port bit: the first input port on a net names it.
    port_ref: dict[int, str] = {}
    for p, _d, _ in sorted(netlist.ports, key=lambda x: x[1] != "input"):
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            if isinstance(n, int) and n not in port_ref:
                port_ref[n] = _port_ref(p, i)
    net_ref = dict(port_ref)
    new_inputs: list[str] = []
    new_outputs: list[str] = []
    assigns: list[tuple[str, str]] = []
    port_activity: dict[str, tuple[float, float]] = {}
    output_loads: dict[str, float] = {}
    output_wires: dict[str, float] = {}
    input_slews: dict[str, float] = {}
    port_on_net: dict[int, str] = {}
    wire = cells.wire_cap
    outputs_on: dict[int, int] = defaultdict(int)
    for p, d, _ in netlist.ports:
        for n in netlist.port_bits[p] if d != "input" else []:
            outputs_on[n] += 1
    sources: dict[int, tuple[float, float]] = {}
    source_traces: dict[int, list[str]] = {}

    def place_load(port: str, n, pin_load: float) -> None:
        """Pin load on a port, plus the wire-load estimate of its net (once per net).

        OpenSTA drops the wire-load model on a net once a port on it has a ``set_load``,
        so the flow states the wire with ``-wire_load``, at the net's full fan-out.
        """
        output_loads[port] = pin_load
        if isinstance(n, int) and n not in port_on_net:
            port_on_net[n] = port
            output_wires[port] = wire(len(fan.leaf_loads.get(n, [])) + outputs_on[n]
                                      + len(fan.child_loads.get(n, [])))

    def source(n: int, kind: str, found, fallback: tuple[float, float] | None = None) -> None:
        counts[f"{kind} annotated" if found or fallback else f"{kind} defaulted"] += 1
        if found:
            sources[n] = found[1]
            if found[0] in traces:
                source_traces[n] = traces[found[0]]
        else:
            sources[n] = fallback or default

    def ref(n) -> str:
        if not isinstance(n, int):
            return "1'b1" if n == "1" else "1'b0"
        return net_ref.setdefault(n, f"n{n}")

    for n, drivers in sorted(fan.child_drivers.items()):
        if not fan.leaf_loads.get(n):
            continue   # nothing of this module's own is driven: nothing to time or power
        port = _boundary_port("co", n, netlist)
        if n in net_ref:   # the net is a port of this module as well
            assigns.append((net_ref[n], port))
        net_ref[n] = port
        new_inputs.append(port)
        cell, _pin, _k, target = drivers[0]
        if hier and isinstance(target, int) and target in hier.out_slew.get(cell.type, {}):
            input_slews[port] = hier.out_slew[cell.type][target]
        fallback = None
        found = lookup(netlist.net_names.get(n, []))
        if found is None and activity:
            cell, pin, k, _ = drivers[0]
            width = len(cell.pins[pin])
            sub = act.get("children", {}).get(cell.type, {}).get("signals", {})
            for key in ([f"{pin}[{width - 1 - k}]"] if width > 1 else [pin, f"{pin}[0]"]):
                if key in sub:
                    fallback = tuple(sub[key])
                    break
        source(n, "child outputs", found, fallback)
        port_activity[port] = sources[n]
    for n, loads in sorted(fan.child_loads.items()):
        if not fan.leaf_drivers.get(n):
            continue
        port = _boundary_port("ci", n, netlist)
        new_outputs.append(port)
        assigns.append((port, ref(n)))
        place_load(port, n, sum(hier.in_cap.get(c.type, {}).get(t, 0.0) for c, _p, _k, t in loads
                                if isinstance(t, int)) if hier else 0.0)
    clock_port = "clk" if "clk" in netlist.port_bits else None
    clock_net = netlist.port_bits["clk"][0] if clock_port else None
    input_bits: list[str] = []
    for p, d, _ in netlist.ports:
        if d != "input" or p == clock_port:
            continue
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            bit = bit_key(p, i)
            input_bits.append(bit)
            if hier and n in hier.in_slew.get(netlist.name, {}):
                input_slews[bit] = hier.in_slew[netlist.name][n]
            if isinstance(n, int):
                source(n, "inputs", lookup([bit] + netlist.net_names.get(n, [])))
                port_activity[bit] = sources[n]
    registers: dict[int, tuple[int, bool]] = {}
    if activity is not None:
        buffers = buffered_nets(netlist, cells, modules)
        for cell in netlist.cells:
            info = cells.info(cell.type) if is_leaf(cell, cells, modules) else None
            if info is None or not info.is_sequential:
                continue
            states = register_state_nets(cell, info)
            match = register_match(cell, info, netlist, buffers, lookup)
            counts["registers annotated" if match else "registers defaulted"] += 1
            if match:
                key, toggles, duty, named_inverted = match
                state_duty = 1.0 - duty if named_inverted else duty
                for net, inv in states:
                    sources[net] = (toggles, 1.0 - state_duty if inv else state_duty)
                    if key in traces:
                        source_traces[net] = [
                            invert_trace(w, act.get("trace_cycles", 0))
                            if inv != named_inverted else w for w in traces[key]]
                continue
            d_bits = cell.pins.get(info.data_pin or "", [])
            for net, inv in states:   # unmatched: the state follows D, as simulated
                if d_bits and isinstance(d_bits[0], int):
                    registers[net] = (d_bits[0], inv != info.data_inverted)
    # Output loads: the mean over the module's instances (power), or the largest (timing).
    loads = (hier.out_load_max if worst_loads else hier.out_load).get(netlist.name, {}) \
        if hier else {}
    for p, d, _ in netlist.ports:
        if d == "input":
            continue
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            place_load(bit_key(p, i), n,
                       loads.get(n, top_output_load) if isinstance(n, int) else 0.0)
    for p, d, _ in netlist.ports:   # output bits sharing a net with another port
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            if d != "input" and net_ref.get(n) != _port_ref(p, i):
                assigns.append((_port_ref(p, i), ref(n)))
    # Instance names OpenSTA can take in a pin path as they are.
    names = {id(c): c.name if re.fullmatch(r"[A-Za-z_][\w$]*", c.name) else f"{BOUNDARY_PREFIX}c{k}"
             for k, c in enumerate(netlist.cells)}
    pin_activity: dict[str, tuple[float, float]] = {}
    check = None
    if activity is not None and any(is_leaf(c, cells, modules) for c in netlist.cells):
        nets = simulate_activity(netlist, cells, modules, sources, registers=registers,
                                 default=default, traces=source_traces,
                                 trace_cycles=act.get("trace_cycles", 0), seed=seed,
                                 observe=observe)
        for cell in netlist.cells:
            if not is_leaf(cell, cells, modules):
                continue
            for pin, bits in cell.pins.items():
                if len(bits) == 1 and isinstance(bits[0], int) and bits[0] in nets \
                        and bits[0] != clock_net:
                    pin_activity[f"{names[id(cell)]}/{pin}"] = nets[bits[0]]
        gates = {n for n, drivers in fan.leaf_drivers.items()
                 if any(not cells.info(c.type).is_sequential for c, _p in drivers)}
        check = compare(netlist, {n: v for n, v in nets.items() if n in gates}, sources,
                         lookup)
    body, leaf_cells = [], 0
    for cell in netlist.cells:
        if not is_leaf(cell, cells, modules):
            continue   # children and black boxes are cut out (their pins became ports)
        leaf_cells += 1
        conns = []
        for pin, bits in cell.pins.items():
            if len(bits) == 1:
                conns.append(f".{pin}({ref(bits[0])})")
            else:
                conns.append(f".{pin}({{{', '.join(ref(b) for b in bits)}}})" if bits
                             else f".{pin}()")
        body.append(f"  {cell.type} {verilog_name(names[id(cell)])} ({', '.join(conns)});")
    header = [verilog_name(p) for p, _, _ in netlist.ports] + new_inputs + new_outputs
    lines = [f"module {netlist.name} ({', '.join(header)});"]
    for p, d, r in netlist.ports:
        lines.append(f"  {d} {f'[{r[0]}:{r[1]}] ' if r else ''}{verilog_name(p)};")
    lines += [f"  input {p};" for p in new_inputs] + [f"  output {p};" for p in new_outputs]
    lines += [f"  wire {w};" for w in sorted({r for r in net_ref.values()
                                              if re.fullmatch(r"n\d+", r)},
                                             key=lambda x: int(x[1:]))]
    lines += body
    lines += [f"  assign {a} = {b};" for a, b in dict.fromkeys(assigns) if a != b]
    lines.append("endmodule")
    return ModuleRun(netlist.name, "\n".join(lines) + "\n", clock_port,
                     input_bits + new_inputs, output_loads, output_wires, port_activity,
                     pin_activity, dict(counts), leaf_cells, check, input_slews)


def _boundary_port(kind: str, net: int, netlist: Netlist) -> str:
    """A readable, unique port name for a cut child pin: ``memwall_co12_l_value_3_``."""
    name = re.sub(r"\W", "_", (netlist.net_names.get(net) or [""])[0])[:40]
    return f"{BOUNDARY_PREFIX}{kind}{net}_{name}" if name and not name.startswith("_") \
        else f"{BOUNDARY_PREFIX}{kind}{net}"
