"""eDRAM PIM, RED-style: a retention-aware scheduler, the PIM macro controller and processing
unit, and a behavioural 2T eDRAM macro (paper: edram-pim-retention-aware-framework)."""

from __future__ import annotations

from memwall.families.pim import commands
from memwall.families.pim.workloads import power_workloads
from memwall.family import Family
from memwall.hdl.pim.config import PimConfig
from memwall.hdl.pim.core import build_top

__all__ = ["FAMILY"]


def _golden():
    from memwall.golden import pim, pim_schedule

    return {"simulate": pim.simulate, "energy": pim.energy, "search": pim_schedule.search,
            "compare": pim_schedule.compare}


def _write_reports(folder) -> None:
    from memwall.families.pim.report import build_report

    build_report(folder)


def _properties(cfg):
    from memwall.formal import stream_protocol
    from memwall.hdl.pim.core import PimCore

    return [stream_protocol(
        "pim_core_streams", lambda: PimCore(cfg),
        f"PIM core of {cfg.name}: descriptor, operand and result streams keep the valid/ready "
        "protocol (held valid and payload until ready, nothing valid the cycle after reset), "
        "inputs free; k-induction, so for every depth.", mode="prove", depth=8)]


FAMILY = Family(
    name="pim",
    summary="eDRAM PIM (RED-style): retention-aware scheduler, PIM macro controller and "
            "processing unit, behavioural 2T eDRAM macro",
    config_class=PimConfig,
    build_top=build_top,
    golden=_golden(),
    power_workloads=power_workloads,
    commands=commands.COMMANDS,
    properties=_properties,
    regression_tests=("tests/test_sim_pim.py",),
    report_groups={"pim_pu": "pu", "pim_core": "controller"},
    report_matrix={"asap7": ["pim_small", "pim_paper"]},
    regression_configs=("pim_small",),
    write_reports=_write_reports,
)
