"""V_TOPK_MASK: cocotb regression of TopkMaskUnit against golden topk_mask."""

import gc
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

from memwall.golden.common.fparith import bf16_key
from memwall.golden.dplena.sampling import topk_mask
from memwall.hdl.dplena.topk import TopkMaskUnit
from memwall.verif.common.runner import simulate

TB = "memwall.verif.dplena.tb_topk"


@pytest.mark.sim
@pytest.mark.parametrize(("length", "k_max"), [(8, 8), (32, 16), (5, 3)])
def test_topk_mask(length, k_max):
    simulate(TopkMaskUnit(length, k_max), "topk_mask_unit", TB,
             {"length": length, "k_max": k_max, "random_vectors": 120})


@pytest.mark.sim
def test_topk_mask_verilator():
    simulate(TopkMaskUnit(16, 6), "topk_mask_unit", TB,
             {"length": 16, "k_max": 6, "random_vectors": 40}, sim="verilator")


@pytest.mark.parametrize(("length", "k_max"), [(0, 1), (4, 0), (4, 5), (4.0, 2), (-1, 1)])
def test_topk_mask_rejects_bad_params(length, k_max):
    with warnings.catch_warnings():
        # The rejected instance is collected later and would be reported as unused.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="length|k_max"):
            TopkMaskUnit(length, k_max)
        gc.collect()


def test_golden_topk_matches_sort_oracle():
    """The bit-exact reference agrees with a plain stable sort (key descending, index)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 20))
        conf = rng.choice(np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x3F80,
                                    0xBF80, 0xC000], np.uint16), n)
        valid = rng.random(n) < 0.7
        k = int(rng.integers(0, n + 3))
        keys = np.where(valid, bf16_key(conf), bf16_key(np.uint16(0xFF80))).astype(np.int64)
        order = np.lexsort((np.arange(n), -keys))
        expected = np.zeros(n, bool)
        expected[order[:k]] = True
        np.testing.assert_array_equal(topk_mask(conf[None], valid[None], np.array([k]))[0],
                                      expected)
