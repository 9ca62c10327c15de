"""KVNAND: the in-flash plane PE, the BCH(9088,8192) encoder and the design-space model of a KV
cache in flash (paper: kvnand-in-flash-kv-cache)."""

from __future__ import annotations

import dataclasses

from memwall.families.kvnand import commands
from memwall.family import Family, PowerWorkload
from memwall.hdl.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.core import build_top

__all__ = ["FAMILY"]


def _golden():
    from memwall.golden import bch, kvnand_pe

    return {"bch_encode": bch.encode, "pe_gemv": kvnand_pe.gemv, "pe_logit": kvnand_pe.logit,
            "pe_attend": kvnand_pe.attend}


def _power_workloads(cfg: KvnandConfig):
    """The PE's page commands of the regression (every mode and head count of the config's
    format), a decode session through the KV write buffer and a stream of codewords through
    the BCH encoder: each sets its unit's activity."""
    from memwall.hdl.kvnand.bch import BchEncoder
    from memwall.hdl.kvnand.core import kv_buffer
    from memwall.hdl.kvnand.pe import Pe

    enc = BchEncoder(cfg.bch_bits)
    kv = kv_buffer(cfg)
    return [
        PowerWorkload(name="kvnand_pe", component=Pe(cfg), testbench="memwall.verif.kvnand.tb_pe",
                      params={"config": dataclasses.asdict(cfg), "stall": 0.0},
                      testcase="pages",
                      description="kvnand PE: GEMV, LOGIT at every head count, an ATTEND "
                                  "stream, seeded operands"),
        PowerWorkload(name="kvnand_kvbuf", component=kv,
                      testbench="memwall.verif.kvnand.tb_kvbuf", testcase="session",
                      params={**kv.params, "tokens": 2 * cfg.page_bytes // cfg.kv_slice_bytes,
                              "layers": 2, "head_groups": 2, "stall": 0.0,
                              "order": "interleaved"},
                      description="KV write buffer: decode-order K/V slices of 2 layers x 2 "
                                  "head groups, seeded bytes, then a flush"),
        PowerWorkload(name=f"kvnand_bch_p{cfg.bch_bits}", component=enc,
                      testbench="memwall.verif.kvnand.tb_bch",
                      params={**enc.params, "messages": ["random", "random", "single"]},
                      testcase="streaming",
                      description="BCH encoder: codewords back to back, seeded messages"),
    ]


def _properties(cfg):
    from memwall.families.kvnand.properties import properties

    return properties(cfg)


def _write_reports(folder) -> None:
    from memwall.families.kvnand.report import build_report

    build_report(folder)


FAMILY = Family(
    name="kvnand",
    summary="KVNAND: in-flash plane PE (GEMV, LOGIT, ATTEND), BCH(9088,8192) encoder, "
            "design-space model of a KV cache in flash",
    config_class=KvnandConfig,
    build_top=build_top,
    golden=_golden(),
    power_workloads=_power_workloads,
    commands=commands.COMMANDS,
    report_groups={"pe_": "pe", "fp_": "pe", "kv_write_buffer": "kv buffer",
                   "bch_encoder": "ecc"},
    report_matrix={"asap7": ["kvnand_small", "kvnand_paper"]},
    regression_configs=("kvnand_small",),
    write_reports=_write_reports,
    properties=_properties,
    regression_tests=("tests/test_sim_kvnand_pe.py",
                      "tests/test_sim_kvnand_kvbuf.py",
                      "tests/test_sim_bch.py"),
)
