"""SHIELD (segmented eDRAM refresh for BF16 activations): the refresh controller, the eDRAM bank
model and the refresh-power (η) model."""

from __future__ import annotations

from memwall.family import Family, PowerWorkload
from memwall.golden import shield as _golden
from memwall.hdl.shield.config import ShieldConfig
from memwall.hdl.shield.controller import build_top

from . import commands, report

#: Largest workspace (words) whose controller a power run simulates; the liveness state of a
#: larger one is too slow to simulate, and its power then comes from the default activity.
POWER_SIM_WORDS = 4096


def power_workloads(cfg: ShieldConfig) -> list[PowerWorkload]:
    """Random layer-by-layer KV/QO traffic through the controller."""
    from memwall.hdl.shield.controller import ShieldController
    from memwall.verif.shield.tb_controller import config_params

    if cfg.total_words > POWER_SIM_WORDS:
        return []
    return [PowerWorkload("controller", ShieldController(cfg),
                          "memwall.verif.shield.tb_controller",
                          {"config": config_params(cfg), "layers": 4}, "random_workload")]


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
    report_groups={"shield_controller": "controller"},
    report_matrix={"asap7": ["shield_small"], "sky130hd": ["shield_small"],
                   "nangate45": ["shield_small"]},
    regression_configs=("shield_small",),
    write_reports=report.build_report,
)
