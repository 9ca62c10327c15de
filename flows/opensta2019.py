"""The workarounds for Debian's OpenSTA (2019), each beside the trap it fixes.

Every trap was found by comparing the flow with a power computed by hand from the Liberty
tables (:mod:`memwall.flows.calibration`, which also re-runs each trap with
:func:`memwall.flows.calibration.reproduce_traps`, so the causes stay demonstrated):

=====================================  ======================================================
trap                                   workaround
=====================================  ======================================================
SDC times in the first library's unit  :func:`liberty_reads`, :func:`check_run`
sky130hd internal power exactly 0      :func:`move_default_operating_conditions`,
                                       :func:`operating_conditions_tcl`, :func:`check_run`
internal power 2x (sum of rise+fall)   :func:`arc_scale` in the view (:func:`opensta_view`)
ASAP7 keeps one of VDD/VSS groups      :func:`merged_internal_power` in the view
leakage 2-4x (conditional groups)      :func:`state_leakage` in the view
Q/QN ``when`` literals independent     :func:`normalise_when` in the view
activity propagation wrong,            the flow's own simulation
``set_power_activity -pins`` broken    (:mod:`memwall.flows.gate_activity`),
                                       :func:`pin_activity_tcl`, :func:`self_naming_function`
=====================================  ======================================================

The flow reads a restated copy of each Liberty file (:func:`opensta_view`, cached beside it in
``build/pdk/<pdk>/<key>/opensta2019/``): internal-power groups of one arc merged over power pins and
scaled so this release's arithmetic gives the Liberty meaning, ``cell_leakage_power`` stated,
the operating conditions in order, and combinational output functions naming the pin itself
so the propagation keeps the activity the flow sets (``sta::set_power_pin_activity``).
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections import defaultdict
from pathlib import Path

from .errors import StaError
from .liberty import (
    CELL_START,
    Liberty,
    LibertyGroup,
    blank_comments,
    group_end,
    group_spans,
    parse_liberty_text,
    pins,
    table_values,
)
from .pdk import Pdk, pdk_cell_library

__all__ = ["VIEW_VERSION", "tcl_word", "liberty_reads", "check_run",
           "move_default_operating_conditions", "operating_conditions_tcl", "pin_activity_tcl",
           "opensta_view", "opensta_libraries", "normalise_when", "complement_pairs",
           "arc_scale", "merged_internal_power", "state_leakage", "self_naming_function"]


_TCL_PLAIN = re.compile(r"[A-Za-z0-9_./:+=@,%~-]")
_TCL_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def tcl_word(text: str | os.PathLike) -> str:
    r"""``text`` as one Tcl word that Tcl reads back exactly (a path, a name).

    The rule: braces, ``{text}``, when that is exact, i.e. ``text`` holds no backslash (inside
    braces a backslash-newline still becomes a space, and a backslash before a brace changes
    the nesting) and its braces are balanced (never more ``}`` than ``{`` so far, as many of
    each in all); and it holds no control character, so the word stays on one line for the
    scripts that are edited line by line. Otherwise no braces: every ASCII character but
    letters, digits and ``_./:+=@,%~-`` gets a backslash in front (``\\``, ``\{``, ``\$``,
    ``\ ``, ...), and a control character is written ``\uXXXX`` (a backslash before a newline
    would join lines; before a letter or digit it would start an escape such as ``\n`` or
    ``\x``). Characters beyond ASCII are never special to Tcl and stay as they are. Plain
    paths keep their usual form: ``tcl_word("/a/b.lib") == "{/a/b.lib}"``.
    """
    text = os.fspath(text)
    if "\\" not in text and not _TCL_CONTROL.search(text):
        depth = 0
        for char in text:
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth < 0:
                break
        else:
            if depth == 0:
                return "{" + text + "}"
    return "".join(char if _TCL_PLAIN.fullmatch(char) or ord(char) > 127
                   else f"\\u{ord(char):04x}" if _TCL_CONTROL.fullmatch(char)
                   else "\\" + char
                   for char in text)


# --------------------------------------------------------------------------------------------
# Trap: SDC times are in the time unit of the first Liberty file read.

def liberty_reads(pdk: Pdk) -> list[str]:
    """``read_liberty`` commands for the PDK's views, standard cells first.

    **SDC times are in the time unit of the first Liberty file read** (ps for ASAP7, ns for
    sky130hd/nangate45). A clock period written in ns on ASAP7 is read as ps: the clock runs
    1000x too fast and dynamic power is 1000x too large. The flow reads the standard cells first
    (ASAP7's fakeram macros count in ns and would make SDC ns), converts every time with
    :meth:`Pdk.to_library_time`, and :func:`check_run` fails unless ``sta::unit_scale time``
    agrees.
    """
    view_cells, view_macros = opensta_libraries(pdk)
    return [f"read_liberty {tcl_word(p)}" for p in view_cells + view_macros]


def check_run(text: str, pdk: Pdk) -> None:
    """Fail on the two silent traps: wrong SDC time unit, missing operating conditions.

    ``text`` is the output of a script that printed ``MEMWALL_UNITS [sta::unit_scale time] …``
    and ``MEMWALL_OPCOND [sta::operating_conditions max]``.
    """
    units = re.search(r"MEMWALL_UNITS (\S+) (\S+)", text)
    if not units:
        raise StaError("OpenSTA did not report its units")
    time_s, expected = float(units.group(1)), pdk.time_unit_ps * 1e-12
    if not math.isclose(time_s, expected, rel_tol=1e-4):
        raise StaError(f"OpenSTA reads SDC times in {time_s:g} s but the flow writes them "
                           f"in {expected:g} s ({pdk.name} cells): every clock would be "
                           f"{time_s / expected:g}x off")
    opcond = re.search(r"MEMWALL_OPCOND (\S+)", text)
    std = pdk_cell_library(pdk).libs[0]
    if std.library.find("operating_conditions") and (not opcond or opcond.group(1) == "NULL"):
        raise StaError("OpenSTA has no operating conditions: internal power would read 0")


# --------------------------------------------------------------------------------------------
# Trap: sky130hd internal power reads exactly 0.

_DEFAULT_OPCOND = re.compile(r"^[ \t]*default_operating_conditions\s*:[^\n]*\n", re.M)
_OPCOND_GROUP = re.compile(r"^[ \t]*operating_conditions\s*\([^)]*\)\s*\{[^}]*\}[ \t]*\n", re.M)


def move_default_operating_conditions(header: str) -> str:
    """``header`` with ``default_operating_conditions`` moved below the group it names.

    **sky130hd internal power reads exactly 0.** Its library states
    ``default_operating_conditions : "tt_025C_1v80";`` *before* the ``operating_conditions``
    group; the 2019 reader looks the name up at that line, finds nothing ("default_operating_
    condition tt_025C_1v80 not found") and keeps no operating conditions. Internal power tables
    are then looked up without a PVT and give 0; switching power takes the supply from
    ``voltage_map`` and stays right. Moving the attribute below the group, or
    ``set_operating_conditions`` (:func:`operating_conditions_tcl`), restores it (same
    figures); the flow does both and :func:`check_run` fails if OpenSTA still reports none.
    """
    line, group = _DEFAULT_OPCOND.search(header), _OPCOND_GROUP.search(header)
    if line and group and line.start() < group.start():
        return header[:line.start()] + header[line.end():group.end()] + line.group(0) + \
            header[group.end():]
    return header


def operating_conditions_tcl(std: Liberty) -> list[str]:
    """``set_operating_conditions`` for the library's default (see the function above)."""
    if not std.default_operating_conditions:
        return []
    return [f"set_operating_conditions -library {std.name} {std.default_operating_conditions}"]


# --------------------------------------------------------------------------------------------
# Trap: activity propagation, and ``set_power_activity -pins``.

def pin_activity_tcl(pin_activity: dict[str, tuple[float, float]], chunk: int = 200) -> list[str]:
    """Tcl that sets (toggles per cycle, duty) on every listed ``inst/pin``.

    OpenSTA's own propagation is not used: this release's per-gate formula ignores
    reconvergence and gets XOR wrong; on an FP32 adder whose inputs toggled <= 0.03 per cycle
    it gave internal nets a mean of 1.7 and a maximum of 10 toggles per cycle (the same run's
    RTL signals toggle 0.10 on average) and 17x the power (18.9 against 1.1 mW for the 16 adders
    of dplena16 on ASAP7). The flow simulates the gates itself
    (:mod:`memwall.flows.gate_activity`) and sets every cell pin.

    ``set_power_activity -pins`` fails (its Tcl calls a missing ``get_pins_error``), and the
    propagation overwrites a user activity on any internal pin. ``sta::set_power_pin_activity``
    writes the pin's entry directly; the view's self-naming functions
    (:func:`self_naming_function`) keep drivers from being re-evaluated, and with every load
    pin set no register gets its D copied to Q.
    """
    lines = ["proc memwall_pin_activity {items} {\n"
             "  foreach {pin a d} $items "
             "{ sta::set_power_pin_activity [get_pins $pin] $a $d }\n}"]
    items = sorted(pin_activity.items())
    for k in range(0, len(items), chunk):
        body = " ".join(f"{{{pin}}} {t:.6g} {min(1.0, max(0.0, d)):.6g}"
                        for pin, (t, d) in items[k:k + chunk])
        lines.append(f"memwall_pin_activity {{{body}}}")
    return lines


def self_naming_function(pin: LibertyGroup, body: str, start: int, state: set[str]):
    """Edits giving a combinational output pin the function ``"<pin>"``.

    OpenSTA 2019 then evaluates it to the activity the flow set on the pin (it would otherwise
    overwrite it with its own estimate, and it crashes on an output without a function). Timing
    arcs carry their own sense, so timing is unchanged. ``body`` is the pin group's source
    (comments blanked) at offset ``start`` of the cell; ``state`` the ff/latch variables.
    """
    func = pin.attr("function")
    if not func or pin.attr("direction") not in ("output", "inout") \
            or set(re.findall(r"\w+", func)) & state:
        return []
    return [(start + m.start(), start + m.end(), f'function : "{pin.args[0]}";')
            for m in re.finditer(r'(?<![\w])function\s*:\s*("[^"]*"|[^;\n]*)\s*;', body)]


# --------------------------------------------------------------------------------------------
# Traps in the power arithmetic: internal power 2x, one power pin kept, Q/QN conditions.

def complement_pairs(cell: LibertyGroup) -> list[tuple[str, str]]:
    """(Q, QN) output pin pairs of a flip-flop or latch: their values are complements."""
    seq = cell.find("ff") + cell.find("latch")
    if not seq or len(seq[0].args) < 2:
        return []
    iq, iqn = seq[0].args[:2]
    funcs = {name: re.sub(r"[\s()]", "", str(pin.attr("function", ""))) for name, pin in
             pins(cell) if pin.attr("direction") == "output"}
    pos = [p for p, f in funcs.items() if f in (iq, f"!{iqn}")]
    neg = [p for p, f in funcs.items() if f in (iqn, f"!{iq}")]
    return [(p, n) for p in pos for n in neg]


def normalise_when(when: str, pairs: list[tuple[str, str]]) -> str:
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


def merged_internal_power(groups: list[LibertyGroup], when: str | None, indent: str,
                          scale: float) -> str:
    """One ``internal_power`` group: the power pins' tables summed, times ``scale``.

    Summed because this OpenSTA keeps only the first of the groups that differ by
    ``related_pg_pin`` (ASAP7 gives VDD and VSS apart), while the cell's internal energy is
    what all rails draw. ASAP7 came out right before only because that bug cancels the next
    one (:func:`arc_scale`). ``scale`` is set by :func:`arc_scale`.
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
        rows = table_values(table)
        for other in siblings[1:]:
            rows = [[a + b for a, b in zip(r1, r2, strict=True)]
                    for r1, r2 in zip(rows, table_values(other), strict=True)]
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


def arc_scale(pin: LibertyGroup, group: LibertyGroup, clocks: set[str],
              related: set[str]) -> float:
    """Factor on an ``internal_power`` table so that OpenSTA 2019 yields its Liberty meaning.

    **Internal power 2x** (sky130hd, nangate45): this release multiplies the *sum* of a table's
    rise and fall energy by the transition rate (the mean is meant): factor 1/2. On an output
    pin it weighs each group by a "duty" of 1 for an arc from a clock pin, the probability of
    ``when`` for a conditional group, else 0.5, without normalising over the input arcs (and the
    view's self-referencing functions leave it no Boolean difference to do better): the factor
    turns that into an equal share 1/k of each of the k related input pins, with ``when`` groups
    weighted by their probability.
    """
    if pin.attr("direction") not in ("output", "inout") or not group.attr("related_pin"):
        return 0.5
    k = max(1, len(related))
    rel = group.attr("related_pin")
    duty = 1.0 if rel in clocks or group.attr("when") else 0.5
    return 0.5 / (k * duty)


# --------------------------------------------------------------------------------------------
# Trap: leakage 2-4x on ASAP7.

def state_leakage(cell: LibertyGroup) -> float | None:
    """Leakage (library units) for a cell without ``cell_leakage_power``.

    **Leakage 2-4x** (ASAP7, which has no ``cell_leakage_power``): OpenSTA 2019 weighs
    conditional leakage groups wrongly (inverters 2x, flip-flops 4x), so the view states the
    total. It is the unconditional ``leakage_power`` groups when there are any (ASAP7 states its
    state average that way), else the mean over the distinct ``when`` states; each summed over
    power pins.
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


# --------------------------------------------------------------------------------------------
# The view: every workaround above applied to a Liberty file.

VIEW_VERSION = "/* memwall OpenSTA-2019 view, version 3 */"
_view_lock = threading.Lock()


def _view_cell(text: str) -> str:
    cell = parse_liberty_text(text)[0]
    pairs = complement_pairs(cell)
    spans = group_spans(text)
    state = {a for g in cell.find("ff") + cell.find("latch") for a in g.args}
    clocks = {n for n, p in pins(cell) if str(p.attr("clock", "false")) == "true"}
    edits: list[tuple[int, int, str]] = []
    for index, (kind, start_pin, end_pin, _parent) in enumerate(spans):
        if kind not in ("pin", "bus", "bundle"):
            continue
        body = blank_comments(text[start_pin:end_pin])
        pin = parse_liberty_text(body)[0]
        if kind == "pin":
            edits += self_naming_function(pin, body, start_pin, state)
        children = [s for s in spans if s[3] == index and s[0] == "internal_power"]
        if not children:
            continue
        related = {parse_liberty_text(text[s:e])[0].attr("related_pin")
                   for _k, s, e, _p in children} - {None}
        merged: dict[tuple, list] = {}
        for _k, start, end, _p in children:
            group = parse_liberty_text(text[start:end])[0]
            when = group.attr("when")
            when = normalise_when(when, pairs) if when else None
            key = (group.attr("related_pin"), when)
            merged.setdefault(key, []).append((start, end, group))
        for (_rel, when), items in merged.items():
            start = items[0][0]
            indent = text[text.rfind("\n", 0, start) + 1:start]
            first = items[0][2]
            edits.append((start, items[0][1],
                          merged_internal_power([g for _s, _e, g in items], when,
                                                indent if not indent.strip() else "",
                                                arc_scale(pin, first, clocks, related))))
            edits += [(s, e, "") for s, e, _g in items[1:]]
    if cell.attr("cell_leakage_power") is None:
        leak = state_leakage(cell)
        if leak is not None:
            brace = text.index("{") + 1
            edits.append((brace, brace, f"\n    cell_leakage_power : {leak:.9g};"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def opensta_view(src: Path, dst_dir: Path) -> Path:
    """The OpenSTA-2019 view of Liberty file ``src`` (written once to ``dst_dir``).

    - ``internal_power``: groups that differ only by power pin merged (tables summed), every
      table scaled (:func:`arc_scale`), redundant Q/QN literals dropped from ``when``
      (:func:`merged_internal_power`, :func:`normalise_when`);
    - combinational output functions naming the pin itself (:func:`self_naming_function`);
    - ``cell_leakage_power`` added where a cell has only ``leakage_power`` groups
      (:func:`state_leakage`);
    - ``default_operating_conditions`` moved below the ``operating_conditions`` group it names
      (:func:`move_default_operating_conditions`).
    """
    dst = Path(dst_dir) / src.name
    with _view_lock:
        if dst.exists() and dst.stat().st_mtime >= src.stat().st_mtime \
                and dst.open().readline().strip() == VIEW_VERSION:
            return dst
        text = src.read_text()
        starts = [m.start() for m in CELL_START.finditer(text)]
        head = move_default_operating_conditions(text[:starts[0]] if starts else text)
        out = [VIEW_VERSION + "\n", head]
        for i, start in enumerate(starts):
            end = group_end(text, start)
            out.append(_view_cell(text[start:end]))
            out.append(text[end:starts[i + 1]] if i + 1 < len(starts) else text[end:])
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")   # parallel test workers
        tmp.write_text("".join(out))
        tmp.replace(dst)
        return dst


def opensta_libraries(pdk: Pdk) -> tuple[list[Path], list[Path]]:
    """(standard cells, macros): the OpenSTA views of the PDK's Liberty files, in read order.

    Each view lies beside its source in the PDK cache (``<key>/opensta2019/``), so it is keyed
    by that source like the source's own entry (:mod:`memwall.flows.pdk`).
    """
    cells = [opensta_view(p, p.parent / "opensta2019") for p in pdk.cell_liberty]
    macros = [opensta_view(m.liberty, m.liberty.parent / "opensta2019") for m in pdk.macros]
    return cells, macros
