"""SHIELD (segmented eDRAM refresh for BF16 activations): the refresh controller, the eDRAM bank
model and the refresh-power (η) model."""

from __future__ import annotations

from memwall.families.shield import commands
from memwall.families.shield.config import ShieldConfig
from memwall.family import Family, lazy

__all__ = ["FAMILY"]

FAMILY = Family(
    name="shield",
    summary="SHIELD segmented eDRAM refresh: refresh controller, eDRAM bank model, "
            "refresh-power (η) model",
    config_class=ShieldConfig,
    build_top=lazy("memwall.hdl.shield.controller:build_top"),
    golden={name: lazy(f"memwall.golden.shield.refresh:{name}")
            for name in ("model_trace", "p_shield", "eta", "expected_refresh_counts")},
    power_workloads=lazy("memwall.families.shield.workloads:power_workloads"),
    commands=commands.COMMANDS,
    properties=lazy("memwall.families.shield.properties:properties"),
    regression_tests=("tests/shield/test_sim_shield.py",),
    report_groups={"shield_controller": "controller"},
    # shield_2mb: the paper's 2 MB workspace at its 1 GHz clock (controller cost vs refresh
    # saved, controller_cost.report_section).
    report_matrix={"asap7": ["shield_small", "shield_2mb"], "sky130hd": ["shield_small"],
                   "nangate45": ["shield_small"]},
    regression_configs=("shield_small",),
    report_sections=lazy("memwall.families.shield.controller_cost:report_section"),
    write_reports=lazy("memwall.families.shield.report:build_report"),
    paper_table=lazy("memwall.families.shield.paper_table:paper_table"),
)
