"""SHIELD (segmented eDRAM refresh for BF16 activations): the refresh controller, the eDRAM bank
model and the refresh-power (η) model."""

from __future__ import annotations

from memwall.families.shield import commands, controller_cost, report
from memwall.families.shield.workloads import POWER_SIM_WORDS, power_workloads
from memwall.family import Family
from memwall.golden import shield as _golden
from memwall.hdl.shield.config import ShieldConfig
from memwall.hdl.shield.controller import build_top

__all__ = ["FAMILY", "POWER_SIM_WORDS", "power_workloads"]

def _properties(cfg):
    from memwall.families.shield.properties import properties

    return properties(cfg)


FAMILY = Family(
    name="shield",
    summary="SHIELD segmented eDRAM refresh: refresh controller, eDRAM bank model, "
            "refresh-power (η) model",
    config_class=ShieldConfig,
    build_top=build_top,
    golden={"model_trace": _golden.model_trace, "p_shield": _golden.p_shield,
            "eta": _golden.eta, "expected_refresh_counts": _golden.expected_refresh_counts},
    power_workloads=power_workloads,
    commands=commands.COMMANDS,
    properties=_properties,
    regression_tests=("tests/test_sim_shield.py",),
    report_groups={"shield_controller": "controller"},
    # shield_2mb: the paper's 2 MB workspace at its 1 GHz clock (controller cost vs refresh
    # saved, controller_cost.report_section).
    report_matrix={"asap7": ["shield_small", "shield_2mb"], "sky130hd": ["shield_small"],
                   "nangate45": ["shield_small"]},
    regression_configs=("shield_small",),
    report_sections=controller_cost.report_section,
    write_reports=report.build_report,
)
