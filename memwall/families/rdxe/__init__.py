"""rDXE: VAC/DXT datapath with VRC-fused RMSNorm and Softmax, iWuR KV cache with GQA over VLINK,
and the ring-pipeline model (paper: rdxe-edge-slm-decoder-vrc-iwur)."""

from __future__ import annotations

import dataclasses

from memwall.families.rdxe import commands
from memwall.family import Family, PowerWorkload
from memwall.hdl.rdxe.config import RdxeConfig
from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup, build_top

__all__ = ["FAMILY"]


def _golden():
    from memwall.golden import rdxe

    return {"rmsnorm_gemv": rdxe.rmsnorm_gemv, "attention": rdxe.attention,
            "qk_scores": rdxe.qk_scores, "softmax_pv": rdxe.softmax_pv}


def _power_workloads(cfg: RdxeConfig):
    """The regression's session (every operation, both KV layouts) on the config's own group:
    its activity sets the power of every module. The normalisations run in the one VRC mode
    the config is for: sequential where it builds the sequential baseline, else fused, so
    that a config pair differing only in ``sequential_baseline`` compares the two VRCs on the
    same operands (``reports/rdxe/synthesis.md``)."""
    if cfg.max_head_dim < 16 or cfg.max_tokens < 16:
        return []
    params = {"config": dataclasses.asdict(cfg), "seed": 5, "d": 4 * cfg.lanes,
              "n": cfg.vacs + 2, "tokens": min(cfg.max_tokens, 13), "dh": cfg.max_head_dim,
              "stall": 0.0,
              "modes": ["sequential" if cfg.sequential_baseline else "fused"]}
    return [PowerWorkload(name=TOP_NAME, component=RdxeGroup(cfg),
                          testbench="memwall.verif.rdxe.tb_group", params=params,
                          testcase="session",
                          description=f"rdxe session, VRC {params['modes'][0]}: GEMV, "
                                      "RMSNorm-GEMV, K/V write-back, QK, P.V (iWuR and "
                                      "baseline)")]


def _write_reports(folder) -> None:
    from memwall.families.rdxe.report import build_report

    build_report(folder)


def _properties(cfg):
    from memwall.formal import stream_protocol

    return [stream_protocol(
        "rdxe_group_streams", lambda: RdxeGroup(cfg),
        f"rDXE tile group of {cfg.name}: command, data and result streams keep the "
        "valid/ready protocol (held valid and payload until ready, nothing valid the cycle "
        "after reset), inputs free; k-induction at depth 2, the smallest that proves it "
        "(about 10 s at rdxe_small; at depth 8 the base case ran past 10 minutes).",
        mode="prove", depth=2)]


FAMILY = Family(
    name="rdxe",
    summary="rDXE: VAC/DXT datapath with VRC-fused RMSNorm and Softmax, iWuR KV cache with "
            "GQA over VLINK, ring-pipeline model",
    config_class=RdxeConfig,
    build_top=build_top,
    golden=_golden(),
    power_workloads=_power_workloads,
    commands=commands.COMMANDS,
    properties=_properties,
    regression_tests=("tests/test_sim_rdxe.py",
                      "tests/test_sim_rdxe_units.py"),
    report_groups={"vac_": "vac", "vector_engine": "ve", "dxt_sequencer": "control",
                   "dxt_": "dxt"},
    report_matrix={"asap7": ["rdxe_small", "rdxe_paper_fused", "rdxe_paper"]},
    regression_configs=("rdxe_small",),
    write_reports=_write_reports,
)
