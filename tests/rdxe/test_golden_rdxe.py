"""rDXE golden model: accuracy of the fused (VRC) and sequential paths against float64 (the
study of golden/rdxe/accuracy.py), the float references, GQA, the RC, the KV
layouts."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe import datapath as rdxe


@pytest.fixture(scope="module")
def accuracy():
    from memwall.golden.rdxe.accuracy import study

    return study()


@pytest.mark.parametrize("op", ["rmsnorm_gemv", "attention"])
def test_fused_within_one_lsb_and_never_worse(accuracy, op):
    a = accuracy[op]
    assert a["elements"] > 10_000
    assert a["fused_within_1lsb"] >= 0.999
    assert a["fused_within_1lsb"] >= a["sequential_within_1lsb"]
    assert a["fused_max_lsb"] <= a["sequential_max_lsb"]
    if op == "rmsnorm_gemv":     # the fused path skips the normalised vector's rounding
        assert a["fused_mean_lsb"] < a["sequential_mean_lsb"]


def test_float_references_are_the_standard_definitions():
    rng = np.random.default_rng(3)
    x, gamma, w = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal((3, 8))
    want = w @ (x / np.sqrt(np.mean(x ** 2) + 1e-5) * gamma)
    assert np.allclose(rdxe.rmsnorm_gemv_reference(x, gamma, w, 1e-5), want)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((5, 2, 8)), \
        rng.standard_normal((5, 2, 8))
    for h in range(4):
        s = k[:, h // 2] @ q[h] / np.sqrt(8)
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        assert np.allclose(rdxe.attention_reference(q, k, v)[h], p @ v[:, h // 2])


def test_gqa_equals_repeat_kv():
    rng = np.random.default_rng(4)
    a = rdxe.quantise_attention(rng.standard_normal((6, 16)), rng.standard_normal((9, 2, 16)),
                                rng.standard_normal((9, 2, 16)))
    shared = rdxe.attention(a.q, a.k, a.v, a.score_rc, a.out_static)
    full = rdxe.attention(a.q, rdxe.repeat_kv(a.k, 3), rdxe.repeat_kv(a.v, 3), a.score_rc,
                          a.out_static)
    assert np.array_equal(shared["o"], full["o"])


def test_fused_rc_is_the_product_of_the_ve_factor_and_the_static_one():
    rng = np.random.default_rng(5)
    q = rdxe.quantise_rmsnorm_gemv(rng.standard_normal(64), np.ones(64),
                                   rng.standard_normal((8, 64)), 1e-5)
    f = rdxe.rmsnorm_gemv(q.x, q.w_merged, q.eps_sum, q.fused_static)
    u = int((q.x.astype(np.int64) ** 2).sum()) + q.eps_sum
    want = fx.rc_value(*fx.invsqrt_rc(u)) * fx.rc_value(q.fused_static[0] << 9,
                                                         q.fused_static[1] + 9)
    assert fx.rc_value(*f["rc"]) == pytest.approx(want, rel=2 ** -23)
    assert np.array_equal(f["y"], fx.apply_rc(f["acc"], *f["rc"], 8))


def test_int32_overflow_is_an_error():
    w = np.full((1, 1 << 18), 127)
    with pytest.raises(ValueError, match="INT32"):
        rdxe.gemv_acc(w, np.full(1 << 18, 127))


def test_mode_is_checked():
    with pytest.raises(ValueError, match="fused, sequential"):
        rdxe.softmax_pv(np.zeros(2, int), 0, np.zeros((2, 2), int), (1 << 15, 15), "fast")


def test_peak_ops():
    assert rdxe.peak_ops_per_cycle(8, 16, 16) * 200e6 == pytest.approx(0.8192e12)


@pytest.mark.parametrize("layout", ["iwur", "baseline"])
def test_kv_layouts_place_every_byte_once(layout):
    from memwall.golden.rdxe import layout as rdxe_layout

    vacs, lanes, max_tokens, dh = 4, 4, 16, 16
    rng = np.random.default_rng(6)
    t = 16
    # Distinct non-zero tags: K bytes 1..?, V bytes after them (mod 256 kept distinct by size).
    k = np.arange(1, t * dh + 1).reshape(t, dh) % 127 + 1
    v = -(np.arange(1, t * dh + 1).reshape(t, dh) % 127 + 1)
    image = rdxe_layout.kv_image(k, v, vacs, lanes, max_tokens, dh, layout)
    words = rdxe_layout.kv_words_needed(vacs, lanes, max_tokens, dh, layout)
    assert image.shape == (vacs, words, lanes)
    kw = rdxe_layout.v_base(vacs, lanes, max_tokens, dh)
    assert np.count_nonzero(image[:, :kw]) == t * dh                 # K: every byte, once
    v_bytes = image[:, kw:]
    assert np.count_nonzero(v_bytes) == t * dh
    used = np.count_nonzero(v_bytes) / v_bytes.size
    assert used == (1.0 if layout == "iwur" else dh / (vacs * lanes))
    # One token's K is one VAC's dh/lanes consecutive words; a word of V (iWuR) is lanes tokens.
    tok = int(rng.integers(t))
    row = image[tok % vacs, (tok // vacs) * (dh // lanes):(tok // vacs + 1) * (dh // lanes)]
    assert np.array_equal(row.ravel().view(np.int8), k[tok].astype(np.int8))
    if layout == "iwur":
        assert np.array_equal(image[1, kw].view(np.int8), v[0:lanes, 1].astype(np.int8))
    else:
        assert np.array_equal(image[1, kw + 3].view(np.int8),
                              v[3, 1::vacs].astype(np.int8))
