"""``memwall.flows.netlist``: gate netlists from Yosys' ``write_json``."""

from __future__ import annotations

import pytest

from memwall.flows import netlist
from memwall.flows.errors import NetlistError

# A hand-made write_json result: a ranged port with an offset, an MSB-first (upto) wire, a
# constant, an alias (two names on one bit), a hidden Yosys name and a black box.
JSON = {
    "modules": {
        "leaf": {"attributes": {"blackbox": "00000000000000000000000000000001"},
                 "ports": {"a": {"direction": "input", "bits": [2]}},
                 "cells": {}, "netnames": {}},
        "top": {
            "ports": {"clk": {"direction": "input", "bits": [2]},
                      "d": {"direction": "input", "bits": [3, 4, 5], "offset": 4},
                      "q": {"direction": "output", "bits": [6, "0"]}},
            "cells": {
                "$abc$12$auto$34": {"hide_name": 1, "type": "INV", "connections":
                                    {"A": [3], "Y": [7]}},
                "u": {"hide_name": 0, "type": "leaf", "connections": {"a": [7], "b": ["z"]}},
                "r": {"hide_name": 0, "type": "DFF", "connections":
                      {"CK": [2], "D": [7], "Q": [6], "QN": []}},
            },
            "netnames": {
                "clk": {"hide_name": 0, "bits": [2]},
                "d": {"hide_name": 0, "bits": [3, 4, 5], "offset": 4},
                "q": {"hide_name": 0, "bits": [6, "0"]},
                "w": {"hide_name": 0, "bits": [7, 6], "upto": 1},
                "$abc$12$new_n7": {"hide_name": 1, "bits": [7]},
                "n_inv": {"hide_name": 0, "bits": [7]},
            },
        },
    },
}


def test_netlist_from_json_bits_ranges_and_names():
    top = netlist.netlist_from_json(JSON)            # the only module that is no black box
    assert top.name == "top"
    assert top.ports == [("clk", "input", None), ("d", "input", (6, 4)), ("q", "output", (1, 0))]
    assert top.port_bits["d"] == [5, 4, 3] and top.port_indices("d") == [6, 5, 4]
    assert top.port_bits["q"] == ["0", 6]           # MSB first: q[1] is tied to 0
    # Names of one net: readable ones first, Yosys' hidden ones last. Wire w is [0:1] (upto):
    # its first JSON bit is its rightmost, w[1].
    assert top.net_names[7] == ["w[1]", "n_inv", "$abc$12$new_n7"]
    assert top.net_names[3] == ["d[4]"] and "w[0]" in top.net_names[6]
    cells = {c.name: c for c in top.cells}
    assert cells["u"].pins == {"a": [7], "b": ["x"]}   # z reads as x
    assert cells["r"].pins["QN"] == [] and cells["$abc$12$auto$34"].type == "INV"
    with pytest.raises(NetlistError, match="no module"):
        netlist.netlist_from_json(JSON, "nothing")


def test_read_netlist(tmp_path):
    import json

    path = tmp_path / "top.json"
    path.write_text(json.dumps(JSON))
    assert netlist.read_netlist(path, "top").cells[0].type == "INV"
    with pytest.raises(NetlistError, match="no netlist"):
        netlist.read_netlist(tmp_path / "missing.json", "top")


@pytest.mark.tool
def test_verilog_through_yosys_merges_assigned_nets():
    text = """
module m(a, y, z);
  input [1:0] a;
  output y;
  output [1:0] z;
  wire t;
  INV i (.A(a[0]), .Y(t));
  assign y = t;
  assign z = {1'b1, a[1]};
endmodule
"""
    m = netlist.netlist_from_verilog(text)
    (inv,) = m.cells
    assert inv.pins["Y"] == m.port_bits["y"] and {"t", "y"} <= set(m.net_names[inv.pins["Y"][0]])
    assert m.port_bits["z"] == ["1", m.port_bits["a"][0]]
    with pytest.raises(NetlistError):
        netlist.netlist_from_verilog("module broken(; endmodule")
