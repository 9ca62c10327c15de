"""d-PLENA sampling golden models: LLaDA schedule, top-k unit, HW vs float64 reference, I/O."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.common.formats import BF16, round_to_bf16
from memwall.golden.common.fparith import bf16_key
from memwall.golden.common.transcendental import (
    bf16_exp,
    bf16_recip,
    exp_reference,
    measure,
    recip_reference,
)
from memwall.golden.dplena import sampling as d
from memwall.golden.dplena.mxfp8 import dequantize, quantize

MASK_ID = 126336  # LLaDA's mask token; >= every V used here, so argmax never predicts it


def _bf16(values) -> np.ndarray:
    return round_to_bf16(np.asarray(values, dtype=np.float32)).view(np.uint16)


def _bf16_as_f64(bits) -> np.ndarray:
    return BF16.from_bits(bits).astype(np.float64)


# --- get_num_transfer_tokens -----

def _llada_num_transfer_tokens(mask_index: np.ndarray, steps: int) -> np.ndarray:
    """Line-by-line transcription of LLaDA's generate.get_num_transfer_tokens (torch -> numpy)."""
    mask_num = mask_index.sum(axis=1, keepdims=True)
    base = mask_num // steps
    remainder = mask_num % steps
    num_transfer_tokens = np.zeros((mask_num.shape[0], steps), dtype=np.int64) + base
    for i in range(mask_num.shape[0]):
        num_transfer_tokens[i, :remainder[i, 0]] += 1
    return num_transfer_tokens


def test_num_transfer_tokens_hand_example():
    counts = [10, 3, 0, 7, 4]
    mask = np.array([[True] * c + [False] * (10 - c) for c in counts])
    got = d.get_num_transfer_tokens(mask, 4)
    assert got.dtype == np.int64
    assert got.tolist() == [[3, 3, 2, 2], [1, 1, 1, 0], [0, 0, 0, 0], [2, 2, 2, 1], [1, 1, 1, 1]]


def test_num_transfer_tokens_matches_llada():
    rng = np.random.default_rng(0)
    for _ in range(50):
        b, n_l, steps = rng.integers(1, 6), rng.integers(1, 70), int(rng.integers(1, 40))
        mask = rng.random((b, n_l)) < rng.random()
        got = d.get_num_transfer_tokens(mask, steps)
        assert np.array_equal(got, _llada_num_transfer_tokens(mask, steps))
        assert np.array_equal(got.sum(axis=1), mask.sum(axis=1))      # everything unmasked
        assert np.all(np.diff(got, axis=1) <= 0) and np.all(got.max(1) - got.min(1) <= 1)


def test_num_transfer_tokens_errors():
    with pytest.raises(ValueError, match="steps"):
        d.get_num_transfer_tokens(np.ones((1, 4), bool), 0)
    with pytest.raises(ValueError, match="mask_index"):
        d.get_num_transfer_tokens(np.ones(4, bool), 2)


# --- topk_mask -----

def _topk_argsort(conf_bits, valid, k) -> np.ndarray:
    """Specification of V_TOPK_MASK: stable sort by key descending, invalid = -inf."""
    key = bf16_key(np.where(valid, conf_bits, np.uint16(d.NEG_INF_BF16))).astype(np.int64)
    out = np.zeros(conf_bits.shape, dtype=bool)
    for b in range(conf_bits.shape[0]):
        order = np.argsort(-key[b], kind="stable")
        out[b, order[:min(int(k[b]), conf_bits.shape[1])]] = True
    return out


SPECIAL = _bf16([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, 1e-40, -1e-40, 2.0])
SPECIAL = np.concatenate([SPECIAL, np.array([0x7FC0, 0xFFC0, 0x7F81], np.uint16)])  # NaNs


@pytest.mark.parametrize("source", ["special", "random_bits", "few_values"])
def test_topk_matches_stable_argsort(source):
    rng = np.random.default_rng({"special": 1, "random_bits": 2, "few_values": 3}[source])
    for _ in range(300):
        b, n_l = int(rng.integers(1, 4)), int(rng.integers(1, 20))
        if source == "special":
            conf = SPECIAL[rng.integers(0, len(SPECIAL), (b, n_l))]
        elif source == "random_bits":
            conf = rng.integers(0, 1 << 16, (b, n_l)).astype(np.uint16)
        else:
            conf = _bf16(rng.integers(-2, 3, (b, n_l)))
        valid = rng.random((b, n_l)) < rng.random()
        k = rng.integers(0, n_l + 3, b)
        got = d.topk_mask(conf, valid, k)
        assert np.array_equal(got, _topk_argsort(conf, valid, k))
        assert np.array_equal(got.sum(axis=1), np.minimum(k, n_l))


def _row(values, valid=None, k=1):
    conf = _bf16(values)[None]
    valid = np.ones(conf.shape, bool) if valid is None else np.array(valid)[None]
    return d.topk_mask(conf, valid, np.array([k]))[0].tolist()


def test_topk_directed():
    T, F = True, False
    assert _row([-3.0, -1.0, -2.0, -0.5], k=2) == [F, T, F, T]          # negatives
    assert _row([1.0, 2.0, 2.0, 1.0, 2.0], k=2) == [F, T, T, F, F]       # ties: lower index
    assert _row([1.0, 2.0, 2.0, 1.0, 2.0], k=4) == [T, T, T, F, T]
    assert _row([-0.0, 0.0], k=1) == [T, F]                              # -0 == +0
    assert _row([0.0, -0.0], k=1) == [T, F]
    assert _row([-0.0, 1e-40, 0.0], k=1) == [F, T, F]                    # subnormal > 0
    assert _row([1.0, 2.0, 3.0], k=0) == [F, F, F]
    assert _row([1.0, 2.0, 3.0], k=3) == [T, T, T]
    assert _row([1.0, 2.0, 3.0], k=7) == [T, T, T]                       # k > L
    # k > number of valid positions: the rest are -inf, chosen by index.
    assert _row([5.0, 1.0, 2.0, 9.0, 3.0], [F, T, F, T, F], k=3) == [T, T, F, T, F]
    # All invalid: the first k positions.
    assert _row([5.0, 1.0, 2.0, 9.0], [F, F, F, F], k=2) == [T, T, F, F]
    # A real -inf ties with invalid positions by index.
    assert _row([-np.inf, 7.0, 1.0], [T, F, T], k=2) == [T, F, T]
    assert _row([-np.inf, 7.0, 1.0], [T, F, F], k=2) == [T, T, F]
    # NaN (either sign) ranks above +inf; NaNs tie by index.
    conf = np.array([[0x7F80, 0xFFC0, 0x3F80, 0x7FC0]], np.uint16)
    assert d.topk_mask(conf, np.ones((1, 4), bool), np.array([2]))[0].tolist() == [F, T, F, T]
    # Per-row k.
    conf = _bf16([[1, 2, 3], [3, 2, 1]])
    got = d.topk_mask(conf, np.ones((2, 3), bool), np.array([1, 2]))
    assert got.tolist() == [[F, F, T], [T, T, F]]


def test_topk_errors():
    conf, valid = _bf16([[1.0, 2.0]]), np.ones((1, 2), bool)
    with pytest.raises(ValueError, match="k"):
        d.topk_mask(conf, valid, np.array([-1]))
    with pytest.raises(ValueError, match="k"):
        d.topk_mask(conf, valid, np.array([1, 1]))
    with pytest.raises(ValueError, match="valid"):
        d.topk_mask(conf, valid.astype(np.int8), np.array([1]))
    with pytest.raises(ValueError, match="conf_bits"):
        d.topk_mask(conf.astype(np.int32), valid, np.array([1]))


# --- masked_select and the confidence methods -----

def test_masked_select():
    got = d.masked_select(np.array([True, False, True]), np.array([1, 2, 3]),
                          np.array([-7, 8, 2**31 - 1], np.int64))
    assert got.dtype == np.int32 and got.tolist() == [1, 8, 3]
    with pytest.raises(ValueError, match="int32"):
        d.masked_select(np.array([True]), np.array([2**31]), np.array([0]))
    with pytest.raises(TypeError):
        d.masked_select(np.array([1]), np.array([1]), np.array([0]))


def test_method1_confidence():
    z = np.array([[1.0, 3.0, 3.0, -1.0], [0.0, 0.0, 0.0, 0.0], [2.0, np.nan, 5.0, np.nan]])
    x0, p = d.method1_confidence(z)
    assert x0.tolist() == [1, 0, 1]                                     # first index on ties
    e = np.exp(z[0] - 3.0)
    assert p[0] == pytest.approx(1.0 / e.sum(), rel=1e-15)
    assert p[1] == 0.25 and np.isnan(p[2])


@pytest.mark.parametrize("vlen", [16, 64])
def test_method2_argmax_exact_and_confidence_close(vlen):
    rng = np.random.default_rng(vlen)
    for n_v in [1, 5, 16, 17, 64, 100, 257]:
        z = _bf16(rng.standard_normal((6, n_v)) * rng.choice([0.5, 3.0, 10.0]))
        z[0, :] = z[0, 0]                                                # all tied
        x0, conf = d.method2_confidence_hw(z, vlen)
        assert x0.dtype == np.int64 and conf.dtype == np.uint16
        ref_x0, ref_p = d.method1_confidence(_bf16_as_f64(z))
        assert np.array_equal(x0, ref_x0)
        assert x0[0] == 0
        hw = _bf16_as_f64(conf)
        assert np.all(np.abs(hw - ref_p) <= _conf_tolerance(_bf16_as_f64(z)) * ref_p)


def test_method2_nonfinite():
    z = _bf16([[1.0, np.nan, 2.0, np.nan], [1.0, np.inf, 0.0, 3.0], [1.0, -np.inf, 1.0, 1.0],
               [-np.inf] * 4])
    x0, conf = d.method2_confidence_hw(z, 16)
    assert x0.tolist() == [1, 1, 0, 0]
    assert BF16.is_nan(conf).tolist() == [True, True, False, True]
    assert _bf16_as_f64(conf[2]) == pytest.approx(1 / 3, rel=2 ** -6)


# --- HW golden vs float64 reference ------------------------------------------------------------

# Relative error budget of the HW confidence against the float64 softmax on the same BF16
# logits (u = 2**-8, BF16's unit roundoff):
# * d = bf16(z - m) is off by <= |d| u, so exp(d) by a factor <= exp(|d| u);
# * the exp unit is within EXP_ULP ulps (<= EXP_ULP * 2**-7 relative), output rounding included;
#   results it flushes to zero (< 2**-126) weigh nothing next to the max term (exp(0) = 1);
# * the FP32 sum of positive terms: <= V * 2**-24 relative (tree + chunk accumulation);
# * bf16(sum): u; the reciprocal (RECIP_ULP ulps, correctly rounded: 0.5): <= RECIP_ULP * 2**-7.
# Weighted by p = softmax(z), with 5 % slack for the second-order terms.
with np.errstate(invalid="ignore"):   # measure() widens NaN inputs too
    EXP_ULP = measure(bf16_exp, exp_reference)["max_ulp"]
    RECIP_ULP = measure(bf16_recip, recip_reference)["max_ulp"]
U = 2.0 ** -8


def _conf_tolerance(z: np.ndarray) -> np.ndarray:
    """Relative bound on |conf_hw - conf_ref| / conf_ref per position, from BF16 logits z."""
    with np.errstate(invalid="ignore"):
        dz = z - z.max(axis=-1, keepdims=True)
        p = np.exp(dz)
        p /= p.sum(axis=-1, keepdims=True)
    t_terms = (p * (np.exp(np.abs(dz) * U) * (1 + EXP_ULP * 2.0 ** -7) - 1)).sum(axis=-1)
    return 1.05 * (t_terms + z.shape[-1] * 2.0 ** -24 + U + RECIP_ULP * 2.0 ** -7)


def test_transcendental_accuracy_assumed_here():
    assert EXP_ULP < 1.0 and RECIP_ULP <= 0.5


def _bounds(ref_conf, ref_transfer, tol):
    """Per row: the lowest lower bound among the reference's selected finite confidences and
    the highest upper bound among its unselected finite ones."""
    finite = np.isfinite(ref_conf)
    lo = ref_conf * (1 - tol)
    hi = ref_conf * (1 + tol)
    sel_lo = np.where(finite & ref_transfer, lo, np.inf).min(axis=1)
    rest_hi = np.where(finite & ~ref_transfer, hi, -np.inf).max(axis=1)
    return lo, hi, sel_lo, rest_hi


def _ambiguous_rows(ref_conf, ref_transfer, tol) -> np.ndarray:
    """Rows whose reference top-k boundary lies within the HW error: some selected finite
    confidence's lower bound is <= some unselected finite confidence's upper bound. Elsewhere
    every selected/unselected pair keeps a strict order in the HW values as well, so the HW
    top-k must equal the reference's (-inf positions are ranked by index in both)."""
    _, _, sel_lo, rest_hi = _bounds(ref_conf, ref_transfer, tol)
    return sel_lo <= rest_hi


def _workload(rng, n_b, n_l, n_v):
    """Random logits with a per-position temperature, so confidences spread over (1/V, 1)."""
    scale = np.exp(rng.uniform(np.log(0.3), np.log(12.0), (n_b, n_l, 1)))
    logits = (rng.standard_normal((n_b, n_l, n_v)) * scale).astype(np.float32)
    x = rng.integers(0, n_v, (n_b, n_l))
    x[rng.random((n_b, n_l)) < rng.uniform(0.2, 1.0)] = MASK_ID
    k = rng.integers(0, n_l + 2, n_b)
    return logits, x, k


@pytest.mark.parametrize("stable_max", d.STABLE_MAX_MODES)
@pytest.mark.parametrize("fmt", ["bf16", "mxfp8"])
@pytest.mark.parametrize("vlen", [16, 64])
def test_hw_matches_reference(fmt, vlen, stable_max):
    rng = np.random.default_rng({"bf16": 10, "mxfp8": 20}[fmt] + vlen)
    nontrivial = checked = 0
    for _ in range(40):
        n_b, n_l = int(rng.integers(1, 5)), int(rng.integers(1, 33))
        n_v = int(rng.choice([1, 7, vlen, vlen + 1, 3 * vlen - 5, 300]))
        logits, x, k = _workload(rng, n_b, n_l, n_v)
        bits = d.prepare_logits(logits, fmt)
        z = _bf16_as_f64(bits)                                     # what the HW computes on
        # fused: chunks of 2 VLEN, so rows of 300 logits are rescaled several times.
        hw = d.sample_step_hw(bits, x, MASK_ID, k, vlen, stable_max=stable_max,
                              v_chunk=2 * vlen)
        ref = d.sample_step_reference(z, x, MASK_ID, k)
        masked = x == MASK_ID
        # x0: exact (argmax of BF16 values is exact; first index on ties in both).
        assert np.array_equal(hw["x0"], ref["x0"])
        # Confidence within the per-position bound, and -inf exactly where not masked.
        tol = _conf_tolerance(z)
        assert hw["confidence"].dtype == np.float32
        assert np.all(np.isneginf(hw["confidence"][~masked]))
        hc = hw["confidence"][masked].astype(np.float64)
        rc = ref["confidence"][masked]
        assert np.all(np.abs(hc - rc) <= tol[masked] * rc)
        # Transfer and x: exact except in rows whose top-k boundary is within tolerance.
        amb = _ambiguous_rows(ref["confidence"], ref["transfer"], tol)
        ok = ~amb
        assert np.array_equal(hw["transfer"][ok], ref["transfer"][ok])
        assert np.array_equal(hw["x"][ok], ref["x"][ok])
        # In ambiguous rows, a position may only swap in/out if it lies in the grey zone.
        lo, hi, sel_lo, rest_hi = _bounds(ref["confidence"], ref["transfer"], tol)
        gained = hw["transfer"] & ~ref["transfer"]
        lost = ~hw["transfer"] & ref["transfer"]
        assert np.all(~gained | (hi >= sel_lo[:, None]))
        assert np.all(~lost | (lo <= rest_hi[:, None]))
        # Everywhere: exactly min(k, L) transfers, and x only changes at masked transfers.
        assert np.array_equal(hw["transfer"].sum(1), np.minimum(k, n_l))
        changed = hw["x"] != x
        assert np.all(hw["transfer"][changed] & masked[changed])
        assert np.array_equal(hw["x"], np.where(hw["transfer"], hw["x0"], x))
        # Rows where the top-k actually has to choose (0 < k < #masked).
        hard = (k > 0) & (k < masked.sum(1))
        assert not np.any(amb & ~hard)
        nontrivial += int(hard.sum())
        checked += int((hard & ok).sum())
    # The exact comparison must cover most of the rows where the choice is not trivial.
    assert nontrivial >= 30 and checked >= nontrivial // 2, (checked, nontrivial)


def test_identical_positions_tie_by_index():
    """Positions with identical logits get identical confidences in both models; the lower
    index wins the last slot."""
    rng = np.random.default_rng(4)
    row = rng.standard_normal(50).astype(np.float32)
    logits = np.stack([row * s for s in (1.0, 3.0, 3.0, 3.0, 0.5)])[None]    # (1, 5, 50)
    x = np.full((1, 5), MASK_ID)
    bits = d.prepare_logits(logits, "bf16")
    for k in range(6):
        hw = d.sample_step_hw(bits, x, MASK_ID, np.array([k]), 16)
        ref = d.sample_step_reference(_bf16_as_f64(bits), x, MASK_ID, np.array([k]))
        assert np.array_equal(hw["transfer"], ref["transfer"])
    hw = d.sample_step_hw(bits, x, MASK_ID, np.array([2]), 16)
    assert hw["transfer"][0, 1:4].tolist() == [True, True, False]


@pytest.mark.parametrize("fmt", ["bf16", "mxfp8"])
def test_nonfinite_logits_step(fmt):
    """NaN and +inf logits give NaN confidence (ranked first, by index); all -inf too."""
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((1, 6, 40)).astype(np.float32)
    logits[0, 1, 35] = np.nan
    logits[0, 3, 33] = np.inf
    logits[0, 4, :] = -np.inf
    logits[0, 5, 7] = -np.inf          # one -inf among finite values is harmless
    x = np.full((1, 6), MASK_ID)
    bits = d.prepare_logits(logits, fmt)
    for k in range(7):
        hw = d.sample_step_hw(bits, x, MASK_ID, np.array([k]), 16)
        ref = d.sample_step_reference(_bf16_as_f64(bits), x, MASK_ID, np.array([k]))
        assert np.array_equal(hw["x0"], ref["x0"])
        assert np.array_equal(hw["transfer"], ref["transfer"])
        assert np.array_equal(np.isnan(hw["confidence"]), np.isnan(ref["confidence"]))
    # MXFP8 has no inf: a block of 32 holding +-inf decodes to NaN, so x0 is the block's first
    # index and even position 5's lone -inf makes its confidence NaN.
    nan_pos = [1, 3, 4] if fmt == "bf16" else [1, 3, 4, 5]
    assert np.flatnonzero(np.isnan(hw["confidence"][0])).tolist() == nan_pos
    assert hw["x0"][0, [1, 3, 4]].tolist() == ([35, 33, 0] if fmt == "bf16" else [32, 32, 0])
    hw = d.sample_step_hw(bits, x, MASK_ID, np.array([2]), 16)
    assert hw["transfer"][0].tolist() == [False, True, False, True, False, False]


def test_step_reference_hand_example():
    logits = np.full((1, 4, 3), -10.0)
    logits[0, 0, 2] = 5.0      # masked, confident
    logits[0, 1, 1] = 1.0      # not masked: keeps its token
    logits[0, 2, 0] = 0.0      # masked, uniform -> argmax 0, p = 1/3
    logits[0, 2, :] = 0.0
    logits[0, 3, 1] = 3.0      # masked
    x = np.array([[9, 7, 9, 9]])
    ref = d.sample_step_reference(logits, x, 9, np.array([2]))
    assert ref["x0"].tolist() == [[2, 7, 0, 1]]
    assert ref["transfer"].tolist() == [[True, False, False, True]]
    assert ref["x"].tolist() == [[2, 7, 9, 1]]
    assert ref["confidence"][0, 1] == -np.inf
    assert ref["confidence"][0, 2] == pytest.approx(1 / 3)
    hw = d.sample_step_hw(d.prepare_logits(logits.astype(np.float32), "bf16"), x, 9,
                          np.array([2]), 16)
    for key in ("x", "x0", "transfer"):
        assert np.array_equal(hw[key], ref[key])


def test_full_block_denoising_loop():
    """LLaDA's loop over T steps with the HW step unmasks exactly k[b, t] tokens per step."""
    rng = np.random.default_rng(5)
    n_b, n_l, n_v, steps = 2, 16, 40, 5
    x = np.full((n_b, n_l), MASK_ID)
    x[0, :3] = [1, 2, 3]
    sched = d.get_num_transfer_tokens(x == MASK_ID, steps)
    for t in range(steps):
        before = (x == MASK_ID).sum(1)
        logits = rng.standard_normal((n_b, n_l, n_v)).astype(np.float32) * 4
        out = d.sample_step_hw(d.prepare_logits(logits, "mxfp8"), x, MASK_ID, sched[:, t], 64)
        x = out["x"]
        assert np.array_equal(before - (x == MASK_ID).sum(1), sched[:, t])
    assert not np.any(x == MASK_ID)
    assert x[0, :3].tolist() == [1, 2, 3]


def test_step_argument_errors():
    bits = np.zeros((1, 2, 3), np.uint16)
    with pytest.raises(ValueError, match="x"):
        d.sample_step_hw(bits, np.zeros((1, 3), np.int64), 0, np.array([1]), 16)
    with pytest.raises(ValueError, match="k"):
        d.sample_step_hw(bits, np.zeros((1, 2), np.int64), 0, np.array([1, 1]), 16)
    with pytest.raises(ValueError, match="int32"):
        d.sample_step_hw(bits, np.full((1, 2), 2**31), 0, np.array([1]), 16)
    with pytest.raises(ValueError, match="logits_bf16_bits"):
        d.sample_step_hw(bits.astype(np.float32), np.zeros((1, 2), np.int64), 0, np.array([1]),
                         16)


# --- prepare_logits -----

def test_prepare_logits():
    rng = np.random.default_rng(6)
    logits = (rng.standard_normal((2, 3, 70)) * 4).astype(np.float32)
    logits[0, 0, 5] = np.nan
    bf = d.prepare_logits(logits, "bf16")
    assert bf.dtype == np.uint16
    assert np.array_equal(bf, BF16.canonicalize_nan(round_to_bf16(logits).view(np.uint16)))
    assert bf[0, 0, 5] == BF16.qnan_bits
    mx = d.prepare_logits(logits, "mxfp8")
    assert np.array_equal(mx, dequantize(*quantize(logits)))
    assert np.array_equal(mx, d.prepare_logits(logits, "mxfp8_e4m3"))
    assert np.all(mx[0, 0, :32] == BF16.qnan_bits) and not BF16.is_nan(mx[0, 0, 32:]).any()
    assert np.array_equal(d.prepare_logits(logits.astype(np.float16), "bf16"),
                          d.prepare_logits(logits.astype(np.float16).astype(np.float32), "bf16"))
    with pytest.raises(ValueError, match="fmt"):
        d.prepare_logits(logits, "fp8")
    with pytest.raises(TypeError, match="float32"):
        d.prepare_logits(logits.astype(np.float64), "bf16")


# --- load / save -----

def _inputs(n_b=2, n_l=8, n_v=50):
    rng = np.random.default_rng(7)
    logits, x, k = _workload(rng, n_b, n_l, n_v)
    return {"logits": logits, "x": x.astype(np.int64), "mask_id": np.int64(MASK_ID),
            "k": np.minimum(k, 4).astype(np.int64)}


def _save(tmp_path, arrays, name="in.npz"):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_load_valid_and_widening(tmp_path):
    arrays = _inputs()
    got = d.load_sampling_inputs(_save(tmp_path, arrays), block_len=32, k_max=4)
    assert got["logits"].dtype == np.float32 and np.array_equal(got["logits"], arrays["logits"])
    assert got["x"].dtype == np.int64 and got["k"].dtype == np.int64
    assert got["mask_id"] == MASK_ID and isinstance(got["mask_id"], int)
    widened = dict(arrays, x=arrays["x"].astype(np.int32), k=arrays["k"].astype(np.int32),
                   mask_id=np.int32(MASK_ID), logits=arrays["logits"].astype(np.float16))
    got = d.load_sampling_inputs(_save(tmp_path, widened, "w.npz"), block_len=8, k_max=4)
    assert got["x"].dtype == np.int64 and got["k"].dtype == np.int64
    assert got["logits"].dtype == np.float32
    # Non-finite logits are allowed.
    nonfinite = dict(arrays, logits=arrays["logits"].copy())
    nonfinite["logits"][0, 0, :3] = [np.nan, np.inf, -np.inf]
    got = d.load_sampling_inputs(_save(tmp_path, nonfinite, "nf.npz"), block_len=8, k_max=4)
    assert np.isnan(got["logits"][0, 0, 0])


BAD_INPUTS = {
    "missing logits": (lambda a: a.pop("logits"), r"missing array 'logits'"),
    "missing mask_id": (lambda a: a.pop("mask_id"), r"missing array 'mask_id'"),
    "logits ndim": (lambda a: a.update(logits=a["logits"][0]),
                    r"'logits' has shape \(8, 50\); expected \(B, L, V\)"),
    "x ndim": (lambda a: a.update(x=a["x"][0]), r"'x' has shape \(8,\); expected \(B, L\)"),
    "k ndim": (lambda a: a.update(k=a["k"][None]), r"'k' has shape \(1, 2\); expected \(B,\)"),
    "mask_id shape": (lambda a: a.update(mask_id=np.array([MASK_ID])),
                      r"'mask_id' has shape \(1,\); expected a \(\) int64"),
    "logits float64": (lambda a: a.update(logits=a["logits"].astype(np.float64)),
                       r"'logits' has dtype float64; expected \(B, L, V\) float32"),
    "x float": (lambda a: a.update(x=a["x"].astype(np.float32)), r"'x' has dtype float32"),
    "k uint8": (lambda a: a.update(k=a["k"].astype(np.uint8)), r"'k' has dtype uint8"),
    "mask_id float": (lambda a: a.update(mask_id=np.float64(3)), r"'mask_id'.*float64"),
    "B mismatch x": (lambda a: a.update(x=a["x"][:1]), r"'x' must have shape \(B, L\)"),
    "L mismatch x": (lambda a: a.update(x=a["x"][:, :3]), r"'x' must have shape \(B, L\)"),
    "B mismatch k": (lambda a: a.update(k=a["k"][:1]), r"'k' must have shape \(B,\)"),
    "L too long": (lambda a: a.update(logits=np.zeros((2, 9, 5), np.float32),
                                      x=np.zeros((2, 9), np.int64)),
                   r"'logits' has shape \(2, 9, 5\); axis 1 may be at most 8"),
    "V zero": (lambda a: a.update(logits=np.zeros((2, 8, 0), np.float32)),
               r"'logits' has shape \(2, 8, 0\); axis 2 must have at least 1 element"),
    "k too big": (lambda a: a.update(k=np.array([5, 0])), r"'k'.*\[0, k_max = 4\].*found 5"),
    "k negative": (lambda a: a.update(k=np.array([1, -1])), r"'k'.*found -1"),
    "x negative": (lambda a: a["x"].__setitem__((0, 0), -3), r"'x'.*found -3"),
    "x too big": (lambda a: a["x"].__setitem__((0, 0), 2**31), r"'x'.*found 2147483648"),
    "mask_id big": (lambda a: a.update(mask_id=np.int64(2**40)), r"'mask_id'"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_load_rejects(tmp_path, case):
    arrays = _inputs()
    mutate, message = BAD_INPUTS[case]
    mutate(arrays)
    path = _save(tmp_path, arrays)
    with pytest.raises(d.SamplingInputError, match=message):
        d.load_sampling_inputs(path, block_len=8, k_max=4)


def test_load_unreadable(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(d.SamplingInputError, match="is not an .npz archive"):
        d.load_sampling_inputs(path, block_len=8, k_max=4)
    with pytest.raises(d.SamplingInputError):
        d.load_sampling_inputs(tmp_path / "absent.npz", block_len=8, k_max=4)
    npy = tmp_path / "single.npy"
    np.save(npy, np.zeros(3))
    with pytest.raises(d.SamplingInputError, match="not an .npz"):
        d.load_sampling_inputs(npy, block_len=8, k_max=4)
    (tmp_path / "corrupt.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(d.SamplingInputError, match="is not an .npz archive"):
        d.load_sampling_inputs(tmp_path / "corrupt.npz", block_len=8, k_max=4)
    obj = tmp_path / "obj.npz"
    np.savez(obj, logits=np.array([{}], dtype=object))
    with pytest.raises(d.SamplingInputError, match="holds Python objects"):
        d.load_sampling_inputs(obj, block_len=8, k_max=4)
    assert issubclass(d.SamplingInputError, ValueError)


def test_npz_round_trip_end_to_end(tmp_path):
    src = _save(tmp_path, _inputs(3, 8, 70))
    inp = d.load_sampling_inputs(src, block_len=8, k_max=4)
    out = d.sample_step_hw(d.prepare_logits(inp["logits"], "mxfp8"), inp["x"], inp["mask_id"],
                           inp["k"], 64)
    dst = tmp_path / "out.npz"
    d.save_sampling_outputs(dst, out)
    with np.load(dst) as f:
        assert sorted(f.files) == ["confidence", "transfer", "x", "x0"]
        for key, dtype in [("x", np.int64), ("x0", np.int64), ("confidence", np.float32),
                           ("transfer", np.bool_)]:
            assert f[key].dtype == dtype and np.array_equal(f[key], out[key])
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    # The float64 reference result is saved with float32 confidence.
    ref = d.sample_step_reference(inp["logits"], inp["x"], inp["mask_id"], inp["k"])
    d.save_sampling_outputs(dst, ref)
    with np.load(dst) as f:
        assert f["confidence"].dtype == np.float32 and np.array_equal(f["x"], ref["x"])


def test_save_failure_keeps_old_file(tmp_path):
    dst = tmp_path / "out.npz"
    good = {"x": np.zeros((1, 2), np.int64), "x0": np.zeros((1, 2), np.int64),
            "confidence": np.zeros((1, 2), np.float32), "transfer": np.zeros((1, 2), bool)}
    d.save_sampling_outputs(dst, good)
    before = dst.read_bytes()
    with pytest.raises(ValueError, match="transfer"):
        d.save_sampling_outputs(dst, {k: v for k, v in good.items() if k != "transfer"})
    with pytest.raises(ValueError, match="shape"):
        d.save_sampling_outputs(dst, dict(good, x=np.zeros((1, 3), np.int64)))

    assert dst.read_bytes() == before


def test_save_interrupted_write_is_atomic(tmp_path, monkeypatch):
    dst = tmp_path / "out.npz"
    good = {"x": np.zeros((1, 2), np.int64), "x0": np.zeros((1, 2), np.int64),
            "confidence": np.zeros((1, 2), np.float32), "transfer": np.zeros((1, 2), bool)}
    d.save_sampling_outputs(dst, good)
    before = dst.read_bytes()

    def half_written(f, **arrays):
        f.write(b"PK partial")
        raise OSError("disk full")

    monkeypatch.setattr(d.np, "savez", half_written)
    with pytest.raises(OSError, match="disk full"):
        d.save_sampling_outputs(dst, dict(good, x=np.ones((1, 2), np.int64)))
    assert dst.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]


def test_fused_single_chunk_equals_two_pass_and_argmax_always():
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((3, 5, 300)) * 4).astype(np.float32)
    bits = d.prepare_logits(logits, "mxfp8")
    x0_2, conf_2 = d.method2_confidence_hw(bits, 32)
    x0_1, conf_1 = d.online_confidence_hw(bits, 32, v_chunk=320)   # one chunk: no rescale
    assert np.array_equal(x0_1, x0_2) and np.array_equal(conf_1, conf_2)
    for v_chunk in (32, 64, 96):
        x0_f, conf_f = d.online_confidence_hw(bits, 32, v_chunk)
        assert np.array_equal(x0_f, x0_2)
        assert np.allclose(BF16.from_bits(conf_f), BF16.from_bits(conf_2), rtol=2 ** -6)
    with pytest.raises(ValueError, match="multiple of vlen"):
        d.online_confidence_hw(bits, 32, v_chunk=48)
    with pytest.raises(ValueError, match="needs v_chunk"):
        d.sample_step_hw(bits, np.zeros((3, 5), int), 1, [1, 1, 1], 32, stable_max="fused")
