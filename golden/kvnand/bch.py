"""BCH(9088, 8192, t=64) of the KVNAND family: systematic encoder, decoder and the parallel-LFSR
matrices the RTL encoder (:mod:`memwall.hdl.kvnand.bch`) is built from.

Contract
--------
Code
    The binary, narrow-sense, primitive BCH(16383, 15487) code over GF(2^14), shortened by 7295
    bits to n = 9088, k = 8192: 896 parity bits, t = 64, designed distance 129. Its generator
    g(x) (degree 896) is the LCM of the minimal polynomials of alpha^1 .. alpha^128 (that is,
    of alpha^1, alpha^3, ..., alpha^127: 64 distinct cyclotomic cosets of 14 exponents each).
Field
    GF(2^14) = GF(2)[x] / (x^14 + x^10 + x^6 + x + 1) (:data:`PRIMITIVE_POLY` = 0x4443), alpha = x.
    This is the polynomial ``galois.BCH(16383, 15487)`` builds its extension field with
    (``galois.matlab_primitive_poly(2, 14)``, Lin & Costello's table); note that plain
    ``galois.GF(2**14)`` uses a different one (the Conway polynomial x^14+x^7+x^5+x^3+1), which
    gives a different g(x) and so a different code. The codewords here equal galois's.
Generator constant
    g(x) is cached in :mod:`memwall.golden.kvnand.bch_generator` (hex, bit i = coefficient of x^i)
    with the SHA-256 of that hex string; the checksum is verified when this module is imported (a
    mismatch raises ``RuntimeError``). :func:`compute_generator` recomputes g(x) from scratch.
Bit order (same as galois)
    A message is 8192 bits m[0..8191], m[0] the coefficient of x^8191 (highest degree first).
    The codeword is c = [m, parity]: c[i] is the coefficient of x^(9087-i) of
    c(x) = m(x) x^896 + (m(x) x^896 mod g(x)); parity bit j = c[8192+j] is the coefficient of
    x^(895-j) of the remainder.
Word order of the p-bit interface (RTL streams, :func:`to_words`)
    The bit stream (message bits, then the 896 parity bits, then the next codeword) is cut into
    p-bit words; bit ``b`` of word ``w`` (``b = 0`` the least significant) is stream bit
    ``w * p + b``. So the first bit of a message is bit 0 of its first word. A codeword is
    8192/p message words followed by 896/p parity words; p divides 128 (:data:`WORD_BITS`).
Parallel LFSR (:func:`parallel_lfsr_matrices`)
    State s: 896 bits, s[k] the coefficient of x^k of the running remainder, zero at the start
    of every codeword. Per message word u (u[b] = bit b of the word): s' = A s + B u over GF(2).
    After the last message word, parity bit j = s[895 - j].
Decoder (:func:`decode`)
    Syndromes S_1..S_128, Berlekamp-Massey, Chien search over the 9088 positions of the
    shortened code, then the corrected word's syndromes are checked again. Guarantee: with at
    most 64 bit errors the original message is returned with the number of errors. With more,
    the result is either a detected failure (count -1, the received message bits returned
    unchanged) or a miscorrection to another codeword within distance 64 (count 0..64); a
    count >= 0 always comes with a valid codeword.

Inputs are arrays of 0/1 integers (or bools), one codeword or message per row; anything else
raises ``ValueError`` naming what was wrong and what is allowed.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from memwall.golden.kvnand.bch_generator import GENERATOR_HEX, GENERATOR_SHA256

__all__ = ["M", "PRIMITIVE_POLY", "N", "K", "T", "PARITY_BITS", "PARENT_N", "WORD_BITS", "EXP",
           "LOG", "GENERATOR", "cyclotomic_coset", "minimal_polynomial", "compute_generator",
           "generator_hex", "encode", "decode", "syndromes", "parallel_lfsr_matrices",
           "to_words", "from_words"]

M = 14                              # GF(2^M)
PRIMITIVE_POLY = 0x4443             # x^14 + x^10 + x^6 + x + 1
PARENT_N = (1 << M) - 1             # 16383: length of the primitive parent code
N, K, T = 9088, 8192, 64
PARITY_BITS = N - K                 # 896 = deg g(x)
#: Word widths of the p-bit interface: the divisors of gcd(8192, 896) = 128.
WORD_BITS = (1, 2, 4, 8, 16, 32, 64, 128)


# -- GF(2^14) ------------------------------------------------------------------------------------
def _field_tables() -> tuple[np.ndarray, np.ndarray]:
    """Antilog table ``EXP`` (doubled: ``EXP[a + b]`` needs no reduction for a, b < 16383) and
    log table ``LOG`` (``LOG[0] = -1``). Raises if the polynomial is not primitive."""
    exp = np.zeros(2 * PARENT_N, dtype=np.int64)
    log = np.full(1 << M, -1, dtype=np.int64)
    x = 1
    for i in range(PARENT_N):
        if log[x] != -1:
            raise RuntimeError(f"{PRIMITIVE_POLY:#x} is not primitive: alpha^{i} repeats")
        exp[i], log[x] = x, i
        x <<= 1
        if x >> M:
            x ^= PRIMITIVE_POLY
    assert x == 1
    exp[PARENT_N:] = exp[:PARENT_N]
    return exp, log


EXP, LOG = _field_tables()


def _gf_mul(a, b):
    """Element-wise product in GF(2^14) of integer arrays (or scalars)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    out = EXP[(LOG[a] + LOG[b]) % PARENT_N]
    return np.where((a == 0) | (b == 0), 0, out)


# -- generator polynomial ------------------------------------------------------------------------
def cyclotomic_coset(j: int) -> list[int]:
    """Exponents of the conjugates of alpha^j: {j * 2^i mod 16383}."""
    coset, e = [], j % PARENT_N
    while e not in coset:
        coset.append(e)
        e = 2 * e % PARENT_N
    return coset


def minimal_polynomial(j: int) -> np.ndarray:
    """Minimal polynomial of alpha^j over GF(2): product of (x - alpha^e) over its coset.
    Coefficients lowest degree first, 0/1 ``uint8``."""
    poly = np.array([1], dtype=np.int64)                  # GF(2^14) coefficients
    for e in cyclotomic_coset(j):
        root = EXP[e]
        shifted = np.concatenate([[0], poly])             # x * poly
        poly = shifted ^ np.concatenate([_gf_mul(poly, root), [0]])   # + root * poly
    if np.any(poly > 1):
        raise ArithmeticError(f"minimal polynomial of alpha^{j} has coefficients outside GF(2)")
    return poly.astype(np.uint8)


def compute_generator(t: int = T) -> np.ndarray:
    """g(x) = LCM of the minimal polynomials of alpha^1 .. alpha^(2t), from scratch.

    Returns the coefficients lowest degree first (``uint8``, length deg + 1). The LCM is the
    product over distinct cyclotomic cosets (even exponents share the coset of an odd one).
    """
    covered: set[int] = set()
    g = np.array([1], dtype=np.int64)
    for j in range(1, 2 * t + 1):
        if j in covered:
            continue
        covered.update(cyclotomic_coset(j))
        g = np.convolve(g, minimal_polynomial(j).astype(np.int64)) & 1
    return g.astype(np.uint8)


def generator_hex(g: np.ndarray) -> str:
    """The cache format: g as an integer (bit i = coefficient of x^i), lowercase hex."""
    value = int("".join(str(int(b)) for b in np.asarray(g)[::-1]), 2)
    return f"{value:x}"


def _load_generator() -> np.ndarray:
    digest = hashlib.sha256(GENERATOR_HEX.encode("ascii")).hexdigest()
    if digest != GENERATOR_SHA256:
        raise RuntimeError(f"memwall.golden.kvnand.bch_generator: GENERATOR_HEX has SHA-256 "
                           f"{digest}, expected {GENERATOR_SHA256}: the cached g(x) is corrupt "
                           f"(regenerate it with memwall.golden.kvnand.bch.compute_generator)")
    value = int(GENERATOR_HEX, 16)
    g = np.array([(value >> i) & 1 for i in range(value.bit_length())], dtype=np.uint8)
    if len(g) != PARITY_BITS + 1 or g[0] != 1:
        raise RuntimeError(f"cached g(x) has degree {len(g) - 1} (expected {PARITY_BITS}) or "
                           f"g(0) = {g[0]} (expected 1)")
    g.flags.writeable = False
    return g


#: g(x), coefficients lowest degree first (897 entries), from the checked cache.
GENERATOR = _load_generator()
_G_INT = int(GENERATOR_HEX, 16)


# -- input checks and word packing ---------------------------------------------------------------
def _check_bits(bits, width: int, name: str) -> np.ndarray:
    """``bits`` as a ``uint8`` array of shape (width,) or (rows, width) holding only 0/1."""
    a = np.asarray(bits)
    if a.dtype != np.bool_ and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be an array of integers 0/1 (or bools); got dtype "
                         f"{a.dtype}")
    if a.ndim not in (1, 2) or a.shape[-1] != width:
        raise ValueError(f"{name} must have shape ({width},) or (rows, {width}); got {a.shape}")
    bad = (a != 0) & (a != 1)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} bits must be 0 or 1; got {int(a[where])} at index {where}")
    return a.astype(np.uint8)


def _check_word_bits(p: int) -> int:
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or int(p) not in WORD_BITS:
        raise ValueError(f"word width p={p!r} is not allowed; p must divide both 8192 and 896: "
                         f"one of {WORD_BITS}")
    return int(p)


def to_words(bits, p: int) -> list[int]:
    """Cut a bit stream (length a multiple of p) into p-bit words: bit b of word w is stream bit
    ``w * p + b`` (the module docstring's word order)."""
    p = _check_word_bits(p)
    a = np.asarray(bits, dtype=np.uint8).reshape(-1)
    if a.size % p:
        raise ValueError(f"a stream of {a.size} bits is not a whole number of {p}-bit words")
    packed = np.packbits(a.reshape(-1, p), axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def from_words(words, p: int) -> np.ndarray:
    """Inverse of :func:`to_words`: the ``uint8`` bit stream of a sequence of p-bit words."""
    p = _check_word_bits(p)
    nbytes = (p + 7) // 8
    raw = b"".join(int(w).to_bytes(nbytes, "little") for w in words)
    bits = np.unpackbits(np.frombuffer(raw, np.uint8).reshape(-1, nbytes), axis=1,
                         bitorder="little")
    return bits[:, :p].reshape(-1)


# -- encoder -------------------------------------------------------------------------------------
@functools.cache
def _parity_matrix() -> np.ndarray:
    """(8192, 896) ``float32`` GF(2) map from message bits to parity bits: row i is
    x^(8191 - i + 896) mod g(x), parity order (x^895 first). float32 so that the product runs in
    BLAS; every partial sum is an integer <= 8192 < 2^24, hence exact."""
    low = _G_INT ^ (1 << PARITY_BITS)                     # x^896 mod g(x)
    rows = bytearray()
    r = low
    chunks = []
    for _ in range(K):                                    # row K-1 first: x^896, x^897, ...
        chunks.append(r.to_bytes(PARITY_BITS // 8, "big"))
        r <<= 1
        if r >> PARITY_BITS:
            r ^= _G_INT
    for chunk in reversed(chunks):
        rows += chunk
    bits = np.unpackbits(np.frombuffer(bytes(rows), np.uint8)).reshape(K, PARITY_BITS)
    return bits.astype(np.float32)


def encode(message) -> np.ndarray:
    """Systematic codewords of ``message`` ((8192,) or (rows, 8192) bits 0/1): (9088,) or
    (rows, 9088) ``uint8``, the message bits then the 896 parity bits."""
    msg = _check_bits(message, K, "message")
    batch = msg.reshape(-1, K)
    parity = (batch.astype(np.float32) @ _parity_matrix()).astype(np.int64) & 1
    out = np.concatenate([batch, parity.astype(np.uint8)], axis=1)
    return out.reshape(msg.shape[:-1] + (N,))


# -- parallel LFSR -------------------------------------------------------------------------------
@functools.cache
def _lfsr_matrices(p: int) -> tuple[np.ndarray, np.ndarray]:
    # Track every state bit as a GF(2) combination of (s[0..895], u[0..p-1]) through p serial
    # steps of the division LFSR: fb = u[b] + s[895]; s <- x * s + fb * (g(x) - x^896).
    width = PARITY_BITS + p
    combo = np.zeros((PARITY_BITS, width), dtype=np.uint8)
    combo[np.arange(PARITY_BITS), np.arange(PARITY_BITS)] = 1
    taps = np.flatnonzero(GENERATOR[:PARITY_BITS])
    for b in range(p):
        fb = combo[PARITY_BITS - 1].copy()
        fb[PARITY_BITS + b] ^= 1
        combo = np.concatenate([np.zeros((1, width), np.uint8), combo[:-1]])
        combo[taps] ^= fb
    a, b_ = combo[:, :PARITY_BITS].copy(), combo[:, PARITY_BITS:].copy()
    a.flags.writeable = b_.flags.writeable = False
    return a, b_


def parallel_lfsr_matrices(p: int) -> tuple[np.ndarray, np.ndarray]:
    """GF(2) matrices of the p-bit-per-cycle encoder LFSR: ``s' = A @ s + B @ u (mod 2)``.

    Returns ``(A, B)``, ``uint8`` of shapes (896, 896) and (896, p) (read-only). ``s[k]`` is the
    coefficient of x^k of the running remainder, ``u[b]`` bit b of the message word (stream
    bit ``w * p + b``). Starting from s = 0, after the 8192/p message words parity bit j is
    ``s[895 - j]``.
    """
    return _lfsr_matrices(_check_word_bits(p))


# -- decoder -------------------------------------------------------------------------------------
@functools.cache
def _syndrome_powers() -> np.ndarray:
    """(128, 9088) table: alpha^(j * deg) for j = 1..128 and the degree of each codeword bit."""
    degree = np.arange(N - 1, -1, -1, dtype=np.int64)           # c[i] <-> x^(9087 - i)
    j = np.arange(1, 2 * T + 1, dtype=np.int64)[:, None]
    return EXP[(j * degree) % PARENT_N].astype(np.uint16)


def syndromes(codeword) -> np.ndarray:
    """S_j = c(alpha^j), j = 1..128, of (9088,) or (rows, 9088) bits: (128,) or (rows, 128)
    GF(2^14) elements as ``int64``. All zero exactly for codewords."""
    cw = _check_bits(codeword, N, "codeword")
    powers = _syndrome_powers()
    batch = cw.reshape(-1, N)
    out = np.zeros((batch.shape[0], 2 * T), dtype=np.int64)
    for r, row in enumerate(batch):
        cols = np.flatnonzero(row)
        if cols.size:
            out[r] = np.bitwise_xor.reduce(powers[:, cols], axis=1)
    return out.reshape(cw.shape[:-1] + (2 * T,))


def _berlekamp_massey(s: np.ndarray) -> tuple[np.ndarray, int]:
    """Error-locator polynomial (lowest degree first, length 2t+1) and its LFSR length L."""
    size = len(s) + 1
    c = np.zeros(size, np.int64)
    b = np.zeros(size, np.int64)
    c[0] = b[0] = 1
    length, shift, last = 0, 1, 1
    for n in range(len(s)):
        d = int(s[n])
        if length:
            d ^= int(np.bitwise_xor.reduce(_gf_mul(c[1:length + 1], s[n - length:n][::-1])))
        if d == 0:
            shift += 1
            continue
        scale = int(EXP[(LOG[d] - LOG[last]) % PARENT_N])
        update = c.copy()
        update[shift:] ^= _gf_mul(b[:size - shift], scale)
        if 2 * length <= n:
            b, length, last, shift = c, n + 1 - length, d, 1
        else:
            shift += 1
        c = update
    return c, length


def _chien(locator: np.ndarray) -> np.ndarray:
    """Codeword indices i (degree 9087 - i) with locator(alpha^-(9087 - i)) = 0."""
    k = np.flatnonzero(locator)
    degree = np.arange(N - 1, -1, -1, dtype=np.int64)
    exps = (LOG[locator[k]][None, :] - degree[:, None] * k[None, :]) % PARENT_N
    values = np.bitwise_xor.reduce(EXP[exps], axis=1)
    return np.flatnonzero(values == 0)


def _decode_one(row: np.ndarray) -> tuple[np.ndarray, int]:
    s = syndromes(row)
    if not s.any():
        return row[:K].copy(), 0
    locator, length = _berlekamp_massey(s)
    if length > T:
        return row[:K].copy(), -1
    errors = _chien(locator)
    if len(errors) != length:       # roots outside the shortened positions, or repeated/absent
        return row[:K].copy(), -1
    fixed = row.copy()
    fixed[errors] ^= 1
    if syndromes(fixed).any():
        return row[:K].copy(), -1
    return fixed[:K], length


def decode(codeword) -> tuple[np.ndarray, int | np.ndarray]:
    """Correct up to 64 bit errors in (9088,) or (rows, 9088) received bits.

    Returns ``(message, count)``: the 8192 message bits (per row) and the number of corrected
    errors, or -1 where decoding failed (then the received message bits, unchanged). For rows,
    ``count`` is an ``int64`` array. See the module docstring for what is guaranteed beyond t.
    """
    cw = _check_bits(codeword, N, "codeword")
    results = [_decode_one(row) for row in cw.reshape(-1, N)]
    messages = np.stack([m for m, _ in results]).reshape(cw.shape[:-1] + (K,))
    counts = np.array([c for _, c in results], dtype=np.int64)
    return messages, (int(counts[0]) if cw.ndim == 1 else counts)
