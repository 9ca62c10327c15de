"""Switching activity from a simulation waveform, per module type, for OpenSTA.

A cocotb run of a representative workload leaves a VCD (``simulate(..., keep_waves=path)``,
VCD with ``sim="verilator"``). :func:`activity_from_vcd` turns it into, for every bit of every
signal the VCD shows in a module's scope, the **toggle rate** (0->1 and 1->0 transitions per
clock cycle) and the **static probability** (fraction of time at 1; x and z count as not 1).

VCD scopes are instances; the flow analyses module types. Each scope is given its module type
by following the generator's own record of instance names (``instance_tree`` in
``manifest.json``, :meth:`memwall.hdl.common.netlist.Design.instance_tree`) down from the
simulated top (a sub-scope that is no module of the design, an Amaranth submodule flattened
into its parent by synthesis, counts as part of its parent: :func:`scope_members`), and every
module type gets the **mean over its instances** in the VCD,
bit by bit, plus the per-cycle values of a few instances (``traces``). With them
:func:`memwall.flows.hierarchical.run_sta` annotates, per module:

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

import math
import re
from collections import defaultdict
from pathlib import Path

from .errors import ActivityError

__all__ = ["activity_from_vcd", "bit_activity", "bit_trace", "decode_trace",
           "instance_scopes", "scope_members", "save_activity", "load_activity", "widen_signals",
           "TRACE_INSTANCES", "TRACE_CYCLES"]

#: Per module type, the per-cycle values of this many instances and cycles are kept: the flow
#: replays them into its gate-level activity simulation, so that the bits of a bus keep the
#: correlation the workload gave them (independent random bits would overstate arithmetic).
TRACE_INSTANCES = 8
TRACE_CYCLES = 512


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
    import numpy as np

    values = []
    i, current, mask = 0, 0, (1 << size) - 1
    for t in edges:
        while i < len(tv) and tv[i][0] <= t:
            current = int(tv[i][1].translate(_ONES), 2) & mask
            i += 1
        values.append(current)
    nbytes = (size + 7) // 8
    raw = np.frombuffer(b"".join(v.to_bytes(nbytes, "little") for v in values), np.uint8)
    cycles = np.unpackbits(raw.reshape(len(values), nbytes), axis=1,
                           bitorder="little")[:, :size]
    out = []
    for bit in range(size - 1, -1, -1):
        word = np.packbits(cycles[:, bit], bitorder="little").tobytes()
        out.append(format(int.from_bytes(word, "little"), "x"))
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

    The VCD is streamed twice (the clock first, then every value change), never held in
    memory: a whole-core run's VCD is hundreds of MB (:class:`_Bits` keeps each signal's
    counts bit-sliced, so one change costs a few integer operations whatever its width).

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
    header = _read_header(Path(vcd_path))
    all_scopes = header.scopes
    known = set(instance_tree)
    if top_scope is None:
        candidates = sorted((s for s in all_scopes if s.split(".")[-1] in known),
                            key=lambda s: s.count("."))
        if not candidates:
            raise ActivityError(f"{vcd_path}: no scope named like a module of the design "
                                f"(scopes: {sorted(all_scopes)[:8]})")
        top_scope = candidates[0]
    if top_scope not in all_scopes:
        raise ActivityError(f"{vcd_path}: no scope {top_scope}")
    top_module = top_module or top_scope.split(".")[-1]
    if top_module not in known:
        raise ActivityError(f"{vcd_path}: top scope {top_scope} is no module of the design")
    clock_code = next((code for name, (code, _) in all_scopes[top_scope].items()
                       if _VAR.match(name).group("name") == clock), None)
    if clock_code is None:
        raise ActivityError(f"{vcd_path}: no clock {clock!r} in scope {top_scope}")
    clk_tv, quantum, (begin_t, end_t) = _clock_pass(Path(vcd_path), header, clock_code)
    rises = [t for (t, v), (_, p) in zip(clk_tv[1:], clk_tv[:-1], strict=True)
             if v == "1" and p == "0"]
    if clk_tv and clk_tv[0][1] == "1" and clk_tv[0][0] > begin_t:
        rises.insert(0, clk_tv[0][0])
    # Whole cycles: from the first to the last rising edge unless told otherwise.
    start = (rises[0] if rises else begin_t) if start is None else start
    end = (rises[-1] if rises else end_t) if end is None else end
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
            for path in instance_scopes(all_scopes, scope, entry):
                scopes[path] = entry["module"]
                queue.append(path)
    edges = [t for t in in_window if t < end][:TRACE_CYCLES]
    members = scope_members(all_scopes, scopes)
    counts: dict[str, int] = defaultdict(int)
    traced: set[str] = set()
    for scope, module in sorted(scopes.items()):
        counts[module] += 1
        if counts[module] <= TRACE_INSTANCES:
            traced.update(code for _, code, _ in members[scope])
    wanted = {code: size for scope in scopes for _, code, size in members[scope]}
    quantum = math.gcd(quantum, start, end) or 1
    bits = _value_pass(Path(vcd_path), header, wanted, traced, start, end, quantum,
                       edges[-1] if edges else start)
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    traces: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[str, int] = defaultdict(int)
    span = float(end - start)
    per_code: dict[str, tuple] = {}
    for scope, module in sorted(scopes.items()):
        seen[module] += 1
        keep = seen[module] <= TRACE_INSTANCES
        for name, code, size in members[scope]:
            keys = _bits(name, size)
            signal = bits[code]
            if code not in per_code:
                per_code[code] = (signal.toggles(), signal.high(quantum))
            toggles, high = per_code[code]
            for i, key in enumerate(keys):   # keys MSB first: key i is bit size-1-i
                acc = sums[module][key]
                acc[0] += toggles[size - 1 - i] / cycles
                acc[1] += high[size - 1 - i] / span
                acc[2] += 1
            if keep:
                for key, word in zip(keys, bit_trace(signal.tv, size, edges), strict=True):
                    traces[module][key].append(word)
    out = {m: {"instances": counts[m],
               "signals": {k: [v[0] / v[2], v[1] / v[2]] for k, v in sorted(bits_.items())},
               "traces": {k: traces[m][k] for k in sorted(traces[m])},
               "trace_cycles": len(edges)}
           for m, bits_ in sums.items()}
    return {
        "source": f"vcd:{Path(vcd_path).name} ({cycles:.0f} cycles of {clock})",
        "vcd": str(vcd_path),
        "cycles": cycles,
        "clock_period_ns": period * header.unit_s * 1e9,
        "scopes": scopes,
        "modules": out,
    }


def scope_members(all_scopes: dict, scopes: dict[str, str]) -> dict[str, list]:
    """(name, id code, size) of the variables of each module scope: its own, and those of its
    sub-scopes that are no module of the design (Amaranth's own, not deduplicated, submodules,
    e.g. a FIFO inside the sequencer), named ``<path below the module>.<name>`` as Yosys'
    ``flatten`` names them in the module's netlist (``fifo.level``). A scope holding a module
    scope (a generate block) is not a submodule."""
    members = {s: [(n, c, z) for n, (c, z) in all_scopes[s].items()] for s in scopes}
    holders = {s.rsplit(".", k)[0] for s in scopes for k in range(1, s.count(".") + 1)}
    for sub in sorted(all_scopes):
        if sub in scopes or sub in holders:
            continue
        owner = sub
        while "." in owner and owner not in scopes:
            owner = owner.rsplit(".", 1)[0]
        if owner in scopes and owner != sub:
            prefix = sub[len(owner) + 1:] + "."
            members[owner] += [(prefix + n, c, z) for n, (c, z) in all_scopes[sub].items()]
    return members


# --------------------------------------------------------------------------------------------
# Streaming VCD reader.

_ONES = str.maketrans("01xzXZ", "010000")
_XZ = str.maketrans("01xzXZ", "001111")
_SCALAR = frozenset(b"01xzXZ")
_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


class _Header:
    """A VCD's definitions: ``scopes`` (dotted scope -> {variable name: (id code, size)}, the
    variables directly in it, names with their range as vcdvcd joins them, ``data[7:0]``),
    the time unit in seconds and the byte offset where the value changes start."""

    def __init__(self, scopes: dict, unit_s: float, body: int):
        self.scopes, self.unit_s, self.body = scopes, unit_s, body


def _read_header(path: Path) -> _Header:
    scopes: dict[str, dict[str, tuple[str, int]]] = {}
    stack: list[str] = []
    unit_s, pending = 1e-9, ""
    with open(path, "rb") as f:
        for raw in f:
            line = pending + raw.decode(errors="replace").strip()
            if line.startswith("$") and "$end" not in line.split()[1:] and line != "$end":
                pending = line + " "   # a definition spread over several lines
                continue
            pending = ""
            words = line.split()
            if not words:
                continue
            if words[0] == "$scope":
                stack.append(words[2])
                scopes.setdefault(".".join(stack), {})
            elif words[0] == "$upscope":
                stack.pop()
            elif words[0] == "$var":
                scopes.setdefault(".".join(stack), {})["".join(words[4:-1])] = \
                    (words[3], int(words[2]))
            elif words[0] == "$timescale":
                m = re.match(r"([\d.]+)\s*([munpf]?s)", " ".join(words[1:-1]))
                if m:
                    unit_s = float(m.group(1)) * _UNITS[m.group(2)]
            elif words[0] == "$enddefinitions":
                return _Header(scopes, unit_s, f.tell())
    raise ActivityError(f"{path}: no $enddefinitions: not a VCD")


def _clock_pass(path: Path, header: _Header, code: str):
    """The clock's changes, the gcd of all change times, and the first and last times."""
    tv, quantum, first, last = [], 0, None, 0
    t = None
    with open(path, "rb") as f:
        f.seek(header.body)
        for raw in f:
            if raw[:1] == b"#":
                t = int(raw[1:])
                first = t if first is None else first
                last = t
                quantum = math.gcd(quantum, t)
            elif raw[:1] in (b"0", b"1", b"x", b"z", b"X", b"Z") \
                    and raw[1:].strip().decode() == code:
                tv.append((t or 0, raw[:1].decode().lower()))
    return tv, quantum, (first or 0, last)


class _Bits:
    """One signal's per-bit toggle count and time at 1, bit-sliced: plane i of a count holds
    bit i of every bit's count, so adding a mask of bits is a ripple of integer operations."""

    __slots__ = ("size", "mask", "ones", "xz", "known", "last", "tog", "hi", "tv", "tog1",
                 "hi1")

    def __init__(self, size: int, traced: bool):
        self.size, self.mask = size, (1 << size) - 1
        self.ones = self.xz = 0
        self.known = False
        self.last = 0
        self.tog: list[int] = []
        self.hi: list[int] = []
        self.tv: list | None = [] if traced else None
        self.tog1 = self.hi1 = 0   # a one-bit signal's plain counts (hi1 in time units)

    @staticmethod
    def _add(planes: list[int], carry: int, at: int = 0) -> None:
        """Add one to the count of every bit set in ``carry``, from plane ``at`` up."""
        i = at
        planes.extend([0] * (at - len(planes)))
        while carry:
            if i == len(planes):
                planes.append(0)
            s = planes[i]
            planes[i] = s ^ carry
            carry &= s
            i += 1

    @staticmethod
    def _scaled(planes: list[int], value: int, times: int) -> None:
        """Add ``times`` to the count of every bit set in ``value``."""
        j = 0
        while times:
            if times & 1:
                _Bits._add(planes, value, j)
            times >>= 1
            j += 1

    @staticmethod
    def _unpack(planes: list[int], size: int):
        import numpy as np

        out = np.zeros(size, dtype=np.int64)
        nbytes = (size + 7) // 8
        for i, plane in enumerate(planes):
            bits = np.unpackbits(np.frombuffer(plane.to_bytes(nbytes, "little"), np.uint8),
                                 bitorder="little")[:size]
            out += bits.astype(np.int64) << i
        return out

    def toggles(self):
        """Toggles per bit, index = bit number (LSB 0)."""
        return [self.tog1] if self.size == 1 else self._unpack(self.tog, self.size)

    def high(self, quantum: int):
        """Time at 1 per bit (VCD time units), index = bit number."""
        if self.size == 1:
            return [self.hi1]
        return self._unpack(self.hi, self.size) * quantum


def _value_pass(path: Path, header: _Header, wanted: dict[str, int], traced: set[str],
                start: int, end: int, quantum: int, trace_end: int) -> dict[str, _Bits]:
    """Stream the value changes of the ``wanted`` codes (code -> size) into :class:`_Bits`,
    with the semantics of :func:`bit_activity` (a change from or to x/z is no toggle, x/z is
    not 1, a short vector is extended with 0 or its leading x/z) over [start, end), and the
    raw changes of ``traced`` codes up to ``trace_end`` for :func:`bit_trace`."""
    bits = {code: _Bits(size, code in traced) for code, size in wanted.items()}
    add, scaled = _Bits._add, _Bits._scaled
    t = 0
    with open(path, "rb") as f:
        f.seek(header.body)
        for line in f:
            c = line[0]
            if c == 35:   # '#'
                t = int(line[1:])
                if t > end:
                    break
                continue
            if c == 98 or c == 66:   # 'b', 'B': a vector
                value, code = line[1:].split()
                raw, code = value.decode(), code.decode()
            elif c in _SCALAR:
                raw, code = chr(c), line[1:].strip().decode()
            else:
                continue
            b = bits.get(code)
            if b is None:
                continue
            if b.tv is not None and t <= trace_end:
                b.tv.append((t, raw))
            if b.size == 1:   # most changes: plain counters, no bit slicing
                one, x = raw[-1] == "1", raw[-1] in "xzXZ"
                clipped = start if t < start else t
                if b.known:
                    if clipped > b.last:
                        if b.ones:
                            b.hi1 += clipped - b.last
                        b.last = clipped
                    if t < end and t >= start and one != b.ones and not x and not b.xz:
                        b.tog1 += 1
                else:
                    b.known, b.last = True, clipped
                b.ones, b.xz = one, x
                continue
            n = len(raw)
            if raw.isdigit():   # only 0 and 1: no x/z to mask (the common case)
                ones, xz = int(raw, 2), 0
            else:
                ones, xz = int(raw.translate(_ONES), 2), int(raw.translate(_XZ), 2)
                if n < b.size and raw[0] in "xzXZ":
                    xz |= b.mask ^ ((1 << n) - 1)
            if n > b.size:
                ones &= b.mask
                xz &= b.mask
            clipped = start if t < start else t
            if b.known:
                if clipped > b.last:
                    if b.ones:
                        scaled(b.hi, b.ones, (clipped - b.last) // quantum)
                    b.last = clipped
                if start <= t < end:
                    changed = (b.ones ^ ones) & ~(b.xz | xz) & b.mask
                    if changed:
                        add(b.tog, changed)
            else:
                b.known, b.last = True, clipped
            b.ones, b.xz = ones, xz
    for b in bits.values():   # the last value holds to the end of the window
        if b.known and end > b.last and b.ones:
            if b.size == 1:
                b.hi1 += end - b.last
            else:
                scaled(b.hi, b.ones, (end - b.last) // quantum)
    return bits


_BIT_NAME = re.compile(r"^(?P<base>.*)\[(?P<index>\d+)\]$")


def widen_signals(signals: dict, names) -> dict:
    """``signals`` plus, for every bit name ``base[i]`` of ``names`` it lacks while it has other
    bits of ``base``, the mean (toggles, duty) of those bits: a wider module's bits (more
    lanes, a longer index) from the activity of a narrower module of the same generator."""
    by_base: dict[str, list] = defaultdict(list)
    for key, value in signals.items():
        m = _BIT_NAME.match(key)
        if m:
            by_base[m.group("base")].append(value)
    means = {base: [sum(v[0] for v in values) / len(values),
                    sum(v[1] for v in values) / len(values)]
             for base, values in by_base.items()}
    out = dict(signals)
    for name in names:
        m = _BIT_NAME.match(name)
        if name not in out and m and m.group("base") in means:
            out[name] = list(means[m.group("base")])
    return out


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
