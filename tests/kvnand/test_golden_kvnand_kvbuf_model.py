"""The KV write-combine buffer's page programs (golden/kvnand/kvbuf.py) against the
design-space model's page counts (golden/kvnand/pages.py) under both buffer readings
(golden/kvnand/systems.py ``buffer_readings``).

The trace is the one the model's page-level mapping assumes: ``S`` streams, each token one slice
of every stream, round robin (:func:`memwall.golden.kvnand.kvbuf.generation_order`); the
buffer has the config's geometry and is flushed at the end. The model's reading of a buffer of
``k`` page slots is ``buffer_readings(p)``: ``paper_sufficient`` (every stream buffered) and
``buffer_limited`` (``open = kv_buffer_bytes // page_bytes = k`` streams buffered, the others
flushed every token by one sector program each).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from memwall.config import load_config
from memwall.golden.kvnand import kvbuf as kb
from memwall.golden.kvnand.pages import flushed_pages, mapped_pages, stream_pages, write_ops
from memwall.golden.kvnand.systems import Params, buffer_readings

CONFIGS = ("kvnand_small", "kvnand_paper")


def _config(name: str, slots: int | None = None):
    cfg = load_config(name)
    if slots is not None:
        cfg = dataclasses.replace(cfg, kv_buffer_bytes=slots * cfg.page_bytes)
    return cfg


def _buffer(cfg, streams: int, tokens: int, policy: str | None = None) -> dict:
    order = kb.generation_order(tokens, streams // 2, 1, cfg.kv_slice_bytes)
    return kb.simulate(order, cfg.kv_slots, cfg.page_bytes, cfg.kv_slice_bytes, "page",
                       policy or cfg.kv_policy)


def _per_stream(run: dict, streams: int) -> list[int]:
    return [sum(p["stream"] == s for p in run["programs"]) for s in range(streams)]


def _model_programs(p: Params, sl: int, streams: int, open_streams, tokens: int) -> float:
    """Program operations the model charges for ``tokens`` tokens (full pages and sector
    programs, :func:`write_ops`, each one tPROG)."""
    full, sectors = write_ops(p, sl, streams, open_streams)
    return tokens * (full + sectors)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("whole", [True, False])
def test_every_stream_buffered_equals_the_model(name, whole):
    """``paper_sufficient``: a slot per stream (6 streams, 6 slots), so the model's assumption
    holds and the counts are equal. Per stream, the programs and the pages a read touches are
    ``mapped_pages`` (= ``stream_pages`` with every stream open); the early programs are the
    flush's last partial pages only; with whole pages (``whole``) the model's full-page
    programs per token times the tokens equal the buffer's programs, otherwise they fall short
    by the flushed pages' unfilled fraction."""
    streams = 6
    cfg = _config(name, slots=streams)
    p = Params.from_config(cfg)
    reading = buffer_readings(p)["paper_sufficient"]["c_open_streams"]
    assert reading is None
    sl, page = cfg.kv_slice_bytes, cfg.page_bytes
    per_page = page // sl
    tokens = 2 * per_page if whole else 2 * per_page + per_page // 2
    run = _buffer(cfg, streams, tokens)
    pages = mapped_pages(tokens, sl, page)
    assert pages == stream_pages(p, tokens, sl, streams, reading) == (2 if whole else 3)
    assert _per_stream(run, streams) == [pages] * streams
    assert [kb.pages_touched(run["programs"], s) for s in range(streams)] == [pages] * streams
    c = run["counters"]
    assert c["programs"] == streams * pages and c["evictions"] == 0
    assert c["partial"] == c["flushed"] == (0 if whole else streams)
    model = _model_programs(p, sl, streams, reading, tokens)
    unfilled = c["flushed"] * (page - tokens * sl % page) / page if not whole else 0
    assert model == pytest.approx(c["programs"] - unfilled)
    if whole:
        assert model == c["programs"]


@pytest.mark.parametrize("name", CONFIGS)
def test_more_streams_than_slots_issues_more_programs_than_the_model(name):
    """``buffer_limited``: the config's slots (2) for 6 streams. The counts cannot be equal by
    construction. The model keeps ``open = 2`` streams in whole pages and lets the other 4
    bypass the buffer, one sector program a token each. This buffer has no bypass: a slice of
    a stream without a slot takes one, programming a buffered stream's partial page early
    (an eviction), so no stream keeps its page open in round-robin order:

    * ``lru``: every slot is evicted before its stream comes back, so every slice is one early
      program: ``S * tokens``, exactly the model's count with no stream buffered
      (``write_ops(..., open_streams=0)``: a slice is at most a sector here), and each stream's
      read touches ``tokens`` pages. The model's ``flushed_pages`` for such a stream is that
      count where a page is one ECC sector (kvnand_small's 256 B page: the sector is the page)
      and a quarter of it at 4 KiB pages (kvnand_paper), where the model packs four sector
      programs into one page (partial-page programming) and the buffer programs a new page
      each time.
    * ``fullest``: between the two, the model's count < the buffer's <= ``S * tokens``.

    Relation asserted: model(open = k) < buffer(fullest) <= buffer(lru) = model(open = 0);
    and per stream read, the model's pages <= the buffer's pages touched."""
    streams = 6
    cfg = _config(name)
    p = Params.from_config(cfg)
    open_streams = buffer_readings(p)["buffer_limited"]["c_open_streams"]
    assert open_streams == cfg.kv_slots == 2 < streams
    sl, page = cfg.kv_slice_bytes, cfg.page_bytes
    assert sl <= p.sector_bytes
    tokens = 2 * (page // sl)
    model = _model_programs(p, sl, streams, open_streams, tokens)
    nothing_buffered = _model_programs(p, sl, streams, 0, tokens)
    assert nothing_buffered == streams * tokens
    lru, fullest = (_buffer(cfg, streams, tokens, policy) for policy in ("lru", "fullest"))
    assert lru["counters"]["programs"] == lru["counters"]["partial"] == streams * tokens
    assert model < fullest["counters"]["programs"] <= lru["counters"]["programs"]
    assert fullest["counters"]["partial"] == fullest["counters"]["programs"]   # all early
    touched = [kb.pages_touched(lru["programs"], s) for s in range(streams)]
    assert touched == [tokens] * streams
    flushed = flushed_pages(tokens, sl, p)
    assert flushed == math.ceil(tokens / p.sectors_per_page)
    assert (flushed == tokens) == (p.sectors_per_page == 1)
    model_pages = stream_pages(p, tokens, sl, streams, open_streams)
    for run in (lru, fullest):
        mean = sum(kb.pages_touched(run["programs"], s) for s in range(streams)) / streams
        assert model_pages <= mean
