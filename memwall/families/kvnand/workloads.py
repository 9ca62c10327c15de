"""KVNAND's power workloads: the activity ``memwall synth`` gives the PE, the KV write buffer
and the BCH encoder."""

from __future__ import annotations

import dataclasses

from memwall.families.kvnand.config import KvnandConfig
from memwall.family import PowerWorkload


def power_workloads(cfg: KvnandConfig):
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
