"""OpenSTA timing and power on a hierarchical gate-level netlist, one unique module at a time.

The design at VLEN 2048 is ~10^7 gates flat, so it is never linked flat. Every unique module's
netlist (``<synth_dir>/netlist/<module>.v``, children left as instances of other modules) is
analysed on its own and its results are multiplied by its instance count, which is how
hierarchical synthesis counts area too.

Per module, two OpenSTA runs (a linked design cannot be swapped inside one 2019 session):

- **timing** on the module's own cells. Child instances are cut out and their pins become
  boundary ports with the 20 % I/O budget of ``constraint.sdc`` (``set_input_delay`` /
  ``set_output_delay`` of 0.2 T): a child's output drives the parent's logic from an input
  port, a child's input is an output port loaded with the child's input capacitance. Paths
  inside a module are timed exactly; a path crossing a module boundary is timed only up to the
  budget at that boundary, not end to end.
- **power** on the same netlist: only the module's own cells (children are counted in their
  own run); every net is counted once, at the module of its driver, with its whole load (child
  input pins count as the capacitance they present, summed through the hierarchy; output ports
  carry the mean load their net sees in the parents; wires the library's wire-load model).

Switching activity. Sources take the VCD's toggle rate and static probability where a name
matches (:mod:`memwall.flows.activity`): module input ports, register outputs (matching rule in
:func:`_register_match`) and child outputs. Every other net gets its activity from a zero-delay
simulation of the module's own gates driven by those sources (:func:`simulate_activity`; the
VCD's per-cycle values are replayed, so a bus keeps its correlation), and the flow sets it on
every cell pin. OpenSTA's own propagation is not used: this release's per-gate formula ignores
reconvergence and gets XOR wrong; on an FP32 adder whose inputs toggled <= 0.03 per cycle it
gave internal nets a mean of 1.7 and a maximum of 10 toggles per cycle (the same run's RTL
signals toggle 0.10 on average) and 17x the power (18.9 against 1.1 mW for the 16 adders of
dplena16 on ASAP7). Without a VCD every net gets
``set_power_activity -global`` at :data:`DEFAULT_ACTIVITY` and nothing is propagated.

Traps of Debian's OpenSTA (2019), each found by comparing with a power computed by hand from
the Liberty tables (:mod:`memwall.flows.calibration`, which also re-runs each trap):

- **SDC times are in the time unit of the first Liberty file read** (ps for ASAP7, ns for
  sky130hd/nangate45). A clock period written in ns on ASAP7 is read as ps: the clock runs
  1000x too fast and dynamic power is 1000x too large. The flow reads the standard cells first
  (ASAP7's fakeram macros count in ns and would make SDC ns), converts every time with
  :meth:`Pdk.to_library_time`, and fails unless ``sta::unit_scale time`` agrees.
- **sky130hd internal power reads exactly 0.** Its library states
  ``default_operating_conditions : "tt_025C_1v80";`` *before* the ``operating_conditions``
  group; the 2019 reader looks the name up at that line, finds nothing ("default_operating_
  condition tt_025C_1v80 not found") and keeps no operating conditions. Internal power tables
  are then looked up without a PVT and give 0; switching power takes the supply from
  ``voltage_map`` and stays right. Moving the attribute below the group, or
  ``set_operating_conditions``, restores it (same figures); the flow does both and fails if
  OpenSTA still reports none.
- **Internal power 2x** (sky130hd, nangate45): this release multiplies the *sum* of a table's
  rise and fall energy by the transition rate. ASAP7 came out right only because a second bug
  cancels it: of the VDD and VSS groups of an arc only the first is kept.
- **Leakage 2-4x** (ASAP7, which has no ``cell_leakage_power``): conditional leakage groups
  are weighted wrongly (inverters 2x, flip-flops 4x).
- ``set_power_activity -pins`` fails (its Tcl calls a missing ``get_pins_error``), and
  the propagation overwrites a user activity on any internal pin.

The flow reads a restated copy of each Liberty file (:func:`opensta_view`, cached in
``build/pdk/<pdk>/opensta2019/``): internal-power groups of one arc merged over power pins and
scaled so this release's arithmetic gives the Liberty meaning, ``cell_leakage_power`` stated,
the operating conditions in order, and combinational output functions naming the pin itself
so the propagation keeps the activity the flow sets (``sta::set_power_pin_activity``).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .pdk import Pdk

__all__ = [
    "StaError", "DEFAULT_ACTIVITY", "IO_BUDGET", "NOMINAL_INVERTER", "STA_BINARY",
    "LibertyGroup", "Liberty", "parse_liberty_text", "CellInfo", "CellLibrary", "cell_library",
    "pdk_cell_library", "table_lookup", "nominal_slew", "nominal_load", "nominal_fo4_delay",
    "buffer_tree", "simulate_activity", "parse_bool", "eval_bool",
    "Cell", "Netlist", "parse_netlist", "Fanout", "fanout", "Hierarchy", "build_hierarchy",
    "ModuleRun", "rewrite_module", "module_tcl", "run_tcl", "parse_power", "parse_timing",
    "check_run", "run_module", "run_sta", "opensta_view", "opensta_libraries", "VIEW_VERSION",
]

STA_BINARY = os.environ.get("MEMWALL_STA", "sta")
#: Default switching activity when nothing better is known: toggles per clock cycle and the
#: fraction of time at 1. 0.1 is the customary 10 % toggle rate of datapath logic.
DEFAULT_ACTIVITY = (0.1, 0.5)
#: Share of the clock period given to a module boundary, as in ``constraint.sdc``.
IO_BUDGET = 0.2
#: Per PDK the minimum inverter: FO4 load and slew of it set the default port load and the
#: input/clock transition (an ideal 0 ps edge would underestimate every first-stage cell).
NOMINAL_INVERTER = {
    "asap7": ("INVx1_ASAP7_75t_R", "A", "Y"),
    "sky130hd": ("sky130_fd_sc_hd__inv_1", "A", "Y"),
    "nangate45": ("INV_X1", "A", "ZN"),
}
_PREFIX = "memwall_"   # names of boundary ports the flow adds


class StaError(RuntimeError):
    """An OpenSTA run that failed or whose output cannot be trusted; says which and why."""


# --------------------------------------------------------------------------------------------
# Liberty: a small reader for the few facts the flow and the calibration need.

@dataclass
class LibertyGroup:
    """One Liberty group: ``kind (args) { attrs; groups }``."""
    kind: str
    args: list[str]
    attrs: dict[str, list] = field(default_factory=dict)
    groups: list[LibertyGroup] = field(default_factory=list)

    def attr(self, name: str, default=None):
        values = self.attrs.get(name)
        return values[0] if values else default

    def find(self, kind: str, name: str | None = None) -> list[LibertyGroup]:
        return [g for g in self.groups
                if g.kind == kind and (name is None or (g.args and g.args[0] == name))]


_LIB_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}();:,]|[^\s{}();:,"\\]+|\\')


def parse_liberty_text(text: str) -> list[LibertyGroup]:
    """Parse Liberty source into top-level groups (comments and line continuations dropped)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S).replace("\\\n", " ")
    tokens = [t[1:-1] if t.startswith('"') else t for t in _LIB_TOKEN.findall(text) if t != "\\"]
    pos = 0

    def args_until_close() -> list[str]:
        nonlocal pos
        args: list[str] = []
        while tokens[pos] != ")":
            if tokens[pos] != ",":
                args.append(tokens[pos])
            pos += 1
        pos += 1
        return args

    def body(group: LibertyGroup) -> None:
        nonlocal pos
        while pos < len(tokens) and tokens[pos] != "}":
            name = tokens[pos]
            pos += 1
            if pos >= len(tokens):
                return
            if tokens[pos] == ":":
                pos += 1
                value = tokens[pos]
                pos += 1
                group.attrs.setdefault(name, []).append(value)
                if pos < len(tokens) and tokens[pos] == ";":
                    pos += 1
            elif tokens[pos] == "(":
                pos += 1
                args = args_until_close()
                if pos < len(tokens) and tokens[pos] == "{":
                    pos += 1
                    child = LibertyGroup(name, args)
                    body(child)
                    pos += 1   # "}"
                    group.groups.append(child)
                else:   # complex attribute: name (args) ;
                    group.attrs.setdefault(name, []).append(args)
                    if pos < len(tokens) and tokens[pos] == ";":
                        pos += 1
            elif tokens[pos] == ";":
                pos += 1

    root = LibertyGroup("<root>", [])
    body(root)
    return root.groups


_CELL_START = re.compile(r'^[ \t]*cell[ \t]*\([ \t]*"?([^")\s]+)"?[ \t]*\)[ \t]*\{', re.M)


class Liberty:
    """One Liberty file: its header parsed at once, its cells parsed on first use."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.text = self.path.read_text()
        starts = list(_CELL_START.finditer(self.text))
        head_end = starts[0].start() if starts else len(self.text)
        # The header without its (huge) cell list: close the library group by hand.
        header = parse_liberty_text(self.text[:head_end] + "\n}\n")
        if not header or header[0].kind != "library":
            raise StaError(f"{path}: not a Liberty library")
        self.library = header[0]
        self.name = self.library.args[0]
        self._offsets = {m.group(1): m.start() for m in starts}
        self._cells: dict[str, LibertyGroup] = {}

    @property
    def cell_names(self) -> list[str]:
        return list(self._offsets)

    def __contains__(self, cell: str) -> bool:
        return cell in self._offsets

    def cell(self, name: str) -> LibertyGroup:
        if name not in self._cells:
            start = self._offsets[name]
            depth, i = 0, self.text.index("{", start)
            while True:   # brace matching: cells hold no braces inside strings
                j = min(x for x in (self.text.find("{", i), self.text.find("}", i)) if x >= 0)
                depth += 1 if self.text[j] == "{" else -1
                i = j + 1
                if depth == 0:
                    break
            self._cells[name] = parse_liberty_text(self.text[start:i])[0]
        return self._cells[name]

    # -- units (Liberty defaults where an attribute is missing) ------------------------------
    def _scale(self, attr: str, base: str, default: str) -> float:
        text = str(self.library.attr(attr, default)).strip().lower()
        match = re.fullmatch(r"([\d.e+-]*)\s*([a-z]*?)" + base, text)
        if not match:
            raise StaError(f"{self.path}: cannot read {attr} = {text!r}")
        number = float(match.group(1) or 1)
        return number * _SI_PREFIX[match.group(2)]

    @property
    def time_s(self) -> float:
        return self._scale("time_unit", "s", "1ns")

    @property
    def leakage_w(self) -> float:
        return self._scale("leakage_power_unit", "w", "1nw")

    @property
    def cap_f(self) -> float:
        value = self.library.attr("capacitive_load_unit", ["1", "pf"])
        return float(value[0]) * _SI_PREFIX[value[1].strip().lower()[:-1]]

    @property
    def voltage(self) -> float:
        """Supply voltage: operating conditions, else ``nom_voltage``, else the VDD map."""
        for oc in self.library.find("operating_conditions"):
            if oc.attr("voltage") is not None:
                return float(oc.attr("voltage"))
        if self.library.attr("nom_voltage") is not None:
            return float(self.library.attr("nom_voltage"))
        return max(float(v[1]) for v in self.library.attrs.get("voltage_map", []))

    @property
    def default_operating_conditions(self) -> str | None:
        name = self.library.attr("default_operating_conditions")
        names = {oc.args[0] for oc in self.library.find("operating_conditions")}
        return name if name in names else None

    def wire_cap(self, fanout: int) -> float:
        """Wire capacitance (F) of the library's default wire-load model at ``fanout`` loads.

        OpenSTA applies the default wire load of the first library when no parasitics are
        given (sky130hd "Small", nangate45 "5K_hvratio_1_1"; ASAP7 has none): length from
        ``fanout_length``, interpolated, extrapolated with ``slope`` past the table.
        """
        name = self.library.attr("default_wire_load")
        models = self.library.find("wire_load", name) if name else []
        if not models or fanout <= 0:
            return 0.0
        model = models[0]
        table = sorted((float(a), float(b)) for a, b in model.attrs.get("fanout_length", []))
        fanouts = [f for f, _ in table]
        if fanout in fanouts:
            length = table[fanouts.index(fanout)][1]
        elif fanout > fanouts[-1]:
            length = table[-1][1] + (fanout - fanouts[-1]) * float(model.attr("slope", 0))
        else:
            lo = max(p for p in table if p[0] < fanout)
            hi = min(p for p in table if p[0] > fanout)
            length = lo[1] + (hi[1] - lo[1]) * (fanout - lo[0]) / (hi[0] - lo[0])
        return length * float(model.attr("capacitance", 0)) * self.cap_f


_SI_PREFIX = {"": 1.0, "k": 1e3, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}


@dataclass(frozen=True)
class CellInfo:
    """What the netlist handling needs of one cell."""
    name: str
    inputs: dict[str, float]           # input pin -> capacitance (F)
    outputs: dict[str, str | None]     # output pin -> function
    is_sequential: bool
    data_pin: str | None               # the single pin next_state reads, if any
    data_inverted: bool
    state_vars: tuple[str, str] | None  # ff/latch (IQ, IQN)
    clock_pins: tuple[str, ...]


class CellLibrary:
    """The standard cells and macros of one PDK, looked up by cell name."""

    def __init__(self, paths: list[Path]):
        self.libs = [Liberty(p) for p in paths]
        self._info: dict[str, CellInfo] = {}

    def liberty_of(self, cell: str) -> Liberty:
        for lib in self.libs:
            if cell in lib:
                return lib
        raise StaError(f"cell {cell} is in none of {[str(lib.path) for lib in self.libs]}")

    def __contains__(self, cell: str) -> bool:
        return any(cell in lib for lib in self.libs)

    def info(self, cell: str) -> CellInfo:
        if cell not in self._info:
            liberty = self.liberty_of(cell)
            self._info[cell] = _cell_info(liberty.cell(cell), liberty)
        return self._info[cell]


def _pins(cell: LibertyGroup, library: LibertyGroup | None = None):
    """(name, pin group) of every pin; bus pins expand to ``name[i]`` over the bus type."""
    for pin in cell.find("pin"):
        for name in pin.args:
            yield name, pin
    for bus in cell.find("bus"):
        types = library.find("type", str(bus.attr("bus_type"))) if library else []
        bits = [int(types[0].attr(k)) for k in ("bit_from", "bit_to")
                if types and types[0].attr(k) is not None]
        for pin in bus.find("pin"):
            for name in pin.args:
                yield name, pin
        if len(bits) == 2 and not bus.find("pin"):
            for i in range(min(bits), max(bits) + 1):
                yield f"{bus.args[0]}[{i}]", bus


def _cell_info(cell: LibertyGroup, liberty: Liberty) -> CellInfo:
    inputs, outputs, clocks = {}, {}, []
    for name, pin in _pins(cell, liberty.library):
        direction = pin.attr("direction")
        if direction == "input":
            inputs[name] = float(pin.attr("capacitance", 0.0)) * liberty.cap_f
            if str(pin.attr("clock", "false")) == "true":
                clocks.append(name)
        elif direction in ("output", "inout"):
            outputs[name] = pin.attr("function")
    seq = cell.find("ff") + cell.find("latch")
    data_pin, inverted, state = None, False, None
    if seq:
        state = (seq[0].args[0], seq[0].args[1]) if len(seq[0].args) > 1 else None
        nxt = str(seq[0].attr("next_state", seq[0].attr("data_in", ""))).replace(" ", "")
        match = re.fullmatch(r"(!?)\(?(\w+)\)?('?)", nxt)
        if match and match.group(2) in inputs:
            data_pin = match.group(2)
            inverted = bool(match.group(1)) != bool(match.group(3))
    return CellInfo(cell.args[0], inputs, outputs, bool(seq), data_pin, inverted, state,
                    tuple(clocks))


@cache
def cell_library(paths: tuple[Path, ...]) -> CellLibrary:
    return CellLibrary(list(paths))


def pdk_cell_library(pdk: Pdk) -> CellLibrary:
    return cell_library(tuple(pdk.cell_liberty) + tuple(m.liberty for m in pdk.macros))


# --------------------------------------------------------------------------------------------
# The Liberty view OpenSTA 2019 reads: the same library, restated so that this release's power
# arithmetic yields what the Liberty format defines (see the module docstring; every rewrite
# is checked by flows/calibration.py against a hand computation).

VIEW_VERSION = "/* memwall OpenSTA-2019 view, version 3 */"
_GROUP_EVENT = re.compile(r"([A-Za-z_]\w*)\s*\(([^()]*)\)\s*\{|\}")
_view_lock = threading.Lock()


def _blank_comments(text: str) -> str:
    """Comments replaced by spaces of the same length, so offsets stay valid."""
    return re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)


def _group_spans(text: str) -> list[tuple[str, int, int, int]]:
    """(kind, start, end, parent index) of every group in ``text``, in document order."""
    spans: list[list] = []
    stack: list[int] = []
    for m in _GROUP_EVENT.finditer(_blank_comments(text)):
        if m.group(0) == "}":
            if stack:
                spans[stack.pop()][2] = m.end()
        else:
            spans.append([m.group(1), m.start(), -1, stack[-1] if stack else -1])
            stack.append(len(spans) - 1)
    return [tuple(s) for s in spans]


def _complement_pairs(cell: LibertyGroup) -> list[tuple[str, str]]:
    """(Q, QN) output pin pairs of a flip-flop or latch: their values are complements."""
    seq = cell.find("ff") + cell.find("latch")
    if not seq or len(seq[0].args) < 2:
        return []
    iq, iqn = seq[0].args[:2]
    funcs = {name: re.sub(r"[\s()]", "", str(pin.attr("function", ""))) for name, pin in
             _pins(cell) if pin.attr("direction") == "output"}
    pos = [p for p, f in funcs.items() if f in (iq, f"!{iqn}")]
    neg = [p for p, f in funcs.items() if f in (iqn, f"!{iq}")]
    return [(p, n) for p in pos for n in neg]


def _normalise_when(when: str, pairs: list[tuple[str, str]]) -> str:
    """Drop a QN literal from a product that also names Q.

    OpenSTA takes the literals of a ``when`` as independent signals, so "!CK & !Q & QN" (QN
    is always !Q) comes out at half its probability; "!CK & !Q" is the same condition.
    """
    if not pairs or re.search(r"[+|^]|!\s*\(", when):
        return when
    literals = [(m.group(2), bool(m.group(1)))
                for m in re.finditer(r"(!?)\s*([A-Za-z_][\w\[\]]*)", when.replace("(", " "))]
    names = dict(literals)
    drop = {n for p, n in pairs if p in names and n in names and names[p] != names[n]}
    if not drop:
        return when
    return " & ".join(("!" if neg else "") + name for name, neg in literals if name not in drop)


def _table_values(group: LibertyGroup) -> list[list[float]]:
    return [[float(x) for x in row.split(",")] for row in group.attr("values")]


def _emit_internal_power(groups: list[LibertyGroup], when: str | None, indent: str,
                         scale: float) -> str:
    """One ``internal_power`` group: the power pins' tables summed, times ``scale``.

    Summed because this OpenSTA keeps only the first of the groups that differ by
    ``related_pg_pin`` (ASAP7 gives VDD and VSS apart), while the cell's internal energy is
    what all rails draw. ``scale`` is set by :func:`_arc_scale`.
    """
    first = groups[0]
    lines = ["internal_power () {"]   # the original indentation precedes it
    for name, values in first.attrs.items():
        if name in ("related_pg_pin", "when"):
            continue
        lines += [f'{indent}  {name} : "{v}";' for v in values if not isinstance(v, list)]
    if when:
        lines.append(f'{indent}  when : "{when}";')
    for table in first.groups:
        siblings = [t for g in groups for t in g.groups if t.kind == table.kind]
        rows = _table_values(table)
        for other in siblings[1:]:
            rows = [[a + b for a, b in zip(r1, r2, strict=True)]
                    for r1, r2 in zip(rows, _table_values(other), strict=True)]
        lines.append(f"{indent}  {table.kind} ({', '.join(table.args)}) {{")
        for name, values in table.attrs.items():
            if name == "values":
                continue
            for v in values:
                if isinstance(v, list):
                    lines.append(f"{indent}    {name} (" + ", ".join(f'"{a}"' for a in v)
                                 + ");")
                else:
                    lines.append(f'{indent}    {name} : "{v}";')
        body = ", \\\n".join(f'{indent}      "' + ", ".join(f"{scale * x:.9g}" for x in r)
                             + '"' for r in rows)
        lines.append(f"{indent}    values ( \\\n{body} \\\n{indent}    );")
        lines.append(f"{indent}  }}")
    lines.append(f"{indent}}}")
    return "\n".join(lines)


def _arc_scale(pin: LibertyGroup, group: LibertyGroup, clocks: set[str],
               related: set[str]) -> float:
    """Factor on an ``internal_power`` table so that OpenSTA 2019 yields its Liberty meaning.

    This release multiplies the *sum* of a table's rise and fall energy by the transition rate
    (the mean is meant): factor 1/2. On an output pin it weighs each group by a "duty" of 1 for
    an arc from a clock pin, the probability of ``when`` for a conditional group, else 0.5,
    without normalising over the input arcs (and the view's self-referencing functions leave it
    no Boolean difference to do better): the factor turns that into an equal share 1/k of each
    of the k related input pins, with ``when`` groups weighted by their probability.
    """
    if pin.attr("direction") not in ("output", "inout") or not group.attr("related_pin"):
        return 0.5
    k = max(1, len(related))
    rel = group.attr("related_pin")
    duty = 1.0 if rel in clocks or group.attr("when") else 0.5
    return 0.5 / (k * duty)


def _state_leakage(cell: LibertyGroup) -> float | None:
    """Leakage (library units) for a cell without ``cell_leakage_power``.

    The unconditional ``leakage_power`` groups when there are any (ASAP7 states its state
    average that way), else the mean over the distinct ``when`` states; each summed over power
    pins. OpenSTA 2019 prefers ``cell_leakage_power`` and weighs conditional groups wrongly
    (ASAP7 inverters came out 2x, flip-flops 4x), so the view states the total.
    """
    groups = cell.find("leakage_power")
    if not groups:
        return None
    plain = [float(g.attr("value", 0)) for g in groups if not g.attr("when")]
    if plain:
        return sum(plain)
    states: dict[str, float] = defaultdict(float)
    for g in groups:
        states[g.attr("when")] += float(g.attr("value", 0))
    return sum(states.values()) / len(states)


def _view_cell(text: str) -> str:
    cell = parse_liberty_text(text)[0]
    pairs = _complement_pairs(cell)
    spans = _group_spans(text)
    state = {a for g in cell.find("ff") + cell.find("latch") for a in g.args}
    clocks = {n for n, p in _pins(cell) if str(p.attr("clock", "false")) == "true"}
    edits: list[tuple[int, int, str]] = []
    for index, (kind, start_pin, end_pin, _parent) in enumerate(spans):
        if kind not in ("pin", "bus", "bundle"):
            continue
        pin = parse_liberty_text(_blank_comments(text[start_pin:end_pin]))[0]
        func = pin.attr("function")
        if kind == "pin" and func and pin.attr("direction") in ("output", "inout") \
                and not set(re.findall(r"\w+", func)) & state:
            # A function naming the pin itself: OpenSTA 2019 evaluates it to the activity the
            # flow set on the pin (it would otherwise overwrite it with its own estimate, and
            # it crashes on an output without a function).
            body = _blank_comments(text[start_pin:end_pin])
            for m in re.finditer(r'(?<![\w])function\s*:\s*("[^"]*"|[^;\n]*)\s*;', body):
                edits.append((start_pin + m.start(), start_pin + m.end(),
                              f'function : "{pin.args[0]}";'))
        children = [s for s in spans if s[3] == index and s[0] == "internal_power"]
        if not children:
            continue
        related = {parse_liberty_text(text[s:e])[0].attr("related_pin")
                   for _k, s, e, _p in children} - {None}
        merged: dict[tuple, list] = {}
        for _k, start, end, _p in children:
            group = parse_liberty_text(text[start:end])[0]
            when = group.attr("when")
            when = _normalise_when(when, pairs) if when else None
            key = (group.attr("related_pin"), when)
            merged.setdefault(key, []).append((start, end, group))
        for (_rel, when), items in merged.items():
            start = items[0][0]
            indent = text[text.rfind("\n", 0, start) + 1:start]
            first = items[0][2]
            edits.append((start, items[0][1],
                          _emit_internal_power([g for _s, _e, g in items], when,
                                               indent if not indent.strip() else "",
                                               _arc_scale(pin, first, clocks, related))))
            edits += [(s, e, "") for s, e, _g in items[1:]]
    if cell.attr("cell_leakage_power") is None:
        leak = _state_leakage(cell)
        if leak is not None:
            brace = text.index("{") + 1
            edits.append((brace, brace, f"\n    cell_leakage_power : {leak:.9g};"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def opensta_view(src: Path, dst_dir: Path) -> Path:
    """The OpenSTA-2019 view of Liberty file ``src`` (written once to ``dst_dir``).

    - ``internal_power``: groups that differ only by power pin merged (tables summed), every
      table scaled (:func:`_arc_scale`), redundant Q/QN literals dropped from ``when``
      (:func:`_emit_internal_power`, :func:`_normalise_when`);
    - combinational output functions naming the pin itself, so OpenSTA keeps the activity
      the flow sets on it (timing arcs carry their own sense, so timing is unchanged);
    - ``cell_leakage_power`` added where a cell has only ``leakage_power`` groups;
    - ``default_operating_conditions`` moved below the ``operating_conditions`` group it names
      (sky130hd states it first, and the 2019 reader then drops it).
    """
    dst = Path(dst_dir) / src.name
    with _view_lock:
        if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime \
                and dst.open().readline().strip() == VIEW_VERSION:
            return dst
        text = src.read_text()
        starts = [m.start() for m in _CELL_START.finditer(text)]
        head = text[:starts[0]] if starts else text
        line = re.search(r"^[ \t]*default_operating_conditions\s*:[^\n]*\n", head, re.M)
        group = re.search(r"^[ \t]*operating_conditions\s*\([^)]*\)\s*\{[^}]*\}[ \t]*\n",
                          head, re.M)
        if line and group and line.start() < group.start():
            head = head[:line.start()] + head[line.end():group.end()] + line.group(0) + \
                head[group.end():]
        out = [VIEW_VERSION + "\n", head]
        for i, start in enumerate(starts):
            depth, pos = 0, text.index("{", start)
            while True:
                pos = min(x for x in (text.find("{", pos), text.find("}", pos)) if x >= 0)
                depth += 1 if text[pos] == "{" else -1
                pos += 1
                if depth == 0:
                    break
            out.append(_view_cell(text[start:pos]))
            out.append(text[pos:starts[i + 1]] if i + 1 < len(starts) else text[pos:])
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")   # parallel test workers
        tmp.write_text("".join(out))
        tmp.replace(dst)
        return dst


def opensta_libraries(pdk: Pdk) -> tuple[list[Path], list[Path]]:
    """(standard cells, macros): the OpenSTA views of the PDK's Liberty files, in read order."""
    view_dir = pdk.cell_liberty[0].parent / "opensta2019"
    cells = [opensta_view(p, view_dir) for p in pdk.cell_liberty]
    macros = [opensta_view(m.liberty, view_dir) for m in pdk.macros]
    return cells, macros


def _table_lookup(group: LibertyGroup, library: LibertyGroup, axes: dict[str, float]) -> float:
    """Bilinear look-up (linear extrapolation outside the grid) of a Liberty table group."""
    template = library.find("lu_table_template", group.args[0]) + \
        library.find("power_lut_template", group.args[0]) if group.args else []
    variables, index = [], []
    for i in (1, 2):
        var = template[0].attr(f"variable_{i}") if template else None
        idx = group.attr(f"index_{i}") or (template[0].attr(f"index_{i}") if template else None)
        if var is None or idx is None:
            break
        variables.append(var)
        index.append([float(x) for x in ",".join(idx).split(",")])
    rows = [[float(x) for x in row.split(",")] for row in group.attr("values")]
    if not variables:
        return rows[0][0]

    def locate(axis: list[float], x: float) -> tuple[int, float]:
        if len(axis) == 1:
            return 0, 0.0
        i = max(0, min(len(axis) - 2, sum(1 for a in axis if a <= x) - 1))
        return i, (x - axis[i]) / (axis[i + 1] - axis[i])

    i, fi = locate(index[0], axes[variables[0]])
    if len(variables) == 1:
        values = rows[0] if len(rows) == 1 else [r[0] for r in rows]
        j = min(i + 1, len(values) - 1)
        return values[i] + (values[j] - values[i]) * fi
    j, fj = locate(index[1], axes[variables[1]])
    i1, j1 = min(i + 1, len(rows) - 1), min(j + 1, len(rows[0]) - 1)
    v00, v01, v10, v11 = rows[i][j], rows[i][j1], rows[i1][j], rows[i1][j1]
    return (v00 * (1 - fi) * (1 - fj) + v01 * (1 - fi) * fj + v10 * fi * (1 - fj)
            + v11 * fi * fj)


def table_lookup(group: LibertyGroup, library: LibertyGroup, *, slew: float,
                 load: float) -> float:
    """A delay, transition or power table at input ``slew`` and output ``load``."""
    axes = {"input_net_transition": slew, "input_transition_time": slew,
            "related_pin_transition": slew, "constrained_pin_transition": slew,
            "total_output_net_capacitance": load}
    return _table_lookup(group, library, axes)


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
    pin = [p for n, p in _pins(liberty.cell(cell)) if n == out][0]
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
    pin = [p for n, p in _pins(liberty.cell(cell)) if n == out][0]
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
# Gate-level Verilog (Yosys write_verilog): parsed to bits, rewritten for the analysis runs.

_V_TOKEN = re.compile(r"\\\S+|\d*'[sS]?[bBoOdDhH][0-9a-fA-FxXzZ_?]+|[A-Za-z_][\w$]*|\d+|\S")
_CONST = ("0", "1", "x")


@dataclass
class Cell:
    """A cell instance: leaf (Liberty) cell or child module."""
    name: str
    type: str
    pins: dict[str, list]    # pin -> bits, MSB first; a bit is a net id or "0"/"1"/"x"


@dataclass
class Netlist:
    """One module as bits. Nets joined by ``assign`` are one net carrying all their names."""
    name: str
    ports: list[tuple[str, str, tuple[int, int] | None]]   # (name, direction, (msb, lsb))
    port_bits: dict[str, list]           # port -> bits, MSB first
    net_names: dict[int, list[str]]      # net -> its names, the most readable first
    cells: list[Cell]

    def port_indices(self, port: str) -> list[int | None]:
        """Bit indices of ``port`` in the order of :attr:`port_bits`."""
        rng = {p: r for p, _, r in self.ports}[port]
        return [None] if rng is None else _range(*rng)


def _range(msb: int, lsb: int) -> list[int]:
    step = -1 if msb >= lsb else 1
    return list(range(msb, lsb + step, step))


def _bit_key(name: str, index: int | None) -> str:
    return name if index is None else f"{name}[{index}]"


def parse_netlist(text: str, module: str | None = None) -> Netlist:
    """Parse one structural module (``module`` by name, else the first) of Verilog text.

    Enough Verilog for Yosys ``write_verilog`` netlists: port/wire declarations with ranges,
    escaped identifiers, ``assign`` (nets merged), cell instances with named connections of
    bits, part selects, concatenations and constants.
    """
    text = re.sub(r"/\*.*?\*/|\(\*.*?\*\)", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    tokens = [t[1:] if t.startswith("\\") else t for t in _V_TOKEN.findall(text)]
    pos = 0
    while True:
        try:
            pos = tokens.index("module", pos) + 1
        except ValueError:
            raise StaError(f"no module {module} in the netlist") from None
        if module is None or tokens[pos] == module:
            break
    name = tokens[pos]
    decl: dict[str, tuple[int, int] | None] = {}
    directions: dict[str, str] = {}
    port_order: list[str] = []
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            if rb in _CONST:   # constants stay representatives: a tied net stays known
                ra, rb = rb, ra
            parent[rb] = ra

    def bits_of(net: str) -> list[str]:
        rng = decl.get(net)
        return [net] if rng is None else [_bit_key(net, i) for i in _range(*rng)]

    def const_bits(tok: str) -> list[str]:
        width, _, rest = tok.partition("'")
        rest = rest.lstrip("sS")
        base, digits = rest[0].lower(), rest[1:].replace("_", "")
        if base == "d":
            value = bin(int(digits))[2:] if digits.isdigit() else "x"
        else:
            per = {"b": 1, "o": 3, "h": 4}[base]
            value = "".join("x" * per if c in "xXzZ?" else bin(int(c, 16))[2:].zfill(per)
                            for c in digits)
        n = int(width) if width else 32
        return [c if c in "01" else "x" for c in value.zfill(n)[-n:]]

    def expr() -> list[str]:
        nonlocal pos
        tok = tokens[pos]
        if tok == "{":
            pos += 1
            if re.fullmatch(r"\d+", tokens[pos]) and tokens[pos + 1] == "{":
                count = int(tokens[pos])
                pos += 1
                inner = expr()
                pos += 1   # }
                return inner * count
            out: list[str] = []
            while True:
                out += expr()
                pos += 1   # , or }
                if tokens[pos - 1] == "}":
                    return out
        pos += 1
        if "'" in tok:
            return const_bits(tok)
        if re.fullmatch(r"\d+", tok):
            return list(bin(int(tok))[2:].zfill(32))
        if pos < len(tokens) and tokens[pos] == "[":
            hi = int(tokens[pos + 1])
            if tokens[pos + 2] == ":":
                lo = int(tokens[pos + 3])
                pos += 5
                return [_bit_key(tok, i) for i in _range(hi, lo)]
            pos += 3
            return [_bit_key(tok, hi)]
        return bits_of(tok)

    pos += 1
    if tokens[pos] == "(":
        pos += 1
        while tokens[pos] != ")":
            if tokens[pos] != ",":
                port_order.append(tokens[pos])
            pos += 1
        pos += 1
    pos += 1   # ;
    raw_cells: list[tuple[str, str, dict[str, list[str]]]] = []
    assigns: list[tuple[list[str], list[str]]] = []
    while tokens[pos] != "endmodule":
        tok = tokens[pos]
        pos += 1
        if tok in ("input", "output", "inout", "wire", "reg", "tri", "supply0", "supply1"):
            while tokens[pos] in ("wire", "reg", "signed"):
                pos += 1
            rng = None
            if tokens[pos] == "[":
                rng = (int(tokens[pos + 1]), int(tokens[pos + 3]))
                pos += 5
            while True:
                net = tokens[pos]
                pos += 1
                if rng is not None or net not in decl:
                    decl[net] = rng
                if tok in ("input", "output", "inout"):
                    directions[net] = tok
                if tokens[pos] == "=":   # wire x = expr;
                    pos += 1
                    assigns.append((bits_of(net), expr()))
                pos += 1
                if tokens[pos - 1] != ",":
                    break
        elif tok == "assign":
            lhs = expr()
            pos += 1   # =
            assigns.append((lhs, expr()))
            pos += 1   # ;
        elif tok in ("parameter", "localparam", "defparam"):
            pos = tokens.index(";", pos) + 1
        else:   # cell instance: TYPE [#(...)] NAME ( .PIN(expr), ... );
            if tokens[pos] == "#":
                depth, pos = 0, pos + 1
                while True:
                    depth += {"(": 1, ")": -1}.get(tokens[pos], 0)
                    pos += 1
                    if depth == 0:
                        break
            inst = tokens[pos]
            pos += 2   # NAME (
            conns: dict[str, list[str]] = {}
            while tokens[pos] != ")":
                if tokens[pos] == ".":
                    pin = tokens[pos + 1]
                    pos += 3   # . PIN (
                    conns[pin] = [] if tokens[pos] == ")" else expr()
                    pos += 1   # )
                else:
                    pos += 1   # ,
            pos += 2   # ) ;
            raw_cells.append((inst, tok, conns))
    for lhs, rhs in assigns:
        rhs = (["0"] * len(lhs) + rhs)[-len(lhs):]   # Verilog zero-extends
        for a, b in zip(lhs, rhs, strict=True):
            union(a, b)
    every = {b for n in decl for b in bits_of(n)} | set(parent)
    every |= {b for _, _, conns in raw_cells for bits in conns.values() for b in bits}
    ids: dict[str, int] = {}
    names: dict[int, list[str]] = defaultdict(list)

    def net_id(bit: str) -> int | str:
        root = find(bit)
        if root in _CONST:
            return root
        return ids.setdefault(root, len(ids))

    for b in sorted(every - set(_CONST)):
        n = net_id(b)
        if isinstance(n, int):
            names[n].append(b)
    for alias in names.values():
        # Readable names first (no leading underscore, no $): reports and matching use them.
        alias.sort(key=lambda s: (s.startswith("_") or "$" in s, len(s), s))
    ports = [(p, directions.get(p, "input"), decl.get(p)) for p in port_order]
    port_bits = {p: [net_id(b) for b in bits_of(p)] for p in port_order}
    cells = [Cell(inst, typ, {pin: [net_id(b) for b in bits] for pin, bits in conns.items()})
             for inst, typ, conns in raw_cells]
    return Netlist(name, ports, port_bits, dict(names), cells)


# --------------------------------------------------------------------------------------------
# Liberty Boolean functions: parsed once, evaluated on bits or on packed bit streams.

def parse_bool(text: str):
    """Liberty Boolean expression -> tree: ``!A``, ``A'``, ``A*B``, ``A&B``, ``A B``,
    ``A+B``, ``A|B``, ``A^B``, parentheses, 0 and 1."""
    tokens = re.findall(r"[A-Za-z_][\w\[\]]*|[01]|[!'*&+|^()]", text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary():
        tok = take()
        if tok == "!":
            node = ("not", primary())
        elif tok == "(":
            node = disjunction()
            take()   # )
        elif tok in ("0", "1"):
            node = ("const", tok == "1")
        else:
            node = ("var", tok)
        while peek() == "'":
            take()
            node = ("not", node)
        return node

    def xor():
        node = primary()
        while peek() == "^":
            take()
            node = ("xor", node, primary())
        return node

    def conjunction():
        node = xor()
        while peek() is not None and peek() not in ("+", "|", ")"):
            if peek() in ("*", "&"):
                take()
            node = ("and", node, xor())
        return node

    def disjunction():
        node = conjunction()
        while peek() in ("+", "|"):
            take()
            node = ("or", node, conjunction())
        return node

    return disjunction()


def eval_bool(node, env: dict, one=True, zero=False):
    """Evaluate a :func:`parse_bool` tree on bools or on numpy words (``one``/``zero``)."""
    op = node[0]
    if op == "var":
        return env[node[1]]
    if op == "const":
        return one if node[1] else zero
    if op == "not":
        value = eval_bool(node[1], env, one, zero)
        return (not value) if isinstance(value, bool) else ~value
    a, b = eval_bool(node[1], env, one, zero), eval_bool(node[2], env, one, zero)
    if isinstance(a, bool) and isinstance(b, bool):
        return {"and": a and b, "or": a or b, "xor": a != b}[op]
    return {"and": a & b, "or": a | b, "xor": a ^ b}[op]


# --------------------------------------------------------------------------------------------
# Activity of every net: a zero-delay, cycle-based simulation of the module's own gates.
#
# OpenSTA 2019 propagates activity with a per-gate probability formula that ignores
# reconvergence (and has XOR wrong); on an FP32 adder fed by measured inputs of <= 0.03
# toggles/cycle it reported a mean of 1.7 and a maximum of 10 toggles/cycle on internal nets,
# where the same run's RTL signals toggle 0.10 on average. So the flow computes every net's
# activity itself, by simulating the netlist on random streams that have the annotated toggle
# rate and probability of each source, and sets it on every pin.

#: Cycles and parallel streams of the activity simulation (sampling error ~1 % at 0.1/cycle).
SIM_CYCLES = 256
SIM_LANES = 256


def _markov_streams(stats: list[tuple[float, float]], rng, cycles: int, lanes: int):
    """Packed bit streams (sources, cycles, lanes/64) with each source's toggle rate and duty.

    A two-state Markov chain per lane: P(0->1) = t / (2 (1-d)), P(1->0) = t / (2 d) gives a
    stationary probability d of 1 and t transitions per cycle.
    """
    import numpy as np

    t = np.array([min(max(s[0], 0.0), 1.0) for s in stats])
    d = np.array([min(max(s[1], 0.0), 1.0) for s in stats])
    with np.errstate(divide="ignore", invalid="ignore"):
        p01 = np.where(d < 1.0, np.minimum(1.0, t / (2 * (1 - d))), 0.0)
        p10 = np.where(d > 0.0, np.minimum(1.0, t / (2 * d)), 0.0)
    state = rng.random((len(stats), lanes)) < d[:, None]
    out = np.empty((len(stats), cycles, lanes // 64), dtype=np.uint64)
    for c in range(cycles):
        if c:
            flip = rng.random((len(stats), lanes)) < np.where(state, p10[:, None], p01[:, None])
            state = state ^ flip
        out[:, c, :] = np.packbits(state, axis=1, bitorder="little").view(np.uint64)
    return out


def _replay_streams(traces: dict[int, list[str]], cycles: int, lanes: int) -> dict:
    """Packed streams (cycles, lanes/64) replaying per-instance traces.

    Lane j replays instance j mod n, started (j div n) * step cycles late and wrapped around:
    every source of one lane shows the same instance at the same cycle.
    """
    import numpy as np

    out = {}
    for net, words in traces.items():
        n = len(words)
        size = (cycles + 7) // 8
        bits = np.array([np.unpackbits(np.frombuffer(int(w, 16).to_bytes(size, "little"),
                                                     dtype=np.uint8),
                                       bitorder="little")[:cycles] for w in words], dtype=bool)
        lane = np.arange(lanes)
        step = max(1, cycles // max(1, -(-lanes // n)))
        offset = (lane // n) * step
        index = (np.arange(cycles)[:, None] + offset[None, :]) % cycles
        stream = bits[(lane % n)[None, :], index]
        out[net] = np.packbits(stream, axis=1, bitorder="little").view(np.uint64)
    return out


def simulate_activity(netlist: Netlist, cells: CellLibrary, modules: dict[str, Netlist],
                      sources: dict[int, tuple[float, float]], *,
                      registers: dict[int, tuple[int, bool]] | None = None,
                      default: tuple[float, float] = DEFAULT_ACTIVITY,
                      traces: dict[int, list[str]] | None = None, trace_cycles: int = 0,
                      cycles: int = SIM_CYCLES, lanes: int = SIM_LANES, seed: int = 1,
                      iterations: int = 3) -> dict[int, tuple[float, float]]:
    """(toggles per cycle, probability of 1) of every net of ``netlist``.

    ``sources`` are the nets whose activity is given (input ports, child outputs, registers
    matched in the VCD); every other net driven by no combinational leaf cell (unmatched
    registers, macros, undriven nets) is a source at ``default``. ``registers`` maps an
    unmatched register's output net to (its D net, inverted): those take the activity their D
    net reaches, over a few ``iterations``. Sources with ``traces`` (per-cycle values of the
    VCD's instances, :func:`memwall.flows.activity.bit_trace`) replay them, every lane an
    instance shifted in time, so the bits of a bus keep the workload's correlation; the others
    are independent random streams with their toggle rate and probability. Correlation the
    logic creates (reconvergence, XOR of related signals) is simulated exactly; glitches are
    not (zero delay).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    traces = traces or {}
    if traces and trace_cycles >= 16:
        # As many samples as the default run: longer traces, fewer parallel lanes.
        lanes = max(64, (cycles * lanes // trace_cycles) // 64 * 64)
        cycles = trace_cycles
    else:
        traces = {}
    words = lanes // 64
    ones = np.full((cycles, words), np.uint64(0xFFFFFFFFFFFFFFFF))
    zeros = np.zeros((cycles, words), dtype=np.uint64)
    comb = []   # (cell, {pin: net}, [(net, tree)])
    driven: set[int] = set()
    for cell in netlist.cells:
        if not _leaf(cell, cells, modules):
            continue
        info = cells.info(cell.type)
        if info.is_sequential:
            continue
        outs = []
        for pin, func in info.outputs.items():
            bits = cell.pins.get(pin) or []
            if func and len(bits) == 1 and isinstance(bits[0], int):
                outs.append((bits[0], parse_bool(func)))
        if not outs:
            continue   # a macro: its outputs are sources
        ins = {p: b[0] for p, b in cell.pins.items() if p in info.inputs and len(b) == 1}
        comb.append((cell, ins, outs))
        driven.update(n for n, _ in outs)
    every = set(netlist.net_names) | {n for c in netlist.cells for b in c.pins.values()
                                      for n in b if isinstance(n, int)}
    given = {n: sources[n] for n in every if n in sources and n not in driven}
    free = sorted(n for n in every if n not in driven and n not in given)
    registers = {q: v for q, v in (registers or {}).items() if q in free}
    guess = dict.fromkeys(free, default)
    # Topological order of the combinational cells.
    order, known, pending = [], set(given) | set(free), list(comb)
    while pending:
        ready = [c for c in pending if all(not isinstance(n, int) or n in known
                                           for n in c[1].values())]
        if not ready:   # a combinational loop: break it at the first cell
            ready = pending[:1]
        order += ready
        known.update(n for c in ready for n, _ in c[2])
        ready_ids = {id(c) for c in ready}
        pending = [c for c in pending if id(c) not in ready_ids]
    result: dict[int, tuple[float, float]] = {}
    for _ in range(iterations if registers else 1):
        stats = {**given, **guess}
        names = sorted(n for n in stats if n not in traces)
        streams = dict(zip(names, _markov_streams([stats[n] for n in names], rng, cycles,
                                                  lanes), strict=True))
        streams.update(_replay_streams({n: t for n, t in traces.items() if n in stats},
                                       cycles, lanes))
        for _cell, ins, outs in order:
            env = {p: (streams.get(n, zeros) if isinstance(n, int) else
                       (ones if n == "1" else zeros)) for p, n in ins.items()}
            for n, tree in outs:
                streams[n] = eval_bool(tree, env, ones, zeros)
        total = float(cycles * lanes)
        result = {}
        for n, v in streams.items():
            toggles = float(np.bitwise_count(v[1:] ^ v[:-1]).sum()) / ((cycles - 1) * lanes)
            result[n] = (toggles, float(np.bitwise_count(v).sum()) / total)
        for q, (d, inverted) in registers.items():
            if d in result:
                t, p = result[d]
                guess[q] = (t, 1.0 - p if inverted else p)
    for n, value in given.items():   # sources keep their exact statistics
        result[n] = value
    return result


# --------------------------------------------------------------------------------------------
# Hierarchy: port input capacitance bottom-up, output port load top-down.

@dataclass
class Fanout:
    """Who drives and who loads every net of one module."""
    leaf_loads: dict[int, list[tuple[Cell, str]]]
    child_loads: dict[int, list[tuple[Cell, str, int, object]]]   # cell, pin, bit, child net
    leaf_drivers: dict[int, list[tuple[Cell, str]]]
    child_drivers: dict[int, list[tuple[Cell, str, int, object]]]


def _leaf(cell: Cell, cells: CellLibrary, modules) -> bool:
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


def build_hierarchy(netlists: dict[str, Netlist], manifest: dict, cells: CellLibrary,
                    top_output_load: float) -> Hierarchy:
    """Input capacitance of every input port bit and mean load of every output port bit.

    A port's input capacitance is the pins it reaches inside the module plus, through child
    instances, inside them, plus the wire load of its fan-out there (the net has no driver in
    that module, so nothing else counts it). An output port's load is the mean, over the
    module's instances, of what its net drives in the parent (pins, child inputs, wire, and the
    parent's own output load when the net leaves the parent too); the top's outputs drive
    ``top_output_load``.
    """
    hier = Hierarchy(netlists, manifest.get("hierarchy", {}), manifest["instances"],
                     manifest["top"])
    wire = cells.libs[0].wire_cap
    for m, n in netlists.items():
        hier.fan[m] = fanout(n, cells, netlists)

    def pin_caps(loads) -> float:
        return sum(cells.info(c.type).inputs[p] for c, p in loads)

    def child_caps(loads) -> float:
        return sum(in_cap(c.type).get(t, 0.0) for c, _p, _k, t in loads if isinstance(t, int))

    def in_cap(module: str) -> dict[int, float]:
        if module not in hier.in_cap:
            netlist, fan = netlists[module], hier.fan[module]
            caps = {}
            for p, d, _ in netlist.ports:
                for n in netlist.port_bits[p] if d == "input" else []:
                    if isinstance(n, int):
                        loads = fan.leaf_loads.get(n, []), fan.child_loads.get(n, [])
                        caps[n] = pin_caps(loads[0]) + child_caps(loads[1]) + \
                            wire(len(loads[0]) + len(loads[1]))
            hier.in_cap[module] = caps
        return hier.in_cap[module]

    for m in netlists:
        in_cap(m)
    sums: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    weights: dict[str, float] = defaultdict(float)
    for module in _top_down(hier):
        if weights.get(module):   # every parent is done: the mean is final
            hier.out_load[module] = {t: v / weights[module] for t, v in sums[module].items()}
        netlist, fan = netlists[module], hier.fan[module]
        own = hier.out_load.get(module, {})
        out_ports = {n for p, d, _ in netlist.ports if d != "input"
                     for n in netlist.port_bits[p] if isinstance(n, int)}
        count = hier.instances.get(module, 0)
        for cell in netlist.cells:
            if cell.type in netlists:
                weights[cell.type] += count
        for n, drivers in fan.child_drivers.items():
            leaf, kids = fan.leaf_loads.get(n, []), fan.child_loads.get(n, [])
            load = pin_caps(leaf) + child_caps(kids) + wire(len(leaf) + len(kids))
            if n in out_ports:
                load += own.get(n, top_output_load)
            for cell, _pin, _k, target in drivers:
                if isinstance(target, int):
                    sums[cell.type][target] += count * load
    return hier


def _top_down(hier: Hierarchy) -> list[str]:
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


# --------------------------------------------------------------------------------------------
# One module rewritten for OpenSTA: children cut to boundary ports, registers' D on ports.

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


def _vname(name: str) -> str:
    """``name`` as a Verilog identifier (escaped when it is not a plain one)."""
    return name if re.fullmatch(r"[A-Za-z_][\w$]*", name) else "\\" + name + " "


def _port_ref(port: str, index: int | None) -> str:
    return _vname(port) if index is None else f"{_vname(port)}[{index}]"


def rewrite_module(netlist: Netlist, hier: Hierarchy | None, cells: CellLibrary, *,
                   activity: dict | None, default: tuple[float, float] = DEFAULT_ACTIVITY,
                   top_output_load: float = 0.0, seed: int = 1) -> ModuleRun:
    """The module as OpenSTA sees it, with loads and (given ``activity``) every pin's activity.

    Child instances are removed. A child output that drives this module's own cells becomes a
    new input port (``memwall_co<net>``); a child input driven by this module's cells becomes a
    new output port (``memwall_ci<net>``) loaded with the child's input capacitance.

    ``activity`` is this module's entry of :func:`memwall.flows.activity.activity_from_vcd`
    (``signals``, ``traces``, ``trace_cycles``) with, under ``"children"``, the child modules'
    entries, whose port activities back up the names of this module's wires; None leaves the
    activity to a global default. Sources (input ports, child outputs, registers) take the VCD
    activity their names find, else ``default``; :func:`simulate_activity` gives every other
    net its activity, replaying the traced sources cycle by cycle.
    """
    modules = hier.netlists if hier else {}
    fan = hier.fan[netlist.name] if hier and netlist.name in hier.fan \
        else fanout(netlist, cells, modules)
    act = activity or {}
    signals, traces = act.get("signals", {}), act.get("traces", {})
    counts: dict[str, int] = defaultdict(int)

    def lookup(names: list[str]) -> tuple[str, tuple[float, float]] | None:
        for name in names:
            for key in (name, re.sub(r"\[0\]$", "", name), name + "[0]"):
                if key in signals:
                    return key, tuple(signals[key])
        return None

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
    port_on_net: dict[int, str] = {}
    wire = cells.libs[0].wire_cap
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
            bit = _bit_key(p, i)
            input_bits.append(bit)
            if isinstance(n, int):
                source(n, "inputs", lookup([bit] + netlist.net_names.get(n, [])))
                port_activity[bit] = sources[n]
    registers: dict[int, tuple[int, bool]] = {}
    if activity is not None:
        buffers = _buffers(netlist, cells, modules)
        for cell in netlist.cells:
            info = cells.info(cell.type) if _leaf(cell, cells, modules) else None
            if info is None or not info.is_sequential:
                continue
            states = _register_state_nets(cell, info)
            match = _register_match(cell, info, netlist, buffers, lookup)
            counts["registers annotated" if match else "registers defaulted"] += 1
            if match:
                key, toggles, duty, named_inverted = match
                state_duty = 1.0 - duty if named_inverted else duty
                for net, inv in states:
                    sources[net] = (toggles, 1.0 - state_duty if inv else state_duty)
                    if key in traces:
                        source_traces[net] = [
                            _invert_trace(w, act.get("trace_cycles", 0))
                            if inv != named_inverted else w for w in traces[key]]
                continue
            d_bits = cell.pins.get(info.data_pin or "", [])
            for net, inv in states:   # unmatched: the state follows D, as simulated
                if d_bits and isinstance(d_bits[0], int):
                    registers[net] = (d_bits[0], inv != info.data_inverted)
    loads = hier.out_load.get(netlist.name, {}) if hier else {}
    for p, d, _ in netlist.ports:
        if d == "input":
            continue
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            place_load(_bit_key(p, i), n,
                       loads.get(n, top_output_load) if isinstance(n, int) else 0.0)
    for p, d, _ in netlist.ports:   # output bits sharing a net with another port
        for i, n in zip(netlist.port_indices(p), netlist.port_bits[p], strict=True):
            if d != "input" and net_ref.get(n) != _port_ref(p, i):
                assigns.append((_port_ref(p, i), ref(n)))
    # Instance names OpenSTA can take in a pin path as they are.
    names = {id(c): c.name if re.fullmatch(r"[A-Za-z_][\w$]*", c.name) else f"{_PREFIX}c{k}"
             for k, c in enumerate(netlist.cells)}
    pin_activity: dict[str, tuple[float, float]] = {}
    check = None
    if activity is not None and any(_leaf(c, cells, modules) for c in netlist.cells):
        nets = simulate_activity(netlist, cells, modules, sources, registers=registers,
                                 default=default, traces=source_traces,
                                 trace_cycles=act.get("trace_cycles", 0), seed=seed)
        for cell in netlist.cells:
            if not _leaf(cell, cells, modules):
                continue
            for pin, bits in cell.pins.items():
                if len(bits) == 1 and isinstance(bits[0], int) and bits[0] in nets \
                        and bits[0] != clock_net:
                    pin_activity[f"{names[id(cell)]}/{pin}"] = nets[bits[0]]
        gates = {n for n, drivers in fan.leaf_drivers.items()
                 if any(not cells.info(c.type).is_sequential for c, _p in drivers)}
        check = _compare(netlist, {n: v for n, v in nets.items() if n in gates}, sources,
                         lookup)
    body, leaf_cells = [], 0
    for cell in netlist.cells:
        if not _leaf(cell, cells, modules):
            continue   # children and black boxes are cut out (their pins became ports)
        leaf_cells += 1
        conns = []
        for pin, bits in cell.pins.items():
            if len(bits) == 1:
                conns.append(f".{pin}({ref(bits[0])})")
            else:
                conns.append(f".{pin}({{{', '.join(ref(b) for b in bits)}}})" if bits
                             else f".{pin}()")
        body.append(f"  {cell.type} {_vname(names[id(cell)])} ({', '.join(conns)});")
    header = [_vname(p) for p, _, _ in netlist.ports] + new_inputs + new_outputs
    lines = [f"module {netlist.name} ({', '.join(header)});"]
    for p, d, r in netlist.ports:
        lines.append(f"  {d} {f'[{r[0]}:{r[1]}] ' if r else ''}{_vname(p)};")
    lines += [f"  input {p};" for p in new_inputs] + [f"  output {p};" for p in new_outputs]
    lines += [f"  wire {w};" for w in sorted({r for r in net_ref.values()
                                              if re.fullmatch(r"n\d+", r)},
                                             key=lambda x: int(x[1:]))]
    lines += body
    lines += [f"  assign {a} = {b};" for a, b in dict.fromkeys(assigns) if a != b]
    lines.append("endmodule")
    return ModuleRun(netlist.name, "\n".join(lines) + "\n", clock_port,
                     input_bits + new_inputs, output_loads, output_wires, port_activity,
                     pin_activity, dict(counts), leaf_cells, check)


def _boundary_port(kind: str, net: int, netlist: Netlist) -> str:
    """A readable, unique port name for a cut child pin: ``memwall_co12_l_value_3_``."""
    name = re.sub(r"\W", "_", (netlist.net_names.get(net) or [""])[0])[:40]
    return f"{_PREFIX}{kind}{net}_{name}" if name and not name.startswith("_") \
        else f"{_PREFIX}{kind}{net}"


def _compare(netlist: Netlist, nets: dict, sources: dict, lookup) -> dict | None:
    """Simulated against VCD toggle rates on the gate-driven nets that carry a name the VCD
    knows (output ports, named wires): how far the simulation is off (mean toggles/cycle)."""
    sim = vcd = 0.0
    count = 0
    for n, value in nets.items():
        if n in sources:
            continue
        found = lookup(netlist.net_names.get(n, []))
        if found:
            sim += value[0]
            vcd += found[1][0]
            count += 1
    if not count:
        return None
    return {"nets": count, "simulated_toggles": sim / count, "vcd_toggles": vcd / count}


def _invert_trace(word: str, cycles: int) -> str:
    return format(int(word, 16) ^ ((1 << cycles) - 1), "x")


def _buffers(netlist: Netlist, cells: CellLibrary, modules) -> dict[int, list[tuple[int, bool]]]:
    """Net -> the nets it drives through one-input inverters or buffers (and if inverted)."""
    out: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    for cell in netlist.cells:
        if not _leaf(cell, cells, modules):
            continue
        info = cells.info(cell.type)
        if info.is_sequential or len(info.inputs) != 1 or len(info.outputs) != 1:
            continue
        (pin_in,), ((pin_out, func),) = info.inputs, info.outputs.items()
        func = re.sub(r"[\s()]", "", func or "")
        inverted = func in (f"!{pin_in}", f"{pin_in}'")
        if not inverted and func != pin_in:
            continue
        a, y = (cell.pins.get(pin_in) or [None])[0], (cell.pins.get(pin_out) or [None])[0]
        if isinstance(a, int) and isinstance(y, int):
            out[a].append((y, inverted))
    return out


def _register_state_nets(cell: Cell, info: CellInfo) -> list[tuple[int, bool]]:
    """(net, inverted) of each output of a register that carries its state (Q, QN)."""
    iq, iqn = info.state_vars or ("IQ", "IQN")
    out = []
    for pin, func in info.outputs.items():
        func = re.sub(r"[\s()]", "", func or "")
        bits = cell.pins.get(pin) or []
        if func in (iq, iqn, f"!{iq}", f"!{iqn}") and len(bits) == 1 \
                and isinstance(bits[0], int):
            out.append((bits[0], func in (iqn, f"!{iq}")))
    return out


def _register_match(cell: Cell, info: CellInfo, netlist: Netlist, buffers, lookup):
    """The VCD signal that carries a register's state: (key, toggles, duty, inverted) or None.

    Matching rule: Yosys keeps an RTL register's name on the net the flip-flop drives. Where a
    library's flip-flops have only QN (ASAP7), Yosys adds an inverter and the name sits on the
    inverter's output. So the rule looks at the Q/QN nets, then one inverter or buffer further,
    then the flip-flop's instance name (with a ``_reg`` suffix dropped), and takes the first
    name found among the module's VCD signals. ``inverted`` tells that the named signal is the
    complement of the register's state.
    """
    for net, inv in _register_state_nets(cell, info):
        for candidate, cand_inv in [(net, False)] + buffers.get(net, []):
            match = lookup(netlist.net_names.get(candidate, []))
            if match:
                key, (toggles, duty) = match
                return key, toggles, duty, inv != cand_inv
    # A synthesis that names flip-flops after their register ("count_reg[3]", "count[3]")
    # gives the state itself.
    match = lookup([cell.name, re.sub(r"_reg(\[\d+\])?$", r"\1", cell.name)])
    if match:
        key, (toggles, duty) = match
        return key, toggles, duty, False
    return None


# --------------------------------------------------------------------------------------------
# OpenSTA scripts, runs and reports.

def module_tcl(run: ModuleRun, pdk: Pdk, clock_period_ns: float, netlist_path: Path, *,
               mode: str, global_activity: tuple[float, float] | None = None,
               input_slew_s: float | None = None) -> str:
    """The OpenSTA script of one run (``mode`` "timing" or "power")."""
    cells = pdk_cell_library(pdk)
    std = cells.libs[0]
    view_cells, view_macros = opensta_libraries(pdk)
    time_unit, cap_unit = pdk.time_unit_ps * 1e-12, std.cap_f
    period = pdk.to_library_time(clock_period_ns)
    slew = (nominal_slew(pdk) if input_slew_s is None else input_slew_s) / time_unit
    budget = IO_BUDGET * period
    lines = ["# generated by memwall flows/sta.py",
             # The first library read sets the SDC units: standard cells (ps on ASAP7) first,
             # the fakeram macros (ns) after them.
             *[f"read_liberty {{{p}}}" for p in view_cells],
             *[f"read_liberty {{{p}}}" for p in view_macros],
             f"read_verilog {{{netlist_path}}}",
             f"link_design {run.module}",
             'puts "MEMWALL_UNITS [sta::unit_scale time] [sta::unit_scale capacitance]"']
    if std.default_operating_conditions:
        # sky130hd names its default operating conditions before it defines them; the 2019
        # reader then has none and internal power reads 0. Set them explicitly.
        lines.append(f"set_operating_conditions -library {std.name} "
                     f"{std.default_operating_conditions}")
    lines.append('puts "MEMWALL_OPCOND [sta::operating_conditions max]"')
    if run.clock_port:
        lines += [f"create_clock -name clk -period {period:.6g} [get_ports {run.clock_port}]",
                  f"set_clock_transition {slew:.6g} [all_clocks]"]
    else:   # combinational module: a virtual clock for the I/O budget and activity density
        lines.append(f"create_clock -name clk -period {period:.6g}")
    lines.append("proc memwall_ports {names} {\n  set out {}\n  foreach n $names "
                 "{ lappend out [get_ports $n] }\n  return $out\n}")
    if run.input_ports:
        names = " ".join("{" + p + "}" for p in run.input_ports)
        lines += [f"set memwall_inputs [memwall_ports {{{names}}}]",
                  f"set_input_delay {budget:.6g} -clock clk $memwall_inputs",
                  f"set_input_transition {slew:.6g} $memwall_inputs"]
    if run.output_loads:
        lines.append(f"set_output_delay {budget:.6g} -clock clk [all_outputs]")
    stage = nominal_fo4_delay(pdk) / time_unit
    for port, load in sorted(run.output_loads.items()):
        tree = buffer_tree(load, pdk) if mode == "timing" else None
        if tree:
            load = tree[0]
            lines.append(f"set_output_delay {budget + tree[1] * stage:.6g} -clock clk "
                         f"[get_ports {{{port}}}]   ;# buffer tree, {tree[1]} stages")
        lines.append(f"set_load -pin_load {load / cap_unit:.6g} [get_ports {{{port}}}]")
    for port, load in sorted(run.output_wires.items()):
        lines.append(f"set_load -wire_load {load / cap_unit:.6g} [get_ports {{{port}}}]")
    if mode == "timing":
        lines += ['puts "MEMWALL_WORST [sta::worst_slack_cmd max]"',
                  'puts "MEMWALL_TNS [sta::total_negative_slack_cmd max]"',
                  'puts "MEMWALL_PATH_BEGIN"',
                  "report_checks -path_delay max -digits 4 -fields {slew cap}",
                  'puts "MEMWALL_PATH_END"']
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
            # Every cell pin: set_power_activity -pins is broken in this release (its Tcl
            # calls a missing get_pins_error). sta::set_power_pin_activity writes the pin's
            # entry directly; the view's self-naming functions keep drivers from being
            # re-evaluated, and with every load pin set no register gets its D copied to Q.
            lines.append("proc memwall_pin_activity {items} {\n"
                         "  foreach {pin a d} $items "
                         "{ sta::set_power_pin_activity [get_pins $pin] $a $d }\n}")
            items = sorted(run.pin_activity.items())
            for k in range(0, len(items), 200):
                chunk = " ".join(f"{{{pin}}} {t:.6g} {min(1.0, max(0.0, d)):.6g}"
                                 for pin, (t, d) in items[k:k + 200])
                lines.append(f"memwall_pin_activity {{{chunk}}}")
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
    return {"worst_slack_s": slack if abs(slack) < 1e20 else math.inf,   # no path: INF
            "tns_s": float(tns.group(1)), "path": path if "Startpoint" in path else ""}


def check_run(text: str, pdk: Pdk) -> None:
    """Fail on the two silent traps: wrong SDC time unit, missing operating conditions."""
    units = re.search(r"MEMWALL_UNITS (\S+) (\S+)", text)
    if not units:
        raise StaError("OpenSTA did not report its units")
    time_s, expected = float(units.group(1)), pdk.time_unit_ps * 1e-12
    if not math.isclose(time_s, expected, rel_tol=1e-4):
        raise StaError(f"OpenSTA reads SDC times in {time_s:g} s but the flow writes them in "
                       f"{expected:g} s ({pdk.name} cells): every clock would be "
                       f"{time_s / expected:g}x off")
    opcond = re.search(r"MEMWALL_OPCOND (\S+)", text)
    std = pdk_cell_library(pdk).libs[0]
    if std.library.find("operating_conditions") and (not opcond or opcond.group(1) == "NULL"):
        raise StaError("OpenSTA has no operating conditions: internal power would read 0")


def run_module(run: ModuleRun, pdk: Pdk, clock_period_ns: float, workdir: Path, *,
               mode: str, global_activity: tuple[float, float] | None = None,
               input_slew_s: float | None = None) -> dict:
    """One OpenSTA run of a rewritten module: timing (s) or power (W) figures."""
    workdir.mkdir(parents=True, exist_ok=True)
    netlist = workdir / f"{run.module}.{mode}.v"
    netlist.write_text(run.verilog)
    out = run_tcl(module_tcl(run, pdk, clock_period_ns, netlist, mode=mode,
                             global_activity=global_activity, input_slew_s=input_slew_s),
                  workdir, f"{run.module}.{mode}")
    check_run(out, pdk)
    return parse_timing(out) if mode == "timing" else parse_power(out)


def run_sta(synth_dir: Path, manifest: dict, pdk: Pdk, clock_period_ns: float,
            activity: dict | None, *, jobs: int | None = None) -> dict:
    """Timing and power of a hierarchically synthesised design, one unique module at a time.

    Parameters
    ----------
    synth_dir
        ``build/<cfg>/synth/<pdk>`` with ``netlist/<module>.v`` for every module of
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

    Returns
    -------
    dict
        ``wns_ns`` (worst module slack if negative, else 0), ``worst_slack_ns``, ``tns_ns``
        (module TNS x instances, summed), ``critical_path`` (module, slack_ns, text),
        ``power_mw`` (internal, switching, leakage, total: own power x instances, summed),
        ``power_by_module``, ``activity_source``, ``annotated`` (per source kind how many took
        VCD activity and how many the default, weighted by instances) and ``notes``.
    """
    synth_dir = Path(synth_dir)
    work = synth_dir / "sta"
    cells = pdk_cell_library(pdk)
    netlists = {}
    for module in manifest["modules"]:
        path = synth_dir / "netlist" / f"{module}.v"
        if not path.exists():
            raise StaError(f"no netlist for module {module}: {path}")
        netlists[module] = parse_netlist(path.read_text(), module)
    load = nominal_load(pdk)
    hier = build_hierarchy(netlists, manifest, cells, load)
    instances = manifest["instances"]
    per_module = (activity or {}).get("modules", {})
    zero = dict.fromkeys(("internal", "switching", "leakage", "total"), 0.0)

    def job(module: str):
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
            return module, None, zero, power_run
        timing = run_module(timing_run, pdk, clock_period_ns, work, mode="timing")
        timing["buffered"] = {p: c for p, c in timing_run.output_loads.items()
                              if buffer_tree(c, pdk)}
        power = run_module(power_run, pdk, clock_period_ns, work, mode="power",
                           global_activity=None if activity is not None else DEFAULT_ACTIVITY)
        return module, timing, power, power_run

    workers = jobs or max(1, min(8, (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(job, [m for m in manifest["modules"] if instances.get(m)]))
    total = dict(zero)
    by_module: dict[str, dict] = {}
    annotated: dict[str, int] = defaultdict(int)
    worst, tns, critical = math.inf, 0.0, None
    for module, timing, power, run in results:
        count = instances[module]
        own = {k: v * 1e3 for k, v in power.items()}
        entry = {"instances": count, "per_instance_mw": own, "total_mw": own["total"] * count,
                 "annotated": run.annotated, "simulated_vs_vcd": run.check}
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
                critical = {"module": module, "slack_ns": slack_ns, "text": timing["path"]}
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
    return {
        "wns_ns": min(0.0, worst) if worst != math.inf else 0.0,
        "worst_slack_ns": worst if worst != math.inf else None,
        "tns_ns": tns,
        "critical_path": critical,
        "power_mw": total,
        "power_by_module": by_module,
        "activity_source": source,
        "annotated": summary,
        "black_boxes": dict(sorted(boxes.items())),
        "notes": [f"Each module is timed on its own cells; a path that crosses a module "
                  f"boundary is timed against a {IO_BUDGET:.0%} clock budget at the boundary, "
                  "not end to end.",
                  "A boundary load above FO16 is timed behind a modelled FO4 buffer tree "
                  "(Yosys inserts none; see buffer_trees_modelled, fF); high-fan-out nets "
                  "inside a module are timed unbuffered.",
                  "Power is each module's own cells x its instances; a net crossing a boundary "
                  "is counted once, at its driver, with the load on the other side.",
                  "Black boxes (cells in no Liberty file, e.g. memwall_ram memories) have no "
                  "power model here: their own power is not counted; their outputs are "
                  "activity sources (VCD names or the default) and their inputs load nothing."],
    }
