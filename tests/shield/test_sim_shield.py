"""SHIELD: cocotb regression of ShieldController with eDRAM bank models against golden.shield."""

import gc
import json
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from memwall import paths
from memwall.config import config_from_dict, load_config
from memwall.golden.shield.refresh import expected_refresh_counts
from memwall.golden.shield.trace import load_trace
from memwall.hdl.common.netlist import Design
from memwall.hdl.shield.controller import (
    REFRESHED_BANKS,
    TOP_NAME,
    RefreshScheduler,
    ShieldController,
    build_top,
)
from memwall.verif.common.runner import simulate
from memwall.verif.shield.run import run_trace
from memwall.verif.shield.tb_controller import ber_limit, config_params

TB = "memwall.verif.shield.tb_controller"
TRACE = paths.REPO / "configs" / "traces" / "shield_small.yaml"


@pytest.fixture(scope="module")
def cfg():
    return load_config("shield_small")


@pytest.mark.sim
def test_shield_random_workload(cfg):
    """(a) data integrity, QO BER bound, exact schedule and retention bound over ~8 T_rel,
    with 5 % of the random commands protocol errors the controller must ignore (addresses
    outside their class, the undefined op code)."""
    simulate(ShieldController(cfg), TOP_NAME, TB, {"config": config_params(cfg), "layers": 7,
                                                   "protocol_errors": 0.05},
             testcase="random_workload")


@pytest.mark.sim
@pytest.mark.parametrize("bank", REFRESHED_BANKS)
def test_refresh_scheduler_keeps_its_contract(cfg, bank):
    """The controller's schedulers alone, every output in every cycle over three intervals,
    resets included (verif/shield/tb_scheduler.py)."""
    rows = cfg.bank_rows[bank]
    interval = {"standard": cfg.t_std_cycles, "relaxed": cfg.t_rel_cycles}[bank]
    simulate(RefreshScheduler(rows, interval), "refresh_scheduler",
             "memwall.verif.shield.tb_scheduler",
             {"rows": rows, "interval": interval, "cycles": 3 * interval + 20})


@pytest.mark.sim
@pytest.mark.parametrize(("rows", "interval"), [(8, 11), (8, 16), (5, 38)])
def test_refresh_scheduler_at_other_gaps(rows, interval):
    """Slots one cycle apart at times (interval < 2 rows: the successor is computed in the slot's
    cycle), at least two apart (the successor waits in registers), a gap not dividing the
    interval."""
    sched = RefreshScheduler(rows, interval)
    assert sched.staged == (interval >= 2 * rows)
    simulate(sched, "refresh_scheduler", "memwall.verif.shield.tb_scheduler",
             {"rows": rows, "interval": interval, "cycles": 3 * interval + 20})


@pytest.mark.sim
def test_shield_random_workload_verilator(cfg):
    simulate(ShieldController(cfg), TOP_NAME, TB, {"config": config_params(cfg), "layers": 3},
             testcase="random_workload", sim="verilator")


@pytest.mark.sim
def test_shield_broken_schedule_is_detected(cfg):
    """(b) A controller refreshing 16x too rarely: the checks must report it (the cocotb test
    passes only if schedule, retention and KV-mantissa corruption are all flagged)."""
    simulate(ShieldController(cfg, interval_scale=16), TOP_NAME, TB,
             {"config": config_params(cfg), "interval_scale": 16, "layers": 3,
              "stress_epochs": 6}, testcase="broken_schedule_detected")


@pytest.mark.sim
def test_shield_refresh_power(cfg, tmp_path):
    """(c) all rows live for 100 T_rel: refreshes issued x row energy reproduce P_SHIELD, eta."""
    out = tmp_path / "power.json"
    simulate(ShieldController(cfg), TOP_NAME, TB,
             {"config": config_params(cfg), "relaxed_intervals": 100, "out": str(out)},
             testcase="refresh_power")
    result = json.loads(out.read_text())
    assert result["window_cycles"] >= 100 * cfg.t_rel_cycles
    assert abs(result["p_shield_rtl_mw"] / result["p_shield_golden_mw"] - 1) <= 0.01
    assert abs(result["eta_rtl"] / result["eta_golden"] - 1) <= 0.01


@pytest.mark.sim
def test_shield_run_trace(cfg):
    """(d) the example trace through the RTL: its refreshes vs golden expected_refresh_counts.

    On the trace as the RTL ran it (its accepted-command cycles, stalls included) the golden
    schedule gives exactly the RTL counts (the testbench asserts it; repeated here). On the
    nominal trace (one access per cycle, no stalls) golden counts fewer standard refreshes:
    every access needs the standard bank, which refreshes 16 of every 45 cycles when all rows
    are live, so accesses wait and the trace runs longer; each extra cycle can add at most one
    refresh per bank (plus one per row for the shifted phases).
    """
    trace = load_trace(TRACE, cfg)
    result = run_trace(cfg, TRACE)
    assert set(result["refresh_counts"]) == {"standard", "relaxed", "refreshless"}
    assert result["refresh_counts"]["refreshless"] == 0
    as_run = result["golden_refresh_counts_as_run"]
    nominal = expected_refresh_counts(cfg, trace)
    assert result["golden_refresh_counts"] == nominal
    extra = result["cycles"] - trace.cycles(cfg.clock_mhz)
    releases = sum(step.op == "release" for step in trace.steps)
    assert extra == result["stall_cycles"] + releases
    for bank in ("standard", "relaxed"):
        rtl = result["refresh_counts"][bank]
        assert rtl == as_run[bank], bank
        assert abs(rtl - nominal[bank]) <= extra + cfg.bank_rows[bank], bank
    # Only the refresh-less QO mantissas may lose bits under a correct schedule.
    assert result["data_errors_by_field"]["hi"] == 0
    assert result["data_errors_by_field"]["kv_mantissa"] == 0
    assert result["data_errors"] == result["data_errors_by_field"]["qo_mantissa"]
    assert result["reads"] == sum(s.words for s in trace.steps if s.op == "read")


@pytest.mark.sim
@pytest.mark.parametrize("block", [1, 4])
def test_shield_odd_geometry(block):
    """Rows of 6 fields (divider address split) and a standard-bank row shared by the last KV
    and the first QO words, one liveness bit per row and per 4 rows (the last block of each
    class cut short): data, schedule (liveness of either class) and golden counts."""
    odd = config_from_dict({"unit": "shield", "kv_words": 58, "qo_words": 70, "row_words": 6,
                            "clock_mhz": 1, "live_block_rows": block}, "test", "shield_odd")
    simulate(ShieldController(odd), TOP_NAME, TB, {"config": config_params(odd), "layers": 3},
             testcase="random_workload")
    result = run_trace(odd, TRACE)
    for bank in ("standard", "relaxed"):
        assert result["refresh_counts"][bank] == result["golden_refresh_counts_as_run"][bank]


def test_shield_controller_generates(cfg):
    design = Design()
    name, top = build_top(cfg)
    design.add_top(top, name)
    text = design.verilog()
    for port in ("standard_ref", "relaxed_ref", "refreshless_rdata", "req__payload",
                 "resp__payload"):
        assert port in text
    assert "refreshless_ref" not in text
    assert "refresh_count" not in text      # the testbench counts the strobes


@pytest.mark.parametrize(("overrides", "kwargs", "match"), [
    ({}, {"interval_scale": 0}, "interval_scale"),
    ({}, {"interval_scale": 1.5}, "interval_scale"),
    # T_std == rows: the config already refuses it (the controller would refuse it too).
    ({"row_words": 8, "kv_words": 360, "qo_words": 0}, {}, "t_std"),
])
def test_shield_controller_rejects_bad_params(cfg, overrides, kwargs, match):
    raw = {"unit": "shield", **{k: getattr(cfg, k) for k in
                                ("kv_words", "qo_words", "row_words", "t_std_us", "t_rel_us",
                                 "clock_mhz")}, **overrides}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match=match):
            ShieldController(config_from_dict(raw, "test", "bad"), **kwargs)
        with pytest.raises(ValueError, match="ShieldConfig"):
            ShieldController({"kv_words": 64})
        gc.collect()


def test_ber_limit_is_a_binomial_quantile():
    assert ber_limit(0, 4e-4) == 0
    k = ber_limit(3000, 4e-4)
    # P(X > k) <= 1e-6 < P(X > k - 1) for X ~ Binomial(3000, 4e-4) (mean 1.2).
    assert 7 <= k <= 10
