"""The KVNAND KV write-combine buffer's golden model (golden/kvnand/kvbuf.py) on hand-worked
sessions, its eviction policies, and the pages a stream's read touches (page mapping against
naive order, checked by a brute-force scan of the programmed bytes)."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.kvnand import kvbuf as kb

A, B, C = 0, 1, 2
FF = kb.ERASED


def sl(stream: int, *data: int) -> tuple[int, np.ndarray]:
    return stream, np.array(data, np.uint8)


def summary(run: dict) -> list[tuple]:
    return [(p["stream"], p["page"], p["valid"], p["cause"], p["data"].tolist())
            for p in run["programs"]]


SESSION = [sl(A, 0, 1), sl(B, 10, 11), sl(A, 2, 3), sl(B, 12, 13), sl(A, 4, 5)]


def test_page_mapping_gives_each_stream_its_pages_in_token_order():
    run = kb.simulate(SESSION, slots=2, page_bytes=4, slice_bytes=2, mapping="page")
    assert summary(run) == [
        (A, 0, 4, "full", [0, 1, 2, 3]),
        (B, 0, 4, "full", [10, 11, 12, 13]),
        (A, 1, 2, "flush", [4, 5, FF, FF]),      # the flush: a partial page, erased padding
    ]
    assert run["counters"] == {"programs": 3, "partial": 1, "evictions": 0, "flushed": 1,
                               "bytes_programmed": 12}


def test_naive_order_mixes_streams():
    run = kb.simulate(SESSION, slots=2, page_bytes=4, slice_bytes=2, mapping="naive")
    assert summary(run) == [
        (0, 0, 4, "full", [0, 1, 10, 11]),
        (0, 1, 4, "full", [2, 3, 12, 13]),
        (0, 2, 2, "flush", [4, 5, FF, FF]),
    ]
    assert [p["contents"] for p in run["programs"]] == [(A, B), (A, B), (A,)]


def test_without_flush_open_pages_stay_in_the_buffer():
    run = kb.simulate(SESSION, 2, 4, 2, "page", flush=False)
    assert [p["stream"] for p in run["programs"]] == [A, B]


# B0 arrives first, then A fills two slices, then C needs a slot: "fullest" evicts A (4 bytes,
# slot 1), "lru" evicts B (written longest ago, slot 0). C takes the victim's slot; the flush
# programs the slots in order.
EVICT = [sl(B, 10, 11), sl(A, 0, 1), sl(A, 2, 3), sl(C, 20, 21)]


@pytest.mark.parametrize("policy, want", [
    ("fullest", [(A, 0, 4, "evict", [0, 1, 2, 3, FF, FF]),
                 (B, 0, 2, "flush", [10, 11, FF, FF, FF, FF]),
                 (C, 0, 2, "flush", [20, 21, FF, FF, FF, FF])]),
    ("lru", [(B, 0, 2, "evict", [10, 11, FF, FF, FF, FF]),
             (C, 0, 2, "flush", [20, 21, FF, FF, FF, FF]),
             (A, 0, 4, "flush", [0, 1, 2, 3, FF, FF])]),
])
def test_eviction_policy(policy, want):
    run = kb.simulate(EVICT, slots=2, page_bytes=6, slice_bytes=2, mapping="page", policy=policy)
    assert summary(run) == want
    assert run["counters"]["evictions"] == 1 and run["counters"]["partial"] == 3


def test_fullest_breaks_ties_by_the_lowest_slot_and_page_numbers_continue():
    # A and B hold one slice each; C evicts slot 0 (A); A comes back and evicts slot 0 (C)...
    session = [sl(A, 1, 1), sl(B, 2, 2), sl(C, 3, 3), sl(A, 4, 4)]
    run = kb.simulate(session, 2, 4, 2, "page", "fullest")
    assert [(p["stream"], p["page"], p["cause"]) for p in run["programs"]] == [
        (A, 0, "evict"), (C, 0, "evict"), (A, 1, "flush"), (B, 0, "flush")]


def _tagged_order(tokens: int, layers: int, head_groups: int, slice_bytes: int):
    """The interleaved order with every byte of a slice = a tag unique to (stream, token)."""
    order = kb.generation_order(tokens, layers, head_groups, slice_bytes)
    streams = layers * head_groups * 2
    assert streams * tokens < FF
    tag = {}
    out = []
    for n, (stream, _) in enumerate(order):
        token = n // streams
        value = stream * tokens + token
        tag[value] = stream
        out.append((stream, np.full(slice_bytes, value, np.uint8)))
    return out, tag


def _brute_force_touched(run: dict, tag: dict, stream: int, slice_bytes: int) -> int:
    """Pages whose programmed bytes hold any byte of ``stream`` (read from the data alone)."""
    count = 0
    for p in run["programs"]:
        values = p["data"][:p["valid"]]
        assert np.all(p["data"][p["valid"]:] == FF)
        if any(tag[int(v)] == stream for v in values[::slice_bytes]):
            count += 1
    return count


@pytest.mark.parametrize("slots", [12, 2, 1])
@pytest.mark.parametrize("policy", kb.POLICIES)
def test_pages_touched_matches_a_brute_force_count(slots, policy):
    tokens, layers, hgs, page, slice_bytes = 6, 3, 2, 16, 4
    order, tag = _tagged_order(tokens, layers, hgs, slice_bytes)
    for mapping in kb.MAPPINGS:
        run = kb.simulate(order, slots, page, slice_bytes, mapping, policy)
        for stream in range(layers * hgs * 2):
            assert kb.pages_touched(run["programs"], stream) == \
                _brute_force_touched(run, tag, stream, slice_bytes)


def test_page_mapping_touches_no_more_pages_than_naive_with_a_slot_per_stream():
    tokens, layers, hgs, page, slice_bytes = 6, 3, 2, 16, 4
    order, tag = _tagged_order(tokens, layers, hgs, slice_bytes)
    streams = layers * hgs * 2
    page_run = kb.simulate(order, streams, page, slice_bytes, "page")
    naive_run = kb.simulate(order, streams, page, slice_bytes, "naive")
    ideal = -(-tokens * slice_bytes // page)      # 2 pages: one full, one flushed
    for stream in range(streams):
        paged = _brute_force_touched(page_run, tag, stream, slice_bytes)
        naive = _brute_force_touched(naive_run, tag, stream, slice_bytes)
        assert paged == ideal == 2
        assert naive == tokens     # a token's 12 slices fill 3 pages; each stream's in one
        assert paged <= naive


def test_too_few_slots_can_make_page_mapping_worse_than_naive():
    """Two streams alternating through one slot: every page mapping page holds one slice,
    while a naive page holds two of each stream."""
    order = [(t % 2, np.full(4, t, np.uint8)) for t in range(8)]
    page_run = kb.simulate(order, 1, 16, 4, "page")
    naive_run = kb.simulate(order, 1, 16, 4, "naive")
    assert kb.pages_touched(page_run["programs"], 0) == 4
    assert kb.pages_touched(naive_run["programs"], 0) == 2
    assert page_run["counters"]["evictions"] == 7


@pytest.mark.parametrize("mapping", kb.MAPPINGS)
@pytest.mark.parametrize("slots", [1, 3, 12])
def test_every_byte_is_programmed_once_in_stream_order(mapping, slots):
    rng = np.random.default_rng(slots)
    order = kb.generation_order(5, 3, 2, 8, rng)
    run = kb.simulate(order, slots, 32, 8, mapping, "lru")
    got: dict[int, list] = {}
    for p in run["programs"]:
        for k, stream in enumerate(p["contents"]):
            got.setdefault(stream, []).append(p["data"][8 * k:8 * k + 8])
        assert p["valid"] == 8 * len(p["contents"])
        assert p["partial"] == (p["valid"] < 32)
    for stream in range(12):
        want = [d for s, d in order if s == stream]
        assert np.array_equal(np.concatenate(got[stream]), np.concatenate(want))
    pages_of = {}
    for p in run["programs"]:          # page numbers count up per stream from 0
        assert p["page"] == pages_of.get(p["stream"], 0)
        pages_of[p["stream"]] = p["page"] + 1
    assert run["counters"]["bytes_programmed"] == 32 * len(run["programs"])


def test_compare_mappings():
    r = kb.compare_mappings(tokens=16, layers=3, head_groups=2, page_bytes=64, slice_bytes=16)
    assert r["slots"] == r["streams"] == 12 and r["ideal"] == 4
    assert r["page"]["touched"] == [4] * 12 and r["page"]["partial"] == 0
    assert r["naive"]["touched"] == [16] * 12
    two = kb.compare_mappings(16, 3, 2, 64, 16, slots=2, policy="lru")
    assert two["page"]["evictions"] > 0 and two["page"]["programs"] > two["naive"]["programs"]


@pytest.mark.parametrize("args, match", [
    (dict(slots=0), "slots"),
    (dict(page_bytes=6, slice_bytes=4), "divide page_bytes"),
    (dict(mapping="log"), "mapping must be one of page, naive"),
    (dict(policy="fifo"), "policy must be one of fullest, lru"),
    (dict(slices=[(0, np.zeros(3, np.uint8))]), "must be 2 bytes"),
    (dict(slices=[(-1, np.zeros(2, np.uint8))]), "stream must be an integer >= 0"),
    (dict(slices=[(0, np.array([0, 256]))]), "integers 0..255"),
    (dict(slices=[0]), "pair"),
])
def test_invalid_input(args, match):
    kwargs = dict(slices=[], slots=2, page_bytes=4, slice_bytes=2, mapping="page",
                  policy="fullest") | args
    with pytest.raises(ValueError, match=match):
        kb.simulate(**kwargs)


def test_component_validates_its_parameters():
    from memwall.hdl.kvnand.kvbuf import KvWriteBuffer
    with pytest.raises(ValueError, match="word_bytes .* must divide slice_bytes"):
        KvWriteBuffer(2, 48, 6, 4, 4)
    with pytest.raises(ValueError, match="stream_bits"):
        KvWriteBuffer(2, 64, 16, 0, 4)
    with pytest.raises(ValueError, match="mapping"):
        KvWriteBuffer(2, 64, 16, 4, 4, mapping="naïve")
