"""Closed-form counts of a ``pim`` schedule (the scheduler's model): every event counter and the
cycles of :func:`memwall.golden.pim.macro.simulate`, equal to it counter for counter (the tests
prove it), without walking cycles:

* activations, writes, input beats and buffer accesses are sums over tile extents and the
  number of times each weight / input tile is (re)loaded under the loop order;
* refreshes come from *burst arithmetic*. With refresh skipping, a new weight tile's rows are
  written in ``R`` consecutive cycles and the old tile is dead, so every residency starts
  alone. Because a refresh has priority and restores one row per cycle, the live rows of a
  residency are refreshed in bursts at offsets ``k * I + r`` (row ``r``) from its first write.
  Before the residency's final sweep every row is live, so a burst costs ``R`` cycles and the
  number of such bursts is a division; during the final sweep the rows already read for the
  last time are dead and their burst slots go to compute, a fixed point per burst.
* the buffer's refreshes come from every step's first and last cycle, which the residencies'
  burst arithmetic gives.

The eDRAM baseline's ``refresh="all"`` (every row the GEMM wrote, live or dead) has no such
independence between residencies; :func:`counts` walks its restore queue event by event
(writes and refreshes, never compute cycles).

For the search (:mod:`memwall.golden.pim.search`): :func:`macro_refreshes` gives a schedule's
macro refreshes from its residency kinds alone, and schedules of one :func:`timing` share one
:func:`walk` of their steps.
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache

import numpy as np

from memwall.golden.pim.macro import (
    BUFFER_COUNTERS,
    INPUT_COUNTERS,
    MACRO_COUNTERS,
    PU_LATENCY,
    REFRESH_MODES,
    TRAFFIC_COUNTERS,
    energy,
)
from memwall.golden.pim.mapping import Schedule

__all__ = ["counts", "evaluate", "walk", "timing", "macro_refreshes", "peak_psum_closed_form"]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _extent_sum(size, tile, f):
    """Sum of ``f(extent)`` over the tiles of a dimension (full tiles and the short last one);
    ``size`` an int, ``tile`` an int array, ``f`` elementwise."""
    full, rest = np.divmod(size, tile)
    return full * f(tile) + np.where(rest > 0, f(np.maximum(rest, 1)), 0)


def _static(cfg, M: int, K: int, N: int, order: str, tm, tk, tn, ones) -> dict:
    """Every counter but the refreshes, in closed form, for arrays of tile sizes (one loop
    order): a field-padded row count per tile, and how often each tile is (re)loaded."""
    tm, tk, tn = (np.asarray(t, dtype=np.int64) for t in (tm, tk, tn))
    F, P, ib = cfg.fields, cfg.planes, cfg.input_bits
    count = {"m": -(-M // tm), "k": -(-K // tk), "n": -(-N // tn)}
    # The innermost loop with more than one tile: the weight tile stays while only m moves,
    # the input tile while only n moves.
    inner = np.full(tm.shape, "", dtype="<U1")
    for dim in reversed(order):
        inner = np.where((inner == "") & (count[dim] > 1), dim, inner)

    def groups(t):
        return -(-t // F)

    rows = P * (K * _extent_sum(N, tn, groups) if cfg.row_wise
                else N * _extent_sum(K, tk, groups))
    activations = M * ib * rows
    if ones is None:
        ones = cfg.input_bit_density * M * K * ib
    sa_on = np.full(tm.shape, N * cfg.weight_bits * ones)
    loads = np.where((inner == "m") | (inner == ""), 1, count["m"])
    fills = np.where((inner == "n") | (inner == ""), 1, count["n"])
    psum = M * N * (count["k"] - 1)
    return {"activations": activations, "sa_on": sa_on,
            "sa_gated": cfg.width * activations - sa_on, "writes": loads * rows,
            "refreshes": np.zeros_like(rows), "pu_ops": activations,
            "buffer_input_fills": fills * M * K, "buffer_input_reads": M * K * count["n"],
            "buffer_psum_reads": psum, "buffer_psum_writes": psum,
            "buffer_refreshes": np.zeros_like(rows),
            "input_beats": M * count["n"] * _extent_sum(K, tk, groups),
            "weight_words": loads * K * N,
            "input_ones": np.full(tm.shape, ones, dtype=float),
            "input_bits": np.full(tm.shape, M * K * ib)}


def _static_counts(cfg, s: Schedule, ones: float | None) -> dict:
    """:func:`_static` of one schedule, as Python numbers."""
    arrays = _static(cfg, s.M, s.K, s.N, s.order, [s.tm], [s.tk], [s.tn], ones)
    return {k: v[0].item() for k, v in arrays.items()}


def peak_psum_closed_form(s: Schedule) -> int:
    """Most live partial-sum words, by loop order (equals ``pim.peak_psum_words``)."""
    return int(_peak_psum(s.order, s.M, s.N, s.tm, s.tn, s.tile_count("k")))


def _peak_psum(order: str, M: int, N: int, tm, tn, tiles_k):
    """Partial sums live at once: the outputs a k-tile boundary leaves pending."""
    pending = {"mkn": tm * N, "mnk": tm * tn, "nmk": tm * tn, "kmn": M * N + 0 * tm,
               "knm": M * N + 0 * tm, "nkm": M * tn}[order]
    return np.where(np.asarray(tiles_k) > 1, pending, 0)


# --- refresh: burst arithmetic for one residency (refresh skipping) -------------------------

@lru_cache(maxsize=65536)
def _residency(rows: int, beats: int, ib: int, interval: int, sweeps: tuple[int, ...]):
    """Refreshes and the offset (from the first write) of each step's last activation, for a
    weight tile of ``rows`` rows used by steps of ``sweeps[j]`` input rows each."""
    R, T = rows, interval                           # T: the refresh interval
    L = beats + R * ib                              # work cycles of one input row's sweep
    n = sum(sweeps)
    total = R + n * L                               # work cycles of the residency
    final = R + (n - 1) * L + beats                 # work before the final sweep's reads
    # Bursts while every row is live: burst k starts when k*T - (k-1)*R work is done.
    full = max(0, (final - R) // (T - R)) if final >= T else 0
    refreshes = full * R
    ends, done = [], R
    for count in sweeps[:-1]:
        done += count * L
        w = done - 1
        before = 0 if w < T else min(full, (w - R) // (T - R))
        ends.append(w + R * before)
    k = full + 1
    while True:                                     # bursts in the final sweep: a race
        work = k * T - refreshes
        if work >= total:
            break
        a0 = max(0, work - final)                   # final-sweep reads already done
        r = 0
        while r < (a0 + r) // ib:                   # rows already read for the last time
            r = (a0 + r) // ib
        if work + r >= total:
            break
        refreshes += R - r
        k += 1
    ends.append(total - 1 + refreshes)
    return refreshes, tuple(ends)


# --- refresh: the eDRAM baseline's restore queue, event by event ----------------------------

class _RestoreQueue:
    """Every written row is refreshed when due (``refresh="all"``) until the work ends."""

    def __init__(self, interval: int):
        self.interval, self.now, self.refreshes = interval, -1, 0
        self.queue: deque = deque()
        self.version: dict[int, int] = {}

    def _head(self):
        while self.queue and self.version.get(self.queue[0][1]) != self.queue[0][2]:
            self.queue.popleft()
        return self.queue[0] if self.queue else None

    def work(self, cycles: int) -> None:
        """``cycles`` actions; each due row first takes its cycle."""
        while cycles:
            head = self._head()
            if head is None or head[0] > self.now + cycles:
                self.now += cycles
                return
            cycles -= head[0] - self.now - 1
            self.now = head[0]
            self.queue.popleft()
            self.refreshes += 1
            self.queue.append((self.now + self.interval, head[1], head[2]))

    def write(self, row: int) -> None:
        self.work(1)
        self.version[row] = self.version.get(row, 0) + 1
        self.queue.append((self.now + self.interval, row, self.version[row]))


# --- every step's span, and the counters ----------------------------------------------------

def _nest(s: Schedule) -> np.ndarray:
    """(steps, 3) tile indices (im, ik, in) in loop-nest order (``order[0]`` outermost)."""
    shape = [s.tile_count(d) for d in s.order]
    grid = np.indices(shape).reshape(3, -1)
    return np.stack([grid[s.order.index(d)] for d in "mkn"], axis=1)


def _extent(s: Schedule, dim: str, index: np.ndarray) -> np.ndarray:
    """Extent of tile ``index`` along ``dim`` (the last tile may be short)."""
    return np.minimum(s.tile(dim), s.size(dim) - index * s.tile(dim))


def _spans(cfg, s: Schedule, refresh: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(nest, first, last): each step's tile indices and its first and last cycle; and the
    macro refreshes."""
    nest = _nest(s)
    tm_i, tk_i, tn_i = (_extent(s, d, nest[:, n]) for n, d in enumerate("mkn"))
    ib = cfg.input_bits
    interval = cfg.refresh_interval(s.vpd)
    rows = _weight_rows(cfg, tk_i, tn_i)
    beats = -(-tk_i // cfg.fields)
    new = np.ones(len(nest), dtype=bool)               # steps that load their weight tile
    new[1:] = np.any(nest[1:, 1:] != nest[:-1, 1:], axis=1)
    if refresh == "all":
        clock, last = _RestoreQueue(interval), np.empty(len(nest), dtype=np.int64)
        for i in range(len(nest)):
            R, b = int(rows[i]), int(beats[i])
            if new[i]:
                for row in range(R):
                    clock.write(row)
            clock.work(int(tm_i[i]) * (b + R * ib))
            last[i] = clock.now
        return nest, np.concatenate([[0], last[:-1] + 1]), last, clock.refreshes
    # A residency (a run of steps on one weight tile) is one step, or every m tile when m is
    # the innermost loop that moves; its outcome depends on (rows, beats, sweeps) only.
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    length = np.diff(np.append(starts, len(nest)))
    every_m = tuple(int(t) for t in _extent(s, "m", np.arange(s.tile_count("m"))))
    columns = np.stack([rows[starts], beats[starts], tm_i[starts], length], 1)
    # One int64 key per residency (mixed radix; under 2**62 at the config's limits): a 1-D
    # unique is many times faster than np.unique(axis=0) on rows.
    radix = columns.max(axis=0) + 1
    key = ((columns[:, 0] * radix[1] + columns[:, 1]) * radix[2] + columns[:, 2]) * radix[3] \
        + columns[:, 3]
    _, first_of, kind = np.unique(key, return_index=True, return_inverse=True)
    keys, kind = columns[first_of], kind.reshape(-1)
    table = np.zeros((len(keys), int(length.max())), dtype=np.int64)
    got = np.zeros(len(keys), dtype=np.int64)
    for u, (R, b, tm0, steps) in enumerate(keys.tolist()):
        sweeps = (tm0,) if steps == 1 else every_m
        if refresh == "skip":
            got[u], ends = _residency(R, b, ib, interval, sweeps)
        else:
            ends = tuple(R + np.cumsum(sweeps) * (b + R * ib) - 1)
        table[u, :steps] = ends
    cycles = table[kind, length - 1] + 1                # each residency's length
    offset = np.concatenate([[0], np.cumsum(cycles)[:-1]])
    last = offset[run] + table[kind[run], np.arange(len(nest)) - starts[run]]
    refreshes = int(got[kind].sum())
    return nest, np.concatenate([[0], last[:-1] + 1]), last, refreshes


def _buffer_lives(cfg, s: Schedule, nest, first, last, refresh: str) -> dict:
    """Refreshes per buffer row of the blocks (contract: buffer, tile granularity), summed by
    block kind: ``("input", last m tile, last k tile)`` and ``("psum", last m tile, last n
    tile)``. A block's words are set by its kind, so with :func:`_buffer_refreshes` this gives
    the buffer refreshes; and it depends on the steps' spans only, so every schedule of one
    :func:`timing` shares it."""
    if refresh == "off":
        return {}
    period = cfg.buffer_interval

    def times(life):
        return np.where(life > 0, (life - 1) // period, 0)

    def by_kind(name, flags_a, flags_b, values) -> dict:
        kinds = {}
        for a in (False, True):
            for b in (False, True):
                total = int(values[(flags_a == a) & (flags_b == b)].sum())
                if total:
                    kinds[(name, a, b)] = total
        return kinds

    last_tile = {d: s.tile_count(d) - 1 for d in "mkn"}
    # Input tiles: a block per run of consecutive steps with the same (im, ik).
    new = np.ones(len(nest), dtype=bool)
    new[1:] = np.any(nest[1:, :2] != nest[:-1, :2], axis=1)
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:] - 1, [len(nest) - 1]])
    kinds = by_kind("input", nest[starts, 0] == last_tile["m"],
                    nest[starts, 1] == last_tile["k"], times(last[ends] - first[starts] + 1))
    # Partial sums: from the end of the step that writes them to its k successor.
    position = np.empty([s.tile_count(d) for d in "mkn"], dtype=np.int64)
    position[nest[:, 0], nest[:, 1], nest[:, 2]] = np.arange(len(nest))
    writers = np.flatnonzero(nest[:, 1] < last_tile["k"])
    readers = position[nest[writers, 0], nest[writers, 1] + 1, nest[writers, 2]]
    life = (last[readers] - last[writers]) if refresh == "all" \
        else (first[readers] - last[writers] - 1)
    return kinds | by_kind("psum", nest[writers, 0] == last_tile["m"],
                           nest[writers, 2] == last_tile["n"], times(life))


def _buffer_refreshes(cfg, s: Schedule, lives: dict) -> int:
    """Buffer rows refreshed: per block kind of :func:`_buffer_lives`, its rows (its words,
    full or last tile extents, over ``buffer_row_words``) times its refreshes per row."""
    def extent(dim: str, last: bool) -> int:
        return s.size(dim) - (s.tile_count(dim) - 1) * s.tile(dim) if last else s.tile(dim)

    total = 0
    for (name, m_last, other_last), times in lives.items():
        words = extent("m", m_last) * extent("k" if name == "input" else "n", other_last)
        total += -(-words // cfg.buffer_row_words) * times
    return total


def _tiles(size: int, tile: int) -> tuple[tuple[int, int], ...]:
    """(extent, how many tiles have it) along a dimension: the full tiles and the last one."""
    count = -(-size // tile)
    return ((tile, count - 1), (size - (count - 1) * tile, 1)) if count > 1 \
        else ((size, 1),)


def macro_refreshes(cfg, s: Schedule) -> int:
    """The macro refreshes of ``s`` under refresh skipping from its residency kinds alone, no
    step walk (equals ``counts(cfg, s)["refreshes"]``; the search's bound of one schedule).

    A residency is every m tile of one weight tile when m is the innermost loop that moves
    (or nothing moves), else one step; its refreshes depend on its rows, beats and sweeps
    only (:func:`_residency`), and its rows and beats on its (k, n) tile extents."""
    return _macro_refreshes(cfg, s.M, s.K, s.N, s.order, s.tm, s.tk, s.tn,
                            cfg.refresh_interval(s.vpd))


def _macro_refreshes(cfg, M: int, K: int, N: int, order: str, tm: int, tk: int, tn: int,
                     interval: int) -> int:
    """:func:`macro_refreshes` on plain ints (the search calls it for every member)."""
    tiles = {"m": _tiles(M, tm), "k": _tiles(K, tk), "n": _tiles(N, tn)}
    inner = next((d for d in reversed(order) if len(tiles[d]) > 1), "m")   # moves: > 1 tile
    F, P = cfg.fields, cfg.planes
    total = 0
    for tk_i, nk in tiles["k"]:
        for tn_i, nn in tiles["n"]:
            rows = P * (tk_i * -(-tn_i // F) if cfg.row_wise else tn_i * -(-tk_i // F))
            total += nk * nn * _weight_tile_refreshes(rows, -(-tk_i // F), cfg.input_bits,
                                                      interval, M, tm, inner == "m")
    return total


@lru_cache(maxsize=65536)
def _weight_tile_refreshes(rows: int, beats: int, ib: int, interval: int, M: int, tm: int,
                           whole_m: bool) -> int:
    """Refreshes of one weight tile over the GEMM: one residency of every m tile
    (``whole_m``), or one residency per m tile."""
    tiles = _tiles(M, tm)
    if whole_m:
        sweeps = tuple(extent for extent, many in tiles for _ in range(many))
        return _residency(rows, beats, ib, interval, sweeps)[0]
    return sum(many * _residency(rows, beats, ib, interval, (extent,))[0]
               for extent, many in tiles)


def timing(cfg, s: Schedule) -> tuple:
    """What the cycles of ``s`` depend on: two schedules with one ``timing`` have the same
    steps, each step the same first and last cycle, and the same macro refreshes.

    :func:`_spans` reads a schedule through its loop nest (order and tile counts), its VPD
    level (the refresh interval) and, per step, the input rows ``tm_i``, the weight tile's
    rows and its input beats. Rows and beats see the extents on the dimension a row's fields
    run over only through their field groups ``ceil(t_i / F)`` (row-wise ``P * tk_i *
    ceil(tn_i / F)`` rows, ``ceil(tk_i / F)`` beats; dot-product ``P * tn_i * ceil(tk_i / F)``
    rows and the same beats), and every tile but the last has the full extent."""
    return _timing(cfg, s.M, s.K, s.N, s.order, s.tm, s.tk, s.tn, s.vpd)


def _timing(cfg, M: int, K: int, N: int, order: str, tm: int, tk: int, tn: int,
            vpd: int) -> tuple:
    """:func:`timing` on plain ints (the search calls it for every member)."""
    F = cfg.fields
    key = [order, vpd]
    for size, tile, fields in ((M, tm, False), (K, tk, not cfg.row_wise),
                               (N, tn, cfg.row_wise)):
        last = size - (-(-size // tile) - 1) * tile
        key += [-(-size // tile), -(-tile // F), -(-last // F)] if fields else [tile, last]
    return tuple(key)


def walk(cfg, s: Schedule, refresh: str = "skip") -> tuple:
    """What the walk of the steps of ``s`` gives: its cycles, its macro refreshes and its
    buffer blocks' lives (:func:`_buffer_lives`). Every schedule of the same :func:`timing`
    has the same walk (the search walks once per timing)."""
    nest, first, last, refreshes = _spans(cfg, s, refresh)
    return (int(last[-1]) + 1 + PU_LATENCY, refreshes,
            _buffer_lives(cfg, s, nest, first, last, refresh))


def counts(cfg, s: Schedule, *, ones: float | None = None, refresh: str = "skip",
           walked: tuple | None = None) -> dict:
    """The event counters and cycles of ``s`` without simulating its cycles.

    ``ones``: 1 bits of A as ``ib``-bit patterns (default: ``input_bit_density`` of all bits).
    Equals :func:`memwall.golden.pim.macro.simulate` counter for counter (its tests prove it).
    ``walked``: :func:`walk` of a schedule of the same :func:`timing` and refresh mode, to
    reuse (the search does, for the members of a class that differ only in buffer words).
    """
    if refresh not in REFRESH_MODES:
        raise ValueError(f"refresh {refresh!r}; allowed: {', '.join(REFRESH_MODES)}")
    result = _static_counts(cfg, s, ones)
    cycles, result["refreshes"], lives = walk(cfg, s, refresh) if walked is None else walked
    result["buffer_refreshes"] = _buffer_refreshes(cfg, s, lives)
    result["cycles"] = cycles
    return result


def evaluate(cfg, s: Schedule, *, ones: float | None = None, gating: bool = True,
             refresh: str = "skip", walked: tuple | None = None) -> dict:
    """``{"schedule", "counters", "cycles", "energy"}`` of one schedule (``walked``: as
    :func:`counts` takes it)."""
    c = counts(cfg, s, ones=ones, refresh=refresh, walked=walked)
    if not gating:      # every sense amp of an activation is on
        c["sa_on"], c["sa_gated"] = cfg.width * c["activations"], 0
    return {"schedule": s, "counters": {k: c[k] for k in MACRO_COUNTERS + BUFFER_COUNTERS
                                        + TRAFFIC_COUNTERS + ("input_beats",)
                                        + INPUT_COUNTERS},
            "cycles": c["cycles"], "energy": energy(cfg, c, gating=gating, vpd=s.vpd),
            "refresh": refresh, "gating": gating}


# --- helpers -------------------------------------------------------------------------------

def _weight_rows(cfg, tk, tn):
    """Macro rows a weight tile of ``tk`` x ``tn`` takes (ints or arrays): field-padded, one
    bit-plane each."""
    F, P = cfg.fields, cfg.planes
    return P * (tk * -(-tn // F) if cfg.row_wise else tn * -(-tk // F))


def _steps(M: int, K: int, N: int, tm, tk, tn):
    """Steps of the loop nest of each candidate (its tiles: m x k x n)."""
    return -(-M // tm) * (-(-K // tk)) * (-(-N // tn))
