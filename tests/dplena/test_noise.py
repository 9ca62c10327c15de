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
    x0 = noise.noisy_x0(z, temperature, seed=11, step=3)[0]
    counts = np.bincount(x0, minlength=LOGITS.size)
    p = np.exp(LOGITS / temperature)
    p /= p.sum()
    assert chisquare(counts, p * draws).pvalue > ALPHA
    # and the test can fail: the same draws against softmax(z) (T = 1) are rejected
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
