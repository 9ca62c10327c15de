"""Bit-exact golden models of the floating-point arithmetic blocks (``hdl/common/fp.py``).

Operands and results are *bit patterns* in unsigned arrays (``uint16`` for BF16, ``uint32`` for
FP32). Every block rounds to nearest, ties to even (RNE), keeps subnormals on input and output,
overflows to a signed infinity, and returns the single canonical quiet NaN
(:attr:`~memwall.golden.common.formats.FloatFormat.qnan_bits`: sign 0, exponent all ones, fraction
MSB set) for every NaN result, whatever the NaN inputs were. Exact zero results follow IEEE-754 RNE:
``x + (-x) = +0``, ``(-0) + (-0) = -0``, ``(+0) + (-0) = +0``; a product's sign is the XOR of the
operand signs, also for zeros and for results that underflow to zero.

The reduction models (:func:`reduce_max_idx`, :func:`reduce_sum`) follow the reduction unit's
order of operations exactly (chunks of ``vlen`` lanes, a pairwise tree within a chunk, a running
result across chunks) and accept any number of leading batch axes.

Importable without Amaranth or cocotb.
"""

from __future__ import annotations

import numpy as np

from memwall.golden.common.formats import BF16, FP32, FloatFormat, round_to_bf16

__all__ = [
    "BF16_NAN_KEY",
    "bf16_key",
    "bf16_to_fp32",
    "fp32_to_bf16",
    "fp_add",
    "fp_mul",
    "fp_sub",
    "reduce_max",
    "reduce_max_idx",
    "reduce_sum",
]

#: Key of every BF16 NaN: one above +inf (``0x7F80``), so NaN is the maximum of every comparison.
BF16_NAN_KEY = 0x7F81


def _check_fmt(fmt: FloatFormat) -> FloatFormat:
    if fmt not in (BF16, FP32):
        raise ValueError(f"fmt must be BF16 or FP32 (golden.formats), got {fmt!r}")
    return BF16 if fmt == BF16 else FP32


def _check_vlen(vlen: int) -> int:
    if not isinstance(vlen, (int, np.integer)) or vlen < 1 or vlen & (vlen - 1):
        raise ValueError(f"vlen must be a power of two >= 1, got {vlen!r}")
    return int(vlen)


def _bf16_as_f32(bits) -> np.ndarray:
    """BF16 bits -> float32 values (exact: BF16 is the top half of FP32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _values(bits, fmt: FloatFormat) -> np.ndarray:
    """Operand bits -> float32 values to compute with (BF16 widened exactly)."""
    if fmt is BF16:
        return _bf16_as_f32(bits)
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def _bits(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float32 results -> ``fmt`` bits with RNE and canonical NaN."""
    if fmt is BF16:
        # float32 -> bf16 is one RNE rounding (no float64 on the way, so no double rounding).
        with np.errstate(invalid="ignore"):  # NaN casts warn; they are canonicalised below
            out = round_to_bf16(values).view(np.uint16)
    else:
        out = np.asarray(values, dtype=np.float32).view(np.uint32)
    return fmt.canonicalize_nan(out)


def bf16_key(bits) -> np.ndarray:
    """Total-order key of BF16 values used by every max/argmax/top-k comparison.

    Parameters
    ----------
    bits : array_like of uint16
        BF16 bit patterns.

    Returns
    -------
    numpy.ndarray of int32
        ``+(bits & 0x7FFF)`` for sign 0 and ``-(bits & 0x7FFF)`` for sign 1, so keys order
        finite values and infinities numerically and ``+0`` and ``-0`` both get key 0 (equal:
        neither beats the other). Every NaN (any sign, any payload) gets :data:`BF16_NAN_KEY`
        ``= 0x7F81``, one more than +inf's ``0x7F80``: NaN is the maximum, as in ``torch.argmax``,
        which returns the index of a NaN. Keys fit a 17-bit signed integer.
    """
    return _key16(np.asarray(bits, dtype=np.uint16)).astype(np.int32)


def _key16(bits: np.ndarray) -> np.ndarray:
    """:func:`bf16_key` as int16 (every key fits: -0x7F80 .. 0x7F81), for fast reductions."""
    mag = (bits & 0x7FFF).astype(np.int16)
    key = np.where(bits & 0x8000 != 0, -mag, mag)
    return np.where(mag > 0x7F80, np.int16(BF16_NAN_KEY), key)


def fp_add(a, b, fmt: FloatFormat) -> np.ndarray:
    """IEEE-754 ``a + b`` on bit patterns, RNE with subnormals, canonical NaN.

    Parameters
    ----------
    a, b : array_like of fmt's unsigned type
        Operand bit patterns (broadcast against each other).
    fmt : FloatFormat
        :data:`~memwall.golden.common.formats.BF16` or :data:`~memwall.golden.common.formats.FP32`.

    Returns
    -------
    numpy.ndarray of fmt's unsigned type
        The correctly rounded sum. NaN operands and ``inf + (-inf)`` give ``fmt.qnan_bits``;
        an exact zero sum is ``+0`` unless both operands are ``-0``; overflow gives a signed inf.
    """
    fmt = _check_fmt(fmt)
    # BF16 in float32 then one float32->BF16 rounding: the double rounding is innocuous for +, -,
    # * of two BF16 values (24 >= 2*8 + 2 bits; subnormal sums are exact in float32).
    with np.errstate(all="ignore"):
        return _bits(_values(a, fmt) + _values(b, fmt), fmt)


def fp_sub(a, b, fmt: FloatFormat) -> np.ndarray:
    """IEEE-754 ``a - b``: :func:`fp_add` with the sign of ``b`` flipped (NaN still canonical).

    ``x - x = +0`` and ``(-0) - (+0) = -0``, as IEEE-754 RNE.
    """
    fmt = _check_fmt(fmt)
    b = np.asarray(b, dtype=fmt.uint) ^ fmt.uint(fmt.sign_mask)
    return fp_add(a, b, fmt)


def fp_mul(a, b, fmt: FloatFormat) -> np.ndarray:
    """IEEE-754 ``a * b`` on bit patterns, RNE with subnormals, canonical NaN.

    Parameters
    ----------
    a, b : array_like of fmt's unsigned type
        Operand bit patterns (broadcast against each other).
    fmt : FloatFormat
        :data:`~memwall.golden.common.formats.BF16` or :data:`~memwall.golden.common.formats.FP32`.

    Returns
    -------
    numpy.ndarray of fmt's unsigned type
        The correctly rounded product; its sign is the XOR of the operand signs (zeros and
        underflow to zero included). NaN operands and ``0 * inf`` give ``fmt.qnan_bits``.
    """
    fmt = _check_fmt(fmt)
    # BF16: the float32 product of two BF16 values is exact unless it underflows, and rounding
    # it again to BF16 equals one correct rounding (24 >= 2*8 + 2; see
    # tests/common/test_fparith.py).
    with np.errstate(all="ignore"):
        return _bits(_values(a, fmt) * _values(b, fmt), fmt)


def fp32_to_bf16(bits) -> np.ndarray:
    """Round FP32 bit patterns to BF16 bit patterns.

    RNE; FP32 values below BF16's normal range become BF16 subnormals (or a signed zero), values
    beyond BF16's largest finite round to a signed inf, and every NaN becomes ``BF16.qnan_bits``.
    """
    values = np.asarray(bits, dtype=np.uint32).view(np.float32)
    return _bits(values, BF16)


def bf16_to_fp32(bits) -> np.ndarray:
    """Widen BF16 bit patterns to FP32 bit patterns exactly (NaN becomes ``FP32.qnan_bits``)."""
    return FP32.canonicalize_nan(_bf16_as_f32(bits).view(np.uint32))


def _chunked(x: np.ndarray, vlen: int, fill) -> tuple[np.ndarray, np.ndarray]:
    """Pad the last axis to whole chunks and reshape to ``(..., nchunks, vlen)``.

    Returns the reshaped array and the matching lane-valid mask.
    """
    n = x.shape[-1]
    nchunks = -(-n // vlen)
    pad = nchunks * vlen - n
    valid = np.ones(x.shape[-1], dtype=bool)
    if pad:
        x = np.concatenate([x, np.full(x.shape[:-1] + (pad,), fill, dtype=x.dtype)], axis=-1)
        valid = np.concatenate([valid, np.zeros(pad, dtype=bool)])
    return (x.reshape(x.shape[:-1] + (nchunks, vlen)),
            np.broadcast_to(valid.reshape(nchunks, vlen), x.shape[:-1] + (nchunks, vlen)))


def _check_vector(bits, dtype) -> np.ndarray:
    bits = np.asarray(bits, dtype=dtype)
    if bits.ndim < 1 or bits.shape[-1] < 1:
        raise ValueError(f"expected an array of shape (..., N) with N >= 1, got {bits.shape}")
    return bits


def reduce_max_idx(bits, vlen: int):
    """Maximum of BF16 vectors and its index, in the reduction unit's order.

    The last axis (length ``N >= 1``) is processed in chunks of ``vlen`` lanes (a power of two);
    the last chunk may be partial, and its missing lanes are invalid and never win. Within a
    chunk a pairwise tree: level 0 compares lanes ``(2i, 2i+1)``, the next level compares those
    winners ``(2i, 2i+1)``, and so on. At each node the right (higher-index) operand wins only if
    it is valid and either its :func:`bf16_key` is strictly greater than the left's or the left
    is invalid; so equal keys (ties, ``+0`` vs ``-0``) keep the lower index. Across chunks, in
    order, the running result is replaced only when the new chunk's winner key is strictly
    greater. Net effect: the first index whose key is maximal, NaN counting as the maximum.

    Parameters
    ----------
    bits : array_like of uint16, shape (..., N)
        BF16 bit patterns; leading axes are independent rows.
    vlen : int
        Lanes per chunk (power of two).

    Returns
    -------
    value : numpy.ndarray of uint16, shape (...)
        The winner's original bits (a ``-0`` winner gives ``0x8000``; a NaN winner keeps its
        payload; use :func:`bf16_key` to compare).
    index : numpy.ndarray of int64, shape (...)
        The winner's index along the last axis. For 1-D input, a Python ``int``.
    """
    vlen = _check_vlen(vlen)
    bits = _check_vector(bits, np.uint16)
    keys, valid = _chunked(_key16(bits), vlen, 0)
    lane = None  # winner's lane within its chunk (int32), None at level 0
    span = 1  # lanes covered by each node at this level
    while keys.shape[-1] > 1:
        kl, kr = keys[..., 0::2], keys[..., 1::2]
        vl, vr = valid[..., 0::2], valid[..., 1::2]
        right = vr & (~vl | (kr > kl))
        keys = np.where(right, kr, kl)
        if lane is None:
            lane = right.astype(np.int32)
        else:
            lane = np.where(right, lane[..., 1::2] + span, lane[..., 0::2])
        valid = vl | vr
        span *= 2
    keys, valid = keys[..., 0], valid[..., 0]
    idx = np.zeros(keys.shape, np.int64) if lane is None else lane[..., 0].astype(np.int64)
    idx += np.arange(keys.shape[-1], dtype=np.int64) * vlen
    best_key, best_idx = keys[..., 0].copy(), idx[..., 0].copy()
    for c in range(1, keys.shape[-1]):
        take = valid[..., c] & (keys[..., c] > best_key)
        best_key = np.where(take, keys[..., c], best_key)
        best_idx = np.where(take, idx[..., c], best_idx)
    value = np.take_along_axis(bits, best_idx[..., None], axis=-1)[..., 0]
    if bits.ndim == 1:
        return value[()], int(best_idx)
    return value, best_idx


def reduce_max(bits, vlen: int):
    """The value returned by :func:`reduce_max_idx` (same order, ties and NaN rules)."""
    return reduce_max_idx(bits, vlen)[0]


def reduce_sum(bits, vlen: int, partials: int = 1):
    """Sum of BF16 vectors into FP32, in the reduction unit's order.

    The last axis (length ``N >= 1``) is processed in chunks of ``vlen`` lanes (a power of two).
    Lanes are widened exactly to FP32; the missing lanes of a partial last chunk are ``+0.0``
    (so a partial chunk of ``-0`` values sums to ``+0``). Within a chunk, a pairwise tree of FP32
    RNE adds (:func:`fp_add`): level 0 adds lanes ``(2i) + (2i+1)``, the next level adds those
    sums ``(2i) + (2i+1)``, and so on. Across chunks, ``partials`` (``P``) interleaved running
    sums: partial ``j`` is chunk ``j``'s sum, then ``acc_j = fp_add(acc_j, chunk_sum)`` for
    chunks ``j + P, j + 2P, ...`` in order; the result folds the partials that exist (at most
    the number of chunks) in order, ``((acc_0 + acc_1) + acc_2) + ...``. ``P = 1`` is the
    plain running sum of the chunks in order. (A pipelined accumulator adder of ``P - 1``
    stages needs ``P`` partials to take a chunk a cycle.) NaN inputs or ``inf + (-inf)``
    anywhere give ``FP32.qnan_bits``. Against the exact sum of ``N`` finite values, any such
    order of ``N - 1`` RNE adds is within ``(N - 1) * 2**-24 * sum(|x|)`` (no overflow).

    Parameters
    ----------
    bits : array_like of uint16, shape (..., N)
        BF16 bit patterns; leading axes are independent rows.
    vlen : int
        Lanes per chunk (power of two).
    partials : int
        Interleaved cross-chunk partial sums (>= 1).

    Returns
    -------
    numpy.ndarray of uint32, shape (...)
        FP32 bit patterns of the sums (a NumPy scalar for 1-D input).
    """
    vlen = _check_vlen(vlen)
    if isinstance(partials, bool) or not isinstance(partials, int) or partials < 1:
        raise ValueError(f"partials must be an int >= 1, got {partials!r}")
    bits = _check_vector(bits, np.uint16)
    # Work on float32 values: IEEE adds, and a NaN operand always gives a NaN, so canonicalising
    # once at the end equals canonicalising after every fp_add.
    x, _ = _chunked(_bf16_as_f32(bits), vlen, np.float32(0.0))
    with np.errstate(all="ignore"):
        while x.shape[-1] > 1:
            x = x[..., 0::2] + x[..., 1::2]
        x = x[..., 0]
        chunks = x.shape[-1]
        sums = []
        for j in range(min(partials, chunks)):
            part = x[..., j].copy()
            for c in range(j + partials, chunks, partials):
                part = part + x[..., c]
            sums.append(part)
        acc = sums[0]
        for part in sums[1:]:
            acc = acc + part
    return FP32.canonicalize_nan(np.asarray(acc, dtype=np.float32).view(np.uint32))[()]
