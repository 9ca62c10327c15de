"""``memwall mutate``: a module is recognised by its digest wherever a test puts it, a mutant
replaces exactly that module, a few sampled mutants of a SHIELD module are killed by its
regression, and the committed reports and README section are what the generators write."""

from __future__ import annotations

import json

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall import mutate as mutate_module
from memwall import strength
from memwall.hdl.common.netlist import Design, unique_submodule
from memwall.mutant_splice import applied_path
from memwall.mutate import (
    COVERAGE_ENV,
    MUTANT_ENV,
    REPORT_JSON,
    REPORT_MD,
    design_verilog,
    module_digest,
    mutate,
    render_markdown,
    unchanged,
    write_mutants,
)
from memwall.mutation_record import record_path, restore_folder, restore_mutants, save_record


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
    # Both instances share one module: it was replaced once, and the run can tell.
    assert applied_path(spec).read_text().split() == [module_digest(text, "inverter")]


def test_a_pass_that_ran_no_mutant_is_an_error():
    """A mutant whose module is in none of the test's designs (the hardware changed after the
    run sampled it) is an error, not a survivor."""
    result = mutate_module._run_pytest(
        [{"digest": "0" * 16, "module": "gone", "verilog": "module gone(); endmodule"}],
        ["tests/dplena/test_sim_select.py::test_masked_select[1]"], 300)
    assert result["status"] == "error" and "gone: in none of the designs" in result["output"]


def test_sampled_mutants_of_a_shield_module_are_killed(tmp_path):
    """A few seeded mutants of SHIELD's standard-row refresh scheduler: each must be killed by
    the SHIELD regression or proved equivalent (one worker: this test already runs beside
    others); the record the run saves holds each kill. Two of the three are equivalent at
    shield_small's 16 rows: the Bresenham remainder's wrap select (its two sides agree modulo
    16, the register's width) and bit 1 of the down-counter's decrement (never 1 below a
    gap of 2)."""
    module = "refresh_scheduler_interval45_rows16"
    (entry,) = mutate("shield_small", [module], count=3, workers=1, write_report=False,
                      root=tmp_path / "work", record_root=tmp_path / "kept")
    assert entry["status"] == "ok" and entry["tests"] > 0
    assert entry["mutants"] == 3 and entry["surviving"] == 0, entry["survivors"]
    assert entry["killed"] >= 1 and entry["killed"] + entry["equivalent"] == 3
    kept = json.loads(record_path("shield_small", tmp_path / "kept").read_text())
    assert kept["coverage"]["key"] and kept["control"]["result"]["status"] == "survived"
    runs = [entry["runs"] for entry in kept["modules"][module].values()]
    assert len(runs) == 3
    assert sum(any(run["status"] in ("killed", "timeout") for run in r.values())
               for r in runs) == entry["killed"]


# ``top`` ties its child's input to 5 (0101).
TIED = """\
module child(clk, a, q);
  input clk;
  input [3:0] a;
  output reg [3:0] q = 4'd0;
  always @(posedge clk) q <= a;
endmodule

module top(clk, y);
  input clk;
  output [3:0] y;
  child c (.clk(clk), .a(4'd5), .q(y));
endmodule
"""


@pytest.mark.tool
def test_a_bit_tied_to_the_constant_it_holds_is_no_change(tmp_path):
    """A survivor whose Verilog, written back, is the unmutated module's is equivalent with no
    check: tying bit 0 of ``c``'s input (1 in 5) to 1 is such a mutant, tying bit 1 (0) to 1
    is not."""
    (tmp_path / "top").mkdir()
    (tmp_path / "top" / "design.v").write_text(TIED)
    mutants = write_mutants(tmp_path / "top", "top", [
        f"mutate -mode const1 -module top -cell c -port a -portbit {bit}" for bit in (0, 1)])
    target = mutate_module.Target("top", "digest", "test")
    assert unchanged(tmp_path, [(target, m) for m in mutants]) == {"top#0"}


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
              for p in mutate_module._test_sources(["tests/shield/test_sim_shield.py::x"])}
    assert {"tests/shield/test_sim_shield.py", "tests/conftest.py", "verif/common/runner.py",
            "memwall/mutant_splice.py", "hdl/dplena/sequencer.py"} <= shield
    assert any(p.startswith("verif/shield/") for p in shield)
    assert any(p.startswith("golden/shield") for p in shield)
    assert not {"verif/dplena/random_program.py", "tests/dplena/test_sim_isa.py",
                "memwall/mutate.py"} & shield
    # A test's sibling module and a cocotb testbench named by a string are followed.
    blocks = {p.relative_to(root).as_posix()
              for p in mutate_module._test_sources(["tests/common/test_sim_fp_blocks.py"])}
    assert {"tests/common/test_fp_pipeline.py", "verif/common/tb_fp_block.py"} <= blocks


def test_the_record_resumes_a_run_on_a_fresh_clone(tmp_path):
    """What a run kept in its folder (coverage, control, each mutant's per-test outcomes and
    equivalence result) survives the folder: saved to the record, then restored into an empty
    folder, matched by mutation; a local outcome wins over the record's, and a module the run
    did not touch keeps its record entries."""
    work, kept = tmp_path / "work", tmp_path / "kept"
    (work / "m").mkdir(parents=True)
    mutants = [{"id": i, "mutation": f"mutate -cell c{i}",
                "file": str(work / "m" / f"mutant_{i}.v")} for i in range(2)]
    (work / "coverage.json").write_text(json.dumps({"key": "k", "tests": {"t": 1.0}}))
    (work / "control.json").write_text(json.dumps({"result": {"status": "survived"}}))
    runs = {"t": {"key": "a", "status": "killed", "seconds": 1.5}}
    (work / "m" / "mutant_0.result.json").write_text(json.dumps({"runs": runs}))
    equivalence = {"key": "e", "result": {"status": "equivalent"}}
    (work / "m" / "equivalence_1.json").write_text(json.dumps(equivalence))
    save_record(work, "c", {"other": []}, kept)
    save_record(work, "c", {"m": mutants}, kept)
    assert set(json.loads(record_path("c", kept).read_text())["modules"]) == {"m", "other"}

    fresh = tmp_path / "fresh"
    (fresh / "m").mkdir(parents=True)
    moved = [{**m, "file": m["file"].replace(str(work), str(fresh))} for m in mutants]
    local = {"u": {"key": "b", "status": "survived", "seconds": 2.0},
             "t": {"key": "new", "status": "survived", "seconds": 3.0}}
    (fresh / "m" / "mutant_0.result.json").write_text(json.dumps({"runs": local}))
    restore_folder(fresh, "c", kept)
    restore_mutants(fresh, "c", "m", moved[::-1], kept)
    assert json.loads((fresh / "coverage.json").read_text())["key"] == "k"
    assert json.loads((fresh / "control.json").read_text())["result"]["status"] == "survived"
    assert json.loads((fresh / "m" / "mutant_0.result.json").read_text())["runs"] == local
    assert json.loads((fresh / "m" / "equivalence_1.json").read_text()) == equivalence
    assert not (fresh / "m" / "mutant_1.result.json").exists()
    # Another clone with nothing of its own gets the record's outcomes whole.
    bare = tmp_path / "bare"
    (bare / "m").mkdir(parents=True)
    restore_mutants(bare, "c", "m", [{**mutants[0], "file": str(bare / "m" / "mutant_0.v")}],
                    kept)
    assert json.loads((bare / "m" / "mutant_0.result.json").read_text())["runs"] == runs
