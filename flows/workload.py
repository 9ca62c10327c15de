"""Switching activity for power: the units' cocotb testbenches on a representative workload.

Each unit of a config is simulated with Verilator (VCD) on its power workload: for d-PLENA,
logits-like data through every unit, at a small VLEN. Activity is per *module type* (means over
the instances in the VCD); lane modules are the same modules at any VLEN, so what a 16-lane run
measures on ``elementwise_lane`` holds for the 2048-lane design. Module types the small runs do
not contain (deeper reduction-tree levels) fall back to the default activity of
:mod:`memwall.flows.sta`, which its ``annotated`` summary reports.
"""

from __future__ import annotations

from pathlib import Path

from memwall.hdl.common.netlist import Design

from .activity import activity_from_vcd

__all__ = ["collect_activity", "unit_workloads", "merge_activity"]

#: Lanes of the d-PLENA units in the power simulations.
SIM_LANES = 16


def unit_workloads(cfg) -> list[tuple[str, object, str, dict, str | None]]:
    """(name, component, cocotb module, params, testcase) of each unit's power workload."""
    if cfg.unit_name == "dplena":
        from memwall.hdl.dplena.elementwise import ElementwiseUnit, ScalarFpUnit
        from memwall.hdl.dplena.reduction import ReductionUnit
        from memwall.hdl.dplena.select import MaskedSelectUnit
        from memwall.hdl.dplena.topk import TopkMaskUnit

        lanes = min(SIM_LANES, cfg.vlen)
        tb = "memwall.verif.dplena."
        return [
            ("reduction", ReductionUnit(lanes), tb + "tb_reduction",
             {"vlen": lanes, "representative": True, "random_vectors": 24}, None),
            ("elementwise", ElementwiseUnit(lanes), tb + "tb_elementwise",
             {"lanes": lanes, "representative": True, "vectors_per_op": 20}, "elementwise_ops"),
            ("scalar_fp", ScalarFpUnit(1), tb + "tb_elementwise",
             {"lanes": 1, "exhaustive": False, "to_bf16_vectors": 50}, "scalar_ops"),
            ("topk", TopkMaskUnit(cfg.block_len, cfg.k_max), tb + "tb_topk",
             {"length": cfg.block_len, "k_max": cfg.k_max, "random_vectors": 20}, None),
            ("select", MaskedSelectUnit(lanes, width=cfg.int_width), tb + "tb_select",
             {"lanes": lanes, "width": cfg.int_width, "random_vectors": 40}, None),
        ]
    if cfg.unit_name == "shield":
        from memwall.hdl.shield.controller import ShieldController
        from memwall.verif.shield.tb_controller import config_params

        if cfg.total_words > 4096:   # the liveness state of a large workspace: too slow to simulate
            return []
        return [("controller", ShieldController(cfg), "memwall.verif.shield.tb_controller",
                 {"config": config_params(cfg), "layers": 4},
                 "random_workload")]
    return []


def merge_activity(parts: list[dict]) -> dict:
    """One activity record from several runs: per module, means weighted by instances."""
    modules: dict[str, dict] = {}
    for part in parts:
        for module, record in part["modules"].items():
            into = modules.setdefault(module, {"instances": 0, "signals": {}})
            n_old, n_new = into["instances"], record["instances"]
            for bit, (toggles, duty) in record["signals"].items():
                old = into["signals"].get(bit)
                if old is None or n_old == 0:
                    into["signals"][bit] = [toggles, duty]
                else:
                    w = n_new / (n_old + n_new)
                    into["signals"][bit] = [old[0] * (1 - w) + toggles * w,
                                            old[1] * (1 - w) + duty * w]
            into["instances"] = n_old + n_new
    return {"source": "cocotb power workload ("
                      + ", ".join(p["name"] for p in parts) + "; Verilator VCD)",
            "cycles": sum(p.get("cycles", 0) for p in parts), "modules": modules}


def collect_activity(cfg, out_dir: Path) -> dict | None:
    """Simulate the config's power workloads and return activity for :func:`sta.run_sta`."""
    from memwall.verif.common.runner import simulate

    out_dir = Path(out_dir)
    parts = []
    for name, component, module, params, testcase in unit_workloads(cfg):
        design = Design()
        design.add_top(component, name)
        rtl = out_dir / name / "rtl"
        rtl.mkdir(parents=True, exist_ok=True)
        for module_name in design.module_names:
            (rtl / f"{module_name}.v").write_text(design.module_text(module_name))
        vcd = out_dir / name / "waves.vcd"
        simulate(component, name, module, params, sim="verilator", testcase=testcase, seed=1,
                 keep_waves=vcd)
        part = activity_from_vcd(vcd, rtl, design.module_names, top_module=name)
        part["name"] = name
        parts.append(part)
        vcd.unlink()   # large; the activity record is what is kept
    return merge_activity(parts) if parts else None
