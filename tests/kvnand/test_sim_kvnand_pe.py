"""The KVNAND plane PE on its generated Verilog (cocotb) against the golden model, in each
number format, with and without stalls; at kvnand_paper's size on Verilator."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from memwall.families.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.pe import Pe
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim

TB = "memwall.verif.kvnand.tb_pe"


def small(fmt: str, **over) -> KvnandConfig:
    return KvnandConfig(**{"n_fmac": 4, "fmt": fmt, "page_bytes": 256, "kv_buffer_bytes": 512,
                           "group": 16, "max_heads": 4, "max_d": 16, "vec_words": 32, **over})


@pytest.mark.parametrize("stall", [0.0, 0.3])
@pytest.mark.parametrize("fmt", ["bf16", "w8a8", "w4a16"])
def test_pe_pages(fmt, stall):
    """Every format, without stalls (each command in its golden count of cycles) and with the
    page source idling and the result sink back-pressuring at random (30 %)."""
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


#: One whole page per mode at kvnand_paper's largest head group (whole_pages' cases).
PAPER_PAGES = {("gemv", 1, False), ("logit", 8, False), ("attend", 8, True)}


@pytest.mark.slow
def test_pe_on_verilator_at_paper_size():
    """kvnand_paper's PE (16 FMACs, 4 KB BF16 pages, G = 8 query heads of d = 128) on
    Verilator: a GEMV page, a LOGIT page and an ATTEND page with its emit, each bit for bit
    the golden model's results in the golden count of cycles (``memwall run``'s path).
    Slow: about 2 minutes here, most of it building the Verilator model."""
    from memwall.config import load_config
    from memwall.golden.kvnand.pe import latency
    from memwall.hdl.kvnand.program import command_cycles
    from memwall.verif.kvnand.run import run_pages, whole_pages

    cfg = load_config("kvnand_paper")
    cases = [(mode, heads, emit, cmd) for mode, heads, emit, cmd in
             whole_pages(cfg, np.random.default_rng(38)) if (mode, heads, emit) in PAPER_PAGES]
    assert {case[:3] for case in cases} == PAPER_PAGES
    runs = run_pages(cfg, [cmd for *_, cmd in cases], sim="verilator", seed=38)
    for (mode, heads, emit, cmd), run in zip(cases, runs, strict=True):
        assert run["results"] == cmd.expect.astype(np.uint32).tolist(), mode
        cycles = command_cycles(cfg, cmd, latency(cfg.n_fmac, cfg.mul_stages, cfg.scaled, mode,
                                                  heads, emit))
        assert run["cycles"] == cycles, mode
