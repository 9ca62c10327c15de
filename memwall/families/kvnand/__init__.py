"""KVNAND: the in-flash plane PE, the BCH(9088,8192) encoder and the design-space model of a KV
cache in flash (paper: kvnand-in-flash-kv-cache)."""

from __future__ import annotations

from memwall.families.kvnand import commands
from memwall.families.kvnand.config import KvnandConfig
from memwall.family import Family, lazy

__all__ = ["FAMILY"]

FAMILY = Family(
    name="kvnand",
    summary="KVNAND: in-flash plane PE (GEMV, LOGIT, ATTEND), BCH(9088,8192) encoder, "
            "design-space model of a KV cache in flash",
    config_class=KvnandConfig,
    build_top=lazy("memwall.hdl.kvnand.core:build_top"),
    examples=lazy("memwall.families.kvnand.examples:arrays"),
    golden={"bch_encode": lazy("memwall.golden.kvnand.bch:encode"),
            "pe_gemv": lazy("memwall.golden.kvnand.pe:gemv"),
            "pe_logit": lazy("memwall.golden.kvnand.pe:logit"),
            "pe_attend": lazy("memwall.golden.kvnand.pe:attend")},
    power_workloads=lazy("memwall.families.kvnand.workloads:power_workloads"),
    commands=commands.COMMANDS,
    report_groups={"pe_": "pe", "fp_": "pe", "kv_write_buffer": "kv buffer",
                   "bch_encoder": "ecc"},
    report_matrix={"asap7": ["kvnand_small", "kvnand_paper"]},
    regression_configs=("kvnand_small",),
    write_reports=lazy("memwall.families.kvnand.report:build_report"),
    paper_table=lazy("memwall.families.kvnand.paper_table:paper_table"),
    properties=lazy("memwall.families.kvnand.properties:properties"),
    regression_tests=("tests/kvnand/test_sim_kvnand_pe.py",
                      "tests/kvnand/test_sim_kvnand_kvbuf.py",
                      "tests/kvnand/test_sim_bch.py"),
)
