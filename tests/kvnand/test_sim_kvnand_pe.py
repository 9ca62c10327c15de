"""The KVNAND plane PE on its generated Verilog (cocotb) against the golden model, in each
number format, with and without stalls."""

from __future__ import annotations

import dataclasses
import json

import pytest

from memwall.families.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.pe import Pe
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim

TB = "memwall.verif.kvnand.tb_pe"


def small(fmt: str, **over) -> KvnandConfig:
    return KvnandConfig(**{"n_fmac": 4, "fmt": fmt, "page_bytes": 256, "kv_buffer_bytes": 512,
                           "group": 16, "max_heads": 4, "max_d": 16, "vec_words": 32, **over})


@pytest.mark.parametrize("fmt, stall", [("bf16", 0.0), ("w8a8", 0.0), ("w4a16", 0.0),
                                        ("bf16", 0.3)])
def test_pe_pages(fmt, stall):
    cfg = small(fmt)
    simulate(Pe(cfg), "kvnand_pe", TB, {"config": dataclasses.asdict(cfg), "stall": stall},
             testcase="pages")


@pytest.mark.parametrize("n_fmac, heads", [(2, 1), (16, 8)])
def test_page_balance_on_the_rtl(tmp_path, n_fmac, heads):
    """§IV-C's balance on the RTL, at the paper's 4 KB BF16 page and 400 MHz: a GEMV page on
    2 FMACs, and LOGIT and ATTEND pages shared by 8 query heads on 16 FMACs, each within tR
    (4 us), with cycles equal to the golden count."""
    from memwall.golden.kvnand.systems import Params

    cfg = KvnandConfig(n_fmac=n_fmac, fmt="bf16", page_bytes=4096, max_heads=heads, max_d=128,
                       vec_words=256)
    out = tmp_path / "cycles.json"
    simulate(Pe(cfg), "kvnand_pe_balance", TB, {"config": dataclasses.asdict(cfg),
                                                 "out": str(out)}, testcase="balance")
    t_read = Params().t_read
    rows = json.loads(out.read_text())
    modes = {"gemv"} if n_fmac == 2 else {"logit", "attend"}
    for row in rows:
        assert row["cycles"] >= row["macs"] // n_fmac
        if row["mode"] in modes:
            assert row["cycles"] / (cfg.clock_mhz * 1e6) <= t_read, row
    assert modes <= {row["mode"] for row in rows}
