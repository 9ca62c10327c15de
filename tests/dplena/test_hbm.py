"""HBM beat layout of a prefetch (golden/dplena/hbm.py): layout, beat counts, round trip, bad
input."""

import numpy as np
import pytest

from memwall.golden.dplena.hbm import (
    MX_GROUP_BEATS,
    beats_to_words,
    num_beats,
    prefetch_beats_bf16,
    prefetch_beats_mx,
)
from memwall.golden.dplena.mxfp8 import num_blocks

WIDTHS = (32, 64, 128)


def _mx(rng, n):
    return (rng.integers(0, 256, n, dtype=np.uint8),
            rng.integers(0, 256, num_blocks(n), dtype=np.uint8))


def _unpack_mx(beats: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Read elements and scales back by walking the beats as the RTL does."""
    elements, scales, row = [], [], 0
    while len(elements) < n:
        scale_beat = beats[row]
        row += 1
        group = []
        for _ in range(MX_GROUP_BEATS):
            if len(elements) + len(group) >= n:
                break
            group.extend(beats[row].tolist())
            row += 1
        group = group[:n - len(elements)]
        scales.extend(scale_beat[:num_blocks(len(group))].tolist())
        elements.extend(group)
    assert row == len(beats), "beats left over"
    return np.array(elements, np.uint8), np.array(scales, np.uint8)


def test_mx_layout_small():
    w = 32
    elements = np.arange(70, dtype=np.uint8) + 1
    scales = np.array([0x7F, 0x80, 0x81], np.uint8)
    beats = prefetch_beats_mx(elements, scales, w)
    assert beats.shape == (4, w) and beats.dtype == np.uint8
    assert beats[0, :3].tolist() == [0x7F, 0x80, 0x81] and not beats[0, 3:].any()
    assert beats[1].tolist() == list(range(1, 33))
    assert beats[2].tolist() == list(range(33, 65))
    assert beats[3, :6].tolist() == list(range(65, 71)) and not beats[3, 6:].any()


def test_mx_layout_groups():
    w = 32
    group = MX_GROUP_BEATS * w
    n = 2 * group + 40
    rng = np.random.default_rng(1)
    elements, scales = _mx(rng, n)
    beats = prefetch_beats_mx(elements, scales, w)
    # group 0: scale beat at 0, data beats 1..32; group 1 at 33..65; group 2 at 66..68
    assert len(beats) == 2 * (1 + MX_GROUP_BEATS) + 1 + 2
    for g, first in enumerate((0, 33, 66)):
        blocks = scales[g * w:(g + 1) * w]
        assert np.array_equal(beats[first, :len(blocks)], blocks)
    assert not beats[66, 2:].any()           # partial group: 40 elements -> 2 scales
    assert np.array_equal(beats[34], elements[group:group + w])
    assert np.array_equal(beats[68, :8], elements[-8:]) and not beats[68, 8:].any()
    # data beat d of a group uses scale bytes d*W/32 .. : beat 5 of group 1 -> scale byte 5
    assert beats[33, 5] == scales[w + 5]


def test_bf16_layout():
    w = 32
    bits = np.array([0x1234, 0xABCD] + list(range(17)), np.uint16)
    beats = prefetch_beats_bf16(bits, w)
    assert beats.shape == (2, w)
    assert beats[0, :4].tolist() == [0x34, 0x12, 0xCD, 0xAB]
    assert beats[1, :6].tolist() == [14, 0, 15, 0, 16, 0] and not beats[1, 6:].any()


@pytest.mark.parametrize("w", WIDTHS)
def test_num_beats_and_round_trip(w):
    rng = np.random.default_rng(w)
    group = MX_GROUP_BEATS * w
    for n in [0, 1, 31, 32, 33, w - 1, w, w + 1, group - 1, group, group + 1, 3 * group + 77,
              *rng.integers(1, 4 * group, 10).tolist()]:
        elements, scales = _mx(rng, n)
        beats = prefetch_beats_mx(elements, scales, w)
        assert beats.shape == (num_beats(n, "mxfp8", w), w)
        back_e, back_s = _unpack_mx(beats, n)
        assert np.array_equal(back_e, elements) and np.array_equal(back_s, scales)

        bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
        beats = prefetch_beats_bf16(bits, w)
        assert beats.shape == (num_beats(n, "bf16", w), w)
        assert np.array_equal(beats.reshape(-1).view("<u2")[:n], bits)
        assert not beats.reshape(-1).view("<u2")[n:].any()


def test_beats_to_words():
    beats = np.zeros((2, 32), np.uint8)
    beats[0, 0], beats[0, 31], beats[1, 1] = 0x01, 0x80, 0xFF
    assert beats_to_words(beats) == [0x01 | (0x80 << 248), 0xFF << 8]
    assert beats_to_words(np.zeros((0, 64), np.uint8)) == []


@pytest.mark.parametrize("w, error", [(16, ValueError), (48, ValueError), (0, ValueError),
                                      (64.0, TypeError), (True, TypeError)])
def test_bad_beat_bytes(w, error):
    with pytest.raises(error, match="beat_bytes"):
        prefetch_beats_mx(np.zeros(4, np.uint8), np.zeros(1, np.uint8), w)
    with pytest.raises(error, match="beat_bytes"):
        prefetch_beats_bf16(np.zeros(4, np.uint16), w)
    with pytest.raises(error, match="beat_bytes"):
        num_beats(4, "bf16", w)


def test_bad_arrays():
    with pytest.raises(TypeError, match="elements"):
        prefetch_beats_mx(np.zeros(4, np.int8), np.zeros(1, np.uint8), 32)
    with pytest.raises(TypeError, match="scales"):
        prefetch_beats_mx(np.zeros(4, np.uint8), np.zeros(1, np.uint16), 32)
    with pytest.raises(TypeError, match="elements"):
        prefetch_beats_mx([1, 2, 3], np.zeros(1, np.uint8), 32)
    with pytest.raises(ValueError, match="ceil"):
        prefetch_beats_mx(np.zeros(33, np.uint8), np.zeros(1, np.uint8), 32)
    with pytest.raises(ValueError, match="one-dimensional"):
        prefetch_beats_mx(np.zeros((2, 32), np.uint8), np.zeros(2, np.uint8), 32)
    with pytest.raises(TypeError, match="bits"):
        prefetch_beats_bf16(np.zeros(4, np.uint8), 32)
    with pytest.raises(ValueError, match="fmt"):
        num_beats(4, "fp8", 32)
    with pytest.raises(ValueError, match="n must"):
        num_beats(-1, "mxfp8", 32)
    with pytest.raises(TypeError, match="beats"):
        beats_to_words(np.zeros(32, np.uint8))
