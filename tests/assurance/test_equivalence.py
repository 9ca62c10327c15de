"""The survivors' equivalence check (:mod:`memwall.equivalence`) on small designs: it must
call an unchanged design equivalent, must not call equivalent a mutant that a simulation could
tell apart (an output changed, or an ``x`` chosen where the original gives a value), and past
its size bound must cut submodules out and then take no difference for a verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memwall import equivalence
from memwall.equivalence import READ_DESIGN, check_equivalence, run_yosys

pytestmark = pytest.mark.tool   # every test here runs Yosys, OpenSTA or SymbiYosys

# ``t`` is a don't care (full_case, no arm) only where ``y`` takes ``a`` instead. ``y`` starts
# at 0, as every register Amaranth writes does (an unset start would differ between the copies).
DESIGN = """\
module top(clk, s, a, b, y);
  input clk;
  input [2:0] s;
  input [3:0] a;
  input [3:0] b;
  output reg [3:0] y = 4'd0;
  reg [3:0] t;
  always @* begin
    t = a;
    if (s[0]) begin
      (* full_case *)
      case (s[2:1])
        2'd0: t = b;
        2'd1: t = a ^ b;
      endcase
    end
  end
  always @(posedge clk) y <= (s[0] && s[2]) ? a : t;
endmodule
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("equivalence")
    (folder / "design.v").write_text(DESIGN)
    (folder / "top").mkdir()
    run_yosys(f"{READ_DESIGN}mutate -list 200 -seed 1 -none\n", folder, "list")
    return folder


def _mutation(folder: Path, pattern: str) -> str:
    """The first mutation Yosys listed (``folder/list.log``) that matches ``pattern``."""
    listed = (folder / "list.log").read_text().splitlines()
    found = [line.strip() for line in listed if line.startswith("mutate ")
             and re.search(pattern, line)]
    assert found, f"Yosys listed no mutation matching {pattern!r}"
    return found[0]


def test_an_unchanged_design_is_equivalent(folder):
    assert check_equivalence(folder, "top", "mutate -mode none", "none")["status"] \
        == "equivalent"


def test_a_mutant_that_chooses_an_x_is_not_equivalent(folder):
    """The compare of ``case`` arm 0 tied to 0: ``t`` is then ``x`` where the original gives
    ``b``, and ``y`` takes it. Simplifying both designs' don't cares would make them the same
    netlist; the check must not."""
    mutation = _mutation(folder, r"-mode const0 .*_CMP0 -port Y ")
    result = check_equivalence(folder, "top", mutation, "x")
    assert result["status"] != "equivalent", result


def test_a_mutant_of_the_output_register_is_different(folder):
    mutation = _mutation(folder, r"-mode inv .*-cell \$procdff\S* -port Q ")
    result = check_equivalence(folder, "top", mutation, "q")
    assert result["status"] == "different", result
    assert result["cycles"] is not None and Path(result["trace"]).exists()


# ``top`` reads its child's register; past the size bound the child is cut out.
HIERARCHY = """\
module child(clk, a, q);
  input clk;
  input [3:0] a;
  output reg [3:0] q = 4'd0;
  always @(posedge clk) q <= a;
endmodule

module top(clk, a, b, y);
  input clk;
  input [3:0] a;
  input [3:0] b;
  output reg [3:0] y = 4'd0;
  wire [3:0] q;
  child c (.clk(clk), .a(a), .q(q));
  always @(posedge clk) y <= q ^ b;
endmodule
"""


def test_past_the_size_bound_submodules_are_cut(tmp_path, monkeypatch):
    """With the bound between ``top``'s own lines and ``top`` flattened, the child is cut out:
    the unchanged design is still equivalent, and a difference found without the child's real
    outputs decides nothing."""
    (tmp_path / "design.v").write_text(HIERARCHY)
    (tmp_path / "top").mkdir()
    monkeypatch.setattr(equivalence, "_same_netlist", lambda *args: None)   # the flattened path
    modules = equivalence._modules(HIERARCHY)
    monkeypatch.setattr(equivalence, "EQUIVALENCE_MAX_LINES",
                        equivalence._lines(modules, "top", frozenset({"child"})))
    assert equivalence._lines(modules, "top") > equivalence.EQUIVALENCE_MAX_LINES
    same = check_equivalence(tmp_path, "top", "mutate -mode none", "none")
    assert same["status"] == "equivalent" and same["cut"] == ["child"], same
    run_yosys(f"{READ_DESIGN}mutate -list 100 -seed 1 -none\n", tmp_path, "list")
    inverted = _mutation(tmp_path, r"-mode inv -module top .*-port Q ")
    result = check_equivalence(tmp_path, "top", inverted, "q")
    assert result["status"] == "unknown" and "free" in result["error"], result

    # An unknown is kept: asked again, the check answers from it without running; with
    # ``recheck_unknown`` (``memwall mutate --recheck-unknown``) it runs again.
    def ran_again(*args, **kwargs):
        raise AssertionError("the kept unknown was checked again")
    monkeypatch.setattr(equivalence, "_bounded_check", ran_again)
    assert check_equivalence(tmp_path, "top", inverted, "q") == result
    with pytest.raises(AssertionError, match="checked again"):
        check_equivalence(tmp_path, "top", inverted, "q", recheck_unknown=True)


# ``top`` ties its child's input to a constant; the child is too big to flatten (bound 0).
TIED = HIERARCHY.replace("child c (.clk(clk), .a(a), .q(q));",
                         "child c (.clk(clk), .a(4'd5), .q(q));")


def test_a_constant_onto_the_same_constant_is_the_same_netlist(tmp_path, monkeypatch):
    """A mutant that drives a net with the constant it already holds is equivalent on the
    module's own netlist, with no flattening (no size bound); a mutant that changes the
    constant is not (and, past the bound with nothing to cut, stays unknown)."""
    (tmp_path / "design.v").write_text(TIED)
    (tmp_path / "top").mkdir()
    monkeypatch.setattr(equivalence, "EQUIVALENCE_MAX_LINES", 0)
    run_yosys(f"{READ_DESIGN}mutate -list 100 -seed 1 -none\n", tmp_path, "list")
    same = check_equivalence(tmp_path, "top", "mutate -mode const1 -module top -cell c "
                             "-port a -portbit 0", "same")
    assert same["status"] == "equivalent" and "same netlist" in same["how"], same
    changed = check_equivalence(tmp_path, "top", "mutate -mode const1 -module top -cell c "
                                "-port a -portbit 1", "changed")
    assert changed["status"] == "unknown", changed


# A stream whose payload takes ``a ^ b`` when drained, only ever seen while ``o__valid`` is 0,
# and ``a + b`` when loaded, seen while it is 1.
STREAM = """\
module top(clk, a, b, go, o__ready, o__valid, o__payload);
  input clk;
  input [3:0] a;
  input [3:0] b;
  input go;
  input o__ready;
  output reg o__valid = 1'd0;
  output reg [3:0] o__payload = 4'd0;
  always @(posedge clk)
    if (go) begin
      o__valid <= 1'd1;
      o__payload <= a + b;
    end else if (o__ready) begin
      o__valid <= 1'd0;
      o__payload <= a ^ b;
    end
endmodule
"""


def test_a_stream_payload_counts_only_while_valid(tmp_path):
    """A mutant that changes a payload only while its valid is 0 is equivalent (no reader may
    look at it then); one that changes what a valid payload carries is not."""
    (tmp_path / "design.v").write_text(STREAM)
    (tmp_path / "top").mkdir()
    run_yosys(f"{READ_DESIGN}mutate -list 100 -seed 1 -none\n", tmp_path, "list")
    idle = check_equivalence(tmp_path, "top", _mutation(tmp_path, r"-mode inv .*-cell \$xor\S* "
                                                                  r"-port Y "), "idle")
    assert idle["status"] == "equivalent", idle
    carried = check_equivalence(tmp_path, "top", _mutation(tmp_path, r"-mode inv .*-cell "
                                                                     r"\$add\S* -port Y "),
                                "carried")
    assert carried["status"] == "different", carried


# ``child`` drives ``r`` with a constant that gates what ``top`` sees of ``q``.
CONSTANT_OUTPUT = """\
module child(clk, a, q, r);
  input clk;
  input [3:0] a;
  output reg [3:0] q = 4'd0;
  output r;
  assign r = 1'd1;
  always @(posedge clk) q <= a;
endmodule

module gated(en, a, y);
  input en;
  input [3:0] a;
  output [3:0] y;
  assign y = en ? a : 4'd0;
endmodule

module top(clk, a, b, y);
  input clk;
  input [3:0] a;
  input [3:0] b;
  output reg [3:0] y = 4'd0;
  wire [3:0] q;
  wire [3:0] g;
  wire r;
  child c (.clk(clk), .a(a), .q(q), .r(r));
  gated u (.en(r), .a(q), .y(g));
  always @(posedge clk) y <= g ^ b;
endmodule
"""


def test_a_cut_submodules_constant_output_stays_constant(tmp_path, monkeypatch):
    """Cut out, ``child``'s outputs are free inputs, except ``r``, which it drives with 1 in
    every state: a mutant that ties ``u``'s ``en`` to 1 is equivalent, one that ties it to 0
    is not proved so (a difference with ``q`` free decides nothing)."""
    (tmp_path / "design.v").write_text(CONSTANT_OUTPUT)
    (tmp_path / "top").mkdir()
    monkeypatch.setattr(equivalence, "_same_netlist", lambda *args: None)   # the flattened path
    modules = equivalence._modules(CONSTANT_OUTPUT)
    monkeypatch.setattr(equivalence, "EQUIVALENCE_MAX_LINES",
                        equivalence._lines(modules, "top", frozenset({"child"})))
    tied = check_equivalence(tmp_path, "top", "mutate -mode const1 -module top -cell u "
                             "-port en -portbit 0", "tied")
    assert tied["status"] == "equivalent" and tied["cut"] == ["child"], tied
    cleared = check_equivalence(tmp_path, "top", "mutate -mode const0 -module top -cell u "
                                "-port en -portbit 0", "cleared")
    assert cleared["status"] == "unknown" and "free" in cleared["error"], cleared



def test_a_submodules_constant_output_is_known_to_the_same_netlist_check(tmp_path,
                                                                        monkeypatch):
    """Not flattened either (bound 0), ``top``'s netlist reads ``child``'s ``r`` as the 1 it
    always is: a mutant that ties ``u``'s ``en`` to 1 is the same netlist, one that ties it to
    0 is not (and stays unknown)."""
    (tmp_path / "design.v").write_text(CONSTANT_OUTPUT)
    (tmp_path / "top").mkdir()
    monkeypatch.setattr(equivalence, "EQUIVALENCE_MAX_LINES", 0)
    tied = check_equivalence(tmp_path, "top", "mutate -mode const1 -module top -cell u "
                             "-port en -portbit 0", "tied")
    assert tied["status"] == "equivalent" and "same netlist" in tied["how"], tied
    cleared = check_equivalence(tmp_path, "top", "mutate -mode const0 -module top -cell u "
                                "-port en -portbit 0", "cleared")
    assert cleared["status"] == "unknown", cleared


@pytest.mark.parametrize("steps", [5, 3])
def test_a_bounded_check_cut_by_its_time_bound(folder, monkeypatch, steps):
    """A bounded check of the outputs stopped by its time bound decides nothing: the
    correspondence proof, which checks its own start from reset, still proves an unchanged
    design, and the result says how many cycles the bounded check covered."""
    monkeypatch.setattr(equivalence, "_same_netlist", lambda *args: None)   # the flattened path
    stopped = "".join(f"Checking assertions in step {step}..\n" for step in range(steps + 1))
    real = equivalence.run_bounded

    def outputs_stopped(cmd, **kwargs):
        return (None, stopped) if "equiv.sby" in cmd else real(cmd, **kwargs)
    monkeypatch.setattr(equivalence, "run_bounded", outputs_stopped)
    result = check_equivalence(folder, "top", "mutate -mode none", f"stopped{steps}")
    assert result["status"] == "equivalent" and result["bounded"] == steps, result


# ``r`` counts up from 1, saturating; the mutant loads it with 0 instead, once, out of reset.
# ``y`` first tells them apart 12 cycles from reset, past the bounded check, and no pair ever
# differs again after the first cycles: the induction alone would call it equivalent.
LATE = """\
module top(clk, y);
  input clk;
  output y;
  reg started = 1'd0;
  reg [3:0] r = 4'd0;
  always @(posedge clk) begin
    started <= 1'd1;
    r <= started ? ((r == 4'd15) ? r : r + 4'd1) : 4'd1;
  end
  assign y = r == 4'd12;
endmodule
"""


def test_a_difference_out_of_reset_seen_only_later_is_not_equivalent(tmp_path):
    """The induction proves that pairs equal for its window stay equal; a mutant whose
    registers differ from the first cycles, seen at the outputs only after the bounded check,
    must fail on the induction's start (checked from reset), not be called equivalent."""
    (tmp_path / "design.v").write_text(LATE)
    (tmp_path / "top").mkdir()
    run_yosys(f"{READ_DESIGN}mutate -list 100 -seed 1 -none\n", tmp_path, "list")
    reset_value = _mutation(tmp_path, r"-mode inv .*-cell \$ternary\$design.v:8\$5 -port A "
                                      r"-portbit 0 ")
    result = check_equivalence(tmp_path, "top", reset_value, "late")
    assert result["status"] == "unknown" and result["bounded"] == 8, result
    assert check_equivalence(tmp_path, "top", "mutate -mode none", "none")["status"] \
        == "equivalent"


# ``top`` keeps the low half of the byte ``t`` and hands it to its private ``top.inner``.
UNREAD = """\
module top(clk, s, a, b, y);
  input clk;
  input s;
  input [7:0] a;
  input [7:0] b;
  output reg [3:0] y = 4'd0;
  wire [7:0] t = s ? b : a;
  wire [3:0] q;
  \\top.inner  inner (.a(t[3:0]), .q(q));
  always @(posedge clk) y <= q;
endmodule

module \\top.inner (a, q);
  input [3:0] a;
  output [3:0] q;
  assign q = ~a;
endmodule
"""


def test_a_bit_no_reader_takes_is_the_same_text_once_optimised(tmp_path):
    """A bit of ``t`` that nothing reads, tied to 0, is gone once Yosys has optimised ``top``
    (``wreduce``): the same text. A change inside ``top``'s private submodule is compared
    too, and told apart (the one-cycle proof of ``top`` alone called it equivalent: both of
    its copies instantiated the one ``top.inner`` left in the design, the original)."""
    (tmp_path / "design.v").write_text(UNREAD)
    (tmp_path / "top").mkdir()
    run_yosys(f"{READ_DESIGN}mutate -list 200 -seed 1 -none top top.*\n", tmp_path, "list")
    unread = _mutation(tmp_path, r"-mode const0 .*-cell \$ternary\S* -port A -portbit 6 ")
    result = check_equivalence(tmp_path, "top", unread, "unread")
    assert result["status"] == "equivalent" and "as text" in result["how"], result
    inner = _mutation(tmp_path, r"-mode inv -module top\.inner .*-portbit 0 ")
    assert not equivalence._same_text_optimised(tmp_path, "top", inner)
    assert check_equivalence(tmp_path, "top", inner, "inner")["status"] == "different"
