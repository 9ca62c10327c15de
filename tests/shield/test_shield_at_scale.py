"""SHIELD at scale: the controller's cost against the refresh power it saves
(``memwall/families/shield/controller_cost.py``), the power workloads of large workspaces, and
the RTL structure that keeps a 4096-row controller cheap to generate (the row decoder)."""

import dataclasses
import gc
import json
import warnings
from contextlib import contextmanager

import pytest
from amaranth.hdl import UnusedElaboratable

from memwall.config import config_from_dict, load_config
from memwall.families.shield import controller_cost as cc
from memwall.families.shield.workloads import (
    POWER_SIM_WORDS,
    POWER_WINDOW_WORDS,
    layer_loop_trace,
    power_scale,
    power_workloads,
)
from memwall.golden.shield import refresh as s
from memwall.golden.shield.trace import load_trace
from memwall.hdl.common.netlist import Design
from memwall.hdl.shield.controller import TOP_NAME, build_top

ACTIVITY = ("cocotb power workload (shield_controller; Verilator VCD): VCD toggle rates and "
            "static probabilities on input ports")


@contextmanager
def _unelaborated():
    """Components built only to be looked at (workloads, a refused decoder) are never
    elaborated; their warning says nothing here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        yield
        gc.collect()


def _metrics(cfg, *, wns_ns: float, power_mw: float, area_um2: float = 104.1,
             pdk: str = "asap7") -> dict:
    """A ``metrics.json`` row as ``memwall synth`` writes it (the fields the report reads);
    ``parameters`` is the config, as the flow copies it from the manifest."""
    return {"config": cfg.name, "unit": "shield", "pdk": pdk, "clock_mhz": cfg.clock_mhz,
            "parameters": {**dataclasses.asdict(cfg), "unit": "shield"},
            "area_um2": area_um2, "cells": 838, "wns_ns": wns_ns, "tns_ns": min(0.0, wns_ns),
            "power_mw": {"internal": 0.6 * power_mw, "switching": 0.3 * power_mw,
                         "leakage": 0.1 * power_mw, "total": power_mw},
            "activity_source": ACTIVITY, "command": f"make synth CONFIG={cfg.name} PDK={pdk}"}


def _by_hand(cfg) -> dict[str, tuple[float, float]]:
    """(baseline, SHIELD) refresh power in mW of the layer loop, per model, from the counts and
    the paper's equations written out here rather than taken from the report code."""
    r = s.model_trace(cfg, layer_loop_trace(cfg, cc.LAYERS))
    w, total = cfg.word_bits, cfg.kv_words + cfg.qo_words
    row_nj = {"standard": cfg.e_ref_cycle_nj * cfg.hi_bits / w * cfg.row_words / total,
              "relaxed": cfg.e_ref_cycle_nj * cfg.lo_bits / w * cfg.row_words / total}
    counts = r["refresh_counts"]
    shield_trace = sum(counts[b] * row_nj[b] for b in row_nj) / r["duration_us"]
    base_trace = (r["baseline_refreshes"] * cfg.e_ref_cycle_nj * cfg.row_words / total
                  / r["duration_us"])
    f = r["kv_fraction"]
    base_eq4 = cfg.e_ref_cycle_nj / cfg.t_std_us
    shield_eq = (cfg.hi_bits / w * cfg.e_ref_cycle_nj / cfg.t_std_us
                 + cfg.lo_bits / w * f * cfg.e_ref_cycle_nj / cfg.t_rel_us)
    return {"trace": (base_trace, shield_trace), "eq5-8": (base_eq4, shield_eq)}


@pytest.mark.parametrize("name", ["shield_small", "shield_2mb"])
def test_refresh_saving_is_the_model(name):
    cfg = load_config(name)
    saving = cc.refresh_saving(cfg)
    for model, (base, shield) in _by_hand(cfg).items():
        got = saving[model]
        assert got["baseline_refresh_mw"] == pytest.approx(base, rel=1e-12), model
        assert got["shield_refresh_mw"] == pytest.approx(shield, rel=1e-12), model
        assert got["saved_mw"] == pytest.approx(base - shield, rel=1e-12), model
        assert 0 < got["saved_mw"] < base
    # The trace's baseline is Eq. 4's E/T_std up to the refreshes its ends cut off.
    assert saving["trace"]["baseline_refresh_mw"] == pytest.approx(
        saving["eq5-8"]["baseline_refresh_mw"], rel=0.02)


def test_net_saving_arithmetic():
    cfg = load_config("shield_small")
    hand = _by_hand(cfg)
    for controller_mw in (0.0, 3.0e-5, 3.19e-4):
        compared, missed = cc.cost_rows([_metrics(cfg, wns_ns=599.8, power_mw=controller_mw)])
        assert missed == []
        assert [r["model"] for r in compared] == ["trace", "eq5-8"]
        for r in compared:
            base, shield = hand[r["model"]]
            net = (base - shield) - controller_mw
            assert r["controller_mw"] == controller_mw and r["area_um2"] == 104.1
            assert r["net_mw"] == pytest.approx(net, rel=1e-12, abs=1e-18)
            assert r["net_of_baseline"] == pytest.approx(net / base, rel=1e-12, abs=1e-15)
            assert (r["net_mw"] > 0) == (controller_mw < base - shield)


def test_report_section_table(tmp_path):
    cfg = load_config("shield_small")
    controller_mw = 3.19e-4
    text, files = cc.report_section([_metrics(cfg, wns_ns=599.8, power_mw=controller_mw)], tmp_path)
    assert files == []
    rows = [line for line in text.splitlines() if line.startswith("| shield_small |")]
    assert len(rows) == 2
    for line, (model, (base, shield)) in zip(rows, _by_hand(cfg).items(), strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        net = base - shield - controller_mw
        assert cells[9] == f"`{model}`"
        assert float(cells[5]) == pytest.approx(controller_mw, rel=1e-3)
        assert float(cells[6]) == pytest.approx(controller_mw, rel=1e-3)   # no gating estimate
        assert float(cells[14]) == pytest.approx(net, rel=1e-3)
        assert cells[15] == f"{100 * net / base:.1f} %"
        assert cells[7] == ACTIVITY.split(":")[0]
    assert "Workload:" in text and "8 layers" in text


def test_the_net_saving_is_charged_the_clock_gated_power():
    cfg = load_config("shield_small")
    row = {**_metrics(cfg, wns_ns=599.8, power_mw=3.0e-4),
           "clock_gating": {"gated_total_mw": 1.0e-4}}
    compared, _ = cc.cost_rows([row])
    for r in compared:
        assert (r["controller_ungated_mw"], r["controller_mw"]) == (3.0e-4, 1.0e-4)
        assert r["net_mw"] == pytest.approx(r["saved_mw"] - 1.0e-4, rel=1e-12)


def test_unmet_timing_is_not_compared(tmp_path):
    cfg = load_config("shield_small")
    compared, missed = cc.cost_rows([_metrics(cfg, wns_ns=-0.1, power_mw=1e-4)])
    assert compared == [] and len(missed) == 1
    text, _ = cc.report_section([_metrics(cfg, wns_ns=-0.1, power_mw=1e-4)], tmp_path)
    assert "Not compared" in text and "WNS -0.100 ns at 1 MHz" in text
    assert "| shield_small |" not in text
    # the same figures as numbers, for reports/paper_vs_ours.md
    signoff = json.loads((tmp_path / "signoff.json").read_text())
    assert signoff["compared"] == [] and signoff["missed"][0]["wns_ns"] == -0.1


def test_calibrations_share_the_hardware():
    big = load_config("shield_2mb")
    assert [c.name for c in cc.calibrations(big)] == ["shield_2mb", "shield_2mb_eta35"]
    assert [c.name for c in cc.calibrations(load_config("shield_small"))] == ["shield_small"]
    compared, _ = cc.cost_rows([_metrics(big, wns_ns=0.2, power_mw=6.0, area_um2=3321.0)])
    assert [(r["calibration"], r["model"]) for r in compared] == [
        ("shield_2mb", "trace"), ("shield_2mb", "eq5-8"),
        ("shield_2mb_eta35", "trace"), ("shield_2mb_eta35", "eq5-8")]
    eta35 = load_config("shield_2mb_eta35")
    assert compared[2]["baseline_refresh_mw"] == pytest.approx(_by_hand(eta35)["trace"][0])
    # A config that differs in hardware is not a calibration of this controller.
    other = config_from_dict({"unit": "shield", "kv_words": big.kv_words,
                              "qo_words": big.qo_words, "row_words": 512}, "test", "other")
    assert [c.name for c in cc.calibrations(other)] == ["other"]


def test_power_workloads_run_the_synthesised_top():
    small, big = load_config("shield_small"), load_config("shield_2mb")
    with _unelaborated():
        (w,) = power_workloads(small)
        assert small.total_words <= POWER_SIM_WORDS
        assert (w.name, w.testcase) == (TOP_NAME, "random_workload")
        (w,) = power_workloads(big)
        assert (w.name, w.testcase) == (TOP_NAME, "run_trace")
        trace_path = w.params["trace"]
        del w
    scale = power_scale(big)
    trace = load_trace(trace_path, big)
    assert trace == layer_loop_trace(big, scale=scale)
    assert max(st.words for st in trace.steps) <= POWER_WINDOW_WORDS
    # The same phases in 1/scale of the cycles: the share of idle cycles is kept.
    full = layer_loop_trace(big)

    def idle_share(t):
        idle = sum(round(st.us * big.clock_mhz) for st in t.steps if st.op == "idle")
        return idle / t.cycles(big.clock_mhz)

    assert trace.cycles(big.clock_mhz) * scale == pytest.approx(full.cycles(big.clock_mhz),
                                                                rel=1e-3)
    assert idle_share(trace) == pytest.approx(idle_share(full), abs=1e-4)


def test_controller_rtl_grows_linearly_with_rows():
    """Four times the rows, about four times the Verilog (a per-row switch grew it 16x)."""
    sizes = []
    for rows in (1024, 4096):
        cfg = config_from_dict({"unit": "shield", "kv_words": rows * 128,
                                "qo_words": rows * 128, "row_words": 256}, "test", f"r{rows}")
        assert cfg.bank_rows["standard"] == rows
        design = Design()
        name, top = build_top(cfg)
        design.add_top(top, name)
        sizes.append(len(design.verilog()))
    assert sizes[1] / sizes[0] < 6
