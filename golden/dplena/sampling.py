"""d-PLENA sampling golden models: LLaDA low-confidence remasking, float and bit-exact.

Two models of one diffusion sampling step over an active block (paper: Algorithms 1 and 2,
Table I):

* :func:`sample_step_reference` -- LLaDA's low-confidence remasking in float64 (Algorithm 1,
  Method 1: PyTorch-like softmax), the numerical reference.
* :func:`sample_step_hw` -- what the NPU computes, bit for bit: BF16 logits, Algorithm 1
  Method 2 (stable-max) on the Reduction/FP units, the streaming insertion top-k
  (``V_TOPK_MASK``) and the INT-domain masked select (``V_SELECT_INT``), in Algorithm 2's four
  phases. The arithmetic comes from :mod:`memwall.golden.common.fparith` and
  :mod:`memwall.golden.common.transcendental`, the bit-exact models of the RTL blocks.

Semantics shared by both models (LLaDA ``generate``, Gumbel noise / temperature omitted as in the
paper):

* ``mask_index = (x == mask_id)``; ``x0 = argmax(logits)`` (first index on ties) and the
  confidence is the softmax probability of ``x0``; positions not masked get confidence ``-inf``
  and ``x0 = x``.
* ``transfer`` marks the ``min(k[b], L)`` highest-confidence positions of row ``b``, ties broken
  by lower position index. Like ``torch.topk`` in LLaDA it can pick ``-inf`` (not masked)
  positions when ``k[b]`` exceeds the number of masked ones; those keep their token since
  ``x0 = x`` there.
* ``x_new = where(transfer, x0, x)``. (Algorithm 2 line 26 prints ``torch.where(transfer_idx,
  x, x0)``, operands swapped; LLaDA's ``x[transfer_index] = x0[transfer_index]`` is what is
  meant and what we model.)

Ordering of confidences (both models): NaN is the largest value (all NaNs equal), then +inf,
finite values, -inf; ``-0 == +0``. This is the order of
:func:`~memwall.golden.common.fparith.bf16_key` that the hardware comparators use. Non-finite logits
are allowed: a NaN logit makes its position's ``x0`` the first NaN's index and its confidence NaN
(so it ranks first); a ``+inf`` logit gives ``inf - inf = NaN`` in the stable-max subtraction
and therefore confidence NaN as well; ``-inf`` logits contribute ``exp(-inf) = 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memwall.families.dplena.config import LOGITS_FORMAT_ALIASES
from memwall.files import write_npz_atomic
from memwall.golden.common.formats import BF16, FP32, round_to_bf16
from memwall.golden.common.fparith import (
    bf16_key,
    bf16_to_fp32,
    fp32_to_bf16,
    fp_add,
    fp_mul,
    fp_sub,
    reduce_max_idx,
    reduce_sum,
)
from memwall.golden.common.transcendental import bf16_exp, bf16_recip
from memwall.golden.dplena import mx
from memwall.golden.dplena.mx import FORMATS as MX_FORMATS
from memwall.inputs import ArraySpec, InputError, load_npz

__all__ = [
    "LOGITS_FORMATS",
    "NEG_INF_BF16",
    "SamplingInputError",
    "get_num_transfer_tokens",
    "load_sampling_inputs",
    "masked_select",
    "method1_confidence",
    "method2_confidence_hw",
    "online_confidence_hw",
    "STABLE_MAX_MODES",
    "prepare_logits",
    "sample_step_hw",
    "sample_step_reference",
    "save_sampling_outputs",
    "topk_mask",
]

NEG_INF_BF16 = 0xFF80
"""BF16 -inf: what an invalid (not masked) position holds in the top-k unit."""
LOGITS_FORMATS = ("bf16", "mxfp8", *MX_FORMATS)
"""Accepted ``fmt`` of :func:`prepare_logits`: ``bf16``, and every MX format of
:mod:`memwall.golden.dplena.mx` (``mxfp8`` is ``mxfp8_e4m3``, the shipped dequantiser's)."""
_INT32_MAX = np.iinfo(np.int32).max
STABLE_MAX_MODES = ("two_pass", "fused")
"""``stable_max`` structures of the sampling core (config key of the same name)."""


# --- LLaDA schedule -----------------------------------------------------------------------------

def get_num_transfer_tokens(mask_index, steps: int) -> np.ndarray:
    """Tokens to unmask per step, exactly LLaDA's ``get_num_transfer_tokens``.

    Parameters
    ----------
    mask_index : array_like of bool, shape (B, L)
        True where the block still holds ``mask_id``.
    steps : int
        Diffusion steps for the block (T), at least 1.

    Returns
    -------
    np.ndarray of int64, shape (B, steps)
        ``mask_num // steps`` everywhere, plus 1 in the first ``mask_num % steps`` steps.
    """
    mask_index = np.asarray(mask_index)
    if mask_index.ndim != 2:
        raise ValueError(f"mask_index: expected shape (B, L), got {mask_index.shape}")
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps: must be an integer >= 1, got {steps!r}")
    mask_num = mask_index.astype(bool).sum(axis=1, keepdims=True, dtype=np.int64)
    base = mask_num // steps
    remainder = mask_num % steps
    return base + (np.arange(steps, dtype=np.int64) < remainder).astype(np.int64)


# --- confidence -----

def method1_confidence(logits, x0=None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, Method 1: float64 softmax probability of the argmax token (or of ``x0``).

    Parameters
    ----------
    logits : array_like of float, shape (..., V)
    x0 : array_like of int, shape (...), optional
        The chosen tokens (a temperature draw), whose clean probability is wanted; default the
        argmax.

    Returns
    -------
    x0 : np.ndarray of int64, shape (...)
        ``argmax`` over V, first index on ties (NaN counts as the maximum, as in NumPy/PyTorch).
    x0_p : np.ndarray of float64, shape (...)
        ``softmax(logits)[x0]`` with the max subtracted first (PyTorch's formulation). NaN if the
        row holds a NaN or ``+inf`` or is all ``-inf``.
    """
    z = np.asarray(logits, dtype=np.float64)
    x0 = (np.argmax(z, axis=-1) if x0 is None else np.asarray(x0)).astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(z, axis=-1, keepdims=True)
        e = np.exp(z - m)
        p = e / e.sum(axis=-1, keepdims=True)
    x0_p = np.take_along_axis(p, x0[..., None], axis=-1)[..., 0]
    return x0, x0_p


def method2_confidence_hw(logits_bf16_bits, vlen: int, sum_partials: int = 1
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, Method 2 (stable-max) exactly as the NPU computes it, per position.

    Steps (each a bit-exact RTL model):

    1. ``(m, x0) = V_RED_MAX_IDX(z)`` -- BF16 max and its first index, chunks of ``vlen`` lanes.
    2. ``d = z - m`` elementwise in BF16 (``m`` broadcast; RNE).
    3. ``e = exp(d)`` in the FP unit's BF16 exp, written back over the logits.
    4. ``s = V_RED_SUM(e)`` accumulated in FP32.
    5. ``conf = 1 / bf16(s)`` in the FP unit's BF16 reciprocal.

    The model needs the whole row ``z``: with ``V_chunk < V`` the hardware streams the logits
    twice (max pass, then exp/sum pass). The results do not depend on ``V_chunk`` as long as it
    is a multiple of ``vlen``, since the reductions' order is set by the ``vlen`` chunks.

    Parameters
    ----------
    logits_bf16_bits : array_like of uint16, shape (..., V)
    vlen : int
        Vector lanes of the Reduction Unit.

    Returns
    -------
    x0 : np.ndarray of int64, shape (...)
    conf_bits : np.ndarray of uint16, shape (...)
        BF16 confidence ``~ softmax(z)[x0]``.
    """
    z = np.asarray(logits_bf16_bits)
    if z.dtype != np.uint16:
        raise TypeError(f"logits_bf16_bits: expected uint16 BF16 bit patterns, got {z.dtype}")
    if z.ndim < 1 or z.shape[-1] < 1:
        raise ValueError(f"logits_bf16_bits: expected shape (..., V) with V >= 1, got {z.shape}")
    m, x0 = reduce_max_idx(z, vlen)
    m = np.asarray(m, dtype=np.uint16)
    d = fp_sub(z, np.broadcast_to(m[..., None], z.shape), BF16)
    e = bf16_exp(d)
    s = reduce_sum(e, vlen, sum_partials)
    conf = bf16_recip(fp32_to_bf16(s))
    return np.asarray(x0, dtype=np.int64), np.asarray(conf, dtype=np.uint16)


def online_confidence_hw(logits_bf16_bits, vlen: int, v_chunk: int, sum_partials: int = 1):
    """Fused (online-softmax) confidence exactly as the core's ``stable_max: fused`` program.

    One pass over the row in chunks of ``v_chunk`` elements (the prefetch unit), carrying a
    running max ``m`` (BF16, init -inf), its index and an FP32 running sum ``s`` (init +0).
    Per chunk ``c`` (the instructions of :func:`memwall.golden.dplena.program.generate`):

    1. ``(mc, ic) = V_RED_MAX_IDX(c)``; ``S_MAX_IDX_F``: if ``key(mc) > key(m)`` (strict) then
       ``m = mc`` and ``idx = base + ic`` -- so the first maximal index wins, as in two-pass.
    2. ``s = fp32(s * widen(e^(m_old - m)))`` with ``m_old - m`` and ``e^`` in BF16 (FP unit).
    3. ``s = fp32(s + V_RED_SUM(e^(c - m)))``, the chunk's exponentials in BF16.

    Finally ``conf = 1 / bf16(s)``. ``x0`` equals two-pass's bit for bit; ``conf`` differs from
    it only by rounding (the rescale and the per-chunk sums). A chunk of only ``-inf`` before any
    finite value gives ``-inf - -inf = NaN``, so the confidence is NaN (two-pass gives a finite
    value there); MXFP8 logits cannot hold ``-inf``.

    Parameters
    ----------
    logits_bf16_bits : array_like of uint16, shape (..., V)
    vlen : int
    v_chunk : int
        Elements per chunk, a multiple of ``vlen`` unless it covers the row; the last chunk
        may be partial.
    sum_partials : int
        The accumulator's interleaved partial sums
        (:func:`~memwall.golden.common.fparith.reduce_sum`).

    Returns
    -------
    x0 : np.ndarray of int64, shape (...)
    conf_bits : np.ndarray of uint16, shape (...)
    """
    z = np.asarray(logits_bf16_bits)
    if z.dtype != np.uint16 or z.ndim < 1 or z.shape[-1] < 1:
        raise ValueError(f"logits_bf16_bits: expected uint16 (..., V) with V >= 1, got "
                         f"{z.dtype} {z.shape}")
    if v_chunk < 1 or (v_chunk < z.shape[-1] and v_chunk % vlen):
        raise ValueError(f"v_chunk: {v_chunk} must be a positive multiple of vlen ({vlen}), "
                         f"or at least V ({z.shape[-1]})")
    lead = z.shape[:-1]
    m = np.full(lead, NEG_INF_BF16, dtype=np.uint16)
    idx = np.zeros(lead, dtype=np.int64)
    s = np.zeros(lead, dtype=np.uint32)
    for base in range(0, z.shape[-1], v_chunk):
        chunk = z[..., base:base + v_chunk]
        mc, ic = reduce_max_idx(chunk, vlen)
        mc = np.asarray(mc, dtype=np.uint16)
        take = bf16_key(mc) > bf16_key(m)
        m_old = m
        m = np.where(take, mc, m).astype(np.uint16)
        idx = np.where(take, base + np.asarray(ic, dtype=np.int64), idx)
        scale = bf16_exp(fp_sub(m_old, m, BF16))
        s = fp_mul(s, bf16_to_fp32(scale), FP32)
        e = bf16_exp(fp_sub(chunk, np.broadcast_to(m[..., None], chunk.shape), BF16))
        s = fp_add(s, np.asarray(reduce_sum(e, vlen, sum_partials), dtype=np.uint32), FP32)
    conf = bf16_recip(fp32_to_bf16(s))
    return idx, np.asarray(conf, dtype=np.uint16)


# --- top-k and select -----------------------------------------------------------------------------

def topk_mask(conf_bits, valid, k) -> np.ndarray:
    """``V_TOPK_MASK``: bit-exact model of the streaming insertion top-k.

    The unit holds ``min(k, L)`` sorted slots (key, index) and streams positions ``0 .. L-1``
    in. Each slot compares the newcomer with its own entry (``k`` comparators in parallel); the
    newcomer is inserted in front of the first slot it *strictly* beats or that is empty, the
    slots behind shift down one place and the last one drops out. Equal keys therefore keep the
    earlier (lower-index) position ahead. At the end the positions held in the slots are
    marked.

    Parameters
    ----------
    conf_bits : array_like of uint16, shape (B, L)
        BF16 confidences, ranked by :func:`~memwall.golden.common.fparith.bf16_key` (NaN highest,
        ``-0 == +0``).
    valid : array_like of bool, shape (B, L)
        False positions are treated exactly as ``-inf`` (``0xFF80``): they tie with each other
        and with real ``-inf`` and are still chosen, by index, when ``k`` exceeds the number of
        better positions.
    k : array_like of int, shape (B,)
        Slots used per row, ``>= 0``; ``k >= L`` marks every position, ``k == 0`` none.

    Returns
    -------
    np.ndarray of bool, shape (B, L)
        Exactly ``min(k[b], L)`` True per row.
    """
    conf_bits = np.asarray(conf_bits)
    valid = np.asarray(valid)
    if conf_bits.dtype != np.uint16 or conf_bits.ndim != 2:
        raise ValueError(f"conf_bits: expected uint16 (B, L), got {conf_bits.dtype} "
                         f"{conf_bits.shape}")
    if valid.dtype != np.bool_ or valid.shape != conf_bits.shape:
        raise ValueError(f"valid: expected bool {conf_bits.shape}, got {valid.dtype} "
                         f"{valid.shape}")
    n_rows, n_pos = conf_bits.shape
    k = _as_k(k, n_rows)
    keys = np.asarray(bf16_key(np.where(valid, conf_bits, np.uint16(NEG_INF_BF16))),
                      dtype=np.int64)
    out = np.zeros((n_rows, n_pos), dtype=bool)
    for b in range(n_rows):
        n_slots = int(min(k[b], n_pos))
        if n_slots == 0:
            continue
        slot_key = np.zeros(n_slots, dtype=np.int64)
        slot_idx = np.zeros(n_slots, dtype=np.int64)
        slot_full = np.zeros(n_slots, dtype=bool)
        for i in range(n_pos):
            new = keys[b, i]
            # One comparator per slot; sorted slots make `beats` monotone (F..F T..T).
            beats = ~slot_full | (new > slot_key)
            # Slot j shifts in from j-1 if the newcomer beat j-1, loads the newcomer if it
            # beats j but not j-1, else holds.
            prev = np.concatenate(([False], beats[:-1]))
            load = beats & ~prev
            slot_key = np.where(prev, np.roll(slot_key, 1), np.where(load, new, slot_key))
            slot_idx = np.where(prev, np.roll(slot_idx, 1), np.where(load, i, slot_idx))
            slot_full = np.where(prev, np.roll(slot_full, 1), slot_full | load)
        out[b, slot_idx[slot_full]] = True
    return out


def masked_select(mask, a, b) -> np.ndarray:
    """``V_SELECT_INT``: ``where(mask, a, b)`` on INT32 lanes.

    Parameters
    ----------
    mask : array_like of bool
    a, b : array_like of int
        Values must fit in int32 (the INT SRAM width); broadcast with ``mask``.

    Returns
    -------
    np.ndarray of int32
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask: expected bool, got {mask.dtype}")
    return np.where(mask, _as_int32(a, "a"), _as_int32(b, "b")).astype(np.int32)


# --- one sampling step -----

def sample_step_reference(logits, x, mask_id: int, k, *, temperature: float = 0.0,
                          seed: int = 0, step: int = 0) -> dict[str, np.ndarray]:
    """One LLaDA low-confidence-remasking step in float64 (Algorithm 1, Method 1); with
    ``temperature > 0``, x0 drawn by the Gumbel-max trick from the core's noise at (``seed``,
    ``step``) (:func:`memwall.golden.dplena.noise.noisy_x0`), its confidence still the clean
    softmax probability.

    Parameters
    ----------
    logits : array_like of float, shape (B, L, V)
    x : array_like of int, shape (B, L)
        Current tokens of the active block.
    mask_id : int
    k : array_like of int, shape (B,)
        Tokens to transfer in this step, per row.

    Returns
    -------
    dict
        ``x`` (int64 (B, L), updated tokens), ``x0`` (int64, prediction where masked, else the
        old token), ``confidence`` (float64, ``softmax[x0]`` where masked, else ``-inf``),
        ``transfer`` (bool, the stable top-k of ``confidence``: NaN highest, lower index first
        on ties).
    """
    z = np.asarray(logits, dtype=np.float64)
    x = np.asarray(x)
    _check_step_shapes(z.shape, x)
    k = _as_k(k, z.shape[0])
    mask_index = x == mask_id
    drawn = None
    if temperature != 0:
        from memwall.golden.dplena.noise import noisy_x0

        drawn = noisy_x0(z, temperature, seed, step)
    x0, x0_p = method1_confidence(z, drawn)
    x0 = np.where(mask_index, x0, x).astype(np.int64)
    confidence = np.where(mask_index, x0_p, -np.inf)
    transfer = _topk_stable(confidence, k)
    x_new = np.where(transfer, x0, x).astype(np.int64)
    return {"x": x_new, "x0": x0, "confidence": confidence, "transfer": transfer}


def sample_step_hw(logits_bf16_bits, x, mask_id: int, k, vlen: int, *,
                   stable_max: str = "two_pass", v_chunk: int | None = None,
                   sum_partials: int = 1) -> dict[str, np.ndarray]:
    """One sampling step as the d-PLENA NPU executes it (Algorithm 2, phases 1-4), bit-exact.

    Parameters
    ----------
    logits_bf16_bits : array_like of uint16, shape (B, L, V)
        Logits as they sit in Vector SRAM (after the MX dequantiser, see :func:`prepare_logits`).
    x : array_like of int, shape (B, L)
        Current tokens; must fit in int32 (INT SRAM), as must ``mask_id``.
    mask_id : int
    k : array_like of int, shape (B,)
        Tokens to transfer per row (``k_scalar`` of ``V_TOPK_MASK``).
    vlen : int
        Vector lanes.
    stable_max : {"two_pass", "fused"}
        ``two_pass``: :func:`method2_confidence_hw` (independent of the chunking);
        ``fused``: :func:`online_confidence_hw` over chunks of ``v_chunk``.
    v_chunk : int, optional
        Chunk of the fused pass (required for ``fused``).
    sum_partials : int
        Interleaved partial sums of the reduction unit's accumulator
        (:func:`~memwall.golden.common.fparith.reduce_sum`; ``FpStages.sum_partials`` of the core).

    Returns
    -------
    dict
        ``x`` (int64 (B, L)), ``x0`` (int64, after phase 4's select), ``confidence`` (float32
        value of the BF16 confidence where masked, ``-inf`` elsewhere; what the top-k unit
        saw), ``transfer`` (bool).
    """
    z = np.asarray(logits_bf16_bits)
    if z.dtype != np.uint16 or z.ndim != 3:
        raise ValueError(f"logits_bf16_bits: expected uint16 (B, L, V), got {z.dtype} "
                         f"{z.shape}")
    x = np.asarray(x)
    _check_step_shapes(z.shape, x)
    k = _as_k(k, z.shape[0])
    if stable_max not in STABLE_MAX_MODES:
        raise ValueError(f"stable_max: {stable_max!r}; allowed: {', '.join(STABLE_MAX_MODES)}")
    if stable_max == "fused" and v_chunk is None:
        raise ValueError("stable_max 'fused' needs v_chunk")
    x32 = _as_int32(x, "x")
    mask_id32 = _as_int32(np.asarray(mask_id), "mask_id")
    m_idx = x32 == mask_id32                      # Algorithm 2 line 5

    n_rows = z.shape[0]
    x_out = np.empty_like(x32)
    x0_out = np.empty_like(x32)
    transfer = np.zeros(x32.shape, dtype=bool)
    conf_out = np.empty(x32.shape, dtype=np.uint16)
    for b in range(n_rows):
        sram_fp, sram_int = _phase1_2(z[b], vlen, stable_max, v_chunk, sum_partials)
        x0_p = _phase3_map(sram_fp)
        transfer[b] = topk_mask(x0_p[None], m_idx[b][None], k[b:b + 1])[0]
        x0_out[b], x_out[b] = _phase4(sram_int, m_idx[b], transfer[b], x32[b])
        conf_out[b] = x0_p
    confidence = np.where(m_idx, BF16.from_bits(conf_out).astype(np.float32),
                          np.float32(-np.inf)).astype(np.float32)
    return {"x": x_out.astype(np.int64), "x0": x0_out.astype(np.int64),
            "confidence": confidence, "transfer": transfer}


def _phase1_2(z_row: np.ndarray, vlen: int, stable_max: str = "two_pass",
              v_chunk: int | None = None, sum_partials: int = 1
              ) -> tuple[np.ndarray, np.ndarray]:
    """PHASE 1 (HBM -> Vector -> Scalar) and PHASE 2 (Scalar stores) for one batch row.

    For every position l: Method 2 gives ``x0_p_scalar`` (FP reg) and ``V_RED_MAX_IDX`` gives
    ``x0_scalar`` (GP reg) from the same max reduction; ``S_ST_FP`` / ``S_ST_INT`` store them at
    ``SRAM_FP[l]`` / ``SRAM_INT[l]``. Positions are independent, so all L are computed at once.
    """
    if stable_max == "fused":
        x0_scalar, x0_p_scalar = online_confidence_hw(z_row, vlen, v_chunk, sum_partials)
    else:
        x0_scalar, x0_p_scalar = method2_confidence_hw(z_row, vlen, sum_partials)
    sram_fp = np.asarray(x0_p_scalar, dtype=np.uint16)       # BF16 FP SRAM
    sram_int = _as_int32(x0_scalar, "x0")                     # INT32 INT SRAM
    return sram_fp, sram_int


def _phase3_map(sram_fp: np.ndarray) -> np.ndarray:
    """PHASE 3, ``S_MAP_V_FP``: copy ``SRAM_FP[0:L]`` into one Vector SRAM row (bits unchanged)."""
    return sram_fp.copy()


def _phase4(sram_int: np.ndarray, m_idx: np.ndarray, transfer: np.ndarray,
            x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PHASE 4, two V_SELECT_INT: ``x0 = where(m_idx, x0, x)``, ``x = where(transfer, x0, x)``."""
    x0 = masked_select(m_idx, sram_int, x)
    return x0, masked_select(transfer, x0, x)


def _topk_stable(confidence: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Float top-k per row: stable order NaN, then descending value, lower index first on ties."""
    n_rows, n_pos = confidence.shape
    nan = np.isnan(confidence)
    val = np.where(nan, 0.0, confidence)
    idx = np.broadcast_to(np.arange(n_pos), confidence.shape)
    out = np.zeros(confidence.shape, dtype=bool)
    for b in range(n_rows):
        # lexsort: last key is primary. NaN first, then -value ascending, then index.
        order = np.lexsort((idx[b], -val[b], ~nan[b]))
        out[b, order[:min(int(k[b]), n_pos)]] = True
    return out


# --- inputs and outputs -----

def prepare_logits(logits, fmt: str) -> np.ndarray:
    """Logits as the Vector SRAM holds them: BF16 bit patterns (uint16), shape unchanged.

    Parameters
    ----------
    logits : array_like of float32 (float16 also accepted, exact), shape (..., V)
    fmt : one of :data:`LOGITS_FORMATS`
        HBM format. ``"bf16"``: RNE float32 -> BF16 by the host. An MX format (``"mxfp8"`` is
        ``"mxfp8_e4m3"``): quantised (blocks of 32 along V,
        :func:`memwall.golden.dplena.mx.quantize`) and expanded by the dequantiser
        (:func:`memwall.golden.dplena.mx.dequantize`); no MX format keeps an inf, so an
        infinite logit turns its whole 32-block into NaN.

    Returns
    -------
    np.ndarray of uint16
        NaNs are canonical (``0x7FC0``).
    """
    a = np.asarray(logits)
    if a.dtype not in (np.float32, np.float16):
        raise TypeError(f"logits: expected float32 (or float16), got {a.dtype}; cast explicitly "
                        "so the rounding to float32 is the caller's decision")
    a = a.astype(np.float32)
    if fmt == "bf16":
        return BF16.canonicalize_nan(round_to_bf16(a).view(np.uint16))
    if fmt in LOGITS_FORMATS:
        fmt = LOGITS_FORMAT_ALIASES.get(fmt, fmt)
        return mx.dequantize(*mx.quantize(a, fmt), fmt)
    raise ValueError(f"fmt: {fmt!r} is not a logits format; allowed: {', '.join(LOGITS_FORMATS)}")


#: The largest vocabulary read (real ones are up to 256k tokens).
MAX_VOCAB = 1 << 20
#: The most logits of one input file: 2^26 float32 = 256 MiB, which the golden's temporaries
#: keep within 4 GiB.
MAX_LOGITS = 1 << 26


class SamplingInputError(InputError):
    """A sampling input file that cannot be used; the message names the key, what was expected
    and what was found."""


_LOGITS_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))
_INT_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def load_sampling_inputs(path, block_len: int, k_max: int, max_batch: int | None = None,
                         max_vocab: int = MAX_VOCAB) -> dict[str, Any]:
    """Load and validate one sampling step's inputs from an ``.npz`` file.

    Expected keys:

    ``logits`` : (B, L, V) float32
        float16 is accepted and widened exactly. float64 is rejected: converting it would add a
        rounding step (and float64 -> BF16 must go through float32 anyway), so the file must
        say which float32 values are meant. NaN and +-inf are allowed (see the module
        docstring for how they propagate).
    ``x`` : (B, L) int64
        int32 is accepted and widened. Values in ``[0, 2**31 - 1]`` (INT32 token IDs).
    ``mask_id`` : () integer scalar (int64/int32), in ``[0, 2**31 - 1]``.
    ``k`` : (B,) int64 (int32 accepted), each in ``[0, k_max]``.

    Constraints: ``1 <= B <= max_batch``, ``1 <= L <= block_len`` (the hardware's block
    length), ``1 <= V <= max_vocab``, at most ``MAX_LOGITS`` logits; ``B`` and ``L`` agree
    between arrays. Extra keys are ignored (not read). The file is read through
    :func:`memwall.inputs.load_npz`: shapes and sizes are checked from the headers before any
    data is decompressed, and object arrays are refused.

    Parameters
    ----------
    path : str or os.PathLike
    block_len : int
        L of the hardware configuration (the top-k vector length).
    k_max : int
        Top-k slots of the hardware configuration.

    Returns
    -------
    dict
        ``logits`` float32 (B, L, V), ``x`` int64 (B, L), ``mask_id`` int, ``k`` int64 (B,).

    Raises
    ------
    SamplingInputError
        For any of the problems above, naming the key.
    """
    b_max = max_batch if max_batch is not None else MAX_LOGITS
    specs = {
        "logits": ArraySpec(_LOGITS_DTYPES, (b_max, block_len, max_vocab),
                            f"(B, L, V) float32 (or float16), B <= {b_max}, "
                            f"L <= block_len = {block_len}, V <= {max_vocab}"),
        "x": ArraySpec(_INT_DTYPES, (b_max, block_len), "(B, L) int64 (or int32)"),
        "mask_id": ArraySpec(_INT_DTYPES, (), "a () int64 (or int32) scalar"),
        "k": ArraySpec(_INT_DTYPES, (b_max,), "(B,) int64 (or int32)"),
    }
    try:
        data = load_npz(path, specs, what="inputs",
                        max_bytes=MAX_LOGITS * 4 + 16 * b_max * (block_len + 1) + 64)
    except InputError as exc:
        raise SamplingInputError(str(exc)) from None
    where = f"inputs {path}"
    logits, x, mask_id, k = data["logits"], data["x"], data["mask_id"], data["k"]
    if logits.size > MAX_LOGITS:
        raise SamplingInputError(f"{where}: 'logits' has {logits.size:,} elements "
                                 f"{logits.shape}; at most {MAX_LOGITS:,} are read")

    n_b, n_l, n_v = logits.shape
    if n_b < 1 or n_l < 1:
        raise SamplingInputError(f"{where}: 'logits' must have B >= 1 and L >= 1, found shape "
                                 f"{logits.shape}")
    if n_v < 1:
        raise SamplingInputError(f"{where}: 'logits' must have V >= 1, found shape "
                                 f"{logits.shape}")
    if n_l > block_len:
        raise SamplingInputError(f"{where}: 'logits' has L = {n_l} but the hardware block_len "
                                 f"is {block_len} (L must be <= block_len)")
    if x.shape != (n_b, n_l):
        raise SamplingInputError(f"{where}: 'x' must have shape (B, L) = {(n_b, n_l)} to match "
                                 f"'logits' {logits.shape}, found {x.shape}")
    if k.shape != (n_b,):
        raise SamplingInputError(f"{where}: 'k' must have shape (B,) = {(n_b,)} to match "
                                 f"'logits' {logits.shape}, found {k.shape}")
    if np.any((x < 0) | (x > _INT32_MAX)):
        bad = x[(x < 0) | (x > _INT32_MAX)][0]
        raise SamplingInputError(f"{where}: 'x' values must be token IDs in [0, {_INT32_MAX}], "
                                 f"found {bad}")
    mid = int(mask_id)
    if not 0 <= mid <= _INT32_MAX:
        raise SamplingInputError(f"{where}: 'mask_id' must be in [0, {_INT32_MAX}], found {mid}")
    if np.any((k < 0) | (k > k_max)):
        bad = k[(k < 0) | (k > k_max)][0]
        raise SamplingInputError(f"{where}: 'k' values must be in [0, k_max = {k_max}], found "
                                 f"{bad}")
    return {"logits": logits.astype(np.float32), "x": x.astype(np.int64), "mask_id": mid,
            "k": k.astype(np.int64)}


_OUTPUT_DTYPES = {"x": np.int64, "x0": np.int64, "confidence": np.float32, "transfer": np.bool_}


def save_sampling_outputs(path, result: dict[str, Any]) -> None:
    """Write ``x`` int64, ``x0`` int64, ``confidence`` float32, ``transfer`` bool to ``path``.

    Atomic: the npz is written to a temporary file in the same directory, flushed to disk and
    moved over ``path`` with :func:`os.replace`, so readers never see a half-written file. The
    name is used as given (no ``.npz`` is appended).

    Parameters
    ----------
    path : str or os.PathLike
    result : dict
        As returned by :func:`sample_step_hw` or :func:`sample_step_reference` (the reference's
        float64 confidence is narrowed to float32). All four arrays must share one shape. An
        optional integer ``cycles`` (from an RTL run) is stored as an int64 scalar.
    """
    arrays = {}
    if "cycles" in result:
        arrays["cycles"] = np.int64(result["cycles"])
    for key, dtype in _OUTPUT_DTYPES.items():
        if key not in result:
            raise ValueError(f"result: missing key {key!r}")
        a = np.asarray(result[key])
        kind_ok = {np.int64: a.dtype.kind in "iu", np.float32: a.dtype.kind == "f",
                   np.bool_: a.dtype == np.bool_}[dtype]
        if not kind_ok:
            raise ValueError(f"result: {key!r} must be {np.dtype(dtype)}-compatible, got "
                             f"{a.dtype}")
        arrays[key] = a.astype(dtype)
    shapes = {key: a.shape for key, a in arrays.items() if key != "cycles"}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"result: arrays must share one (B, L) shape, got {shapes}")
    write_npz_atomic(path, arrays)


# --- helpers -----

def _as_int32(a, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integers, got {a.dtype}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > _INT32_MAX):
        raise ValueError(f"{name}: values must fit in int32 (INT SRAM), got range "
                         f"[{a.min()}, {a.max()}]")
    return a.astype(np.int32)


def _as_k(k, n_rows: int) -> np.ndarray:
    k = np.asarray(k)
    if k.shape != (n_rows,) or k.dtype.kind not in "iu":
        raise ValueError(f"k: expected integers of shape ({n_rows},), got {k.dtype} {k.shape}")
    if np.any(k < 0):
        raise ValueError(f"k: must be >= 0, got {k.min()}")
    return k.astype(np.int64)


def _check_step_shapes(logits_shape: tuple, x: np.ndarray) -> None:
    if len(logits_shape) != 3 or logits_shape[-1] < 1:
        raise ValueError(f"logits: expected shape (B, L, V) with V >= 1, got {logits_shape}")
    if x.shape != logits_shape[:2]:
        raise ValueError(f"x: expected shape {logits_shape[:2]} to match logits "
                         f"{logits_shape}, got {x.shape}")
    if x.dtype.kind not in "iu":
        raise TypeError(f"x: expected integer token IDs, got {x.dtype}")
