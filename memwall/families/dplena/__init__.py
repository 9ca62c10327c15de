"""d-PLENA (Lou et al., *Beyond GEMM-Centric NPUs: Enabling Efficient Diffusion LLM Sampling*):
the diffusion-LLM sampling core and its units."""

from __future__ import annotations

from memwall.family import Family, PowerWorkload
from memwall.golden import dplena as _golden
from memwall.hdl.dplena.config import DplenaConfig
from memwall.hdl.dplena.core import build_top

from . import area_power, commands, report

#: Lanes of the units in the power simulations: lane modules are the same modules at any VLEN,
#: so what a 16-lane run measures on ``elementwise_lane`` holds for the 2048-lane design.
SIM_LANES = 16


def power_workloads(cfg: DplenaConfig) -> list[PowerWorkload]:
    """Logits-like data through every unit, at a small VLEN."""
    from memwall.hdl.dplena.elementwise import ElementwiseUnit, ScalarFpUnit
    from memwall.hdl.dplena.reduction import ReductionUnit
    from memwall.hdl.dplena.select import MaskedSelectUnit
    from memwall.hdl.dplena.topk import TopkMaskUnit

    lanes, st = min(SIM_LANES, cfg.vlen), cfg.stages
    tb = "memwall.verif.dplena."
    return [
        PowerWorkload("reduction", ReductionUnit(lanes, st.add_fp32), tb + "tb_reduction",
                      {"vlen": lanes, "partials": st.sum_partials, "representative": True,
                       "random_vectors": 24}),
        PowerWorkload("elementwise", ElementwiseUnit(lanes, st), tb + "tb_elementwise",
                      {"lanes": lanes, "representative": True, "vectors_per_op": 20},
                      "elementwise_ops"),
        PowerWorkload("scalar_fp", ScalarFpUnit(1, st), tb + "tb_elementwise",
                      {"lanes": 1, "exhaustive": False, "to_bf16_vectors": 50}, "scalar_ops"),
        PowerWorkload("topk", TopkMaskUnit(cfg.block_len, cfg.k_max), tb + "tb_topk",
                      {"length": cfg.block_len, "k_max": cfg.k_max, "random_vectors": 20}),
        PowerWorkload("select", MaskedSelectUnit(lanes, width=cfg.int_width), tb + "tb_select",
                      {"lanes": lanes, "width": cfg.int_width, "random_vectors": 40}),
    ]


FAMILY = Family(
    name="dplena",
    summary="d-PLENA diffusion-LLM sampling core: reductions, elementwise/exp, top-k mask, "
            "masked select, MXFP8 dequantiser, sequencer (VLEN 512-2048)",
    config_class=DplenaConfig,
    build_top=build_top,
    golden={"sample_step_hw": _golden.sample_step_hw,
            "sample_step_reference": _golden.sample_step_reference,
            "prepare_logits": _golden.prepare_logits},
    power_workloads=power_workloads,
    commands=commands.COMMANDS,
    report_groups=area_power.REPORT_GROUPS,
    report_matrix={"asap7": ["dplena64", "dplena512", "dplena1024", "dplena2048"],
                   "sky130hd": ["dplena64", "dplena512"],
                   "nangate45": ["dplena64", "dplena512"]},
    regression_configs=("dplena32", "dplena64"),
    report_sections=area_power.report_section,
    write_reports=report.build_report,
    bench_configs=("dplena512", "dplena1024", "dplena2048"),
)
