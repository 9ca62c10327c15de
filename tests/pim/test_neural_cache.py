"""The Neural Cache baseline: its bit-serial algorithm computes A @ B bit for bit, and its
closed-form cycles are those the algorithm spends."""

import numpy as np
import pytest
from test_golden_pim import PRECISIONS, config, operand

from memwall.golden.pim import neural_cache as nc
from memwall.golden.pim import schedule as ps


def cache_config(**overrides):
    """128 rows (room for the scratch rows and some weights a lane), 64 lanes."""
    return config(**{"rows": 128, "cols": 32, "clock_mhz": 50, **overrides})


@pytest.mark.parametrize("wb, ib, ws, is_", PRECISIONS)
@pytest.mark.parametrize("shape", [(2, 40, 5), (1, 200, 3), (3, 9, 70)])
def test_the_algorithm_computes_the_product_in_the_cycles_counted(wb, ib, ws, is_, shape):
    cfg = cache_config(weight_bits=wb, input_bits=ib, weight_signed=ws, input_signed=is_)
    rng = np.random.default_rng(sum(shape) + wb * ib)
    M, K, N = shape
    a, b = operand(rng, (M, K), ib, is_), operand(rng, (K, N), wb, ws)
    run = nc.simulate(cfg, a, b)
    np.testing.assert_array_equal(run["c"], a @ b)
    assert run["cycles"] == nc.cycles(cfg, M, K, N)


def test_shapes_cover_several_lanes_and_waves():
    cfg = cache_config()
    plans = [nc.plan(cfg, *shape) for shape in [(2, 40, 5), (1, 200, 3), (3, 9, 70)]]
    assert max(p["lanes"] for p in plans) > 4 and max(p["waves"] for p in plans) > 1
    assert max(p["steps"] for p in plans) >= 3


def test_extreme_operands():
    """The most negative products and a long sum: the two's-complement step is exercised."""
    cfg = cache_config()
    M, K, N = 2, 60, 3
    a = np.full((M, K), -128)
    b = np.full((K, N), -128)
    b[:, 1] = 127
    run = nc.simulate(cfg, a, b)
    np.testing.assert_array_equal(run["c"], a @ b)


def test_rows_too_few_for_the_scratch_rows():
    with pytest.raises(nc.NoNeuralCacheMapping, match="scratch rows"):
        nc.plan(config(), 1, 8, 8)       # 16 rows
    assert ps.neural_cache_baseline(config(), 1, 8, 8) is None


def test_energy_charges_every_cycle_and_the_weights():
    cfg = cache_config()
    M, K, N = 2, 40, 5
    c = nc.cycles(cfg, M, K, N)
    e = nc.energy(cfg, M, K, N)
    S, W = cfg.subarray_count, cfg.width
    read = S * cfg.sram_e_access_pj + W * cfg.sram_e_sense_pj
    assert e["array_compute"] == pytest.approx(c["compute"] * (read + S * cfg.sram_e_write_pj))
    assert e["array_read"] == pytest.approx(c["read"] * read)
    assert e["array_write"] == pytest.approx(c["write"] * S * cfg.sram_e_write_pj)
    assert e["weight_fetch"] == pytest.approx(K * N * cfg.weight_bits * cfg.dram_e_bit_pj)
