"""Unit families as plugins: every discovered family describes itself completely, its named
configs generate, and a family kept outside the tree (``tests/plugin_family/tinyacc``, found through
``MEMWALL_FAMILY_PATH``) appears in every shared verb with no shared module naming it."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memwall import paths
from memwall.config import UnitConfig, available_configs, load_config
from memwall.family import COMMAND_VERBS, Family, PowerWorkload, families
from memwall.flows.errors import PdkError
from memwall.flows.pdk import find_pdk
from memwall.gen import generate

TESTS = paths.TESTS
TINY_FAMILIES = TESTS / "plugin_family"
TINY_CONFIGS = TINY_FAMILIES / "configs"

FAMILIES = families()
NAMED = [(name, load_config(name)) for name in available_configs()]


def test_the_known_families_are_discovered():
    assert {"dplena", "shield"} <= set(FAMILIES)
    assert "tinyacc" not in FAMILIES     # test-only: not shipped


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_provides_every_part(name):
    fam = FAMILIES[name]
    assert isinstance(fam, Family) and fam.name == name and fam.summary
    cls = fam.config_class
    assert dataclasses.is_dataclass(cls) and issubclass(cls, UnitConfig)
    assert cls.__dataclass_params__.frozen and cls.unit_name == name
    assert callable(fam.build_top) and callable(fam.power_workloads)
    assert fam.golden and all(callable(f) for f in fam.golden.values())
    assert fam.commands and set(fam.commands) <= set(COMMAND_VERBS)
    for command in fam.commands.values():
        assert command.help and callable(command.add_arguments) and callable(command.run)
    assert fam.report_groups and fam.report_matrix and fam.regression_configs
    named = {n for n, cfg in NAMED if cfg.unit_name == name}
    for config in [c for cs in fam.report_matrix.values() for c in cs]:
        assert config in named, f"{name}: report matrix names {config}, not a {name} config"
    for config in (*fam.regression_configs, *fam.bench_configs):
        assert config in named, f"{name}: {config} is not a {name} config"
        cfg = load_config(config)
        workloads = fam.power_workloads(cfg)
        assert all(isinstance(w, PowerWorkload) for w in workloads)
    # The regression configs are small enough for a power simulation: none falls back silently.
    assert all(fam.power_workloads(load_config(c)) for c in fam.regression_configs)


@pytest.mark.parametrize("name", [n for n, _ in NAMED])
def test_named_config_generates(name, tmp_path):
    cfg = load_config(name)
    out = generate(cfg, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    top, _ = FAMILIES[cfg.unit_name].build_top(cfg)
    assert manifest["top"] == top and (out / "rtl" / f"{top}.v").is_file()
    assert any(FAMILIES[cfg.unit_name].report_group(m) for m in manifest["modules"]), \
        "no module of the design falls in one of the family's report groups"


# --- a family from its own files only ---------------------------------------------------------

def _memwall(*argv: str, env_extra: dict | None = None, cwd: Path | None = None):
    env = {**os.environ, "MEMWALL_FAMILY_PATH": str(TINY_FAMILIES),
           "MEMWALL_CONFIG_DIR": str(TINY_CONFIGS), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "memwall.cli", *argv], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=900)


def test_tiny_family_in_units_configs_and_help():
    units = _memwall("units")
    assert units.returncode == 0, units.stderr
    assert "tinyacc" in units.stdout and "dplena" in units.stdout
    assert "tinyacc8" in _memwall("configs").stdout
    helped = _memwall("run", "tinyacc", "--help")
    assert helped.returncode == 0 and "--values" in helped.stdout
    assert "--trace" not in helped.stdout and "--logits-format" not in helped.stdout


def test_tiny_family_gen_golden_model(tmp_path):
    gen = _memwall("gen", "tinyacc8", "--out", str(tmp_path))
    assert gen.returncode == 0, gen.stderr
    assert (tmp_path / "tinyacc8" / "rtl" / "tiny_accumulator.v").is_file()
    golden = _memwall("golden", "tinyacc", "--config", "tinyacc8", "--values", "200,100,7")
    assert golden.returncode == 0 and json.loads(golden.stdout) == [200, 44, 51]
    model = _memwall("model", "tinyacc", "--config", "tinyacc8", "--values", "1,2")
    assert json.loads(model.stdout) == {"cycles": 2}
    bad = _memwall("golden", "tinyacc", "--config", "tinyacc8", "--values", "999")
    assert bad.returncode == 2 and "must be in [0, 255]" in bad.stderr


@pytest.mark.sim
def test_tiny_family_run(tmp_path):
    out = tmp_path / "run.json"
    run = _memwall("run", "tinyacc", "--config", "tinyacc8", "--values", "200,100,7",
                   "--out", str(out), env_extra={"MEMWALL_SIM_BUILD": str(tmp_path / "sim")})
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(out.read_text()) == {"totals": [200, 44, 51]}


@pytest.mark.sim
@pytest.mark.tool   # memwall synth and report in a subprocess
def test_tiny_family_synth_and_report(tmp_path):
    """``memwall report --run`` synthesises the family's matrix (its power workload simulated
    for activity) and writes its rows and its own section."""
    try:
        find_pdk("asap7", cache_root=tmp_path / "pdk")
    except PdkError as exc:
        pytest.skip(f"no ASAP7 beside the checkout: {exc}")
    build, reports = tmp_path / "build", tmp_path / "reports"
    run = _memwall("report", "--run", "--only", "tinyacc", "--build", str(build),
                   "--out", str(reports), "--jobs", "1",
                   env_extra={"MEMWALL_SIM_BUILD": str(tmp_path / "sim")})
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = json.loads((build / "tinyacc8" / "synth" / "asap7" / "metrics.json").read_text())
    assert metrics["unit"] == "tinyacc" and metrics["area_um2"] > 0
    assert "accumulator" in metrics["activity_source"]      # the family's power workload ran
    md = (reports / "area_power.md").read_text()
    assert "| tinyacc8 | asap7 |" in md and "## tinyacc" in md and "dplena" not in md


@pytest.mark.parametrize("body, error", [
    ("raise RuntimeError('no licence server')", "RuntimeError: no licence server"),
    ("def broken(:\n    pass\n", "SyntaxError: "),
    ("from memwall.family import NoSuchName\n", "ImportError: cannot import name 'NoSuchName'"),
    ("FAMILY = 3\n", "defines no FAMILY"),
])
def test_a_plugin_that_does_not_import_is_one_line(tmp_path, body, error):
    (tmp_path / "brokenfam").mkdir()
    (tmp_path / "brokenfam" / "__init__.py").write_text(body)
    run = _memwall("units", env_extra={"MEMWALL_FAMILY_PATH": str(tmp_path)})
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith("memwall: error: ") and error in run.stderr
    assert "brokenfam" in run.stderr


def test_a_missing_family_path_entry_is_an_error(tmp_path):
    missing = tmp_path / "nowhere"
    run = _memwall("configs", env_extra={"MEMWALL_FAMILY_PATH": str(missing)})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"MEMWALL_FAMILY_PATH: {missing} is not a folder" in run.stderr
