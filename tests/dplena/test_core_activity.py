"""Power activity from the d-PLENA core itself (flows/workload.py, the family's core workload):
module types matched by generator class and nearest parameters, a reduced core standing for a
wide one, and one core run whose VCD leaves no module of the design at default activity."""

from __future__ import annotations

import pytest

from memwall.config import load_config
from memwall.families.dplena.workloads import power_workloads, sim_config
from memwall.flows import activity, workload
from memwall.hdl.dplena.core import TOP_NAME, DplenaCore


def _part(name, keys, records):
    return {"name": name, "keys": keys, "modules": records}


def test_nearest_parameters_and_widened_bits():
    cls = "pkg.Tree"
    keys = {"tree_l4": (cls, '{"lanes": 4, "fmt": "bf16"}'),
            "tree_l8": (cls, '{"lanes": 8, "fmt": "bf16"}'),
            "tree_l8_fp32": (cls, '{"lanes": 8, "fmt": "fp32"}'),
            "other": ("pkg.Other", '{"lanes": 64}')}
    rec = {m: {"instances": 1, "signals": {"x[0]": [0.2, 0.5], "x[1]": [0.4, 0.3]},
               "traces": {"x[0]": ["5"]}, "trace_cycles": 4} for m in keys}
    design = {"tree_l8": (cls, '{"fmt": "bf16", "lanes": 8}'),      # equal (key order aside)
              "tree_l64": (cls, '{"fmt": "bf16", "lanes": 64}'),
              "tree_l64_fp32": (cls, '{"fmt": "fp32", "lanes": 64}'),
              "nothing": ("pkg.Unsimulated", "{}")}
    assert workload.param_distance({"lanes": 8}, {"lanes": 64}) == pytest.approx(
        abs(__import__("math").log2(9 / 65)))
    assert workload.param_distance({"f": "a"}, {"f": "b"}) == workload.CATEGORY_DISTANCE
    out = workload.cover_design([_part("run", keys, rec)], design)
    assert set(out) == {"tree_l8", "tree_l64", "tree_l64_fp32"}          # no run: left out
    assert "from" not in out["tree_l8"] and out["tree_l8"]["traces"] == {"x[0]": ["5"]}
    assert out["tree_l64"]["from"].startswith("tree_l8 of the run run (lanes 8 for 64)")
    assert out["tree_l64_fp32"]["from"].startswith("tree_l8_fp32 ")      # format before size
    # Bits the narrower module lacks take the mean of that signal's bits.
    wide = activity.widen_signals(out["tree_l64"]["signals"], ["x[0]", "x[5]", "y[0]", "x"])
    assert wide["x[5]"] == pytest.approx([0.3, 0.4]) and "y[0]" not in wide and "x" not in wide
    assert wide["x[0]"] == [0.2, 0.5]


def test_reduced_core_covers_every_module_type():
    """dplena512 is simulated as a 2-bank core (VLEN 128, its Vector SRAM rows kept); every
    module type of the real design has a simulated module of its generator. dplena64 is
    simulated as it is (exact module types)."""
    cfg64 = load_config("dplena64")
    assert sim_config(cfg64) is cfg64
    cfg = load_config("dplena512")
    sim = sim_config(cfg)
    assert (sim.vlen, sim.banks, sim.vector_sram_rows) == (128, 2, cfg.vector_sram_rows)
    assert sim.fp_stages == cfg.fp_stages and sim.hbm_bytes_per_cycle == cfg.hbm_bytes_per_cycle
    (w,) = power_workloads(cfg)
    assert w.params["beat_every"] == cfg.banks // sim.banks
    assert w.description.startswith("core workload (dplena512 core reduced to VLEN 128")
    _, real = workload.module_keys(DplenaCore(cfg), TOP_NAME)
    _, simulated = workload.module_keys(w.component, w.name)
    part = _part(w.name, simulated, {m: {"instances": 1, "signals": {}} for m in simulated})
    covered = workload.cover_design([part], real)
    assert set(covered) == set(real)
    assert "from" not in covered["vector_sram_bank_lanes64_rows64"]    # same bank module
    assert "vlen 128 for 512" in covered[next(m for m in real if m.startswith("sequencer"))][
        "from"]


@pytest.mark.sim
def test_core_workload_leaves_no_module_at_default(tmp_path):
    """One Verilator run of the dplena32 core on its sampling step: every module of the design
    takes its activity from the VCD, the sequencer, dequantiser, banks and FIFO included."""
    cfg = load_config("dplena32")
    act = workload.collect_activity(cfg, tmp_path)
    _, real = workload.module_keys(DplenaCore(cfg), TOP_NAME)
    assert set(act["modules"]) == set(real)
    assert not [m for m, r in act["modules"].items() if "from" in r]     # all exact
    assert act["source"].startswith("core workload (dplena32 core; MXFP8 sampling step")
    seq = next(r for m, r in act["modules"].items() if m.startswith("sequencer"))
    # The sequencer ran: its instruction register and the FIFO's write enable toggled.
    assert any(v[0] > 0 for k, v in seq["signals"].items() if k.startswith("fifo"))
    assert seq["traces"] and seq["trace_cycles"] == activity.TRACE_CYCLES
    (run,) = act["runs"]
    assert run["cycles"] > 1000 and run["vcd_mb"] > 0
