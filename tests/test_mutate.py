"""``memwall mutate``: a module is recognised by its digest wherever a test puts it, a mutant
replaces exactly that module, a few sampled mutants of a SHIELD module are killed by its
regression, and the committed reports and README section are what the generators write."""

from __future__ import annotations

import json

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from memwall.hdl.common.netlist import Design, unique_submodule

from memwall import mutate as mutate_module
from memwall import strength
from memwall.mutate import (
    COVERAGE_ENV,
    MUTANT_ENV,
    REPORT_JSON,
    REPORT_MD,
    design_verilog,
    module_digest,
    mutate,
    render_markdown,
)


class Inverter(wiring.Component):
    params = {"width": 4}

    def __init__(self):
        super().__init__({"a": In(4), "y": Out(4)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(~self.a)
        return m


class Pair(wiring.Component):
    def __init__(self):
        super().__init__({"a": In(4), "y": Out(4)})

    def elaborate(self, platform):
        m = Module()
        first, second = Inverter(), Inverter()
        unique_submodule(m, "first", first)
        unique_submodule(m, "second", second)
        mid = Signal(4)
        m.d.comb += [first.a.eq(self.a), mid.eq(first.y), second.a.eq(mid), self.y.eq(second.y)]
        return m


def _design(component, name):
    design = Design()
    design.add_top(component, name)
    return design


def test_a_module_has_one_digest_as_top_or_as_child():
    child = _design(Pair(), "pair")
    top = _design(Inverter(), "some_other_name")
    (inner,) = [n for n in child.module_names if n != "pair"]
    assert module_digest(child.module_text(inner), inner) == \
        module_digest(top.module_text("some_other_name"), "some_other_name")
    assert module_digest(child.module_text("pair"), "pair") != \
        module_digest(top.module_text("some_other_name"), "some_other_name")


def test_the_mutant_replaces_its_module_and_coverage_is_recorded(tmp_path, monkeypatch):
    top = _design(Inverter(), "inverter")
    text = top.module_text("inverter")
    mutant = text.replace("~", "")          # the inverter made a wire
    assert mutant != text
    spec = tmp_path / "mutant.json"
    spec.write_text(json.dumps({"replace": [{"digest": module_digest(text, "inverter"),
                                             "module": "inverter", "verilog": mutant}]}))
    monkeypatch.setenv(MUTANT_ENV, str(spec))
    monkeypatch.setenv(COVERAGE_ENV, str(tmp_path))
    pair = _design(Pair(), "pair")
    (inner,) = [n for n in pair.module_names if n != "pair"]
    out = design_verilog(pair, "icarus")
    assert out.count("~") == 0 and f"module {inner}(" in out and "module inverter(" not in out
    (record,) = tmp_path.glob("*.jsonl")
    entry = json.loads(record.read_text())
    assert entry["sim"] == "icarus" and module_digest(text, "inverter") in entry["modules"]


def test_sampled_mutants_of_a_shield_module_are_killed(tmp_path):
    """A few seeded mutants of SHIELD's standard-row refresh scheduler: each must be killed by
    the SHIELD regression (one worker: this test already runs beside others)."""
    (entry,) = mutate("shield_small", ["refresh_scheduler_interval45_rows16"], count=3,
                      workers=1, write_report=False, root=tmp_path)
    assert entry["status"] == "ok" and entry["tests"] > 0
    assert entry["mutants"] == 3 and entry["killed"] == 3, entry["survivors"]


def test_cli_refuses_an_unknown_module(capsys):
    from memwall.cli import main

    assert main(["mutate", "shield_small", "--module", "no_such_module"]) == 2
    err = capsys.readouterr().err
    assert "no_such_module" in err and "refresh_scheduler_interval45_rows16" in err


@pytest.mark.skipif(not REPORT_JSON.exists(), reason="no mutation report yet (make mutate)")
def test_committed_reports_are_what_the_generators_write():
    entries = json.loads(REPORT_JSON.read_text())
    keys = {"module", "family", "mutants", "killed", "equivalent", "surviving", "score"}
    for e in entries:
        assert keys <= set(e)
        assert e["killed"] + e["equivalent"] + e["surviving"] == e["mutants"]
        counted = e["mutants"] - e["equivalent"]
        assert e["score"] == (round(e["killed"] / counted, 4) if counted else None)
        assert len(e["survivors"]) == e["surviving"]
    assert REPORT_MD.read_text() == render_markdown(entries)
    formal = json.loads(strength.FORMAL_JSON.read_text()) if strength.FORMAL_JSON.exists() \
        else []
    if formal:
        assert strength.FORMAL_MD.read_text() == strength.render_formal(formal)
    assert strength.readme_section(formal, entries) in strength.README.read_text()


def test_kept_outcomes_follow_the_files_a_test_imports():
    """A test's kept outcomes are keyed by what it imports (and all hardware): its testbench,
    golden model and the hardware count; another family's testbench, a test it does not import
    and the mutation machinery itself do not."""
    root = mutate_module.REPO_ROOT
    shield = {p.relative_to(root).as_posix()
              for p in mutate_module._test_sources(["tests/test_sim_shield.py::x"])}
    assert {"tests/test_sim_shield.py", "tests/conftest.py", "verif/common/runner.py",
            "memwall/mutant_splice.py", "hdl/dplena/sequencer.py"} <= shield
    assert any(p.startswith("verif/shield/") for p in shield)
    assert any(p.startswith("golden/shield") for p in shield)
    assert not {"verif/dplena/random_program.py", "tests/test_sim_isa.py",
                "memwall/mutate.py"} & shield
    # A test's sibling module and a cocotb testbench named by a string are followed.
    blocks = {p.relative_to(root).as_posix()
              for p in mutate_module._test_sources(["tests/test_sim_fp_blocks.py"])}
    assert {"tests/test_fp_pipeline.py", "verif/common/tb_fp_block.py"} <= blocks
