"""The sampling noise's generator (golden/dplena/rng.py) against Random123's published
known-answer vectors and JAX's own Threefry-2x32 (test-only), and its streams."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.dplena import rng

#: Random123's kat_vectors for threefry2x32_20 (the vectors JAX's tests check too).
KAT = [((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
       ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
       ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


@pytest.mark.parametrize(("key", "ctr", "want"), KAT)
def test_known_answer_vectors(key, ctr, want):
    assert tuple(int(w) for w in rng.threefry2x32(key, ctr)) == want


def test_equals_jax_threefry_on_random_keys_and_counters():
    from jax.extend.random import threefry_2x32

    gen = np.random.default_rng(7)
    for _ in range(8):
        key = gen.integers(0, 1 << 32, 2, dtype=np.uint64).astype(np.uint32)
        ctr = gen.integers(0, 1 << 32, (2, 1000), dtype=np.uint64).astype(np.uint32)
        # JAX takes the two counter words as the halves of one array.
        want = np.asarray(threefry_2x32(key, np.concatenate(ctr)))
        got = np.concatenate(rng.threefry2x32((key[0], key[1]), (ctr[0], ctr[1])))
        assert np.array_equal(got, want)


def test_streams_are_distinct_and_reproduce():
    words = rng.noise_words(seed=5, step=3, rows=np.arange(64), tokens=np.arange(4096))
    assert words.shape == (64, 4096)
    assert np.array_equal(words, rng.noise_words(5, 3, np.arange(64), np.arange(4096)))
    # one Threefry call per token pair: word v & 1 of ctr (v >> 1, row)
    w0, w1 = rng.threefry2x32((5, 3), (np.array([10]), np.array([7])))
    assert words[7, 20] == w0[0] and words[7, 21] == w1[0]
    # another seed or step is another stream
    assert not np.any(words == rng.noise_words(6, 3, np.arange(64), np.arange(4096)))
    assert np.mean(words == rng.noise_words(5, 4, np.arange(64), np.arange(4096))) < 1e-4
    with pytest.raises(ValueError, match="32-bit"):
        rng.noise_words(1 << 32, 0, [0], [0])


def test_the_uniform_is_open_and_uniform():
    u = rng.uniform(np.array([0, 0xFFFFFFFF], np.uint32))
    assert u[0] == 2.0 ** -24 and u[1] == 1 - 2.0 ** -24
    words = rng.noise_words(1, 0, np.arange(256), np.arange(4096)).ravel()
    counts = np.bincount(rng.uniform_mantissa(words) >> 19, minlength=16)   # 16 equal cells
    from scipy.stats import chisquare

    assert chisquare(counts).pvalue > 1e-3
