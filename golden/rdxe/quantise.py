"""rDXE host-side quantisation (paper: rdxe-edge-slm-decoder-vrc-iwur).

The contract between the user's float tensors and the INT8 operands and factors of the
bit-exact datapath (:mod:`memwall.golden.rdxe.datapath`): :func:`quantise_rmsnorm_gemv` and
:func:`quantise_attention` build them, :func:`quantised_rmsnorm_gemv` and
:func:`quantised_attention` run the datapath on them. Operands, an option or a scale the
datapath cannot hold raise :class:`QuantiseError` (defined beside the datapath, which raises it
for a sum past the INT32 accumulator; re-exported here). Every scale is symmetric, ``max|a| /
127`` over the slice it covers (1 for zeros), values rounded to nearest and clipped to -127..127.

* **Activations.** ``x`` per token (the host holds each token's vector when it sends it); the
  sequential path's ``x_hat`` per token too, from the host's float64 ``x_hat`` on the INT8
  ``x`` and ``g`` (so the VE's INT8 ``x_hat`` does not saturate).
* **Weights**, ``weight_scale``: ``"channel"`` (default) per output row, or ``"tensor"``. The VAC
  chain broadcasts one RC per command to every row, so a per-row scale cannot sit inside the
  INT8 requantisation. With ``"channel"`` the command writes INT16 (``narrow = 0``) with one
  factor ``F`` for all rows, chosen so that no row can saturate whatever ``x`` is
  (Cauchy-Schwarz on the INT8 values: fused ``|acc_i RC| <= ||W'_i||``, since
  ``||x|| <= sqrt(u)``; sequential ``|acc_i| <= ||W_i|| ||x_hat||``, ``x_hat``'s norm bounded
  from its INT8 operands and factor; :data:`INT16_MARGIN` covers the RC's error), and the host
  multiplies row ``i`` by its scale (``y_i = v_i * row_scale_i``) and rounds to INT8 at
  ``s_y``. The cost: the datapath's result is INT16 and needs that host (or VE) pass before it
  can be the next GEMV's INT8 operand; ``"tensor"`` keeps the datapath's own INT8 output.
  ``"channel"`` is the default because trained weights' rows differ in range and it is never
  worse on the accuracy study's workloads (:mod:`memwall.golden.rdxe.accuracy`; tested).
* **Gain.** The fused command has no gain operand: ``gamma`` is folded, ``W' = w diag(gamma)``.
  Row ``i``'s step becomes ``s'_i = max_j |w_ij gamma_j| / 127 <= s_i max|gamma|`` (``s_i`` of
  ``w`` alone), and the weights' rounding moves ``y_i`` by at most
  ``s'_i / 2 * sum_j |x~_j| / rms(x~) <= s'_i d / 2`` (``x~`` the dequantised INT8 ``x``,
  ``rms`` with ``eps``; the folding bound, tested). One gain far above the others coarsens
  every row's step for the other columns. The sequential path keeps ``gamma`` as its own INT8
  vector (per tensor, so one large gain coarsens the other gains instead), which the VE
  multiplies into ``x_hat``. On the study's large-gain workload (tested): with per-tensor
  weights folding costs more than the separate gain (fused worse than sequential); per-row
  steps contain it (fused no worse).
* **Attention**, ``kv_scale``: ``"head"`` (default) or ``"tensor"``. The hardware computes one KV
  head per command pair, so per-head scales are per-command factors: ``k`` and ``v`` per KV
  head, ``q`` per group of query heads sharing a KV head (one Q.K command serves the group), the
  score factor ``s_q s_k log2(e) / sqrt(dh) * 256`` and the output factor ``s_v / s_o`` (fused)
  or ``s_v / (127 s_o)`` (sequential) per KV head. Per head is free, hence the default.
* **Output scale** ``s_y`` / ``s_o``: given by the user (a static scale), or by default
  calibrated from the float64 answer on the user's float inputs, ``max|y| / 127``. With a given
  scale, outputs past -128..127 saturate, as the hardware does; ``saturated`` counts the outputs
  whose float64 value lies past that range (``scores_saturated`` the scores past INT16).
* **Registers.** An ``eps`` whose ``sum(x**2) + d eps`` (in ``x``'s squared LSBs) passes the
  32-bit register, where the VE would saturate it, is refused; so is a factor no RC holds.

Accuracy (:func:`memwall.golden.rdxe.accuracy.study`): each path's INT8 output against float64 on
the float inputs, in units of the output's INT8 LSB (calibrated scale), per workload class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memwall.families.rdxe.config import KV_SCALES, WEIGHT_SCALES
from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe.datapath import (
    U32_MAX,
    QuantiseError,
    _i64,
    _mode,
    attention,
    attention_reference,
    exact_sums,
    repeat_kv,
    rmsnorm_gemv,
    rmsnorm_gemv_reference,
    static_factor,
)

__all__ = [
    "QuantiseError", "WEIGHT_SCALES", "KV_SCALES", "INT16_MAX", "NR_ERROR", "INT16_MARGIN",
    "MAGNITUDE_LIMIT", "RC_MIN", "RC_MAX", "check_operands", "QuantRmsnormGemv",
    "QuantAttention", "quantise_rmsnorm_gemv", "quantise_attention", "quantised_rmsnorm_gemv",
    "quantised_attention",
]


INT16_MAX = (1 << 15) - 1
#: A computed RC lies at most this far above the exact 1/sqrt(u) or 1/u (fixedpoint's bound).
NR_ERROR = 2.0 ** -15
#: Headroom under INT16_MAX of a channel-scaled command's factor: covers NR_ERROR and the
#: half-LSB rounding, so the row bound can never saturate.
INT16_MARGIN = 1 + 2.0 ** -12

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


def _choice(name: str, value: str, allowed: tuple) -> bool:
    """True for the first (per-slice) choice; :class:`QuantiseError` for one not allowed."""
    if value not in allowed:
        raise QuantiseError(f"{name} {value!r}: must be one of {', '.join(allowed)}")
    return value == allowed[0]


def _output_scale(name: str, value) -> None:
    if value is not None and not (np.isfinite(value) and value > 0):
        raise QuantiseError(f"{name} {value}: an output scale must be a finite number > 0")


def _factor(name: str, value: float, set_by: str) -> float:
    """``value`` if an RC factor holds it exactly; :class:`QuantiseError` otherwise."""
    if not (np.isfinite(value) and (value == 0 or RC_MIN <= value < RC_MAX)):
        raise QuantiseError(f"{name} = {value:g}, set by {set_by}, is outside what an RC "
                            f"factor holds, [{RC_MIN:g}, {RC_MAX:g}) (a 25-bit mantissa, "
                            "shift 0..63)")
    return value


def _static(name: str, value: float, set_by: str) -> tuple:
    return static_factor(_factor(name, value, set_by))


def _static_value(static: tuple) -> float:
    """The real factor a static applies (its truncated 16-bit mantissa, exactly)."""
    return float(fx.rc_value(*static))


def _scale(a) -> float:
    """Symmetric INT8 scale: ``max|a| / 127`` (1 for an all-zero array)."""
    top = float(np.max(np.abs(a))) if np.size(a) else 0.0
    return top / 127.0 if top > 0 else 1.0


def _row_scales(a, per_row: bool) -> np.ndarray:
    """(n,) scales of the rows of ``a`` (n, d): each row's own, or the tensor's repeated."""
    if per_row:
        return np.array([_scale(row) for row in a]).reshape(len(a))
    return np.full(len(a), _scale(a))


def _q8(a, scale) -> np.ndarray:
    return np.clip(np.rint(np.asarray(a, np.float64) / scale), -127, 127).astype(np.int64)


def _saturated(lsbs, bits: int = 8) -> int:
    """Values (float64, in LSBs) that round past the ``bits``-bit range: the datapath (or the
    host's rounding) clamps them."""
    lsbs, top = np.asarray(lsbs), 1 << (bits - 1)
    return int(np.count_nonzero((lsbs >= top - 0.5) | (lsbs < -top - 0.5)))


def _largest_row_norm(w) -> float:
    """``max_i ||w_i||_2`` of an integer matrix (at least 1, so a zero matrix gets a factor)."""
    w = _i64(w)
    return max(float(np.sqrt((w * w).sum(axis=1)).max()) if w.size else 0.0, 1.0)


@dataclass(frozen=True)
class QuantRmsnormGemv:
    """INT8 operands and factors of a GEMV with RMSNorm, for both modes, and how the datapath's
    result becomes ``y``: the contract in this module's docstring.

    Attributes
    ----------
    weight_scale : str
        ``"channel"``: ``w_merged`` and ``w`` per row, the datapath writes INT16 (``bits`` 16)
        and the host scales rows; ``"tensor"``: one scale each, the datapath's INT8 is ``y_q``.
    x, w_merged, w, g : np.ndarray
        INT8 ``x`` (d,) per token; ``W' = w diag(gamma)`` (n, d), the fused weights (gamma
        folded); ``w`` (n, d) and ``g`` (d,), the INT8 ``gamma`` at one scale per tensor: the
        sequential operands.
    eps_sum : int
        ``d * eps`` in ``x``'s squared LSBs.
    fused_static, seq_out_static, seq_norm_static : tuple
        Static factors: the fused output's; the sequential GEMV's and ``x_hat``'s.
    bits : int
        Width of the datapath's output (8 or 16).
    fused_row_scale, seq_row_scale : np.ndarray
        (n,) ``y_i = v_i * row_scale_i`` for the datapath's output ``v`` (``s_y`` for INT8).
    s_y : float
        Scale of the INT8 output ``y_q``; ``s_y_given``: the user's (static), else calibrated.
    saturated : int
        Outputs whose float64 value lies past the INT8 range at ``s_y`` (clamped).
    reference : np.ndarray
        (n,) float64 ``y`` on the user's float inputs.
    """
    weight_scale: str
    x: np.ndarray
    w_merged: np.ndarray
    w: np.ndarray
    g: np.ndarray
    eps_sum: int
    fused_static: tuple
    seq_out_static: tuple
    seq_norm_static: tuple
    bits: int
    fused_row_scale: np.ndarray
    seq_row_scale: np.ndarray
    s_y: float
    s_y_given: bool
    saturated: int
    reference: np.ndarray

    def weights(self, mode: str) -> np.ndarray:
        return self.w_merged if _mode(mode) == "fused" else self.w

    def out_static(self, mode: str) -> tuple:
        return self.fused_static if _mode(mode) == "fused" else self.seq_out_static

    def outputs(self, values, mode: str) -> dict:
        """``y`` (float64) and ``y_q`` (INT8 at ``s_y``) from the datapath's output ``values``:
        INT8 as it is, INT16 scaled per row and rounded (half up, saturating) by the host."""
        values = _i64(values)
        y = values * (self.fused_row_scale if _mode(mode) == "fused" else self.seq_row_scale)
        y_q = values if self.bits == 8 else fx.saturate(np.floor(y / self.s_y + 0.5), 8)
        return {"y": y, "y_q": y_q}


def quantise_rmsnorm_gemv(x, gamma, w, eps: float, weight_scale: str = "channel",
                          s_y: float | None = None) -> QuantRmsnormGemv:
    """The INT8 operands and factors of ``w @ (x / rms(x) * gamma)``; ``s_y`` the output's scale
    (default: calibrated, ``max|y| / 127`` of the float64 answer). Raises
    :class:`QuantiseError` for operands, an ``eps`` or a scale the datapath cannot hold."""
    x, gamma, w = (np.asarray(a, np.float64) for a in (x, gamma, w))
    check_operands({"x": x, "gamma": gamma, "w": w})
    per_row = _choice("weight_scale", weight_scale, WEIGHT_SCALES)
    if not (np.isfinite(eps) and eps > 0):
        raise QuantiseError(f"eps {eps:g}: must be a finite number > 0")
    _output_scale("s_y", s_y)
    d = x.shape[0]
    s_x = _scale(x)
    xq = _q8(x, s_x)
    s_wm, s_w, s_g = _row_scales(w * gamma, per_row), _row_scales(w, per_row), _scale(gamma)
    wmq, wq, gq = _q8(w * gamma, s_wm[:, None]), _q8(w, s_w[:, None]), _q8(gamma, s_g)
    # The datapath adds eps as d * eps in x's squared LSBs to sum(x**2), in a 32-bit register
    # that saturates: refuse an eps that would.
    sumsq = int((xq * xq).sum())
    eps_lsbs = d * eps / (s_x * s_x)
    if not sumsq + eps_lsbs <= U32_MAX:
        raise QuantiseError(f"eps {eps:g}: d * eps is {eps_lsbs:.4g} of x's squared LSBs; with "
                            f"sum(x**2) ({sumsq}) that is past the 32-bit epsilon register "
                            f"({U32_MAX}); with this x, eps may be at most "
                            f"{(U32_MAX - sumsq) * s_x * s_x / d:.4g}")
    eps_sum = int(round(eps_lsbs))
    xd = xq * s_x
    x_hat = xd / np.sqrt(np.mean(xd * xd) + eps) * (gq * s_g)
    s_h = _scale(x_hat)
    reference = rmsnorm_gemv_reference(x, gamma, w, eps)
    given = s_y is not None
    s_y = float(s_y) if given else _scale(reference)
    set_by = "the scales of w, gamma and the output" + (" (given)" if given else "")
    norm_static = _static("the sequential norm factor", s_g * np.sqrt(d) / s_h, set_by)
    if per_row:
        # One factor for every row, INT16: fused |acc_i RC| <= ||W'_i|| (||x|| <= sqrt(u));
        # sequential |acc_i| <= ||W_i|| ||x_hat||, each |x_hat_j| at most |x_j g_j| RC + 1/2.
        bound = "the norms of the weight rows"
        fused_static = _static("the fused INT16 factor",
                               INT16_MAX / (_largest_row_norm(wmq) * INT16_MARGIN), bound)
        rc_hi = (1 + NR_ERROR) * _static_value(norm_static) / np.sqrt(max(sumsq + eps_sum, 1))
        x_hat_norm = np.sqrt(exact_sums(np.minimum(np.abs(xq * gq) * rc_hi + 0.5, 128) ** 2))
        seq_static = _static("the sequential INT16 factor", INT16_MAX / (
            _largest_row_norm(wq) * max(x_hat_norm, 1.0) * INT16_MARGIN), bound)
        fused_rows = s_wm * np.sqrt(d) / _static_value(fused_static)
        seq_rows = s_w * s_h / _static_value(seq_static)
    else:
        fused_static = _static("the fused output factor", s_wm[0] * np.sqrt(d) / s_y, set_by)
        seq_static = _static("the sequential output factor", s_w[0] * s_h / s_y, set_by)
        fused_rows = seq_rows = np.full(len(w), s_y)
    return QuantRmsnormGemv(
        weight_scale=weight_scale, x=xq, w_merged=wmq, w=wq, g=gq, eps_sum=eps_sum,
        fused_static=fused_static, seq_out_static=seq_static, seq_norm_static=norm_static,
        bits=16 if per_row else 8, fused_row_scale=fused_rows, seq_row_scale=seq_rows, s_y=s_y,
        s_y_given=given, saturated=_saturated(reference / s_y), reference=reference)


def quantised_rmsnorm_gemv(quant: QuantRmsnormGemv, mode: str = "fused") -> dict:
    """:func:`rmsnorm_gemv` on ``quant``'s operands: ``values`` (the datapath's INT8 or INT16),
    ``acc``, and ``y``, ``y_q`` (:meth:`QuantRmsnormGemv.outputs`)."""
    r = rmsnorm_gemv(quant.x, quant.weights(mode), quant.eps_sum, quant.out_static(mode), mode,
                     quant.g, quant.seq_norm_static, quant.bits)
    return {"values": r["y"], "acc": r["acc"], **quant.outputs(r["y"], mode)}


@dataclass(frozen=True)
class QuantAttention:
    """INT8 operands and per-KV-head factors of decode attention: the contract in this module's
    docstring.

    Attributes
    ----------
    kv_scale : str
        ``"head"``: ``k``, ``v`` per KV head and ``q`` per group of query heads sharing one;
        ``"tensor"``: one scale each.
    q, k, v : np.ndarray
        INT8 (heads, dh), (t, kv_heads, dh), (t, kv_heads, dh).
    score_rcs, out_statics, seq_out_statics : tuple
        Per KV head: the Q.K command's RC (``s_q s_k log2(e) / sqrt(dh) * 256``), the fused
        output's static factor (``s_v / s_o``) and the sequential one's (``s_v / (127 s_o)``,
        ``p`` in units of 1/127).
    s_o : float
        Scale of the INT8 output; ``s_o_given``: the user's (static), else calibrated.
    saturated : int
        Outputs whose float64 value lies past the INT8 range at ``s_o`` (clamped).
    scores_saturated : int
        (head, token) scores whose float64 value lies past the INT16 score range (clamped; a
        clamped top score ties with the others there).
    reference : np.ndarray
        (heads, dh) float64 ``o`` on the user's float inputs.
    """
    kv_scale: str
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    score_rcs: tuple
    out_statics: tuple
    seq_out_statics: tuple
    s_o: float
    s_o_given: bool
    saturated: int
    scores_saturated: int
    reference: np.ndarray

    def statics(self, mode: str) -> tuple:
        return self.out_statics if _mode(mode) == "fused" else self.seq_out_statics

    def _shared(self, name: str):
        """The one factor every KV head uses (one KV head, or one scale per tensor), for
        :func:`attention` on all heads at once; ValueError where they differ."""
        factors = getattr(self, f"{name}s")
        if len(set(factors)) != 1:
            raise ValueError(f"{name} differs per KV head: use {name}s with quantised_attention")
        return factors[0]

    score_rc = property(lambda self: self._shared("score_rc"))
    out_static = property(lambda self: self._shared("out_static"))
    seq_out_static = property(lambda self: self._shared("seq_out_static"))

    def outputs(self, values) -> dict:
        """``o`` (float64) and ``o_q`` (the datapath's INT8 at ``s_o``)."""
        return {"o": _i64(values) * self.s_o, "o_q": _i64(values)}


def quantise_attention(q, k, v, kv_scale: str = "head", s_o: float | None = None
                       ) -> QuantAttention:
    """The INT8 operands and factors of decode attention; ``s_o`` the output's scale (default:
    calibrated, ``max|o| / 127`` of the float64 answer). Raises :class:`QuantiseError` for
    operands or a scale the datapath cannot hold."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    check_operands({"q": q, "k": k, "v": v})
    per_head = _choice("kv_scale", kv_scale, KV_SCALES)
    _output_scale("s_o", s_o)
    heads, dh = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads
    if per_head:
        s_q = np.array([_scale(q[h * group:(h + 1) * group]) for h in range(kv_heads)])
        s_k, s_v = (np.array([_scale(a[:, h]) for h in range(kv_heads)]) for a in (k, v))
    else:
        s_q, s_k, s_v = (np.full(kv_heads, _scale(a)) for a in (q, k, v))
    qq = _q8(q, np.repeat(s_q, group)[:, None])
    kq, vq = _q8(k, s_k[None, :, None]), _q8(v, s_v[None, :, None])
    reference = attention_reference(q, k, v)
    scores = exact_sums(q[:, None, :] * repeat_kv(k, group).transpose(1, 0, 2)) * (
        np.log2(np.e) / np.sqrt(dh) * (1 << fx.EXP_FRAC_BITS))
    given = s_o is not None
    s_o = float(s_o) if given else _scale(reference)
    set_by = "the scales of v and the output" + (" (given)" if given else "")
    score_rcs, out_statics, seq_statics = [], [], []
    for h in range(kv_heads):
        score = _factor("the score factor", s_q[h] * s_k[h] * np.log2(np.e) / np.sqrt(dh)
                        * (1 << fx.EXP_FRAC_BITS), "the scales of q and k")
        mant, shift = fx.rc_from_float(score)
        score_rcs.append((int(mant), int(shift)))
        out_statics.append(_static("the output factor", s_v[h] / s_o, set_by))
        seq_statics.append(_static("the sequential output factor", s_v[h] / (127 * s_o),
                                   set_by))
    return QuantAttention(kv_scale=kv_scale, q=qq, k=kq, v=vq, score_rcs=tuple(score_rcs),
                          out_statics=tuple(out_statics), seq_out_statics=tuple(seq_statics),
                          s_o=s_o, s_o_given=given, saturated=_saturated(reference / s_o),
                          scores_saturated=_saturated(scores, 16), reference=reference)


def quantised_attention(quant: QuantAttention, mode: str = "fused") -> dict:
    """:func:`attention` on ``quant``'s operands, one KV head (and its query heads) at a time
    with that head's factors: ``values`` (INT8), ``acc``, ``o`` and ``o_q``."""
    kv_heads = quant.k.shape[1]
    group = quant.q.shape[0] // kv_heads
    statics = quant.statics(mode)
    parts = [attention(quant.q[h * group:(h + 1) * group], quant.k[:, h:h + 1],
                       quant.v[:, h:h + 1], quant.score_rcs[h], statics[h], mode)
             for h in range(kv_heads)]
    values = np.concatenate([p["o"] for p in parts])
    return {"values": values, "acc": np.concatenate([p["acc"] for p in parts]),
            **quant.outputs(values)}
