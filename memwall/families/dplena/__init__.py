"""d-PLENA (Lou et al., *Beyond GEMM-Centric NPUs: Enabling Efficient Diffusion LLM Sampling*):
the diffusion-LLM sampling core and its units. Power activity: :mod:`.workloads`."""

from __future__ import annotations

from memwall.families.dplena import area_power, commands
from memwall.families.dplena.config import DplenaConfig
from memwall.family import Family, lazy

FAMILY = Family(
    name="dplena",
    summary="d-PLENA diffusion-LLM sampling core: reductions, elementwise/exp, top-k mask, "
            "masked select, MX (FP8, FP6, FP4) dequantiser, sequencer (VLEN 512-2048)",
    config_class=DplenaConfig,
    build_top=lazy("memwall.hdl.dplena.core:build_top"),
    examples=lazy("memwall.families.dplena.examples:arrays"),
    paper_table=lazy("memwall.families.dplena.paper_table:paper_table"),
    golden={name: lazy(f"memwall.golden.dplena.sampling:{name}")
            for name in ("sample_step_hw", "sample_step_reference", "prepare_logits")},
    power_workloads=lazy("memwall.families.dplena.workloads:power_workloads"),
    commands=commands.COMMANDS,
    report_groups=area_power.REPORT_GROUPS,
    report_matrix={"asap7": ["dplena64", "dplena512", "dplena1024", "dplena2048"],
                   "sky130hd": ["dplena64", "dplena512"],
                   "nangate45": ["dplena64", "dplena512"]},
    regression_configs=("dplena32", "dplena64"),
    report_sections=lazy("memwall.families.dplena.area_power:report_section"),
    properties=lazy("memwall.families.dplena.properties:properties"),
    regression_tests=("tests/dplena/test_sim_core.py",
                      "tests/dplena/test_sim_isa.py",
                      "tests/dplena/test_sim_reduction.py",
                      "tests/dplena/test_sim_select.py",
                      "tests/dplena/test_sim_topk.py",
                      "tests/dplena/test_sim_dequant.py",
                      "tests/dplena/test_sim_elementwise.py",
                      "tests/common/test_sim_fp_blocks.py",
                      "tests/common/test_sim_lockstep.py",
                      "tests/dplena/test_sim_vector_sram.py"),
    write_reports=lazy("memwall.families.dplena.report:build_report"),
    bench_configs=("dplena512", "dplena1024", "dplena2048"),
)
