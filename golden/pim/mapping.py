"""Tiling and data mapping of the ``pim`` family: the schedule descriptor, where B's words sit in
the macro's rows, which input bits an activation broadcasts, the streams' beats, and whether a
schedule fits. The contract is the docstring of :mod:`memwall.golden.pim.macro` (sections 2, 4, 6);
that module re-exports everything here.

``cfg`` is a :class:`memwall.families.pim.config.PimConfig` or any object with its attributes.
Arrays of bits are ``uint8`` 0/1 with column ``c`` of a row at index ``c`` (column 0 is the
least significant bit of a row image).
"""

from __future__ import annotations

import itertools
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memwall.families.pim.config import MAX_LEVELS, ORDERS

if TYPE_CHECKING:
    from memwall.families.pim.config import PimConfig

__all__ = ["Schedule", "OperandError", "check_operands", "tile_rows", "fit_problems", "fits",
           "peak_psum_words", "weight_row_images", "input_beats", "input_bits_for",
           "tile_bits", "sweep_input_bits", "operand_range", "input_ones", "DIMS"]

DIMS = "mkn"


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Schedule:
    """One GEMM ``C (M, N) = A (M, K) @ B (K, N)`` as the ``desc`` stream carries it.

    ``order`` is a loop order of :data:`ORDERS` (outer to inner); ``order_code`` is its index,
    the descriptor's integer. Tile sizes are at most the dimension (``1 <= tm <= M``, ...).
    """

    M: int
    K: int
    N: int
    tm: int
    tk: int
    tn: int
    order: str = "mkn"
    vpd: int = 0

    def __post_init__(self):
        for name in ("M", "K", "N", "tm", "tk", "tn", "vpd"):   # NumPy integers become ints
            value = getattr(self, name)
            if isinstance(value, numbers.Integral) and not isinstance(value, bool):
                object.__setattr__(self, name, int(value))
        for name in ("M", "K", "N"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Schedule.{name}: {value!r} — must be an integer >= 1")
        for name, dim in (("tm", "M"), ("tk", "K"), ("tn", "N")):
            value, top = getattr(self, name), getattr(self, dim)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
                raise ValueError(f"Schedule.{name}: {value!r} — must be an integer in "
                                 f"1..{dim} (= {top})")
        if self.order not in ORDERS:
            raise ValueError(f"Schedule.order: {self.order!r} — must be one of "
                             f"{', '.join(ORDERS)} (loop order, outer to inner)")
        if not isinstance(self.vpd, int) or isinstance(self.vpd, bool) \
                or not 0 <= self.vpd < MAX_LEVELS:
            raise ValueError(f"Schedule.vpd: {self.vpd!r} — must be a VPD level index in "
                             f"0..{MAX_LEVELS - 1}")

    @classmethod
    def from_code(cls, M: int, K: int, N: int, tm: int, tk: int, tn: int, order: int,
                  vpd: int = 0) -> Schedule:
        """A schedule from the descriptor's integers (``order`` = index in :data:`ORDERS`)."""
        if not isinstance(order, int) or isinstance(order, bool) \
                or not 0 <= order < len(ORDERS):
            raise ValueError(f"Schedule.order: code {order!r} — must be an integer in "
                             f"0..{len(ORDERS) - 1} ({', '.join(ORDERS)})")
        return cls(M, K, N, tm, tk, tn, ORDERS[order], vpd)

    @property
    def order_code(self) -> int:
        return ORDERS.index(self.order)

    def size(self, dim: str) -> int:
        return {"m": self.M, "k": self.K, "n": self.N}[dim]

    def tile(self, dim: str) -> int:
        return {"m": self.tm, "k": self.tk, "n": self.tn}[dim]

    def tile_count(self, dim: str) -> int:
        """Tiles along ``dim`` (``"m"``, ``"k"`` or ``"n"``)."""
        return _ceil(self.size(dim), self.tile(dim))

    def tile_range(self, dim: str, index: int) -> range:
        """The indices tile ``index`` of ``dim`` covers (the last tile may be short)."""
        start = index * self.tile(dim)
        return range(start, min(self.size(dim), start + self.tile(dim)))

    def steps(self) -> list[tuple[int, int, int]]:
        """Every step ``(im, ik, in)`` in loop-nest order (``order[0]`` outermost)."""
        nest = itertools.product(*(range(self.tile_count(d)) for d in self.order))
        where = [self.order.index(d) for d in DIMS]
        return [tuple(index[w] for w in where) for index in nest]


class OperandError(ValueError):
    """An operand the configured hardware cannot take; the message names the array, the
    position and value, and what is allowed."""


def operand_range(bits: int, signed: bool) -> tuple[int, int]:
    """Smallest and largest integer of a ``bits``-bit word."""
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def input_ones(cfg: PimConfig, a) -> int:
    """1 bits of ``a`` as ``ib``-bit two's-complement patterns (what gates the sense amps)."""
    patterns = np.asarray(a, dtype=np.int64) & ((1 << cfg.input_bits) - 1)
    return int(np.unpackbits(patterns.astype(">u8").view(np.uint8)).sum())


def check_operands(cfg: PimConfig, a, b) -> None:
    """Raise :class:`OperandError` unless ``a`` (M, K) and ``b`` (K, N) are integer matrices
    of the config's input / weight precision, with 1 <= M, K, N <= ``cfg.max_dim``."""
    arrays = {}
    for name, x, role, bits, signed in (
            ("a", a, "input", cfg.input_bits, cfg.input_signed),
            ("b", b, "weight", cfg.weight_bits, cfg.weight_signed)):
        x = np.asarray(x)
        if x.dtype.kind not in "iu":
            raise OperandError(f"{name}: dtype {x.dtype} — must be an integer array")
        if x.ndim != 2:
            raise OperandError(f"{name}: shape {x.shape} — must be a 2-D matrix")
        for axis, extent in enumerate(x.shape):
            if not 1 <= extent <= cfg.max_dim:
                raise OperandError(f"{name}: shape {x.shape}, dimension {axis} = {extent} — "
                                   f"must be in 1..{cfg.max_dim} (max_dim)")
        lo, hi = operand_range(bits, signed)
        bad = x > hi if x.dtype.kind == "u" else (x < lo) | (x > hi)
        if bad.any():
            pos = tuple(int(i) for i in np.argwhere(bad)[0])
            raise OperandError(
                f"{name}[{pos[0]}, {pos[1]}] = {int(x[pos])} — {role}s must be integers in "
                f"[{lo}, {hi}] ({bits}-bit {'signed' if signed else 'unsigned'})")
        arrays[name] = x
    if arrays["a"].shape[1] != arrays["b"].shape[0]:
        raise OperandError(f"a: shape {arrays['a'].shape}, b: shape {arrays['b'].shape} — "
                           "a's columns (K) must equal b's rows")


# --- rows of a weight tile -----------------------------------------------------------------------

def tile_rows(cfg: PimConfig, tk_i: int, tn_i: int) -> int:
    """Macro rows a weight tile of ``tk_i`` x ``tn_i`` takes."""
    per = _ceil(tn_i, cfg.fields) * tk_i if cfg.row_wise else _ceil(tk_i, cfg.fields) * tn_i
    return per * cfg.planes


def _edges(s: Schedule, dim: str) -> set[int]:
    """The distinct tile extents along ``dim``: the full tile and a short last one."""
    return {len(s.tile_range(dim, 0)), len(s.tile_range(dim, s.tile_count(dim) - 1))}


def peak_psum_words(s: Schedule) -> int:
    """Most partial-sum words live at a step boundary (see the contract, section 6)."""
    order = {step: n for n, step in enumerate(s.steps())}
    delta = [0] * (len(order) + 1)
    last_k = s.tile_count("k") - 1
    for (im, ik, in_), n in order.items():
        if ik < last_k:     # written at the end of step n, read at the start of its reader
            words = len(s.tile_range("m", im)) * len(s.tile_range("n", in_))
            delta[n] += words
            delta[order[(im, ik + 1, in_)]] -= words
    live, peak = 0, 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def fit_problems(cfg: PimConfig, s: Schedule, *, buffer: bool = True) -> list[str]:
    """Why ``s`` cannot run on ``cfg`` (empty: it fits); ``buffer=False`` leaves out the
    buffer capacity rule."""
    problems = []
    for name in "MKN":
        if getattr(s, name) > cfg.max_dim:
            problems.append(f"{name} = {getattr(s, name)} exceeds max_dim {cfg.max_dim}")
    if s.vpd >= cfg.levels:
        problems.append(f"vpd {s.vpd}: the macro table has levels 0..{cfg.levels - 1}")
    for tk_i, tn_i in itertools.product(_edges(s, "k"), _edges(s, "n")):
        if tile_rows(cfg, tk_i, tn_i) > cfg.rows:
            problems.append(f"a {tk_i}x{tn_i} weight tile takes {tile_rows(cfg, tk_i, tn_i)} "
                            f"rows; the macro has {cfg.rows}")
    if _ceil(s.tk, cfg.fields) > cfg.input_beats:
        problems.append(f"tk {s.tk} needs {_ceil(s.tk, cfg.fields)} input beats of "
                        f"{cfg.fields} words; the register file holds {cfg.input_beats}")
    need = s.tm * s.tk * cfg.input_bits + peak_psum_words(s) * cfg.acc_bits
    if buffer and need > cfg.buffer_bits:
        problems.append(f"the buffer needs {need} bits (input tile + peak partial sums); it "
                        f"holds {cfg.buffer_bits}")
    return problems


def fits(cfg: PimConfig, s: Schedule) -> bool:
    """Every weight tile fits the macro's rows and the input register file, and the input tile
    with the peak live partial sums fits the buffer."""
    return not fit_problems(cfg, s)


# --- bit images --------------------------------------------------------------------------------

def _planes(words: np.ndarray, bits: int) -> np.ndarray:
    """``bits``-bit two's complement patterns of ``words`` as bits, LSB first (new last axis)."""
    pattern = np.asarray(words, dtype=np.int64) & ((1 << bits) - 1)
    return ((pattern[..., None] >> np.arange(bits)) & 1).astype(np.uint8)


def _row_layout(cfg: PimConfig, tk_i: int, tn_i: int) -> tuple[np.ndarray, ...]:
    """Per row of a tile: (group, middle index, weight plane) — row_wise (g, k, b),
    dot_product (n, kg, b) — from ``row = (group * middle + mid) * P + b``."""
    P = cfg.planes
    middle = tk_i if cfg.row_wise else _ceil(tk_i, cfg.fields)
    r = np.arange(tile_rows(cfg, tk_i, tn_i))
    return r // (P * middle), (r // P) % middle, r % P


def _to_columns(cfg: PimConfig, fields: np.ndarray) -> np.ndarray:
    """(..., F, fw) field bits -> (..., W) columns; columns past F * fw stay 0."""
    flat = fields.reshape(*fields.shape[:-2], -1)
    pad = cfg.width - flat.shape[-1]
    return np.concatenate([flat, np.zeros((*flat.shape[:-1], pad), np.uint8)], axis=-1)


def tile_bits(cfg: PimConfig, b, s: Schedule, ik: int, in_: int) -> np.ndarray:
    """The W-bit images (rows, W) of weight tile ``(ik, in)``, row 0 first (section 2)."""
    F, P = cfg.fields, cfg.planes
    ks, ns = s.tile_range("k", ik), s.tile_range("n", in_)
    block = np.asarray(b, dtype=np.int64)[ks.start:ks.stop, ns.start:ns.stop]
    group, mid, plane = _row_layout(cfg, len(ks), len(ns))
    if cfg.row_wise:   # field f of row (g, k, b): w[k, g*F + f]
        padded = np.zeros((len(ks), _ceil(len(ns), F) * F), np.int64)
        padded[:, :len(ns)] = block
        words = padded.reshape(len(ks), -1, F)[mid, group]
    else:              # field f of row (n, kg, b): w[kg*F + f, n]
        padded = np.zeros((_ceil(len(ks), F) * F, len(ns)), np.int64)
        padded[:len(ks)] = block
        words = padded.T.reshape(len(ns), -1, F)[group, mid]
    bits = _planes(words, cfg.weight_bits)          # (rows, F, wb)
    if P > 1:   # bit-serial: a field is the row's weight plane b of the word
        bits = np.take_along_axis(bits, plane[:, None, None].repeat(F, 1), axis=2)
    return _to_columns(cfg, bits)


def sweep_input_bits(cfg: PimConfig, a_words, tn_i: int) -> np.ndarray:
    """Broadcast input bits (rows, ib, W) of one input row's compute sweep over a tile:
    ``a_words`` are the tile's ``tk_i`` inputs a[m, k0:k0+tk_i]; index [row, j] is activation j
    of that row (section 2)."""
    F = cfg.fields
    a_words = np.asarray(a_words, dtype=np.int64)
    tk_i = len(a_words)
    bits = _planes(a_words, cfg.input_bits)          # (tk_i, ib)
    group, mid, _ = _row_layout(cfg, tk_i, tn_i)
    if cfg.row_wise:   # a[m, k] on every field of group g that holds an n of the tile
        valid = (group[:, None] * F + np.arange(F)) < tn_i          # (rows, F)
        on = bits[mid][:, :, None] & valid[:, None, :]               # (rows, ib, F)
    else:              # field f gets a[m, kg*F + f], 0 past the tile's k
        padded = np.zeros((_ceil(tk_i, F) * F, cfg.input_bits), np.uint8)
        padded[:tk_i] = bits
        on = padded.reshape(-1, F, cfg.input_bits)[mid].transpose(0, 2, 1)
    return _to_columns(cfg, np.repeat(on[..., None], cfg.field_bits, axis=-1))


def _pack(bits: np.ndarray) -> list[int]:
    """Rows of bits (n, width) as Python ints, bit i = column i."""
    packed = np.packbits(bits, axis=-1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def weight_row_images(cfg: PimConfig, b, s: Schedule, *,
                      bits: bool = False) -> list[int] | np.ndarray:
    """Every row image the ``weights`` stream delivers over the GEMM, in LOAD order: a list of
    W-bit ints (column c = bit c), or with ``bits=True`` a (rows, W) uint8 array."""
    images, previous = [], None
    for _, ik, in_ in s.steps():
        if (ik, in_) != previous:
            images.append(tile_bits(cfg, b, s, ik, in_))
        previous = (ik, in_)
    stacked = np.concatenate(images)
    return stacked if bits else _pack(stacked)


def input_beats(cfg: PimConfig, a, s: Schedule) -> list[int]:
    """Every ``inputs`` beat in consumption order: per step, per m of its tile, ceil(tk_i / F)
    beats of F words in ib-bit two's complement, word f in bits [f*ib, (f+1)*ib)."""
    F, ib = cfg.fields, cfg.input_bits
    a = np.asarray(a, dtype=np.int64)
    beats = []
    for im, ik, _ in s.steps():
        ms, ks = s.tile_range("m", im), s.tile_range("k", ik)
        padded = np.zeros((len(ms), _ceil(len(ks), F) * F), np.int64)
        padded[:, :len(ks)] = a[ms.start:ms.stop, ks.start:ks.stop]
        bits = _planes(padded, ib).reshape(len(ms) * _ceil(len(ks), F), F * ib)
        beats += _pack(bits)
    return beats


def input_bits_for(cfg: PimConfig, a, s: Schedule, m: int, ik: int, in_: int, row: int,
                   j: int) -> np.ndarray:
    """The W broadcast input bits (uint8) of activation ``j`` of ``row`` of weight tile
    ``(ik, in)`` for input row ``m`` (an absolute row of A)."""
    ks = s.tile_range("k", ik)
    words = np.asarray(a, dtype=np.int64)[m, ks.start:ks.stop]
    return sweep_input_bits(cfg, words, len(s.tile_range("n", in_)))[row, j]
