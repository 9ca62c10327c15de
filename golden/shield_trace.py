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

from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["TraceError", "Step", "Trace", "load_trace", "parse_trace", "CLASSES", "OPS"]

CLASSES = ("kv", "qo")
OPS = ("write", "read", "idle", "release", "repeat")
_KEYS = {"write": {"class", "addr", "words"}, "read": {"class", "addr", "words"},
         "idle": {"us"}, "release": {"class"}, "repeat": {"times", "steps"}}
MAX_STEPS = 1_000_000


class TraceError(ValueError):
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


def _int(value, where: str, key: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise TraceError(f"{where}: {key}: {value!r} — {key} must be an integer in [{lo}, {hi}]")
    return value


def _parse_steps(raw, where: str, cfg, live: dict, out: list) -> None:
    if not isinstance(raw, list):
        raise TraceError(f"{where}: steps must be a list of steps, got {type(raw).__name__}")
    for n, step in enumerate(raw):
        here = f"{where}[{n}]"
        if not isinstance(step, dict):
            raise TraceError(f"{here}: a step must be a mapping, got {step!r}")
        op = step.get("op")
        if op not in OPS:
            raise TraceError(f"{here}: op: {op!r} — op must be one of {', '.join(OPS)}")
        unknown = set(step) - _KEYS[op] - {"op"}
        missing = _KEYS[op] - set(step)
        if unknown or missing:
            raise TraceError(f"{here}: op {op} takes keys {', '.join(sorted(_KEYS[op]))}; "
                             + (f"unknown: {', '.join(map(str, sorted(unknown)))} " if unknown
                                else "")
                             + (f"missing: {', '.join(sorted(missing))}" if missing else ""))
        if op == "repeat":
            times = _int(step["times"], here, "times", 0, MAX_STEPS)
            for _ in range(times):
                _parse_steps(step["steps"], f"{here}.steps", cfg, live, out)
        elif op == "idle":
            us = step["us"]
            if isinstance(us, bool) or not isinstance(us, (int, float)) or not 0 <= us <= 1e7:
                raise TraceError(f"{here}: us: {us!r} — us must be a number in [0, 1e7]")
            out.append(Step("idle", us=float(us)))
        else:
            cls = step["class"]
            if cls not in CLASSES:
                raise TraceError(f"{here}: class: {cls!r} — class must be kv or qo")
            if op == "release":
                live[cls] = set()
                out.append(Step("release", cls))
                continue
            size = cfg.kv_words if cls == "kv" else cfg.qo_words
            if size == 0:
                raise TraceError(f"{here}: the config has no {cls} words (qo_words: 0)")
            addr = _int(step["addr"], here, "addr", 0, size - 1)
            words = _int(step["words"], here, "words", 1, size - addr)
            span = range(addr, addr + words)
            if op == "read" and not live[cls].issuperset(span):
                raise TraceError(f"{here}: reads {cls} words {addr}..{addr + words - 1}, but not "
                                 f"all of them have been written since the last release")
            if op == "write":
                live[cls].update(span)
            out.append(Step(op, cls, addr, words))
        if len(out) > MAX_STEPS:
            raise TraceError(f"{where}: more than {MAX_STEPS} steps once repeats are expanded")


def parse_trace(raw, source: str, cfg) -> Trace:
    """Validate a trace mapping (as read from YAML) against a SHIELD config."""
    if not isinstance(raw, dict):
        raise TraceError(f"{source}: expected a mapping with 'steps', got {type(raw).__name__}")
    unknown = set(raw) - {"steps", "seed"}
    if unknown:
        raise TraceError(f"{source}: unknown key(s) {', '.join(map(str, sorted(unknown)))}; "
                         f"allowed keys: steps, seed")
    if "steps" not in raw:
        raise TraceError(f"{source}: missing key 'steps'")
    seed = _int(raw.get("seed", 0), source, "seed", 0, 2**32 - 1)
    steps: list[Step] = []
    _parse_steps(raw["steps"], f"{source}: steps", cfg, {"kv": set(), "qo": set()}, steps)
    return Trace(tuple(steps), seed)


def load_trace(path, cfg) -> Trace:
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"trace file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TraceError(f"{path}: not valid YAML: {exc}") from None
    return parse_trace(raw, str(path), cfg)
