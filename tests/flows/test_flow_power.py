"""Power and timing flow: calibration against hand-computed Liberty power, the OpenSTA traps,
activity from a VCD, netlist handling and report parsing."""

from __future__ import annotations

import json
import shutil

import pytest

from memwall.flows import (
    activity,
    calibration,
    gate_activity,
    hierarchical,
    liberty,
    opensta2019,
    rewrite,
    sta,
)
from memwall.flows.errors import ActivityError, PdkError, StaError
from memwall.flows.netlist import (
    build_hierarchy,
    netlist_from_verilog,
    read_netlist,
    register_names_from_json,
    yosys_json,
)
from memwall.flows.pdk import find_pdk, pdk_cell_library

PDKS = ("asap7", "sky130hd", "nangate45")
COMPONENTS = ("internal", "switching", "leakage", "total")

needs_sta = pytest.mark.skipif(shutil.which(sta.STA_BINARY) is None,
                               reason="OpenSTA (Debian package opensta) is not installed")


def _pdk_or_skip(name: str):
    try:
        return find_pdk(name)
    except PdkError as exc:
        pytest.skip(str(exc))


# --------------------------------------------------------------------------------------------
# Calibration: the flow's OpenSTA power of a reference circuit against the hand computation.

@pytest.mark.tool
@needs_sta
@pytest.mark.parametrize("pdk_name", PDKS)
def test_calibration_within_10_percent(pdk_name, tmp_path):
    _pdk_or_skip(pdk_name)
    result = calibration.calibrate(pdk_name, tmp_path)
    for k in COMPONENTS:
        assert result["hand"][k] > 0, (k, result["hand"])
        assert result["ratio"][k] == pytest.approx(1.0, abs=0.10), (pdk_name, k, result)


@pytest.mark.tool
@needs_sta
def test_asap7_clock_in_library_unit(tmp_path):
    """ASAP7 counts time in ps: the flow's period (1000 ps for 1 ns) gives the hand value, the
    period written in ns (read as 1 ps) gives 1000x the dynamic power, and a macro library
    read first (fakeram7 counts in ns) is refused instead of silently shifting the units."""
    pdk = _pdk_or_skip("asap7")
    assert pdk.to_library_time(1.0) == pytest.approx(1000.0)
    result = calibration.calibrate("asap7", tmp_path, clock_period_ns=1.0)
    assert result["ratio"]["total"] == pytest.approx(1.0, abs=0.10)
    traps = calibration.reproduce_traps("asap7", tmp_path)
    for k in ("internal", "switching"):
        assert traps["period_in_ns"][k] / result["flow"][k] == pytest.approx(1000.0, rel=0.01)
    assert traps["macro_first"].startswith("refused")


@pytest.mark.tool
@needs_sta
def test_sky130hd_internal_power_is_not_zero(tmp_path):
    """The flow's sky130hd internal power is non-zero and right; the trap (no operating
    conditions) gives exactly zero, and moving the forward-referenced default below its group
    fixes it as well as set_operating_conditions does."""
    _pdk_or_skip("sky130hd")
    result = calibration.calibrate("sky130hd", tmp_path)
    assert result["flow"]["internal"] > 0
    assert result["ratio"]["internal"] == pytest.approx(1.0, abs=0.10)
    traps = calibration.reproduce_traps("sky130hd", tmp_path)
    assert traps["no_operating_conditions"]["internal"] == 0.0
    assert traps["no_operating_conditions"]["switching"] > 0
    assert traps["moved_operating_conditions"] == traps["original_library"]
    assert traps["original_library"]["internal"] > 0


def test_view_restates_the_library(tmp_path):
    """The OpenSTA view: opcond after its group, pg groups merged, tables scaled, leakage."""
    src = tmp_path / "lib" / "tiny.lib"
    src.parent.mkdir()
    src.write_text("""library (tiny) {
  time_unit : "1ns";
  capacitive_load_unit (1, pf);
  default_operating_conditions : "tt";
  operating_conditions ("tt") {
    voltage : 1.8;
  }
  power_lut_template (p1) {
    variable_1 : input_transition_time;
    index_1 ("1, 2");
  }
  cell (inv) {
    leakage_power () { when : "A"; value : 2; related_pg_pin : VDD; }
    leakage_power () { when : "!A"; value : 4; related_pg_pin : VDD; }
    pin (A) { direction : input; capacitance : 0.002; }
    pin (Y) {
      direction : output;
      function : "!A";
      internal_power () {
        related_pin : "A";
        related_pg_pin : VDD;
        rise_power (p1) { index_1 ("1, 2"); values ("1, 2"); }
        fall_power (p1) { index_1 ("1, 2"); values ("3, 4"); }
      }
      internal_power () {
        related_pin : "A";
        related_pg_pin : VSS;
        rise_power (p1) { index_1 ("1, 2"); values ("10, 20"); }
        fall_power (p1) { index_1 ("1, 2"); values ("30, 40"); }
      }
    }
  }
}
""")
    view = liberty.Liberty(opensta2019.opensta_view(src, tmp_path / "view"))
    assert view.default_operating_conditions == "tt"
    text = view.text
    assert text.index("operating_conditions (\"tt\")") < text.index("default_operating_cond")
    cell = view.cell("inv")
    assert float(cell.attr("cell_leakage_power")) == pytest.approx(3.0)
    pin = cell.find("pin", "Y")[0]
    assert pin.attr("function") == "Y"
    (power,) = pin.find("internal_power")
    # (VDD + VSS) x 1/2 (rise + fall summed by OpenSTA 2019) x 2 (its 0.5 arc weight), k = 1
    assert liberty.table_values(power.find("rise_power")[0]) == [[11.0, 22.0]]
    assert liberty.table_values(power.find("fall_power")[0]) == [[33.0, 44.0]]


def test_normalise_when_drops_the_complement():
    pairs = [("Q", "QN")]
    assert opensta2019.normalise_when("!CK & !Q & QN", pairs) == "!CK & !Q"
    assert opensta2019.normalise_when("(CK*Q)*!QN", pairs) == "CK & Q"
    assert opensta2019.normalise_when("D + QN", pairs) == "D + QN"


# --------------------------------------------------------------------------------------------
# Activity from a VCD.

TINY_VCD = """$timescale 1ns $end
$scope module TOP $end
$scope module top $end
$var wire 1 ! clk $end
$var wire 2 " a [1:0] $end
$var wire 1 # y $end
$scope module u0 $end
$var wire 1 ! clk $end
$var wire 1 $ d $end
$var wire 1 # q $end
$upscope $end
$scope module u1 $end
$var wire 1 ! clk $end
$var wire 1 % d $end
$var wire 1 & q $end
$upscope $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
0!
b0 "
0#
0$
0%
0&
#5
1!
#10
0!
b11 "
1$
1%
#15
1!
1#
1&
#20
0!
b1 "
0%
#25
1!
#30
0!
b0 "
0$
#35
1!
0#
0&
#40
0!
b10 "
1%
#45
1!
#50
0!
"""


#: The design of the tiny VCD as the generator records it (manifest.json's instance_tree).
TINY_TREE = {"top": [{"instance": "u0", "module": "leaf"}, {"instance": "u1", "module": "leaf"}],
             "leaf": []}


def _tiny(tmp_path):
    vcd = tmp_path / "tiny.vcd"
    vcd.write_text(TINY_VCD)
    return vcd, TINY_TREE


def test_activity_from_tiny_vcd(tmp_path):
    vcd, tree = _tiny(tmp_path)
    act = activity.activity_from_vcd(vcd, tree)
    assert act["cycles"] == pytest.approx(4.0)          # rising edges 5..45, period 10
    assert act["clock_period_ns"] == pytest.approx(10.0)
    assert act["scopes"] == {"TOP.top": "top", "TOP.top.u0": "leaf", "TOP.top.u1": "leaf"}
    top, leaf = act["modules"]["top"], act["modules"]["leaf"]
    assert top["instances"] == 1 and leaf["instances"] == 2
    assert top["signals"]["clk"] == pytest.approx([2.0, 0.5])
    assert top["signals"]["a[0]"] == pytest.approx([0.5, 0.5])     # 10: 0->1, 30: 1->0
    assert top["signals"]["a[1]"] == pytest.approx([0.75, 0.375])  # 10, 20, 40; 1 for 15 ns
    # Per module type, the mean over its instances: d is a[0] in u0 and a[1] in u1.
    assert leaf["signals"]["d"] == pytest.approx([0.625, 0.4375])
    assert leaf["signals"]["q"] == pytest.approx([0.5, 0.5])
    # Per-cycle values at the rising edges (cycle c is bit c): u0.d is 0,1,1,0 -> 0x6.
    assert leaf["trace_cycles"] == 4
    assert leaf["traces"]["d"] == ["6", "2"]
    assert activity.decode_trace("6", 4) == [0, 1, 1, 0]
    assert activity.load_activity(activity.save_activity(act, tmp_path / "a.json")) == \
        json.loads(json.dumps(act))


def test_activity_named_top_and_errors(tmp_path):
    vcd, tree = _tiny(tmp_path)
    # The testbench named its toplevel "top"; the generated design calls the module top_v2.
    renamed = {"top_v2": tree["top"], "leaf": []}
    act = activity.activity_from_vcd(vcd, renamed, top_scope="TOP.top", top_module="top_v2")
    assert act["scopes"]["TOP.top"] == "top_v2" and act["modules"]["leaf"]["instances"] == 2
    with pytest.raises(ActivityError):
        activity.activity_from_vcd(vcd, {"nothing": []})
    with pytest.raises(ActivityError):
        activity.activity_from_vcd(vcd, tree, clock="clk2")


def test_instance_scopes_of_generate_loops():
    scopes = {"TOP.top.lane[0].u", "TOP.top.lane[1].u", "TOP.v.lane__BRA__0__KET__.u",
              "TOP.top.other"}
    entry = {"instance": "u", "module": "m", "generate": {"block": "lane", "count": 2}}
    assert activity.instance_scopes(scopes, "TOP.top", entry) == ["TOP.top.lane[0].u",
                                                                  "TOP.top.lane[1].u"]
    assert activity.instance_scopes(scopes, "TOP.v", entry) == ["TOP.v.lane__BRA__0__KET__.u"]
    assert activity.instance_scopes(scopes, "TOP.top", {"instance": "other", "module": "m"}) \
        == ["TOP.top.other"]


def test_bit_activity_pads_short_vectors():
    # A 4-bit value dumped as "b1" is 0001, "b101" is 0101, "bx" is xxxx; leaving x is no
    # toggle and x does not count as 1. Bits MSB first.
    tv = [(0, "x"), (10, "1"), (20, "101"), (30, "0")]
    per_bit = activity.bit_activity(tv, 4, 0, 40, 4.0)
    assert [t for t, _ in per_bit] == [0.0, 0.5, 0.0, 0.25]
    assert [d for _, d in per_bit] == [0.0, 0.25, 0.0, 0.5]


# --------------------------------------------------------------------------------------------
# Netlists, simulation, reports.

NETLIST = r"""
module child(a, y);
  input [1:0] a;
  output y;
  NAND2_X1 g (.A1(a[0]), .A2(a[1]), .ZN(y));
endmodule
module parent(clk, x, \odd.name , out);
  input clk;
  input [1:0] x;
  input \odd.name ;
  output [1:0] out;
  wire [1:0] w;
  wire c;
  wire \reg_q ;
  INV_X1 _1_ (.A(x[0]), .ZN(w[0]));
  child u (.a({w[0], \odd.name }), .y(c));
  DFF_X1 _2_ (.CK(clk), .D(c), .Q(\reg_q ), .QN());
  XOR2_X1 _3_ (.A(\reg_q ), .B(c), .Z(out[0]));
  assign out[1] = 1'b0;
  assign w[1] = x[1];
endmodule
"""


@pytest.mark.tool
def test_parse_netlist_bits_and_aliases():
    parent = netlist_from_verilog(NETLIST, "parent")
    assert [p for p, _, _ in parent.ports] == ["clk", "x", "odd.name", "out"]
    assert parent.port_bits["out"][0] == "0"               # tied by assign
    # assign w[1] = x[1]: one net carrying both names (bits are MSB first: x[1] is first)
    w1 = parent.port_bits["x"][0]
    assert "w[1]" in parent.net_names[w1] and "x[1]" in parent.net_names[w1]
    child_cell = next(c for c in parent.cells if c.type == "child")
    assert len(child_cell.pins["a"]) == 2                  # concatenation, MSB first
    assert child_cell.pins["a"][1] == parent.port_bits["odd.name"][0]
    assert netlist_from_verilog(NETLIST, "child").port_indices("a") == [1, 0]


@pytest.mark.tool
def test_rewrite_cuts_children_to_boundary_ports():
    pdk = _pdk_or_skip("nangate45")
    cells = pdk_cell_library(pdk)
    nets = {m: netlist_from_verilog(NETLIST, m) for m in ("child", "parent")}
    manifest = {"top": "parent", "modules": ["child", "parent"],
                "hierarchy": {"parent": {"child": 1}, "child": {}},
                "instances": {"parent": 1, "child": 1}}
    hier = build_hierarchy(nets, manifest, cells, 5e-15)
    a0 = nets["child"].port_bits["a"][1]
    nand = cells.info("NAND2_X1").inputs["A1"]
    assert hier.in_cap["child"][a0] == pytest.approx(nand + cells.libs[0].wire_cap(1))
    signals = {"x[0]": (0.3, 0.5), "odd.name": (0.2, 0.5), "reg_q": (0.25, 0.4),
               "c": (0.4, 0.5)}
    run = rewrite.rewrite_module(nets["parent"], hier, cells, activity={"signals": signals})
    assert "child u" not in run.verilog and "memwall_co" in run.verilog
    assert any(p.startswith("memwall_ci") for p in run.output_loads)
    assert run.annotated == {"child outputs annotated": 1, "inputs annotated": 2,
                             "inputs defaulted": 1, "registers annotated": 1}
    # The register's state is its VCD signal; the XOR of it and c is simulated.
    assert run.pin_activity["_2_/Q"] == pytest.approx((0.25, 0.4))
    assert run.pin_activity["_3_/B"] == pytest.approx((0.4, 0.5))
    t, d = run.pin_activity["_3_/Z"]
    assert 0.3 < t < 0.75 and 0.3 < d < 0.7


#: A register whose name mapping lost: its flip-flop's QN feeds the logic directly (ABC merged
#: the inverter that carried the name ``st``), so no net of the mapped netlist is named.
UNNAMED_REGISTER = """
module m(clk, d, y);
  input clk, d;
  output y;
  wire qn;
  DFF_X1 slice_7 (.CK(clk), .D(d), .Q(), .QN(qn));
  INV_X1 _1_ (.A(qn), .ZN(y));
endmodule
"""


def _pre_mapping_json(flop_type: str) -> dict:
    """What synthesis writes before ``dfflibmap``: the flip-flop and the named wire on its Q."""
    return {"modules": {"m": {
        "cells": {"slice_7": {"type": flop_type,
                                              "connections": {"C": [2], "D": [3], "Q": [5]}}},
        "netnames": {"st": {"bits": [5], "hide_name": 0},
                     "$auto$wire": {"bits": [5], "hide_name": 1},
                     "bus": {"bits": [9, 5], "hide_name": 0, "offset": 4}}}}}


def test_register_names_before_mapping():
    names = register_names_from_json(_pre_mapping_json("$_SDFFE_PP0P_"), "m")
    assert names == {"slice_7": ["st", "bus[5]"]}   # hidden names left out
    # An asynchronous set/reset flip-flop may be mapped as its complement: no name.
    assert register_names_from_json(_pre_mapping_json("$_DFF_PP1_"), "m") == {}
    assert register_names_from_json(_pre_mapping_json("$_DFF_P_"), "other") == {}


@pytest.mark.tool
def test_register_matched_by_its_name_before_mapping(tmp_path):
    """A flip-flop the mapped netlist leaves unnamed takes its VCD activity by the name
    synthesis recorded before mapping (read_netlist finds the file beside the netlist)."""
    cells = pdk_cell_library(_pdk_or_skip("nangate45"))
    (tmp_path / "m.json").write_text(json.dumps(yosys_json(UNNAMED_REGISTER)))
    signals = {"d": (0.3, 0.5), "st": (0.01, 0.9)}
    unnamed = rewrite.rewrite_module(read_netlist(tmp_path / "m.json", "m"), None, cells,
                                     activity={"signals": signals})
    assert unnamed.annotated.get("registers defaulted") == 1
    (tmp_path / "m.registers.json").write_text(json.dumps(_pre_mapping_json("$_DFF_P_")))
    netlist = read_netlist(tmp_path / "m.json", "m")
    assert netlist.register_names == {"slice_7": ["st", "bus[5]"]}
    run = rewrite.rewrite_module(netlist, None, cells, activity={"signals": signals})
    assert run.annotated.get("registers annotated") == 1
    assert "registers defaulted" not in run.annotated
    flop = next(k for k in run.pin_activity if k.endswith("/QN"))
    assert run.pin_activity[flop] == pytest.approx((0.01, 0.1))   # QN: the state inverted


#: The same register on ASAP7, whose flip-flop's state loads !D and drives QN as it is.
UNNAMED_REGISTER_ASAP7 = """
module m(clk, d, y);
  input clk, d;
  output y;
  wire qn;
  DFFHQNx1_ASAP7_75t_R slice_7 (.CLK(clk), .D(d), .QN(qn));
  INVx1_ASAP7_75t_R _1_ (.A(qn), .Y(y));
endmodule
"""


@pytest.mark.tool
def test_register_name_before_mapping_on_a_qn_only_flop(tmp_path):
    """ASAP7's DFFHQN (state IQN = !D, QN = IQN): the register's value is D, so QN carries
    its complement, in the duty and in the per-cycle trace (a polarity lost here inverted
    every such register's state in the power runs and the clock-gating holds)."""
    cells = pdk_cell_library(_pdk_or_skip("asap7"))
    (tmp_path / "m.json").write_text(json.dumps(yosys_json(UNNAMED_REGISTER_ASAP7)))
    (tmp_path / "m.registers.json").write_text(json.dumps(_pre_mapping_json("$_DFF_P_")))
    netlist = read_netlist(tmp_path / "m.json", "m")
    trace = "1"                        # the register is 1 in the first of 16 cycles only
    run = rewrite.rewrite_module(netlist, None, cells, activity={
        "signals": {"d": (0.3, 0.5), "st": (0.01, 0.9)},
        "traces": {"st": [trace]}, "trace_cycles": 16})
    assert run.annotated.get("registers annotated") == 1
    flop = next(k for k in run.pin_activity if k.endswith("/QN"))
    assert run.pin_activity[flop][1] == pytest.approx(0.1)      # QN: the state inverted
    out = next(k for k in run.pin_activity if k.endswith("/Y"))
    assert run.pin_activity[out][1] == pytest.approx(1 / 16)    # y = st, replayed


@pytest.mark.tool
def test_black_box_memory_is_cut_out():
    """A memory black box (no Liberty cell): its outputs become sources, no crash, no power."""
    pdk = _pdk_or_skip("nangate45")
    cells = pdk_cell_library(pdk)
    netlist = netlist_from_verilog("""
module m(clk, a, y);
  input clk, a;
  output y;
  wire [1:0] rd;
  wire wd;
  INV_X1 i (.A(a), .ZN(wd));
  memwall_ram ram (.RD_CLK(clk), .WR_DATA(wd), .RD_DATA(rd));
  NAND2_X1 g (.A1(rd[0]), .A2(rd[1]), .ZN(y));
endmodule
""")
    run = rewrite.rewrite_module(netlist, None, cells,
                             activity={"signals": {"a": (0.2, 0.5), "rd[0]": (0.3, 0.5)}})
    assert "memwall_ram" not in run.verilog
    assert run.annotated["child outputs annotated"] == 1
    assert run.annotated["child outputs defaulted"] == 1
    assert run.pin_activity["g/A1"] == pytest.approx((0.3, 0.5))
    assert run.pin_activity["g/A2"] == pytest.approx(gate_activity.DEFAULT_ACTIVITY)
    assert any(p.startswith("memwall_ci") for p in run.output_loads)   # wd into the memory


@pytest.mark.tool
def test_simulated_activity_is_exact_where_the_formula_is_not():
    """XOR of a signal with itself through two paths is 0: reconvergence handled."""
    pdk = _pdk_or_skip("nangate45")
    cells = pdk_cell_library(pdk)
    netlist = netlist_from_verilog("""
module m(a, b, y, z);
  input a, b;
  output y, z;
  wire n;
  INV_X1 i (.A(a), .ZN(n));
  XOR2_X1 x (.A(a), .B(n), .Z(y));
  XOR2_X1 x2 (.A(a), .B(b), .Z(z));
endmodule
""")
    src = {netlist.port_bits["a"][0]: (0.5, 0.5), netlist.port_bits["b"][0]: (0.5, 0.5)}
    nets = gate_activity.simulate_activity(netlist, cells, {}, src)
    y, z = netlist.port_bits["y"][0], netlist.port_bits["z"][0]
    assert nets[y] == (0.0, 1.0)                      # a ^ !a: constant 1
    assert nets[z][0] == pytest.approx(0.5, abs=0.02)  # one of two toggles: 2 * 0.25
    # A replayed trace keeps its exact sequence: 0101... toggles every cycle.
    trace = {netlist.port_bits["a"][0]: [format(int("01" * 32, 2), "x")]}
    nets = gate_activity.simulate_activity(netlist, cells, {}, src, traces=trace, trace_cycles=64)
    assert nets[netlist.port_bits["a"][0]] == (0.5, 0.5)   # sources keep their given stats
    n_net = next(c.pins["ZN"][0] for c in netlist.cells if c.name == "i")
    assert nets[n_net][0] == pytest.approx(1.0, abs=0.02)


REPORT_POWER = """MEMWALL_POWER_BEGIN
Group                    Internal    Switching      Leakage        Total
                            Power        Power        Power        Power
------------------------------------------------------------------------
Sequential           1.747047e-06 7.594118e-08 9.189465e-10 1.823907e-06  53.7%
Combinational        2.820557e-07 1.290999e-06 6.139062e-10 1.573669e-06  46.3%
Macro                0.000000e+00 0.000000e+00 0.000000e+00 0.000000e+00   0.0%
Pad                  0.000000e+00 0.000000e+00 0.000000e+00 0.000000e+00   0.0%
------------------------------------------------------------------------
Total                2.029103e-06 1.366941e-06 1.532853e-09 3.397576e-06 100.0%
                            59.7%        40.2%         0.0%
MEMWALL_POWER_END
"""

REPORT_TIMING = """MEMWALL_UNITS 9.999999960041972e-13 1.0000000036274937e-15
MEMWALL_OPCOND _c07ddd1a0f560000_p_OperatingConditions
MEMWALL_WORST -2.0841866427145916e-11
MEMWALL_TNS -4.5e-11
MEMWALL_PATH_BEGIN
Startpoint: r (rising edge-triggered flip-flop clocked by clk)
Endpoint: y (output port clocked by clk)
  44.483   44.483 ^ r/QN (DFFHQNx1_ASAP7_75t_R)
           -20.842   slack (VIOLATED)
MEMWALL_PATH_END
"""


def test_parse_reports():
    power = sta.parse_power("noise\n" + REPORT_POWER)
    assert power == {"internal": 2.029103e-06, "switching": 1.366941e-06,
                     "leakage": 1.532853e-09, "total": 3.397576e-06}
    timing = sta.parse_timing(REPORT_TIMING)
    assert timing["worst_slack_s"] == pytest.approx(-20.84e-12, rel=1e-3)
    assert timing["tns_s"] == pytest.approx(-45e-12)
    assert timing["path"].startswith("Startpoint: r")
    with pytest.raises(StaError):
        sta.parse_power("no report here")


def test_check_run_catches_the_traps():
    pdk = _pdk_or_skip("asap7")
    opensta2019.check_run(REPORT_TIMING, pdk)
    with pytest.raises(StaError, match="1000x"):
        opensta2019.check_run(REPORT_TIMING.replace("9.999999960041972e-13", "1e-09"), pdk)
    with pytest.raises(StaError, match="operating conditions"):
        opensta2019.check_run(REPORT_TIMING.replace("_c07ddd1a0f560000_p_OperatingConditions",
                                            "NULL"), pdk)


def test_liberty_reader_units_and_tables():
    groups = liberty.parse_liberty_text("""library (x) {
  time_unit : "1ps"; leakage_power_unit : "1pW"; capacitive_load_unit (1, ff);
  lu_table_template (t) { variable_1 : input_net_transition;
    variable_2 : total_output_net_capacitance; index_1 ("1, 2"); index_2 ("1, 3"); }
  cell (c) { pin (Y) { timing () { cell_rise (t) { values ("0, 2", "4, 6"); } } } }
}""")
    lib = groups[0]
    table = lib.find("cell")[0].find("pin")[0].find("timing")[0].find("cell_rise")[0]
    assert liberty.table_lookup(table, lib, slew=1.5, load=2.0) == pytest.approx(3.0)
    # Outside the grid: extrapolated.
    assert liberty.table_lookup(table, lib, slew=3.0, load=1.0) == pytest.approx(8.0)


# --------------------------------------------------------------------------------------------
# A whole (tiny) hierarchical run.

@pytest.mark.tool
@needs_sta
def test_run_sta_on_a_small_hierarchy(tmp_path):
    pdk = _pdk_or_skip("nangate45")
    synth = tmp_path / "synth"
    (synth / "netlist").mkdir(parents=True)
    for m in ("child", "parent"):   # what synthesis writes: Yosys' JSON of the netlist
        (synth / "netlist" / f"{m}.json").write_text(json.dumps(yosys_json(NETLIST)))
    manifest = {"top": "parent", "modules": ["child", "parent"],
                "hierarchy": {"parent": {"child": 1}, "child": {}},
                "instances": {"parent": 1, "child": 1}}
    default = hierarchical.run_sta(synth, manifest, pdk, 2.0, None, jobs=2)
    assert default["activity_source"].startswith("default")
    assert default["power_mw"]["total"] > 0
    # The real worst slack, signed: this netlist meets 2 ns easily, so it is positive.
    assert default["wns_ns"] == default["critical_path"]["slack_ns"] > 0
    assert default["critical_path"]["module"] in ("child", "parent")
    assert set(default["power_by_module"]) == {"child", "parent"}
    total = sum(m["total_mw"] for m in default["power_by_module"].values())
    # the modules' logic, plus the clock-tree estimate (memwall.flows.clock_tree; no memories)
    assert default["power_mw"]["clock_tree"] > 0
    assert default["power_mw"]["total"] == \
        pytest.approx(total + default["power_mw"]["clock_tree"])
    act = {"source": "vcd:test", "modules": {
        "parent": {"signals": {"x[0]": [0.2, 0.5], "x[1]": [0.2, 0.5], "odd.name": [0.2, 0.5],
                               "reg_q": [0.1, 0.5], "c": [0.1, 0.5]}},
        "child": {"signals": {"a[0]": [0.2, 0.5], "a[1]": [0.2, 0.5], "y": [0.1, 0.5]}}}}
    annotated = hierarchical.run_sta(synth, manifest, pdk, 2.0, act, jobs=2)
    assert annotated["activity_source"].startswith("vcd:test")
    assert annotated["annotated"]["registers"]["fraction"] == 1.0
    assert annotated["power_mw"]["total"] > 0
    json.dumps(annotated)   # the metrics are JSON
