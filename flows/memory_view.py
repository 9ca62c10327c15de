"""Timing views of the memories: each ``memwall_ram`` black box as the SRAM macros it maps to.

Synthesis (:mod:`memwall.flows.synth`) leaves every memory with a write port as a black-box
``memwall_ram`` cell (ports only, widths per instance) and charges it the area of the
arrangement of one fakeram macro type it chose (``area.json`` ``macros``). For timing, each
such cell becomes a small wrapper module of its own (``memwall_ram_<n>``, the same ports)
holding that arrangement, so OpenSTA times every memory pin against the macro's Liberty:
``clk -> rd_out`` on RD_DATA, setup on addresses, data and enables.

The fakeram macros have one read/write port; a memory with one read and one write port (what
the generators emit) is modelled as two copies of the arrangement, one per port:

- read copies: ``clk`` = RD_CLK, ``ce_in`` = RD_EN, ``addr_in`` = RD_ADDR, ``rd_out`` = RD_DATA
  (the first row of macros; with more rows than one, the output multiplexer is not modelled);
- write copies: ``clk`` = WR_CLK, ``ce_in``/``we_in`` = WR_EN[0], ``addr_in`` = WR_ADDR,
  ``wd_in`` = WR_DATA, ``w_mask_in`` (where the macro has one) = WR_EN; ``rd_out`` open.

Address bits above the macro's (the row decoder) and RD_ARST/RD_SRST are left unconnected:
no path is timed through them. A memory that maps to no macro (``unmapped``) gets a wrapper
with ports only: nothing is timed through it, as before.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .constants import MEMORY_CELL
from .liberty import CellLibrary
from .netlist import Netlist
from .pdk import Pdk

__all__ = ["MemoryView", "memory_views", "wrapper_verilog", "memory_pin_caps"]


@dataclass(frozen=True)
class MemoryView:
    """One ``memwall_ram`` cell of one module and its timing wrapper."""
    module: str                  # the module holding the cell
    cell: str                    # instance name in that module (Yosys JSON name)
    wrapper: str                 # module name of the wrapper
    widths: dict[str, int]       # wrapper port -> width
    directions: dict[str, str]   # wrapper port -> input/output
    macro: str | None            # macro type, None when unmapped
    rows: int = 0
    cols: int = 0
    verilog: str = ""


def _bits(name: str, width: int, lo: int, count: int) -> str:
    """Verilog concatenation of ``count`` bits of port ``name`` from bit ``lo`` (MSB first);
    bits past ``width`` read as 0."""
    parts = [f"{name}[{i}]" if i < width else "1'b0" for i in range(lo + count - 1, lo - 1, -1)]
    return "{" + ", ".join(parts) + "}"


def _macro_pins(cells: CellLibrary, macro: str) -> tuple[set[str], dict[str, int]]:
    """(scalar pins, bus -> width) of a macro cell."""
    info = cells.info(macro)
    scalars, buses = set(), {}
    for pin in list(info.inputs) + list(info.outputs):
        m = re.fullmatch(r"(\w+)\[(\d+)\]", pin)
        if m:
            buses[m.group(1)] = max(buses.get(m.group(1), 0), int(m.group(2)) + 1)
        else:
            scalars.add(pin)
    return scalars, buses


def wrapper_verilog(view: MemoryView, cells: CellLibrary | None) -> str:
    """The wrapper module of ``view``: its macros, or ports only when unmapped."""
    w, d = view.widths, view.directions
    order = sorted(w)
    lines = [f"module {view.wrapper} ({', '.join(order)});"]
    for port in order:
        lines.append(f"  {d[port]} [{w[port] - 1}:0] {port};")   # always ranged: PORT[0]
    if view.macro and cells is not None:
        scalars, buses = _macro_pins(cells, view.macro)
        addr_bits, data_bits = buses.get("addr_in", 0), buses.get("wd_in", buses.get("rd_out", 0))

        def bus(port: str, lo: int, count: int) -> str:
            return _bits(port, w.get(port, 0), lo, count) if port in w else f"{count}'b0"

        def bit0(port: str) -> str:
            return f"{port}[0]" if port in w else "1'b0"

        for side in ("r", "w"):
            for row in range(view.rows):
                for col in range(view.cols):
                    lo = col * data_bits
                    conns = {"clk": "RD_CLK" if side == "r" else "WR_CLK"}
                    if side == "r":
                        conns.update(ce_in=bit0("RD_EN"), we_in="1'b0",
                                     addr_in=bus("RD_ADDR", 0, addr_bits),
                                     wd_in=f"{data_bits}'b0")
                        if row == 0 and lo < w.get("RD_DATA", 0):
                            n = min(data_bits, w["RD_DATA"] - lo)
                            conns["rd_out"] = "{" + ", ".join(
                                [f"memwall_nc_{side}{row}_{col}_{k}"
                                 for k in range(data_bits - n)] +
                                [f"RD_DATA[{i}]" for i in range(lo + n - 1, lo - 1, -1)]) + "}"
                        if "w_mask_in" in buses:
                            conns["w_mask_in"] = f"{buses['w_mask_in']}'b0"
                    else:
                        conns.update(ce_in=bit0("WR_EN"), we_in=bit0("WR_EN"),
                                     addr_in=bus("WR_ADDR", 0, addr_bits),
                                     wd_in=bus("WR_DATA", lo, data_bits))
                        if "w_mask_in" in buses:
                            conns["w_mask_in"] = bus("WR_EN", lo, buses["w_mask_in"])
                    conns = {p: v for p, v in conns.items() if p in scalars or p in buses}
                    body = ", ".join(f".{p}({v})" for p, v in conns.items())
                    lines.append(f"  {view.macro} {side}{row}_{col} ({body});")
        wires = sorted({m.group(0) for line in lines for m in
                        re.finditer(r"memwall_nc_\w+", line)})
        lines[1 + len(order):1 + len(order)] = [f"  wire {n};" for n in wires]
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def memory_views(synth_dir: Path | None, netlists: dict[str, Netlist], pdk: Pdk,
                 cells: CellLibrary, macros: list[dict] | None = None,
                 ) -> dict[tuple[str, str], MemoryView]:
    """(module, cell name) -> :class:`MemoryView` for every ``memwall_ram`` cell of the design.

    The macro arrangement is the one synthesis chose (``macros``, else ``area.json``'s); without
    it (or for a memory listed as unmapped) the wrapper has ports only.
    """
    area = Path(synth_dir) / "area.json" if synth_dir is not None else None
    if macros is None:
        macros = json.loads(area.read_text()).get("macros", []) if area and area.exists() \
            else []
    mapped: dict[tuple[str, str], dict] = {}
    for entry in macros:
        if entry.get("status") == "mapped":
            mapped[(entry["module"], str(entry["cell"]).lstrip("\\"))] = entry
    by_name = {m.name: m for m in pdk.macros}
    views: dict[tuple[str, str], MemoryView] = {}
    for module in sorted(netlists):
        for cell in netlists[module].cells:
            if cell.type != MEMORY_CELL:
                continue
            widths = {p: len(bits) for p, bits in cell.pins.items()}
            directions = {p: "output" if p == "RD_DATA" else "input" for p in widths}
            entry = mapped.get((module, cell.name))
            macro = by_name.get(entry["macro"]) if entry else None
            rows = cols = 0
            if macro is not None:
                rows = math.ceil(int(entry["depth"]) / macro.depth)
                cols = math.ceil(int(entry["width"]) / macro.width)
            view = MemoryView(module, cell.name, f"{MEMORY_CELL}_{len(views)}", widths,
                              directions, macro.name if macro else None, rows, cols)
            views[(module, cell.name)] = MemoryView(**{**view.__dict__,
                                                       "verilog": wrapper_verilog(view, cells)})
    return views


def memory_pin_caps(view: MemoryView, cells: CellLibrary) -> dict[str, float]:
    """Input capacitance (F) of every wrapper input bit ``PORT[i]`` (or ``PORT``): the macro
    pins it reaches, as :func:`wrapper_verilog` connects them."""
    if not view.macro:
        return {}
    info = cells.info(view.macro)
    caps: dict[str, float] = {}
    for match in re.finditer(r"\.(\w+)\(([^()]*)\)", view.verilog):
        pin, expr = match.groups()
        refs = [r.strip() for r in expr.strip("{}").split(",")]
        width = len(refs)
        for k, ref in enumerate(refs):
            lib_pin = pin if width == 1 and pin in info.inputs else f"{pin}[{width - 1 - k}]"
            if lib_pin in info.inputs and not ref.startswith(("1'b", "memwall_nc")) \
                    and "'b" not in ref:
                caps[ref] = caps.get(ref, 0.0) + info.inputs[lib_pin]
    return caps
