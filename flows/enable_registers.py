"""Enable registers: which flip-flops of a mapped gate netlist hold their state, on what
condition and, after the activity simulation, how often; :mod:`memwall.flows.clock_gating` costs
an integrated clock gate on their enables.

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
fraction is the share of them it is true, the cycles an ICG on its enable blocks. Flops form
one ICG group when they have the same structural key (the hold reduced to the nets other
registers' holds share, :func:`scan_registers`) and their hold is the same in every simulated
cycle and lane: the simulation splits a structural group whose members' holds differ on the
workload, it never joins flops of different structural keys (a constant hold, never or always
true, is the same stream for unrelated enables). A flop whose hold is never true in the
simulation gets no group: an ICG on it would block no cycle. A group that always holds (the
workload never loads it) is gated like any other: it saves all its clock energy but the ICG's.
Registers holding only on their own data (a running maximum: no structural key) are grouped
by their simulated hold alone, and not at all when it is constant. The share of cycles with
D == Q (``unchanged_fraction``) is reported beside it: it also counts loads of an unchanged
value, which an enable-driven ICG cannot skip, so it is the bound of data-driven gating, not
used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict, deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .constants import YOSYS_MAIN
from .errors import NetlistError
from .gate_activity import register_state_nets
from .liberty import CellLibrary, eval_bool, parse_bool
from .netlist import Netlist, is_leaf

__all__ = ["ENABLE_DEPTH", "ENABLE_LEAVES", "EXPAND_ROUNDS", "EXPAND_LEAVES", "EnableFlop",
           "ModuleRegisters", "scan_registers", "ENABLE_FF_TYPES", "yosys_enable_bits",
           "rtl_enable_bits"]


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
    sim_key: tuple | None = None     # (key, its hold cycle by cycle) after the simulation
    hold: float | None = None        # share of simulated cycles x lanes it holds
    unchanged: float | None = None   # share with D == Q
    state_duty: float | None = None  # share of the state at 1


@dataclass
class ModuleRegisters:
    """A module's sequential cells, its hold registers and (after the activity simulation)
    how often each enable group holds."""
    module: str
    flops: dict[str, int] = field(default_factory=dict)       # sequential cell type -> count
    clock_pins: int = 0                                         # connected clock pins
    holds: list[EnableFlop] = field(default_factory=list)      # every enable (hold) register
    binate: int = 0             # own state in the cone, but not as a hold (counters, toggles)
    unclassified: int = 0       # own state in the cone, but too many leaves to decide
    observed: bool = False
    yosys: dict | None = None   # Yosys's own pre-mapping count (:func:`rtl_enable_bits`)

    def groups(self) -> dict[object, list[EnableFlop]]:
        """Enable flops by shared enable, one ICG group each: flops whose hold reduced to
        shared nets is the same function of the same nets (:func:`scan_registers`) and, after
        the activity simulation, whose hold is the same in every simulated cycle and lane
        (flops without a structural key: by the simulated hold alone; see the module's text).
        A flop whose key is None (:attr:`EnableFlop.key`, after the simulation
        :attr:`EnableFlop.sim_key`) gets no group."""
        out: dict[object, list[EnableFlop]] = defaultdict(list)
        for flop in self.holds:
            key = flop.sim_key if self.observed else flop.key
            if key is not None:
                out[key].append(flop)
        return dict(out)

    def observe(self, streams: dict) -> None:
        """``simulate_activity``'s hook: each flop's hold fraction, its group key (its structural
        key and its hold cycle by cycle; None when the hold is never true, or is constant and
        the flop has no structural key) and its D == Q share on the simulated streams."""
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
            held = float(np.bitwise_count(hold).sum())
            flop.hold = held / total
            if held == 0.0 or (held == total and flop.key is None):
                flop.sim_key = None    # nothing to block, or no enable to tie an ICG to
            else:
                flop.sim_key = (flop.key, hashlib.sha256(hold.tobytes()).digest())
        for flop in self.holds:
            d = streams.get(flop.d)
            net, inverted = flop.states[0]
            q = streams.get(net)
            if q is not None:
                ones_q = float(np.bitwise_count(q).sum()) / total
                flop.state_duty = 1.0 - ones_q if inverted else ones_q
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
    entered: set[int] = set()   # a combinational loop is broken where it closes
    stack = [(d, False)]
    while stack:
        n, ready = stack.pop()
        if n in placed or n not in inside:
            continue
        if ready:
            placed.add(n)
            order.append((n, inside[n]))
            continue
        if n in entered:
            continue
        entered.add(n)
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


def _restrict(table, n: int, keep: list[int]):
    """A truth table over ``n`` variables on the variables ``keep`` (in that order, variable
    ``keep[j]`` as row bit j), the others quantified universally: true where the table is true
    for every value of them (a table that does not depend on them just loses them)."""
    import numpy as np

    cube = table.reshape((2,) * n) if n else table.reshape(())
    axes = [n - 1 - i for i in range(n)]          # variable i is axis n-1-i (row bit i)
    drop = tuple(axes[i] for i in range(n) if i not in keep)
    cube = cube.all(axis=drop) if drop else cube
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
    gets none. A net two registers' data share can split a register's bits into groups of
    their own; the activity simulation only splits these groups further
    (:meth:`ModuleRegisters.observe`), it does not join them.
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
        reduced = _restrict(flop.table, n, keep)
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
