"""Clock tree: an estimate of the clock power OpenSTA's ideal clock leaves out.

The per-module OpenSTA runs (:mod:`memwall.flows.hierarchical`) use an ideal clock: every
flip-flop's clock-pin internal energy is charged (OpenSTA's ``report_power``), but no clock
buffer exists and the clock net, driven by a port, is charged nothing: not its wire and not the
sink pins on it (on a 2- and a 20-flop design OpenSTA reports zero switching power,
``test_opensta_charges_no_ideal_clock_net``).
This module adds what is missing; :mod:`memwall.flows.clock_gating` adds what clock gating of
the registers whose enables the RTL has would change, its ICGs costed with the Liberty energies
here (:func:`cycle_energy`, :func:`clock_pin_energy`).

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

Each flop sink's share of its leaf cluster is kept in two parts, as clock gating treats them
apart: the leaf buffer's internal energy (``flop_leaf_buffer_j``) and the leaf net's wire plus
the flop's own clock pin, C V^2 (``flop_leaf_net_j``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache

from .calibration import probability
from .liberty import CellLibrary, Liberty, LibertyGroup, parse_bool, pins, table_lookup
from .memory_power import energy_unit_j
from .pdk import Pdk, pdk_cell_library
from .sta import nominal_slew
from .wire_load import CLOCK_RC

__all__ = ["CTS_BUFFER", "REGISTER_FANOUT", "MACRO_FANOUT", "TreeLevel", "ClockTree",
           "clock_tree", "clock_wire_cap", "cycle_energy", "clock_pin_energy",
           "hold_clock_pin_energy"]

#: PDK -> (cell, input pin, output pin) of the clock-tree buffer: ORFS's ``CTS_BUF_CELL`` in
#: ``flow/platforms/<pdk>/config.mk`` (ORFS commit a5e3b0218, 2024-05-22, its last version:
#: 45462bf51 removed the variable as obsolete, TritonCTS now infers buffers).
CTS_BUFFER = {
    "asap7": ("BUFx4_ASAP7_75t_R", "A", "Y"),
    "nangate45": ("BUF_X4", "A", "Z"),
    "sky130hd": ("sky130_fd_sc_hd__clkbuf_4", "A", "X"),
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


@cache
def _hold_clock_pin_energy(cells: CellLibrary, cell: str, slew_s: float,
                           state_duty: float) -> float:
    info = cells.info(cell)
    duties, functions = _flop_states(cells, cell)
    if info.state_vars and info.data_pin:
        iq = info.state_vars[0]
        duties[iq] = state_duty
        functions[info.data_pin] = f"!{iq}" if info.data_inverted else iq
    return sum(cycle_energy(cells, cell, pin, slew_s=slew_s, duties=duties, functions=functions)
               for pin in info.clock_pins)


def hold_clock_pin_energy(cells: CellLibrary, cell: str, slew_s: float,
                          state_duty: float | None = None) -> float:
    """Internal energy (J) of the clock pins of sequential ``cell`` in a cycle it holds: its
    data input equal to its state, the state 1 for ``state_duty`` of the cycles (default 1/2).
    What a clock gate saves per gated cycle: a Liberty's clock-pin power depends on D and the
    state, so a held flop's differs from :func:`clock_pin_energy`'s average over all four
    (ASAP7's DFFHQNx1 at state 1/2: 11 % more; NanGate45's DFF_X1: 3 % less; sky130hd's
    dfxtp_1 has no such condition)."""
    duty = 0.5 if state_duty is None else round(min(max(state_duty, 0.0), 1.0), 2)
    return _hold_clock_pin_energy(cells, cell, round(slew_s, 15), duty)


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
    """One level of the tree's buffers (:attr:`ClockTree.levels` lists them leaves first): its
    output nets as (nets, loads on each, what the loads are: "flops", "macros" or "buffers")."""
    nets: tuple[tuple[int, int, str], ...]
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
    # Per flop sink, its share of what its leaf cluster costs: the leaf buffer's internal
    # energy (input and output pins), and the leaf net's wire plus its own clock pin, C V^2.
    flop_leaf_buffer_j: float
    flop_leaf_net_j: float
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
            "flop_leaf_buffer_fj": self.flop_leaf_buffer_j * 1e15,
            "flop_leaf_net_fj": self.flop_leaf_net_j * 1e15,
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
    # Top-down: transitions and energies; the flop clusters' (leaf level) kept per flop sink.
    slew = nominal_slew(pdk) if root_slew_s is None else root_slew_s
    levels: list[TreeLevel] = []
    flop_buffer_j = flop_wire_j = 0.0
    for shape in reversed(shapes):
        internal = wire = 0.0
        out_slew = 0.0
        for n, k, kind, c_load in shape:
            c_wire = clock_wire_cap(pdk, cells, k)
            load = k * c_load + c_wire
            energy = (cycle_energy(cells, buffer, pin_out, slew_s=slew, load_f=load,
                                   related=pin_in)
                      + cycle_energy(cells, buffer, pin_in, slew_s=slew))
            internal += n * energy
            wire += n * c_wire * voltage ** 2
            if kind == "flops":
                flop_buffer_j += n * energy
                flop_wire_j += n * c_wire * voltage ** 2
            out_slew = max(out_slew, _transition(cells, buffer, pin_out, slew, load))
        levels.append(TreeLevel(tuple((n, k, kind) for n, k, kind, _c in shape), slew, out_slew,
                                internal, wire))
        slew = out_slew
    levels.reverse()
    buffers = sum(level.buffers for level in levels)
    share_buffer = flop_buffer_j / flop_sinks if flop_sinks else 0.0
    share_net = (flop_wire_j / flop_sinks + flop_pin_f * voltage ** 2) if flop_sinks else 0.0
    return ClockTree(buffer, max_fanout, macro_fanout, flop_sinks, macro_sinks, tuple(levels),
                     buffers * buffer_in * voltage ** 2,
                     (flop_sinks * flop_pin_f + macro_sinks * macro_pin_f) * voltage ** 2,
                     share_buffer, share_net, voltage)
