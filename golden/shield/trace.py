"""SHIELD workload traces: what the activation workspace is asked to do, step by step.

A trace is a YAML file (example: ``configs/traces/shield_small.yaml``)::

    seed: 1                       # optional: seeds the data written (default 0)
    steps:
      - {op: write, class: kv, addr: 0, words: 16}   # words addr .. addr+15 of the KV region
      - {op: read, class: qo, addr: 0, words: 8}
      - {op: idle, us: 200}                         # time passes; refresh goes on
      - {op: release, class: qo}                    # layer end: no QO word is live any more
      - {op: repeat, times: 3, steps: [...]}        # the nested steps, 3 times

Time: every word access takes one controller cycle, ``idle`` adds ``us`` microseconds. Addresses
count words within the class's region (``[0, kv_words)`` or ``[0, qo_words)``). A word is live
from its first write until its class is released; reading a word that is not live is an error.
Both ``memwall run shield`` (RTL) and ``memwall model shield`` (analytic) read this format.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from memwall.inputs import InputError, check_keys, load_yaml, shown

__all__ = ["TraceError", "Step", "Trace", "LiveRanges", "load_trace", "parse_trace", "CLASSES",
           "OPS", "MAX_STEPS"]

CLASSES = ("kv", "qo")
OPS = ("write", "read", "idle", "release", "repeat")
_KEYS = {"write": {"class", "addr", "words"}, "read": {"class", "addr", "words"},
         "idle": {"us"}, "release": {"class"}, "repeat": {"times", "steps"}}
MAX_STEPS = 1_000_000


class TraceError(InputError):
    """A trace that cannot be run; the message names the step, the key and what is allowed."""


@dataclass(frozen=True)
class Step:
    op: str                 # write | read | idle | release
    cls: str | None = None  # kv | qo
    addr: int = 0
    words: int = 0
    us: float = 0.0


@dataclass(frozen=True)
class Trace:
    steps: tuple[Step, ...]
    seed: int = 0

    def cycles(self, clock_mhz: float) -> int:
        """Length of the trace in controller cycles (accesses at one word per cycle)."""
        return sum(s.words if s.op in ("write", "read") else
                   int(round(s.us * clock_mhz)) if s.op == "idle" else 0 for s in self.steps)


class LiveRanges:
    """Disjoint, merged word ranges ``[lo, hi)`` of one class that are live."""

    def __init__(self) -> None:
        self.lo: list[int] = []
        self.hi: list[int] = []

    def add(self, a: int, b: int) -> list[tuple[int, int]]:
        """Make ``[a, b)`` live; return the sub-ranges that were not live before."""
        i = bisect_left(self.hi, a)          # first range ending at or after a
        j = bisect_right(self.lo, b)         # first range starting after b
        new, cur = [], a
        for k in range(i, j):
            if self.lo[k] > cur:
                new.append((cur, min(self.lo[k], b)))
            cur = max(cur, self.hi[k])
        if cur < b:
            new.append((cur, b))
        lo = min(a, self.lo[i]) if i < j else a
        hi = max(b, self.hi[j - 1]) if i < j else b
        self.lo[i:j] = [lo]
        self.hi[i:j] = [hi]
        return new

    def clear(self) -> None:
        self.lo.clear()
        self.hi.clear()

    def covers(self, a: int, b: int) -> bool:
        """Whether every word of ``[a, b)`` is live."""
        i = bisect_right(self.lo, a) - 1     # the range starting at or before a
        return i >= 0 and self.hi[i] >= b

    def state(self) -> tuple:
        return tuple(self.lo), tuple(self.hi)


def _int(value, where: str, key: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise TraceError(f"{where}: {key}: {shown(value)} — {key} must be an integer in "
                         f"[{lo}, {hi}]")
    return value


def _parse_steps(raw, where: str, cfg, live: dict, budget: int) -> list[Step]:
    """The steps of ``raw`` with repeats expanded; at most ``budget`` of them.

    A ``repeat`` body is validated twice, from the live words before it and from those after
    one pass: a pass only adds writes to the live words or releases a class and rewrites it, so
    the live words after the first pass are those after every later pass, and the second
    validation stands for all the others. The body is then copied, never re-parsed, and the
    count is checked before anything is copied: a million repeats of a million repeats of
    nothing costs nothing.
    """
    if not isinstance(raw, list):
        raise TraceError(f"{where}: steps must be a list of steps, got {type(raw).__name__}")
    out: list[Step] = []
    for n, step in enumerate(raw):
        here = f"{where}[{n}]"
        op = step.get("op") if isinstance(step, dict) else None
        if op not in OPS:
            if not isinstance(step, dict):
                raise TraceError(f"{here}: a step must be a mapping with op: "
                                 f"{', '.join(OPS)}; got {shown(step)}")
            raise TraceError(f"{here}: op: {shown(op)} — op must be one of {', '.join(OPS)}")
        try:
            keys = ["op", *sorted(_KEYS[op])]
            check_keys(step, f"{here} (op {op})", keys, keys)
        except InputError as exc:
            raise TraceError(str(exc)) from None
        if op == "repeat":
            times = _int(step["times"], here, "times", 0, MAX_STEPS)
            if times == 0:
                continue
            before = {cls: ranges.state() for cls, ranges in live.items()}
            body = _parse_steps(step["steps"], f"{here}.steps", cfg, live, budget - len(out))
            if times > 1 and before != {cls: ranges.state() for cls, ranges in live.items()}:
                _parse_steps(step["steps"], f"{here}.steps", cfg, live, budget - len(out))
            if len(out) + len(body) * times > budget:
                raise TraceError(f"{here}: {times} x {len(body)} steps; a trace may have at "
                                 f"most {MAX_STEPS:,} steps once repeats are expanded")
            out.extend(body * times)
            continue
        if op == "idle":
            us = step["us"]
            if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 <= us <= 1e7:
                raise TraceError(f"{here}: us: {shown(us)} — us must be a number in [0, 1e7]")
            out.append(Step("idle", us=float(us)))
        else:
            cls = step["class"]
            if cls not in CLASSES:
                raise TraceError(f"{here}: class: {shown(cls)} — class must be kv or qo")
            if op == "release":
                live[cls].clear()
                out.append(Step("release", cls))
            else:
                out.append(_access(op, cls, step, here, cfg, live))
        if len(out) > budget:
            raise TraceError(f"{where}: a trace may have at most {MAX_STEPS:,} steps once "
                             f"repeats are expanded")
    return out


def _access(op: str, cls: str, step: dict, here: str, cfg, live: dict) -> Step:
    size = cfg.kv_words if cls == "kv" else cfg.qo_words
    if size == 0:
        raise TraceError(f"{here}: the config has no {cls} words (qo_words: 0)")
    addr = _int(step["addr"], here, "addr", 0, size - 1)
    words = _int(step["words"], here, "words", 1, size - addr)
    if op == "read" and not live[cls].covers(addr, addr + words):
        raise TraceError(f"{here}: reads {cls} words {addr}..{addr + words - 1}, but not "
                         f"all of them have been written since the last release")
    if op == "write":
        live[cls].add(addr, addr + words)
    return Step(op, cls, addr, words)


def parse_trace(raw, source: str, cfg) -> Trace:
    """Validate a trace mapping (as read from YAML) against a SHIELD config."""
    try:
        check_keys(raw, source, ["steps", "seed"], ["steps"], what="a mapping with 'steps'")
    except InputError as exc:
        raise TraceError(str(exc)) from None
    seed = _int(raw.get("seed", 0), source, "seed", 0, 2**32 - 1)
    steps = _parse_steps(raw["steps"], f"{source}: steps", cfg, {c: LiveRanges() for c in CLASSES},
                         MAX_STEPS)
    return Trace(tuple(steps), seed)


def load_trace(path, cfg) -> Trace:
    """Read and validate a trace file (:mod:`memwall.inputs`: bounded UTF-8 YAML)."""
    try:
        raw = load_yaml(path, "trace file")
    except InputError as exc:
        raise TraceError(str(exc)) from None
    return parse_trace(raw, f"trace file {path}", cfg)
