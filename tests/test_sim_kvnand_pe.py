"""The KVNAND plane PE on its generated Verilog (cocotb) against the golden model, in each
number format, with and without stalls."""

from __future__ import annotations

import dataclasses

import pytest
from memwall.hdl.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.pe import Pe
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim

TB = "memwall.verif.kvnand.tb_pe"


def small(fmt: str, **over) -> KvnandConfig:
    return KvnandConfig(**{"n_fmac": 4, "fmt": fmt, "page_bytes": 256, "group": 16,
                           "max_heads": 4, "max_d": 16, "vec_words": 32, **over})


@pytest.mark.parametrize("fmt, stall", [("bf16", 0.0), ("w8a8", 0.0), ("w4a16", 0.0),
                                        ("bf16", 0.3)])
def test_pe_pages(fmt, stall):
    cfg = small(fmt)
    simulate(Pe(cfg), "kvnand_pe", TB, {"config": dataclasses.asdict(cfg), "stall": stall},
             testcase="pages")
