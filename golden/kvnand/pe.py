"""Bit-exact golden model of the KVNAND plane PE (``hdl/kvnand/pe.py``): the contract.

**Formats.** A config's ``fmt`` names the model's quantisation and sets, per command mode, the
page's element kind and the input vector's (:func:`page_kind`, :func:`input_kind`):

================  ===================  ============================  ==========
fmt               GEMV page (weights)  LOGIT/ATTEND page (K or V)    input
================  ===================  ============================  ==========
``bf16``          bf16                 bf16                          bf16
``w8a8``          int8 + group scales  int8 + group scales           int8
``w4a16``         int4 + group scales  bf16                          bf16
================  ===================  ============================  ==========

A page is ``page_bytes`` of elements in order, little-endian: a BF16 element is 2 bytes, INT8
one byte, INT4 half a byte (the low nibble first), two's complement. A scaled page comes with
one BF16 scale per ``group`` consecutive elements (page-local group ``e // group``), which the
controller writes into the PE's scale memory with the page (the page's companion region; the
design-space model counts its bytes). The input vector is 16 bits a lane: BF16 bits, or an INT8
value sign-extended. W8A8's activation scale is one per tensor and applied by the NPU.

**W8A8 ATTEND's probabilities.** ``p`` is INT8 codes ``c`` with one E8M0 scale ``2**e`` per page
command: ``p = c * 2**e``. Softmax probabilities in [0, 1) use ``e = -7`` (units of 1/128, ``c``
0..127: ``round(128 p)``, p = 1 saturating at 127/128); a page whose largest probability is small
may take a smaller ``e`` (finer units), each page its own, as the sums run across pages. The scale
costs the PE nothing: the controller folds it into the V page's BF16 group scales
(:func:`prob_scales`: ``s * 2**e``, exact while it stays a BF16 value, which the function checks),
and the dequantiser's multiply already applies those, so ``fp32(v) * (s * 2**e) * c`` is
``v * s * p`` exactly and the PE's datapath, command and cycles are the same for every scale.
Bit for bit, folding equals scaling ``p`` itself (``tests/kvnand/test_golden_kvnand_pe.py``).

**Arithmetic.** Every element is made FP32 exactly: BF16 by widening; an integer ``w`` of a
scaled page as ``fp_mul(fp32(w), fp32(scale))``; an INT8 input as ``fp32(x)``. A product is
``fp_mul(a, b)`` in FP32: exact for every format here (significands of at most 7 + 8 and 8 bits
from the operands: at most 23 bits) unless it leaves FP32's normal range, where it rounds as
IEEE-754. Sums are FP32 ``fp_add`` (RNE, subnormals, canonical NaN:
:mod:`memwall.golden.common.fparith`) in the fixed order below, so the PE equals this model bit for
bit. Against float64 on the same FP32 elements, an output's error is at most ``gamma_k * sum
|products|`` with ``gamma_k = k*u / (1 - k*u)``, ``u = 2**-24``, ``k`` the adds on its path: ``width
/ J + log2(J)`` for GEMV and LOGIT, the tokens for ATTEND
(``tests/kvnand/test_golden_kvnand_pe.py``; finite values). For W8A8 ATTEND the products
``v * s * c * 2**e`` are exact (8 + 8 + 8 significand bits) while they stay in FP32's normal
range, so ``|o[g, i] - sum_t V[t, i] p[t, g]| <= gamma_T sum_t |V[t, i] p[t, g]|``, ``T`` the
tokens added since ``clear``, against the float64 sum of the dequantised V and ``p = c * 2**e``.

**Lanes.** ``n`` FMACs; a command with ``heads`` G (a power of two dividing ``n``) gives each of
its ``J = n / G`` lane columns one page element a cycle, shared by the G lanes ``k = g*J + j``.

* **GEMV** (G = 1): a row-major page of ``rows x cols`` (``cols`` a multiple of ``n``) against
  ``x`` (``cols``). Lane ``k`` sums ``w[r, s*n + k] * x[s*n + k]`` over steps ``s`` in order,
  from ``+0``; at the row's end the ``n`` lane sums meet in a pairwise tree
  (:func:`tree`). Output: ``y[r]``, rows in order.
* **LOGIT**: a token-major page of ``tokens x d`` K values (``d`` a multiple of ``J``) against G
  query heads ``q`` (G, d). Lane ``(g, j)`` sums ``K[t, s*J + j] * q[g, s*J + j]`` over ``s``,
  from ``+0``; per token a pairwise tree over ``j`` for each head. Output: ``z[t, g]``, tokens
  in order, heads within a token.
* **ATTEND**: a token-major page of ``tokens x d`` V values against ``p`` (tokens, G). Lane
  ``(g, j)`` keeps ``o[g, s*J + j]`` for every step ``s`` and adds ``V[t, s*J + j] * p[t, g]``
  token by token. The sums run across pages (a head group's V stream): a command with ``clear``
  starts them at ``+0``; one with ``emit`` streams ``o`` out afterwards, head by head, ``d``
  values each.

**Cycles** (:func:`page_cycles`, :func:`latency`): a lane column takes one element a cycle,
so a page command takes ``elements / J = MACs / n`` cycles plus the pipeline's latency, and an
emit ``G * d`` more. The design-space model's compute time per page is this count.
"""

from __future__ import annotations

import numpy as np

from memwall.families.kvnand.config import FMTS, KINDS, MODES, page_kind
from memwall.golden.common.formats import FP32
from memwall.golden.common.fparith import bf16_to_fp32, fp_add, fp_mul

__all__ = ["FMTS", "MODES", "KINDS", "page_kind", "input_kind", "elem_bits", "scaled", "pack_page",
           "unpack_page", "page_fp32", "input_fp32", "tree", "gemv", "logit", "attend",
           "PROB_EXP_RANGE", "prob_scales", "macs", "add_stage", "latency", "page_cycles"]

_INPUT = {"bf16": "bf16", "w8a8": "int8", "w4a16": "bf16"}
_PLUS_ZERO = np.uint32(0)


def _check(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} {value!r}; allowed: {', '.join(map(str, allowed))}")


def input_kind(fmt: str) -> str:
    _check("fmt", fmt, FMTS)
    return _INPUT[fmt]


def elem_bits(kind: str) -> int:
    _check("element kind", kind, tuple(KINDS))
    return KINDS[kind]


def scaled(kind: str) -> bool:
    """Integer pages carry group scales."""
    return kind != "bf16"


def _int_range(kind: str) -> tuple[int, int]:
    bits = KINDS[kind]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def pack_page(codes, kind: str, page_bytes: int) -> np.ndarray:
    """Element codes (BF16 bits, or signed integers) in order -> a page of ``page_bytes`` bytes,
    zero-filled after the last element."""
    bits = elem_bits(kind)
    codes = np.asarray(codes).ravel()
    if codes.size * bits > 8 * page_bytes:
        raise ValueError(f"{codes.size} {kind} elements need {codes.size * bits // 8} bytes; "
                         f"a page holds {page_bytes}")
    if kind == "bf16":
        raw = codes.astype(np.uint16).view(np.uint8)
    else:
        lo, hi = _int_range(kind)
        if codes.size and (codes.min() < lo or codes.max() > hi):
            raise ValueError(f"{kind} elements must lie in {lo}..{hi}")
        u = (codes.astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
        if kind == "int4":
            u = np.concatenate([u, np.zeros(u.size % 2, np.uint8)])
            u = u[0::2] | (u[1::2] << 4)
        raw = u
    page = np.zeros(page_bytes, np.uint8)
    page[:raw.size] = raw
    return page


def unpack_page(page, kind: str, count: int) -> np.ndarray:
    """The first ``count`` element codes of a page (BF16 as uint16 bits, integers as int64)."""
    page = np.asarray(page, np.uint8)
    if kind == "bf16":
        return page[:2 * count].view(np.uint16).copy()
    if kind == "int8":
        return page[:count].view(np.int8).astype(np.int64)
    nib = np.stack([page & 15, page >> 4], axis=-1).ravel()[:count].astype(np.int64)
    return np.where(nib >= 8, nib - 16, nib)


def _int_fp32(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32)


def page_fp32(codes, kind: str, scales=None, group: int | None = None) -> np.ndarray:
    """FP32 bits of a page's elements as the PE makes them (scales: BF16 bits per group)."""
    codes = np.asarray(codes)
    if kind == "bf16":
        return bf16_to_fp32(codes.astype(np.uint16))
    per = bf16_to_fp32(np.asarray(scales, np.uint16))[np.arange(codes.size) // group]
    return fp_mul(_int_fp32(codes), per.reshape(codes.shape), FP32)


def input_fp32(codes, kind: str) -> np.ndarray:
    if kind == "bf16":
        return bf16_to_fp32(np.asarray(codes, np.uint16))
    return _int_fp32(codes)


def tree(values) -> np.ndarray:
    """Pairwise FP32 sum over the last axis (a power of two): (0+1), (2+3), ... level by level."""
    v = np.asarray(values, np.uint32)
    while v.shape[-1] > 1:
        v = fp_add(v[..., 0::2], v[..., 1::2], FP32)
    return v[..., 0]


def _lane_sums(a, b, lanes: int) -> np.ndarray:
    """Per row of ``a`` and ``b`` (..., steps * lanes): each lane's running FP32 sum of the
    products over the steps, from +0 -> (..., lanes)."""
    a = np.asarray(a, np.uint32)
    b = np.asarray(b, np.uint32)
    steps = a.shape[-1] // lanes
    acc = np.full(a.shape[:-1] + (lanes,), _PLUS_ZERO, np.uint32)
    for s in range(steps):
        sl = slice(s * lanes, (s + 1) * lanes)
        acc = fp_add(acc, fp_mul(a[..., sl], b[..., sl], FP32), FP32)
    return acc


def _power_of_two(name: str, value: int) -> None:
    if value < 1 or value & (value - 1):
        raise ValueError(f"{name} {value} must be a power of two")


def gemv(w32, x32, n: int) -> np.ndarray:
    """``y[r]`` (FP32 bits) of a ``rows x cols`` page of FP32 element bits ``w32`` and ``x32``."""
    w32 = np.asarray(w32, np.uint32)
    _power_of_two("n", n)
    if w32.shape[-1] % n:
        raise ValueError(f"cols {w32.shape[-1]} must be a multiple of the FMACs ({n})")
    return tree(_lane_sums(w32, np.broadcast_to(x32, w32.shape), n))


def logit(k32, q32, n: int) -> np.ndarray:
    """``z[t, g]`` of a ``tokens x d`` K page and G query heads ``q32`` (G, d)."""
    k32, q32 = np.asarray(k32, np.uint32), np.asarray(q32, np.uint32)
    heads, d = q32.shape
    lanes = _columns(n, heads, d)
    # (t, g, d): every head's products with the token's K, each lane column j a lane sum.
    a = np.broadcast_to(k32[:, None, :], (k32.shape[0], heads, d))
    return tree(_lane_sums(a, np.broadcast_to(q32, a.shape), lanes))


def attend(v32, p32, n: int, acc=None) -> np.ndarray:
    """``o`` (G, d) after adding a ``tokens x d`` V page weighted by ``p32`` (tokens, G) to
    ``acc`` (None: from +0), token by token."""
    v32, p32 = np.asarray(v32, np.uint32), np.asarray(p32, np.uint32)
    tokens, d = v32.shape
    heads = p32.shape[1]
    _columns(n, heads, d)
    o = np.full((heads, d), _PLUS_ZERO, np.uint32) if acc is None else np.array(acc, np.uint32)
    for t in range(tokens):
        o = fp_add(o, fp_mul(v32[t][None, :], p32[t][:, None], FP32), FP32)
    return o


#: The E8M0 exponents ``e`` of W8A8 ATTEND's probability scale ``2**e`` (E8M0's finite range).
PROB_EXP_RANGE = (-127, 127)


def prob_scales(scales, p_exp: int) -> np.ndarray:
    """W8A8 ATTEND: the V page's group scales (BF16 bits) with the probabilities' E8M0 scale
    ``2**p_exp`` folded in (BF16 bits of ``s * 2**p_exp``), as the controller writes them into
    the PE's scale memory. ``ValueError`` if ``p_exp`` is out of :data:`PROB_EXP_RANGE` or a
    product is not a BF16 value (it would leave BF16's range): folding is exact or refused.
    NaN scales stay as they are."""
    import ml_dtypes

    lo, hi = PROB_EXP_RANGE
    if isinstance(p_exp, bool) or not isinstance(p_exp, (int, np.integer)) \
            or not lo <= p_exp <= hi:
        raise ValueError(f"p_exp {p_exp!r}: an integer in {lo}..{hi} (the E8M0 exponent e "
                         "of the probabilities p = c * 2**e)")
    bits = np.asarray(scales, np.uint16)
    value = bits.view(ml_dtypes.bfloat16).astype(np.float64)
    folded = value * 2.0 ** int(p_exp)             # exact in float64
    with np.errstate(over="ignore"):
        out = folded.astype(np.float32).astype(ml_dtypes.bfloat16)
    nan = np.isnan(value)
    bad = np.flatnonzero(~nan & (out.astype(np.float64) != folded))
    if bad.size:
        g = int(bad[0])
        raise ValueError(f"scale {g} ({value[g]:g}) times 2**{p_exp} = {folded[g]:g} is not a "
                         "BF16 value (it overflows, or loses bits below BF16's normal range); "
                         "folding the probability scale must be exact: choose p_exp so that "
                         "every scale stays in range")
    return np.where(nan, bits, out.view(np.uint16))


def _columns(n: int, heads: int, d: int) -> int:
    _power_of_two("n", n)
    _power_of_two("heads", heads)
    if heads > n:
        raise ValueError(f"heads {heads} must be at most the FMACs ({n})")
    lanes = n // heads
    if d % lanes:
        raise ValueError(f"d {d} must be a multiple of n / heads ({lanes})")
    return lanes


def macs(mode: str, units: int, width: int, heads: int = 1) -> int:
    """MACs of a page command: ``units`` rows or tokens of ``width`` elements, ``heads`` G."""
    _check("mode", mode, MODES)
    return units * width * (1 if mode == "gemv" else heads)


def add_stage(mul_stages: int, scaled: bool) -> int:
    """The PE's pipeline stage of the accumulator add, R1 being stage 0: the dequantiser's
    ``mul_stages`` and R2 when the format is scaled, then the multiplier's."""
    return (mul_stages + 1 if scaled else 0) + mul_stages + 1


def latency(n: int, mul_stages: int, scaled: bool, mode: str, heads: int = 1,
            emit: bool = False) -> int:
    """Cycles of a PE command beyond its steps (and an ATTEND's emitted outputs) when beats
    and results never wait, from the edge that accepts it to the one that accepts the next
    (``hdl/kvnand/pe.py``; the cocotb test checks the RTL against it): the command register,
    the pipeline to the accumulator add (R1, the dequantiser's ``mul_stages`` and R2 when the
    format is ``scaled``, the multiplier's, R3), then for GEMV and LOGIT the tree down to a
    head's ``J`` lanes and the G outputs, for ATTEND the emit read's turnaround; 3 more to see
    the pipeline empty and return to idle."""
    _check("mode", mode, MODES)
    _power_of_two("n", n)
    _power_of_two("heads", heads)
    to_add = add_stage(mul_stages, scaled)
    if mode == "attend":
        return to_add + 4 + (2 if emit else 0)
    return to_add + 5 + (n // heads).bit_length() - 1 + heads


def page_cycles(mode: str, units: int, width: int, heads: int, n: int, latency: int,
                emit: bool = False) -> int:
    """The PE's cycles for one page command (``hdl/kvnand/pe.py``): ``MACs / n`` steps, then
    the pipeline's ``latency``, and for an ATTEND ``emit`` its ``heads * width`` outputs."""
    steps = -(-macs(mode, units, width, heads) // n)
    return steps + latency + (heads * width if mode == "attend" and emit else 0)
