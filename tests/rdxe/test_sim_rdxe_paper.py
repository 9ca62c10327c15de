"""rDXE at the paper's size (``rdxe_paper``: 16 VACs x 16 lanes per tile) on Verilator: one
RMSNorm-GEMV (MT5-small's d_model 512, 128 rows) and one decode attention head (dh 64, 128
tokens), fused and sequential, each with its calibrated output scale and with a quarter of it
(outputs saturating at both -128 and 127), bit-exact with the golden datapath, and every MAC and
write-back command taking exactly the cycles of :func:`memwall.golden.rdxe.cycles.command_cycles`.
Minutes of simulation: marked slow (``make test-slow``)."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.config import load_config
from memwall.golden.rdxe import datapath as golden
from memwall.golden.rdxe import quantise
from memwall.golden.rdxe.cycles import command_cycles
from memwall.hdl.rdxe.program import plan_attention, plan_rmsnorm_gemv
from memwall.verif.rdxe.run import run_program

pytestmark = [pytest.mark.slow, pytest.mark.sim]

CFG = load_config("rdxe_paper")


def _check_cycles(prog, results) -> int:
    """Every command the cycle model times took exactly its cycles; returns how many."""
    timed = 0
    for n, (command, result) in enumerate(zip(prog.commands, results, strict=True)):
        model = command_cycles(CFG.vacs, CFG.lanes, command)
        if model is not None:
            assert result["cycles"] == model, (n, command["op"], result["cycles"], model)
            timed += 1
    return timed


def _saturates_both_ways(values) -> bool:
    return bool((np.asarray(values) == 127).any() and (np.asarray(values) == -128).any())


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("mode", golden.MODES)
def test_rmsnorm_gemv_at_paper_size(mode, saturate):
    rng = np.random.default_rng(36)
    d, n = 512, 128
    operands = (rng.standard_normal(d), 1 + 0.2 * rng.standard_normal(d),
                rng.standard_normal((n, d)) / np.sqrt(d), 1e-5)
    quant = quantise.quantise_rmsnorm_gemv(*operands, weight_scale="tensor")  # INT8 outputs
    if saturate:     # a static output scale a quarter of the calibrated one
        quant = quantise.quantise_rmsnorm_gemv(*operands, weight_scale="tensor",
                                               s_y=quant.s_y / 4)
        assert quant.saturated > 0
    w = quant.w_merged if mode == "fused" else quant.w
    static = quant.fused_static if mode == "fused" else quant.seq_out_static
    want = golden.rmsnorm_gemv(quant.x, w, quant.eps_sum, static, mode, quant.g,
                               quant.seq_norm_static)
    prog, assemble = plan_rmsnorm_gemv(CFG, quant.x, w, quant.eps_sum, static, mode, quant.g,
                                       quant.seq_norm_static)
    results = run_program(prog, sim="verilator")
    y, acc = assemble(results)
    np.testing.assert_array_equal(y, want["y"])
    np.testing.assert_array_equal(acc, want["acc"])
    assert _saturates_both_ways(y) == saturate
    assert _check_cycles(prog, results) >= 1


@pytest.mark.parametrize("saturate", [False, True])
@pytest.mark.parametrize("mode", golden.MODES)
def test_attention_at_paper_size(mode, saturate):
    rng = np.random.default_rng(37)
    tokens, dh = 128, 64
    operands = (rng.standard_normal((1, dh)) * 2, rng.standard_normal((tokens, 1, dh)),
                rng.standard_normal((tokens, 1, dh)))
    quant = quantise.quantise_attention(*operands)
    if saturate:
        quant = quantise.quantise_attention(*operands, s_o=quant.s_o / 4)
        assert quant.saturated > 0
    static = quant.out_static if mode == "fused" else quant.seq_out_static
    want = golden.attention(quant.q, quant.k, quant.v, quant.score_rc, static, mode)
    prog, assemble = plan_attention(CFG, quant.q, quant.k, quant.v, quant.score_rc, static,
                                    mode)
    results = run_program(prog, sim="verilator")
    o, acc = assemble(results)
    np.testing.assert_array_equal(o, want["o"])
    np.testing.assert_array_equal(acc, want["acc"])
    assert _saturates_both_ways(o) == saturate
    # 2 write-backs per token, then QK and P.V.
    assert _check_cycles(prog, results) == 2 * tokens + 2
