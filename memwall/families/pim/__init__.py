"""eDRAM PIM, RED-style: a retention-aware scheduler, the PIM macro controller and processing
unit, and a behavioural 2T eDRAM macro (paper: edram-pim-retention-aware-framework)."""

from __future__ import annotations

from memwall.families.pim import commands
from memwall.families.pim.config import PimConfig
from memwall.family import Family, lazy

__all__ = ["FAMILY"]

FAMILY = Family(
    name="pim",
    summary="eDRAM PIM (RED-style): retention-aware scheduler, PIM macro controller and "
            "processing unit, behavioural 2T eDRAM macro",
    config_class=PimConfig,
    build_top=lazy("memwall.hdl.pim.core:build_top"),
    examples=lazy("memwall.families.pim.examples:arrays"),
    golden={"simulate": lazy("memwall.golden.pim.macro:simulate"),
            "energy": lazy("memwall.golden.pim.macro:energy"),
            "search": lazy("memwall.golden.pim.schedule:search"),
            "compare": lazy("memwall.golden.pim.schedule:compare")},
    power_workloads=lazy("memwall.families.pim.workloads:power_workloads"),
    commands=commands.COMMANDS,
    properties=lazy("memwall.families.pim.properties:properties"),
    regression_tests=("tests/pim/test_sim_pim.py",),
    report_groups={"pim_pu": "pu", "pim_core": "controller"},
    report_matrix={"asap7": ["pim_small", "pim_small_bitserial", "pim_paper"]},
    regression_configs=("pim_small",),
    write_reports=lazy("memwall.families.pim.report:build_report"),
    paper_table=lazy("memwall.families.pim.paper_table:paper_table"),
)
