"""Power calibration: a reference circuit per PDK, its power computed by hand from Liberty.

The flow's power figures are only worth reporting if OpenSTA computes what the Liberty tables
say. For each PDK, ``flows/reference/ref_<pdk>.v`` holds a small hand-written gate-level
circuit: a register fed by input ``din`` drives an inverter chain and a fan-out of three into
output ports loaded with FO4, and an XOR of the chain with a second input ``e`` drives one more
port. :func:`hand_power` evaluates its power independently of OpenSTA, as the Liberty format
defines it:

- **switching** per net driven by a cell: 1/2 C V^2 f a, with C the input ``capacitance`` of
  every pin on the net, the port load and the library's default wire load for that fan-out,
  and a the toggles per cycle;
- **internal** per cell: ``internal_power`` tables (energy per transition, in the library's
  capacitance unit x 1 V^2) interpolated at the input transition and output load, summed over
  power pins. A gate's per-cycle events are enumerated (inputs independent, each a Markov chain
  with its toggle rate and probability of 1): an output edge draws the rise or fall table of
  the arc from the input that toggled, the group whose ``when`` holds; an input edge draws its
  pin's hidden power. A flip-flop's pins draw theirs per transition (the clock two a cycle),
  each ``when`` weighted by its probability, QN the complement of Q. Transitions come from
  the ``rise/fall_transition`` tables stage by stage;
- **leakage** per cell: ``cell_leakage_power``, or the ``when``-weighted leakage groups where a
  library (ASAP7) has no cell total.

:func:`calibrate` runs the same circuit and activity through the flow exactly as
:func:`memwall.flows.hierarchical.run_sta` runs a module
(:func:`memwall.flows.rewrite.rewrite_module`, its activity simulation,
:func:`memwall.flows.sta.run_module` on the OpenSTA view of the library,
:mod:`memwall.flows.opensta2019`)
and returns both. The inputs toggle 0.5 per cycle with probability 0.5 of being 1, as random
data does: the register's next state is then independent of its present one, which is what the
``when`` probabilities of the hand computation assume. :func:`reproduce_traps` re-runs the
reference with each known trap put back, so the causes stay demonstrated, not remembered.

``python -m memwall.flows.calibration`` prints the comparison and the traps.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from pathlib import Path

from . import sta
from .errors import StaError
from .liberty import Liberty, eval_bool, parse_bool, table_lookup
from .liberty import pins as cell_pins
from .netlist import Netlist, fanout, netlist_from_verilog
from .opensta2019 import (
    check_run,
    move_default_operating_conditions,
    opensta_libraries,
    tcl_word,
)
from .pdk import Pdk, find_pdk, pdk_cell_library
from .rewrite import ModuleRun, rewrite_module

__all__ = ["REFERENCE_DIR", "CLOCK_NS", "DATA_ACTIVITY", "reference_netlist", "hand_power",
           "flow_power", "calibrate", "reproduce_traps", "probability"]

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
#: A clock each PDK reaches comfortably with this circuit (the check is on power, not speed).
CLOCK_NS = {"asap7": 1.0, "sky130hd": 5.0, "nangate45": 2.0}
#: Toggles per cycle and probability of 1 of the data input: random data.
DATA_ACTIVITY = (0.5, 0.5)
COMPONENTS = ("internal", "switching", "leakage", "total")


def reference_netlist(pdk_name: str) -> Path:
    return REFERENCE_DIR / f"ref_{pdk_name}.v"


# --------------------------------------------------------------------------------------------
# Probabilities of Liberty conditions (``when``) and the per-cycle events of a gate.

def probability(expr: str, duties: dict[str, float],
                functions: dict[str, str] | None = None) -> float:
    """P(``expr``) with the variables of ``duties`` independent, each 1 with its probability.

    ``functions`` defines dependent pins (a cell's outputs) as expressions of the independent
    ones, so that a condition on an output and its complement (Q and QN) counts correctly.
    """
    functions = {k: parse_bool(v) for k, v in (functions or {}).items()}
    tree = parse_bool(expr)
    free = sorted(duties)
    total = 0.0
    for values in itertools.product((False, True), repeat=len(free)):
        env = dict(zip(free, values, strict=True))
        weight = 1.0
        for name, value in env.items():
            weight *= duties[name] if value else 1.0 - duties[name]
        if weight == 0.0:
            continue
        for name, fn in functions.items():
            env[name] = eval_bool(fn, env)
        if eval_bool(tree, env):
            total += weight
    return total


# --------------------------------------------------------------------------------------------
# The hand computation.

def _lookup(group, liberty: Liberty, slew_s: float, load_f: float) -> float:
    return table_lookup(group, liberty.library, slew=slew_s / liberty.time_s,
                            load=load_f / liberty.cap_f)


def _markov_pairs(toggles: float, duty: float) -> dict[tuple[int, int], float]:
    """P(previous, present) of a signal toggling ``toggles`` times a cycle, at 1 ``duty``."""
    p01 = min(1.0, toggles / (2 * (1 - duty))) if duty < 1 else 0.0
    p10 = min(1.0, toggles / (2 * duty)) if duty > 0 else 0.0
    return {(0, 0): (1 - duty) * (1 - p01), (0, 1): (1 - duty) * p01,
            (1, 0): duty * p10, (1, 1): duty * (1 - p10)}


def _gate_events(function: str, stats: dict[str, tuple[float, float]]):
    """Every (probability, previous inputs, present inputs) of a gate with independent inputs,
    each a Markov chain with its toggle rate and probability of 1."""
    names = sorted(stats)
    pairs = [_markov_pairs(*stats[n]).items() for n in names]
    for combo in itertools.product(*pairs):
        weight = 1.0
        for _state, w in combo:
            weight *= w
        if weight:
            yield (weight, {n: bool(c[0][0]) for n, c in zip(names, combo, strict=True)},
                   {n: bool(c[0][1]) for n, c in zip(names, combo, strict=True)})


def _in_edge(arcs, edge: str) -> str:
    """Input edge that makes output ``edge`` through the first of ``arcs`` (as OpenSTA picks
    it): the clock edge of an edge-triggered arc, the same edge unless negative unate."""
    if not arcs:
        return edge
    kind = arcs[0].attr("timing_type", "combinational")
    if kind in ("rising_edge", "falling_edge"):
        return "rise" if kind == "rising_edge" else "fall"
    return {"rise": "fall", "fall": "rise"}[edge] \
        if arcs[0].attr("timing_sense") == "negative_unate" else edge


def hand_power(netlist: Netlist, pdk: Pdk, *, clock_period_ns: float, slew_s: float,
               output_load_f: float, inputs: dict[str, tuple[float, float]],
               clock: str = "clk") -> dict:
    """Power (W) of a small netlist, from the Liberty tables alone, by the Liberty meaning.

    Flip-flops with a one-pin ``next_state`` (the state follows D, sampled each cycle) and
    combinational cells whose inputs are independent of each other (each input a Markov chain
    with its toggle rate and probability of 1). For a gate every per-cycle event is enumerated:
    an output transition draws the ``internal_power`` of the arc from the input that toggled
    (shared when several did), its ``when`` true in the new state, rise or fall table by the
    output edge; an input transition draws its pin's (hidden) power likewise.

    Parameters
    ----------
    netlist
        The circuit.
    pdk
        Whose Liberty files describe the cells.
    clock_period_ns
        Clock period; activities are per cycle.
    slew_s
        Transition of the input ports and of the (ideal) clock.
    output_load_f
        Load on every output port.
    inputs
        Input port -> (toggles per cycle, probability of 1).
    clock
        The clock port (two transitions per cycle, probability 0.5).

    Returns
    -------
    dict
        ``internal``, ``switching``, ``leakage``, ``total`` (W) and per-item ``detail``.
    """
    cells = pdk_cell_library(pdk)
    std = cells.libs[0]
    volt = std.voltage
    freq = 1.0 / (clock_period_ns * 1e-9)
    fan = fanout(netlist, cells, {})
    out_ports = {netlist.port_bits[p][0] for p, d, _ in netlist.ports if d == "output"}
    in_port = {netlist.port_bits[p][0]: p for p, d, _ in netlist.ports if d == "input"}
    nets = set(fan.leaf_loads) | set(fan.leaf_drivers) | out_ports | set(in_port)
    cap, act, slew = {}, {}, {}
    for n in nets:
        loads = fan.leaf_loads.get(n, [])
        cap[n] = sum(cells.info(c.type).inputs[p] for c, p in loads) + \
            (output_load_f if n in out_ports else 0.0) + \
            cells.wire_cap(len(loads) + (n in out_ports))
    for n, port in in_port.items():
        act[n] = (2.0, 0.5) if port == clock else inputs[port]
        slew[n] = {"rise": slew_s, "fall": slew_s}
    groups = {}   # cell name -> (liberty, cell group, {pin: pin group})
    for cell in netlist.cells:
        liberty = cells.liberty_of(cell.type)
        group = liberty.cell(cell.type)
        groups[cell.name] = (liberty, group, dict(cell_pins(group, liberty.library)))
    # Activities and transitions, driver by driver, until every net is known.
    pending = list(netlist.cells)
    while pending:
        progress = []
        for cell in pending:
            liberty, group, pins = groups[cell.name]
            info = cells.info(cell.type)
            ins = {p: bits[0] for p, bits in cell.pins.items() if p in info.inputs}
            if not all(n in act and n in slew for n in ins.values()):
                continue
            for pin, func in info.outputs.items():
                n = cell.pins[pin][0]
                if info.is_sequential:
                    data = act[ins[info.data_pin]]
                    state_one = data[1] if not info.data_inverted else 1.0 - data[1]
                    iq = info.state_vars[0]
                    own = re.sub(r"[\s()]", "", func or "") == iq
                    act[n] = (data[0], state_one if own else 1.0 - state_one)
                else:
                    tree = parse_bool(func)
                    toggles = one = 0.0
                    for w, before, now in _gate_events(func, {p: act[m] for p, m in ins.items()}):
                        y0, y1 = eval_bool(tree, before), eval_bool(tree, now)
                        toggles += w * (y0 != y1)
                        one += w * y1
                    act[n] = (toggles, one)
                slew[n] = {}
                for edge in ("rise", "fall"):
                    values = []
                    for arc in pins[pin].find("timing"):
                        rel = ins[arc.attr("related_pin")]
                        values.append(_lookup(arc.find(f"{edge}_transition")[0], liberty,
                                              slew[rel][_in_edge([arc], edge)], cap[n]))
                    slew[n][edge] = max(values) * liberty.time_s
            progress.append(cell)
        if not progress:
            raise ValueError("hand_power: the netlist has a loop it cannot order")
        pending = [c for c in pending if c not in progress]
    detail: dict[str, float] = {}
    internal = switching = leakage = 0.0
    for n in nets:
        if n in in_port:
            continue   # driven from outside the block: neither the flow nor this counts it
        p = 0.5 * cap[n] * volt ** 2 * act[n][0] * freq
        detail[f"switching {netlist.net_names[n][0]}"] = p
        switching += p
    for cell in netlist.cells:
        liberty, group, pins = groups[cell.name]
        info = cells.info(cell.type)
        # Liberty gives internal energy in capacitance unit x voltage unit^2 (1 V here).
        energy_j = liberty.cap_f
        ins = {p: bits[0] for p, bits in cell.pins.items() if p in info.inputs}
        outs = {p: bits[0] for p, bits in cell.pins.items() if p in info.outputs}
        if info.is_sequential:
            energy = _flop_energy(info, pins, ins, outs, act, slew, cap, liberty, in_port, clock)
        else:
            energy = _gate_energy(info, pins, ins, outs, act, slew, cap, liberty)
        for pin, e in energy.items():
            p = e * energy_j * freq
            detail[f"internal {cell.name}/{pin}"] = p
            internal += p
        duties, functions = _cell_states(info, ins, outs, act)
        total_leak = group.attr("cell_leakage_power")
        if total_leak is not None:
            leak = float(total_leak)
        else:
            leak = sum(float(lp.attr("value")) * probability(lp.attr("when"), duties, functions)
                       for lp in group.find("leakage_power") if lp.attr("when"))
        leak *= liberty.leakage_w
        detail[f"leakage {cell.name}"] = leak
        leakage += leak
    return {"internal": internal, "switching": switching, "leakage": leakage,
            "total": internal + switching + leakage, "detail": detail}


def _cell_states(info, ins, outs, act) -> tuple[dict, dict]:
    """Independent variables of a cell with their probability of 1, and the functions of the
    others: the inputs; for a flip-flop also its state IQ, with IQN = !IQ."""
    duties = {p: act[n][1] for p, n in ins.items()}
    functions = {p: f for p, f in info.outputs.items() if f}
    if info.is_sequential:
        iq, iqn = info.state_vars
        for pin, func in info.outputs.items():
            func = re.sub(r"[\s()]", "", func or "")
            if pin in outs and func in (iq, iqn):
                duties[iq] = act[outs[pin]][1] if func == iq else 1.0 - act[outs[pin]][1]
                break
        functions = {iqn: f"!{iq}", **functions}   # IQN first: Q/QN functions read it
    return duties, functions


def _flop_energy(info, pins, ins, outs, act, slew, cap, liberty, in_port, clock) -> dict:
    """Internal energy per cycle (library units) of a flip-flop, pin by pin.

    Outputs switch with the state (rise and fall equally often); the clock pin makes a rise and
    a fall every cycle; D toggles with its net. Each ``when`` is weighted by its probability
    with D, the clock and the state independent and QN the complement of Q.
    """
    duties, functions = _cell_states(info, ins, outs, act)
    out = {}
    for pin, pin_group in pins.items():
        powers = pin_group.find("internal_power")
        n = (ins | outs).get(pin)
        if not powers or n is None:
            continue
        transitions = 2.0 if in_port.get(n) == clock else act[n][0]
        energy = 0.0
        for ip in powers:
            when = ip.attr("when")
            weight = probability(when, duties, functions) if when else 1.0
            rel = ip.attr("related_pin")
            for edge in ("rise", "fall"):
                table = ip.find(f"{edge}_power")
                if not table:
                    continue
                if pin in outs:
                    arcs = [a for a in pin_group.find("timing") if a.attr("related_pin") == rel]
                    s_in, load = slew[ins[rel]][_in_edge(arcs, edge)], cap[n]
                else:
                    s_in, load = slew[n][edge], 0.0
                energy += weight * 0.5 * _lookup(table[0], liberty, s_in, load)
        out[pin] = energy * transitions
    return out


def _gate_energy(info, pins, ins, outs, act, slew, cap, liberty) -> dict:
    """Internal energy per cycle (library units) of a combinational cell, event by event."""
    out: dict[str, float] = defaultdict(float)
    trees = {p: parse_bool(f) for p, f in info.outputs.items() if p in outs}
    stats = {p: act[n] for p, n in ins.items()}
    for weight, before, now in _gate_events("", stats):
        toggled = [p for p in ins if before[p] != now[p]]
        if not toggled:
            continue
        env = dict(now)
        for p, tree in trees.items():
            env[p] = eval_bool(tree, now)
        for pin, tree in trees.items():
            y0, y1 = eval_bool(tree, before), env[pin]
            if y0 == y1:
                continue
            edge = "rise" if y1 else "fall"
            for rel in toggled:
                energy = 0.0
                for ip in pins[pin].find("internal_power"):
                    if ip.attr("related_pin") != rel:
                        continue
                    when = ip.attr("when")
                    if when and not eval_bool(parse_bool(when), env):
                        continue
                    table = ip.find(f"{edge}_power")
                    if table:
                        s_in = slew[ins[rel]]["rise" if now[rel] else "fall"]
                        energy += _lookup(table[0], liberty, s_in, cap[outs[pin]])
                out[pin] += weight * energy / len(toggled)
        for rel in toggled:   # the input pins' own (hidden) power
            edge = "rise" if now[rel] else "fall"
            for ip in pins[rel].find("internal_power"):
                when = ip.attr("when")
                if when and not eval_bool(parse_bool(when), env):
                    continue
                table = ip.find(f"{edge}_power")
                if table:
                    out[rel] += weight * _lookup(table[0], liberty, slew[ins[rel]][edge], 0.0)
    return dict(out)


# --------------------------------------------------------------------------------------------
# The flow's figure for the same circuit, and the comparison.

def _reference_run(pdk: Pdk, activity: tuple[float, float]) -> tuple[Netlist, ModuleRun]:
    netlist = netlist_from_verilog(reference_netlist(pdk.name).read_text())
    cells = pdk_cell_library(pdk)
    # What the VCD would say: both inputs and the register (named q) toggle with the data.
    signals = {"din": activity, "e": activity, "q": activity}
    run = rewrite_module(netlist, None, cells, activity={"signals": signals},
                             top_output_load=sta.nominal_load(pdk))
    return netlist, run


def flow_power(pdk: Pdk, clock_period_ns: float, workdir: Path,
               activity: tuple[float, float] = DATA_ACTIVITY) -> dict:
    """OpenSTA power (W) of the reference circuit through the flow's own module run."""
    _, run = _reference_run(pdk, activity)
    if run.annotated.get("registers annotated") != 1:
        raise StaError(f"calibration: the register of {reference_netlist(pdk.name)} "
                           f"was not matched to its activity ({run.annotated})")
    return sta.run_module(run, pdk, clock_period_ns, workdir, mode="power")


def calibrate(pdk_name: str, workdir: Path, *, clock_period_ns: float | None = None,
              activity: tuple[float, float] = DATA_ACTIVITY) -> dict:
    """Hand and flow power of the reference circuit of ``pdk_name``, and their ratios.

    Returns
    -------
    dict
        ``hand`` and ``flow`` (W per component), ``ratio`` (flow / hand per component),
        ``clock_period_ns``, ``activity`` and the ``detail`` of the hand computation.
    """
    pdk = find_pdk(pdk_name)
    period = clock_period_ns or CLOCK_NS[pdk_name]
    netlist, _ = _reference_run(pdk, activity)
    hand = hand_power(netlist, pdk, clock_period_ns=period, slew_s=sta.nominal_slew(pdk),
                      output_load_f=sta.nominal_load(pdk), inputs={"din": activity, "e": activity})
    flow = flow_power(pdk, period, Path(workdir) / pdk_name, activity)
    return {"pdk": pdk_name, "clock_period_ns": period, "activity": activity,
            "hand": {k: hand[k] for k in COMPONENTS}, "flow": flow,
            "ratio": {k: flow[k] / hand[k] if hand[k] else float("nan") for k in COMPONENTS},
            "detail": hand["detail"]}


def reproduce_traps(pdk_name: str, workdir: Path) -> dict:
    """Re-run the reference with one known trap put back at a time; power in W.

    - ``period_in_ns``: the clock period written in ns into the SDC (on ASAP7 read as ps).
    - ``original_library``: OpenSTA on the PDK's own Liberty files instead of the flow's view
      (operating conditions still set): this release's raw internal power and leakage.
    - ``no_operating_conditions``: the original files without ``set_operating_conditions``
      (sky130hd: internal power exactly 0).
    - ``moved_operating_conditions``: the original files with only sky130hd's
      ``default_operating_conditions`` moved below its group, no ``set_operating_conditions``:
      the same figures as ``original_library``, which pins the cause on that forward reference.
    - ``macro_first``: a fakeram library read before the standard cells; ASAP7's count in ns,
      so the flow's unit check must refuse the run.
    """
    pdk = find_pdk(pdk_name)
    work = Path(workdir) / f"{pdk_name}-traps"
    work.mkdir(parents=True, exist_ok=True)
    period = CLOCK_NS[pdk_name]
    _, run = _reference_run(pdk, DATA_ACTIVITY)
    netlist_path = work / "memwall_ref.power.v"
    netlist_path.write_text(run.verilog)
    script = sta.module_tcl(run, pdk, period, netlist_path, mode="power")
    view_cells, view_macros = opensta_libraries(pdk)
    originals = dict(zip(map(str, view_cells + view_macros),
                         map(str, list(pdk.cell_liberty) + [m.liberty for m in pdk.macros]),
                         strict=True))

    def original(text: str) -> str:
        for view, src in originals.items():
            text = text.replace(f"read_liberty {tcl_word(view)}", f"read_liberty {tcl_word(src)}")
        return text

    def without_opcond(text: str) -> str:
        return "\n".join(x for x in text.splitlines()
                         if not x.startswith("set_operating_conditions")) + "\n"

    out: dict[str, object] = {}
    lib_period = pdk.to_library_time(period)
    trap = script.replace(f"-period {lib_period:.6g}", f"-period {period:.6g}")
    out["period_in_ns"] = sta.parse_power(sta.run_tcl(trap, work, "period_in_ns"))
    out["original_library"] = sta.parse_power(sta.run_tcl(original(script), work, "original"))
    raw = without_opcond(original(script))
    out["no_operating_conditions"] = sta.parse_power(sta.run_tcl(raw, work, "no_opcond"))
    std = pdk_cell_library(pdk).libs[0]
    moved_header = move_default_operating_conditions(std.header_text)
    if moved_header != std.header_text:
        copy = work / std.path.name
        copy.write_text(moved_header + std.text[std.head_end:])
        moved = raw.replace(f"read_liberty {tcl_word(std.path)}", f"read_liberty {tcl_word(copy)}")
        out["moved_operating_conditions"] = sta.parse_power(
            sta.run_tcl(moved, work, "moved_opcond"))
    if view_macros:
        lines = script.splitlines()
        first = f"read_liberty {tcl_word(view_macros[0])}"
        reordered = [first] + [x for x in lines if x != first]
        text_out = sta.run_tcl("\n".join(reordered) + "\n", work, "macro_first")
        try:
            check_run(text_out, pdk)
            out["macro_first"] = "accepted"
        except StaError as exc:
            out["macro_first"] = f"refused: {exc}"
    return out


def main() -> None:   # pragma: no cover - a report for people, the tests check the numbers
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in CLOCK_NS:
            result = calibrate(name, Path(tmp))
            print(f"{name} @ {result['clock_period_ns']} ns, data {result['activity']}:")
            for k in COMPONENTS:
                print(f"  {k:9s} hand {result['hand'][k]:.4e} W  flow {result['flow'][k]:.4e} W"
                      f"  ratio {result['ratio'][k]:.4f}")
            for trap, value in reproduce_traps(name, Path(tmp)).items():
                print(f"  trap {trap}: {value}")


if __name__ == "__main__":   # pragma: no cover
    main()
