"""Bit-exact golden model of the KVNAND KV write-combine buffer (``hdl/kvnand/kvbuf.py``): the
contract.

**Slices.** Newly generated K/V entries arrive one *slice* at a time: ``slice_bytes`` bytes of one
head group's K or V vector for one token. A slice belongs to a *stream*, (layer, head group,
K|V), numbered by :func:`stream_id` (``(layer * head_groups + head_group) * 2 + kv``, ``kv`` 0
for K, 1 for V). Slices of one stream arrive in token order. ``slice_bytes`` divides
``page_bytes``, so a slice never straddles two pages.

**Programs.** The buffer emits page-program requests: ``stream``, ``page`` (page number),
``valid`` (bytes of data at the front of the page) and the ``page_bytes`` bytes of the page;
bytes past ``valid`` are ``0xFF``, as in erased flash. A request with ``valid < page_bytes`` is
*partial* (a partial-page program).

**mapping="page"** (the paper's page-level KV cache mapping, Fig. 11(b)/(c)). The buffer has
``slots`` open pages of ``page_bytes``; each holds one stream. A slice of a stream that holds a
slot is appended to that slot. Otherwise the stream takes a free slot (the lowest-numbered one);
if none is free, a victim slot is programmed as a partial page (an *eviction*), freed, and the
stream takes it. The victim is chosen by ``policy``:

* ``"fullest"``: the slot with the most bytes (ties: the lowest-numbered slot): the partial
  page wastes the least flash;
* ``"lru"``: the slot whose last slice arrived longest ago.

When a slot's page fills it is programmed at once (*flush on full*) and the slot is freed, so an
occupied slot always holds between one slice and a page less one slice. ``stream`` in a request
is the slot's stream and ``page`` how many pages that stream had programmed before (0, 1, ...):
every page holds one stream's slices in token order.

**mapping="naive"** (generation order, Fig. 11(a)). One open page; slices are appended in
arrival order whatever their stream, the page is programmed when full. ``stream`` is 0 (the one
log) and ``page`` counts the log's pages; a page mixes streams. ``slots`` and ``policy`` have
no effect.

**Flush.** At the end of a session (``flush=True``) every occupied slot is programmed as a
partial page, in slot order (naive: the open page, if it holds anything), and freed.

**Counters.** ``programs`` (requests), ``partial`` (requests with ``valid < page_bytes``),
``evictions`` and ``flushed`` (the partial requests caused by an eviction or by the flush) and
``bytes_programmed`` (``programs * page_bytes``: what the flash writes).

**Reads.** A later attention step reads one stream (every token so far): it must read every
page holding any of that stream's slices (:func:`pages_touched`). With page mapping and no
evictions a stream's ``n`` slices fill ``ceil(n * slice_bytes / page_bytes)`` pages; in naive
order each page is shared by ``page_bytes / slice_bytes`` slices of different streams, so a
stream's read touches about one page per token. Page mapping needs a slot per live stream:
with fewer slots than the streams a generation order interleaves, evictions cut every page short
and the read can touch *more* pages than naive order (:func:`compare_mappings` shows both).

**A user's trace** (``memwall golden|run kvnand --op kvbuf --inputs TRACE --out OUT``). The
trace is an ``.npz`` of two arrays, the slice writes in arrival order:

* ``stream`` (N,) integers: slice ``i``'s stream id, ``0 .. 2**kv_stream_bits - 1`` (the RTL
  keeps a page number for each of them);
* ``data`` (N, kv_slice_bytes) uint8: its bytes.

``1 <= N <=`` :data:`MAX_TRACE_SLICES`; the session ends with a flush. The buffer's geometry is
the config's (``kv_buffer_bytes / page_bytes`` slots, ``page_bytes``, ``kv_slice_bytes``,
``kv_mapping``, ``kv_policy``). The output (:func:`program_arrays`) is an ``.npz`` with one row
per program request, in issue order: ``stream``, ``page`` (page number), ``valid`` (bytes),
``early`` (programmed before it was full: ``valid < page_bytes``), ``cause`` (codes of
:data:`CAUSES`: 0 full, 1 evict, 2 flush) and ``data`` (P, page_bytes) uint8, and ``programs``
(P, a scalar). ``memwall run`` writes the same arrays read from the RTL (``cause`` 2: a
request issued after the RTL accepted the flush), and ``cycles``.

Plain Python and NumPy; importable without Amaranth or cocotb.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from memwall.families.kvnand.config import MAPPINGS, POLICIES

__all__ = ["MAPPINGS", "POLICIES", "ERASED", "CAUSES", "MAX_TRACE_SLICES", "check_geometry",
           "stream_id", "generation_order", "simulate", "program_arrays", "run_trace",
           "pages_touched", "compare_mappings"]

#: The value of an erased flash byte: a partial page's padding.
ERASED = 0xFF
#: Why a page was programmed; a program's ``cause`` code in :func:`program_arrays` is the index.
CAUSES = ("full", "evict", "flush")
#: Most slices of a user's trace: every page number (16 bits in the RTL) and the RTL's 16-bit
#: counters (at most one request a slice, plus the slots at the flush) stay below their wrap.
MAX_TRACE_SLICES = 1 << 15


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_geometry(slots: int, page_bytes: int, slice_bytes: int, mapping: str,
                   policy: str) -> None:
    """Raise ``ValueError`` naming the parameter that is out of range."""
    _positive("slots", slots)
    _positive("page_bytes", page_bytes)
    _positive("slice_bytes", slice_bytes)
    if page_bytes % slice_bytes:
        raise ValueError(f"slice_bytes ({slice_bytes}) must divide page_bytes ({page_bytes}): "
                         "a slice may not straddle two pages")
    if mapping not in MAPPINGS:
        raise ValueError(f"mapping must be one of {', '.join(MAPPINGS)}, got {mapping!r}")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")


def stream_id(layer: int, head_group: int, kv: int, head_groups: int) -> int:
    """The stream of (layer, head group, K|V): ``(layer * head_groups + head_group) * 2 + kv``."""
    _positive("head_groups", head_groups)
    if kv not in (0, 1):
        raise ValueError(f"kv must be 0 (K) or 1 (V), got {kv!r}")
    if not 0 <= head_group < head_groups:
        raise ValueError(f"head_group must be in [0, {head_groups}), got {head_group!r}")
    if layer < 0:
        raise ValueError(f"layer must be >= 0, got {layer!r}")
    return (layer * head_groups + head_group) * 2 + kv


def generation_order(tokens: int, layers: int, head_groups: int, slice_bytes: int,
                     rng: np.random.Generator | None = None) -> list[tuple[int, np.ndarray]]:
    """Slices in decode order: for each token, every layer, every head group, K then V.

    Each slice is ``(stream, data)``; ``data`` is ``slice_bytes`` random bytes from ``rng``
    (zeros without one).
    """
    for name, value in (("tokens", tokens), ("layers", layers), ("head_groups", head_groups),
                        ("slice_bytes", slice_bytes)):
        _positive(name, value)
    out = []
    for _ in range(tokens):
        for layer in range(layers):
            for hg in range(head_groups):
                for kv in (0, 1):
                    data = (rng.integers(0, 256, slice_bytes, dtype=np.uint8) if rng is not None
                            else np.zeros(slice_bytes, np.uint8))
                    out.append((stream_id(layer, hg, kv, head_groups), data))
    return out


def _slices(slices: Iterable, slice_bytes: int) -> list[tuple[int, np.ndarray]]:
    out = []
    for n, item in enumerate(slices):
        try:
            stream, data = item
        except (TypeError, ValueError):
            raise ValueError(f"slice {n} must be a (stream, data) pair, got {item!r}") from None
        if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or stream < 0:
            raise ValueError(f"slice {n}: stream must be an integer >= 0, got {stream!r}")
        arr = np.asarray(data)
        if arr.ndim != 1 or arr.size != slice_bytes:
            raise ValueError(f"slice {n}: data must be {slice_bytes} bytes (slice_bytes), "
                             f"got shape {arr.shape}")
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0
                         or arr.max() > 255):
            raise ValueError(f"slice {n}: data must be bytes (integers 0..255)")
        out.append((int(stream), arr.astype(np.uint8)))
    return out


def simulate(slices: Iterable, slots: int, page_bytes: int, slice_bytes: int,
             mapping: str = "page", policy: str = "fullest", *, flush: bool = True) -> dict:
    """Run the buffer over ``slices`` (``(stream, data)`` pairs in arrival order).

    Returns ``{"programs": [...], "counters": {...}}``. Each program is a dict: ``stream``,
    ``page``, ``valid`` (bytes), ``partial``, ``cause`` (``"full"``, ``"evict"`` or
    ``"flush"``), ``data`` (``page_bytes`` uint8, ``0xFF`` past ``valid``) and ``contents``
    (the stream of each slice in the page, in order). ``counters``: ``programs``, ``partial``,
    ``evictions``, ``flushed``, ``bytes_programmed``.
    """
    check_geometry(slots, page_bytes, slice_bytes, mapping, policy)
    items = _slices(slices, slice_bytes)
    if mapping == "naive":
        slots = 1
    # Per slot: the stream, the bytes, the slices' streams, the time of its last slice.
    owner: list[int | None] = [None] * slots
    buf = [np.full(page_bytes, ERASED, np.uint8) for _ in range(slots)]
    fill = [0] * slots
    contents: list[list[int]] = [[] for _ in range(slots)]
    used = [-1] * slots
    pages: dict[int, int] = {}
    programs: list[dict] = []

    def program(s: int, cause: str) -> None:
        stream = owner[s] if mapping == "page" else 0
        page = pages.get(stream, 0)
        pages[stream] = page + 1
        programs.append({"stream": stream, "page": page, "valid": fill[s],
                         "partial": fill[s] < page_bytes, "cause": cause,
                         "data": buf[s].copy(), "contents": tuple(contents[s])})
        owner[s], fill[s], contents[s] = None, 0, []
        buf[s][:] = ERASED

    for t, (stream, data) in enumerate(items):
        if mapping == "naive":
            s = 0
        elif stream in owner:
            s = owner.index(stream)
        elif None in owner:
            s = owner.index(None)
        else:
            if policy == "fullest":
                s = max(range(slots), key=lambda k: (fill[k], -k))
            else:
                s = min(range(slots), key=lambda k: used[k])
            program(s, "evict")
        owner[s], used[s] = stream, t
        buf[s][fill[s]:fill[s] + slice_bytes] = data
        fill[s] += slice_bytes
        contents[s].append(stream)
        if fill[s] == page_bytes:
            program(s, "full")
    if flush:
        for s in range(slots):
            if fill[s]:
                program(s, "flush")
    counters = {
        "programs": len(programs),
        "partial": sum(p["partial"] for p in programs),
        "evictions": sum(p["cause"] == "evict" for p in programs),
        "flushed": sum(p["cause"] == "flush" for p in programs),
        "bytes_programmed": len(programs) * page_bytes,
    }
    return {"programs": programs, "counters": counters}


def program_arrays(run: dict, page_bytes: int) -> dict[str, np.ndarray]:
    """A :func:`simulate` result as the output arrays of ``--op kvbuf`` (module docstring):
    ``stream``, ``page``, ``valid`` (int64), ``early`` (bool), ``cause`` (uint8 codes of
    :data:`CAUSES`), ``data`` (P, page_bytes) uint8 and ``programs`` (int64 scalar)."""
    programs = run["programs"]
    column = {key: np.array([p[key] for p in programs], np.int64)
              for key in ("stream", "page", "valid")}
    return {**column,
            "early": np.array([p["valid"] < page_bytes for p in programs], bool),
            "cause": np.array([CAUSES.index(p["cause"]) for p in programs], np.uint8),
            "data": (np.stack([p["data"] for p in programs]) if programs
                     else np.zeros((0, page_bytes), np.uint8)),
            "programs": np.int64(len(programs))}


def run_trace(streams, data, slots: int, page_bytes: int, slice_bytes: int,
              mapping: str = "page", policy: str = "fullest") -> dict[str, np.ndarray]:
    """A user's trace (``streams`` (N,), ``data`` (N, slice_bytes)) through the buffer, flushed
    at the end: :func:`program_arrays` of :func:`simulate`."""
    streams, data = np.asarray(streams), np.asarray(data)
    if streams.ndim != 1 or data.ndim != 2 or len(streams) != len(data):
        raise ValueError(f"streams (N,) and data (N, slice_bytes) must have one row per slice, "
                         f"got shapes {streams.shape} and {data.shape}")
    run = simulate(zip(streams.tolist(), data, strict=True), slots, page_bytes, slice_bytes,
                   mapping, policy)
    return program_arrays(run, page_bytes)


def pages_touched(programs: Sequence[dict], stream: int) -> int:
    """Pages a read of every slice of ``stream`` must touch: the programs holding any of them.

    Page mapping: one per page (full or cut short) of that stream; naive: every log page with
    at least one of its slices.
    """
    return sum(stream in p["contents"] for p in programs)


def compare_mappings(tokens: int, layers: int, head_groups: int, page_bytes: int,
                     slice_bytes: int, slots: int | None = None,
                     policy: str = "fullest") -> dict:
    """Page mapping against naive order on the interleaved decode order
    (:func:`generation_order`), flushed at the end.

    ``slots`` defaults to one per stream (``layers * head_groups * 2``: the paper's per-plane
    buffers, no evictions). Per mapping: the counters, and the pages a read of one stream
    touches (``touched``: a list over streams; ``mean_touched``, ``max_touched``) beside the
    least possible (``ideal``: the stream's bytes in whole pages).
    """
    streams = layers * head_groups * 2
    slots = streams if slots is None else slots
    order = generation_order(tokens, layers, head_groups, slice_bytes)
    ideal = -(-tokens * slice_bytes // page_bytes)
    out = {"streams": streams, "slots": slots, "ideal": ideal}
    for mapping in MAPPINGS:
        run = simulate(order, slots, page_bytes, slice_bytes, mapping, policy)
        touched = [pages_touched(run["programs"], s) for s in range(streams)]
        out[mapping] = {**run["counters"], "touched": touched,
                        "mean_touched": float(np.mean(touched)), "max_touched": max(touched)}
    return out


if __name__ == "__main__":   # the comparison figure: python -m memwall.golden.kvnand.kvbuf
    for slots in (None, 2):
        r = compare_mappings(tokens=16, layers=3, head_groups=2, page_bytes=64, slice_bytes=16,
                             slots=slots)
        print(f"tokens 16, 3 layers x 2 head groups ({r['streams']} streams), page 64 B, "
              f"slice 16 B, slots {r['slots']}: pages touched per stream read "
              f"(ideal {r['ideal']})")
        for mapping in MAPPINGS:
            c = r[mapping]
            print(f"  {mapping:5s}: mean {c['mean_touched']:.2f} max {c['max_touched']}; "
                  f"programs {c['programs']} (partial {c['partial']}, evictions "
                  f"{c['evictions']}, flushed {c['flushed']})")
