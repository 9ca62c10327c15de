"""The ``pim`` family's retention-aware scheduler: closed-form counts of a schedule, a search over
tilings x loop orders x VPD levels proven against the event simulator, and the comparison with
the eDRAM and SRAM (Neural-Cache-like) baselines.

Counts (:func:`counts`) follow the contract in :mod:`memwall.golden.pim.macro` without walking
cycles:

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

Search space (decision; the paper says "tiling schemes"): per dimension ``D``, the tile sizes
``ceil(D / c)`` for every tile count ``c`` (the most even tiling for each count), and, on the
dimension a row's fields run over (``n`` row-wise, ``k`` dot-product), every multiple of
``fields`` (no padded fields); every loop order of :data:`ORDERS`; every VPD level of the
macro table; kept when the schedule fits (:func:`memwall.golden.pim.macro.fits`). The minimum is
found by branch and bound on a refresh-free lower bound: a schedule's energy without any
refresh is exact for everything else and no refresh costs negative energy, so once the
bound of the next candidate exceeds the best exact energy no later candidate can win. Ties are
broken by (energy, cycles, order index, tm, tk, tn, vpd).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from functools import lru_cache

import numpy as np

from memwall.families.pim.config import ORDERS
from memwall.golden.pim.macro import (
    BUFFER_COUNTERS,
    MACRO_COUNTERS,
    PU_LATENCY,
    REFRESH_MODES,
    energy,
)
from memwall.golden.pim.mapping import Schedule
from memwall.inputs import InputError

__all__ = ["counts", "evaluate", "search", "compare", "candidates", "tile_sizes",
           "peak_psum_closed_form", "sram_energy", "run_json", "as_json", "format_report",
           "NoSchedule", "SearchTooLarge", "SearchBound", "DEFAULT_BOUND"]


class NoSchedule(InputError, ValueError):
    """No schedule of the GEMM fits the config's macro and buffer: bad input (exit 2)."""


class SearchTooLarge(InputError, ValueError):
    """The search would pass its work bound (:class:`SearchBound`): bad input (exit 2), with
    the estimate."""


@dataclasses.dataclass(frozen=True)
class SearchBound:
    """What one :func:`search` may cost, checked before the work it bounds.

    The search walks the tile grid in chunks (:data:`CHUNK`), in pools of candidates taken in
    bound order (:func:`search`), so its memory does not grow with their number. Measured
    here: about 0.6 µs a candidate a pass over the grid, and an exact evaluation about
    1.6-3.5 µs and 214 bytes a step (a step: one (m, k, n) tile of the loop nest).

    ``candidates``: the grid's size times the VPD levels, counted first; ``eval_steps``: the
    steps of the largest exact evaluation (its memory); ``search_steps``: the steps of every
    evaluation the search may make, plus :data:`EVAL_OVERHEAD_STEPS` each (its time; shared by
    the two searches of :func:`compare`). None: unbounded (the report's paper workloads).
    """
    candidates: int | None = 8_000_000
    eval_steps: int | None = 1 << 23
    search_steps: int | None = 6_000_000

    @classmethod
    def allowing(cls, steps: int) -> SearchBound:
        """``--max-search-steps``: ``steps`` for the search and for one evaluation in it, and
        as many candidates (at least the default's)."""
        return cls(candidates=max(cls.candidates, steps), eval_steps=steps, search_steps=steps)


#: The bound of the CLI's searches: within a minute and 2 GiB here.
DEFAULT_BOUND = SearchBound()
UNBOUNDED = SearchBound(None, None, None)
#: Candidates a chunk of the grid walk holds.
CHUNK = 1 << 20
#: An exact evaluation's fixed cost, in steps (about 1 ms).
EVAL_OVERHEAD_STEPS = 500


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
            "input_beats": M * count["n"] * _extent_sum(K, tk, groups)}


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
    keys, kind = np.unique(np.stack([rows[starts], beats[starts], tm_i[starts], length], 1),
                           axis=0, return_inverse=True)
    kind = kind.reshape(-1)
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


def _buffer_refreshes(cfg, s: Schedule, nest, first, last, refresh: str) -> int:
    """Buffer rows refreshed, from the steps' spans (contract: buffer, tile granularity)."""
    if refresh == "off":
        return 0
    period, row_words = cfg.buffer_interval, cfg.buffer_row_words

    def rows_times(words, life):
        return int(np.sum(np.where(life > 0, -(-words // row_words) * ((life - 1) // period),
                                   0)))

    tm_i, tk_i, tn_i = (_extent(s, d, nest[:, n]) for n, d in enumerate("mkn"))
    # Input tiles: a block per run of consecutive steps with the same (im, ik).
    new = np.ones(len(nest), dtype=bool)
    new[1:] = np.any(nest[1:, :2] != nest[:-1, :2], axis=1)
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:] - 1, [len(nest) - 1]])
    total = rows_times(tm_i[starts] * tk_i[starts], last[ends] - first[starts] + 1)
    # Partial sums: from the end of the step that writes them to its k successor.
    position = np.empty([s.tile_count(d) for d in "mkn"], dtype=np.int64)
    position[nest[:, 0], nest[:, 1], nest[:, 2]] = np.arange(len(nest))
    writers = np.flatnonzero(nest[:, 1] < s.tile_count("k") - 1)
    readers = position[nest[writers, 0], nest[writers, 1] + 1, nest[writers, 2]]
    life = (last[readers] - last[writers]) if refresh == "all" \
        else (first[readers] - last[writers] - 1)
    return total + rows_times(tm_i[writers] * tn_i[writers], life)


def counts(cfg, s: Schedule, *, ones: float | None = None, refresh: str = "skip") -> dict:
    """The event counters and cycles of ``s`` without simulating its cycles.

    ``ones``: 1 bits of A as ``ib``-bit patterns (default: ``input_bit_density`` of all bits).
    Equals :func:`memwall.golden.pim.macro.simulate` counter for counter (its tests prove it).
    """
    if refresh not in REFRESH_MODES:
        raise ValueError(f"refresh {refresh!r}; allowed: {', '.join(REFRESH_MODES)}")
    result = _static_counts(cfg, s, ones)
    nest, first, last, result["refreshes"] = _spans(cfg, s, refresh)
    result["buffer_refreshes"] = _buffer_refreshes(cfg, s, nest, first, last, refresh)
    result["cycles"] = int(last[-1]) + 1 + PU_LATENCY
    return result


def sram_energy(cfg, c: dict) -> dict:
    """The Neural-Cache-like SRAM baseline on the same counters (pJ): 6T arrays of the same
    geometry, every sense amp on, no refresh in the macro or the buffer; the PU and buffer
    accesses as :func:`memwall.golden.pim.macro.energy` charges them."""
    S = cfg.subarray_count
    parts = energy(cfg, c, gating=False, vpd=0)
    parts.update(pim_access=S * c["activations"] * cfg.sram_e_access_pj,
                 pim_sense=cfg.width * c["activations"] * cfg.sram_e_sense_pj,
                 pim_write=S * c["writes"] * cfg.sram_e_write_pj, pim_refresh=0.0,
                 buffer_refresh=0.0)
    del parts["total"]
    parts["total"] = sum(parts.values())
    return parts


def evaluate(cfg, s: Schedule, *, ones: float | None = None, gating: bool = True,
             refresh: str = "skip") -> dict:
    """``{"schedule", "counters", "cycles", "energy"}`` of one schedule."""
    c = counts(cfg, s, ones=ones, refresh=refresh)
    if not gating:      # every sense amp of an activation is on
        c["sa_on"], c["sa_gated"] = cfg.width * c["activations"], 0
    return {"schedule": s, "counters": {k: c[k] for k in MACRO_COUNTERS + BUFFER_COUNTERS
                                        + ("input_beats",)},
            "cycles": c["cycles"], "energy": energy(cfg, c, gating=gating, vpd=s.vpd),
            "refresh": refresh, "gating": gating}


# --- the search -----------------------------------------------------------------------------

def tile_sizes(size: int, align: int | None = None) -> list[int]:
    """Candidate tile sizes along a dimension of ``size``: ``ceil(size / c)`` for every count
    ``c``, and every multiple of ``align`` up to ``size``."""
    if size <= 1 << 16:
        sizes = {_ceil(size, c) for c in range(1, size + 1)}
    else:                   # the counts past sqrt(size) give sizes up to sqrt(size): take them all
        root = math.isqrt(size)
        sizes = {_ceil(size, c) for c in range(1, root + 2)} | set(range(1, root + 2))
    if align:
        sizes |= set(range(align, size + 1, align))
    return sorted(t for t in sizes if 1 <= t <= size)


def _key(e: dict) -> tuple:
    s = e["schedule"]
    return (e["energy"]["total"], e["cycles"], s.order_code, s.tm, s.tk, s.tn, s.vpd)


def _weight_rows(cfg, tk, tn):
    """Macro rows a weight tile of ``tk`` x ``tn`` takes (ints or arrays): field-padded, one
    bit-plane each."""
    F, P = cfg.fields, cfg.planes
    return P * (tk * -(-tn // F) if cfg.row_wise else tn * -(-tk // F))


def _pairs(cfg, K: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """The (tk, tn) tile pairs whose weight tile fits the macro's rows and input beats."""
    tk, tn = np.meshgrid(tile_sizes(K, None if cfg.row_wise else cfg.fields),
                         tile_sizes(N, cfg.fields if cfg.row_wise else None), indexing="ij")
    tk, tn = tk.ravel().astype(np.int64), tn.ravel().astype(np.int64)
    keep = (_weight_rows(cfg, tk, tn) <= cfg.rows) & (-(-tk // cfg.fields) <= cfg.input_beats)
    return tk[keep], tn[keep]


def _chunks(cfg, M: int, K: int, N: int):
    """The search space that fits, as ``(order code, order, tm, tk, tn)`` arrays of at most
    about :data:`CHUNK` candidates each (every order, tm-major)."""
    tk0, tn0 = _pairs(cfg, K, N)
    tms = np.asarray(tile_sizes(M), dtype=np.int64)
    per = max(1, CHUNK // max(1, len(tk0)))
    for code, order in enumerate(ORDERS):
        for start in range(0, len(tms), per):
            part = tms[start:start + per]
            tm = np.repeat(part, len(tk0))
            tk, tn = np.tile(tk0, len(part)), np.tile(tn0, len(part))
            need = tm * tk * cfg.input_bits \
                + _peak_psum(order, M, N, tm, tn, -(-K // tk)) * cfg.acc_bits
            fit = need <= cfg.buffer_bits
            yield code, order, tm[fit], tk[fit], tn[fit]


def _grid(cfg, M: int, K: int, N: int) -> dict[str, tuple[np.ndarray, ...]]:
    """Per loop order, the (tm, tk, tn) arrays of the search space that fit (whole: for
    small GEMMs and the tests)."""
    parts: dict[str, list] = {order: [] for order in ORDERS}
    for _code, order, tm, tk, tn in _chunks(cfg, M, K, N):
        parts[order].append((tm, tk, tn))
    return {order: tuple(np.concatenate(column) for column in zip(*chunks, strict=True))
            for order, chunks in parts.items()}


def candidates(cfg, M: int, K: int, N: int, levels=None) -> list[Schedule]:
    """Every schedule of the search space that fits, in a fixed order."""
    levels = range(cfg.levels) if levels is None else levels
    return [Schedule(M, K, N, int(a), int(b), int(c), order, v)
            for order, (tm, tk, tn) in _grid(cfg, M, K, N).items()
            for a, b, c in zip(tm, tk, tn, strict=True) for v in levels]


def _bounded_chunks(cfg, M, K, N, levels, ones, gating):
    """Per chunk of :func:`_chunks`, the refresh-free energy of its candidates at every VPD
    level (exact but for the refreshes, which only add), as arrays: bound, order index, tm,
    tk, tn, vpd."""
    for code, order, tm, tk, tn in _chunks(cfg, M, K, N):
        if not len(tm):
            continue
        c = _static(cfg, M, K, N, order, tm, tk, tn, ones)
        for v in levels:
            bound = energy(cfg, c, gating=gating, vpd=v)["total"]
            yield (np.asarray(bound, np.float64), np.full(len(tm), code), tm, tk, tn,
                   np.full(len(tm), v))


def _steps(M: int, K: int, N: int, tm, tk, tn):
    """Steps of the loop nest of each candidate (its tiles: m x k x n)."""
    return -(-M // tm) * (-(-K // tk)) * (-(-N // tn))


def _count(cfg, M: int, K: int, N: int) -> int:
    """Candidates of the search space that fit (one VPD level), without their energies."""
    return sum(len(tm) for _c, _o, tm, _k, _n in _chunks(cfg, M, K, N))


def _too_large(what: str, M: int, K: int, N: int, cfg, estimate: str) -> SearchTooLarge:
    return SearchTooLarge(f"the schedule search of {M}x{K}x{N} on config {cfg.name} {what} "
                          f"({estimate}); a smaller GEMM, or --max-search-steps to allow it")


def _smallest_bound(cfg, M, K, N, levels, ones, gating, above: float, count: int) -> float:
    """The ``count``-th smallest bound above ``above`` (inf if fewer), streaming: at most
    ``count`` + a chunk of bounds held at once."""
    kept = np.empty(0)
    for bounds, *_ in _bounded_chunks(cfg, M, K, N, levels, ones, gating):
        kept = np.concatenate([kept, bounds[bounds > above]])
        if len(kept) > count:
            kept = np.partition(kept, count - 1)[:count]
    return float(kept.max()) if len(kept) >= count else np.inf


def _pool(cfg, M, K, N, levels, ones, gating, above: float, upto: float):
    """The candidates whose bound is in (above, upto], in search order (bound, order, tm, tk,
    tn, VPD): arrays bound, order index, tm, tk, tn, vpd."""
    parts = [tuple(column[(a[0] > above) & (a[0] <= upto)] for column in a)
             for a in _bounded_chunks(cfg, M, K, N, levels, ones, gating)]
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    order = np.lexsort(tuple(reversed(columns)))
    return [column[order] for column in columns]


def search(cfg, M: int, K: int, N: int, *, ones: float | None = None, levels=None,
           gating: bool = True, refresh: str = "skip",
           bound: SearchBound = UNBOUNDED) -> dict:
    """The minimum-energy schedule: :func:`evaluate`'s result plus ``searched`` (candidates),
    ``evaluated`` (exact evaluations after pruning) and ``seconds``.

    Candidates are evaluated exactly in the order of their refresh-free energy bound (ties:
    order, tm, tk, tn, VPD) until the next bound is above the best energy found: none after
    it can be better. The order is walked in pools of about :data:`CHUNK` candidates (each
    pool: two streaming passes over the grid), so memory does not grow with the number of
    candidates. ``bound`` (:class:`SearchBound`): the candidates are counted first, and a
    search of more is refused before any work; each evaluation's steps are checked before
    it runs, and a search whose evaluations pass ``search_steps`` stops there, saying how
    many candidates were still left. ``refresh="off"`` makes it a retention-unaware
    scheduler (the bound is then exact)."""
    begin = time.perf_counter()
    levels = list(range(cfg.levels)) if levels is None else list(levels)
    searched = _count(cfg, M, K, N) * len(levels)
    if not searched:
        raise NoSchedule(f"no schedule of {M}x{K}x{N} fits config {cfg.name}: the macro has "
                         f"{cfg.rows} rows, the buffer {cfg.buffer_bits} bits (a larger "
                         f"buffer_kib or more rows fits more)")
    if bound.candidates is not None and searched > bound.candidates:
        raise _too_large(f"has {searched:,} candidates, past its bound of "
                         f"{bound.candidates:,}", M, K, N, cfg,
                         f"about {2 * 0.6e-6 * searched:.0f} s a pass over them")
    best, evaluated, work, above, done = None, 0, 0, -np.inf, False
    while not done:
        upto = _smallest_bound(cfg, M, K, N, levels, ones, gating, above, CHUNK)
        bounds, code, tm, tk, tn, vpd = _pool(cfg, M, K, N, levels, ones, gating, above, upto)
        steps = _steps(M, K, N, tm, tk, tn)
        done, above = not np.isfinite(upto), upto   # the last pool holds every candidate left
        for i in range(len(bounds)):
            if best is not None and bounds[i] > best["energy"]["total"]:
                done = True   # no candidate after this one can be better
                break
            if bound.eval_steps is not None and steps[i] > bound.eval_steps:
                raise _too_large(f"reached a schedule of {int(steps[i]):,} steps, past its "
                                 f"bound of {bound.eval_steps:,} for one evaluation", M, K, N,
                                 cfg, f"about {steps[i] * 214 / 2**30:.1f} GiB for it")
            work += int(steps[i]) + EVAL_OVERHEAD_STEPS
            if bound.search_steps is not None and work > bound.search_steps:
                left = int(np.sum(bounds[i:] <= best["energy"]["total"]))
                raise _too_large(f"passed its bound of {bound.search_steps:,} steps after "
                                 f"{evaluated:,} exact evaluations, with at least {left:,} "
                                 "candidates still to evaluate", M, K, N, cfg,
                                 f"{time.perf_counter() - begin:.0f} s so far")
            s = Schedule(M, K, N, int(tm[i]), int(tk[i]), int(tn[i]), ORDERS[int(code[i])],
                         int(vpd[i]))
            e = evaluate(cfg, s, ones=ones, gating=gating, refresh=refresh)
            evaluated += 1
            if best is None or _key(e) < _key(best):
                best = e
    best.update(searched=searched, evaluated=evaluated, work_steps=work,
                seconds=time.perf_counter() - begin)
    return best


# --- baselines and ablation -----------------------------------------------------------------

def compare(cfg, M: int, K: int, N: int, *, ones: float | None = None,
            bound: SearchBound = UNBOUNDED) -> dict:
    """The proposed schedule, the two baselines and the feature ablation of one GEMM.

    * eDRAM baseline: a retention-unaware scheduler (the minimum of the refresh-free energy at
      VPD = VSS, no gating), VPD = VSS, every written row refreshed every interval.
    * ablation, each step on top of the last: + refresh skipping (same schedule), + VPD choice
      (best level for that schedule), + sense-amp gating, + retention-aware schedule search
      (the proposed result). Each step takes a minimum over a set holding the previous step's
      choice, so energy never increases along it.
    * Neural-Cache-like SRAM: the proposed schedule's counters on 6T SRAM (:func:`sram_energy`).
    """
    naive_search = search(cfg, M, K, N, ones=ones, levels=[0], gating=False, refresh="off",
                          bound=bound)
    naive = naive_search["schedule"]
    if bound.search_steps is not None:   # one budget for both searches and the baselines
        # The eDRAM baseline walks every row write and every refresh of the naive schedule
        # in Python (refresh "all"): at most its cycles / interval x the rows written, each
        # charged as a step; then it is evaluated at each VPD level and gated.
        tiles = int(_steps(M, K, N, naive.tm, naive.tk, naive.tn))
        written = tiles * int(_weight_rows(cfg, naive.tk, naive.tn))
        cycles = counts(cfg, naive, ones=ones, refresh="off")["cycles"]
        refreshes = cycles // cfg.refresh_interval(0) * min(cfg.rows, written)
        baselines = written + refreshes + (cfg.levels + 2) * (tiles + EVAL_OVERHEAD_STEPS)
        left = bound.search_steps - naive_search["work_steps"] - baselines
        if left <= 0:
            raise _too_large(f"needs about {baselines:,} steps for the eDRAM baseline of its "
                             f"naive schedule ({tiles:,} tiles, up to {refreshes:,} row "
                             f"refreshes walked), past its bound of {bound.search_steps:,}",
                             M, K, N, cfg, f"{cycles:,} cycles")
        bound = dataclasses.replace(bound, search_steps=left)
    base = evaluate(cfg, naive, ones=ones, gating=False, refresh="all")
    skip = evaluate(cfg, naive, ones=ones, gating=False)
    vpd = min((evaluate(cfg, dataclasses.replace(naive, vpd=v), ones=ones, gating=False)
               for v in range(cfg.levels)), key=_key)
    gated = evaluate(cfg, vpd["schedule"], ones=ones)
    best = search(cfg, M, K, N, ones=ones, bound=bound)
    sram = sram_energy(cfg, best["counters"])
    steps = [("eDRAM baseline", base), ("+ refresh skipping", skip), ("+ VPD choice", vpd),
             ("+ sense-amp gating", gated), ("+ retention-aware schedule", best)]
    macro = ("pim_access", "pim_sense", "pim_write", "pim_refresh")
    return {"gemm": (M, K, N), "config": cfg.name, "proposed": best, "edram_baseline": base,
            "sram_energy": sram, "ablation": steps,
            "vs_edram": base["energy"]["total"] / best["energy"]["total"],
            "vs_sram": sram["total"] / best["energy"]["total"],
            "macro_saving_vs_edram": 1 - sum(best["energy"][k] for k in macro)
            / sum(base["energy"][k] for k in macro)}


def run_json(e: dict) -> dict:
    """One :func:`evaluate` result as JSON: schedule, cycles, counters, energy (pJ)."""
    return {"schedule": dataclasses.asdict(e["schedule"]), "cycles": int(e["cycles"]),
            "counters": {k: float(v) if isinstance(v, float) else int(v)
                         for k, v in e["counters"].items()},
            "energy_pj": {k: float(v) for k, v in e["energy"].items()}}


def as_json(result: dict) -> dict:
    best = result["proposed"]
    return {"config": result["config"], "gemm": dict(zip("MKN", result["gemm"], strict=True)),
            "proposed": run_json(best), "edram_baseline": run_json(result["edram_baseline"]),
            "sram_baseline_energy_pj": {k: float(v) for k, v in result["sram_energy"].items()},
            "ablation": [{"step": name, "energy_pj": float(e["energy"]["total"]),
                          "schedule": dataclasses.asdict(e["schedule"])}
                         for name, e in result["ablation"]],
            "ratios": {"vs_edram": result["vs_edram"], "vs_sram": result["vs_sram"],
                       "macro_saving_vs_edram": result["macro_saving_vs_edram"]},
            "search": {"candidates": best["searched"], "evaluated": best["evaluated"],
                       "seconds": best["seconds"]}}


def format_report(result: dict) -> str:
    best, base = result["proposed"], result["edram_baseline"]
    s = best["schedule"]
    M, K, N = result["gemm"]
    lines = [f"GEMM {M}x{K}x{N} on {result['config']}",
             f"schedule: order {s.order}, tiles tm={s.tm} tk={s.tk} tn={s.tn}, VPD level "
             f"{s.vpd}; {best['cycles']:,} cycles",
             f"search: {best['searched']:,} candidates, {best['evaluated']:,} evaluated "
             f"exactly, {best['seconds']:.3f} s", "", "energy (pJ)      proposed   eDRAM base"
             "   SRAM (NC)"]
    for part in best["energy"]:
        lines.append(f"  {part:<14}{best['energy'][part]:>11.1f}{base['energy'][part]:>13.1f}"
                     f"{result['sram_energy'][part]:>12.1f}")
    lines += ["", "counters         proposed   eDRAM base"]
    for name, value in best["counters"].items():
        lines.append(f"  {name:<20}{value:>11,.0f}{base['counters'][name]:>13,.0f}")
    lines += ["", "ablation (pJ)"]
    for name, e in result["ablation"]:
        lines.append(f"  {name:<30}{e['energy']['total']:>13.1f}")
    lines += ["", f"{result['vs_edram']:.2f}x less energy than the eDRAM baseline, "
              f"{result['vs_sram']:.2f}x less than Neural-Cache-like SRAM; eDRAM macro energy "
              f"{100 * result['macro_saving_vs_edram']:.1f} % below the baseline's"]
    return "\n".join(lines)
