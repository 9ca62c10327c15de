"""The KVNAND KV write-combine buffer on its generated Verilog (cocotb, Icarus) against the golden
model: page mapping (each eviction policy, with and without stalls) and naive order; its page
programs on a round-robin trace against the design-space model's counts (the golden side of
that cross-check, with the reasons: tests/kvnand/test_golden_kvnand_kvbuf_model.py)."""

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


def test_rtl_page_programs_against_the_model():
    """``memwall run``'s path (:func:`run_kvbuf`) on kvnand_small's buffer geometry, 4 streams
    round robin. A slot per stream (4 slots, ``paper_sufficient``): the RTL's programs equal
    golden's and the model's ``mapped_pages`` per stream. The config's 2 slots
    (``buffer_limited``, fullest first): equal to golden's, more than the model's count with 2
    streams open and at most one a slice (the model counts what a bypass would give; this
    buffer has none)."""
    import dataclasses

    import numpy as np

    from memwall.config import load_config
    from memwall.golden.kvnand import kvbuf as kb
    from memwall.golden.kvnand.pages import mapped_pages, write_ops
    from memwall.golden.kvnand.systems import Params, buffer_readings
    from memwall.verif.kvnand.run import run_kvbuf

    small = load_config("kvnand_small")
    streams, sl, page = 4, small.kv_slice_bytes, small.page_bytes
    tokens = page // sl + 4                       # one full page a stream, one flushed
    order = kb.generation_order(tokens, streams // 2, 1, sl, np.random.default_rng(38))
    ids = np.array([s for s, _ in order])
    data = np.stack([d for _, d in order])
    for slots, reading in ((streams, "paper_sufficient"), (small.kv_slots, "buffer_limited")):
        cfg = dataclasses.replace(small, kv_buffer_bytes=slots * page)
        p = Params.from_config(cfg)
        open_streams = buffer_readings(p)[reading]["c_open_streams"]
        golden = kb.run_trace(ids, data, cfg.kv_slots, page, sl, cfg.kv_mapping, cfg.kv_policy)
        rtl = run_kvbuf(cfg, ids, data, seed=38)
        for key, want in golden.items():
            assert np.array_equal(rtl[key], want), (reading, key)
        programs = int(rtl["programs"])
        if open_streams is None:
            per_stream = [int((rtl["stream"] == s).sum()) for s in range(streams)]
            model = streams * mapped_pages(tokens, sl, page)
            assert per_stream == [mapped_pages(tokens, sl, page)] * streams == [2] * streams
        else:
            full, sectors = write_ops(p, sl, streams, open_streams)
            model = tokens * (full + sectors)
            assert model < programs <= streams * tokens
            assert rtl["early"].all()
        print(f"{reading}: {programs} programs on the RTL, the model's {model:g}")
