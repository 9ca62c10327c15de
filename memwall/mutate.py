"""Mutation score of each family's regression (``memwall mutate <config>``).

How strong is a regression? Break the hardware on purpose and count how often it notices.

1. **Modules.** The config's design (``memwall gen``) gives its unique modules. A module is
   known by its *digest*: the SHA-1 of its Verilog with its own name blanked, so the same
   hardware is recognised in a unit test's design (where it may be the top, named otherwise).
2. **Coverage.** The family's regression (:attr:`memwall.family.Family.regression_tests`) runs
   once with every simulation recording the digests of the modules it contains
   (:data:`COVERAGE_ENV`) and pytest its durations: a module's tests are those that simulate
   it, the most focused first (the fewest modules in the test's design, then the fastest: a
   unit's own test drives its ports harder than a core program does). A module no test
   simulates is reported as such (every mutant survives).
   A mutant runs the first of them up to a budget of measured test time
   (:data:`TEST_BUDGET_S`, at least one test): a slow test of a large config (the dplena512
   smoke run) would otherwise cost every survivor minutes. Skipping it can only leave a
   mutant alive that it would have killed, so the score is a lower bound.
3. **Mutants.** Yosys' ``mutate -list N -seed S`` samples mutations of the module (every kind
   Yosys offers: ``inv``, ``const0``, ``const1``, ``cnot0``, ``cnot1`` of a cell port's bit);
   each is applied to the design and the module written back as Verilog. The unmutated
   module, written the same way, is the *control*: its tests must pass, or the module's
   results are void (``error``).
4. **Runs.** Each mutant runs the module's tests one at a time (a fixed cocotb seed) with the
   mutant in place of the module (:data:`MUTANT_ENV`, read by the simulation runner), each
   bounded to a multiple of its measured time: a failing test or a timeout kills it. Jobs go
   through the sweep runner (:mod:`memwall.sweep`): local processes or Ray.
5. **Survivors.** Each survivor is checked for equivalence with the original (flattened, from
   the same initial state, inputs free, stream payloads compared while valid): no output
   difference in a bounded run from reset, and signal correspondence proved by induction,
   every pair also equal through the induction's window from reset
   (:func:`check_equivalence`); if that fails,
   again inside the module's parents, and for large designs with submodules cut out. Equivalent
   mutants leave the denominator; ``score = killed / (mutants - equivalent)``. A survivor's
   reason is its recorded note (:data:`NOTES`) or, if none, what the equivalence check found.

The report is ``reports/mutation.json`` (one object per module: ``module``, ``family``,
``mutants``, ``killed``, ``equivalent``, ``surviving``, ``score`` and the details) and
``reports/mutation.md``; a run replaces the entries of its config and keeps the others.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from memwall import paths
from memwall.equivalence import (
    EQUIVALENCE_DEPTH,
    EQUIVALENCE_MAX_LINES,
    INDUCTION_SEQ,
    MAX_CONTEXTS,
    READ_DESIGN,
    check_equivalence,
    run_yosys,
    with_private_submodules,
)
from memwall.files import write_text_atomic
from memwall.mutant_splice import applied_path, design_verilog, module_digest
from memwall.mutation_record import RECORD_ROOT, restore_folder, restore_mutants, save_record
from memwall.sweep import run_bounded
from memwall.verif.common.runner import COVERAGE_ENV, MUTANT_ENV

__all__ = ["design_verilog", "module_digest", "mutate", "render_markdown", "write_reports",
           "MUTATION_ROOT", "REPORT_JSON", "REPORT_MD", "NOTES", "MUTANT_ENV", "COVERAGE_ENV",
           "SEED", "TIMEOUT_FACTOR"]

REPO_ROOT = paths.REPO
MUTATION_ROOT = paths.BUILD / "mutate"
REPORT_JSON = paths.REPORTS / "mutation.json"
REPORT_MD = paths.REPORTS / "mutation.md"
#: Reasons for known survivors: ``{module: {mutation: one-line reason}}``.
NOTES = paths.layer_folder("verif") / "common" / "mutation_notes.yaml"
#: Yosys' sampling seed and the cocotb seed of every run (reproducible scores).
SEED = 1
#: Each test of a mutant may take this many times its measured time, plus the slack (a hang
#: is a kill).
TIMEOUT_FACTOR, TIMEOUT_SLACK_S = 3, 30
#: Measured seconds of tests a mutant runs (in coverage order, at least one). dplena_core's
#: tenth test (every Vector SRAM lane read back), the one that kills a prefetch-count mutant,
#: measured 16 s after nine measuring about 80 s in one coverage pass, and 33 s after 129 s
#: in a busier one: budgets of 90 s and then 120 s left it out. The fused sampling step (84 s)
#: after it still falls outside.
TEST_BUDGET_S = 240
#: Bumped when the coverage's layout or the order of a module's tests changes.
COVERAGE_FORMAT = 2

# --- the config's modules and the regression's coverage ----------------------------------------

@dataclass(frozen=True)
class Target:
    module: str
    digest: str
    family: str


def _design(config: str):
    from memwall.config import load_config
    from memwall.family import family
    from memwall.hdl.common.netlist import Design

    cfg = load_config(config)
    fam = family(cfg.unit_name)
    top, component = fam.build_top(cfg)
    design = Design()
    design.add_top(component, top)
    return fam, top, design


_MODULE_NAME = re.compile(r"^memwall(?:\.\w+)+$")


def _module_files(name: str) -> list[Path]:
    """The repository's files that importing ``name`` runs: the module and its packages'
    ``__init__`` files."""
    files: list[Path] = []
    parts = name.split(".")
    if parts[0] != "memwall":      # a library: not ours, and finding it would import it
        return files
    for depth in range(1, len(parts) + 1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:depth]))
        except (ImportError, ValueError, AttributeError):
            break
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            break
        path = Path(spec.origin).resolve()
        if REPO_ROOT in path.parents and not path.relative_to(REPO_ROOT).parts[0].startswith("."):
            files.append(path)
    return files


@functools.cache
def _imports(path: Path) -> tuple[Path, ...]:
    """The repository's files that ``path`` imports directly: its import statements at any
    depth (function-level ones too) and module names in strings (a cocotb testbench is named,
    not imported)."""
    found: list[Path] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += _module_files(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:      # relative: resolved by path
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                stem = base.joinpath(*(node.module or "").split(".")) if node.module else base
                names = [stem] if node.module else []
                names += [stem / alias.name for alias in node.names]
                found += [f for n in names for f in (n.with_suffix(".py"), n / "__init__.py")
                          if f.is_file()]
            elif node.module:
                found += _module_files(node.module)
                for alias in node.names:
                    found += _module_files(f"{node.module}.{alias.name}")
                # A test's sibling module (pytest puts the tests' folder on sys.path).
                sibling = path.parent / f"{node.module.replace('.', '/')}.py"
                found += [sibling] if sibling.is_file() else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _MODULE_NAME.match(node.value):
            found += _module_files(node.value)
    return tuple(sorted(set(found)))


def _test_sources(tests) -> set[Path]:
    """What the outcome of ``tests`` depends on: their files, ``tests/conftest.py`` and every
    repository file they import, at any depth; and, as configs reach their family's hardware
    through the plugin registry's dynamic imports, every ``hdl/`` file and every family's
    declaration. A file added or changed elsewhere (a new test or testbench, another family's
    model, this module) leaves the kept outcomes of ``tests`` as they were."""
    todo = [REPO_ROOT / t.split("::")[0] for t in tests]
    todo += [paths.TESTS / "conftest.py", *paths.layer_folder("hdl").rglob("*.py")]
    families = paths.source_of("memwall.families").parent
    seen = {path.resolve() for path in families.glob("*/__init__.py")}
    while todo:
        path = todo.pop().resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        todo += _imports(path)
    return seen


def _tests_digest(tests) -> str:
    h = hashlib.sha1()
    for path in sorted(_test_sources(tests)):
        h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


_DURATION = re.compile(r"^\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)", re.M)


def coverage(tests: list[str], folder: Path, workers: int) -> dict:
    """Run ``tests`` once, recording which modules each simulates and how long it takes:
    ``{"tests": {test: seconds}, "modules": {digest: [test, ...]}}``; cached in ``folder``
    while the tests, the hardware and the testbenches are unchanged."""
    cache = folder / "coverage.json"
    key = f"{COVERAGE_FORMAT}:{_tests_digest(tests)}"
    if cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("key") == key:
            return cached
    records = folder / "coverage"
    shutil.rmtree(records, ignore_errors=True)
    records.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
           "--durations=0", "--durations-min=0", *(["-n", str(workers)] if workers > 1 else []),
           *tests]
    env = _clean_env(**{COVERAGE_ENV: str(records)})
    returncode, stdout = run_bounded(cmd, cwd=REPO_ROOT, env=env)
    if returncode != 0:
        raise RuntimeError(f"the regression fails without mutants ({' '.join(tests)}):\n"
                           + "\n".join(stdout.splitlines()[-30:]))
    seconds: dict[str, float] = {}
    for value, test in _DURATION.findall(stdout):
        seconds[test] = seconds.get(test, 0.0) + float(value)
    modules: dict[str, set] = {}
    sims: dict[str, set] = {}
    simulated: dict[str, set] = {}
    for record in records.glob("*.jsonl"):
        for line in record.read_text().splitlines():
            entry = json.loads(line)
            sims.setdefault(entry["test"], set()).add(entry["sim"])
            simulated.setdefault(entry["test"], set()).update(entry["modules"])
            for digest in entry["modules"]:
                modules.setdefault(digest, set()).add(entry["test"])
    verilated = {test for test, used in sims.items() if used == {"verilator"}}
    # A mutant runs the Icarus tests of its module, the most focused first: a test of the unit
    # (few modules) checks every field of its ports, where a whole-core program reaches only
    # what the core uses. The Verilator runs (one per unit) repeat an Icarus test's testbench on
    # the other simulator, and each mutant's build would be minutes of C++; they count only for
    # a module no Icarus test simulates.
    def chosen(tests: set) -> list:
        icarus = tests - verilated
        return sorted(icarus or tests,
                      key=lambda t: (len(simulated[t]), seconds.get(t, 0.0), t))

    result = {"key": key, "tests": seconds, "verilator": sorted(verilated),
              "modules": {d: chosen(t) for d, t in modules.items()}}
    write_text_atomic(cache, json.dumps(result, indent=1))
    return result


# --- mutants -----------------------------------------------------------------------------------

def make_mutants(folder: Path, module: str, count: int, seed: int) -> list[dict]:
    """Sample ``count`` mutations of ``module`` in ``folder/design.v`` and write each as
    Verilog (``folder/<module>/mutant_<i>.v``; ``control.v`` unmutated). Returns
    ``[{"id", "mutation", "mode", "file"}]``."""
    out = folder / module
    made = out / "mutants.json"
    request = {"design": hashlib.sha1((folder / "design.v").read_bytes()).hexdigest(),
               "count": count, "seed": seed}
    if made.exists():          # the same design and sample: kept (with the runs' results)
        kept = json.loads(made.read_text())
        if kept["request"] == request and all(Path(m["file"]).exists()
                                              for m in kept["mutants"]):
            return kept["mutants"]
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copy(folder / "design.v", out / "design.v")
    run_yosys(f"{READ_DESIGN}mutate -list {count} -seed {seed} -o mutations.txt "
              f"{with_private_submodules(module)}\n", out, "list")
    mutations = [line.strip() for line in (out / "mutations.txt").read_text().splitlines()
                 if line.startswith("mutate ")]
    mutants = write_mutants(out, module, mutations)
    write_text_atomic(made, json.dumps({"request": request, "mutants": mutants}, indent=1))
    return mutants


def write_mutants(out: Path, module: str, mutations: list[str]) -> list[dict]:
    """Each of ``mutations`` applied to ``out/design.v`` and ``module`` written back as Verilog
    (``out/mutant_<i>.v``; ``out/control.v`` unmutated, written the same way). Returns
    ``[{"id", "mutation", "mode", "file"}]``."""
    write = f"select {with_private_submodules(module)}\nwrite_verilog -noattr -selected {{}}\n" \
            "select -clear\n"
    script = [READ_DESIGN, "design -save original\n", write.format("control.v")]
    for i, mutation in enumerate(mutations):
        script += ["design -load original\n", mutation + "\n", write.format(f"mutant_{i}.v")]
    run_yosys("".join(script), out, "write")
    return [{"id": i, "mutation": m, "mode": m.split()[2], "file": str(out / f"mutant_{i}.v")}
            for i, m in enumerate(mutations)]


def unchanged(folder: Path, survivors: list[tuple[Target, dict]]) -> set[str]:
    """The ``<module>#<id>`` of the ``survivors`` whose Verilog is the unmutated module's
    (``folder/<module>/control.v``): a mutation that ties a bit to the constant it already
    holds writes the module back unchanged. Equivalent with no check (which, on the
    sequencer, runs past its bounds)."""
    control = {t.module: _mutant_text(folder / t.module / "control.v")
               for t in {t for t, _ in survivors}}
    return {f"{t.module}#{m['id']}" for t, m in survivors
            if _mutant_text(Path(m["file"])) == control[t.module]}


def _mutant_text(path: Path) -> str:
    from memwall.hdl.common.netlist import _local_auto_names

    return _local_auto_names(path.read_text())


def _clean_env(**extra) -> dict:
    """The environment of a nested pytest: none of the calling test's or worker's variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COCOTB_")) and k not in (MUTANT_ENV, COVERAGE_ENV)}
    return {**env, "COCOTB_RANDOM_SEED": str(SEED), **extra}


def run_mutant(replace: list[dict], tests: dict[str, float]) -> dict:
    """A worker's job: one mutant (``replace``: its ``digest``, ``module`` and Verilog
    ``file``) against ``tests`` (test id -> time bound in seconds), one test at a time in
    order until one kills it. ``status``: ``killed`` (a test failed; ``by`` names it),
    ``timeout`` (a kill: a test ran past its bound), ``survived``, or ``error`` (pytest itself
    failed). Each test's outcome is kept beside the mutant's file, keyed by the mutant's text,
    the test, the seed and the sources, so a resumed run, or one with tests added, only runs
    what it has not seen."""
    replace = [{**r, "verilog": _mutant_text(Path(r["file"]))} for r in replace]
    texts = [(r["module"], r["verilog"]) for r in replace]
    cache = Path(replace[0]["file"]).with_suffix(".result.json")
    kept = json.loads(cache.read_text()) if cache.exists() else {}
    kept = kept if "runs" in kept else {"runs": {}}
    keys = {test: hashlib.sha1(json.dumps([texts, test, SEED, _tests_digest([test])]).encode()
                               ).hexdigest() for test in tests}
    # A kept kill by any of the tests stands (a test added ahead of it need not run).
    for test in tests:
        run = kept["runs"].get(test)
        if run and run["key"] == keys[test] and run["status"] in ("killed", "timeout"):
            return {"status": run["status"], "by": test, "seconds": run["seconds"]}
    seconds = 0.0
    for test, bound in tests.items():
        key = keys[test]
        run = kept["runs"].get(test)
        if run is None or run["key"] != key:
            run = {"key": key, **_run_pytest(replace, [test], bound)}
            if run["status"] == "error":
                return run
            kept["runs"][test] = run
            write_text_atomic(cache, json.dumps(kept))
        seconds += run["seconds"]
        if run["status"] != "survived":
            return {"status": run["status"], "by": test, "seconds": round(seconds, 1)}
    return {"status": "survived", "seconds": round(seconds, 1)}


def _run_pytest(replace: list[dict], tests: list[str], timeout_s: float,
                workers: int = 1) -> dict:
    """``tests`` with the modules of ``replace`` in place (``run_mutant``'s statuses)."""
    scratch = Path(tempfile.mkdtemp(prefix="memwall-mutant-"))
    try:
        spec_file = scratch / "mutant.json"
        spec_file.write_text(json.dumps({"replace": replace}))
        env = _clean_env(**{MUTANT_ENV: str(spec_file), "MEMWALL_SIM_BUILD": str(scratch / "sim")})
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               *(["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]),
               "-m", "not slow", *tests]
        started = time.perf_counter()
        rc, stdout = run_bounded(cmd, cwd=REPO_ROOT, env=env, timeout_s=timeout_s)
        seconds = round(time.perf_counter() - started, 1)
        if rc is None:
            return {"status": "timeout", "seconds": seconds}
        if rc == 0:
            applied = set(applied_path(spec_file).read_text().split()) \
                if applied_path(spec_file).exists() else set()
            missing = sorted({r["module"] for r in replace if r["digest"] not in applied})
            if missing:     # a pass that ran no mutant is no survival
                return {"status": "error", "seconds": seconds,
                        "output": f"{', '.join(missing)}: in none of the designs of "
                                  f"{' '.join(tests)} (has the hardware changed since the "
                                  "run began?)"}
            return {"status": "survived", "seconds": seconds}
        failed = re.findall(r"^FAILED (\S+)", stdout, re.M)
        if rc == 1 and failed:
            return {"status": "killed", "by": failed[0], "seconds": seconds}
        return {"status": "error", "seconds": seconds,
                "output": "\n".join(stdout.splitlines()[-15:])}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- the run and its report --------------------------------------------------------------------

#: Mutants per module unless ``--max`` says otherwise.
DEFAULT_COUNT = 20


def _reason(module: str, mutation: str, equivalence: dict, notes: dict) -> str:
    noted = notes.get(module, {}).get(mutation)
    if noted:
        return noted
    inside = "".join(f"; inside {parent}: {status}"
                     for parent, status in equivalence.get("in", {}).items())
    if equivalence.get("status") == "different":
        return (f"not equivalent: the outputs differ {equivalence.get('cycles')} cycles after "
                f"reset{inside}, and no test drives that difference to a checked output")
    if equivalence.get("error"):
        return f"equivalence unknown: {equivalence['error']}{inside}"
    bound = equivalence.get("bounded")
    return ("equivalence unknown: " + (f"no difference within {bound} cycles of reset, "
                                       if bound else "") + f"not proved equivalent{inside}")


def _entry(target: Target, config: str, tests: list[str], mutants: list[dict], runs: dict,
           equivalence: dict, notes: dict) -> dict:
    entry = {"module": target.module, "family": target.family, "config": config,
             "mutants": len(mutants), "killed": 0, "equivalent": 0, "surviving": 0,
             "score": None, "timeouts": 0, "tests": len(tests), "status": "ok",
             "by_mode": {}, "survivors": [], "equivalents": []}
    if not tests:
        entry["status"] = "uncovered"
    for mutant in mutants:
        run = runs.get(mutant["id"], {"status": "survived"})
        mode = entry["by_mode"].setdefault(mutant["mode"], {"mutants": 0, "killed": 0})
        mode["mutants"] += 1
        if run["status"] in ("killed", "timeout"):
            entry["killed"] += 1
            entry["timeouts"] += run["status"] == "timeout"
            mode["killed"] += 1
        elif run["status"] == "error":
            raise RuntimeError(f"{target.module} mutant {mutant['id']}: pytest failed to run:\n"
                               f"{run.get('output')}")
        elif equivalence.get(mutant["id"], {}).get("status") == "equivalent":
            entry["equivalent"] += 1
            found = equivalence[mutant["id"]]
            entry["equivalents"].append({"mutation": mutant["mutation"],
                                         **({"inside": found["in"]} if "in" in found else {})})
        else:
            entry["surviving"] += 1
            found = equivalence.get(mutant["id"], {})
            reason = (_reason(target.module, mutant["mutation"], found, notes) if tests else
                      "no test of the family's regression simulates this module")
            entry["survivors"].append({"mutation": mutant["mutation"], "reason": reason,
                                       "equivalence": found.get("status")})
    counted = entry["mutants"] - entry["equivalent"]
    entry["score"] = round(entry["killed"] / counted, 4) if counted else None
    return entry


def _notes() -> dict:
    import yaml

    return yaml.safe_load(NOTES.read_text()) or {} if NOTES.exists() else {}


def mutate(config: str, modules: list[str] | None = None, count: int = DEFAULT_COUNT,
           workers: int | None = None, ray: str | None = None, progress=None,
           write_report: bool = True, root: Path = MUTATION_ROOT,
           recheck_unknown: bool = False, record_root: Path = RECORD_ROOT) -> list[dict]:
    """Mutation-score ``config``'s modules (all, or ``modules``) with ``count`` mutants each,
    working in ``root/<config>``, each mutant running its module's most focused tests within
    :data:`TEST_BUDGET_S`; returns one entry per module and, with ``write_report``, merges them
    into the report. Kept equivalence results stand, ``unknown`` ones too unless
    ``recheck_unknown``. What the run learns is saved in ``record_root``
    (:mod:`memwall.mutation_record`) and restored from it first."""
    from memwall.command import UsageError
    from memwall.config import load_config
    from memwall.sweep import Job, available_cpus, backend, run_sweep

    chosen_backend = backend(ray, workers)   # --ray checked (installed, reachable) first
    fam, _top, design = _design(config)
    # A .yaml path works in the folder and the records under its config's name (its stem).
    config = load_config(config).name
    known = design.module_names
    unknown = sorted(set(modules or ()) - set(known))
    if unknown:
        raise UsageError(f"--module {' '.join(unknown)}: not a module of {config}; its "
                         f"modules: {', '.join(known)}")
    if not fam.regression_tests:
        raise UsageError(f"family {fam.name!r} declares no regression_tests to mutate against")
    folder = Path(root) / config
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "design.v").write_text(design.verilog())
    restore_folder(folder, config, record_root)
    made: dict[str, list[dict]] = {}
    try:
        cover = coverage(list(fam.regression_tests), folder, workers or available_cpus())
        targets = [Target(name, module_digest(design.module_text(name), name), fam.name)
                   for name in known if not modules or name in modules]
        covering = {t.module: cover["modules"].get(t.digest, []) for t in targets}
        tests = {m: _within_budget(found, cover["tests"], TEST_BUDGET_S)
                 for m, found in covering.items()}
        with chosen_backend as runner:
            made = run_sweep([Job(t.module, make_mutants, (folder, t.module, count, SEED))
                              for t in targets], runner, progress=progress,
                             description="mutants")
            for t in targets:
                restore_mutants(folder, config, t.module, made[t.module], record_root)
            runs, checks = _runs_and_checks(folder, config, targets, made, tests, cover,
                                            workers, runner, progress, recheck_unknown)
    finally:     # also when stopped or failing: what it learned resumes on any clone
        save_record(folder, config, made, record_root)
    notes = _notes()
    entries = []
    for t in targets:
        mine = {m["id"]: runs[f"{t.module}#{m['id']}"] for m in made[t.module]
                if f"{t.module}#{m['id']}" in runs}
        equivalence = {m["id"]: checks[f"{t.module}#{m['id']}"] for m in made[t.module]
                       if f"{t.module}#{m['id']}" in checks}
        entries.append(_entry(t, config, tests[t.module], made[t.module], mine, equivalence,
                              notes) | {"covering": len(covering[t.module])})
    if write_report:
        write_reports(entries, count)
    return entries


def _runs_and_checks(folder: Path, config: str, targets: list[Target], made: dict, tests: dict,
                     cover: dict, workers: int | None, runner, progress,
                     recheck_unknown: bool) -> tuple[dict, dict]:
    """The control, every mutant's run and every survivor's equivalence check (``run_sweep``'s
    results, by ``<module>#<id>``)."""
    from memwall.sweep import Job, available_cpus, run_sweep

    def spec(target, file):
        return [{"digest": target.digest, "module": target.module, "file": file}]

    covered = [t for t in targets if tests[t.module]]
    control = _control(folder, covered, tests, cover, workers or available_cpus())
    if control["status"] != "survived":
        raise RuntimeError(f"{config}: the design with its modules written back by Yosys, "
                           f"unmutated, fails its regression ({control['status']}: "
                           f"{control.get('by') or control.get('output')}); no score")

    def bounds(t: Target) -> dict[str, float]:
        return {x: TIMEOUT_FACTOR * cover["tests"].get(x, 0) + TIMEOUT_SLACK_S
                for x in tests[t.module]}

    jobs = [Job(f"{t.module}#{m['id']}", run_mutant, (spec(t, m["file"]), bounds(t)))
            for t in covered for m in made[t.module]]
    runs = run_sweep(jobs, runner, progress=progress, description="mutant runs")
    survivors = [(t, m) for t in covered for m in made[t.module]
                 if runs[f"{t.module}#{m['id']}"]["status"] == "survived"]
    same = unchanged(folder, survivors)
    checks = run_sweep([Job(f"{t.module}#{m['id']}", check_equivalence,
                            (folder, t.module, m["mutation"], str(m["id"]),
                             recheck_unknown))
                        for t, m in survivors if f"{t.module}#{m['id']}" not in same],
                       runner, progress=progress, description="equivalence")
    checks |= {name: {"status": "equivalent", "how": "no change: its Verilog is the "
                      "unmutated module's (a bit tied to the constant it holds)"}
               for name in same}
    return runs, checks


def _within_budget(tests: list[str], seconds: dict, budget_s: float) -> list[str]:
    """The first of ``tests`` (in :func:`coverage`'s order) whose measured times add up to
    ``budget_s``; at least one."""
    chosen, spent = [], 0.0
    for test in tests:
        spent += seconds.get(test, 0.0)
        if chosen and spent > budget_s:
            break
        chosen.append(test)
    return chosen


def _control(folder: Path, covered: list[Target], tests: dict, cover: dict,
             workers: int) -> dict:
    """The control: every covered module written back unmutated, all their tests run once
    (``_run_pytest``'s result). A passing control of the same texts of a superset of the
    modules, with a superset of the tests, is kept in ``control.json`` and stands for it."""
    texts = {t.digest: hashlib.sha1(_mutant_text(folder / t.module / "control.v").encode())
             .hexdigest() for t in covered}
    union = sorted({x for t in covered for x in tests[t.module]})
    kept_file = folder / "control.json"
    if kept_file.exists():
        kept = json.loads(kept_file.read_text())
        if kept["seed"] == SEED and kept.get("sources") == _tests_digest(union) \
                and texts.items() <= kept["modules"].items() and set(union) <= set(kept["tests"]):
            return kept["result"]
    result = _run_pytest([{"digest": t.digest, "module": t.module,
                           "verilog": _mutant_text(folder / t.module / "control.v")}
                          for t in covered], union, 3 * sum(cover["tests"].values()) + 600,
                         workers)
    if result["status"] == "survived":
        write_text_atomic(kept_file, json.dumps({"modules": texts, "tests": union, "seed": SEED,
                                                 "sources": _tests_digest(union),
                                                 "result": result}, indent=1))
    return result


def _score(killed: int, counted: int) -> str:
    return f"{100 * killed / counted:.1f} %" if counted else "—"


def render_markdown(entries: list[dict]) -> str:
    """``reports/mutation.md`` from the report's entries."""
    lines = ["# Mutation score of each module's regression", "",
             "Generated by `make mutate` (`memwall mutate <config>` for each config below); "
             "see `memwall/mutate.py` for the method. Each module's mutants are Yosys `mutate` "
             f"samples (seed {SEED}) of its generated Verilog; a mutant is killed when a test "
             "of the family's regression that simulates the module fails (the most focused "
             f"such tests, up to {TEST_BUDGET_S} s of their measured time, so the score is a lower "
             f"bound) or runs past {TIMEOUT_FACTOR}x its measured time + {TIMEOUT_SLACK_S} s. "
             "Surviving mutants were checked for equivalence with the original: equivalent "
             "when the mutant's module (with its private submodules) is the original's once "
             "Yosys has optimised both (the same Verilog text, or, the module alone, every "
             "same-named signal proved equal from equal ones in one cycle); else when a "
             "SymbiYosys BMC of the two modules' outputs finds no difference in the "
             f"{EQUIVALENCE_DEPTH} cycles from reset (or none before its time bound) and "
             "signal correspondence is proved by induction (Yosys `equiv_induct`: signals "
             f"paired by name, equal for {INDUCTION_SEQ} cycles, stay equal), with every "
             f"pair equal in the first {INDUCTION_SEQ} cycles from reset (a second BMC, "
             "each pair an assertion); a stream's payload is compared only "
             "while its valid is 1 (no reader may look at it otherwise). A mutant not proved "
             "equivalent at its "
             "module's ports (a difference found, or none found and the proof failing) is "
             "checked again inside the module's parents (when it has at most "
             f"{MAX_CONTEXTS}), and equivalent in all of them is equivalent. Past "
             f"{EQUIVALENCE_MAX_LINES} lines of flattened Verilog, the largest submodules "
             "without the mutant are cut out (their outputs free and shared by the two "
             "designs, except those a submodule drives with a constant, which keep it: "
             "equivalent then is equivalent, a difference decides nothing); modules "
             "still past it are not checked. "
             "Equivalent mutants leave the denominator: score = killed / (mutants − "
             "equivalent). A survivor that is not proved equivalent counts as surviving.", ""]
    for family in sorted({e["family"] for e in entries}):
        mine = [e for e in entries if e["family"] == family]
        killed = sum(e["killed"] for e in mine)
        counted = sum(e["mutants"] - e["equivalent"] for e in mine)
        lines += [f"## {family}: {_score(killed, counted)} "
                  f"({killed} of {counted} non-equivalent mutants killed)", "",
                  "| module | config | mutants | killed | equivalent | surviving | score | "
                  "tests run (of those simulating it) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
        for e in mine:
            score = f"{100 * e['score']:.1f} %" if e["score"] is not None else "—"
            if e["status"] != "ok":
                score += f" ({e['status']})"
            lines.append(f"| `{e['module']}` | {e['config']} | {e['mutants']} | {e['killed']} "
                         f"| {e['equivalent']} | {e['surviving']} | {score} | {e['tests']} "
                         f"({e['covering']}) |")
        lines.append("")
        survivors = [(e, s) for e in mine for s in e["survivors"]]
        if survivors:
            lines += ["Surviving mutants:", ""]
            lines += [f"- `{e['module']}`: `{s['mutation']}`. {s['reason']}."
                      for e, s in survivors]
            lines.append("")
        errors = [e for e in mine if e["status"] == "error"]
        lines += [f"- `{e['module']}`: {e['error']}" for e in errors]
    return "\n".join(lines).rstrip() + "\n"


def write_reports(entries: list[dict], count: int) -> None:
    """Merge ``entries`` into ``reports/mutation.json`` (replacing the same config's modules)
    and rewrite ``reports/mutation.md``; the files are replaced whole, never half-written."""
    old = json.loads(REPORT_JSON.read_text()) if REPORT_JSON.exists() else []
    replaced = {(e["config"], e["module"]) for e in entries}
    merged = [e for e in old if (e.get("config"), e["module"]) not in replaced]
    merged += [{**e, "sampled": count} for e in entries]
    merged.sort(key=lambda e: (e["family"], e["config"]))
    write_text_atomic(REPORT_JSON, json.dumps(merged, indent=1) + "\n")
    write_text_atomic(REPORT_MD, render_markdown(merged))
