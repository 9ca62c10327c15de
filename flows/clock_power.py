"""Clock power: a clock-tree estimate, and clock gating of the registers whose enables the RTL has.

The per-module OpenSTA runs (:mod:`memwall.flows.hierarchical`) use an ideal clock: every
flip-flop's clock-pin internal energy is charged (OpenSTA's ``report_power``), but no clock
buffer exists and the clock net, driven by a port, is charged nothing: not its wire and not the
sink pins on it (on a 2- and a 20-flop design OpenSTA reports zero switching power,
``test_opensta_charges_no_ideal_clock_net``).
This module adds what is missing and what clock gating would change.

**Clock tree** (:func:`clock_tree`). Sinks: every clock pin (Liberty ``clock : true``) of every
sequential cell, and every SRAM macro's clock pin (``area.json`` ``macros``: ``macro_count`` x the
module's instances; a 1R1W memory on 1RW macros counts one arrangement, as its area does), over
modules x instances. A buffer tree of the PDK's CTS buffer (:data:`CTS_BUFFER`): flop sinks in
leaf clusters of at most ``max_fanout`` (:data:`REGISTER_FANOUT`), macros in clusters of at most
:data:`MACRO_FANOUT`, each cluster one leaf buffer, sizes balanced; every upper level groups the
level below by ``max_fanout`` until one root buffer is left. Per clock cycle (one rise, one fall):

- every buffer's internal energy: its Liberty ``internal_power`` rise + fall tables at its input
  transition and output load (the root's input at :func:`memwall.flows.sta.nominal_slew`, the edge
  the OpenSTA runs give the ideal clock; every level's output transition from the Liberty drives
  the next);
- C V^2 of every net of the tree: its wire (the design's wire-load model's length at the net's
  fanout, :attr:`memwall.flows.pdk.Pdk.wire_load`, at the clock wire's C per um,
  :data:`memwall.flows.wire_load.CLOCK_RC`; a PDK without them: the Liberty's default wire load),
  the buffers' input pins and the sink pins (counted here once: OpenSTA charges none of them).

**Enable registers** (:func:`scan_registers`). Yosys maps an RTL enable (``$dffe``, ``$sdffe``)
onto the ASAP7 flip-flops, which have none, as a hold multiplexer in front of D that ABC then
merges with the load logic. The rule, on each module's mapped gate netlist: take D's
combinational cone up to :data:`ENABLE_DEPTH` gate levels (buffers and inverters free, at most
:data:`ENABLE_LEAVES` leaves, else a shallower cone); the flip-flop's own Q/QN must be a leaf.
Evaluate the next state f over every leaf assignment with the state s = 0 and s = 1: the flop is
an enable register iff f depends on s and never falls when s rises (f positive unate in s). Then
f = hold ? s : f(s=0) with ``hold = !f(s=0) & f(s=1)``, a function of the other leaves only: the
cycles an integrated clock gate (ICG) may block the clock. What the rule misses: an enabled
counter or toggle whose hold multiplexer ABC folded into an XOR (f binate in s, as a
free-running counter, which no enable gates: ``binate_feedback_flops``); an enable past the
cone or its leaf limit (``unclassified_flops``). What it adds to the RTL's enables: a register
written ``q <= q | x`` (it holds whenever x is 0, with no ``$dffe`` in the RTL).
:func:`yosys_enable_bits` counts Yosys's own pre-mapping enable flip-flops of a module for the
cross-check (``tests/flows/test_flow_clock_power.py`` and the dplena32 figures in the report).

**Hold fraction and enable groups**: the activity run's zero-delay gate simulation
(:func:`memwall.flows.gate_activity.simulate_activity`, its ``observe`` hook) evaluates each
enable register's hold on the simulated streams, cycle by cycle and lane by lane: its hold
fraction is the share of them it is true, the cycles an ICG on its enable blocks. Flops whose
hold is the same in every simulated cycle and lane share an enable and form one ICG group (a
cut through ABC's logic leaves dependent nets, ``en & d`` beside ``!en``, so the hold's
truth table over the cut differs bit by bit though the enable is one; the simulation gives the
leaves only values they can take together). Registers holding only on their own data (a running
maximum) get groups of their own. The share of cycles with D == Q (``unchanged_fraction``) is
reported beside it: it also counts loads of an unchanged value, which an enable-driven ICG
cannot skip, so it is the bound of data-driven gating, not used.

**Gated power** (:func:`clock_gating`): groups of at least ``min_group`` flops
(:data:`MIN_GATED_GROUP`) get one ICG (:data:`ICG_CELL`) per :data:`REGISTER_FANOUT` flops. A gated
flop's clock-pin internal energy, its share of its leaf cluster's buffer and wire, and its own
clock-pin C V^2 are charged only in cycles it loads (1 - hold). Each ICG costs every cycle its
clock pin's internal energy (by the enable state), its output's internal energy in enabled
cycles, its clock pin's C V^2 on the tree and its leakage. The tree is not rebuilt: each ICG
stands in for the leaf-buffer share of its flops, and its clock pin is one more load on the
tree. The hold multiplexers an ICG makes redundant are not removed (their power stays:
conservative). Without an activity run there are no hold fractions: the record then gives the
tree and the counts, groups from the hold reduced to nets other registers' holds share, and no
gated total.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .calibration import probability
from .constants import YOSYS_MAIN
from .errors import NetlistError
from .gate_activity import register_state_nets
from .liberty import CellLibrary, Liberty, LibertyGroup, eval_bool, parse_bool, pins, table_lookup
from .memory_power import energy_unit_j
from .netlist import Netlist, is_leaf
from .pdk import Pdk, pdk_cell_library
from .sta import nominal_slew
from .wire_load import CLOCK_RC

__all__ = ["CTS_BUFFER", "ICG_CELL", "REGISTER_FANOUT", "MACRO_FANOUT", "MIN_GATED_GROUP",
           "ENABLE_DEPTH", "ENABLE_LEAVES", "TreeLevel", "ClockTree", "clock_tree",
           "clock_wire_cap", "cycle_energy", "clock_pin_energy", "EnableFlop", "ModuleRegisters",
           "scan_registers", "icg_energy", "clock_gating", "yosys_enable_bits",
           "rtl_enable_bits"]

#: PDK -> (cell, input pin, output pin) of the clock-tree buffer: ORFS's ``CTS_BUF_CELL`` in
#: ``flow/platforms/<pdk>/config.mk`` (ORFS commit a5e3b0218, 2024-05-22, its last version:
#: 45462bf51 removed the variable as obsolete, TritonCTS now infers buffers).
CTS_BUFFER = {
    "asap7": ("BUFx4_ASAP7_75t_R", "A", "Y"),
    "nangate45": ("BUF_X4", "A", "Z"),
    "sky130hd": ("sky130_fd_sc_hd__clkbuf_4", "A", "X"),
}


@dataclass(frozen=True)
class Icg:
    """An integrated clock-gating cell and how ORFS wires it."""
    cell: str
    clock: str
    enable: str
    out: str
    tied: tuple[tuple[str, float], ...] = ()


#: PDK -> the ICG ORFS maps ``OPENROAD_CLKGATE`` to (``flow/platforms/asap7/yoSys/
#: cells_clkgate_R.v``, ``nangate45/cells_clkgate.v``, ``sky130hd/cells_clkgate_hd.v``, ORFS
#: commit 8c009b0b); ASAP7's scan enable SE tied low as there. ORFS lists ``ICG*`` as
#: dont-use for ASAP7 synthesis (no flow inserts them); here they are only costed.
ICG_CELL = {
    "asap7": Icg("ICGx1_ASAP7_75t_R", "CLK", "ENA", "GCLK", (("SE", 0.0),)),
    "nangate45": Icg("CLKGATE_X1", "CK", "E", "GCK"),
    "sky130hd": Icg("sky130_fd_sc_hd__dlclkp_1", "CLK", "GATE", "GCLK"),
}

#: Most flop sinks per leaf buffer, and the fanout of every upper level. OpenROAD's TritonCTS
#: grows register sink clusters up to an internal cap of 30 when ``-sink_clustering_size`` is
#: not given (OpenROAD ``src/cts/README.md``, commit 5c9e487). Decision: 30 at every level
#: (TritonCTS's upper levels are an H-tree with repeaters, which a wire-load model cannot see);
#: ``sensitivity`` in the record gives the tree at 8 and 16.
REGISTER_FANOUT = 30
#: Most macro clock pins per leaf buffer: TritonCTS's ``-macro_clustering_size`` default (same
#: README).
MACRO_FANOUT = 4
#: Fewest flops one ICG is inserted for: OpenROAD's clock gating (``src/cgt/README.md``, same
#: commit) gates a condition with at least 10 registers by default. Sensitivity: 1, 3, 32.
MIN_GATED_GROUP = 10
#: The enable detector's cone: gate levels (buffers and inverters free) and most leaves.
#: Decision: a hold multiplexer and the logic ABC merges into it fit in 3 levels; 12 leaves keep
#: the exhaustive evaluation at 4,096 rows.
ENABLE_DEPTH = 3
ENABLE_LEAVES = 12
#: How far the hold condition's own leaves are followed back to find the enable nets a
#: register's bits share (:func:`scan_registers`): rounds of one gate level, and most leaves.
EXPAND_ROUNDS = 4
EXPAND_LEAVES = 16


# --------------------------------------------------------------------------------------------
# Liberty energies and transitions.

def _variables(tree) -> set[str]:
    if tree[0] == "var":
        return {tree[1]}
    return set().union(*(_variables(t) for t in tree[1:] if isinstance(t, tuple)))


def _weight(when: str | None, duties: dict[str, float], functions: dict[str, str]) -> float:
    """P(``when``) with ``duties`` (independent; any other variable 1/2) and ``functions``."""
    if not when:
        return 1.0
    names = _variables(parse_bool(when))
    for f in functions.values():
        names |= _variables(parse_bool(f))
    free = {n: duties.get(n, 0.5) for n in names if n not in functions}
    return probability(when, free, functions)


def _pin_group(liberty: Liberty, cell: str, pin: str) -> LibertyGroup:
    for name, group in pins(liberty.cell(cell), liberty.library):
        if name == pin:
            return group
    raise KeyError(f"cell {cell} has no pin {pin}")


def cycle_energy(cells: CellLibrary, cell: str, pin: str, *, slew_s: float, load_f: float = 0.0,
                 related: str | None = None, duties: dict[str, float] | None = None,
                 functions: dict[str, str] | None = None) -> float:
    """Internal energy (J) of one rise and one fall of ``pin`` of ``cell``.

    The sum over the pin's ``internal_power`` groups (each power pin's group counts, as in
    :mod:`memwall.flows.calibration`; ``related`` keeps the arcs from that pin) of the rise and
    the fall table at input transition ``slew_s`` and output load ``load_f``, each group weighted
    by the probability of its ``when`` (``duties``: variables' probabilities of 1, 1/2 where not
    given; ``functions``: pins that are functions of others).
    """
    liberty = cells.liberty_of(cell)
    group = _pin_group(liberty, cell, pin)
    energy = 0.0
    for ip in group.find("internal_power"):
        if related is not None and ip.attr("related_pin") not in (None, related):
            continue
        weight = _weight(ip.attr("when"), duties or {}, functions or {})
        if weight == 0.0:
            continue
        for kind in ("rise_power", "fall_power"):
            for table in ip.find(kind):
                energy += weight * table_lookup(table, liberty.library,
                                                slew=slew_s / liberty.time_s,
                                                load=load_f / liberty.cap_f)
    return energy * energy_unit_j(liberty)


def _transition(cells: CellLibrary, cell: str, pin: str, slew_s: float, load_f: float) -> float:
    """Mean of the rise and fall output transition (s) of ``pin`` over its timing arcs."""
    liberty = cells.liberty_of(cell)
    values = [table_lookup(t, liberty.library, slew=slew_s / liberty.time_s,
                           load=load_f / liberty.cap_f)
              for arc in _pin_group(liberty, cell, pin).find("timing")
              for kind in ("rise_transition", "fall_transition") for t in arc.find(kind)]
    return (sum(values) / len(values)) * liberty.time_s if values else slew_s


def _flop_states(cells: CellLibrary, cell: str) -> tuple[dict[str, float], dict[str, str]]:
    """Duties and functions a flop's ``when`` conditions are weighted by: data and state 1/2,
    asynchronous set and clear inactive, outputs as functions of the state."""
    liberty = cells.liberty_of(cell)
    group = liberty.cell(cell)
    info = cells.info(cell)
    duties: dict[str, float] = {}
    for seq in group.find("ff") + group.find("latch"):
        for attr in ("clear", "preset"):
            expr = re.sub(r"\s", "", str(seq.attr(attr) or ""))
            match = re.fullmatch(r"\(?(!?)(\w+)(')?\)?", expr)
            if match:   # active when the expression holds: inactive is its complement
                duties[match.group(2)] = 1.0 if (match.group(1) or match.group(3)) else 0.0
    functions: dict[str, str] = {}
    if info.state_vars:
        iq, iqn = info.state_vars
        functions[iqn] = f"!{iq}"
        duties.setdefault(iq, 0.5)
    functions.update({p: f for p, f in info.outputs.items() if f})
    return duties, functions


@cache
def _clock_pin_energy(cells: CellLibrary, cell: str, slew_s: float) -> float:
    info = cells.info(cell)
    duties, functions = _flop_states(cells, cell)
    return sum(cycle_energy(cells, cell, pin, slew_s=slew_s, duties=duties, functions=functions)
               for pin in info.clock_pins)


def clock_pin_energy(cells: CellLibrary, cell: str, slew_s: float) -> float:
    """Internal energy (J) per clock cycle of the clock pins of sequential ``cell`` (data and
    state 1/2, asynchronous controls inactive): what OpenSTA charges a flop whatever its data."""
    return _clock_pin_energy(cells, cell, round(slew_s, 15))


def clock_wire_cap(pdk: Pdk, cells: CellLibrary, fanout: float) -> float:
    """Wire capacitance (F) of a clock net with ``fanout`` loads: the design's wire-load length
    at the clock wire's C per um (:data:`CLOCK_RC`), else the Liberty's default wire load."""
    if fanout <= 0:
        return 0.0
    if pdk.wire_load is not None:
        if pdk.name in CLOCK_RC:
            return pdk.wire_load.length_um(fanout) * CLOCK_RC[pdk.name][1] * 1e-15
        return pdk.wire_load.cap_f(fanout)
    return cells.wire_cap(fanout)


# --------------------------------------------------------------------------------------------
# The clock tree.

@dataclass(frozen=True)
class TreeLevel:
    """One level of buffers, leaves first: its nets as (count, loads per net)."""
    nets: tuple[tuple[int, int, str], ...]   # (nets, loads on each, "flops"/"macros"/"buffers")
    in_slew_s: float
    out_slew_s: float
    internal_j: float                        # all its buffers' internal energy per cycle
    wire_j: float                            # all its output nets' wire, C V^2 per cycle

    @property
    def buffers(self) -> int:
        return sum(n for n, _k, _kind in self.nets)


@dataclass(frozen=True)
class ClockTree:
    """A buffer tree over the design's clock sinks and its energy per clock cycle (J)."""
    buffer: str
    max_fanout: int
    macro_fanout: int
    flop_sinks: int
    macro_sinks: int
    levels: tuple[TreeLevel, ...]            # leaf level first
    buffer_input_j: float                    # every buffer's input pin, C V^2
    sink_pin_j: float                        # every sink's clock pin, C V^2
    flop_leaf_share_j: float                 # per flop sink: its leaf buffer, wire and pin
    voltage: float

    @property
    def buffers(self) -> int:
        return sum(level.buffers for level in self.levels)

    @property
    def internal_j(self) -> float:
        return sum(level.internal_j for level in self.levels)

    @property
    def wire_j(self) -> float:
        return sum(level.wire_j for level in self.levels)

    @property
    def energy_j(self) -> float:
        """Energy per clock cycle: buffers' internal, wire, buffer inputs and sink pins."""
        return self.internal_j + self.wire_j + self.buffer_input_j + self.sink_pin_j

    def power_mw(self, clock_period_ns: float) -> float:
        return self.energy_j / (clock_period_ns * 1e-9) * 1e3

    def as_dict(self, clock_period_ns: float) -> dict:
        mw = 1e3 / (clock_period_ns * 1e-9)
        return {
            "buffer": self.buffer, "max_fanout": self.max_fanout,
            "macro_fanout": self.macro_fanout,
            "sinks": {"flop_clock_pins": self.flop_sinks, "macro_clock_pins": self.macro_sinks},
            "buffers": self.buffers, "levels": len(self.levels),
            "per_level": [{"level": i + 1, "buffers": level.buffers,
                           "loads_per_buffer": [k for _n, k, _kind in level.nets],
                           "drives": sorted({kind for _n, _k, kind in level.nets}),
                           "input_slew_ps": round(level.in_slew_s * 1e12, 2),
                           "output_slew_ps": round(level.out_slew_s * 1e12, 2)}
                          for i, level in enumerate(self.levels)],
            "power_mw": {"buffers_internal": self.internal_j * mw, "wire": self.wire_j * mw,
                         "buffer_inputs": self.buffer_input_j * mw,
                         "sink_pins": self.sink_pin_j * mw, "total": self.energy_j * mw},
            "flop_leaf_share_fj": self.flop_leaf_share_j * 1e15,
            "voltage": self.voltage,
        }


def _clusters(count: int, fanout: int) -> list[tuple[int, int]]:
    """``count`` loads on the fewest nets of at most ``fanout``, balanced: [(nets, loads)]."""
    if count <= 0:
        return []
    nets = math.ceil(count / fanout)
    size, extra = divmod(count, nets)
    return [(n, k) for n, k in ((extra, size + 1), (nets - extra, size)) if n and k]


def clock_tree(pdk: Pdk, flop_sinks: int, flop_pin_f: float, macro_sinks: int = 0,
               macro_pin_f: float = 0.0, *, max_fanout: int = REGISTER_FANOUT,
               macro_fanout: int = MACRO_FANOUT, root_slew_s: float | None = None) -> ClockTree:
    """The buffer tree over ``flop_sinks`` clock pins of ``flop_pin_f`` each (F) and
    ``macro_sinks`` of ``macro_pin_f``, and its energy per cycle (see the module's text).

    Levels are built bottom-up: leaf buffers drive clusters of flops (at most ``max_fanout``)
    and of macros (at most ``macro_fanout``); each further level drives the level below in
    groups of at most ``max_fanout`` until one buffer, the root, is left. Transitions run
    top-down from ``root_slew_s`` (default :func:`memwall.flows.sta.nominal_slew`).
    """
    if max_fanout < 2 or macro_fanout < 1:
        raise ValueError(f"max_fanout must be >= 2 and macro_fanout >= 1, not {max_fanout}, "
                         f"{macro_fanout}")
    cells = pdk_cell_library(pdk)
    buffer, pin_in, pin_out = CTS_BUFFER[pdk.name]
    buffer_in = cells.info(buffer).inputs[pin_in]
    voltage = cells.libs[0].voltage
    # Bottom-up: each level's nets as (nets, loads per net, kind, C per load).
    shapes = []
    leaf = [(n, k, "flops", flop_pin_f) for n, k in _clusters(flop_sinks, max_fanout)] + \
        [(n, k, "macros", macro_pin_f) for n, k in _clusters(macro_sinks, macro_fanout)]
    if leaf:
        shapes.append(leaf)
        below = sum(n for n, *_ in leaf)
        while below > 1:
            level = [(n, k, "buffers", buffer_in) for n, k in _clusters(below, max_fanout)]
            shapes.append(level)
            below = sum(n for n, *_ in level)
    # Top-down: transitions and energies.
    slew = nominal_slew(pdk) if root_slew_s is None else root_slew_s
    levels: list[TreeLevel] = []
    for shape in reversed(shapes):
        internal = wire = 0.0
        out_slew = 0.0
        for n, k, _kind, c_load in shape:
            c_wire = clock_wire_cap(pdk, cells, k)
            load = k * c_load + c_wire
            energy = (cycle_energy(cells, buffer, pin_out, slew_s=slew, load_f=load,
                                   related=pin_in)
                      + cycle_energy(cells, buffer, pin_in, slew_s=slew))
            internal += n * energy
            wire += n * c_wire * voltage ** 2
            out_slew = max(out_slew, _transition(cells, buffer, pin_out, slew, load))
        levels.append(TreeLevel(tuple((n, k, kind) for n, k, kind, _c in shape), slew, out_slew,
                                internal, wire))
        slew = out_slew
    levels.reverse()
    buffers = sum(level.buffers for level in levels)
    share = 0.0
    if flop_sinks and levels:
        leaf_level = levels[0]
        for n, k, kind, _c in shapes[0]:
            if kind != "flops":
                continue
            c_wire = clock_wire_cap(pdk, cells, k)
            load = k * flop_pin_f + c_wire
            energy = (cycle_energy(cells, buffer, pin_out, slew_s=leaf_level.in_slew_s,
                                   load_f=load, related=pin_in)
                      + cycle_energy(cells, buffer, pin_in, slew_s=leaf_level.in_slew_s))
            share += n * (energy + c_wire * voltage ** 2)
        share = share / flop_sinks + flop_pin_f * voltage ** 2
    return ClockTree(buffer, max_fanout, macro_fanout, flop_sinks, macro_sinks, tuple(levels),
                     buffers * buffer_in * voltage ** 2,
                     (flop_sinks * flop_pin_f + macro_sinks * macro_pin_f) * voltage ** 2,
                     share, voltage)


# --------------------------------------------------------------------------------------------
# Enable registers in a gate netlist.

@dataclass
class _Driver:
    tree: tuple
    ins: dict[str, object]          # pin -> net
    through: bool                   # a buffer or an inverter: no gate level


@dataclass
class EnableFlop:
    """A flip-flop whose next state is ``hold ? state : load`` (see the module's text)."""
    cell: str
    type: str
    d: int
    states: list[tuple[int, bool]]   # (net, inverted) of its Q/QN
    inverted_d: bool                 # next state = !D
    leaves: list[int] = field(default_factory=list)   # the hold's variables
    table: object = None             # hold over every assignment of ``leaves`` (bool array)
    key: tuple | None = None         # (enable nets, hold over them): its group, structurally
    order: list = field(default_factory=list)         # D's cone, cells in evaluation order
    cut: list[int] = field(default_factory=list)      # the cone's leaves (not the state)
    sim_key: bytes | None = None     # its hold, cycle by cycle in the activity simulation
    hold: float | None = None        # share of simulated cycles x lanes it holds
    unchanged: float | None = None   # share with D == Q


@dataclass
class ModuleRegisters:
    """A module's sequential cells, its hold registers and (after the activity simulation)
    how often each enable group holds."""
    module: str
    flops: dict[str, int] = field(default_factory=dict)       # sequential cell type -> count
    clock_pins: int = 0                                         # connected clock pins
    holds: list[EnableFlop] = field(default_factory=list)      # every hold register
    binate: int = 0             # own state in the cone, but not as a hold (counters, toggles)
    unclassified: int = 0       # own state in the cone, but too many leaves to decide
    observed: bool = False
    yosys: dict | None = None   # Yosys's own pre-mapping count (:func:`rtl_enable_bits`)

    @property
    def enables(self) -> list[EnableFlop]:
        """The hold registers (an alias: the enable registers of the rule)."""
        return self.holds

    def groups(self) -> dict[object, list[EnableFlop]]:
        """Enable flops by shared enable, one ICG group each: after the activity simulation,
        flops whose hold is the same in every simulated cycle and lane; before it, flops
        whose hold reduced to shared nets is the same function of the same nets
        (:func:`scan_registers`). A flop in neither gets no group."""
        out: dict[object, list[EnableFlop]] = defaultdict(list)
        for flop in self.holds:
            key = flop.sim_key if self.observed else flop.key
            if key is not None:
                out[key].append(flop)
        return dict(out)

    def observe(self, streams: dict) -> None:
        """``simulate_activity``'s hook: each flop's hold, cycle by cycle, and its D == Q share
        on the simulated streams."""
        import hashlib

        import numpy as np

        if not streams:
            return
        shape = next(iter(streams.values())).shape
        total = float(shape[0] * shape[1] * 64)
        ones = np.full(shape, np.uint64(0xFFFFFFFFFFFFFFFF))
        zeros = np.zeros(shape, dtype=np.uint64)
        for flop in self.holds:
            leaves = {n: streams.get(n, zeros) for n in flop.cut}
            f0 = _evaluate(flop.d, flop.order, flop.states, leaves, zeros, ones, zeros)
            f1 = _evaluate(flop.d, flop.order, flop.states, leaves, ones, ones, zeros)
            if flop.inverted_d:
                f0, f1 = ~f0, ~f1
            hold = ~f0 & f1
            flop.hold = float(np.bitwise_count(hold).sum()) / total
            flop.sim_key = hashlib.sha256(hold.tobytes()).digest()
        for flop in self.holds:
            d = streams.get(flop.d)
            net, inverted = flop.states[0]
            q = streams.get(net)
            if d is None or q is None:
                continue
            if inverted != flop.inverted_d:
                q = ~q
            flop.unchanged = float(np.bitwise_count(~(d ^ q)).sum()) / total
        self.observed = True


def _drivers(netlist: Netlist, cells: CellLibrary, modules) -> tuple[dict[int, _Driver], dict]:
    """Combinational leaf cells by the net each output drives; sequential leaf cells."""
    drivers: dict[int, _Driver] = {}
    sequential = []
    for cell in netlist.cells:
        if not is_leaf(cell, cells, modules):
            continue
        info = cells.info(cell.type)
        if info.is_sequential:
            sequential.append((cell, info))
            continue
        ins = {p: b[0] for p, b in cell.pins.items() if p in info.inputs and len(b) == 1}
        through = len(info.inputs) == 1 and len(info.outputs) == 1
        for pin, func in info.outputs.items():
            bits = cell.pins.get(pin) or []
            if func and len(bits) == 1 and isinstance(bits[0], int):
                tree = parse_bool(func)
                simple = through and tree in (("var", next(iter(info.inputs))),
                                              ("not", ("var", next(iter(info.inputs)))))
                drivers[bits[0]] = _Driver(tree, ins, simple)
    return drivers, sequential


def _cone(starts, drivers: dict[int, _Driver], stop: set[int], limit: int):
    """The cells up to ``limit`` gate levels behind the nets ``starts`` (buffers and inverters
    free), stopping at ``stop``: (net -> its driver, leaves)."""
    dist = dict.fromkeys(starts, 0)
    queue = deque(starts)
    inside: dict[int, _Driver] = {}
    leaves: set[int] = set()
    done: set[int] = set()
    while queue:
        net = queue.popleft()
        if net in done:
            continue
        done.add(net)
        driver = drivers.get(net)
        step = 0 if driver is not None and driver.through else 1
        if driver is None or net in stop or dist[net] + step > limit:
            leaves.add(net)
            continue
        inside[net] = driver
        for n in driver.ins.values():
            if isinstance(n, int) and (n not in dist or dist[net] + step < dist[n]):
                dist[n] = dist[net] + step
                (queue.appendleft if step == 0 else queue.append)(n)
    return inside, leaves


def _order(d: int, inside: dict[int, _Driver]) -> list[tuple[int, _Driver]]:
    """The cells of a cone, each after the cells it reads."""
    order: list[tuple[int, _Driver]] = []
    placed: set[int] = set()
    stack = [(d, False)]
    while stack:
        n, ready = stack.pop()
        if n in placed or n not in inside:
            continue
        if ready:
            placed.add(n)
            order.append((n, inside[n]))
            continue
        stack.append((n, True))
        stack.extend((m, False) for m in inside[n].ins.values()
                     if isinstance(m, int) and m in inside and m not in placed)
    return order


def _evaluate(flop_d: int, order, states, leaves: dict, state, ones, zeros):
    """D's value with the leaves and the flop's state given (numpy words)."""
    env = dict(leaves)
    for net, inverted in states:
        env[net] = ~state if inverted else state
    for net, driver in order:
        pin_env = {p: env.get(n, zeros) if isinstance(n, int) else (ones if n == "1" else zeros)
                   for p, n in driver.ins.items()}
        env[net] = eval_bool(driver.tree, pin_env, ones, zeros)
    return env.get(flop_d, zeros)


@cache
def _patterns(n: int):
    """Every assignment of ``n`` variables as packed words: variable i is bit i of the row."""
    import numpy as np

    rows = max(64, 1 << n)
    index = np.arange(rows)
    return [np.packbits(((index >> i) & 1).astype(bool), bitorder="little").view(np.uint64)
            for i in range(n)]


def _next_state(flop: EnableFlop, order, leaves: list[int]):
    """The flop's next state with its state 0 and 1, over every assignment of ``leaves``."""
    import numpy as np

    patterns = _patterns(len(leaves))
    rows = patterns[0].shape[0] if patterns else 1
    ones = np.full(rows, np.uint64(0xFFFFFFFFFFFFFFFF))
    zeros = np.zeros(rows, dtype=np.uint64)
    values = dict(zip(leaves, patterns, strict=True))
    f0 = _evaluate(flop.d, order, flop.states, values, zeros, ones, zeros)
    f1 = _evaluate(flop.d, order, flop.states, values, ones, ones, zeros)
    return (~f0, ~f1) if flop.inverted_d else (f0, f1)


def _table(hold, n: int):
    """A packed truth table over ``n`` variables as a bool array of ``2 ** n`` rows."""
    import numpy as np

    return np.unpackbits(hold.view(np.uint8), bitorder="little")[:1 << n].astype(bool)


def _support(table, n: int) -> list[int]:
    """The variables (of ``n``) a truth table depends on."""
    import numpy as np

    index = np.arange(table.size)
    return [i for i in range(n) if (table != table[index ^ (1 << i)]).any()]


def _hold_register(cell, info, drivers: dict[int, _Driver], depth: int, max_leaves: int):
    """(kind, flop) of one flip-flop: "hold" with its hold condition, "binate", "wide",
    or (None, None) without feedback."""
    d_bits = cell.pins.get(info.data_pin or "", [])
    states = register_state_nets(cell, info)
    if not d_bits or not isinstance(d_bits[0], int) or not states:
        return None, None
    own = {n for n, _inv in states}
    found, wide = None, False
    for limit in range(depth, 0, -1):
        inside, leaves = _cone([d_bits[0]], drivers, own, limit)
        if not own & leaves:
            break   # no feedback (a shallower cone has none either)
        if len(leaves - own) <= max_leaves:
            found = inside, leaves
            break
        wide = True
    if found is None:
        return ("wide" if wide else None), None
    inside, leaves = found
    others = sorted(leaves - own)
    flop = EnableFlop(cell.name, cell.type, d_bits[0], states, info.data_inverted)
    f0, f1 = _next_state(flop, _order(flop.d, inside), others)
    if not (f0 ^ f1).any():
        return None, None    # D does not depend on the state after all
    if (f0 & ~f1).any():
        return "binate", None
    table = _table(~f0 & f1, len(others))
    support = _support(table, len(others))
    # A cut can leave dependent nets (ABC's en & d beside !en): follow the hold's own leaves
    # back while that does not widen its support.
    for _ in range(EXPAND_ROUNDS):
        grow = [others[i] for i in support if others[i] in drivers]
        if not grow:
            break
        more, new = _cone(grow, drivers, own, 1)
        wider_inside = {**inside, **more}
        wider = sorted((leaves - set(grow) | new) - own - set(wider_inside))
        if len(wider) > EXPAND_LEAVES:
            break
        g0, g1 = _next_state(flop, _order(flop.d, wider_inside), wider)
        trial = _table(~g0 & g1, len(wider))
        trial_support = _support(trial, len(wider))
        if not (g0 ^ g1).any() or len(trial_support) > len(support):
            break
        inside, leaves, others = wider_inside, set(wider) | (leaves & own), wider
        table, support = trial, trial_support
    flop.leaves = [others[i] for i in support]
    flop.table = _restrict(table, len(others), support)
    flop.order, flop.cut = _order(flop.d, inside), others
    return "hold", flop


def _restrict(table, n: int, keep: list[int], forall: bool = False):
    """A truth table over ``n`` variables on the variables ``keep`` (in that order): the others
    dropped (the table must not depend on them) or, with ``forall``, quantified universally."""
    import numpy as np

    cube = table.reshape((2,) * n) if n else table.reshape(())
    axes = [n - 1 - i for i in range(n)]          # variable i is axis n-1-i (row bit i)
    drop = tuple(axes[i] for i in range(n) if i not in keep)
    cube = cube.all(axis=drop) if forall else cube.min(axis=drop) if drop else cube
    # The kept axes in the order of ``keep``, variable keep[j] as row bit j.
    remaining = [axes[i] for i in range(n) if i in keep]
    rank = {a: k for k, a in enumerate(sorted(remaining))}
    order = [rank[axes[i]] for i in reversed(keep)]
    cube = np.transpose(cube, order) if len(keep) > 1 else cube
    return np.asarray(cube).reshape(-1)


def scan_registers(netlist: Netlist, cells: CellLibrary, modules: dict[str, Netlist], *,
                   depth: int = ENABLE_DEPTH, max_leaves: int = ENABLE_LEAVES) -> ModuleRegisters:
    """The sequential cells of ``netlist``, its enable (hold) registers and, until the
    activity simulation regroups them (:meth:`ModuleRegisters.observe`), their groups.

    The structural groups: a hold condition reduced to the nets it shares with other hold
    registers of the module (enables, resets, stalls; a net only one register's hold reads is
    its own data), quantified universally over the rest; registers with the same reduced
    condition on the same nets form one group, one whose reduced condition is never true
    gets none. A net two registers' data share makes this split a register's bits, which is
    why the simulation's cycle-by-cycle hold decides the groups when there is one.
    """
    import numpy as np

    out = ModuleRegisters(netlist.name)
    drivers, sequential = _drivers(netlist, cells, modules)
    for cell, info in sequential:
        clocked = [p for p in info.clock_pins if isinstance((cell.pins.get(p) or [None])[0], int)]
        out.flops[cell.type] = out.flops.get(cell.type, 0) + 1
        out.clock_pins += len(clocked)
        if not clocked:
            continue
        kind, flop = _hold_register(cell, info, drivers, depth, max_leaves)
        if kind == "hold":
            out.holds.append(flop)
        out.binate += kind == "binate"
        out.unclassified += kind == "wide"
    shared: dict[int, int] = defaultdict(int)
    for flop in out.holds:
        for net in flop.leaves:
            shared[net] += 1
    for flop in out.holds:
        keep = [i for i, net in enumerate(flop.leaves) if shared[net] > 1]
        n = len(flop.leaves)
        reduced = _restrict(flop.table, n, keep, forall=True)
        if not reduced.any():
            continue      # holds only on its own data: no shared enable
        nets = [flop.leaves[i] for i in keep]
        support = _support(reduced, len(nets))
        reduced = _restrict(reduced, len(nets), support)
        nets = [nets[i] for i in support]
        by_net = sorted(range(len(nets)), key=lambda j: nets[j])
        reduced = _restrict(reduced, len(nets), by_net)
        flop.key = (tuple(sorted(nets)),
                    np.packbits(reduced, bitorder="little").tobytes())
    return out


# --------------------------------------------------------------------------------------------
# Gated and ungated power.

def _icg_states(pdk: Pdk, enabled: bool) -> dict[str, float]:
    icg = ICG_CELL[pdk.name]
    return {icg.enable: 1.0 if enabled else 0.0, icg.out: 0.0, **dict(icg.tied)}


def _leakage_w(cells: CellLibrary, cell: str) -> float:
    liberty = cells.liberty_of(cell)
    group = liberty.cell(cell)
    total = group.attr("cell_leakage_power")
    if total is not None:
        return float(total) * liberty.leakage_w
    plain = [float(g.attr("value")) for g in group.find("leakage_power") if not g.attr("when")]
    if plain:
        return sum(plain) * liberty.leakage_w
    values = [float(g.attr("value")) for g in group.find("leakage_power")]
    return (sum(values) / len(values) if values else 0.0) * liberty.leakage_w


def icg_energy(pdk: Pdk, hold: float, load_f: float, clock_period_ns: float, *,
               slew_s: float | None = None) -> float:
    """Energy (J) per clock cycle of one ICG whose enable is off a ``hold`` share of cycles,
    driving ``load_f``: its clock pin's internal energy in each enable state, its output's in
    enabled cycles, its clock pin's C V^2 on the tree, and its leakage."""
    cells = pdk_cell_library(pdk)
    icg = ICG_CELL[pdk.name]
    slew = nominal_slew(pdk) if slew_s is None else slew_s
    voltage = cells.libs[0].voltage
    on, off = _icg_states(pdk, True), _icg_states(pdk, False)
    clock_on = cycle_energy(cells, icg.cell, icg.clock, slew_s=slew, duties=on)
    clock_off = cycle_energy(cells, icg.cell, icg.clock, slew_s=slew, duties=off)
    out_on = cycle_energy(cells, icg.cell, icg.out, slew_s=slew, load_f=load_f,
                          related=icg.clock, duties=on)
    pin = cells.info(icg.cell).inputs[icg.clock]
    return ((1.0 - hold) * (clock_on + out_on) + hold * clock_off + pin * voltage ** 2
            + _leakage_w(cells, icg.cell) * clock_period_ns * 1e-9)


def _flop_pin_cap(cells: CellLibrary, flops: dict[str, int]) -> float:
    return sum(n * sum(cells.info(t).inputs[p] for p in cells.info(t).clock_pins)
               for t, n in flops.items())


def _macro_sinks(macros: list[dict], instances: dict[str, int],
                 cells: CellLibrary) -> tuple[int, float]:
    """(clock pins, their total capacitance in F) of the memories' macros."""
    count, cap = 0, 0.0
    for entry in macros:
        if entry.get("status") != "mapped" or entry.get("macro") not in cells:
            continue
        info = cells.info(entry["macro"])
        n = int(entry.get("macro_count", 0)) * \
            int(instances.get(entry.get("module"), entry.get("instances", 1)))
        count += n * len(info.clock_pins)
        cap += n * sum(info.inputs[p] for p in info.clock_pins)
    return count, cap


#: How the record's figures are computed, as metrics.json states it.
METHOD = ("clock tree: buffer tree of the PDK's CTS buffer over every flop and macro clock pin "
          "(internal energy from Liberty at its transitions and loads, wire from the wire-load "
          "model at the clock wire C, buffer inputs and sink pins C V^2; OpenSTA's ideal clock "
          "charges none of these); enable registers: flops whose next state is a hold "
          "multiplexer on their own state within a 3-level cone of D (positive unate in the "
          "state); hold: share of the activity simulation's cycles the hold condition is true; "
          "gated: their clock-pin internal energy and leaf share charged only when loading, plus "
          "one ICG per group of flops sharing an enable (memwall.flows.clock_power)")


def _gating(registers: dict[str, ModuleRegisters], instances: dict[str, int], pdk: Pdk,
            tree: ClockTree, clock_period_ns: float, min_group: int, slew_s: float) -> dict:
    """Per-cycle savings of gating every enable group of ``min_group`` flops or more."""
    cells = pdk_cell_library(pdk)
    saved = icg_j = 0.0
    gated = icgs = groups_gated = losing = 0
    hold_sum = unchanged_sum = 0.0
    unchanged_n = 0
    by_module = {}
    for module, regs in registers.items():
        count = instances.get(module, 0)
        if not count:
            continue
        m_saved = m_icg = 0.0
        m_gated = m_icgs = 0
        for members in regs.groups().values():
            if len(members) < min_group or members[0].hold is None:
                continue
            hold = members[0].hold
            n_icg = math.ceil(len(members) / REGISTER_FANOUT)
            per = len(members) / n_icg
            pin = _flop_pin_cap(cells, {f.type: 1 for f in members[:1]})
            load = per * pin + clock_wire_cap(pdk, cells, per)
            e_icg = n_icg * icg_energy(pdk, hold, load, clock_period_ns, slew_s=slew_s)
            e_saved = sum(hold * (clock_pin_energy(cells, f.type, slew_s)
                                  + tree.flop_leaf_share_j) for f in members)
            losing += count * (e_saved < e_icg)
            m_saved += e_saved
            m_icg += e_icg
            m_gated += len(members)
            m_icgs += n_icg
            hold_sum += count * hold * len(members)
            for f in members:
                if f.unchanged is not None:
                    unchanged_sum += count * f.unchanged
                    unchanged_n += count
            groups_gated += count
        saved += count * m_saved
        icg_j += count * m_icg
        gated += count * m_gated
        icgs += count * m_icgs
        if regs.flops:
            holds = [f.hold for f in regs.enables if f.hold is not None]
            by_module[module] = {
                "instances": count, "flops": sum(regs.flops.values()),
                "enable_flops": len(regs.enables),
                "yosys_enable_flops": (regs.yosys or {}).get("enable"),
                "yosys_flops": (regs.yosys or {}).get("all"),
                "binate_feedback_flops": regs.binate, "unclassified_flops": regs.unclassified,
                "enable_groups": len(regs.groups()),
                "gated_flops": m_gated, "icgs": m_icgs,
                "hold_fraction": sum(holds) / len(holds) if holds else None,
                "saving_mw": count * (m_saved - m_icg) / (clock_period_ns * 1e-9) * 1e3}
    mw = 1e3 / (clock_period_ns * 1e-9)
    return {"saved_mw": saved * mw, "icg_mw": icg_j * mw, "saving_mw": (saved - icg_j) * mw,
            "gated_flops": gated, "icgs": icgs, "groups_gated": groups_gated,
            "groups_losing": losing,
            "hold_fraction": hold_sum / gated if gated else None,
            "unchanged_fraction": unchanged_sum / unchanged_n if unchanged_n else None,
            "by_module": by_module}


def clock_gating(registers: dict[str, ModuleRegisters], manifest: dict, macros: list[dict],
                 pdk: Pdk, clock_period_ns: float, ungated_without_tree_mw: float, *,
                 max_fanout: int = REGISTER_FANOUT, macro_fanout: int = MACRO_FANOUT,
                 min_group: int = MIN_GATED_GROUP) -> dict:
    """The clock tree and clock gating of a design, as ``metrics.json``'s ``clock_gating``.

    ``registers``: :func:`scan_registers` of every module (observed by the activity simulation,
    else no hold shares: the gated total is then None). ``ungated_without_tree_mw``: the flow's
    power total before the tree (OpenSTA and memories); ``ungated_total_mw`` adds the tree.
    """
    cells = pdk_cell_library(pdk)
    instances = manifest["instances"]
    slew = nominal_slew(pdk)
    flop_pins = sum(instances.get(m, 0) * r.clock_pins for m, r in registers.items())
    flop_cap = sum(instances.get(m, 0) * _flop_pin_cap(cells, r.flops)
                   for m, r in registers.items())
    macro_pins, macro_cap = _macro_sinks(macros, instances, cells)
    mean_flop = flop_cap / flop_pins if flop_pins else 0.0
    mean_macro = macro_cap / macro_pins if macro_pins else 0.0

    def tree_at(fanout: int) -> ClockTree:
        return clock_tree(pdk, flop_pins, mean_flop, macro_pins, mean_macro,
                          max_fanout=fanout, macro_fanout=macro_fanout)

    tree = tree_at(max_fanout)
    tree_mw = tree.power_mw(clock_period_ns)
    ungated = ungated_without_tree_mw + tree_mw
    flop_clock_mw = sum(instances.get(m, 0) * n * clock_pin_energy(cells, t, slew)
                        for m, r in registers.items() for t, n in r.flops.items()
                        if cells.info(t).clock_pins) / (clock_period_ns * 1e-9) * 1e3
    flops = sum(instances.get(m, 0) * sum(r.flops.values()) for m, r in registers.items())
    enables = sum(instances.get(m, 0) * len(r.enables) for m, r in registers.items())
    observed = any(r.observed for r in registers.values())
    gating = _gating(registers, instances, pdk, tree, clock_period_ns, min_group, slew)
    gated = ungated - gating["saving_mw"] if observed else None
    icg = ICG_CELL[pdk.name]
    record = {
        "method": METHOD,
        "clock_tree_mw": tree_mw,
        "clock_tree": tree.as_dict(clock_period_ns),
        "flop_clock_pins_mw": flop_clock_mw,
        "flops": flops,
        "enable_flops": enables,
        "enable_fraction": enables / flops if flops else None,
        "yosys_cross_check": _yosys_totals(registers, instances),
        "binate_feedback_flops": sum(instances.get(m, 0) * r.binate
                                     for m, r in registers.items()),
        "unclassified_flops": sum(instances.get(m, 0) * r.unclassified
                                  for m, r in registers.items()),
        "enable_groups": sum(instances.get(m, 0) * len(r.groups()) for m, r in registers.items()),
        "gated_flops": gating["gated_flops"],
        "icgs": gating["icgs"],
        "groups_gated": gating["groups_gated"],
        "groups_losing": gating["groups_losing"],
        "hold_fraction": gating["hold_fraction"],
        "unchanged_fraction": gating["unchanged_fraction"],
        "ungated_total_mw": ungated,
        "gated_total_mw": gated,
        "saving_mw": gating["saving_mw"] if observed else None,
        "saving_fraction": gating["saving_mw"] / ungated if observed and ungated else None,
        "saved_clock_mw": gating["saved_mw"] if observed else None,
        "icg_mw": gating["icg_mw"] if observed else None,
        "parameters": {
            "cts_buffer": tree.buffer, "max_fanout": max_fanout, "macro_fanout": macro_fanout,
            "icg_cell": icg.cell, "icg_max_flops": REGISTER_FANOUT, "min_group": min_group,
            "enable_cone_levels": ENABLE_DEPTH, "enable_cone_leaves": ENABLE_LEAVES,
            "clock_slew_ps": round(slew * 1e12, 3),
            "clock_wire_ff_per_um": CLOCK_RC[pdk.name][1] if pdk.name in CLOCK_RC else None},
        "sources": {
            "cts_buffer": "ORFS flow/platforms/<pdk>/config.mk CTS_BUF_CELL (commit a5e3b0218)",
            "max_fanout": "OpenROAD src/cts/README.md: register sink clusters capped at 30",
            "macro_fanout": "OpenROAD src/cts/README.md: -macro_clustering_size default 4",
            "min_group": "OpenROAD src/cgt/README.md: a condition gates >= 10 registers",
            "icg_cell": "ORFS flow/platforms/<pdk> cells_clkgate (OPENROAD_CLKGATE)",
            "clock_wire": CLOCK_RC[pdk.name][2] if pdk.name in CLOCK_RC else
            "the Liberty's default wire-load model"},
        "sensitivity": {
            "clock_tree_mw_at_max_fanout": {str(f): tree_at(f).power_mw(clock_period_ns)
                                            for f in sorted({8, 16, max_fanout})},
            "gated_total_mw_at_min_group": {
                str(g): ungated - _gating(registers, instances, pdk, tree, clock_period_ns, g,
                                          slew)["saving_mw"] if observed else None
                for g in sorted({1, 3, min_group, 32})}},
        "by_module": gating["by_module"],
        "notes": [
            "power_mw['clock_tree'] is this tree and is included in power_mw['total']; the "
            "flops' clock-pin internal energy (flop_clock_pins_mw) is already in OpenSTA's "
            "internal power, at the same clock transition.",
            "ungated_total_mw = power_mw['total']; gated_total_mw = ungated_total_mw - "
            "saving_mw, saving_mw = saved_clock_mw - icg_mw (None without an activity run).",
            "hold_fraction: share of simulated cycles an enable group's hold condition is true "
            "(weighted by gated flops); unchanged_fraction: share with D == Q, the bound for "
            "data-driven gating, not used.",
            "Gated flops' clock pin, leaf wire and leaf-buffer share charged only in loading "
            "cycles; ICG clock pins added to the tree; hold multiplexers kept (conservative)."],
    }
    return record


def _yosys_totals(registers: dict[str, ModuleRegisters], instances: dict[str, int]) -> dict:
    """Yosys's pre-mapping enable flip-flops beside the detector's, over the modules both
    counted, weighted by instances."""
    both = {m: r for m, r in registers.items() if r.yosys is not None and instances.get(m)}
    return {
        "modules": len(both), "modules_without": len(registers) - len(both),
        "yosys_enable_flops": sum(instances[m] * r.yosys.get("enable", 0) for m, r in both.items()),
        "yosys_flops": sum(instances[m] * r.yosys.get("all", 0) for m, r in both.items()),
        "detector_enable_flops": sum(instances[m] * len(r.holds) for m, r in both.items()),
        "mapped_flops": sum(instances[m] * sum(r.flops.values()) for m, r in both.items()),
        "note": "Yosys: $dffe/$sdffe/$adffe/... bits after synth -run :fine (before mapping); "
                "opt_dff misses an enable it cannot see as one hold multiplexer, and a ROM's "
                "output registers are not flip-flops yet there; the detector reads the mapped "
                "netlist (per module under by_module)"}


# --------------------------------------------------------------------------------------------
# Yosys's own count, for the cross-check.

#: Yosys's flip-flop cells with an enable input.
ENABLE_FF_TYPES = ("$dffe", "$adffe", "$sdffe", "$sdffce", "$aldffe", "$dffsre")


def yosys_enable_bits(rtl: Path, module: str, children: list[Path] = ()) -> dict[str, int]:
    """Flip-flop bits per Yosys cell type of ``module`` after ``synth -flatten -run :fine``
    (before any mapping: the RTL's own enables), children read as black boxes; ``"enable"``
    sums :data:`ENABLE_FF_TYPES`, ``"all"`` every flip-flop type."""
    with tempfile.TemporaryDirectory(prefix="memwall-dffe-") as tmp:
        root = Path(tmp)
        reads = []
        for k, child in enumerate(children):
            (root / f"child{k}.v").write_text(Path(child).read_text())
            reads.append(f"read_verilog -lib child{k}.v")
        (root / "top.v").write_text(Path(rtl).read_text())
        script = "; ".join([*reads, "read_verilog -sv top.v", f"hierarchy -top {module}",
                            f"synth -top {module} -flatten -run :fine",
                            "write_json out.json"])
        proc = subprocess.run([sys.executable, "-c", YOSYS_MAIN, "-q", "-p", script], cwd=root,
                              env=dict(os.environ, YOWASP_MOUNT=f"/={root}"),
                              capture_output=True, text=True)
        out = root / "out.json"
        if proc.returncode != 0 or not out.exists():
            raise NetlistError(f"Yosys could not count the flip-flops of {module} "
                               f"(status {proc.returncode}):\n"
                               + (proc.stdout + proc.stderr)[-2000:])
        data = json.loads(out.read_text())
    counts: dict[str, int] = defaultdict(int)
    for cell in data["modules"][module]["cells"].values():
        kind = cell["type"]
        if "dff" in kind or kind in ("$dlatch", "$adlatch"):
            width = cell.get("parameters", {}).get("WIDTH", "1")
            counts[kind] += int(width, 2) if set(str(width)) <= {"0", "1"} else int(width)
    counts["enable"] = sum(counts.get(k, 0) for k in ENABLE_FF_TYPES)
    counts["all"] = sum(v for k, v in counts.items() if k not in ("enable",))
    return dict(counts)


def rtl_enable_bits(rtl_dir: Path, module: str, children) -> dict[str, int] | None:
    """:func:`yosys_enable_bits` of ``rtl_dir/<module>.v`` (its ``children`` from the same
    folder as black boxes), or None when the RTL is not there or Yosys fails."""
    path = Path(rtl_dir) / f"{module}.v"
    if not path.exists():
        return None
    kids = [Path(rtl_dir) / f"{c}.v" for c in children if (Path(rtl_dir) / f"{c}.v").exists()]
    try:
        return yosys_enable_bits(path, module, kids)
    except (NetlistError, KeyError, ValueError):
        return None
