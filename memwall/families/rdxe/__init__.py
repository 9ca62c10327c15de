"""rDXE: VAC/DXT datapath with VRC-fused RMSNorm and Softmax, iWuR KV cache with GQA over VLINK,
and the ring-pipeline model (paper: rdxe-edge-slm-decoder-vrc-iwur)."""

from __future__ import annotations

from memwall.families.rdxe import commands
from memwall.families.rdxe.config import RdxeConfig
from memwall.family import Family, lazy

__all__ = ["FAMILY"]

FAMILY = Family(
    name="rdxe",
    summary="rDXE: VAC/DXT datapath with VRC-fused RMSNorm and Softmax, iWuR KV cache with "
            "GQA over VLINK, ring-pipeline model",
    config_class=RdxeConfig,
    build_top=lazy("memwall.hdl.rdxe.core:build_top"),
    examples=lazy("memwall.families.rdxe.examples:arrays"),
    golden={name: lazy(f"memwall.golden.rdxe.datapath:{name}")
            for name in ("rmsnorm_gemv", "attention", "qk_scores", "softmax_pv")},
    power_workloads=lazy("memwall.families.rdxe.workloads:power_workloads"),
    commands=commands.COMMANDS,
    properties=lazy("memwall.families.rdxe.properties:properties"),
    regression_tests=("tests/rdxe/test_sim_rdxe.py",
                      "tests/rdxe/test_sim_rdxe_units.py"),
    report_groups={"vac_": "vac", "vector_engine": "ve", "dxt_sequencer": "control",
                   "dxt_": "dxt"},
    report_matrix={"asap7": ["rdxe_small", "rdxe_paper_fused", "rdxe_paper"]},
    regression_configs=("rdxe_small",),
    write_reports=lazy("memwall.families.rdxe.report:build_report"),
    paper_table=lazy("memwall.families.rdxe.paper_table:paper_table"),
)
