"""Temperature sampling (golden/dplena/noise.py): the sampled tokens follow softmax(z / T)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from memwall.golden.dplena import noise
from memwall.golden.dplena.sampling import sample_step_reference

#: Significance of the distribution tests: a correct sampler fails one in a thousand seeds.
ALPHA = 1e-3
LOGITS = np.array([2.0, 1.0, 0.5, 0.0, -0.5, -1.0, -2.0, -4.0])


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_token_frequencies_match_softmax_over_t(temperature):
    draws = 20000
    z = np.broadcast_to(LOGITS, (1, draws, LOGITS.size))     # every row its own stream
    _assert_draws_follow_softmax(noise.noisy_x0(z, temperature, seed=11, step=3)[0],
                                 temperature)


def _assert_draws_follow_softmax(x0: np.ndarray, temperature: float) -> None:
    """The tokens ``x0`` drawn over LOGITS pass the chi-square test against softmax(LOGITS / T);
    and the test can fail: at T != 1 the same draws against softmax(LOGITS) are rejected."""
    draws = len(x0)
    counts = np.bincount(x0, minlength=LOGITS.size)
    p = np.exp(LOGITS / temperature)
    p /= p.sum()
    assert chisquare(counts, p * draws).pvalue > ALPHA
    if temperature != 1.0:
        q = np.exp(LOGITS) / np.exp(LOGITS).sum()
        assert chisquare(counts, q * draws).pvalue < ALPHA


def test_zero_temperature_is_the_greedy_step():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((2, 8, 300))
    x = np.full((2, 8), 7)
    greedy = sample_step_reference(z, x, 7, [3, 2])
    assert all(np.array_equal(greedy[k], v) for k, v in
               sample_step_reference(z, x, 7, [3, 2], temperature=0.0, seed=99).items())
    noisy = sample_step_reference(z, x, 7, [3, 2], temperature=1.0, seed=99)
    assert not np.array_equal(noisy["x0"], greedy["x0"])
    # the confidence is the clean softmax probability of the drawn token
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    drawn = np.take_along_axis(p, noisy["x0"][..., None], -1)[..., 0]
    assert np.allclose(noisy["confidence"], drawn)


def test_a_run_reproduces_from_seed_and_step():
    z = np.zeros((1, 4, 1000))
    a = noise.noisy_x0(z, 1.0, seed=1, step=0)
    assert np.array_equal(a, noise.noisy_x0(z, 1.0, seed=1, step=0))
    assert not np.array_equal(a, noise.noisy_x0(z, 1.0, seed=1, step=1))
    with pytest.raises(ValueError, match="temperature"):
        noise.noisy_x0(z, -1.0, 0, 0)


# --- the hardware's arithmetic (noisy_keys_hw, noisy_argmax_hw): the RTL's model ---------------

def _bf16(values) -> np.ndarray:
    import ml_dtypes
    return np.asarray(values, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)


T_ONE = 0x3F800000


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_the_hardware_draws_follow_softmax_over_t(temperature):
    """The core's arithmetic (FP32 z + T * G, the fixed-point Gumbel) samples softmax(z / T) as the
    float64 sampler does: the same chi-square test, one row (one stream) a draw."""
    draws = 20000
    z = np.broadcast_to(_bf16(LOGITS), (draws, LOGITS.size))
    t_bits = int(np.float32(temperature).view(np.uint32))
    _assert_draws_follow_softmax(noise.noisy_argmax_hw(z, t_bits, seed=5, step=2)["index"],
                                 temperature)


def test_the_hardware_keys_are_within_their_bound_of_float64():
    rng = np.random.default_rng(3)
    z = _bf16(rng.standard_normal((16, 500)) * 8)
    t = np.float32(0.7)
    keys = noise.noisy_keys_hw(z, int(t.view(np.uint32)), 9, 4, np.arange(16), np.arange(500))
    exact = z.astype(np.uint32) << 16
    exact = exact.view(np.float32).astype(np.float64) + float(t) * noise.gumbel_noise(
        9, 4, (1, 16, 500))[0]
    got = keys.view(np.float32).astype(np.float64)
    # G's bound times T, half an ulp of T*G (|T*G| < 12) and half an ulp of the key
    bound = float(t) * 2.0 ** -15 + 2.0 ** -21 + np.abs(exact) * 2.0 ** -24
    assert np.all(np.abs(got - exact) <= bound)
    assert np.any(got != exact)                       # the bound is not vacuous: keys round


def test_zero_temperature_is_the_greedy_argmax_bit_for_bit():
    from memwall.golden.common.fparith import reduce_max_idx
    rng = np.random.default_rng(4)
    z = _bf16(rng.standard_normal((40, 97)))
    special = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x0001, 0x8001],
                       np.uint16)
    for r in range(0, 40, 2):                         # ties, signed zeros, infinities, NaNs
        z[r, rng.integers(0, 97, 6)] = rng.choice(special, 6)
    z[1] = 0x8000
    z[1, 50] = 0x0000                                 # -0 everywhere but one +0: lane 0 wins
    z[3] = z[3, 0]                                    # all equal: lane 0
    value, index = reduce_max_idx(z, 32)
    for t_bits in (0x00000000, 0x80000000):
        got = noise.noisy_argmax_hw(z, t_bits, 1, 1)
        assert np.array_equal(got["index"], index)
        assert np.array_equal(got["value"], value)
    assert not np.array_equal(noise.noisy_argmax_hw(z, T_ONE, 1, 1)["index"], index)


def test_the_key_order_is_bf16_s_widened():
    bits = np.array([0xFF800000, 0xBF800000, 0x80000001, 0x80000000, 0x00000000, 0x00000001,
                     0x3F800000, 0x7F800000, 0x7FC00000, 0xFFC00001], np.uint32)
    keys = noise.fp32_key(bits)
    assert np.all(np.diff(keys[:4]) > 0)
    assert keys[3] == keys[4] == 0
    assert np.all(np.diff(keys[4:8]) > 0)
    assert keys[8] == keys[9] == noise.FP32_NAN_KEY > keys[7]
    with pytest.raises(ValueError, match="temperature_bits"):
        noise.noisy_argmax_hw(np.zeros((1, 4), np.uint16), -1, 0, 0)
