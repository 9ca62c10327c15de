"""The ASAP7 wire-load model (:mod:`memwall.flows.wire_load`): its cited tables match their
source, it grows with fanout and block size, and OpenSTA and the flow's own load sums apply the
same wire to every net."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from memwall.flows.errors import PdkError
from memwall.flows.flow import with_wire_load
from memwall.flows.liberty import Liberty
from memwall.flows.pdk import find_pdk, pdk_cell_library
from memwall.flows.sta import prelude_tcl, run_tcl, wires_stated
from memwall.flows.wire_load import (
    NANGATE45_NAND2_AREA_UM2,
    NANGATE45_SLOPE_5K,
    NANGATE45_TABLES,
    block_growth,
    wire_load_for,
)


def _pdk(name):
    try:
        return find_pdk(name)
    except PdkError as exc:
        pytest.skip(str(exc))


def test_cited_tables_match_the_nangate45_liberty():
    pdk = _pdk("nangate45")
    lib = pdk_cell_library(pdk).libs[0]
    for gates, table in NANGATE45_TABLES.items():
        group = lib.library.find("wire_load", f"{gates // 1000}K_hvratio_1_1")[0]
        stated = tuple((int(float(f)), float(length))
                       for f, length in group.attrs["fanout_length"])
        assert stated == table
        if gates == 5000:
            assert float(group.attr("slope")) == NANGATE45_SLOPE_5K
    nand2 = Liberty(pdk.cell_liberty[0]).cell_area("NAND2_X1")
    assert nand2 == NANGATE45_NAND2_AREA_UM2


def test_length_grows_with_fanout_and_block():
    assert 0.05 < block_growth() < 0.5     # Rent-like: sub-linear in the block's side
    small = wire_load_for("asap7", 1e3, 0.08748)
    large = wire_load_for("asap7", 1e6, 0.08748)
    lengths = [small.length_um(f) for f in range(1, 40)]
    assert lengths == sorted(lengths) and small.length_um(0) == 0.0
    for f in (1, 3, 11, 30):
        assert large.length_um(f) > small.length_um(f)
        assert large.cap_f(f) == pytest.approx(large.length_um(f) * 0.173323e-15)
    ratio = (1e6 / 1e3) ** block_growth()
    assert large.length_um(5) / small.length_um(5) == pytest.approx(ratio)
    with pytest.raises(ValueError, match="no wire-load estimate for PDK sky130hd"):
        wire_load_for("sky130hd", 1e3, 1.0)


@pytest.mark.tool
def test_opensta_and_the_flow_apply_the_same_wire(tmp_path):
    """One inverter driving three: OpenSTA's net capacitance is the pins plus the model's
    wire at fanout 3, what :meth:`CellLibrary.wire_cap` adds in the flow's load sums."""
    pdk = _pdk("asap7")
    model = wire_load_for("asap7", 5e4, 0.08748).write(tmp_path / "wire_load.lib")
    wired = replace(pdk, wire_load=model)
    cells = pdk_cell_library(wired)
    assert cells.wire_cap(3) == pytest.approx(model.cap_f(3))
    assert pdk_cell_library(pdk).wire_cap(3) == 0.0        # ASAP7's Liberty has no model
    inv = "INVx1_ASAP7_75t_R"
    (tmp_path / "t.v").write_text(
        "module t (a, y0, y1, y2);\ninput a; output y0, y1, y2; wire n;\n"
        f"{inv} d (.A(a), .Y(n));\n"
        + "".join(f"{inv} s{i} (.A(n), .Y(y{i}));\n" for i in range(3)) + "endmodule\n")
    caps = {}
    for tag, which in (("bare", pdk), ("wired", wired)):
        script = prelude_tcl(which, [tmp_path / "t.v"], "t") + [
            "report_checks -unconstrained -from [get_ports a] -to [get_ports y0] "
            "-fields {cap} -digits 6"]
        out = run_tcl("\n".join(script) + "\n", tmp_path, tag)
        caps[tag] = float(re.search(r"^\s*(\S+)\s.* d/Y ", out, re.M).group(1))
    pins = 3 * cells.info(inv).inputs["A"] * 1e15
    assert caps["bare"] == pytest.approx(pins, rel=1e-3)
    assert caps["wired"] - caps["bare"] == pytest.approx(model.cap_f(3) * 1e15, rel=1e-3)
    assert wires_stated(wired)["model"] == model.name
    assert "no wire-load model" in wires_stated(pdk)


def test_flow_sizes_the_model_by_standard_cell_area(tmp_path):
    pdk = _pdk("asap7")
    area = {"area_um2": 1000.0, "macros": [{"total_um2": 400.0}]}
    wired = with_wire_load(pdk, area, tmp_path)
    assert wired.wire_load.gates == pytest.approx(600.0 / 0.08748)
    assert wired.wire_load.liberty_path == (tmp_path / "wire_load.lib").resolve()
    assert "library (memwall_wire_load)" in (tmp_path / "wire_load.lib").read_text()
    nangate = _pdk("nangate45")
    assert with_wire_load(nangate, area, tmp_path) is nangate     # its Liberty has its own
