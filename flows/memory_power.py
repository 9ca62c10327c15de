"""Memory power: every ``memwall_ram`` black box as the fakeram macros synthesis charged it.

Synthesis leaves each memory as a black box and charges it the area of an arrangement of
``rows x cols`` copies of one fakeram macro (``area.json`` ``macros``, :mod:`.synth`).
OpenSTA's per-module runs cut black boxes out, so their power is computed here, from the
macro's Liberty and the memory's own pins' activity in the module's power run:

- **Clock energy** per clocked cycle: the ``clk`` pin's ``internal_power``, rise + fall
  (fakeram states no ``when``: one access per clock edge pair), in the Liberty energy unit
  ``capacitive_load_unit x voltage_unit^2`` (:func:`energy_unit_j`).
- **Accesses per cycle**: the duty of the net on the memory's ``RD_EN`` pin (reads) and of
  its ``WR_EN`` bits (writes; per column of macros, the busiest bit of its slice), from the
  flow's per-net activity of the module (VCD names and the gate-level replay,
  :mod:`.gate_activity`). An enable tied high in the RTL reads 1: a read every cycle.
- **An access** clocks one row of macros (``cols`` copies; the row decoder's enables keep
  the other rows deselected). A **deselected** macro-cycle (the other rows, and every cycle
  without an access) is charged :data:`IDLE_ACCESS_FRACTION` of the clock energy.
- **Pin energy**: each input pin's ``internal_power`` (mean of rise and fall, per transition)
  x the toggles of the net on it x the macros it reaches (address and enables: every macro of
  the port; data and write mask: one per row); ``rd_out``'s x RD_DATA's toggles.
- **Leakage**: ``cell_leakage_power`` x ``leakage_power_unit`` x ``rows x cols``.
- **The SRAM model** (``priced``, :mod:`memwall.flows.sram_model`) replaces the clock energy
  and the leakage of the Liberty where it covers the PDK: ORFS's fakeram7 states one energy
  and one leakage for every size.
- **1R1W memories** (every generator's: one read and one write port; the fakeram macros have
  one read/write port): :data:`TWO_PORT_METHOD`. Each port is its own copy of the arrangement
  for the dynamic energy, as :mod:`.memory_view` times it: a read and a write in one cycle
  cost two 1RW accesses, and each port's idle cycles are charged on their own. Leakage and
  area are one arrangement's (a two-port bit cell is larger and leaks more: both are lower
  bounds).

Each memory's record (``power_of_memory``) goes into its ``macros`` entry of metrics.json; the
sum over memories x instances is ``power_mw["memories"]`` (:func:`memory_power`).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .constants import MEMORY_CELL
from .gate_activity import DEFAULT_ACTIVITY
from .liberty import Liberty, LibertyGroup, pins, table_lookup
from .netlist import Netlist, bit_key, is_leaf
from .rewrite import BOUNDARY_PREFIX, ModuleRun

__all__ = ["IDLE_ACCESS_FRACTION", "TWO_PORT_METHOD", "MacroModel", "macro_model",
           "energy_unit_j", "net_activity", "power_of_memory", "memory_power"]

#: Share of a macro's clock (access) energy charged for a clocked cycle in which it is not
#: accessed (chip enable low, or another row of the arrangement accessed). fakeram's Liberty
#: charges the clock pin every cycle whatever ``ce_in`` is (1.0: an access every cycle, what
#: OpenSTA would report); a compiled SRAM gates its internal clock with CE and only its clock
#: input buffer and control latches still toggle: compiler Liberty files state that as a
#: ``when : "!CE"`` clock-pin energy of a few percent of an access, and datasheets list a
#: deselected ("standby") power near the leakage. 0.05 is a round figure at the top of that
#: range; ``every_cycle_mw`` in each memory's record gives the fakeram-literal figure.
IDLE_ACCESS_FRACTION = 0.05

#: How a memory with one read and one write port is costed on one-port (1RW) macros.
TWO_PORT_METHOD = ("1R1W on 1RW macros: read and write ports each charged as the 1RW "
                   "arrangement (a cycle with a read and a write = two 1RW accesses; idle "
                   "cycles charged per port); leakage and area of one arrangement")

#: The memory's pins on the macro's: (side, memory pin, macro pin, reaches) where ``reaches``
#: is "all" (every macro of the port's arrangement) or "row" (one macro per row: a bus split
#: over the columns).
_PIN_MAP = (("read", "RD_ADDR", "addr_in", "all"), ("read", "RD_EN", "ce_in", "all"),
            ("read", "RD_DATA", "rd_out", "one"),
            ("write", "WR_ADDR", "addr_in", "all"), ("write", "WR_EN", "ce_in", "first"),
            ("write", "WR_EN", "we_in", "first"), ("write", "WR_EN", "w_mask_in", "row"),
            ("write", "WR_DATA", "wd_in", "row"))


def energy_unit_j(liberty: Liberty) -> float:
    """The Liberty energy unit in joules: capacitive_load_unit x voltage_unit^2."""
    volt = liberty._scale("voltage_unit", "v", "1v")
    return liberty.cap_f * volt * volt


@dataclass(frozen=True)
class MacroModel:
    """Power figures of one macro type, from its Liberty file."""
    name: str
    depth: int
    width: int
    clock_j: float                  # clk internal energy per clocked cycle, rise + fall (J)
    leakage_w: float                # cell_leakage_power (W)
    pin_j: dict[str, float]         # pin or bus -> internal energy per transition of a bit (J)


def _table(group: LibertyGroup, library: LibertyGroup, slew: float) -> float:
    return table_lookup(group, library, slew=slew, load=0.0)


def _pin_energy(pin: LibertyGroup, library: LibertyGroup, slew: float) -> float | None:
    """Mean of rise and fall internal energy per transition over a pin's ``internal_power``
    groups (library units); None without any."""
    groups = pin.find("internal_power")
    if not groups:
        return None
    values = []
    for group in groups:
        parts = [_table(t, library, slew) for kind in ("rise_power", "fall_power")
                 for t in group.find(kind)]
        if parts:
            values.append(sum(parts) / len(parts))
    return sum(values) / len(values) if values else None


@cache
def macro_model(name: str, depth: int, width: int, liberty_path: Path,
                slew_s: float = 0.0) -> MacroModel:
    """A macro's clock energy per cycle, leakage and pin energies, at input slew ``slew_s``.

    The clock pin's groups without ``when`` add up (rise + fall per cycle); a library that
    only states conditional clock groups gets their mean.
    """
    liberty = Liberty(liberty_path)
    cell = liberty.cell(name)
    lib = liberty.library
    slew = slew_s / liberty.time_s
    unit = energy_unit_j(liberty)
    clock = 0.0
    pin_j: dict[str, float] = {}
    for pin_name, pin in pins(cell, lib):
        base = re.sub(r"\[\d+\]$", "", pin_name)
        if str(pin.attr("clock", "false")).lower() == "true":
            groups = pin.find("internal_power")
            plain = [g for g in groups if g.attr("when") is None]
            energies = [sum(_table(t, lib, slew) for kind in ("rise_power", "fall_power")
                            for t in g.find(kind)) for g in plain or groups]
            if energies:   # unconditional groups add up; conditional ones: their mean
                clock = sum(energies) if plain else sum(energies) / len(energies)
            continue
        if base not in pin_j:
            energy = _pin_energy(pin, lib, slew)
            if energy is not None:
                pin_j[base] = energy * unit
    for bus in cell.find("bus"):   # a bus's own internal_power, for every bit
        if bus.args[0] not in pin_j:
            energy = _pin_energy(bus, lib, slew)
            if energy is not None:
                pin_j[bus.args[0]] = energy * unit
    leak = float(cell.attr("cell_leakage_power", 0.0)) * liberty.leakage_w
    return MacroModel(name, depth, width, clock * unit, leak, pin_j)


def net_activity(netlist: Netlist, run: ModuleRun | None, cells, modules):
    """``lookup(net) -> (toggles per cycle, duty)`` from a module's power run: the activity the
    flow set on a leaf-cell pin on the net (VCD or gate-level replay), else on the input port
    or cut child output it is; constants exactly; None when the net is none of these."""
    pins_of: dict[int, list[str]] = defaultdict(list)   # every leaf pin on the net
    for k, cell in enumerate(netlist.cells):
        if not is_leaf(cell, cells, modules):
            continue
        name = cell.name if re.fullmatch(r"[A-Za-z_][\w$]*", cell.name) \
            else f"{BOUNDARY_PREFIX}c{k}"   # as rewrite_module names it
        for pin, bits in cell.pins.items():
            if len(bits) == 1 and isinstance(bits[0], int):
                pins_of[bits[0]].append(f"{name}/{pin}")
    port_of: dict[int, str] = {}
    for p, d, _ in netlist.ports:
        if d == "input":
            for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
                if isinstance(n, int):
                    port_of.setdefault(n, bit_key(p, i))
    pin_act = run.pin_activity if run else {}
    port_act = run.port_activity if run else {}
    cut = {}
    for port, value in port_act.items():
        m = re.match(rf"{BOUNDARY_PREFIX}co(\d+)(?:_|$)", port)
        if m:
            cut[int(m.group(1))] = value

    def lookup(net) -> tuple[float, float] | None:
        if not isinstance(net, int):
            return (0.0, 1.0) if net == "1" else (0.0, 0.0)
        # The first pin on the net the run has an activity for (a net whose only leaf pin is
        # a driver's output, such as a repair buffer's, has it on no pin: try them all).
        for key in pins_of.get(net, ()):
            if key in pin_act:
                return tuple(pin_act[key])
        key = port_of.get(net)
        if key is not None and key in port_act:
            return tuple(port_act[key])
        return cut.get(net)

    return lookup


def power_of_memory(entry: dict, cell_pins: dict[str, list], lookup, model: MacroModel,
                    clock_period_ns: float, idle: float = IDLE_ACCESS_FRACTION) -> dict:
    """One memory's power record (per instance, mW; ``total_mw`` x instances).

    ``entry`` is its ``macros`` entry (depth, width, read/write ports, instances),
    ``cell_pins`` the ``memwall_ram`` cell's pins (port -> nets, MSB first), ``lookup`` a
    :func:`net_activity`, ``model`` the macro's :func:`macro_model`.
    """
    freq = 1e9 / clock_period_ns
    rows = math.ceil(int(entry["depth"]) / model.depth)
    cols = math.ceil(int(entry["width"]) / model.width)
    defaulted = []

    def act(net) -> tuple[float, float]:
        found = lookup(net)
        if found is None:
            defaulted.append(net)
            return DEFAULT_ACTIVITY
        return found

    def bits(port: str) -> list:   # LSB first
        return list(reversed(cell_pins.get(port, [])))

    sides = [s for s, n in (("read", entry.get("read_ports", 0)),
                            ("write", entry.get("write_ports", 0))) if n]
    access: dict[str, float] = {}
    clock_j = 0.0
    for side in sides:
        per_col = []
        if side == "read":
            en = bits("RD_EN")
            rate = act(en[0])[1] if en else 1.0
            per_col = [rate] * cols
        else:
            en = bits("WR_EN")
            for c in range(cols):
                slice_ = en[c * model.width:(c + 1) * model.width]
                per_col.append(max((act(n)[1] for n in slice_), default=0.0))
        access[side] = max(per_col) if per_col else 0.0
        clock_j += sum(model.clock_j * (a + idle * (rows - a)) for a in per_col)
    pins_j = 0.0
    for side, port, macro_pin, reaches in _PIN_MAP:
        if side not in sides or macro_pin not in model.pin_j:
            continue
        nets = bits(port)
        if reaches == "first":
            nets = nets[:1]
        toggles = sum(act(n)[0] for n in nets)
        copies = {"all": rows * cols, "first": rows * cols, "row": rows, "one": 1}[reaches]
        pins_j += toggles * model.pin_j[macro_pin] * copies
    leakage_mw = model.leakage_w * rows * cols * 1e3
    clock_mw, pins_mw = clock_j * freq * 1e3, pins_j * freq * 1e3
    per_instance = leakage_mw + clock_mw + pins_mw
    every_cycle = model.clock_j * rows * cols * len(sides) * freq * 1e3 + pins_mw + leakage_mw
    record = {
        "accesses_per_cycle": {side: round(access[side], 6) for side in sides},
        "leakage_mw": leakage_mw, "clock_mw": clock_mw, "pins_mw": pins_mw,
        "dynamic_mw": clock_mw + pins_mw, "power_mw": per_instance,
        "total_mw": per_instance * int(entry.get("instances", 1)),
        "every_cycle_mw": every_cycle,
        "idle_access_fraction": idle,
        "macro_energy_pj": {"clock_per_cycle": model.clock_j * 1e12,
                            **{p: e * 1e12 for p, e in sorted(model.pin_j.items())}},
        "method": ("per instance: leakage + clock (accesses x one row of macros, deselected "
                   f"macro-cycles x {idle:g}) + pin energy; "
                   + (TWO_PORT_METHOD if len(sides) == 2 else "one port")),
    }
    if defaulted:
        record["nets_at_default_activity"] = len(defaulted)
    return record


def memory_power(macros: list[dict], netlists: dict[str, Netlist], runs: dict[str, ModuleRun],
                 pdk, cells, clock_period_ns: float, slew_s: float = 0.0,
                 idle: float = IDLE_ACCESS_FRACTION, priced=None) -> tuple[float, list[dict]]:
    """Power of every mapped memory of ``macros`` (area.json's entries): (sum over memories
    x instances in mW, the entries with their power record under ``power``).

    ``priced(macro, model) -> model``, where given, replaces a macro's Liberty figures (the SRAM
    model's access energy and leakage, :func:`memwall.flows.sram_model.with_estimate`)."""
    by_name = {m.name: m for m in pdk.macros}
    total, out = 0.0, []
    lookups: dict[str, object] = {}
    for entry in macros:
        entry = dict(entry)
        macro = by_name.get(entry.get("macro", ""))
        module = entry.get("module")
        netlist = netlists.get(module)
        cell = None if netlist is None else next(
            (c for c in netlist.cells if c.type == MEMORY_CELL
             and c.name == str(entry["cell"]).lstrip("\\")), None)
        if entry.get("status") != "mapped" or macro is None or cell is None:
            entry["power"] = {"status": "not modelled",
                              "reason": entry.get("reason", "no macro or no memory cell")}
            out.append(entry)
            continue
        if module not in lookups:
            lookups[module] = net_activity(netlist, runs.get(module), cells, netlists)
        model = macro_model(macro.name, macro.depth, macro.width, Path(macro.liberty), slew_s)
        if priced is not None:
            model = priced(macro, model)
        entry["power"] = power_of_memory(entry, cell.pins, lookups[module], model,
                                         clock_period_ns, idle)
        total += entry["power"]["total_mw"]
        out.append(entry)
    return total, out
