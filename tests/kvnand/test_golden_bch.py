"""The BCH(9088, 8192, t=64) golden model (:mod:`memwall.golden.kvnand.bch`) against galois's
BCH(16383, 15487) (an independent implementation), and on its own: linearity, syndromes,
the parallel-LFSR matrices the RTL is built from, the cached generator, input checks, and
decoding up to (and past) t errors."""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import pytest

from memwall.golden.kvnand import bch, bch_generator


@functools.cache
def galois_bch():
    """galois's parent code, built once per session (15-30 s)."""
    galois = pytest.importorskip("galois")
    return galois.BCH(16383, 15487)


def galois_encode(messages: np.ndarray) -> np.ndarray:
    import galois
    return np.asarray(galois_bch().encode(galois.GF2(messages))).astype(np.uint8)


def sample_messages(seed: int = 1) -> np.ndarray:
    """Random, all-zero, all-one and single-bit messages (first, last and a middle bit)."""
    rng = np.random.default_rng(seed)
    msgs = [rng.integers(0, 2, bch.K) for _ in range(3)]
    msgs += [np.zeros(bch.K, int), np.ones(bch.K, int)]
    for pos in (0, bch.K - 1, int(rng.integers(1, bch.K - 1))):
        single = np.zeros(bch.K, int)
        single[pos] = 1
        msgs.append(single)
    return np.array(msgs, dtype=np.uint8)


def with_errors(codeword: np.ndarray, count: int, rng) -> np.ndarray:
    """``codeword`` with ``count`` distinct bits flipped (the first and last bit among them)."""
    pos = rng.choice(np.arange(1, bch.N - 1), count - 2, replace=False)
    received = codeword.copy()
    received[np.concatenate([[0, bch.N - 1], pos])] ^= 1
    return received


# -- the code ------------------------------------------------------------------------------------
def test_encode_matches_galois():
    msgs = sample_messages()
    ours = bch.encode(msgs)
    assert ours.shape == (len(msgs), bch.N) and ours.dtype == np.uint8
    np.testing.assert_array_equal(ours, galois_encode(msgs))
    np.testing.assert_array_equal(ours[:, :bch.K], msgs)          # systematic, message first
    np.testing.assert_array_equal(bch.encode(msgs[0]), ours[0])   # one message: (9088,)


def test_generator_matches_galois():
    galois_g = f"{int(galois_bch().generator_poly):x}"
    assert galois_g == bch_generator.GENERATOR_HEX
    assert int(galois_bch().extension_field.irreducible_poly) == bch.PRIMITIVE_POLY


def test_linearity():
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 2, (2, 4, bch.K), dtype=np.uint8)
    np.testing.assert_array_equal(bch.encode(a ^ b), bch.encode(a) ^ bch.encode(b))
    assert not bch.encode(np.zeros(bch.K, np.uint8)).any()


def test_codewords_have_zero_syndromes():
    codewords = bch.encode(sample_messages(3))
    assert not bch.syndromes(codewords).any()
    corrupted = codewords[0].copy()
    corrupted[bch.N - 1] ^= 1                     # x^0: every S_j = 1
    np.testing.assert_array_equal(bch.syndromes(corrupted), np.ones(2 * bch.T))


# -- the cached generator ------------------------------------------------------------------------
def test_cached_generator_equals_recomputed():
    g = bch.compute_generator()
    assert len(g) == bch.PARITY_BITS + 1 and g[0] == 1 and g[-1] == 1
    np.testing.assert_array_equal(g, bch.GENERATOR)
    assert bch.generator_hex(g) == bch_generator.GENERATOR_HEX
    assert hashlib.sha256(bch.generator_hex(g).encode()).hexdigest() \
        == bch_generator.GENERATOR_SHA256


def test_generator_roots_are_alpha_1_to_128():
    g = bch.GENERATOR.astype(np.int64)
    for j in range(1, 2 * bch.T + 1):
        value = np.bitwise_xor.reduce(bch.EXP[(np.flatnonzero(g) * j) % bch.PARENT_N])
        assert value == 0, f"g(alpha^{j}) != 0"
    assert sum(len(bch.cyclotomic_coset(j)) for j in range(1, 128, 2)) == bch.PARITY_BITS


def test_corrupt_generator_cache_raises(monkeypatch):
    flipped = ("0" if bch_generator.GENERATOR_HEX[5] != "0" else "1")
    monkeypatch.setattr(bch, "GENERATOR_HEX", bch_generator.GENERATOR_HEX[:5] + flipped
                        + bch_generator.GENERATOR_HEX[6:])
    with pytest.raises(RuntimeError, match="SHA-256"):
        bch._load_generator()


# -- the parallel LFSR ---------------------------------------------------------------------------
def lfsr_parity(messages: np.ndarray, p: int) -> np.ndarray:
    """Run ``s' = A s + B u`` over the p-bit words of each message; parity bit j = s[895-j].
    Each state bit gathers the columns of its row of [A | B] (padding reads a constant 0)."""
    a, b = bch.parallel_lfsr_matrices(p)
    ab = np.concatenate([a, b], axis=1)
    idx = np.full((bch.PARITY_BITS, int(ab.sum(axis=1).max())), bch.PARITY_BITS + p)
    for k, row in enumerate(ab):
        cols = np.flatnonzero(row)
        idx[k, :len(cols)] = cols
    state = np.zeros((len(messages), bch.PARITY_BITS), np.uint8)
    zero = np.zeros((len(messages), 1), np.uint8)
    words = messages.reshape(len(messages), -1, p)     # word w, bit b = message bit w*p + b
    for w in range(words.shape[1]):
        ext = np.concatenate([state, words[:, w], zero], axis=1)
        state = np.bitwise_xor.reduce(ext[:, idx], axis=2)
    return state[:, ::-1]


@pytest.mark.parametrize("p", [1, 8, 32, 64, 128])
def test_parallel_lfsr_matches_encode(p):
    msgs = sample_messages(4)[[0, 4, 5, 6]]            # random, all ones, first and last bit
    np.testing.assert_array_equal(lfsr_parity(msgs, p), bch.encode(msgs)[:, bch.K:])


def test_parallel_lfsr_shapes():
    a, b = bch.parallel_lfsr_matrices(64)
    assert a.shape == (896, 896) and b.shape == (896, 64)
    assert a.dtype == b.dtype == np.uint8 and set(np.unique(a)) <= {0, 1}


def test_word_order():
    bits = np.zeros(16, np.uint8)
    bits[0] = bits[9] = 1
    assert bch.to_words(bits, 8) == [0x01, 0x02]       # stream bit 0 -> bit 0 of word 0
    assert bch.to_words(bits, 1)[:2] == [1, 0]
    rng = np.random.default_rng(5)
    stream = rng.integers(0, 2, 9088, dtype=np.uint8)
    for p in (1, 8, 64, 128):
        np.testing.assert_array_equal(bch.from_words(bch.to_words(stream, p), p), stream)


# -- input checks --------------------------------------------------------------------------------
@pytest.mark.parametrize("message, match", [
    (np.zeros(8191, np.uint8), r"shape \(8192,\) or \(rows, 8192\); got \(8191,\)"),
    (np.zeros((2, 2, 8192), np.uint8), r"shape .* got \(2, 2, 8192\)"),
    (np.full(8192, 2, np.uint8), r"bits must be 0 or 1; got 2 at index \(0,\)"),
    (-np.ones(8192, np.int64), r"bits must be 0 or 1; got -1"),
    (np.zeros(8192, np.float32), r"integers 0/1 \(or bools\); got dtype float32"),
])
def test_encode_rejects_bad_messages(message, match):
    with pytest.raises(ValueError, match=match):
        bch.encode(message)


def test_bad_codewords_and_word_widths_are_rejected():
    with pytest.raises(ValueError, match=r"codeword must have shape \(9088,\)"):
        bch.decode(np.zeros(8192, np.uint8))
    with pytest.raises(ValueError, match=r"codeword bits must be 0 or 1"):
        bch.syndromes(np.full(9088, 3, np.uint8))
    for p in (0, 3, 256, 1.0, True):
        with pytest.raises(ValueError, match=r"p must divide both 8192 and 896"):
            bch.parallel_lfsr_matrices(p)
    assert bch.encode(np.zeros(8192, bool)).shape == (9088,)    # bools are allowed


# -- decoding ------------------------------------------------------------------------------------
def test_decode_corrects_up_to_t_errors():
    rng = np.random.default_rng(6)
    msgs = sample_messages(6)[:4]
    codewords = bch.encode(msgs)
    decoded, counts = bch.decode(codewords)
    np.testing.assert_array_equal(decoded, msgs)
    np.testing.assert_array_equal(counts, 0)
    for n_err in (2, 17, 64):
        received = with_errors(codewords[0], n_err, rng)
        message, count = bch.decode(received)
        assert count == n_err
        np.testing.assert_array_equal(message, msgs[0])


@pytest.mark.slow
def test_decode_64_errors_and_not_65_against_galois():
    """64 random errors (first and last bit among them): our decoder and galois's recover the
    message. 65 errors: both report a failure (our count -1, the received message bits
    returned), in every one of the seeded trials; neither returns the original message as a
    success."""
    import galois

    rng = np.random.default_rng(7)
    msgs = rng.integers(0, 2, (4, bch.K), dtype=np.uint8)
    codewords = bch.encode(msgs)
    code = galois_bch()
    for n_err, correctable in ((64, True), (65, False)):
        received = np.array([with_errors(c, n_err, rng) for c in codewords])
        ours, counts = bch.decode(received)
        theirs, their_counts = code.decode(galois.GF2(received), errors=True)
        theirs = np.asarray(theirs)
        for row in range(len(msgs)):
            if correctable:
                assert counts[row] == their_counts[row] == 64
                np.testing.assert_array_equal(ours[row], msgs[row])
                np.testing.assert_array_equal(theirs[row], msgs[row])
            else:
                assert counts[row] == -1, f"65 errors: count {counts[row]}"
                np.testing.assert_array_equal(ours[row], received[row, :bch.K])
                assert not np.array_equal(ours[row], msgs[row])
                assert their_counts[row] == -1 or not np.array_equal(theirs[row], msgs[row])
