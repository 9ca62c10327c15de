"""rDXE golden model: the integer datapath of a DXT (VACs, vector engine, VRC) bit for bit, and
float64 references (paper: rdxe-edge-slm-decoder-vrc-iwur).

Decisions where the paper is silent (the RTL in ``hdl/rdxe`` answers to them):

* **Operands** are INT8 (weights, activations, K, V, softmax numerators). A VAC lane multiplies
  two INT8s; the accumulator is INT32 (an overflow is an input error, caught here).
* **RC factor** is a floating scale ``mant * 2**-shift`` with a 25-bit mantissa
  (:mod:`memwall.golden.common.fixedpoint`). The VAC applies it in one step, the RCU multiply and
  the PPU rounding shift and saturation: ``out = sat(round_half_up(acc * mant / 2**shift))`` to 8
  bits (activations) or 16 bits (scores). A plain GEMV loads a static RC (the requantisation
  factor); a VRC operation loads the vector engine's RC, into which the VE has folded the static
  factor (a 16-bit mantissa, :func:`static_factor`), so the fused path rounds once.
* **RMSNorm (VRC).** The gain is merged into the weights (``W' = W diag(g)``). The VE sums
  ``x**2`` while the MACs run and computes ``RC = 1/sqrt(u)`` with ``u = sum(x**2) + eps_sum``
  (saturating at ``2**32 - 1``), ``eps_sum = round(d * eps / s_x**2)``: the ``1/d`` of the mean
  and ``sqrt(d)`` live in the static factor, so no division is needed. Newton–Raphson with a
  7-bit seed ROM and two iterations (:func:`~memwall.golden.common.fixedpoint.invsqrt_rc`).
  LayerNorm (OPT) is the same with the mean folded: ``W'x - mu * (W' 1)``; not built here.
* **Softmax (VRC).** Scores are written back as INT16 ``z`` in units of ``2**-8`` of log2:
  the PPU scales ``q.k`` by ``s_q s_k log2(e) / sqrt(dh) * 256``, and the running maximum is
  taken as they are written (max-on-writeback). The numerators are
  ``e_t = 2**(12 + (z_t - z_max)/256)`` as a 7-bit float ``m * 2**s`` (``s <= 6``, a 256-entry
  ROM and a shift, :func:`~memwall.golden.common.fixedpoint.exp2_float`); a VAC lane multiplies
  ``m`` by the INT8 ``v`` and shifts the product left by ``s``. The MACs accumulate ``sum e_t v_t``
  while the VE sums ``e_t`` and computes ``RC = 1/sum e`` (Newton–Raphson). The scale of ``e``
  cancels. INT32 holds ``sum e_t v_t`` for up to ``MAX_TOKENS`` (4096) tokens.
* **Sequential (unfused) baseline**, same operands and widths: RMSNorm computes ``RC`` first,
  writes ``x_hat = sat8(x * g * RC')`` (INT8, a static output scale), then runs the GEMV with
  ``W``; softmax writes ``p_t = round(127 * e_t / sum e)`` (INT8, ``s = 0``) before ``P.V``.
  The extra INT8 rounding of the normalised vector is what fusion avoids.

Accuracy (``tests/rdxe/test_golden_rdxe.py``): each path is compared with float64 evaluated on its
own INT8 operands, in units of the output's INT8 LSB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memwall.families.rdxe.config import MAX_TOKENS, peak_ops_per_cycle
from memwall.golden.common import fixedpoint as fx
from memwall.inputs import InputError

__all__ = [
    "MODES", "MAX_TOKENS", "STATIC_BITS", "static_factor", "static_rc", "gemv_acc", "vac_out",
    "rmsnorm_gemv", "qk_scores",
    "softmax_pv", "attention", "repeat_kv", "rmsnorm_gemv_reference", "attention_reference",
    "QuantRmsnormGemv", "QuantAttention", "quantise_rmsnorm_gemv", "quantise_attention",
    "peak_ops_per_cycle",
]

MODES = ("fused", "sequential")
#: Mantissa bits of a static factor the VE folds into a computed RC.
STATIC_BITS = 16
INT32_MAX = (1 << 31) - 1
U32_MAX = (1 << 32) - 1


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def static_factor(value) -> tuple[int, int]:
    """A static factor for :func:`~memwall.golden.common.fixedpoint.rc_mul`: ``value`` truncated to
    a 16-bit mantissa ``(smant, sshift)``."""
    mant, shift = fx.rc_from_float(value)
    drop = fx.RC_MANT_BITS - STATIC_BITS
    return int(np.right_shift(mant, drop)), int(shift) - drop


def static_rc(static: tuple) -> tuple:
    """A static factor as an RC (what a plain GEMV loads): its mantissa widened to 25 bits."""
    return fx.rc_mul(1 << (STATIC_BITS - 1), STATIC_BITS - 1, *static)


def _check_int32(acc, what: str) -> np.ndarray:
    acc = _i64(acc)
    if acc.size and (acc.max() > INT32_MAX or acc.min() < -INT32_MAX - 1):
        raise ValueError(f"{what} overflows the INT32 accumulator")
    return acc


def gemv_acc(w, x) -> np.ndarray:
    """INT32 accumulators ``w @ x`` of INT8 ``w`` (n, d) and ``x`` (d,)."""
    return _check_int32(_i64(w) @ _i64(x), "GEMV")


def vac_out(acc, rc: tuple, bits: int = 8) -> np.ndarray:
    """The VAC's RCU + PPU on its accumulators."""
    return fx.apply_rc(acc, rc[0], rc[1], bits)


def _u32(u) -> np.ndarray:
    return np.minimum(_i64(u), U32_MAX)


def rmsnorm_gemv(x, w, eps_sum: int, out_static: tuple, mode: str = "fused", g=None,
                 norm_static: tuple | None = None) -> dict:
    """GEMV with RMSNorm. ``x`` (d,) INT8, ``w`` (n, d) INT8: the merged ``W'`` (fused) or the
    plain ``W`` (sequential, with ``g`` (d,) INT8 and ``norm_static`` the static factor of
    ``x_hat``). ``out_static`` is the output's static factor. Returns ``y`` (INT8), ``acc``,
    ``sumsq``, ``rc`` and, sequential, ``x_hat``."""
    x = _i64(x)
    sumsq = int((x * x).sum())
    rc = fx.invsqrt_rc(_u32(sumsq + int(eps_sum)))
    if _mode(mode) == "fused":
        acc = gemv_acc(w, x)
        total = fx.rc_mul(*rc, *out_static)
        return {"y": vac_out(acc, total), "acc": acc, "sumsq": sumsq, "rc": total}
    norm = fx.rc_mul(*rc, *norm_static)
    x_hat = vac_out(x * _i64(g), norm)
    acc = gemv_acc(w, x_hat)
    return {"y": vac_out(acc, static_rc(out_static)), "acc": acc, "sumsq": sumsq, "rc": norm,
            "x_hat": x_hat}


def qk_scores(q, k, score_rc: tuple) -> dict:
    """Scores of one query head ``q`` (dh,) against ``k`` (t, dh), written back as INT16 ``z``
    with the running maximum ``z_max``."""
    acc = gemv_acc(k, q)
    z = vac_out(acc, score_rc, 16)
    return {"z": z, "acc": acc, "z_max": int(z.max())}


def softmax_pv(z, z_max: int, v, out_static: tuple, mode: str = "fused") -> dict:
    """``softmax(z) . v`` for one head: ``v`` (t, dh) INT8. Returns ``o`` (INT8), ``acc``,
    ``e``, ``sum_e``, ``rc`` and, sequential, ``p``."""
    m, sh = fx.exp2_float(_i64(z) - int(z_max))
    e = fx.exp2_value(m, sh)
    sum_e = int(e.sum())
    rc = fx.recip_rc(_u32(sum_e))
    if _mode(mode) == "fused":
        acc = gemv_acc(_i64(v).T, e)
        total = fx.rc_mul(*rc, *out_static)
        return {"o": vac_out(acc, total), "acc": acc, "e": e, "sum_e": sum_e, "rc": total}
    prob = fx.rc_mul(*rc, *static_factor(127.0))
    p = vac_out(e, prob)
    acc = gemv_acc(_i64(v).T, p)
    return {"o": vac_out(acc, static_rc(out_static)), "acc": acc, "e": e, "sum_e": sum_e,
            "rc": prob, "p": p}


def repeat_kv(kv, group: int) -> np.ndarray:
    """``(t, kv_heads, dh) -> (t, kv_heads * group, dh)``: query head ``h`` uses KV head
    ``h // group`` (the reference GQA expansion)."""
    return np.repeat(np.asarray(kv), group, axis=1)


def attention(q, k, v, score_rc: tuple, out_static: tuple, mode: str = "fused") -> dict:
    """Decode attention of INT8 ``q`` (heads, dh) over ``k``, ``v`` (t, kv_heads, dh): per head,
    :func:`qk_scores` then :func:`softmax_pv`, query head ``h`` on KV head
    ``h // (heads / kv_heads)``. Returns ``o`` (heads, dh) and the per-head intermediates."""
    heads, kv_heads = q.shape[0], k.shape[1]
    group = heads // kv_heads
    out = {"o": [], "acc": [], "z": [], "z_max": [], "e": [], "sum_e": []}
    for h in range(heads):
        s = qk_scores(q[h], k[:, h // group], score_rc)
        r = softmax_pv(s["z"], s["z_max"], v[:, h // group], out_static, mode)
        for key, val in (("o", r["o"]), ("acc", r["acc"]), ("z", s["z"]), ("z_max", s["z_max"]),
                         ("e", r["e"]), ("sum_e", r["sum_e"])):
            out[key].append(val)
    return {key: np.array(val) for key, val in out.items()}


# --- float64 references -----------------------------------------------------------------------

def rmsnorm_gemv_reference(x, gamma, w, eps: float) -> np.ndarray:
    """``w @ (x / sqrt(mean(x**2) + eps) * gamma)`` in float64."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(w, np.float64) @ (x / np.sqrt(np.mean(x * x) + eps)
                                        * np.asarray(gamma, np.float64))


def attention_reference(q, k, v) -> np.ndarray:
    """Scaled dot-product decode attention in float64: ``q`` (heads, dh), ``k``, ``v``
    (t, kv_heads, dh); query head ``h`` uses KV head ``h // (heads / kv_heads)``."""
    q = np.asarray(q, np.float64)
    group = q.shape[0] // k.shape[1]
    k, v = repeat_kv(np.asarray(k, np.float64), group), repeat_kv(np.asarray(v, np.float64),
                                                                   group)
    s = np.einsum("hd,thd->ht", q, k) / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("ht,thd->hd", p, v)


# --- quantisation (host side) -----------------------------------------------------------------

class QuantiseError(InputError, ValueError):
    """Float operands (or an option) outside what the host-side quantisation and the datapath's
    factors can hold: bad input, named with the array and position or the factor."""


#: The largest magnitude of each float tensor must be 0 or in [2**-400, 2**400]: then every
#: square and product of two tensors' scales the host computes in float64 (RMSNorm's
#: ``x * x``, ``w * gamma``, ``s_q * s_k``, ``d * eps / s_x**2``), times a dimension of up to
#: 2**16, stays a normal float64.
MAGNITUDE_LIMIT = 2.0 ** 400
#: An RC or static factor is exact (not clamped) in [RC_MIN, RC_MAX): a 25-bit mantissa with
#: a shift of 0..63 (:func:`memwall.golden.common.fixedpoint.rc_from_float`).
RC_MIN = 2.0 ** (fx.RC_MANT_BITS - 1 - fx.RC_SHIFT_MAX)
RC_MAX = 2.0 ** fx.RC_MANT_BITS


def check_operands(arrays: dict) -> None:
    """Each float tensor's values finite and its largest magnitude 0 or within
    [1 / MAGNITUDE_LIMIT, MAGNITUDE_LIMIT]; :class:`QuantiseError` names the array and the
    position otherwise."""
    for name, a in arrays.items():
        a = np.asarray(a, np.float64)
        bad = np.argwhere(~np.isfinite(a) | (np.abs(a) > MAGNITUDE_LIMIT))
        if bad.size:
            at = tuple(int(i) for i in bad[0])
            raise QuantiseError(f"{name}[{', '.join(map(str, at))}] = {a[at]:g}: values must "
                                f"be finite with magnitude at most 2**400 ({MAGNITUDE_LIMIT:.3g})")
        top = float(np.max(np.abs(a))) if a.size else 0.0
        if 0 < top < 1 / MAGNITUDE_LIMIT:
            raise QuantiseError(f"{name}: largest magnitude {top:g} is below 2**-400 "
                                f"({1 / MAGNITUDE_LIMIT:.3g}); the scale's square would not be "
                                "a normal float64 (scale the tensor up, or give zeros)")


def _factor(name: str, value: float, set_by: str) -> float:
    """``value`` if an RC factor holds it exactly; :class:`QuantiseError` otherwise."""
    if not (np.isfinite(value) and (value == 0 or RC_MIN <= value < RC_MAX)):
        raise QuantiseError(f"{name} = {value:g}, set by {set_by}, is outside what an RC "
                            f"factor holds, [{RC_MIN:g}, {RC_MAX:g}) (a 25-bit mantissa, "
                            "shift 0..63)")
    return value


def _scale(a) -> float:
    """Symmetric INT8 scale: ``max|a| / 127`` (1 for an all-zero array)."""
    top = float(np.max(np.abs(a))) if np.size(a) else 0.0
    return top / 127.0 if top > 0 else 1.0


def _q8(a, scale: float) -> np.ndarray:
    return np.clip(np.rint(np.asarray(a, np.float64) / scale), -127, 127).astype(np.int64)


@dataclass(frozen=True)
class QuantRmsnormGemv:
    """INT8 operands and factors of a GEMV with RMSNorm, for both modes.

    Scales (symmetric, ``max|a|/127``): ``x`` per token, the merged ``W' = w diag(gamma)`` (fused)
    and ``w``, ``gamma`` (sequential) per tensor, ``x_hat`` and the output ``y`` from the float64
    result on the INT8 operands (a perfectly calibrated static scale).
    """
    x: np.ndarray
    w_merged: np.ndarray
    w: np.ndarray
    g: np.ndarray
    eps_sum: int
    fused_static: tuple
    seq_out_static: tuple
    seq_norm_static: tuple
    s_y_fused: float
    s_y_seq: float
    ref_fused: np.ndarray      # float64 result on the fused INT8 operands, in output LSBs
    ref_seq: np.ndarray        # the same for the sequential operands


def quantise_rmsnorm_gemv(x, gamma, w, eps: float) -> QuantRmsnormGemv:
    """Raises :class:`QuantiseError` for operands or an ``eps`` the datapath cannot hold."""
    x, gamma, w = (np.asarray(a, np.float64) for a in (x, gamma, w))
    check_operands({"x": x, "gamma": gamma, "w": w})
    if not (np.isfinite(eps) and eps > 0):
        raise QuantiseError(f"eps {eps:g}: must be a finite number > 0")
    d = x.shape[0]
    s_x = _scale(x)
    xq = _q8(x, s_x)
    merged = w * gamma[None, :]
    s_wm, s_w, s_g = _scale(merged), _scale(w), _scale(gamma)
    wmq, wq, gq = _q8(merged, s_wm), _q8(w, s_w), _q8(gamma, s_g)
    # The datapath adds eps as d * eps in x's squared LSBs, in a 32-bit register.
    eps_lsbs = d * eps / (s_x * s_x)
    if eps_lsbs > U32_MAX:
        raise QuantiseError(f"eps {eps:g}: d * eps is {eps_lsbs:.4g} of x's squared LSBs, past "
                            f"the 32-bit epsilon register ({U32_MAX}); with this x, eps may be "
                            f"at most {U32_MAX * s_x * s_x / d:.4g}")
    eps_sum = int(round(eps_lsbs))
    xd = xq * s_x
    rms = np.sqrt(np.mean(xd * xd) + eps)
    y_fused = (wmq * s_wm) @ (xd / rms)
    x_hat = xd / rms * (gq * s_g)
    s_h = _scale(x_hat)
    y_seq = (wq * s_w) @ (_q8(x_hat, s_h) * s_h)
    s_yf, s_ys = _scale(y_fused), _scale(y_seq)
    set_by = "the scales of w, gamma and the output"
    return QuantRmsnormGemv(
        x=xq, w_merged=wmq, w=wq, g=gq, eps_sum=eps_sum,
        fused_static=static_factor(_factor("the fused output factor",
                                           s_wm * np.sqrt(d) / s_yf, set_by)),
        seq_out_static=static_factor(_factor("the sequential output factor",
                                             s_w * s_h / s_ys, set_by)),
        seq_norm_static=static_factor(_factor("the sequential norm factor",
                                              s_g * np.sqrt(d) / s_h, set_by)),
        s_y_fused=s_yf, s_y_seq=s_ys,
        ref_fused=y_fused / s_yf,
        ref_seq=((wq * s_w) @ x_hat) / s_ys)


@dataclass(frozen=True)
class QuantAttention:
    """INT8 operands and factors of decode attention. ``q``, ``k``, ``v`` per tensor; the output
    scale from the float64 result on the INT8 operands."""
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    score_rc: tuple
    out_static: tuple          # fused: s_v / s_o
    seq_out_static: tuple      # sequential: s_v / (127 s_o), p in units of 1/127
    s_o: float
    ref: np.ndarray            # float64 result on the INT8 operands, in output LSBs


def quantise_attention(q, k, v) -> QuantAttention:
    """Raises :class:`QuantiseError` for operands the datapath cannot hold."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    check_operands({"q": q, "k": k, "v": v})
    s_q, s_k, s_v = _scale(q), _scale(k), _scale(v)
    qq, kq, vq = _q8(q, s_q), _q8(k, s_k), _q8(v, s_v)
    dh = q.shape[1]
    score = _factor("the score factor", s_q * s_k * np.log2(np.e) / np.sqrt(dh)
                    * (1 << fx.EXP_FRAC_BITS), "the scales of q and k")
    ref = attention_reference(qq * s_q, kq * s_k, vq * s_v)
    s_o = _scale(ref)
    mant, shift = fx.rc_from_float(score)
    set_by = "the scales of v and the output"
    return QuantAttention(q=qq, k=kq, v=vq, score_rc=(int(mant), int(shift)),
                          out_static=static_factor(_factor("the output factor", s_v / s_o,
                                                           set_by)),
                          seq_out_static=static_factor(_factor("the sequential output factor",
                                                               s_v / (127 * s_o), set_by)),
                          s_o=s_o, ref=ref / s_o)
