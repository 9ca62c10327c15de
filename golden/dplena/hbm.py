"""HBM beat layout of one logits prefetch, as the d-PLENA dequantiser/DMA engine consumes it.

A beat is ``beat_bytes`` (``W``) bytes, one transfer of the HBM port; byte ``p`` of a beat sits at
bits ``8p .. 8p+7`` of the port (little-endian, :func:`beats_to_words`).

MX formats (:func:`prefetch_beats_mx`; every format of :mod:`memwall.golden.dplena.mx`): the
elements are cut into *groups* of ``32 * W`` elements (the last group may be partial). A group
is sent as

* one *scale beat*: byte ``j`` is the E8M0 scale of the group's ``j``-th 32-element block
  (``W`` blocks at most, so one beat always holds them); unused bytes are ``0x00``;
* its *data beats*: the group's element codes packed back to back, element ``i`` in bits
  ``b*i .. b*i + b - 1`` of the data beats read as one little-endian bit string (``b`` the
  element width: 8, 6 or 4; for 8 bits, byte ``p`` of data beat ``d`` is element ``d*W + p``;
  for 4 bits, element ``2p`` is the low nibble of byte ``p``). A full group takes ``4 b`` data
  beats (32, 24, 16).

The dequantiser writes ``G`` = :func:`write_lanes` elements to the Vector SRAM at a time: ``W``
for 8-bit elements, ``2 W`` for 6- and 4-bit ones (a 4-bit beat holds ``2 W`` elements; a 6-bit
write takes one and a half beats). A partial last group is padded with zero bits to whole writes
and then to whole beats: ``ceil(ceil(n / G) * G * b / (8 W))`` data beats, so that every write
completes in a beat that exists (for 6 bits, the first beat of every three only fills a hold
register). Write ``k`` of a group needs scale bytes ``k*G/32 .. (k+1)*G/32 - 1`` of the group's
scale beat, which the RTL keeps in a register while the group's data beats stream past.

BF16 (:func:`prefetch_beats_bf16`): ``W/2`` elements per beat, element ``p`` of a beat in bytes
``2p`` (low byte) and ``2p+1``; the tail of the last beat is zero.

Format names are :data:`FORMATS`; ``"mxfp8"`` is accepted for ``"mxfp8_e4m3"``
(:func:`canonical_format`). Plain NumPy; importable without Amaranth or cocotb.
"""

from __future__ import annotations

import numpy as np

from memwall.families.dplena.config import DEFAULT_MX_FORMAT, LOGITS_FORMAT_ALIASES, LOGITS_FORMATS
from memwall.families.dplena.config import write_lanes as _spec_write_lanes
from memwall.golden.dplena.mx import BLOCK, mx_format, num_blocks

__all__ = ["MX_GROUP_BEATS", "FORMATS", "DEFAULT_FORMAT", "canonical_format", "group_data_beats",
           "write_lanes", "prefetch_beats_mx", "prefetch_beats_bf16", "num_beats", "beats_to_words"]

MX_GROUP_BEATS = 32
"""Data beats per MXFP8 group: one scale beat of ``W`` scales covers ``32 * W`` elements."""
#: BF16 and the MX formats (the spec's names, which tests/dplena/test_mx.py checks against
#: :data:`memwall.golden.dplena.mx.FORMATS`).
FORMATS = LOGITS_FORMATS
#: The name this module (and the workloads built on it) once used for MXFP8 E4M3.
ALIASES = LOGITS_FORMAT_ALIASES
#: The MX format the dequantiser was first built for: the default wherever one is not named
#: (the spec's, :data:`memwall.families.dplena.config.DEFAULT_MX_FORMAT`).
DEFAULT_FORMAT = DEFAULT_MX_FORMAT


def canonical_format(fmt: str) -> str:
    """``fmt``'s name in :data:`FORMATS` (``"mxfp8"`` -> ``"mxfp8_e4m3"``); ValueError naming the
    allowed ones."""
    fmt = ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(FORMATS)} (or mxfp8 for mxfp8_e4m3), "
                         f"got {fmt!r}")
    return fmt


def group_data_beats(fmt: str) -> int:
    """Data beats of a full group of MX format ``fmt``: ``32 W`` elements of ``b`` bits over
    ``W``-byte beats, ``4 b`` (32, 24, 16)."""
    return 4 * mx_format(canonical_format(fmt)).bits


def write_lanes(fmt: str, beat_bytes: int) -> int:
    """Elements per Vector SRAM write of a dequantiser built for ``fmt``: ``W`` for 8- and 16-bit
    elements, ``2 W`` for 6- and 4-bit ones (what a 4-bit beat carries): the spec's rule
    (:func:`memwall.families.dplena.config.write_lanes`), ``fmt`` and ``beat_bytes`` checked."""
    return _spec_write_lanes(canonical_format(fmt), _check_beat_bytes(beat_bytes))


def _check_beat_bytes(beat_bytes) -> int:
    if isinstance(beat_bytes, bool) or not isinstance(beat_bytes, (int, np.integer)):
        raise TypeError(f"beat_bytes must be an int, got {type(beat_bytes).__name__}")
    beat_bytes = int(beat_bytes)
    if beat_bytes < 32 or beat_bytes & (beat_bytes - 1):
        raise ValueError(f"beat_bytes must be a power of two >= 32 (one scale byte per 32 "
                         f"elements of a beat), got {beat_bytes}")
    return beat_bytes


def _check_vector(name: str, a, dtype) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of {np.dtype(dtype).name}, "
                        f"got {type(a).__name__}")
    if a.dtype != dtype:
        raise TypeError(f"{name} must have dtype {np.dtype(dtype).name} (bit patterns), "
                        f"got {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    return a


def _group_beats(n_group: int, fmt: str, w: int) -> int:
    """Data beats of a group of ``n_group`` elements: whole writes, then whole beats."""
    lanes, bits = write_lanes(fmt, w), mx_format(fmt).bits
    writes = -(-n_group // lanes)
    return -(-writes * lanes * bits // (8 * w))


def num_beats(n: int, fmt: str, beat_bytes: int) -> int:
    """Beats of a prefetch of ``n`` elements in ``fmt`` (:data:`FORMATS`).

    MX: per group of ``32 W`` elements one scale beat plus its data beats (the module
    docstring's padding); BF16: ``ceil(n / (W / 2))``.
    """
    w = _check_beat_bytes(beat_bytes)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    n = int(n)
    fmt = canonical_format(fmt)
    if fmt == "bf16":
        return -(-n // (w // 2))
    bits = mx_format(fmt).bits
    group = BLOCK * w
    full, rest = divmod(n, group)
    return full * (1 + 4 * bits) + (1 + _group_beats(rest, fmt, w) if rest else 0)


def prefetch_beats_mx(elements: np.ndarray, scales: np.ndarray, beat_bytes: int,
                      fmt: str = DEFAULT_FORMAT) -> np.ndarray:
    """HBM beats of an MX prefetch: per group a scale beat, then its data beats.

    Parameters
    ----------
    elements : np.ndarray of uint8, shape (n,)
        Element codes of ``fmt`` (each in the low ``b`` bits, as :func:`mx.quantize` gives them).
    scales : np.ndarray of uint8, shape (ceil(n / 32),)
        E8M0 bit patterns; scale ``j`` applies to elements ``32j .. 32j + 31``.
    beat_bytes : int
        Bytes per beat ``W`` (a power of two >= 32).
    fmt : str
        An MX format of :data:`FORMATS`.

    Returns
    -------
    np.ndarray of uint8, shape (num_beats(n, fmt, W), W)
    """
    w = _check_beat_bytes(beat_bytes)
    fmt = canonical_format(fmt)
    if fmt == "bf16":
        raise ValueError("fmt must be an MX format here; BF16 beats are prefetch_beats_bf16's")
    bits = mx_format(fmt).bits
    elements = _check_vector("elements", elements, np.uint8)
    scales = _check_vector("scales", scales, np.uint8)
    n = len(elements)
    if len(scales) != num_blocks(n):
        raise ValueError(f"scales must hold ceil(n / {BLOCK}) = {num_blocks(n)} bytes for "
                         f"n = {n} elements, got {len(scales)}")
    if np.any(elements >> bits):
        raise ValueError(f"elements must be {fmt} codes of {bits} bits, got a larger value")
    group = BLOCK * w
    beats = np.zeros((num_beats(n, fmt, w), w), dtype=np.uint8)
    row = 0
    for start in range(0, n, group):
        part = elements[start:start + group]
        block0 = start // BLOCK
        group_scales = scales[block0:block0 + num_blocks(len(part))]
        beats[row, :len(group_scales)] = group_scales
        data_beats = _group_beats(len(part), fmt, w)
        # Element i's bits at i*b .. i*b + b - 1 of one little-endian bit string.
        stream = np.zeros(data_beats * w * 8, dtype=np.uint8)
        codes = np.unpackbits(part[:, None], axis=1, bitorder="little")[:, :bits]
        stream[:len(part) * bits] = codes.reshape(-1)
        beats[row + 1:row + 1 + data_beats] = np.packbits(
            stream, bitorder="little").reshape(data_beats, w)
        row += 1 + data_beats
    assert row == len(beats)
    return beats


def prefetch_beats_bf16(bits: np.ndarray, beat_bytes: int) -> np.ndarray:
    """HBM beats of a BF16 prefetch: ``W/2`` little-endian BF16 per beat, zero tail.

    Parameters
    ----------
    bits : np.ndarray of uint16, shape (n,)
        BF16 bit patterns.
    beat_bytes : int
        Bytes per beat ``W`` (a power of two >= 32).

    Returns
    -------
    np.ndarray of uint8, shape (num_beats(n, "bf16", W), W)
    """
    w = _check_beat_bytes(beat_bytes)
    bits = _check_vector("bits", bits, np.uint16)
    n = len(bits)
    per_beat = w // 2
    padded = np.zeros(num_beats(n, "bf16", w) * per_beat, dtype="<u2")
    padded[:n] = bits
    return padded.view(np.uint8).reshape(-1, w).copy()


def beats_to_words(beats: np.ndarray) -> list[int]:
    """Each beat as one integer, byte 0 in bits 0..7: what a testbench drives on the port."""
    beats = np.asarray(beats)
    if beats.dtype != np.uint8 or beats.ndim != 2:
        raise TypeError(f"beats must be a uint8 array of shape (n_beats, beat_bytes), got "
                        f"{beats.dtype} {beats.shape}")
    return [int.from_bytes(beat.tobytes(), "little") for beat in beats]
