"""Gate netlists: Yosys' own ``write_json`` of a synthesised module, as bits and cells.

Synthesis (:mod:`memwall.flows.synth`) writes, from the same Yosys run, ``netlist/<module>.v``
(the Verilog that OpenSTA-style tools read) and ``netlist/<module>.json``, from which
:func:`read_netlist` builds a :class:`Netlist`. Yosys numbers every net bit; wires joined by an
``assign`` share their bit numbers there, so aliases need no resolving here. A hand-written
Verilog netlist (the calibration's reference circuits, tests) goes through Yosys the same way
(:func:`netlist_from_verilog`).

On top of the netlists: who drives and who loads every net (:func:`fanout`), and the boundary
loads of every module derived from the whole hierarchy (:func:`build_hierarchy`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .constants import YOSYS_MAIN
from .errors import NetlistError
from .liberty import CellLibrary, pins, table_lookup

__all__ = ["Cell", "Netlist", "netlist_from_json", "read_netlist", "register_names_from_json",
           "REGISTER_NAMES_SUFFIX",
           "netlist_from_verilog", "yosys_json", "bit_key", "Fanout", "fanout", "is_leaf",
           "Hierarchy", "build_hierarchy", "boundary_slews", "top_down"]


@dataclass
class Cell:
    """A cell instance: leaf (Liberty) cell, child module or black box."""
    name: str
    type: str
    pins: dict[str, list]    # pin -> bits, MSB first; a bit is a net id or "0"/"1"/"x"


@dataclass
class Netlist:
    """One module as bits. Every net is an int; wires joined by ``assign`` are one net."""
    name: str
    ports: list[tuple[str, str, tuple[int, int] | None]]   # (name, direction, (msb, lsb))
    port_bits: dict[str, list]           # port -> bits, MSB first
    net_names: dict[int, list[str]]      # net -> its names, the most readable first
    cells: list[Cell]
    #: flip-flop cell -> the names of the register bit it holds (its state, not inverted), as
    #: synthesis recorded them before mapping (:func:`register_names_from_json`); empty when
    #: the netlist came without them
    register_names: dict[str, list[str]] = field(default_factory=dict)

    def port_indices(self, port: str) -> list[int | None]:
        """Bit indices of ``port`` in the order of :attr:`port_bits`."""
        rng = {p: r for p, _, r in self.ports}[port]
        return [None] if rng is None else _range(*rng)


def _range(msb: int, lsb: int) -> list[int]:
    step = -1 if msb >= lsb else 1
    return list(range(msb, lsb + step, step))


def bit_key(name: str, index: int | None) -> str:
    """The name of one bit of a signal: ``name[index]``, or ``name`` for a scalar."""
    return name if index is None else f"{name}[{index}]"


def _declared_range(entry: dict) -> tuple[int, int] | None:
    """(msb, lsb) as declared, or None for a one-bit wire (Yosys writes those unranged)."""
    width, offset = len(entry["bits"]), entry.get("offset", 0)
    if width == 1:
        return None
    if entry.get("upto"):
        return offset, offset + width - 1
    return offset + width - 1, offset


def _bit(b) -> int | str:
    """A Yosys JSON bit: a net number, or a constant ("z" reads as "x")."""
    return b if isinstance(b, int) else ("x" if b in ("x", "z") else b)


def _msb_first(entry: dict) -> list:
    return [_bit(b) for b in reversed(entry["bits"])]


def netlist_from_json(data: dict, module: str | None = None) -> Netlist:
    """The :class:`Netlist` of ``module`` (default: the only one) in Yosys JSON ``data``."""
    modules = {name: m for name, m in data["modules"].items()
               if not m.get("attributes", {}).get("blackbox")}
    if module is None:
        if len(modules) != 1:
            raise NetlistError(f"name the module: the netlist holds {sorted(modules)}")
        module = next(iter(modules))
    if module not in modules:
        raise NetlistError(f"no module {module} in the netlist (modules: {sorted(modules)})")
    mod = modules[module]
    ports = [(name, p["direction"], _declared_range(p)) for name, p in mod["ports"].items()]
    port_bits = {name: _msb_first(p) for name, p in mod["ports"].items()}
    names: dict[int, list[str]] = defaultdict(list)
    hidden: set[str] = set()
    for name, net in mod["netnames"].items():
        rng = _declared_range(net)
        keys = [name] if rng is None else [bit_key(name, i) for i in _range(*rng)]
        if net.get("hide_name"):
            hidden.update(keys)
        for key, b in zip(keys, _msb_first(net), strict=True):
            if isinstance(b, int):
                names[b].append(key)
    for alias in names.values():
        # Readable names first (not Yosys' own, no leading underscore, no $): reports and the
        # matching of VCD names use them.
        alias.sort(key=lambda s: (s in hidden or s.startswith("_") or "$" in s, len(s), s))
    cells = [Cell(name, c["type"], {pin: [_bit(b) for b in reversed(bits)]
                                    for pin, bits in c["connections"].items()})
             for name, c in mod["cells"].items()]
    return Netlist(module, ports, port_bits, dict(names), cells)


#: File beside ``netlist/<module>.json`` with the module's flip-flops before technology mapping
REGISTER_NAMES_SUFFIX = "registers.json"

#: Generic flip-flops whose mapped state is their Q whatever the library: no asynchronous set
#: or reset, which a library without such a cell gets by inverting D and Q (``dfflegalize``)
_PLAIN_FLOP = re.compile(r"\$_(DFF_[PN]|DFFE_[PN]{2}|SDFF_[PN]{2}[01]|SDFFC?E_[PN]{2}[01][PN])_")


def register_names_from_json(data: dict, module: str) -> dict[str, list[str]]:
    """Flip-flop cell -> the names of its register bit, from the Yosys JSON of ``module``
    written before ``dfflibmap`` (the flip-flops and the wires on their Q, nothing else).

    Yosys keeps a register's name on the wire its flip-flop drives, but mapping to a library
    whose flip-flops have only QN puts an inverter on that wire, and ABC then merges the
    inverter (and the name) into the logic after it. The cells keep their names through
    mapping, so this is how the flow still knows which VCD signal a flip-flop holds.
    Flip-flops with an asynchronous set or reset are left out: their mapped state may be the
    complement.
    """
    mod = data.get("modules", {}).get(module)
    if mod is None:
        return {}
    bit_names: dict[int, list[str]] = defaultdict(list)
    for name, net in mod.get("netnames", {}).items():
        if net.get("hide_name"):
            continue
        rng = _declared_range(net)
        keys = [name] if rng is None else [bit_key(name, i) for i in _range(*rng)]
        for key, b in zip(keys, _msb_first(net), strict=True):
            if isinstance(b, int):
                bit_names[b].append(key)
    out = {}
    for cell_name, cell in mod.get("cells", {}).items():
        q = cell.get("connections", {}).get("Q", [])
        if _PLAIN_FLOP.fullmatch(cell.get("type", "")) and len(q) == 1 and q[0] in bit_names:
            out[cell_name] = sorted(bit_names[q[0]], key=lambda s: (len(s), s))
    return out


def read_netlist(path: Path, module: str | None = None) -> Netlist:
    """The :class:`Netlist` of ``module`` in a Yosys ``write_json`` file, with the register
    names synthesis wrote beside it (``<module>.registers.json``), if it did."""
    path = Path(path)
    if not path.exists():
        raise NetlistError(f"no netlist {path}")
    netlist = netlist_from_json(json.loads(path.read_text()), module)
    names = path.with_name(f"{netlist.name}.{REGISTER_NAMES_SUFFIX}")
    if names.exists():
        netlist.register_names = register_names_from_json(json.loads(names.read_text()),
                                                          netlist.name)
    return netlist


def yosys_json(text: str) -> dict:
    """Yosys' ``write_json`` of structural Verilog ``text`` (``read_verilog`` only: cells of
    unknown type stay as they are, so no cell library is needed)."""
    return json.loads(_yosys_json(text))


@lru_cache(maxsize=32)
def _yosys_json(text: str) -> str:
    with tempfile.TemporaryDirectory(prefix="memwall-netlist-") as tmp:
        root = Path(tmp)
        (root / "netlist.v").write_text(text)
        proc = subprocess.run(
            [sys.executable, "-c", YOSYS_MAIN, "-q", "-p",
             "read_verilog netlist.v; write_json netlist.json"],
            cwd=root, env=dict(os.environ, YOWASP_MOUNT=f"/={root}"),
            capture_output=True, text=True)
        out = root / "netlist.json"
        if proc.returncode != 0 or not out.exists():
            raise NetlistError(f"Yosys could not read the netlist (status {proc.returncode}):\n"
                               + (proc.stdout + proc.stderr)[-2000:])
        return out.read_text()


def netlist_from_verilog(text: str, module: str | None = None) -> Netlist:
    """A structural Verilog netlist read by Yosys (``read_verilog``; ``write_json``)."""
    return netlist_from_json(yosys_json(text), module)


# --------------------------------------------------------------------------------------------
# Hierarchy: port input capacitance bottom-up, output port load top-down.

@dataclass
class Fanout:
    """Who drives and who loads every net of one module."""
    leaf_loads: dict[int, list[tuple[Cell, str]]]
    child_loads: dict[int, list[tuple[Cell, str, int, object]]]   # cell, pin, bit, child net
    leaf_drivers: dict[int, list[tuple[Cell, str]]]
    child_drivers: dict[int, list[tuple[Cell, str, int, object]]]


def is_leaf(cell: Cell, cells: CellLibrary, modules) -> bool:
    """A cell of the Liberty files (not a child module, not a black box such as a memory)."""
    return cell.type not in modules and cell.type in cells


def fanout(netlist: Netlist, cells: CellLibrary, modules: dict[str, Netlist]) -> Fanout:
    """Index the loads and drivers of every net (leaf cells and child-module pins apart).

    A black box (a cell neither in the Liberty files nor a module, e.g. ``memwall_ram``) is
    handled as a child whose pins drive the nets no leaf cell or child drives, and load the
    others; it presents no capacitance.
    """
    out = Fanout(defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list))
    boxes = []
    for cell in netlist.cells:
        if cell.type not in modules and cell.type not in cells:
            boxes.append(cell)
            continue
        if cell.type in modules:
            sub = modules[cell.type]
            dirs = {p: d for p, d, _ in sub.ports}
            for pin, bits in cell.pins.items():
                for k, n in enumerate(bits):
                    if not isinstance(n, int):
                        continue
                    sub_bits = sub.port_bits.get(pin, [])
                    target = sub_bits[k - len(bits) + len(sub_bits)] \
                        if len(sub_bits) >= len(bits) - k else None
                    entry = (cell, pin, k, target)
                    if dirs.get(pin) == "input":
                        out.child_loads[n].append(entry)
                    else:
                        out.child_drivers[n].append(entry)
            continue
        info = cells.info(cell.type)
        for pin, bits in cell.pins.items():
            for k, n in enumerate(bits):
                if not isinstance(n, int):
                    continue
                bit_pin = pin if len(bits) == 1 else f"{pin}[{len(bits) - 1 - k}]"
                if bit_pin in info.inputs:
                    out.leaf_loads[n].append((cell, bit_pin))
                elif bit_pin in info.outputs:
                    out.leaf_drivers[n].append((cell, bit_pin))
    for cell in boxes:
        for pin, bits in cell.pins.items():
            for k, n in enumerate(bits):
                if isinstance(n, int):
                    driven = n in out.leaf_drivers or n in out.child_drivers
                    (out.child_loads if driven else out.child_drivers)[n].append(
                        (cell, pin, k, None))
    return out


@dataclass
class Hierarchy:
    """Every module's netlist and the boundary loads derived from the whole hierarchy."""
    netlists: dict[str, Netlist]
    children: dict[str, dict[str, int]]
    instances: dict[str, int]
    top: str
    fan: dict[str, Fanout] = field(default_factory=dict)
    in_cap: dict[str, dict[int, float]] = field(default_factory=dict)    # module -> net -> F
    out_load: dict[str, dict[int, float]] = field(default_factory=dict)  # module -> net -> F
    #: the largest over the module's instances: what timing takes (power takes the mean)
    out_load_max: dict[str, dict[int, float]] = field(default_factory=dict)
    #: transition (s) at each input port bit, the slowest over instances, and at each output
    #: port bit at its largest load (:func:`boundary_slews`)
    in_slew: dict[str, dict[int, float]] = field(default_factory=dict)
    out_slew: dict[str, dict[int, float]] = field(default_factory=dict)


def _net_load(fan: Fanout, n: int, cells: CellLibrary, child_in_cap) -> float:
    """What net ``n`` of a module loads inside it: its leaf pins, its child inputs
    (``child_in_cap(child) -> {net: F}``) and the wire of its fan-out."""
    leaf, kids = fan.leaf_loads.get(n, []), fan.child_loads.get(n, [])
    return (sum(cells.info(c.type).inputs[p] for c, p in leaf)
            + sum(child_in_cap(c.type).get(t, 0.0) for c, _p, _k, t in kids
                  if isinstance(t, int))
            + cells.wire_cap(len(leaf) + len(kids)))


def build_hierarchy(netlists: dict[str, Netlist], manifest: dict, cells: CellLibrary,
                    top_output_load: float) -> Hierarchy:
    """Input capacitance of every input port bit, and the mean and the largest load of every
    output port bit over the module's instances.

    A port's input capacitance is the pins it reaches inside the module plus, through child
    instances, inside them, plus the wire load of its fan-out there (the net has no driver in
    that module, so nothing else counts it). An output port's load is the mean, over the
    module's instances, of what its net drives in the parent (pins, child inputs, wire, and the
    parent's own output load when the net leaves the parent too); the top's outputs drive
    ``top_output_load``. Power takes the mean (:attr:`Hierarchy.out_load`); timing the largest
    (:attr:`Hierarchy.out_load_max`), as the instance that drives the most is the one that
    sets the module's slack.
    """
    hier = Hierarchy(netlists, manifest.get("hierarchy", {}), manifest["instances"],
                     manifest["top"])
    for m, n in netlists.items():
        hier.fan[m] = fanout(n, cells, netlists)

    def in_cap(module: str) -> dict[int, float]:
        if module not in hier.in_cap:
            netlist, fan = netlists[module], hier.fan[module]
            caps = {}
            for p, d, _ in netlist.ports:
                for n in netlist.port_bits[p] if d == "input" else []:
                    if isinstance(n, int):
                        caps[n] = _net_load(fan, n, cells, in_cap)
            hier.in_cap[module] = caps
        return hier.in_cap[module]

    for m in netlists:
        in_cap(m)
    sums: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    maxes: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    weights: dict[str, float] = defaultdict(float)
    for module in top_down(hier):
        if weights.get(module):   # every parent is done: the mean and the largest are final
            hier.out_load[module] = {t: v / weights[module] for t, v in sums[module].items()}
            hier.out_load_max[module] = dict(maxes[module])
        netlist, fan = netlists[module], hier.fan[module]
        own = hier.out_load.get(module, {})
        own_max = hier.out_load_max.get(module, {})
        out_ports = {n for p, d, _ in netlist.ports if d != "input"
                     for n in netlist.port_bits[p] if isinstance(n, int)}
        count = hier.instances.get(module, 0)
        for cell in netlist.cells:
            if cell.type in netlists:
                weights[cell.type] += count
        for n, drivers in fan.child_drivers.items():
            load = _net_load(fan, n, cells, in_cap)
            largest = load
            if n in out_ports:
                load += own.get(n, top_output_load)
                largest += own_max.get(n, top_output_load)
            for cell, _pin, _k, target in drivers:
                if isinstance(target, int):
                    sums[cell.type][target] += count * load
                    if count:
                        maxes[cell.type][target] = max(maxes[cell.type][target], largest)
    return hier


def boundary_slews(hier: Hierarchy, cells: CellLibrary, top_input_slew: float) -> None:
    """The transition at every boundary of the hierarchy (``hier.in_slew``, ``hier.out_slew``).

    A net's transition is its driver's Liberty ``rise_transition``/``fall_transition`` (the
    slower, over the cell's arcs) at the net's load, the largest over instances as timing takes
    it, with the driver's own input at ``top_input_slew`` (one stage of history, not the whole
    path's). A child's output takes the transition its driver inside gives; an input port the
    slowest of what reaches it over its instances; the top's inputs ``top_input_slew``.
    """
    memo: dict[tuple, float] = {}

    def drive(cell: str, pin: str, load: float) -> float:
        key = (cell, pin, round(load * 1e18))
        if key not in memo:
            liberty = cells.liberty_of(cell)
            group = next(g for n, g in pins(liberty.cell(cell), liberty.library) if n == pin)
            slews = [table_lookup(t, liberty.library, slew=top_input_slew / liberty.time_s,
                                  load=load / liberty.cap_f)
                     for arc in group.find("timing")
                     for kind in ("rise_transition", "fall_transition") for t in arc.find(kind)]
            memo[key] = max(slews, default=top_input_slew / liberty.time_s) * liberty.time_s
        return memo[key]

    def net_slew(module: str, n: int, outside: float) -> float | None:
        """The transition of net ``n`` of ``module`` with ``outside`` more load on it."""
        fan = hier.fan[module]
        for cell, pin in fan.leaf_drivers.get(n, []):
            load = _net_load(fan, n, cells, lambda child: hier.in_cap.get(child, {}))
            return drive(cell.type, pin, load + outside)
        for cell, _pin, _k, target in fan.child_drivers.get(n, []):
            if isinstance(target, int) and cell.type in hier.netlists:
                return out_slew(cell.type).get(target)
        return None

    def out_slew(module: str) -> dict[int, float]:
        if module not in hier.out_slew:
            netlist = hier.netlists[module]
            external = hier.out_load_max.get(module, {})
            found = {}
            for p, d, _ in netlist.ports:
                for n in netlist.port_bits[p] if d != "input" else []:
                    if isinstance(n, int):
                        slew = net_slew(module, n, external.get(n, 0.0))
                        if slew is not None:
                            found[n] = slew
            hier.out_slew[module] = found
        return hier.out_slew[module]

    hier.in_slew[hier.top] = {}
    for module in top_down(hier):
        netlist, fan = hier.netlists[module], hier.fan[module]
        own_in = hier.in_slew.setdefault(module, {})
        inputs = {n for p, d, _ in netlist.ports if d == "input"
                  for n in netlist.port_bits[p] if isinstance(n, int)}
        for n, loads in fan.child_loads.items():
            slew = own_in.get(n, top_input_slew) if n in inputs else \
                net_slew(module, n, hier.out_load_max.get(module, {}).get(n, 0.0))
            if slew is None:
                continue
            for cell, _pin, _k, target in loads:
                if isinstance(target, int) and cell.type in hier.netlists:
                    child = hier.in_slew.setdefault(cell.type, {})
                    child[target] = max(child.get(target, 0.0), slew)


def top_down(hier: Hierarchy) -> list[str]:
    """Modules ordered so that every parent comes before its children."""
    parents = defaultdict(set)
    for m, netlist in hier.netlists.items():
        for cell in netlist.cells:
            if cell.type in hier.netlists:
                parents[cell.type].add(m)
    order: list[str] = []
    seen: set[str] = set()

    def visit(m: str) -> None:
        if m not in seen:
            seen.add(m)
            for p in sorted(parents[m]):
                visit(p)
            order.append(m)

    for m in hier.netlists:
        visit(m)
    return order
