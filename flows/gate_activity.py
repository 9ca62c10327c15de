"""Gate-level switching activity: VCD names matched to nets, every other net simulated.

Sources take the VCD's toggle rate and static probability where a name matches
(:mod:`memwall.flows.activity` gives them per module type): module input ports, register
outputs (:func:`register_match`) and child outputs. Every other net gets its activity from a
zero-delay, cycle-based simulation of the module's own gates driven by those sources
(:func:`simulate_activity`; the VCD's per-cycle values are replayed, so a bus keeps its
correlation). :mod:`memwall.flows.sta` sets the result on every cell pin in OpenSTA, whose own
propagation is wrong in the 2019 release (see :func:`memwall.flows.opensta2019.pin_activity_tcl`):
it ignores reconvergence and has XOR wrong; on an FP32 adder fed by measured inputs of <= 0.03
toggles/cycle it reported a mean of 1.7 and a maximum of 10 toggles/cycle on internal nets, where
the same run's RTL signals toggle 0.10 on average.
"""

from __future__ import annotations

import re
from collections import defaultdict

from .liberty import CellInfo, CellLibrary, eval_bool, parse_bool
from .netlist import Cell, Netlist, is_leaf

__all__ = ["DEFAULT_ACTIVITY", "SIM_CYCLES", "SIM_LANES", "simulate_activity", "vcd_lookup",
           "register_state_nets", "register_match", "buffered_nets", "compare", "invert_trace"]

#: Default switching activity when nothing better is known: toggles per clock cycle and the
#: fraction of time at 1. 0.1 is the customary 10 % toggle rate of datapath logic.
DEFAULT_ACTIVITY = (0.1, 0.5)

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
                      iterations: int = 3, observe=None) -> dict[int, tuple[float, float]]:
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
    not (zero delay). ``observe``, if given, is called once with the last pass's packed
    streams (net -> (cycles, lanes/64) words) for per-cycle questions that toggle rates cannot
    answer (:mod:`memwall.flows.enable_registers`: how often a register holds).
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
        if not is_leaf(cell, cells, modules):
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
    if observe is not None:
        observe(streams)
    for n, value in given.items():   # sources keep their exact statistics
        result[n] = value
    return result


# --------------------------------------------------------------------------------------------
# Which VCD signal a net carries.

def compare(netlist: Netlist, nets: dict, sources: dict, lookup) -> dict | None:
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


def invert_trace(word: str, cycles: int) -> str:
    """A per-cycle trace word (:func:`memwall.flows.activity.bit_trace`) of the complement."""
    return format(int(word, 16) ^ ((1 << cycles) - 1), "x")


def buffered_nets(netlist: Netlist, cells: CellLibrary,
                  modules) -> dict[int, list[tuple[int, bool]]]:
    """Net -> the nets it drives through one-input inverters or buffers (and if inverted)."""
    out: dict[int, list[tuple[int, bool]]] = defaultdict(list)
    for cell in netlist.cells:
        if not is_leaf(cell, cells, modules):
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


def register_state_nets(cell: Cell, info: CellInfo) -> list[tuple[int, bool]]:
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


def register_match(cell: Cell, info: CellInfo, netlist: Netlist, buffers, lookup):
    """The VCD signal that carries a register's state: (key, toggles, duty, inverted) or None.

    Matching rule: Yosys keeps an RTL register's name on the net the flip-flop drives. Where a
    library's flip-flops have only QN (ASAP7), Yosys adds an inverter and the name sits on the
    inverter's output. So the rule looks at the Q/QN nets, then one inverter or buffer further,
    then the flip-flop's instance name (with a ``_reg`` suffix dropped), then the register
    names synthesis recorded before mapping (:attr:`Netlist.register_names`), and takes the
    first name found among the module's VCD signals. ``inverted`` tells that the named signal is the
    complement of the register's state.
    """
    for net, inv in register_state_nets(cell, info):
        for candidate, cand_inv in [(net, False)] + buffers.get(net, []):
            match = lookup(netlist.net_names.get(candidate, []))
            if match:
                key, (toggles, duty) = match
                return key, toggles, duty, inv != cand_inv
    # A synthesis that names flip-flops after their register ("count_reg[3]", "count[3]")
    # gives the register's value, D as the flip-flop loads it.
    match = lookup([cell.name, re.sub(r"_reg(\[\d+\])?$", r"\1", cell.name)])
    # Else the register's name as synthesis recorded it before mapping (an inverter on Q that
    # ABC merged away took it off the nets): the register's value too. It is the library's
    # state where the state loads D, its complement where it loads !D (ASAP7's DFFHQN:
    # ``ff (IQN, IQNN) { next_state : "!D" }``, QN = IQN).
    match = match or lookup(netlist.register_names.get(cell.name, []))
    if match:
        key, (toggles, duty) = match
        return key, toggles, duty, info.data_inverted
    return None


def vcd_lookup(signals: dict):
    """``lookup(names)``: (VCD key, (toggles, duty)) of the first of ``names`` in ``signals``.

    A name matches as it is, without a trailing ``[0]`` or with one added (a one-bit signal is
    ``x`` in one tool and ``x[0]`` in another), and without the backslash Yosys' JSON puts
    before a public name that starts with ``$`` (Amaranth's ``$signal``; the VCD has none);
    None when no name matches.
    """
    def lookup(names: list[str]) -> tuple[str, tuple[float, float]] | None:
        for name in names:
            name = name[1:] if name.startswith("\\$") else name
            for key in (name, re.sub(r"\[0\]$", "", name), name + "[0]"):
                if key in signals:
                    return key, tuple(signals[key])
        return None

    return lookup
