"""Sign-off conditions (``memwall.flows.sta.SignOff``): every timing script carries the stated
margins in the library's time unit, fmax follows from the WNS, and the slow corner is read."""

from __future__ import annotations

import pytest

from memwall.flows.errors import PdkError
from memwall.flows.flat_sta import flat_tcl
from memwall.flows.flow import fmax_mhz
from memwall.flows.pdk import corners, find_pdk, pdk_cell_library
from memwall.flows.sta import DEFAULT_SIGNOFF, SignOff


def _pdk(name, corner="tt"):
    try:
        return find_pdk(name, corner=corner)
    except PdkError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name, unit", [("asap7", 1.0), ("sky130hd", 1000.0)])
def test_margins_are_in_the_library_time_unit(name, unit, tmp_path):
    pdk = _pdk(name)
    text = flat_tcl(pdk, 1.0, tmp_path / "x.v", "top", ["a"], ["y"], "clk",
                    SignOff(setup_margin_ps=40.0, hold_margin_ps=8.0))
    assert f"set_clock_uncertainty -setup {40.0 / unit:g} [all_clocks]" in text
    assert f"set_clock_uncertainty -hold {8.0 / unit:g} [all_clocks]" in text
    assert 'MEMWALL_HOLD [sta::worst_slack_cmd min]' in text


def test_default_signoff_is_stated():
    stated = DEFAULT_SIGNOFF.as_dict(_pdk("asap7"))
    assert (stated["setup_margin_ps"], stated["hold_margin_ps"], stated["corner"]) == \
        (50.0, 10.0, "tt")
    assert "no wire-load model" in stated["wires"] and "buffered" in stated["netlist"]


def test_fmax_from_wns():
    assert fmax_mhz(1.0, 0.0) == pytest.approx(1000.0)
    assert fmax_mhz(1.0, -0.25) == pytest.approx(800.0)
    assert fmax_mhz(1.0, 0.5) == pytest.approx(2000.0)
    assert fmax_mhz(1.0, None) is None


def test_asap7_slow_corner_is_slower():
    """The SS corner's cells (0.63 V, 100 C) are the same cells, slower."""
    assert corners("asap7") == ("tt", "ss") and corners("nangate45") == ("tt",)
    tt, ss = _pdk("asap7"), _pdk("asap7", "ss")
    assert ss.corner == "ss" and tt.cell_liberty != ss.cell_liberty
    from memwall.flows.sta import nominal_fo4_delay
    assert nominal_fo4_delay(ss) > 1.3 * nominal_fo4_delay(tt)
    assert set(pdk_cell_library(ss).libs[0].cell_names) == \
        set(pdk_cell_library(tt).libs[0].cell_names)
    with pytest.raises(PdkError, match="PDK nangate45 has no corner 'ss'; its corners: tt"):
        find_pdk("nangate45", corner="ss")
