"""memwall report: tables, Table IV comparison, fits and plots from metrics.json files."""

import csv
import hashlib
import json

import pytest

from memwall.families.dplena.area_power import PAPER_TABLE_IV
from memwall.flows.provenance import flow_version
from memwall.flows.report import collect, linear_fit, unit_group
from memwall.flows.report import write_report as _write_report


def current(config):
    """The design "the checkout generates" for a config here: a stand-in for
    memwall.flows.provenance.current_design, which would elaborate the real config."""
    return {key: hashlib.sha256(f"{key} {config}".encode()).hexdigest()
            for key in ("rtl_sha256", "config_sha256")}


def provenance_of(config, **changes):
    """A provenance record of a row made from this checkout's design and flow."""
    return {"commit": "c0ffee" + "0" * 34, "dirty": False, **current(config),
            "flow_version": flow_version(), **changes}


def write_report(build, out, **options):
    return _write_report(build, out, current=current, **options)


def _metrics(config, pdk, vlen, unit="dplena", wns_ns=0.05):
    vector = 1400.0 * vlen            # um^2: exactly linear in VLEN
    scalar = 700.0
    return {
        "config": config, "unit": unit, "pdk": pdk, "clock_mhz": 1000,
        "parameters": {"vlen": vlen} if unit == "dplena" else {},
        "area_um2": vector + scalar, "cells": 10 * vlen, "wns_ns": wns_ns,
        "tns_ns": min(0.0, wns_ns),
        "area_by_unit": {f"elementwise_unit_vlen{vlen}": {"area_um2": vector / 2},
                         f"reduction_unit_vlen{vlen}": {"area_um2": vector / 2},
                         "scalar_fp_unit_lanes1": {"area_um2": scalar}},
        "power_mw": {"internal": 0.4 * vlen, "switching": 0.3 * vlen, "leakage": 0.01,
                     "total": 0.7 * vlen + 0.01},
        "power_by_unit": {f"elementwise_unit_vlen{vlen}": {"power_mw": 0.3 * vlen},
                          f"reduction_unit_vlen{vlen}": {"power_mw": 0.2 * vlen},
                          "scalar_fp_unit_lanes1": {"power_mw": 0.01}},
        "activity_source": "vcd", "command": f"make synth CONFIG={config} PDK={pdk}",
        "provenance": provenance_of(config),
    }


@pytest.fixture
def build(tmp_path):
    for vlen in (512, 1024, 2048):
        out = tmp_path / "build" / f"dplena{vlen}" / "synth" / "asap7"
        out.mkdir(parents=True)
        (out / "metrics.json").write_text(json.dumps(_metrics(f"dplena{vlen}", "asap7", vlen)))
    out = tmp_path / "build" / "shield_small" / "synth" / "asap7"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps(_metrics("shield_small", "asap7", 0, "shield")))
    return tmp_path / "build"


def test_linear_fit_exact_and_noisy():
    a, b, r2 = linear_fit([1, 2, 3], [3, 5, 7])
    assert (round(a, 9), round(b, 9), round(r2, 9)) == (2, 1, 1)
    assert linear_fit([1, 2, 3, 4], [1, 3, 2, 4])[2] < 0.9


def test_unit_groups():
    assert unit_group("reduction_unit_vlen512", "dplena") == "vector"
    assert unit_group("elementwise_unit_vlen512", "dplena") == "vector"
    assert unit_group("sequencer_fe6f00fd", "dplena") == "scalar"
    assert unit_group("vector_sram_bank_lanes64_rows64", "dplena") == "vector SRAM"
    assert unit_group("mx_dequantiser_beatbytes64_rowbits6_vlen512", "dplena") == "dequantiser"
    assert unit_group("shield_controller", "dplena") == "other"
    assert unit_group("shield_controller", "shield") == "controller"


def test_report_tables_and_plots(build, tmp_path):
    out = tmp_path / "reports"
    md = write_report(build, out).read_text()
    rows = list(csv.DictReader((out / "area_power.csv").open()))
    assert [r["config"] for r in rows] == ["dplena512", "dplena1024", "dplena2048",
                                           "shield_small"]
    assert "Table IV" in md
    for vlen, (paper_area, paper_power) in PAPER_TABLE_IV.items():
        ours = 1400.0 * vlen / 1e6
        assert f"| {vlen} | 1000 | {ours:.3f} | {paper_area:.3f} | {ours / paper_area:.2f} | " \
               f"1400 | {paper_area * 1e6 / vlen:.0f} |" in md
        assert f"{paper_power:.1f}" in md
    assert "1400.0 µm²/lane" in md and "| 1.00000 |" in md   # exact linear data: R^2 = 1
    for png in ("dplena/area_vs_vlen.png", "dplena/power_vs_vlen.png",
                "dplena/area_by_unit.png"):
        assert (out / png).stat().st_size > 1000
        assert f"]({png})" in md
    assert len(collect(build)) == 4


def test_fmax_and_table_ii_at_the_achieved_clock(build, tmp_path):
    """fmax = 1 / (period - WNS); Table II runs at the clock, or at fmax where timing fails."""
    from memwall.config import load_config
    from memwall.families.dplena.report import TABLE_II, _run

    path = build / "dplena1024" / "synth" / "asap7" / "metrics.json"
    path.write_text(json.dumps(_metrics("dplena1024", "asap7", 1024, wns_ns=-0.25)))
    md = write_report(build, tmp_path / "reports").read_text()
    rows = {r["config"]: r for r in csv.DictReader((tmp_path / "reports" /
                                                    "area_power.csv").open())}
    assert float(rows["dplena512"]["fmax_mhz"]) == pytest.approx(1000 / 0.95, abs=0.1)
    assert float(rows["dplena1024"]["fmax_mhz"]) == pytest.approx(800.0)
    for config, clock, met in (("dplena512", 1000.0, "met"), ("dplena1024", 800.0, "fmax")):
        w = TABLE_II
        cycles = _run(load_config(config), w["B"], w["L"], w["V"], w["T"])["cycles"]
        assert f"| {config} | asap7 | {clock:.0f} | {met} | {cycles:,} | " \
               f"{cycles / clock:,.0f} |" in md
    # vector logic power (the two vector modules), per lane
    assert "| 512 | 1000 | 0.717 | 0.731 | 0.98 | 1400 | 1428 | 256.0 | 0.500 |" in md


def test_area_by_group_from_the_families(build, tmp_path):
    md = write_report(build, tmp_path / "reports").read_text()
    assert "| dplena512 | asap7 | other 700, vector 716800 |" in md


def test_no_paper_comparison_at_failing_timing(build, tmp_path):
    path = build / "dplena1024" / "synth" / "asap7" / "metrics.json"
    path.write_text(json.dumps(_metrics("dplena1024", "asap7", 1024, wns_ns=-0.2)))
    md = write_report(build, tmp_path / "reports").read_text()
    assert "| 512 | 1000 | 0.717 |" in md and "| 1024 | 1000 | 1.434 |" not in md
    assert "dplena1024 (WNS -0.200 ns at 1000 MHz)" in md and "only at met timing" in md


def test_report_of_one_family(build, tmp_path):
    out = tmp_path / "reports"
    md = write_report(build, out, units=["shield"]).read_text()
    assert "shield_small" in md and "dplena512" not in md and "Table IV" not in md


def test_report_without_metrics_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="make synth"):
        write_report(tmp_path / "empty", tmp_path / "reports")


def test_table_iv_per_block_counts_vector_instances_only():
    """Per-lane blocks come from the vector units' own instances: the scalar unit's exp (the
    same module) is left out, children are their own blocks, and flops are within them."""
    from memwall.families.dplena.area_power import _table_iv_blocks, lane_blocks

    vlen = 512
    row = _metrics("dplena512", "asap7", vlen, wns_ns=-0.1)
    row["hierarchy"] = {
        "dplena_core": {"reduction_unit_vlen512": 1, "scalar_fp_unit_lanes1": 1},
        "reduction_unit_vlen512": {"fp_add_fmtfp32_stages2": vlen, "bf16_exp_x": vlen,
                                   "reduction_node_x": vlen - 1},
        "scalar_fp_unit_lanes1": {"bf16_exp_x": 1},
        "fp_add_fmtfp32_stages2": {}, "bf16_exp_x": {}, "reduction_node_x": {}}
    row["area_by_module"] = {
        "reduction_unit_vlen512": {"own_um2": 1000.0, "sequential_um2": 100.0},
        "fp_add_fmtfp32_stages2": {"own_um2": 200.0, "sequential_um2": 50.0},
        "bf16_exp_x": {"own_um2": 80.0, "sequential_um2": 10.0},
        "reduction_node_x": {"own_um2": 30.0, "sequential_um2": 20.0},
        "scalar_fp_unit_lanes1": {"own_um2": 500.0}}
    row["power_by_module"] = {m: {"per_instance_mw": {"total": 0.01}}
                              for m in row["area_by_module"]}
    blocks = lane_blocks(row)
    assert blocks["FP32 add"]["area_um2"] == pytest.approx(200.0)
    assert blocks["exp"]["area_um2"] == pytest.approx(80.0)          # not 80 x 513 / 512
    assert blocks["tree node (compare-select, registers)"]["area_um2"] == \
        pytest.approx(30.0 * (vlen - 1) / vlen)
    assert blocks["other logic"]["area_um2"] == pytest.approx(1000.0 / vlen)
    assert blocks["flops (within the above)"]["area_um2"] == \
        pytest.approx((100.0 + 50.0 * vlen + 10.0 * vlen + 20.0 * (vlen - 1)) / vlen)
    assert blocks["exp"]["power_mw"] == pytest.approx(0.01)
    md = _table_iv_blocks([row])
    assert "not compared: WNS -0.100 ns at 1000 MHz" in md and "1428 µm²" not in md
    row["wns_ns"] = 0.01
    assert "1428 µm², 0.746 mW" in _table_iv_blocks([row])


def test_signoff_table_needs_both_wns_and_prints_each_corner():
    from memwall.flows.report import _signoff_section, timing_met

    row = _metrics("dplena64", "asap7", 64, wns_ns=0.004)
    row.update(signoff={"setup_margin_ps": 50.0, "hold_margin_ps": 10.0,
                        "wires": {"model": "memwall_asap7_5g", "block_gates": 5000}},
               flat_wns_ns=-0.002, flat_hold_wns_ns=0.015,
               flat_by_corner={"tt": {"fmax_mhz": 998.0}, "ss": {"fmax_mhz": 650.4}})
    md = _signoff_section([row])
    assert "| dplena64 | asap7 | 1000 | 50.0 / 10.0 | memwall_asap7_5g (5,000 NAND2 eq.) | " \
           "0.004 | -0.002 | +6.0 | 0.015 | 1004 | 998 | 650 | no |" in md
    assert not timing_met(row)               # hierarchical met, flat not: not met
    row["flat_wns_ns"] = 0.001
    assert timing_met(row) and md.count("| no |") == 1


def test_fmax_only_for_internal_worst_paths(build, tmp_path):
    """A worst path through a top-level port has its slack set by the assumed I/O delay (a
    share of the period): its fmax is named I/O-limited, not given; a path across a child's
    boundary (timed from the design around it) or between registers keeps its number."""
    from memwall.flows.report import _corner_fmax_cell, _signoff_section, worst_path

    path = build / "shield_small" / "synth" / "asap7" / "metrics.json"
    row = json.loads(path.read_text())
    row.update(clock_mhz=1, wns_ns=599.8, hierarchy={"top": {"child": 1}, "child": {}},
               critical_path={"module": "top", "slack_ns": 599.8,
                              "startpoint": "req (input port clocked by clk)",
                              "endpoint": "state$reg[2] (rising edge-triggered flip-flop "
                                          "clocked by clk)"},
               flat_by_corner={"tt": {"fmax_mhz": 2.5, "critical_path":
                                      "req (input port clocked by clk) -> q (output port "
                                      "clocked by clk)"}})
    path.write_text(json.dumps(row))
    assert worst_path(row) == "top-level I/O"
    md = write_report(build, tmp_path / "reports").read_text()
    rows = {r["config"]: r for r in csv.DictReader((tmp_path / "reports" /
                                                    "area_power.csv").open())}
    assert rows["shield_small"]["fmax_mhz"] == "" and \
        rows["shield_small"]["worst_path"] == "top-level I/O"
    assert "| shield_small | asap7 | 1 | I/O-limited |" in md
    assert "| I/O-limited | I/O-limited |" in _signoff_section([row])
    # A child's boundary: the flat run's worst path decides (here it reaches a top port) ...
    row["critical_path"]["module"] = "child"
    assert worst_path(row) == "top-level I/O"
    # ... and without a flat run, or with an internal flat path, it counts as internal.
    row["flat_by_corner"] = {}
    assert worst_path(row) == "internal" and "| 2 |" in _signoff_section([row])
    assert _corner_fmax_cell({"fmax_mhz": 998.0, "critical_path":
                              "a$reg (rising edge-triggered flip-flop clocked by clk) -> "
                              "b$reg (rising edge-triggered flip-flop clocked by clk)"}) == "998"
