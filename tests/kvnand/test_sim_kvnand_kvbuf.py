"""The KVNAND KV write-combine buffer on its generated Verilog (cocotb, Icarus) against the golden
model: page mapping (each eviction policy, with and without stalls) and naive order."""

from __future__ import annotations

import pytest

from memwall.hdl.kvnand.kvbuf import KvWriteBuffer
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim

TB = "memwall.verif.kvnand.tb_kvbuf"

#: Small pages: 12 streams (3 layers x 2 head groups x K/V) over 2 slots of 64 B.
GEOMETRY = {"slots": 2, "page_bytes": 64, "slice_bytes": 16, "stream_bits": 4, "word_bytes": 4,
            "page_bits": 16, "count_bits": 16}
SESSION = {"tokens": 12, "layers": 3, "head_groups": 2}


def run(mapping: str, policy: str, stall: float, order: str = "interleaved", **over) -> None:
    geometry = {**GEOMETRY, "mapping": mapping, "policy": policy, **over}
    simulate(KvWriteBuffer(**geometry), "kvnand_kvbuf", TB,
             {**geometry, **SESSION, "stall": stall, "order": order})


@pytest.mark.parametrize("stall", [0.0, 0.3])
def test_page_mapping_evicts_every_slice(stall):
    """2 slots for 12 interleaved streams: almost every slice evicts a partial page."""
    run("page", "fullest", stall)


def test_page_mapping_lru_random_order():
    """8 slots, streams interleaved at random: evictions and full pages in one session."""
    run("page", "lru", 0.3, "random", slots=8)


def test_page_mapping_a_slot_per_stream():
    """No evictions: every page full but the flushed ones; 8-byte slices, 16 slots."""
    run("page", "lru", 0.0, slots=16, slice_bytes=8)


def test_naive_order():
    run("naive", "fullest", 0.0)
