"""Memory power (flows/memory_power.py): fakeram Liberty figures and the per-memory arithmetic,
checked by hand for a known access pattern; activity of the memory's pins from a module's run."""

from __future__ import annotations

import pytest

from memwall.flows import liberty, memory_power, rewrite
from memwall.flows.errors import PdkError
from memwall.flows.netlist import netlist_from_verilog
from memwall.flows.pdk import find_pdk, pdk_cell_library

# A fakeram-style macro in fJ (capacitive_load_unit ff, 1 V) and nW: 64 x 16, clock 1000 fJ on
# the rise and 800 on the fall, two conditional groups on ce_in (10 and 20 fJ: mean 15).
SYNTHETIC = """library(fake) {
  time_unit : "1ns"; voltage_unit : "1V"; leakage_power_unit : "1nW";
  capacitive_load_unit (1,ff);
  power_lut_template(t) { variable_1 : input_transition_time; index_1 ("0.01, 0.2"); }
  type (D) { base_type : array; data_type : bit; bit_width : 16; bit_from : 15; bit_to : 0; }
  type (A) { base_type : array; data_type : bit; bit_width : 6; bit_from : 5; bit_to : 0; }
  cell(fake64x16) {
    area : 10;
    pin(clk) { direction : input; clock : true;
      internal_power() { rise_power(t) { index_1 ("0.01, 0.2"); values ("1000, 1000"); }
                         fall_power(t) { index_1 ("0.01, 0.2"); values ("800, 800"); } } }
    pin(ce_in) { direction : input;
      internal_power() { when : "we_in"; rise_power(scalar) { values ("10"); }
                         fall_power(scalar) { values ("10"); } }
      internal_power() { when : "!we_in"; rise_power(scalar) { values ("20"); }
                         fall_power(scalar) { values ("20"); } } }
    pin(we_in) { direction : input;
      internal_power() { rise_power(scalar) { values ("6"); }
                         fall_power(scalar) { values ("4"); } } }
    bus(addr_in) { bus_type : A; direction : input;
      internal_power() { rise_power(scalar) { values ("5"); }
                         fall_power(scalar) { values ("5"); } } }
    bus(wd_in) { bus_type : D; direction : input;
      internal_power() { rise_power(scalar) { values ("4"); }
                         fall_power(scalar) { values ("4"); } } }
    bus(rd_out) { bus_type : D; direction : output; }
    cell_leakage_power : 50000;
  }
}
"""


def test_macro_model_from_a_liberty(tmp_path):
    path = tmp_path / "fake.lib"
    path.write_text(SYNTHETIC)
    assert memory_power.energy_unit_j(liberty.Liberty(path)) == pytest.approx(1e-15)
    m = memory_power.macro_model("fake64x16", 64, 16, path)
    assert m.clock_j == pytest.approx(1.8e-12)          # (1000 + 800) fJ per clocked cycle
    assert m.leakage_w == pytest.approx(50e-6)          # 50000 nW
    assert m.pin_j == pytest.approx({"ce_in": 15e-15, "we_in": 5e-15, "addr_in": 5e-15,
                                     "wd_in": 4e-15})


def test_two_port_memory_by_hand(tmp_path):
    """100 x 30 bits on 64 x 16 macros: 2 rows x 2 columns, 1R1W, 3 instances, 500 MHz."""
    path = tmp_path / "fake.lib"
    path.write_text(SYNTHETIC)
    m = memory_power.macro_model("fake64x16", 64, 16, path)
    # Nets (LSB first in the lists below; the cell's pins are MSB first): RD_EN net 1 (duty
    # 0.25, 0.3 toggles), WR_EN bits 0-15 on net 2 (duty 0.1) and 16-29 on net 3 (duty 0.4),
    # each 0.2 toggles; address bits 0.1 toggles each, write data 0.5 each.
    act = {1: (0.3, 0.25), 2: (0.2, 0.1), 3: (0.2, 0.4), "addr": (0.1, 0.5), "data": (0.5, 0.5)}
    pins_lsb = {"RD_EN": [1], "WR_EN": [2] * 16 + [3] * 14, "RD_ADDR": ["addr"] * 7,
                "WR_ADDR": ["addr"] * 7, "WR_DATA": ["data"] * 30, "RD_DATA": [9] * 30}
    cell_pins = {p: list(reversed(v)) for p, v in pins_lsb.items()}
    entry = {"depth": 100, "width": 30, "read_ports": 1, "write_ports": 1, "instances": 3}
    rec = memory_power.power_of_memory(entry, cell_pins, act.get, m, clock_period_ns=2.0,
                                       idle=0.05)
    e = 1.8e-12   # J per clocked macro-cycle
    # Per column one row accessed, the other row and the idle cycles at 5 %:
    read = 2 * e * (0.25 + 0.05 * (2 - 0.25))                       # both columns: RD_EN
    write = e * (0.1 + 0.05 * (2 - 0.1)) + e * (0.4 + 0.05 * (2 - 0.4))   # per column WR_EN
    assert rec["clock_mw"] == pytest.approx((read + write) * 500e6 * 1e3)
    pins = (7 * 0.1 * 5e-15 * 4 + 0.3 * 15e-15 * 4                  # read address, ce_in
            + 7 * 0.1 * 5e-15 * 4 + 0.2 * (15e-15 + 5e-15) * 4     # write address, ce/we
            + 30 * 0.5 * 4e-15 * 2)                                 # write data: one per row
    assert rec["pins_mw"] == pytest.approx(pins * 500e6 * 1e3)
    assert rec["leakage_mw"] == pytest.approx(4 * 50e-6 * 1e3)      # one 2 x 2 arrangement
    assert rec["accesses_per_cycle"] == {"read": 0.25, "write": 0.4}
    assert rec["total_mw"] == pytest.approx(3 * (rec["leakage_mw"] + rec["clock_mw"]
                                                 + rec["pins_mw"]))
    # fakeram's literal charge: every macro of both copies clocked every cycle.
    assert rec["every_cycle_mw"] == pytest.approx(2 * 4 * e * 500e6 * 1e3 + rec["pins_mw"]
                                                  + rec["leakage_mw"])
    assert "1R1W" in rec["method"]


@pytest.mark.tool
def test_asap7_fakeram_from_a_module_run():
    """The flow's path on ASAP7's fakeram7_64x21 (clk 1.345 pJ rise and fall, leakage 128.9 uW,
    0.013 pJ per input-pin transition): enables read from the module's power run."""
    try:
        pdk = find_pdk("asap7")
    except PdkError as exc:
        pytest.skip(str(exc))
    macro = next((m for m in pdk.macros if m.name == "fakeram7_64x21"), None)
    if macro is None:
        pytest.skip("no fakeram7_64x21 in this ASAP7 platform")
    cells = pdk_cell_library(pdk)
    netlist = netlist_from_verilog("""
module m(clk, en, we, a, d, q0, q1);
  input clk, en, we;
  input [5:0] a;
  input [20:0] d;
  output [20:0] q0, q1;
  wire one;
  TIEHIx1_ASAP7_75t_R t (.H(one));
  memwall_ram ram0 (.RD_CLK(clk), .RD_EN(en), .RD_ADDR(a), .RD_DATA(q0), .WR_CLK(clk),
                    .WR_EN(we), .WR_ADDR(a), .WR_DATA(d));
  memwall_ram ram1 (.RD_CLK(clk), .RD_EN(one), .RD_ADDR(a), .RD_DATA(q1), .WR_CLK(clk),
                    .WR_EN(we), .WR_ADDR(a), .WR_DATA(d));
endmodule
""")
    signals = {"en": (0.3, 0.25), "we": (0.2, 0.1),
               **{f"a[{i}]": (0.1, 0.5) for i in range(6)},
               **{f"d[{i}]": (0.4, 0.5) for i in range(21)}}
    run = rewrite.rewrite_module(netlist, None, cells, activity={"signals": signals})
    macros = [{"module": "m", "cell": f"ram{k}", "memory": f"ram{k}", "status": "mapped",
               "macro": "fakeram7_64x21", "macro_count": 1, "depth": 64, "width": 21,
               "read_ports": 1, "write_ports": 1, "instances": 1} for k in (0, 1)]
    total, out = memory_power.memory_power(macros, {"m": netlist}, {"m": run}, pdk, cells, 1.0)
    e, pin = 2.69, 0.013    # pJ; at 1 GHz, pJ per cycle = mW
    write = e * (0.1 + 0.05 * 0.9)
    pins = pin * (6 * 0.1 + 0.3 + 6 * 0.1 + 2 * 0.2 + 21 * 0.4)   # addr, ce, addr, ce+we, data
    r0, r1 = out[0]["power"], out[1]["power"]
    assert r0["accesses_per_cycle"] == {"read": 0.25, "write": 0.1}
    assert r1["accesses_per_cycle"] == {"read": 1.0, "write": 0.1}    # RD_EN tied high
    assert r0["clock_mw"] == pytest.approx(e * (0.25 + 0.05 * 0.75) + write)
    assert r1["clock_mw"] == pytest.approx(e + write)
    assert r0["pins_mw"] == pytest.approx(pins)
    assert r0["leakage_mw"] == pytest.approx(0.1289)
    assert "nets_at_default_activity" not in r0
    assert total == pytest.approx(r0["total_mw"] + r1["total_mw"])
