"""Switching activity from a simulation waveform, per module type, for OpenSTA.

A cocotb run of a representative workload leaves a VCD (``simulate(..., keep_waves=path)``,
VCD with ``sim="verilator"``). :func:`activity_from_vcd` turns it into, for every bit of every
signal the VCD shows in a module's scope, the **toggle rate** (0->1 and 1->0 transitions per
clock cycle) and the **static probability** (fraction of time at 1; x and z count as not 1).

VCD scopes are instances; the flow analyses module types. Each scope is given its module type
by following the generator's own record of instance names (``instance_tree`` in
``manifest.json``, :meth:`memwall.hdl.common.netlist.Design.instance_tree`) down from the
simulated top, and every module type gets the **mean over its instances** in the VCD,
bit by bit, plus the per-cycle values of a few instances (``traces``). With them
:func:`memwall.flows.sta.run_sta` annotates, per module:

- input ports, by port name and bit;
- register outputs, by the name Yosys keeps on the net a register drives (rule in
  :func:`memwall.flows.gate_activity.register_match`; ``annotated`` in its result gives the
  fraction matched);
- outputs of child instances (and of black boxes such as memories), by the parent's wire names,
  else the child's port names.

Every other net's activity comes from the flow's zero-delay simulation of the module's gates,
which replays the traces (:func:`memwall.flows.gate_activity.simulate_activity`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

__all__ = ["ActivityError", "activity_from_vcd", "bit_activity", "bit_trace", "decode_trace",
           "instance_scopes", "save_activity", "load_activity", "TRACE_INSTANCES",
           "TRACE_CYCLES"]

#: Per module type, the per-cycle values of this many instances and cycles are kept: the flow
#: replays them into its gate-level activity simulation, so that the bits of a bus keep the
#: correlation the workload gave them (independent random bits would overstate arithmetic).
TRACE_INSTANCES = 8
TRACE_CYCLES = 512


class ActivityError(RuntimeError):
    """A waveform that cannot give activity (no clock, no known top scope, empty window)."""


_VAR = re.compile(r"^(?P<name>.*?)(?:\[(?P<msb>-?\d+)(?::(?P<lsb>-?\d+))?\])?$")


def _bits(name: str, size: int) -> list[str]:
    """Bit keys of a VCD variable, MSB first, as the netlist names them (``x[3]``, ``y``)."""
    m = _VAR.match(name)
    base = m.group("name")
    if m.group("msb") is None:
        return [base] if size == 1 else [f"{base}[{i}]" for i in range(size - 1, -1, -1)]
    msb = int(m.group("msb"))
    lsb = int(m.group("lsb")) if m.group("lsb") is not None else msb
    step = -1 if msb >= lsb else 1
    return [f"{base}[{i}]" for i in range(msb, lsb + step, step)]


def bit_activity(tv: list[tuple[int, str]], size: int, start: int, end: int,
                 cycles: float) -> list[tuple[float, float]]:
    """Per bit (MSB first): (toggles per cycle, fraction of time at 1) within [start, end).

    ``tv`` is vcdvcd's list of (time, value) changes; a vector value shorter than ``size`` is
    extended on the left with 0, or with its leading x/z, as the VCD format says.
    """
    toggles = [0] * size
    high = [0.0] * size
    prev: list[str] | None = None
    prev_t = start
    for t, raw in list(tv) + [(end, None)]:
        t_clip = min(max(t, start), end)
        if prev is not None and t_clip > prev_t:
            for i, b in enumerate(prev):
                if b == "1":
                    high[i] += t_clip - prev_t
        prev_t = max(prev_t, t_clip)
        if raw is None:
            break
        value = raw.lower()
        if len(value) < size:
            pad = value[0] if value[0] in "xz" else "0"
            value = pad * (size - len(value)) + value
        value = list(value[-size:])
        if prev is not None and start <= t < end:
            for i, (a, b) in enumerate(zip(prev, value, strict=True)):
                if a != b and a in "01" and b in "01":
                    toggles[i] += 1
        prev = value
    span = float(end - start)
    return [(toggles[i] / cycles, high[i] / span) for i in range(size)]


def bit_trace(tv: list[tuple[int, str]], size: int, edges: list[int]) -> list[str]:
    """Per bit (MSB first): its value at each clock edge, cycle c as bit c of a hex number.

    A value is sampled at the edge time, after every change stamped with it (a zero-delay
    simulation settles registers and the logic after them at the edge); x and z read as 0.
    """
    values = []
    i, current = 0, "0" * size
    for t in edges:
        while i < len(tv) and tv[i][0] <= t:
            raw = tv[i][1].lower()
            pad = raw[0] if raw[0] in "xz" else "0"
            current = (pad * max(0, size - len(raw)) + raw)[-size:]
            i += 1
        values.append(current)
    out = []
    for b in range(size):
        word = 0
        for c, v in enumerate(values):
            if v[b] == "1":
                word |= 1 << c
        out.append(format(word, "x"))
    return out


def decode_trace(word: str, cycles: int) -> list[int]:
    """The per-cycle bits of one :func:`bit_trace` entry."""
    value = int(word, 16)
    return [(value >> c) & 1 for c in range(cycles)]


def instance_scopes(all_scopes, parent: str, entry: dict) -> list[str]:
    """VCD scopes of one ``instance_tree`` entry of the module at scope ``parent``.

    A generate-loop iteration is spelt as the simulator writes it: ``block[k]`` (Icarus),
    ``block__BRA__k__KET__`` (Verilator) or ``block(k)``.
    """
    instance = entry["instance"]
    loop = entry.get("generate")
    if loop is None:
        candidates = [f"{parent}.{instance}"]
    else:
        candidates = [f"{parent}.{loop['block']}{index}.{instance}"
                      for k in range(loop["count"])
                      for index in (f"[{k}]", f"__BRA__{k}__KET__", f"({k})")]
    return [scope for scope in candidates if scope in all_scopes]


def activity_from_vcd(vcd_path: Path, instance_tree: dict[str, list[dict]], *,
                      clock: str = "clk", top_scope: str | None = None,
                      top_module: str | None = None, start: int | None = None,
                      end: int | None = None) -> dict:
    """Toggle rate and static probability per module type and bit, from a VCD.

    Parameters
    ----------
    vcd_path
        The waveform (Verilator's VCD of a cocotb run).
    instance_tree
        Per module of the design, its instances (``instance_tree`` of ``manifest.json``): they
        give every scope its module type.
    clock
        Clock signal of the top scope; activity is per rising edge of it.
    top_scope
        Dotted VCD scope of the simulated top; by default the shallowest scope named like a
        module of the design (cocotb's Verilator runs dump ``TOP.<toplevel>``).
    top_module
        Module type of ``top_scope`` when the testbench named its toplevel differently (a
        unit simulated as ``reduction_unit`` is module ``reduction_unit_vlen16``).
    start, end
        Window in VCD time units; by default from the first to the last rising clock edge.

    Returns
    -------
    dict
        ``source``, ``vcd``, ``cycles``, ``clock_period_ns``, ``scopes`` (scope -> module)
        and ``modules``: module -> ``{"instances": n, "signals": {bit: [toggles, duty]},
        "traces": {bit: [hex per instance]}, "trace_cycles": c}`` (signals: means over the n
        instances the VCD holds; traces: :func:`bit_trace` of the first
        :data:`TRACE_INSTANCES` instances over the first :data:`TRACE_CYCLES` cycles).
    """
    from vcdvcd import VCDVCD

    vcd = VCDVCD(str(vcd_path), store_tvs=True, store_scopes=True)
    known = set(instance_tree)
    if top_scope is None:
        candidates = sorted((s for s in vcd.scopes if s.split(".")[-1] in known),
                            key=lambda s: s.count("."))
        if not candidates:
            raise ActivityError(f"{vcd_path}: no scope named like a module of the design "
                                f"(scopes: {sorted(vcd.scopes)[:8]})")
        top_scope = candidates[0]
    if top_scope not in vcd.scopes:
        raise ActivityError(f"{vcd_path}: no scope {top_scope}")
    top_module = top_module or top_scope.split(".")[-1]
    if top_module not in known:
        raise ActivityError(f"{vcd_path}: top scope {top_scope} is no module of the design")
    clock_ref = next((ref for name, ref in _vars(vcd.scopes[top_scope])
                      if _VAR.match(name).group("name") == clock), None)
    if clock_ref is None:
        raise ActivityError(f"{vcd_path}: no clock {clock!r} in scope {top_scope}")
    clk_tv = vcd.data[vcd.references_to_ids[clock_ref]].tv
    rises = [t for (t, v), (_, p) in zip(clk_tv[1:], clk_tv[:-1], strict=True)
             if v == "1" and p == "0"]
    if clk_tv and clk_tv[0][1] == "1" and clk_tv[0][0] > vcd.begintime:
        rises.insert(0, clk_tv[0][0])
    # Whole cycles: from the first to the last rising edge unless told otherwise.
    start = (rises[0] if rises else vcd.begintime) if start is None else start
    end = (rises[-1] if rises else vcd.endtime) if end is None else end
    in_window = [t for t in rises if start <= t <= end]
    if len(in_window) < 2 or end <= start:
        raise ActivityError(f"{vcd_path}: fewer than two clock cycles in the window")
    period = (in_window[-1] - in_window[0]) / (len(in_window) - 1)
    cycles = (end - start) / period
    # Scope -> module type, from the top down through the generator's instance names.
    scopes = {top_scope: top_module}
    queue = [top_scope]
    while queue:
        scope = queue.pop()
        for entry in instance_tree.get(scopes[scope], []):
            for path in instance_scopes(vcd.scopes, scope, entry):
                scopes[path] = entry["module"]
                queue.append(path)
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    counts: dict[str, int] = defaultdict(int)
    traces: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    edges = [t for t in in_window if t < end][:TRACE_CYCLES]
    for scope, module in sorted(scopes.items()):
        counts[module] += 1
        keep = counts[module] <= TRACE_INSTANCES
        for name, ref in _vars(vcd.scopes[scope]):
            signal = vcd.data[vcd.references_to_ids[ref]]
            size = int(signal.size)
            keys = _bits(name, size)
            for key, (toggles, duty) in zip(keys,
                                            bit_activity(signal.tv, size, start, end, cycles),
                                            strict=True):
                acc = sums[module][key]
                acc[0] += toggles
                acc[1] += duty
                acc[2] += 1
            if keep:
                for key, word in zip(keys, bit_trace(signal.tv, size, edges), strict=True):
                    traces[module][key].append(word)
    out = {m: {"instances": counts[m],
               "signals": {k: [v[0] / v[2], v[1] / v[2]] for k, v in sorted(bits.items())},
               "traces": {k: traces[m][k] for k in sorted(traces[m])},
               "trace_cycles": len(edges)}
           for m, bits in sums.items()}
    unit = float(vcd.timescale.get("timescale", 1e-9)) if vcd.timescale else 1e-9
    return {
        "source": f"vcd:{Path(vcd_path).name} ({cycles:.0f} cycles of {clock})",
        "vcd": str(vcd_path),
        "cycles": cycles,
        "clock_period_ns": period * unit * 1e9,
        "scopes": scopes,
        "modules": out,
    }


def _vars(scope) -> list[tuple[str, str]]:
    """(variable name, full reference) of the variables directly in a vcdvcd scope."""
    return [(name, ref) for name, ref in scope.subElements.items() if isinstance(ref, str)]


def save_activity(activity: dict, path: Path) -> Path:
    """Write an activity dict as JSON (atomically), for a later :func:`load_activity`."""
    from memwall.files import write_json_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_json_atomic(path, activity, indent=None)


def load_activity(path: Path) -> dict:
    """An activity dict written by :func:`save_activity`."""
    import json

    return json.loads(Path(path).read_text())
