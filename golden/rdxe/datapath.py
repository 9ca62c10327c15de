"""rDXE golden model: the integer datapath of a DXT (VACs, vector engine, VRC) bit for bit, and
float64 references (paper: rdxe-edge-slm-decoder-vrc-iwur).

Decisions where the paper is silent (the RTL in ``hdl/rdxe`` answers to them):

* **Operands** are INT8 (weights, activations, K, V, softmax numerators). A VAC lane multiplies
  two INT8s; the accumulator is INT32. The hardware would wrap a sum past it, so an overflow is
  an input error here (:class:`QuantiseError`, naming the operation and what fits).
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
  cancels. ``e_t <= 2**12`` and ``v_t`` is any INT8, so over ``t`` tokens ``sum e_t v_t`` lies in
  ``-2**19 t .. 2**12 * 127 t``: INT32 holds it for up to ``MAX_TOKENS`` (4096) tokens (the
  lower end then reaches INT32's ``-2**31`` exactly).
* **Sequential (unfused) baseline**, same operands and widths: RMSNorm computes ``RC`` first,
  writes ``x_hat = sat8(x * g * RC')`` (INT8, a static output scale), then runs the GEMV with
  ``W``; softmax writes ``p_t = round(127 * e_t / sum e)`` (INT8, ``s = 0``) before ``P.V``.
  The extra INT8 rounding of the normalised vector is what fusion avoids.

The host-side quantisation that turns float tensors into these operands and factors, and its
accuracy against float64, are in :mod:`memwall.golden.rdxe.quantise` (the contract) and
:mod:`memwall.golden.rdxe.accuracy` (the study).
"""

from __future__ import annotations

import math

import numpy as np

from memwall.families.rdxe.config import MAX_TOKENS, peak_ops_per_cycle
from memwall.golden.common import fixedpoint as fx
from memwall.inputs import InputError

__all__ = [
    "MODES", "MAX_TOKENS", "INT32_MAX", "U32_MAX", "GEMV_FITS_PRODUCTS", "STATIC_BITS",
    "static_factor", "static_rc", "QuantiseError", "gemv_acc", "vac_out", "rmsnorm_gemv",
    "qk_scores", "softmax_pv", "attention", "repeat_kv", "exact_sums", "rmsnorm_gemv_reference",
    "attention_reference", "peak_ops_per_cycle",
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


class QuantiseError(InputError, ValueError):
    """Float operands (or an option) outside what the host-side quantisation and the datapath's
    factors can hold, or a sum past the INT32 accumulator: bad input, named with the array and
    position, the factor or the operation."""


#: What always fits a GEMV's (or Q.K's) INT32 sums. Both operands may be -128 (the datapath
#: takes any INT8; the host's quantiser gives -127..127), so a product lies in -16,256 .. 16,384
#: and a row of n products in -16,256 n .. 16,384 n: within INT32 for n <= 131,071
#: (131,072 products of (-128) x (-128) reach 2**31).
GEMV_FITS_PRODUCTS = INT32_MAX // (128 * 128)
_GEMV_FITS = f"rows of up to {GEMV_FITS_PRODUCTS:,} INT8 products always fit"


def _check_int32(acc, what: str, fits: str = _GEMV_FITS) -> np.ndarray:
    acc = _i64(acc)
    if acc.size and (acc.max() > INT32_MAX or acc.min() < -INT32_MAX - 1):
        extreme = int(acc.max()) if acc.max() > INT32_MAX else int(acc.min())
        raise QuantiseError(f"{what} overflows the INT32 accumulator: a sum reaches "
                            f"{extreme:,} (INT32 holds {-INT32_MAX - 1:,} .. {INT32_MAX:,}) "
                            f"and the hardware would wrap it; {fits}")
    return acc


def gemv_acc(w, x, what: str = "GEMV", fits: str = _GEMV_FITS) -> np.ndarray:
    """INT32 accumulators ``w @ x`` of INT8 ``w`` (n, d) and ``x`` (d,); a sum past INT32 is a
    :class:`QuantiseError` naming ``what`` and ``fits`` (what the user can give instead)."""
    return _check_int32(_i64(w) @ _i64(x), what, fits)


def vac_out(acc, rc: tuple, bits: int = 8) -> np.ndarray:
    """The VAC's RCU + PPU on its accumulators."""
    return fx.apply_rc(acc, rc[0], rc[1], bits)


def _u32(u) -> np.ndarray:
    return np.minimum(_i64(u), U32_MAX)


def rmsnorm_gemv(x, w, eps_sum: int, out_static: tuple, mode: str = "fused", g=None,
                 norm_static: tuple | None = None, bits: int = 8) -> dict:
    """GEMV with RMSNorm. ``x`` (d,) INT8, ``w`` (n, d) INT8: the merged ``W'`` (fused) or the
    plain ``W`` (sequential, with ``g`` (d,) INT8 and ``norm_static`` the static factor of
    ``x_hat``). ``out_static`` is the output's static factor, ``bits`` its width (8, or 16: the
    command's ``narrow = 0``; ``x_hat`` is INT8 either way). Returns ``y`` (INT8 or INT16),
    ``acc``, ``sumsq``, ``rc`` and, sequential, ``x_hat``."""
    x = _i64(x)
    sumsq = int((x * x).sum())
    rc = fx.invsqrt_rc(_u32(sumsq + int(eps_sum)))
    if _mode(mode) == "fused":
        acc = gemv_acc(w, x)
        total = fx.rc_mul(*rc, *out_static)
        return {"y": vac_out(acc, total, bits), "acc": acc, "sumsq": sumsq, "rc": total}
    norm = fx.rc_mul(*rc, *norm_static)
    x_hat = vac_out(x * _i64(g), norm)
    acc = gemv_acc(w, x_hat)
    return {"y": vac_out(acc, static_rc(out_static), bits), "acc": acc, "sumsq": sumsq,
            "rc": norm, "x_hat": x_hat}


def qk_scores(q, k, score_rc: tuple) -> dict:
    """Scores of one query head ``q`` (dh,) against ``k`` (t, dh), written back as INT16 ``z``
    with the running maximum ``z_max``."""
    acc = gemv_acc(k, q, "Q.K")
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
        acc = gemv_acc(_i64(v).T, e, "P.V (the sum of e_t v_t over the tokens, e_t up to 2**12)",
                       f"up to MAX_TOKENS ({MAX_TOKENS:,}) tokens always fit: give fewer")
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

def exact_sums(a) -> np.ndarray:
    """The sums of ``a`` along its last axis, each rounded once (``math.fsum``): the same bits on
    every machine, where a BLAS or SIMD sum adds in an order (and so to a rounding) that depends
    on the CPU, and a figure built on it moves with the machine."""
    a = np.asarray(a, np.float64)
    rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
    return np.array([math.fsum(row) for row in rows]).reshape(a.shape[:-1])


def rmsnorm_gemv_reference(x, gamma, w, eps: float) -> np.ndarray:
    """``w @ (x / sqrt(mean(x**2) + eps) * gamma)`` in float64, every sum rounded once
    (:func:`exact_sums` of the float64 products)."""
    x = np.asarray(x, dtype=np.float64)
    v = x / np.sqrt(exact_sums(x * x) / len(x) + eps) * np.asarray(gamma, np.float64)
    return exact_sums(np.asarray(w, np.float64) * v)


def attention_reference(q, k, v) -> np.ndarray:
    """Scaled dot-product decode attention in float64: ``q`` (heads, dh), ``k``, ``v``
    (t, kv_heads, dh); query head ``h`` uses KV head ``h // (heads / kv_heads)``; every sum
    rounded once (:func:`exact_sums`)."""
    q = np.asarray(q, np.float64)
    group = q.shape[0] // k.shape[1]
    k, v = repeat_kv(np.asarray(k, np.float64), group), repeat_kv(np.asarray(v, np.float64),
                                                                   group)
    s = exact_sums(q[:, None, :] * k.transpose(1, 0, 2)) / np.sqrt(q.shape[1])   # (h, t)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= exact_sums(p)[:, None]
    return exact_sums(p[:, None, :] * v.transpose(1, 2, 0))                       # (h, dh)
