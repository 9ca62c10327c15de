"""HBM beat layout of one logits prefetch, as the d-PLENA dequantiser/DMA engine consumes it.

A beat is ``beat_bytes`` (``W``) bytes, one transfer of the HBM port; byte ``p`` of a beat sits at
bits ``8p .. 8p+7`` of the port (little-endian, :func:`beats_to_words`).

MXFP8 (:func:`prefetch_beats_mx`): the elements are cut into *groups* of ``32 * W`` elements
(:data:`MX_GROUP_BEATS` data beats; the last group may be partial). A group is sent as

* one *scale beat*: byte ``j`` is the E8M0 scale of the group's ``j``-th 32-element block
  (``W`` blocks at most, so one beat always holds them); unused bytes are ``0x00``;
* ``ceil(n_group / W)`` *data beats*: byte ``p`` of data beat ``d`` is element ``d*W + p`` of the
  group; the tail bytes of the last data beat are ``0x00``.

So data beat ``d`` of a group needs scale bytes ``d*W/32 .. d*W/32 + W/32 - 1`` of the group's
scale beat, which the RTL keeps in a register while the group's data beats stream past.

BF16 (:func:`prefetch_beats_bf16`): ``W/2`` elements per beat, element ``p`` of a beat in bytes
``2p`` (low byte) and ``2p+1``; the tail of the last beat is zero.

Plain NumPy; importable without Amaranth or cocotb.
"""

from __future__ import annotations

import numpy as np

from memwall.golden.dplena.mxfp8 import BLOCK, num_blocks

__all__ = ["MX_GROUP_BEATS", "FORMATS", "prefetch_beats_mx", "prefetch_beats_bf16", "num_beats",
           "beats_to_words"]

MX_GROUP_BEATS = 32
"""Data beats per MXFP8 group: one scale beat of ``W`` scales covers ``32 * W`` elements."""
FORMATS = ("mxfp8", "bf16")


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


def num_beats(n: int, fmt: str, beat_bytes: int) -> int:
    """Beats of a prefetch of ``n`` elements in ``fmt`` (``"mxfp8"`` or ``"bf16"``).

    MXFP8: ``ceil(n / (32 W))`` scale beats plus ``ceil(n_group / W)`` data beats per group;
    BF16: ``ceil(n / (W / 2))``.
    """
    w = _check_beat_bytes(beat_bytes)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    n = int(n)
    if fmt == "bf16":
        return -(-n // (w // 2))
    if fmt == "mxfp8":
        group = MX_GROUP_BEATS * w
        full, rest = divmod(n, group)
        return full * (1 + MX_GROUP_BEATS) + (1 + -(-rest // w) if rest else 0)
    raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")


def prefetch_beats_mx(elements: np.ndarray, scales: np.ndarray, beat_bytes: int) -> np.ndarray:
    """HBM beats of an MXFP8 prefetch: per group a scale beat, then its data beats.

    Parameters
    ----------
    elements : np.ndarray of uint8, shape (n,)
        E4M3 bit patterns.
    scales : np.ndarray of uint8, shape (ceil(n / 32),)
        E8M0 bit patterns; scale ``j`` applies to elements ``32j .. 32j + 31``.
    beat_bytes : int
        Bytes per beat ``W`` (a power of two >= 32).

    Returns
    -------
    np.ndarray of uint8, shape (num_beats(n, "mxfp8", W), W)
    """
    w = _check_beat_bytes(beat_bytes)
    elements = _check_vector("elements", elements, np.uint8)
    scales = _check_vector("scales", scales, np.uint8)
    n = len(elements)
    if len(scales) != num_blocks(n):
        raise ValueError(f"scales must hold ceil(n / {BLOCK}) = {num_blocks(n)} bytes for "
                         f"n = {n} elements, got {len(scales)}")
    group = MX_GROUP_BEATS * w
    beats = np.zeros((num_beats(n, "mxfp8", w), w), dtype=np.uint8)
    row = 0
    for start in range(0, n, group):
        part = elements[start:start + group]
        block0 = start // BLOCK
        group_scales = scales[block0:block0 + num_blocks(len(part))]
        beats[row, :len(group_scales)] = group_scales
        data_beats = -(-len(part) // w)
        chunk = np.zeros(data_beats * w, dtype=np.uint8)
        chunk[:len(part)] = part
        beats[row + 1:row + 1 + data_beats] = chunk.reshape(data_beats, w)
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
