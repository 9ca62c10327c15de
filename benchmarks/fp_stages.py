"""Stage delays and area of the pipelined FP blocks on ASAP7 at 1 GHz.

Every block of :mod:`memwall.hdl.common.fp` and :mod:`memwall.hdl.common.transcendental` at
every allowed depth is wrapped in a harness that registers each of its inputs and its output,
so every path through it runs from a register to a register. The harness goes through the
project's own flow: Verilog from :class:`~memwall.hdl.common.netlist.Design`, Yosys with
:func:`memwall.flows.synth.synthesize` (ABC with the flow's script,
:data:`~memwall.flows.synth.ABC_SCRIPT`, and ``-D 1000``; the ASAP7 Liberty of
:func:`memwall.flows.pdk.find_pdk`), then one OpenSTA timing run as
:func:`memwall.flows.hierarchical.run_sta` makes it
(:func:`~memwall.flows.rewrite.rewrite_module`, :func:`~memwall.flows.sta.module_tcl`) with one
``report_checks`` per pipeline segment added.
The registers of the gate netlist are sorted into segments by their depth in the register
graph (harness input registers, stage 1, ..., stage k, harness output register); a segment's
delay is the clock period minus the worst slack at its registers: clock to Q, logic and setup,
the shortest period at which that segment alone would pass. The area is the block's own,
from a second module of the same run: the block alone, without the harness.

    .venv/bin/python benchmarks/fp_stages.py --search --compare dc2   # the committed report
    .venv/bin/python benchmarks/fp_stages.py --only "FpAdd(fp32)" --no-write
    .venv/bin/python benchmarks/fp_stages.py --rewrite   # the .md again from the .json

``--search`` measures every ordered subset of each block's candidate cut points: the data the
depth tables (``DEPTHS``) are chosen from (per depth, the subset with the smallest worst
stage). ``--compare dc2`` runs the blocks at their table depths again, and adders (plain and
carry-select) under both scripts, with Yosys' own default ABC script, which has the ``dc2``
step the flow's :data:`~memwall.flows.synth.ABC_SCRIPT` leaves out: the measurement of why it
is left out (and of why the blocks use plain adders). Writes ``reports/fp_stages.md`` and
``reports/fp_stages.json``; work files in ``build/fp_stages/``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memwall import paths

ROOT = paths.REPO

from amaranth.hdl import Cat, Module, Mux, Signal  # noqa: E402
from amaranth.lib import wiring  # noqa: E402
from amaranth.lib.wiring import In, Out  # noqa: E402

REPORT_MD = ROOT / "reports" / "fp_stages.md"
REPORT_JSON = ROOT / "reports" / "fp_stages.json"
WORK = ROOT / "build" / "fp_stages"
COMMAND = ".venv/bin/python benchmarks/fp_stages.py"
PDK = "asap7"
PERIOD_NS = 1.0
#: A stage meets the target when its delay leaves this much of the period for the wiring the
#: units add around the block (operand muxes, load fan-out, the lane's output register).
TARGET_PS = 800.0
#: ABC scripts for ``--compare`` (Yosys ``abc -script``: commas for spaces, ``{D}`` the delay
#: target). ``dc2``: what Yosys 0.58 runs for ``abc -liberty -constr -D`` without ``-script``
#: (``ABC_COMMAND_CTR`` of ``passes/techmap/abc.cc``, with the ``retime -o {D}`` it adds after
#: ``dretime`` when ``-D`` is given): the flow's script plus ``dc2`` (and that ``retime``, a
#: no-op on the latch-free logic ABC gets here). ``dc2``'s area-oriented rewriting turns the
#: Brent-Kung carry trees of Yosys' ``techmap`` into ripple carry chains.
ABC_SCRIPTS = {
    "dc2": "+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;retime,-o,{D};strash;&get,-n;"
           "&dch,-f;&nf,{D};&put;buffer;upsize,{D};dnsize,{D};stime,-p",
}
ADDER_WIDTHS = (16, 28, 48)
#: Carry-select blocks of the adders of ``--compare`` (1: the plain ``+``).
ADDER_BLOCKS = (1, 2, 4)


def blocks() -> dict[str, Callable]:
    """Block label -> ``factory(stages)``."""
    from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
    from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

    return {
        "FpAdd(bf16)": lambda k: FpAdd("bf16", stages=k),
        "FpAdd(fp32)": lambda k: FpAdd("fp32", stages=k),
        "FpMul(bf16)": lambda k: FpMul("bf16", stages=k),
        "FpMul(fp32)": lambda k: FpMul("fp32", stages=k),
        "Fp32ToBf16": lambda k: Fp32ToBf16(stages=k),
        "Bf16Exp": lambda k: Bf16Exp(stages=k),
        "Bf16Recip": lambda k: Bf16Recip(stages=k),
    }


def _probe(make: Callable):
    block = make(0)
    block._MustUse__silence = True   # only read for its tables
    return block


def depth_table(block) -> dict[int, tuple[str, ...]]:
    """The block's ``DEPTHS`` table for its format (FpAdd/FpMul) or its only one."""
    fmt = getattr(block, "fmt", None)
    return block.DEPTHS[fmt.name] if fmt is not None else block.DEPTHS


def with_cuts(make: Callable, cuts: tuple[str, ...]):
    """The block of ``make`` with exactly ``cuts`` active (a subclass whose only depth it is)."""
    if not cuts:
        return make(0)
    probe = _probe(make)
    cls, fmt = type(probe), getattr(probe, "fmt", None)
    table = {len(cuts): tuple(cuts)}
    depths = {**cls.DEPTHS, fmt.name: table} if fmt is not None else table
    sub = type(cls.__name__, (cls,), {"DEPTHS": depths})
    return sub(fmt, stages=len(cuts)) if fmt is not None else sub(stages=len(cuts))


def cut_subsets(points: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every non-empty subsequence of ``points``, shortest first."""
    for k in range(1, len(points) + 1):
        yield from itertools.combinations(points, k)


class Harness(wiring.Component):
    """``block`` between registers: each input port and the output are registered.

    Parameters
    ----------
    block : wiring.Component
        A block with plain ports (``a``, ``b``, ``sub``, ``load``, ``y``).
    """

    def __init__(self, block):
        self._block = block
        self.params = {}
        super().__init__(dict(block.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self._block
        for name, member in block.signature.members.items():
            outer, inner = getattr(self, name), getattr(block, name)
            reg = Signal(len(outer), name=f"h_{name}", reset_less=True)
            if member.flow == In:
                m.d.sync += reg.eq(outer)
                m.d.comb += inner.eq(reg)
            else:
                m.d.sync += reg.eq(inner)
                m.d.comb += outer.eq(reg)
        return m


class Adder(wiring.Component):
    """A ``width``-bit ``a + b``: how the flow maps a carry chain.

    ``blocks == 1`` is the plain ``+``. More blocks make it a carry-select adder: each block
    after the first adds its slice for both carries in and the carry out of the block below
    picks one (the form the pipelined FP blocks used while the flow's ABC script had ``dc2``).
    """

    cuts = ()

    def __init__(self, width: int, blocks: int = 1):
        self.params = {"width": width, "blocks": blocks}
        self._blocks = blocks
        super().__init__({"a": In(width), "b": In(width), "y": Out(width + 1)})

    def elaborate(self, platform):
        m = Module()
        width = len(self.a)
        if self._blocks == 1:
            m.d.comb += self.y.eq(self.a + self.b)
            return m
        step = -(-width // self._blocks)
        parts, carry = [], None
        for lo in range(0, width, step):
            x, y = self.a[lo:lo + step], self.b[lo:lo + step]
            total = x + y if carry is None else Mux(carry, x + y + 1, x + y)
            parts.append(total[:len(x)])
            carry = total[len(x)]
        m.d.comb += self.y.eq(Cat(*parts, carry))
        return m


def adder_label(width: int, blocks: int) -> str:
    return f"adder{width}" if blocks == 1 else f"adder{width}/csel{blocks}"


# -- Flow --------------------------------------------------------------------------------------

def register_levels(netlist, cells) -> dict[str, tuple[int, str]]:
    """Depth of every flip-flop in the register graph: ``{instance: (level, data pin)}``.

    Level 1: fed by input ports (and constants) only; otherwise one more than the deepest
    register in the combinational cone of its data pin. A register's own output in its cone
    (the hold path of an enabled register) does not count; any other loop is an error.
    Instances are named as :func:`memwall.flows.rewrite.rewrite_module` names them.
    """
    from memwall.flows.netlist import fanout

    fan = fanout(netlist, cells, {})
    flops = {id(c): c for c in netlist.cells if cells.info(c.type).is_sequential}
    cones: dict[int, frozenset[int]] = {}

    def inputs_of(net: int) -> tuple[set[int], list[int]]:
        """(registers driving ``net``, input nets of the gates driving it)."""
        regs, nets = set(), []
        for cell, _pin in fan.leaf_drivers.get(net, []):
            if id(cell) in flops:
                regs.add(id(cell))
                continue
            info = cells.info(cell.type)
            for pin, bits in cell.pins.items():
                if pin in info.inputs:
                    nets += [b for b in bits if isinstance(b, int)]
        return regs, nets

    def sources(net) -> frozenset[int]:
        """Registers (by id) that reach ``net`` through combinational cells (iterative DFS)."""
        if not isinstance(net, int):
            return frozenset()
        stack, open_ = [(net, False)], set()
        while stack:
            n, expanded = stack.pop()
            if n in cones:
                continue
            regs, nets = inputs_of(n)
            if expanded:
                cones[n] = frozenset(regs).union(*(cones[b] for b in nets))
                open_.discard(n)
                continue
            if n in open_:
                raise RuntimeError(f"combinational loop through net {n}")
            open_.add(n)
            stack.append((n, True))
            stack += [(b, False) for b in nets if b not in cones]
        return cones[net]

    level: dict[int, int] = {}

    def depth(key: int, path: tuple[int, ...] = ()) -> int:
        if key in level:
            return level[key]
        if key in path:
            raise RuntimeError(f"register loop through {flops[key].name}")
        cell = flops[key]
        pin = cells.info(cell.type).data_pin
        if pin is None:
            raise RuntimeError(f"{cell.type}: no single data pin")
        srcs = frozenset().union(*(sources(b) for b in cell.pins[pin])) - {key}
        level[key] = 1 + max((depth(s, (*path, key)) for s in srcs), default=0)
        return level[key]

    names = {id(c): c.name if re.fullmatch(r"[A-Za-z_][\w$]*", c.name) else f"memwall_c{k}"
             for k, c in enumerate(netlist.cells)}
    return {names[key]: (depth(key), cells.info(flops[key].type).data_pin) for key in flops}


def time_segments(synth_dir: Path, module: str, pdk, segment_names: list[str]) -> dict:
    """One OpenSTA run of the harness: worst slack overall and per segment (ps)."""
    from memwall.flows.netlist import build_hierarchy, read_netlist
    from memwall.flows.opensta2019 import check_run
    from memwall.flows.pdk import pdk_cell_library
    from memwall.flows.rewrite import rewrite_module
    from memwall.flows.sta import module_tcl, nominal_load, parse_timing, run_tcl

    cells = pdk_cell_library(pdk)
    netlist = read_netlist(synth_dir / "netlist" / f"{module}.json", module)
    manifest = {"top": module, "hierarchy": {module: {}}, "instances": {module: 1}}
    load = nominal_load(pdk)
    hier = build_hierarchy({module: netlist}, manifest, cells, load)
    run = rewrite_module(netlist, hier, cells, activity=None, top_output_load=load)
    levels = register_levels(netlist, cells)
    top = max(level for level, _ in levels.values())
    if top - 1 != len(segment_names):
        raise RuntimeError(f"{module}: {top} register levels, expected "
                           f"{len(segment_names) + 1}")
    work = synth_dir / "sta"
    work.mkdir(parents=True, exist_ok=True)
    netlist_path = work / f"{module}.timing.v"
    netlist_path.write_text(run.verilog)
    lines = [module_tcl(run, pdk, PERIOD_NS, netlist_path, mode="timing")]
    for seg in range(len(segment_names)):
        pins = sorted(f"{name}/{pin}" for name, (level, pin) in levels.items()
                      if level == seg + 2)
        lines += [f'puts "MEMWALL_SEGMENT {seg}"',
                  f"report_checks -path_delay max -digits 4 -to [get_pins {{{' '.join(pins)}}}]",
                  f'puts "MEMWALL_SEGMENT_END {seg}"']
    out = run_tcl("\n".join(lines) + "\n", work, f"{module}.segments")
    check_run(out, pdk)
    timing = parse_timing(out)
    period_ps = PERIOD_NS * 1000.0
    segments = []
    for seg, name in enumerate(segment_names):
        text = out.split(f"MEMWALL_SEGMENT {seg}\n", 1)[1].split(f"MEMWALL_SEGMENT_END {seg}")[0]
        slack = re.search(r"^\s*(-?[\d.]+)\s+slack \((?:MET|VIOLATED)\)", text, re.M)
        if not slack:
            raise RuntimeError(f"{module}: no slack for segment {name} (log in {work})")
        slack_ps = float(slack.group(1)) * pdk.time_unit_ps
        segments.append({"segment": name, "delay_ps": round(period_ps - slack_ps, 1),
                         "slack_ps": round(slack_ps, 1)})
    return {"worst_slack_ps": round(timing["worst_slack_s"] * 1e12, 1), "segments": segments,
            "registers": len(levels)}


@contextlib.contextmanager
def abc_script(script: str | None) -> Iterator[None]:
    """Within the block, the flow's Yosys script runs ABC with ``script`` instead of
    :data:`~memwall.flows.synth.ABC_SCRIPT` (None: unchanged)."""
    from memwall.flows import synth

    if script is None:
        yield
        return
    original = synth.yosys_script
    flag = f"abc -script {synth.ABC_SCRIPT} "

    def patched(*args, **kwargs):
        text = original(*args, **kwargs)
        if text.count(flag) != 1:
            raise RuntimeError(f"no single `{flag.strip()}` in the flow's Yosys script")
        return text.replace(flag, f"abc -script {script} ")

    synth.yosys_script = patched
    try:
        yield
    finally:
        synth.yosys_script = original


def _module_name(label: str, cuts: tuple[str, ...], flow: str) -> str:
    base = re.sub(r"\W+", "_", label.lower()).strip("_")
    prefix = "" if flow == "flow" else f"{flow}_"
    return f"{prefix}{base}_{'_'.join(cuts) if cuts else 'comb'}"


def measure(label: str, make: Callable, cuts: tuple[str, ...], pdk, progress,
            flow: str = "flow") -> dict:
    """Synthesise ``Harness(block)`` and the block alone; time the harness by segment."""
    from memwall.flows.synth import synthesize
    from memwall.hdl.common.netlist import Design

    name = _module_name(label, cuts, flow)
    alone = f"{name}_block"
    design = Design()
    design.add_top(Harness(make(cuts)), name)
    design.add_top(make(cuts), alone)
    gen_dir = WORK / name
    shutil.rmtree(gen_dir, ignore_errors=True)
    (gen_dir / "rtl").mkdir(parents=True)
    for module in (name, alone):
        (gen_dir / "rtl" / f"{module}.v").write_text(design.module_text(module))
    manifest = {"top": name, "modules": [name, alone], "hierarchy": {name: {}, alone: {}},
                "instances": {name: 1, alone: 1}}
    (gen_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    start = time.perf_counter()
    with abc_script(ABC_SCRIPTS.get(flow)):
        area = synthesize(gen_dir, pdk, PERIOD_NS, gen_dir / "synth", jobs=1, progress=progress)
    points = ["in", *cuts, "out"]
    names = [f"{a}->{b}" for a, b in zip(points, points[1:], strict=False)]
    timing = time_segments(gen_dir / "synth", name, pdk, names)
    worst = max(s["delay_ps"] for s in timing["segments"])
    return {
        "block": label, "flow": flow, "stages": len(cuts), "cuts": list(cuts), "module": name,
        "worst_stage_ps": worst, "slack_at_1ghz_ps": round(PERIOD_NS * 1000.0 - worst, 1),
        "fmax_mhz": round(1e6 / worst, 1), "meets_target": worst <= TARGET_PS,
        "segments": timing["segments"], "registers": timing["registers"],
        "block_area_um2": round(area["area_by_module"][alone]["own_um2"], 3),
        "block_cells": area["area_by_module"][alone]["cells"],
        "abc_delay_ps": area["runs"][name]["abc_delay_ps"],
        "runtime_s": round(time.perf_counter() - start, 1),
    }


# -- Report ------------------------------------------------------------------------------------

def _segments(r: dict) -> str:
    return ", ".join(f"{s['segment']} {s['delay_ps']:.0f}" for s in r["segments"])


def _table(rows: list[dict]) -> list[str]:
    out = ["| block | depth | cuts | worst stage (ps) | slack at 1 GHz (ps) | fmax (MHz) | "
           "area (µm²) | segments (ps) |",
           "|---|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        mark = "" if r["meets_target"] else " ✗"
        out.append(f"| {r['block']} | {r['stages']} | {', '.join(r['cuts']) or '—'} | "
                   f"{r['worst_stage_ps']:.0f}{mark} | {r['slack_at_1ghz_ps']:.0f} | "
                   f"{r['fmax_mhz']:.0f} | {r['block_area_um2']:.1f} | {_segments(r)} |")
    return out


def _smallest(rows: list[dict]) -> list[str]:
    out = ["| block | smallest depth with worst stage ≤ target | worst stage (ps) | area (µm²) | "
           "area / depth 0 |", "|---|---:|---:|---:|---:|"]
    by_block: dict[str, list[dict]] = {}
    for r in rows:
        by_block.setdefault(r["block"], []).append(r)
    for block, rs in by_block.items():
        rs = sorted(rs, key=lambda r: r["stages"])
        ok = [r for r in rs if r["meets_target"]]
        if not ok:
            best = min(rs, key=lambda r: r["worst_stage_ps"])
            out.append(f"| {block} | none up to {rs[-1]['stages']} (best: depth "
                       f"{best['stages']}) | {best['worst_stage_ps']:.0f} ✗ | "
                       f"{best['block_area_um2']:.1f} | "
                       f"{best['block_area_um2'] / rs[0]['block_area_um2']:.2f} |")
            continue
        r = ok[0]
        out.append(f"| {block} | {r['stages']} | {r['worst_stage_ps']:.0f} | "
                   f"{r['block_area_um2']:.1f} | "
                   f"{r['block_area_um2'] / rs[0]['block_area_um2']:.2f} |")
    return out


def choose_tables(rows: list[dict]) -> dict[str, dict[int, list[str]]]:
    """The depth tables the search data give, by the rule :data:`CHOICE_RULE` states."""
    groups: dict[str, dict[int, list[dict]]] = {}
    for r in rows:
        groups.setdefault(r["block"], {}).setdefault(r["stages"], []).append(r)
    tables = {}
    for block, by_depth in groups.items():
        picks, previous = {}, min(r["worst_stage_ps"] for r in by_depth.get(0, [])) \
            if 0 in by_depth else None
        for depth in sorted(d for d in by_depth if d > 0):
            rs = by_depth[depth]
            fastest = min(r["worst_stage_ps"] for r in rs)
            if picks and previous is not None and fastest > (1 - MIN_GAIN) * previous:
                break
            near = [r for r in rs if r["worst_stage_ps"] <= fastest + TOLERANCE_PS]
            picks[depth] = min(near, key=lambda r: (r["block_area_um2"], r["cuts"]))["cuts"]
            previous = fastest
        tables[block] = picks
    return tables


#: Search results closer than this to the fastest subset of a depth count as equally fast (the
#: spread ABC gives one circuit in different surroundings is of this order).
TOLERANCE_PS = 25.0
#: A further depth is kept only if its fastest subset is at least this much faster.
MIN_GAIN = 0.05
CHOICE_RULE = (f"per depth, of the subsets within {TOLERANCE_PS:.0f} ps of the fastest, the "
               f"one with the smallest area; depths are added while the fastest subset gains "
               f"at least {MIN_GAIN:.0%} on the depth before (the first depth always)")


def _search_table(rows: list[dict], chosen: dict[str, dict[int, list[str]]],
                  tables: dict[str, dict[int, list[str]]]) -> list[str]:
    out = ["| block | depth | subsets | fastest cuts | worst stage (ps) | area (µm²) | "
           "chosen by the rule | worst stage (ps) | area (µm²) | `DEPTHS` |",
           "|---|---:|---:|---|---:|---:|---|---:|---:|---|"]
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["block"], r["stages"]), []).append(r)
    for (block, depth), rs in groups.items():
        best = min(rs, key=lambda r: (r["worst_stage_ps"], r["block_area_um2"]))
        pick = chosen.get(block, {}).get(depth)
        mine = next((r for r in rs if r["cuts"] == pick), None)
        table = tables.get(block, {}).get(depth)
        same = "—" if table is None and pick is None else \
            "same" if table == pick else (", ".join(table) if table else "(none)")
        out.append(f"| {block} | {depth} | {len(rs)} | {', '.join(best['cuts'])} | "
                   f"{best['worst_stage_ps']:.0f} | {best['block_area_um2']:.1f} | "
                   + (f"{', '.join(pick)} | {mine['worst_stage_ps']:.0f} | "
                      f"{mine['block_area_um2']:.1f} | {same} |" if mine else
                      f"— | | | {same} |"))
    return out


def write_report(record: dict) -> None:
    results = record["results"]
    table = [r for r in results if r["flow"] == "flow" and r.get("in_table")]
    lines = [
        "# Pipelined FP blocks: stage delay and area on ASAP7 at 1 GHz",
        "",
        f"Generated by `{record['command']}` ({record['date']}, {record['machine']}, "
        f"{record['runtime_s'] / 60:.0f} min); every number below is from that run, and "
        "`reports/fp_stages.json` has them all.",
        "",
        "Each block sits between registers on all of its inputs and on its output (a harness), "
        "so every path is register to register. Flow: Verilog from `Design`, "
        f"`flows.synth.synthesize` ({record['yosys']}; ABC with the flow's script "
        f"`{record['flow_abc_script']}`, Yosys' default `-liberty -D` script without `dc2`, "
        f"and `-D {PERIOD_NS * 1000:.0f}`; the "
        f"{record['pdk']} Liberty of `find_pdk`), then one OpenSTA run as `flows.sta` writes "
        "it, with one `report_checks` per segment. A segment runs from one register level to "
        "the next (`in`: the harness input registers, `out`: the harness output register, the "
        "named cuts: the block's stages); its delay is the period minus its worst slack, so "
        "clock to Q, logic and setup: the shortest clock period it would pass at. Worst stage: "
        "the slowest segment; fmax = 1 / worst stage. Area: the block alone (a second module "
        "of the same run, no harness), Yosys `stat -liberty`.",
        "",
        f"Target: worst stage ≤ {TARGET_PS:.0f} ps, which leaves "
        f"{PERIOD_NS * 1000 - TARGET_PS:.0f} ps of the 1000 ps period for the wiring the units "
        "add (operand muxes, load fan-out, the lane's output register). ✗: above the target.",
        "",
        "## Every block at every allowed depth (the `DEPTHS` tables)",
        "",
        *_table(table),
        "",
        "## Smallest depth that meets the target",
        "",
        *_smallest(table),
    ]
    search = [r for r in results if r["flow"] == "flow" and r.get("in_search")]
    if search:
        lines += ["", "## Cut search: every subset of the candidate cut points",
                  "", "Each block's `DEPTHS` table is chosen from these runs by one rule: "
                  f"{CHOICE_RULE}. Below, per block and depth: the fastest subset, the one "
                  "the rule chooses, and what `DEPTHS` has (`same` when it is the rule's "
                  "choice). The json has every subset's segments.", "",
                  *_search_table(search, record["choice"], record["tables"])]
    compare = [r for r in results if r["flow"] != "flow" and r.get("in_table")]
    adders = [r for r in results if r["block"].startswith("adder")]
    if compare or adders:
        lines += ["", "## Experiment: ABC with `dc2` (Yosys' default script)", "",
                  "The same harnesses, with the flow's Yosys script changed in one place: ABC "
                  f"runs `{ABC_SCRIPTS['dc2']}` instead of the flow's "
                  f"`{record['flow_abc_script']}`. That is what Yosys 0.58 runs for "
                  "`abc -liberty -constr -D` without `-script` (`ABC_COMMAND_CTR` in "
                  "`passes/techmap/abc.cc`, with the `retime -o {D}` it inserts after "
                  "`dretime` when `-D` is given): the flow's script plus `dc2` (the `retime` "
                  "has no latches to move in the logic ABC gets here). Not the project's flow; "
                  "the measurement of why the flow leaves `dc2` out.", ""]
        if adders:
            lines += ["An adder between registers (worst stage, ps; area µm²): the plain "
                      "`a + b` (1 block, Yosys' Brent-Kung carry tree) and carry-select "
                      "adders of 2 and 4 blocks (each block after the first computed for "
                      "both carries in), the workaround the FP blocks used while the flow "
                      "had `dc2`:", "",
                      "| width | blocks | flow: delay | flow: area | dc2: delay | dc2: area |",
                      "|---:|---:|---:|---:|---:|---:|"]
            for width in ADDER_WIDTHS:
                for blocks in ADDER_BLOCKS:
                    got = {r["flow"]: r for r in adders
                           if r["block"] == adder_label(width, blocks)}
                    if "flow" in got and "dc2" in got:
                        lines.append(f"| {width} | {blocks} | "
                                     f"{got['flow']['worst_stage_ps']:.0f} | "
                                     f"{got['flow']['block_area_um2']:.1f} | "
                                     f"{got['dc2']['worst_stage_ps']:.0f} | "
                                     f"{got['dc2']['block_area_um2']:.1f} |")
            lines.append("")
        if compare:
            lines += ["The blocks as they are (plain adders) at every allowed depth with `dc2`:",
                      "", *_table(compare),
                      "", *_smallest(compare)]
    lines.append("")
    REPORT_MD.write_text("\n".join(lines))


# -- Main --------------------------------------------------------------------------------------

def _yosys_version() -> str:
    for path in sorted(WORK.glob("*/synth/work/version.txt")):
        match = re.search(r"Yosys \S+", path.read_text(errors="replace"))
        if match:
            return match.group(0)
    return "Yosys"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated block labels, e.g. 'FpAdd(fp32)'")
    parser.add_argument("--search", action="store_true",
                        help="also measure every subset of each block's cut points")
    parser.add_argument("--compare", choices=sorted(ABC_SCRIPTS),
                        help="also run the table and the adders with this ABC script")
    parser.add_argument("--no-write", action="store_true", help="print, do not write reports")
    parser.add_argument("--rewrite", action="store_true",
                        help="measure nothing: write reports/fp_stages.md again from the json")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv
    if args.rewrite:
        record = json.loads(REPORT_JSON.read_text())
        for key in ("tables", "choice"):   # json keys are strings; depths are ints
            record[key] = {block: {int(k): v for k, v in table.items()}
                           for block, table in record[key].items()}
        write_report(record)
        print(f"wrote {REPORT_MD.relative_to(ROOT)} from {REPORT_JSON.relative_to(ROOT)}")
        return 0

    from memwall.flows import synth
    from memwall.flows.pdk import find_pdk
    from memwall.progress import Progress

    known = blocks()
    chosen = args.only.split(",") if args.only else list(known)
    unknown = [c for c in chosen if c not in known]
    if unknown:
        parser.error(f"unknown blocks {unknown}; known: {list(known)}")
    pdk = find_pdk(PDK)

    jobs: list[tuple[str, Callable, tuple[str, ...], str, str]] = []
    tables: dict[str, dict[int, list[str]]] = {}
    for label in chosen:
        make = known[label]
        table = depth_table(_probe(make))
        tables[label] = {k: list(v) for k, v in table.items()}
        cutter = (lambda mk: lambda cuts: with_cuts(mk, cuts))(make)
        for k in range(0, max(table) + 1):
            jobs.append((label, cutter, tuple(table[k]) if k else (), "flow", "table"))
        if args.search:
            for cuts in cut_subsets(_probe(make).CUT_POINTS):
                jobs.append((label, cutter, cuts, "flow", "search"))
    if args.compare:
        for width in ADDER_WIDTHS:
            for n in ADDER_BLOCKS:
                for flow in ("flow", args.compare):
                    jobs.append((adder_label(width, n),
                                 lambda cuts, w=width, n=n: Adder(w, n), (),
                                 flow, "adder"))
        for label in chosen:
            for job in [j for j in jobs if j[0] == label and j[4] == "table"]:
                jobs.append((label, job[1], job[2], args.compare, "table"))

    cache: dict[tuple[str, str, tuple[str, ...]], dict] = {}
    start = time.perf_counter()
    unique = {(label, flow, cuts) for label, _, cuts, flow, _ in jobs}
    with Progress(plain=True) as progress, progress.task("fp_stages", len(unique)) as task:
        for label, make, cuts, flow, role in jobs:
            key = (label, flow, cuts)
            if key not in cache:
                r = measure(label, make, cuts, pdk, progress, flow)
                cache[key] = r
                task.advance(f"{label} [{', '.join(cuts) or 'comb'}] ({flow}): worst "
                             f"{r['worst_stage_ps']:.0f} ps, {r['block_area_um2']:.1f} um2 "
                             f"[{_segments(r)}]")
            cache[key][f"in_{role}"] = True
    record = {
        "command": " ".join([COMMAND, *given]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "pdk": PDK, "period_ns": PERIOD_NS, "target_ps": TARGET_PS,
        "flow_abc_script": synth.ABC_SCRIPT,
        "abc_scripts": {k: v for k, v in ABC_SCRIPTS.items() if k == args.compare},
        "yosys": _yosys_version(),
        "runtime_s": round(time.perf_counter() - start, 1),
        "tables": tables,
        "choice_rule": CHOICE_RULE,
        "choice": choose_tables([r for r in cache.values()
                                 if r["flow"] == "flow" and r.get("in_search")
                                 or (r["flow"] == "flow" and not r["cuts"]
                                     and r["block"] in tables)]) if args.search else {},
        "results": list(cache.values()),
    }
    for r in record["results"]:
        if r.get("in_table") and r["flow"] == "flow":
            print(f"{r['block']:12} depth {r['stages']}: worst {r['worst_stage_ps']:7.1f} ps, "
                  f"{r['block_area_um2']:7.1f} um2  [{_segments(r)}]")
    if not args.no_write:
        REPORT_JSON.write_text(json.dumps(record, indent=2) + "\n")
        write_report(record)
        print(f"wrote {REPORT_MD.relative_to(ROOT)} and {REPORT_JSON.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
