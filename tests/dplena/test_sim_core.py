"""The d-PLENA core end to end: one diffusion sampling step in RTL against the golden model.

Each case runs the generated ``dplena_core`` (program from the generator, logits through the
HBM port and the dequantiser) and checks ``x``, ``x0``, the confidence bits and ``transfer``
against :func:`memwall.golden.dplena.sampling.sample_step_hw` bit for bit, and the cycle count
against the cycle model (:mod:`memwall.golden.dplena.model`): equal, cycle for cycle, when nothing
stalls; with random HBM gaps and output back-pressure the RTL takes at least as long.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from memwall.config import load_config
from memwall.golden.dplena import sampling as golden
from memwall.golden.dplena.model import estimate
from memwall.golden.dplena.program import Workload
from memwall.verif.dplena.core_run import run_core

# Every test here runs the core in cocotb.
pytestmark = pytest.mark.sim

MASK_ID = 126336
#: The two dplena64 tests share one Verilator build (minutes) instead of two long Icarus runs;
#: the dplena32 cases stay on the default simulator (Icarus: four-state, X shows).
WIDE_SIM = "verilator"


def _case(seed: int, batch: int, block_len: int, vocab: int, k_max: int):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((batch, block_len, vocab)) * 3).astype(np.float32)
    # A few large logits so the running max moves between chunks (and sometimes a tie).
    for b in range(batch):
        hot = rng.integers(0, vocab, block_len)
        logits[b, np.arange(block_len), hot] += 12.0
    x = rng.integers(0, 50_000, (batch, block_len))
    x[rng.random((batch, block_len)) < 0.6] = MASK_ID
    x[0, 0] = MASK_ID
    masked = (x == MASK_ID).sum(1)
    # k: 0, more than the masked count (up to k_max), and in between.
    k = [0, min(k_max, int(masked[1 % batch]) + 2), int(max(1, masked[2 % batch] // 2))][:batch]
    return logits, x, k


def _check(cfg, wl, logits, x, rtl, *, exact_cycles=True):
    z = golden.prepare_logits(logits, wl.logits_format)
    want = golden.sample_step_hw(z, x, wl.mask_id, wl.k, cfg.vlen, stable_max=cfg.stable_max,
                                 v_chunk=wl.v_chunk, sum_partials=cfg.stages.sum_partials)
    for key in ("x", "x0", "transfer"):
        assert np.array_equal(rtl[key], want[key]), (key, rtl[key], want[key])
    assert np.array_equal(rtl["confidence"].view(np.uint32), want["confidence"].view(np.uint32))
    model = estimate(cfg, wl).cycles
    if exact_cycles:
        assert rtl["cycles"] == model, (rtl["cycles"], model)
    else:   # stalls can only add cycles (compute-bound steps hide most HBM gaps)
        assert rtl["cycles"] >= model, (rtl["cycles"], model)


CASES = {
    # V = 300: neither a multiple of V_chunk (64) nor of VLEN (32); rescale across 5 chunks.
    "fused-mxfp8": ("dplena32", "fused", "mxfp8", 3, 8, 300, 64),
    # Whole row in one chunk: one fetch, both passes on the Vector SRAM copy.
    "two_pass-whole-bf16": ("dplena32", "two_pass", "bf16", 2, 8, 200, 256),
    # Chunks smaller than the row: each chunk fetched twice, the reduction carried across.
    "two_pass-chunked-mxfp8": ("dplena32", "two_pass", "mxfp8", 2, 5, 250, 96),
}


def _run_case(cfg, case: str, fmt: str, batch: int, block_len: int, vocab: int, v_chunk: int):
    """One named case on ``cfg``: its logits seeded by its name, the RTL against golden."""
    logits, x, k = _case(sum(map(ord, case)), batch, block_len, vocab, cfg.k_max)
    wl = Workload(batch, block_len, vocab, v_chunk, tuple(k), MASK_ID, fmt)
    _check(cfg, wl, logits, x, run_core(cfg, wl, logits, x))


@pytest.mark.parametrize("case", sorted(CASES))
def test_step_matches_golden(case):
    name, mode, *shape = CASES[case]
    _run_case(dataclasses.replace(load_config(name), stable_max=mode), case, *shape)


def test_prefetch_collides_with_row_writes():
    """5 rows x 3 chunks: batch 1's first (long) chunk streams into buffer B while batch 0's
    phase-3 rows are written to the same half, so the prefetch must wait a cycle. That chunk
    carries almost all of its row's probability mass, so a lost prefetch write shows in the
    confidence."""
    cfg = load_config("dplena64")
    logits, x, k = _case(21, 2, 5, 6108, cfg.k_max)
    rng = np.random.default_rng(22)
    logits[1, 0, :3008] = 20.0 + rng.standard_normal(3008).astype(np.float32)
    x[1, 0] = MASK_ID
    wl = Workload(2, 5, 6108, 3008, tuple(k), MASK_ID, "mxfp8")
    _check(cfg, wl, logits, x, run_core(cfg, wl, logits, x, sim=WIDE_SIM))


def test_two_banks_with_stalls():
    """dplena64: two 32-lane banks per row; random HBM gaps and output back-pressure."""
    cfg = load_config("dplena64")
    logits, x, k = _case(11, 2, 32, 200, cfg.k_max)
    wl = Workload(2, 32, 200, 128, tuple(k), MASK_ID, "mxfp8")
    _check(cfg, wl, logits, x, run_core(cfg, wl, logits, x, sim=WIDE_SIM, stall=True),
           exact_cycles=False)


def test_verilator():
    cfg = load_config("dplena32")
    logits, x, k = _case(12, 2, 8, 130, cfg.k_max)
    wl = Workload(2, 8, 130, 64, tuple(k), MASK_ID, "mxfp8")
    _check(cfg, wl, logits, x, run_core(cfg, wl, logits, x, sim="verilator"))


@pytest.mark.slow   # a 3-minute simulation: make test-slow
def test_paper_config_smoke():
    """dplena512 itself (512 lanes, 8 banks, 64 B port) on a short step: two chunks per row."""
    cfg = load_config("dplena512")
    logits, x, k = _case(13, 1, 4, 1500, cfg.k_max)
    wl = Workload(1, 4, 1500, 1024, (2,), MASK_ID, "mxfp8")
    _check(cfg, wl, logits, x, run_core(cfg, wl, logits, x))


#: A core for the 6- and 4-bit formats at the regression's size: dplena32 at 64 lanes, so one
#: write of 2 W = 64 elements fills a row (one bank).
NARROW_CASES = {
    # MXFP4: a beat a write; V = 200 over 4 chunks, the rescale across them.
    "mxfp4-fused": ("mxfp4_e2m1", "fused", "mxfp4_e2m1", 2, 6, 200, 64),
    # MXFP6: a write every beat and a half, chunks not a multiple of a group's three beats.
    "mxfp6-two_pass": ("mxfp6_e3m2", "two_pass", "mxfp6_e3m2", 2, 6, 450, 192),
    # BF16 prefetches on a 4-bit core: four beats gathered per write.
    "mxfp4-core-bf16": ("mxfp4_e2m1", "fused", "bf16", 2, 5, 200, 128),
}


@pytest.mark.parametrize("case", sorted(NARROW_CASES))
def test_narrow_formats_match_golden(case):
    core_fmt, mode, *shape = NARROW_CASES[case]
    cfg = dataclasses.replace(load_config("dplena32"), vlen=64, vector_sram_kib=8,
                              logits_format=core_fmt, stable_max=mode)
    assert cfg.bank_lanes == 64 and cfg.banks == 1
    _run_case(cfg, case, *shape)
