"""rDXE golden model: the host-side quantisation contract against a plain float re-implementation,
the accuracy study on float data (golden/rdxe/accuracy.py), saturation and overflow as errors or
counts, the float references, GQA, the RC, the KV layouts."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe import accuracy as study_module
from memwall.golden.rdxe import datapath as dp
from memwall.golden.rdxe import quantise as qz


@pytest.fixture(scope="module")
def accuracy():
    return study_module.study()


# --- the accuracy study: figures recorded, claims that could fail ------------------------------

def test_study_records_every_operation_workload_scale_and_mode(accuracy):
    table = study_module.rows(accuracy)
    assert len(table) == sum(len(w) * 2 * 2 for w in study_module.WORKLOADS.values())
    for r in table:
        assert r["elements"] >= 5_000, r
        assert 0 < r["within_1lsb"] <= 1 and 0 < r["mean_lsb"] <= r["max_lsb"], r
        # No score past INT16 (a key outlier of 40x would pass it): the figures measure
        # quantisation alone. (Outputs cannot saturate at a calibrated scale.)
        assert r.get("scores_saturated", 0) == 0, r
    assert all("scores_saturated" in r for r in table if r["op"] == "attention")
    assert "| rmsnorm_gemv | large_gain | channel | fused |" in study_module.format_table(accuracy)


@pytest.mark.parametrize("op, workload", [("rmsnorm_gemv", w) for w in
                                          study_module.WORKLOADS["rmsnorm_gemv"]]
                         + [("attention", "outlier_channel")])
def test_per_slice_scales_are_no_worse(accuracy, op, workload):
    """Per-row weight scales (every RMSNorm-GEMV workload: the rows differ in range) and per-KV-head
    scales (the key outlier sits in one head) against one scale per tensor, in both modes."""
    fine, coarse = study_module.SCALES[op]
    for mode in dp.MODES:
        f, c = accuracy[op][workload][fine][mode], accuracy[op][workload][coarse][mode]
        assert f["mean_lsb"] <= c["mean_lsb"] and f["within_1lsb"] >= c["within_1lsb"], mode


def test_folding_gamma_on_the_large_gain_workload(accuracy):
    """The datapath docstring's claims: with per-tensor weights, folding one large gain into the
    weights costs more than keeping gamma apart; per-row steps contain it."""
    gain, plain = accuracy["rmsnorm_gemv"]["large_gain"], accuracy["rmsnorm_gemv"]["ordinary"]
    assert gain["tensor"]["fused"]["mean_lsb"] > gain["tensor"]["sequential"]["mean_lsb"]
    assert gain["tensor"]["fused"]["mean_lsb"] > 2 * plain["tensor"]["fused"]["mean_lsb"]
    assert gain["channel"]["fused"]["mean_lsb"] <= gain["channel"]["sequential"]["mean_lsb"]


def test_scores_past_int16_are_counted():
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((2, 16)), rng.standard_normal((5, 1, 16)), \
        rng.standard_normal((5, 1, 16))
    assert qz.quantise_attention(q, k, v).scores_saturated == 0
    z = np.einsum("hd,td->ht", q * 1e3, k[:, 0]) / 4 * np.log2(np.e) * 256
    assert qz.quantise_attention(q * 1e3, k, v).scores_saturated \
        == np.count_nonzero(np.abs(z) > 32767.5)
    assert np.count_nonzero(np.abs(z) > 32767.5) > 0


# --- the quantisation contract, re-implemented in plain float64 -------------------------------

def _q8(a, scale):
    return np.clip(np.rint(a / scale), -127, 127)


def _scales(a, per_row: bool):
    """(n, 1) per-row or () per-tensor symmetric scales of a 2-D array, as documented."""
    top = np.abs(a).max(axis=1, keepdims=True) if per_row else np.abs(a).max()
    return np.where(top > 0, top, 127.0) / 127


def _near_tie(v, rel=2.0 ** -12):
    """Values whose rounding half up the datapath's truncated factors may flip."""
    return np.abs(v - np.floor(v) - 0.5) <= rel * np.abs(v) + 1e-9


RMS_CASES = [(w, i) for w in study_module.WORKLOADS["rmsnorm_gemv"] for i in range(4)]


@pytest.mark.parametrize("workload, index", RMS_CASES)
@pytest.mark.parametrize("scale", qz.WEIGHT_SCALES)
def test_rmsnorm_gemv_is_the_documented_quantisation(workload, index, scale):
    """Operands equal the documented rounding exactly; each output is the float64 answer on the
    dequantised operands to within the datapath's roundings (half an LSB at the output, half an
    INT16 step per row for per-channel weights, the factors' 2**-13; sequential: x_hat equal
    except at rounding ties, which the output then uses)."""
    x, gamma, w, eps = list(study_module.rmsnorm_cases(np.random.default_rng([5, index]),
                                                       workload, count=1))[0]
    quant = qz.quantise_rmsnorm_gemv(x, gamma, w, eps, scale)
    per_row = scale == "channel"
    s_x = np.abs(x).max() / 127
    s_y = np.abs(dp.rmsnorm_gemv_reference(x, gamma, w, eps)).max() / 127
    assert quant.s_y == s_y and not quant.s_y_given and quant.saturated == 0
    s_wm, s_w, s_g = _scales(w * gamma, per_row), _scales(w, per_row), np.abs(gamma).max() / 127
    assert np.array_equal(quant.x, _q8(x, s_x))
    assert np.array_equal(quant.w_merged, _q8(w * gamma, s_wm))
    assert np.array_equal(quant.w, _q8(w, s_w)) and np.array_equal(quant.g, _q8(gamma, s_g))
    xt = quant.x * s_x
    a = xt / np.sqrt(np.mean(xt * xt) + eps)
    for mode in dp.MODES:
        got = qz.quantised_rmsnorm_gemv(quant, mode)
        if mode == "fused":
            want = (quant.w_merged * s_wm) @ a / s_y
        else:
            x_hat = a * quant.g * s_g
            s_h = np.abs(x_hat).max() / 127
            hw = dp.rmsnorm_gemv(quant.x, quant.w, quant.eps_sum, quant.seq_out_static,
                                   mode, quant.g, quant.seq_norm_static, quant.bits)["x_hat"]
            mine = np.floor(x_hat / s_h + 0.5)
            assert np.all((hw == mine) | _near_tie(x_hat / s_h)), mode
            want = (quant.w * s_w) @ (hw * s_h) / s_y
        step = (quant.fused_row_scale if mode == "fused" else quant.seq_row_scale) / s_y
        slack = 0.5 + 2.0 ** -13 * np.abs(want) + (0.5 * step if per_row else 0)
        assert quant.bits == (16 if per_row else 8)
        want = np.clip(want, -128, 127)        # the calibrated top output may saturate
        assert np.all(np.abs(got["y_q"] - want) <= slack), (mode, np.abs(got["y_q"] - want).max())
        assert np.allclose(got["y"], got["values"] * step * s_y)


@pytest.mark.parametrize("workload, index", [(w, i) for w in study_module.WORKLOADS["attention"]
                                             for i in range(3)])
@pytest.mark.parametrize("scale", qz.KV_SCALES)
def test_attention_is_the_documented_quantisation(workload, index, scale):
    """Per-KV-head (or per-tensor) operands exactly as documented; per head, scores the float64
    scores within half a step, and the output the float64 softmax-weighted sum of the
    datapath's own numerators (fused) or probabilities (sequential, equal to
    round(127 e / sum e) except at ties) within half an LSB and the factors' error."""
    q, k, v = list(study_module.attention_cases(np.random.default_rng([6, index]), workload,
                                                count=1))[0]
    quant = qz.quantise_attention(q, k, v, scale)
    heads, dh = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads
    s_o = np.abs(dp.attention_reference(q, k, v)).max() / 127
    assert quant.s_o == s_o
    for mode in dp.MODES:
        got = qz.quantised_attention(quant, mode)
        for h in range(heads):
            kh = h // group
            if scale == "head":
                s_q = np.abs(q[kh * group:(kh + 1) * group]).max() / 127
                s_k, s_v = np.abs(k[:, kh]).max() / 127, np.abs(v[:, kh]).max() / 127
            else:
                s_q, s_k, s_v = (np.abs(t).max() / 127 for t in (q, k, v))
            assert np.array_equal(quant.q[h], _q8(q[h], s_q))
            assert np.array_equal(quant.k[:, kh], _q8(k[:, kh], s_k))
            assert np.array_equal(quant.v[:, kh], _q8(v[:, kh], s_v))
            sc = dp.qk_scores(quant.q[h], quant.k[:, kh], quant.score_rcs[kh])
            z = (quant.k[:, kh] * s_k) @ (quant.q[h] * s_q) / np.sqrt(dh) * np.log2(np.e) * 256
            assert np.all(np.abs(sc["z"] - z) <= 0.5 + 2.0 ** -23 * np.abs(z) + 1e-9)
            r = dp.softmax_pv(sc["z"], sc["z_max"], quant.v[:, kh], quant.statics(mode)[kh],
                                mode)
            assert np.array_equal(got["values"][h], r["o"])
            if mode == "fused":
                weights = r["e"] / r["e"].sum()
            else:
                mine = 127 * r["e"] / r["e"].sum()
                assert np.all((r["p"] == np.floor(mine + 0.5)) | _near_tie(mine))
                weights = r["p"] / 127
            want = np.clip(weights @ (quant.v[:, kh] * s_v) / s_o, -128, 127)
            assert np.all(np.abs(r["o"] - want) <= 0.5 + 2.0 ** -13 * np.abs(want)), (mode, h)


def test_folding_gamma_bound():
    """The datapath docstring's folding bound: each folded weight within half its row's step,
    the step at most max|gamma| times the unfolded one, and the weights' rounding moving y_i by
    at most s'_i / 2 * sum|x~| / rms(x~) <= s'_i d / 2."""
    rng = np.random.default_rng(8)
    x, gamma, w, eps = list(study_module.rmsnorm_cases(rng, "large_gain", count=1))[0]
    d = len(x)
    for scale in qz.WEIGHT_SCALES:
        quant = qz.quantise_rmsnorm_gemv(x, gamma, w, eps, scale)
        step = _scales(w * gamma, scale == "channel")
        assert np.all(np.abs(quant.w_merged * step - w * gamma) <= step / 2 * (1 + 1e-12))
        assert np.all(step <= _scales(w, scale == "channel") * np.abs(gamma).max()
                      * (1 + 1e-12))
        xt = quant.x * np.abs(x).max() / 127
        rms = np.sqrt(np.mean(xt * xt) + eps)
        moved = np.abs((quant.w_merged * step - w * gamma) @ (xt / rms))
        step = np.broadcast_to(step, (len(w), 1)).ravel()
        bound = step / 2 * np.abs(xt).sum() / rms
        assert np.all(moved <= bound * (1 + 1e-12)) and np.all(bound <= step * d / 2)


@pytest.mark.parametrize("mode", dp.MODES)
def test_channel_int16_factor_fits_the_worst_row(mode):
    """x along the largest folded row drives its INT16 value to the top of the range and no
    further: the factor is as large as the bound allows and nothing saturates."""
    rng = np.random.default_rng(9)
    d, n = 256, 32
    w = rng.standard_normal((n, d)) * np.exp(rng.standard_normal(n))[:, None]
    gamma = np.ones(d)
    quant = qz.quantise_rmsnorm_gemv(rng.standard_normal(d), gamma, w, 1e-9)
    top = quant.weights(mode)[int(np.argmax(np.linalg.norm(quant.weights(mode), axis=1)))]
    quant = qz.quantise_rmsnorm_gemv(top.astype(float), gamma, w, 1e-9)
    values = qz.quantised_rmsnorm_gemv(quant, mode)["values"]
    assert 0.9 * qz.INT16_MAX < np.abs(values).max() < qz.INT16_MAX


# --- given output scales, saturation, overflow, bad options -----------------------------------

@pytest.mark.parametrize("scale", qz.WEIGHT_SCALES)
@pytest.mark.parametrize("mode", dp.MODES)
def test_given_output_scale_saturates_and_counts(scale, mode):
    x, gamma, w, eps = list(study_module.rmsnorm_cases(np.random.default_rng(10), "ordinary",
                                                       count=1))[0]
    calibrated = qz.quantise_rmsnorm_gemv(x, gamma, w, eps, scale)
    quant = qz.quantise_rmsnorm_gemv(x, gamma, w, eps, scale, s_y=calibrated.s_y / 4)
    lsbs = quant.reference / quant.s_y
    assert quant.s_y_given and quant.saturated == np.count_nonzero(np.abs(lsbs + 0.5) >= 128)
    assert quant.saturated > 0
    y_q = qz.quantised_rmsnorm_gemv(quant, mode)["y_q"]
    assert y_q.min() >= -128 and y_q.max() <= 127
    assert np.all(y_q[lsbs > 140] == 127) and np.all(y_q[lsbs < -140] == -128)   # not wrapped
    inside = np.abs(lsbs) < 100
    assert np.abs(y_q[inside] - lsbs[inside]).max() < 8


def test_given_attention_scale_saturates_and_counts():
    rng = np.random.default_rng(11)
    q, k, v = rng.standard_normal((4, 16)), rng.standard_normal((9, 2, 16)), \
        rng.standard_normal((9, 2, 16))
    quant = qz.quantise_attention(q, k, v, s_o=qz.quantise_attention(q, k, v).s_o / 4)
    o_q = qz.quantised_attention(quant)["o_q"]
    assert quant.s_o_given and quant.saturated > 0
    assert np.count_nonzero((o_q == 127) | (o_q == -128)) >= quant.saturated


def test_attention_per_head_equals_one_command_stream_per_tensor():
    """With one scale per tensor every KV head has the same factors: the per-head runner is
    :func:`attention` itself."""
    rng = np.random.default_rng(12)
    quant = qz.quantise_attention(rng.standard_normal((6, 16)),
                                    rng.standard_normal((9, 3, 16)),
                                    rng.standard_normal((9, 3, 16)), "tensor")
    assert len(set(quant.score_rcs)) == len(set(quant.out_statics)) == 1
    assert (quant.score_rc, quant.out_static) == (quant.score_rcs[0], quant.out_statics[0])
    per_head = qz.quantise_attention(quant.q * np.arange(1, 7)[:, None],
                                       quant.k * np.arange(1, 4)[None, :, None], quant.v)
    with pytest.raises(ValueError, match="score_rc differs per KV head: use score_rcs"):
        _ = per_head.score_rc
    for mode in dp.MODES:
        whole = dp.attention(quant.q, quant.k, quant.v, quant.score_rcs[0],
                               quant.statics(mode)[0], mode)
        assert np.array_equal(qz.quantised_attention(quant, mode)["values"], whole["o"])


def test_pv_past_int32_is_an_input_error():
    """4,200 tokens of equal scores (every e_t = 2**12) over v = 127: sum e_t v_t passes INT32,
    which the hardware would wrap; refused, naming the operation and what fits."""
    t = 4200
    quant = qz.quantise_attention(np.zeros((1, 16)), np.ones((t, 1, 16)), np.ones((t, 1, 16)))
    with pytest.raises(dp.QuantiseError, match=r"P\.V .* overflows the INT32 accumulator: a "
                       r"sum reaches 2,184,.* up to MAX_TOKENS \(4,096\) tokens always fit"):
        qz.quantised_attention(quant)
    assert qz.quantised_attention(qz.quantise_attention(
        np.zeros((1, 16)), np.ones((4096, 1, 16)), np.ones((4096, 1, 16))))["o_q"].max() == 127


def test_eps_that_would_saturate_the_sum_register():
    x = np.ones(16)
    s_x = 1 / 127
    eps = (dp.U32_MAX - 100) * s_x * s_x / 16       # alone it fits; with sum(x**2) it does not
    with pytest.raises(qz.QuantiseError, match="past the 32-bit epsilon register"):
        qz.quantise_rmsnorm_gemv(x, np.ones(16), np.ones((2, 16)), eps)


@pytest.mark.parametrize("call, message", [
    (lambda: qz.quantise_rmsnorm_gemv(np.ones(4), np.ones(4), np.ones((2, 4)), 1e-5, "row"),
     "weight_scale 'row': must be one of channel, tensor"),
    (lambda: qz.quantise_attention(np.ones((2, 4)), np.ones((3, 1, 4)), np.ones((3, 1, 4)),
                                     "token"), "kv_scale 'token': must be one of head, tensor"),
    (lambda: qz.quantise_rmsnorm_gemv(np.ones(4), np.ones(4), np.ones((2, 4)), 1e-5,
                                        s_y=float("nan")), "s_y nan: an output scale must be"),
    (lambda: qz.quantise_attention(np.ones((2, 4)), np.ones((3, 1, 4)), np.ones((3, 1, 4)),
                                     s_o=-1.0), "s_o -1.0: an output scale must be"),
    (lambda: qz.quantise_rmsnorm_gemv(np.ones(4), np.ones(4), np.ones((2, 4)), 1e-5, "tensor",
                                        s_y=1e-300),
     "the fused output factor = .* set by the scales of w, gamma and the output \\(given\\)"),
])
def test_bad_quantisation_options(call, message):
    with pytest.raises(qz.QuantiseError, match=message):
        call()


def test_float_references_are_the_standard_definitions():
    rng = np.random.default_rng(3)
    x, gamma, w = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal((3, 8))
    want = w @ (x / np.sqrt(np.mean(x ** 2) + 1e-5) * gamma)
    assert np.allclose(dp.rmsnorm_gemv_reference(x, gamma, w, 1e-5), want)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((5, 2, 8)), \
        rng.standard_normal((5, 2, 8))
    for h in range(4):
        s = k[:, h // 2] @ q[h] / np.sqrt(8)
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        assert np.allclose(dp.attention_reference(q, k, v)[h], p @ v[:, h // 2])


def test_gqa_equals_repeat_kv():
    rng = np.random.default_rng(4)
    a = qz.quantise_attention(rng.standard_normal((6, 16)), rng.standard_normal((9, 2, 16)),
                                rng.standard_normal((9, 2, 16)), "tensor")
    shared = dp.attention(a.q, a.k, a.v, a.score_rcs[0], a.out_statics[0])
    full = dp.attention(a.q, dp.repeat_kv(a.k, 3), dp.repeat_kv(a.v, 3), a.score_rcs[0],
                          a.out_statics[0])
    assert np.array_equal(shared["o"], full["o"])


def test_fused_rc_is_the_product_of_the_ve_factor_and_the_static_one():
    rng = np.random.default_rng(5)
    q = qz.quantise_rmsnorm_gemv(rng.standard_normal(64), np.ones(64),
                                   rng.standard_normal((8, 64)), 1e-5)
    f = dp.rmsnorm_gemv(q.x, q.w_merged, q.eps_sum, q.fused_static)
    u = int((q.x.astype(np.int64) ** 2).sum()) + q.eps_sum
    want = fx.rc_value(*fx.invsqrt_rc(u)) * fx.rc_value(q.fused_static[0] << 9,
                                                         q.fused_static[1] + 9)
    assert fx.rc_value(*f["rc"]) == pytest.approx(want, rel=2 ** -23)
    assert np.array_equal(f["y"], fx.apply_rc(f["acc"], *f["rc"], 8))


def test_int32_overflow_is_an_error():
    """The datapath takes any INT8: (-128) x (-128) = 16,384 is the largest product, so rows of
    131,071 always fit and 131,072 such products reach 2**31, one past INT32."""
    n = dp.GEMV_FITS_PRODUCTS
    assert n == 131_071
    assert dp.gemv_acc(np.full((1, n), -128), np.full(n, -128))[0] == n * 128 * 128
    with pytest.raises(dp.QuantiseError, match="GEMV overflows the INT32 accumulator: a sum "
                       "reaches 2,147,483,648 .* rows of up to 131,071 INT8 products"):
        dp.gemv_acc(np.full((1, n + 1), -128), np.full(n + 1, -128))
    # Products of -128 x 127 reach -2**31 only after 132,104 of them: the positive side bounds.
    assert dp.gemv_acc(np.full((1, 132_104), -128), np.full(132_104, 127))[0] \
        == -132_104 * 128 * 127
    assert qz.QuantiseError is dp.QuantiseError                     # one error, raised by both


def test_mode_is_checked():
    with pytest.raises(ValueError, match="fused, sequential"):
        dp.softmax_pv(np.zeros(2, int), 0, np.zeros((2, 2), int), (1 << 15, 15), "fast")


def test_peak_ops():
    assert dp.peak_ops_per_cycle(8, 16, 16) * 200e6 == pytest.approx(0.8192e12)


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


def test_the_float_references_sum_exactly_in_any_order():
    """The accuracy figures rest on the float references; their sums are rounded once, so they
    cannot move with the machine's BLAS or SIMD order (they did: CI and a workstation disagreed
    by one element in 10,944 before)."""
    from fractions import Fraction
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 999)) * np.exp2(rng.integers(-30, 30, size=(6, 999)))
    perm = rng.permutation(a.shape[1])
    got = dp.exact_sums(a)
    assert np.array_equal(got, dp.exact_sums(a[:, perm]))
    assert [float(sum(map(Fraction, row))) for row in a] == got.tolist()
    x, gamma, w = rng.standard_normal(64), rng.standard_normal(64), rng.standard_normal((5, 64))
    cols = rng.permutation(64)
    assert np.array_equal(dp.rmsnorm_gemv_reference(x, gamma, w, 1e-5),
                          dp.rmsnorm_gemv_reference(x[cols], gamma[cols], w[:, cols], 1e-5))
    q, k, v = rng.standard_normal((4, 16)), rng.standard_normal((9, 2, 16)), \
        rng.standard_normal((9, 2, 16))
    t = rng.permutation(9)
    assert np.array_equal(dp.attention_reference(q, k, v), dp.attention_reference(q, k[t], v[t]))
