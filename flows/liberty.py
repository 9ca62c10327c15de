"""Liberty: the one reader of ``.lib`` files for the PDK discovery, synthesis, STA and calibration.

Three tools, one grammar:

- a **tokenizer** (:func:`parse_liberty_text`) that turns Liberty source into
  :class:`LibertyGroup` trees (attributes, complex attributes, groups);
- a **brace walker** that finds where a group ends (:func:`group_end`) and the span of every
  group in a piece of text (:func:`group_spans`), so a 46 MB library is never parsed whole:
  :class:`Liberty` parses its header at once and a cell only when asked for it;
- :func:`strip_groups`, which drops groups of some kinds from the text (synthesis reads the
  library without its timing and power tables).

On top of it: units, supply, wire-load model (:class:`Liberty`), the pins, functions and
register facts of a cell (:class:`CellInfo`, :class:`CellLibrary`), table look-up
(:func:`table_lookup`) and Liberty Boolean functions (:func:`parse_bool`, :func:`eval_bool`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .errors import LibertyError

__all__ = [
    "LibertyGroup", "parse_liberty_text", "group_end", "group_spans",
    "blank_comments", "strip_groups", "Liberty", "pins", "table_values", "table_lookup",
    "CellInfo", "CellLibrary", "cell_info", "cell_library", "parse_bool", "eval_bool",
]


# --------------------------------------------------------------------------------------------
# Tokenizer: Liberty source -> groups.

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


# --------------------------------------------------------------------------------------------
# Brace walker: where groups start and end in the text, without parsing them.

CELL_START = re.compile(r'^[ \t]*cell[ \t]*\([ \t]*"?([^")\s]+)"?[ \t]*\)[ \t]*\{', re.M)
_BRACE = re.compile(r"[{}]")
_GROUP_EVENT = re.compile(r"([A-Za-z_]\w*)\s*\(([^()]*)\)\s*\{|\}")


def group_end(text: str, start: int) -> int:
    """End (exclusive) of the group whose ``{`` is the first one at or after ``start``.

    Liberty strings hold no braces in the files the flow reads, so braces are counted as they
    come.
    """
    depth = 0
    for brace in _BRACE.finditer(text, text.index("{", start)):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return brace.end()
    raise LibertyError(f"unbalanced braces in the group at offset {start}")


def blank_comments(text: str) -> str:
    """Comments replaced by spaces of the same length, so offsets stay valid."""
    return re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)


def group_spans(text: str) -> list[tuple[str, int, int, int]]:
    """(kind, start, end, parent index) of every group in ``text``, in document order."""
    spans: list[list] = []
    stack: list[int] = []
    for m in _GROUP_EVENT.finditer(blank_comments(text)):
        if m.group(0) == "}":
            if stack:
                spans[stack.pop()][2] = m.end()
        else:
            spans.append([m.group(1), m.start(), -1, stack[-1] if stack else -1])
            stack.append(len(spans) - 1)
    return [tuple(s) for s in spans]


def strip_groups(text: str, kinds: tuple[str, ...]) -> str:
    """``text`` without its groups of the given ``kinds`` (each from its line to its ``}``)."""
    start = re.compile(rf"^[ \t]*({'|'.join(map(re.escape, kinds))})\s*\([^)]*\)\s*\{{", re.M)
    pieces, pos = [], 0
    for group in start.finditer(text):
        if group.start() < pos:
            continue   # nested in a group already dropped
        pieces.append(text[pos:group.start()])
        pos = group_end(text, group.start())
    pieces.append(text[pos:])
    return "".join(pieces)


# --------------------------------------------------------------------------------------------
# One library file.

_SI_PREFIX = {"": 1.0, "k": 1e3, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}


class Liberty:
    """One Liberty file: its header parsed at once, its cells found and parsed on first use."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.text = self.path.read_text()
        first = CELL_START.search(self.text)
        #: Offset of the first cell: everything before it is the library's header.
        self.head_end = first.start() if first else len(self.text)
        # The header without its (huge) cell list: close the library group by hand.
        header = parse_liberty_text(self.text[:self.head_end] + "\n}\n")
        if not header or header[0].kind != "library":
            raise LibertyError(f"{path}: not a Liberty library")
        self.library = header[0]
        self.name = self.library.args[0]
        self._offsets: dict[str, int] | None = None
        self._cells: dict[str, LibertyGroup] = {}

    @property
    def header_text(self) -> str:
        """The source before the first cell (library attributes, templates, wire loads)."""
        return self.text[:self.head_end]

    @property
    def body_text(self) -> str:
        """The source from the first cell to the library's closing brace (excluded)."""
        return self.text[self.head_end:self.text.rstrip().rfind("}")]

    @property
    def offsets(self) -> dict[str, int]:
        """Cell name -> offset of its ``cell (...)`` line."""
        if self._offsets is None:
            self._offsets = {m.group(1): m.start()
                             for m in CELL_START.finditer(self.text, self.head_end)}
        return self._offsets

    @property
    def cell_names(self) -> list[str]:
        return list(self.offsets)

    def __contains__(self, cell: str) -> bool:
        return cell in self.offsets

    def cell_span(self, name: str) -> tuple[int, int]:
        """(start, end) of cell ``name`` in :attr:`text`."""
        start = self.offsets[name]
        return start, group_end(self.text, start)

    def cell(self, name: str) -> LibertyGroup:
        if name not in self._cells:
            start, end = self.cell_span(name)
            self._cells[name] = parse_liberty_text(self.text[start:end])[0]
        return self._cells[name]

    # -- units (Liberty defaults where an attribute is missing) ------------------------------
    def _scale(self, attr: str, base: str, default: str) -> float:
        text = str(self.library.attr(attr, default)).strip().lower()
        match = re.fullmatch(r"([\d.e+-]*)\s*([a-z]*?)" + base, text)
        if not match:
            raise LibertyError(f"{self.path}: cannot read {attr} = {text!r}")
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

    def cell_area(self, name: str | None = None) -> float:
        """The ``area`` of cell ``name`` (default: the first cell, as in a macro's file)."""
        name = name or self.cell_names[0]
        area = self.cell(name).attr("area")
        if area is None:
            raise LibertyError(f"{self.path}: cell {name} states no area")
        return float(area)

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


# --------------------------------------------------------------------------------------------
# Pins and tables.

def pins(cell: LibertyGroup, library: LibertyGroup | None = None):
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


def table_values(group: LibertyGroup) -> list[list[float]]:
    """The ``values`` of a table group as rows of numbers."""
    return [[float(x) for x in row.split(",")] for row in group.attr("values")]


def _interpolate(group: LibertyGroup, library: LibertyGroup, axes: dict[str, float]) -> float:
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
    rows = table_values(group)
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
    return _interpolate(group, library, axes)


# --------------------------------------------------------------------------------------------
# What the netlist handling needs of a cell.

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
    max_capacitance: dict[str, float] = field(default_factory=dict)  # output pin -> F


def cell_info(cell: LibertyGroup, liberty: Liberty) -> CellInfo:
    """The :class:`CellInfo` of a parsed cell of ``liberty``."""
    inputs, outputs, clocks, max_cap = {}, {}, [], {}
    default_max = liberty.library.attr("default_max_capacitance", None)
    for name, pin in pins(cell, liberty.library):
        direction = pin.attr("direction")
        if direction == "input":
            inputs[name] = float(pin.attr("capacitance", 0.0)) * liberty.cap_f
            if str(pin.attr("clock", "false")) == "true":
                clocks.append(name)
        elif direction in ("output", "inout"):
            outputs[name] = pin.attr("function")
            limit = pin.attr("max_capacitance", default_max)
            if limit is not None:       # where the cell's delay tables end
                max_cap[name] = float(limit) * liberty.cap_f
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
                    tuple(clocks), max_cap)


class CellLibrary:
    """The standard cells and macros of one PDK, looked up by cell name."""

    def __init__(self, paths: list[Path]):
        self.libs = [Liberty(p) for p in paths]
        self._info: dict[str, CellInfo] = {}
        self._variants: dict[str, dict[tuple, list[str]]] = {}   # Liberty path -> signature
        self.wire_load = None    # a flows.wire_load.WireLoad in place of the Liberty's own

    def with_wire_load(self, model) -> CellLibrary:
        """The same cells (parsed once, shared) with ``model`` as every net's wire."""
        view = copy.copy(self)
        view.wire_load = model
        return view

    def wire_cap(self, fanout: int) -> float:
        """Wire capacitance (F) of a net with ``fanout`` loads: the design's wire-load model
        (:mod:`memwall.flows.wire_load`), else the first library's default one."""
        if self.wire_load is not None:
            return self.wire_load.cap_f(fanout)
        return self.libs[0].wire_cap(fanout)

    def liberty_of(self, cell: str) -> Liberty:
        for lib in self.libs:
            if cell in lib:
                return lib
        raise LibertyError(f"cell {cell} is in none of {[str(lib.path) for lib in self.libs]}")

    def __contains__(self, cell: str) -> bool:
        return any(cell in lib for lib in self.libs)

    def info(self, cell: str) -> CellInfo:
        if cell not in self._info:
            liberty = self.liberty_of(cell)
            self._info[cell] = cell_info(liberty.cell(cell), liberty)
        return self._info[cell]


    def drive_variants(self, cell: str) -> list[str]:
        """The cells of ``cell``'s Liberty with its pins and functions (its drive strengths,
        ``cell`` included), weakest first by their outputs' ``max_capacitance``."""
        liberty = self.liberty_of(cell)
        key = str(liberty.path)
        if key not in self._variants:    # every cell of the file parsed once, on first use
            index: dict[tuple, list[str]] = {}
            for name in liberty.cell_names:
                index.setdefault(_drive_signature(self.info(name)), []).append(name)
            self._variants[key] = index
        same = self._variants[key][_drive_signature(self.info(cell))]
        return sorted(same, key=lambda c: (sum(self.info(c).max_capacitance.values()), c))


def _drive_signature(info: CellInfo) -> tuple:
    """What two drive strengths of one gate share: pin names, output functions (spaces
    dropped), and for a sequential cell its data and clock pins."""
    return (tuple(sorted(info.inputs)),
            tuple(sorted((p, (f or "").replace(" ", "")) for p, f in info.outputs.items())),
            info.is_sequential, info.data_pin, info.data_inverted, info.clock_pins)


@cache
def cell_library(paths: tuple[Path, ...], wire_load=None) -> CellLibrary:
    if wire_load is not None:
        return cell_library(paths).with_wire_load(wire_load)
    return CellLibrary(list(paths))


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
