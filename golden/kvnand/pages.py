"""KVNAND flash pages: how many pages a KV stream touches, how many a token's KV writes program,
and the time of a stream of pages through a plane's read -> ECC -> MAC pipeline. Used by
:mod:`memwall.golden.kvnand.model`.

**Pages of a stream** (one (layer, KV head, K|V) of one plane for C, of the SoC for D).
Page-level mapping: ``ceil(t s / page)`` for a slice of ``s`` bytes per token. Naive mapping:
the slices are written in generation order, ``S`` streams interleaved (C: ``S = L`` layers of
the plane; D: ``S = 2 L H_kv``), so slice ``(tok, i)`` starts at ``(tok S + i) s`` and a stream
touches ``sum_tok (b - a + 1) - #{a_tok == b_(tok-1)}`` pages (``a``, ``b``: first and last page
of a slice; consecutive slices share at most one page), averaged over up to 64 evenly spaced
streams. Buffer-limited reading (``*_open_streams``): a fraction ``open / S`` of the streams
fill whole pages; each other stream is flushed every token into an ECC sector by a
partial-page program (1 KiB, 4 per 4 KiB page; a page smaller than a codeword is its own
sector: :attr:`~memwall.golden.kvnand.systems.Params.sector_bytes`), i.e.
``ceil(t ceil(s / sector) / sectors_per_page)`` pages.

**A stream of pages** (:func:`stream_time`). A plane reads a page (tR), decodes its ECC
codewords (``t_ecc``) and runs one PE command on it (``t_mac``:
:meth:`~memwall.golden.kvnand.systems.Params.t_mac`, the RTL's cycles). The three stages
overlap, so ``n`` pages take ``n max(tR, t_ecc, t_mac) + t_ecc + t_mac``. An ATTEND stream
ends with the PE's emit of its sums (``t_emit``), once per head group's V stream on a plane: a
page that ends a stream has ``t_mac + t_emit`` in its MAC stage.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from memwall.golden.kvnand.systems import Params

__all__ = ["mapped_pages", "naive_pages", "naive_mean", "flushed_pages", "stream_pages",
           "write_ops", "stream_time"]


def mapped_pages(ctx: int, slice_bytes: float, page: int) -> int:
    """Page-level mapping: one stream's slices packed back to back in its own pages."""
    return math.ceil(ctx * slice_bytes / page)


@lru_cache(maxsize=4096)
def naive_pages(ctx: int, slice_bytes: int, streams: int, stream: int, page: int) -> int:
    """Generation order: pages touched by stream ``stream`` of ``streams`` interleaved ones."""
    o = (np.arange(ctx, dtype=np.int64) * streams + stream) * slice_bytes
    a, b = o // page, (o + slice_bytes - 1) // page
    return int((b - a + 1).sum() - np.count_nonzero(a[1:] == b[:-1]))


def naive_mean(ctx: int, slice_bytes: int, streams: int, page: int) -> float:
    """:func:`naive_pages` averaged over up to 64 evenly spaced streams."""
    picks = sorted({int(round(x)) for x in np.linspace(0, streams - 1, min(streams, 64))})
    return sum(naive_pages(ctx, slice_bytes, streams, s, page) for s in picks) / len(picks)


def flushed_pages(ctx: int, slice_bytes: float, p: Params) -> int:
    """A stream flushed every token, one partial-page program of whole ECC sectors each."""
    return math.ceil(ctx * math.ceil(slice_bytes / p.sector_bytes) / p.sectors_per_page)


def stream_pages(p: Params, ctx: int, sl: int, streams: int, open_streams) -> float:
    """Pages one of ``streams`` KV streams of ``sl``-byte slices reads at context ``ctx``
    under ``p.kv_mapping`` with ``open_streams`` of them buffered (None: all)."""
    if p.kv_mapping == "naive":
        return naive_mean(ctx, sl, streams, p.page_bytes)
    full = mapped_pages(ctx, sl, p.page_bytes)
    if open_streams is None or open_streams >= streams:
        return full
    f = open_streams / streams
    return f * full + (1 - f) * flushed_pages(ctx, sl, p)


def write_ops(p: Params, sl: int, streams: int, open_streams) -> tuple[float, int]:
    """(full pages, sector programs) per token for ``streams`` streams of ``sl`` bytes."""
    if p.kv_mapping == "naive" or open_streams is None or open_streams >= streams:
        return streams * sl / p.page_bytes, 0
    return open_streams * sl / p.page_bytes, (streams - open_streams) * math.ceil(
        sl / p.sector_bytes)


def stream_time(p: Params, pages: float, t_mac: float, t_emit: float = 0.0,
                emits: int = 1) -> float:
    """Time for ``pages`` pages on one plane through read -> ECC -> MAC, each page's PE
    command taking ``t_mac``; with ``t_emit``, ``emits`` of the pages (the last among them)
    end an ATTEND stream and emit its sums."""
    if pages <= 0:
        return 0.0
    period = max(p.t_read, p.t_ecc, t_mac)
    emits = min(emits, math.ceil(pages)) if t_emit else 0
    if not emits:
        return pages * period + p.t_ecc + t_mac
    inner = emits - 1                       # emits before the last page, inside the stream
    return ((pages - inner) * period + inner * max(p.t_read, p.t_ecc, t_mac + t_emit)
            + p.t_ecc + t_mac + t_emit)
