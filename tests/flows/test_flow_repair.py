"""``memwall.flows.repair``: buffer trees on nets past their driver's load limit, on hand-made
Yosys JSON modules (ASAP7 cells), and on a synthesised design.

A repaired net keeps its logic: every sink still reaches the original driver, through tree
buffers only; no net past the limit is left (unless it is a clock, a constant or has two
drivers); a module presents bounded loads at its inputs.
"""

from __future__ import annotations

import pytest

from memwall.flows.errors import PdkError
from memwall.flows.pdk import find_pdk, pdk_cell_library
from memwall.flows.repair import REPAIR_RULES, repair_design, repair_module

AO21, DFF, AND2 = "AO21x1_ASAP7_75t_R", "DFFHQNx1_ASAP7_75t_R", "AND2x2_ASAP7_75t_R"
TIEHI, BUF = "TIEHIx1_ASAP7_75t_R", REPAIR_RULES["asap7"].buffer[0]


@pytest.fixture(scope="module")
def cells():
    try:
        return pdk_cell_library(find_pdk("asap7"))
    except PdkError as exc:
        pytest.skip(str(exc))


class Json:
    """A Yosys JSON module under construction: nets are ints from 2 up."""

    def __init__(self):
        self.module = {"ports": {}, "cells": {}, "netnames": {}}
        self.next = 2

    def net(self) -> int:
        self.next += 1
        return self.next - 1

    def port(self, name: str, direction: str, width: int = 1) -> list[int]:
        bits = [self.net() for _ in range(width)]
        self.module["ports"][name] = {"direction": direction, "bits": bits}
        self.module["netnames"][name] = {"hide_name": 0, "bits": bits, "attributes": {}}
        return bits

    def cell(self, name: str, ctype: str, **pins) -> None:
        directions = {p: ("output" if p in ("Y", "QN", "H", "RD_DATA", "o") else "input")
                      for p in pins}
        self.module["cells"][name] = {
            "type": ctype, "port_directions": directions,
            "connections": {p: list(v) if isinstance(v, list) else [v] for p, v in pins.items()}}


def _driver_of(module: dict, net: int):
    for name, cell in module["cells"].items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "output" and net in bits:
                return name, cell
    return None, None


def _root(module: dict, net: int) -> tuple[str, int]:
    """The non-buffer driver a net traces back to through tree buffers, and the buffers."""
    depth = 0
    while True:
        name, cell = _driver_of(module, net)
        if cell is None or cell["type"] != BUF:
            return name, depth
        net, depth = cell["connections"]["A"][0], depth + 1


def _high_fanout(n=40):
    j = Json()
    (clk,), (a,), (b,), (c,) = (j.port(p, "input") for p in ("clk", "a", "b", "c"))
    y = j.net()
    j.cell("ao", AO21, A1=a, A2=b, B=c, Y=y)
    for i in range(n):
        j.cell(f"ff{i}", DFF, CLK=clk, D=y, QN=j.net())
    return j


def test_a_gate_driving_40_flops_gets_a_tree(cells):
    j = _high_fanout(40)
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells)
    rule = REPAIR_RULES["asap7"]
    assert result.buffers == 3 and result.nets_repaired == 1      # 40 sinks: groups of 16
    assert result.worst_before[0] > 1 and result.worst_after[0] <= 1
    for i in range(40):
        d = j.module["cells"][f"ff{i}"]["connections"]["D"][0]
        assert _root(j.module, d) == ("ao", 1)
    fanout: dict[int, int] = {}
    for cell in j.module["cells"].values():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"][pin] == "input":
                for b in bits:
                    fanout[b] = fanout.get(b, 0) + 1
    clk = j.module["ports"]["clk"]["bits"][0]
    assert fanout.pop(clk) == 40                 # the clock is left to its own tree
    assert max(fanout.values()) <= rule.max_fanout


def test_a_net_within_its_limits_is_left_alone(cells):
    j = _high_fanout(4)
    before = repr(j.module)
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells)
    assert result.buffers == 0 and repr(j.module) == before


def test_deep_trees_for_thousands_of_sinks(cells):
    j = _high_fanout(2000)
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells)
    depths = {_root(j.module, j.module["cells"][f"ff{i}"]["connections"]["D"][0])
              for i in range(2000)}
    assert depths == {("ao", 2)}                  # 2000 sinks -> 125 buffers -> 8 buffers
    assert result.buffers == 125 + 8 and result.worst_after[0] <= 1


def test_constants_are_not_buffered(cells):
    j = Json()
    clk, = j.port("clk", "input")
    one = j.net()
    j.cell("tie", TIEHI, H=one)
    for i in range(100):
        j.cell(f"ff{i}", DFF, CLK=clk, D=one, QN=j.net())
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells, ties=(TIEHI,))
    assert result.buffers == 0


def test_inputs_present_a_bounded_load_and_clocks_pass_up(cells):
    rule = REPAIR_RULES["asap7"]
    child = Json()
    (clk,), (en,) = child.port("clk", "input"), child.port("en", "input")
    for i in range(64):
        child.cell(f"g{i}", AND2, A=en, B=en, Y=child.net())
        child.cell(f"ff{i}", DFF, CLK=clk, D=en, QN=child.net())
    parent = Json()
    pclk, pen = parent.port("clk", "input")[0], parent.port("en", "input")[0]
    for i in range(24):
        parent.cell(f"u{i}", "child", clk=pclk, en=pen)
    repairs = repair_design({"child": child.module, "top": parent.module},
                            {"top": {"child": 24}}, rule, cells)
    # The child's 192 en pins behind a tree whose root buffer is all its input presents.
    buf_cap = cells.info(BUF).inputs["A"]
    assert repairs["child"].input_loads["en"] == [pytest.approx(buf_cap)]
    assert repairs["child"].clock_inputs == {"clk": {0}}
    # 24 of them are more than the parent's input port may drive: a tree there too.
    assert repairs["top"].worst_before[0] == pytest.approx(24 * buf_cap / rule.port_load(cells))
    assert repairs["top"].buffers == 2 and repairs["top"].worst_after[0] <= 1
    assert repairs["top"].input_loads["en"] == [pytest.approx(2 * buf_cap)]
    clk_users = [c for c in parent.module["cells"].values()
                 if c["connections"].get("clk") == [pclk]]
    assert len(clk_users) == 24                    # clock ports are not buffered


def test_memory_pins_count_their_macros(cells):
    """The reported case: one gate driving a memory enable that fans out to 25 macros."""
    j = Json()
    (a,), (b,), (c,) = (j.port(p, "input") for p in ("a", "b", "c"))
    y = j.net()
    j.cell("ao", AO21, A1=a, A2=b, B=c, Y=y)
    j.cell("ram", "memwall_ram", WR_EN=y, RD_DATA=j.net())
    alone = repair_module("m", j.module, REPAIR_RULES["asap7"], cells)
    assert alone.buffers == 0                      # a pin of no known capacitance
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells,
                           memory_caps={"ram": {"WR_EN[0]": 50 * 5e-15}})
    assert result.buffers == 1 and result.worst_before[0] > 5 and result.worst_after[0] <= 1
    # One pin past the tree buffer's limit: a stronger buffer, not a tree.
    assert j.module["cells"]["memwall_buf_0"]["type"] == "BUFx24_ASAP7_75t_R"


def test_a_weak_gate_driving_an_output_port_gets_a_root_buffer(cells):
    """The port keeps its net (its name): the gate moves to a new net and a buffer drives the
    port's; the port's load is within the buffer's limit."""
    rule = REPAIR_RULES["asap7"]
    j = Json()
    (a,), (b,) = j.port("a", "input"), j.port("b", "input")
    y, = j.port("y", "output")
    j.cell("g", "AOI21x1_ASAP7_75t_R", A1=a, A2=b, B=a, Y=y)
    limit = rule.load_fraction * cells.info("AOI21x1_ASAP7_75t_R").max_capacitance["Y"]
    assert rule.port_load(cells) > limit        # the case found on an FP32 multiplier's output
    result = repair_module("m", j.module, rule, cells)
    assert result.buffers == 1 and result.worst_after[0] <= 1
    assert j.module["ports"]["y"]["bits"] == [y]
    inner = j.module["cells"]["g"]["connections"]["Y"][0]
    assert inner != y and j.module["cells"]["memwall_buf_0"]["connections"] == \
        {"A": [inner], "Y": [y]}


def test_a_net_to_many_output_ports_ends(cells):
    """Ports cannot move to a tree: a net reaching 40 output bits (and a few pins) ends with
    what can be done, instead of stacking buffers without end."""
    j = Json()
    (a,), (b,), (c,) = (j.port(p, "input") for p in ("a", "b", "c"))
    y = j.net()
    j.cell("ao", AO21, A1=a, A2=b, B=c, Y=y)
    j.module["ports"]["out"] = {"direction": "output", "bits": [y] * 40}
    j.cell("ff", DFF, CLK=a, D=y, QN=j.net())
    result = repair_module("m", j.module, REPAIR_RULES["asap7"], cells)
    assert result.buffers <= 2


SKY = "sky130_fd_sc_hd__"


@pytest.fixture(scope="module")
def sky130():
    try:
        return pdk_cell_library(find_pdk("sky130hd"))
    except PdkError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("dont_use, chosen", [((), "a2111oi_1"), ((f"{SKY}a2111oi_1",),
                                                                     "a2111oi_2")])
def test_a_gate_too_weak_for_one_buffer_is_sized_up(sky130, dont_use, chosen):
    """sky130's a2111oi_0 may load 5.3 fF, less than one buf_8 input (7.0 fF): buffering alone
    left it past its limit (the case found on a BF16 adder). It becomes the weakest drive
    strength that can drive the tree (not one the PDK marks dont_use), and its input ports
    present the new gate's pin loads."""
    rule = REPAIR_RULES["sky130hd"]
    weak = f"{SKY}a2111oi_0"
    assert rule.load_fraction * sky130.info(weak).max_capacitance["Y"] < \
        sky130.info(rule.buffer[0]).inputs["A"]
    j = Json()
    ins = {p: j.port(p.lower(), "input")[0] for p in ("A1", "A2", "B1", "C1", "D1")}
    y = j.net()
    j.cell("g", weak, Y=y, **ins)
    for i in range(40):
        j.cell(f"inv{i}", f"{SKY}inv_1", A=y, Y=j.net())
    result = repair_module("m", j.module, rule, sky130, dont_use=dont_use)
    assert result.resized == 1 and j.module["cells"]["g"]["type"] == SKY + chosen
    assert result.buffers >= 3 and result.worst_after[0] <= 1
    assert result.input_loads["a1"] == [sky130.info(SKY + chosen).inputs["A1"]]
    assert sky130.drive_variants(weak) == [f"{SKY}a2111oi_{n}" for n in (0, 1, 2, 4)]


def test_a_gate_within_its_limit_keeps_its_size(sky130):
    j = Json()
    (a,), (b,) = j.port("a", "input"), j.port("b", "input")
    y = j.net()
    j.cell("g", f"{SKY}nand2_1", A=a, B=b, Y=y)
    j.cell("inv", f"{SKY}inv_1", A=y, Y=j.net())
    result = repair_module("m", j.module, REPAIR_RULES["sky130hd"], sky130)
    assert result.resized == 0 and j.module["cells"]["g"]["type"] == f"{SKY}nand2_1"
