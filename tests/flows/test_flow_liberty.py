"""``memwall.flows.liberty``: the one Liberty reader (tokenizer, brace walker, cells, units)."""

from __future__ import annotations

import pytest

from memwall.flows import liberty
from memwall.flows.errors import LibertyError

LIB = """/* a tiny library */
library (tiny) {
  time_unit : "1ps";
  leakage_power_unit : "1pW";
  capacitive_load_unit (1, ff);
  default_wire_load : "w";
  wire_load ("w") {
    capacitance : 2;
    slope : 5;
    fanout_length (1, 1);
    fanout_length (3, 2);
  }
  type (b2) { base_type : array; bit_from : 1; bit_to : 0; }
  cell (inv) {
    area : 1.5;
    pin (A) { direction : input; capacitance : 2; }
    pin (Y) {
      direction : output;
      function : "!A";
      timing () { related_pin : "A"; cell_rise (scalar) { values ("7"); } }
    }
  }
  cell (dff) {
    area : 4;
    ff (IQ, IQN) { next_state : "!D"; clocked_on : "CK"; }
    pin (CK) { direction : input; clock : true; capacitance : 1; }
    pin (D) { direction : input; capacitance : 1; }
    pin (QN) { direction : output; function : "IQN"; }
    bus (S) { bus_type : b2; direction : input; capacitance : 3; }
  }
}
"""


@pytest.fixture
def lib(tmp_path):
    path = tmp_path / "tiny.lib"
    path.write_text(LIB)
    return liberty.Liberty(path)


def test_header_units_and_wire_load(lib):
    assert lib.name == "tiny" and lib.cell_names == ["inv", "dff"]
    assert lib.time_s == pytest.approx(1e-12) and lib.leakage_w == pytest.approx(1e-12)
    assert lib.cap_f == pytest.approx(1e-15)
    assert lib.wire_cap(2) == pytest.approx(1.5 * 2 * 1e-15)    # interpolated length
    assert lib.wire_cap(5) == pytest.approx((2 + 2 * 5) * 2 * 1e-15)   # slope past the table
    assert lib.cell_area() == 1.5 and lib.cell_area("dff") == 4.0
    # Header and body put back together are the library (what pdk.py merges).
    assert lib.header_text + lib.body_text + "}\n" == LIB
    assert lib.body_text.lstrip().startswith("cell (inv)")


def test_cells_are_parsed_on_demand(lib):
    start, end = lib.cell_span("inv")
    assert lib.text[start:end].strip().startswith("cell (inv)") and lib.text[end - 1] == "}"
    timing = lib.cell("inv").find("pin", "Y")[0].find("timing")[0]
    assert liberty.table_lookup(timing.find("cell_rise")[0], lib.library, slew=0, load=0) == 7
    info = liberty.cell_info(lib.cell("dff"), lib)
    assert info.is_sequential and info.data_pin == "D" and info.data_inverted
    assert info.state_vars == ("IQ", "IQN") and info.clock_pins == ("CK",)
    assert set(info.inputs) == {"CK", "D", "S[0]", "S[1]"}   # bus bits from its type
    assert info.inputs["S[1]"] == pytest.approx(3e-15)


def test_strip_groups_and_group_spans(lib):
    stripped = liberty.strip_groups(LIB, ("timing", "ff"))
    assert "cell_rise" not in stripped and "next_state" not in stripped
    assert stripped.count("{") == stripped.count("}")
    kinds = [k for k, *_ in liberty.group_spans(LIB)]
    assert kinds[:3] == ["library", "wire_load", "type"] and kinds.count("cell") == 2
    with pytest.raises(LibertyError):
        liberty.group_end("cell (x) { pin (a) {", 0)


def test_boolean_functions():
    tree = liberty.parse_bool("!(A * B) + C' ^ D")
    env = {"A": True, "B": True, "C": True, "D": True}
    # !(A B) + (!C ^ D): 0 + (0 ^ 1) = 1
    assert liberty.eval_bool(tree, env) is True
    assert liberty.eval_bool(liberty.parse_bool("A B"), {"A": True, "B": False}) is False
