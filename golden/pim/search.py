"""The ``pim`` family's schedule search (the paper's Steps 1-4, "find all possible tiling
schemes", then the one of least energy): the minimum-energy schedule of a GEMM over every
schedule that fits, by branch and bound on a refresh-free lower bound.

Space. Every tile size ``tm`` in 1..M, ``tk`` in 1..K, ``tn`` in 1..N, every loop order of
:data:`ORDERS`, every VPD level of the macro table; a schedule is in the space when it fits
(:func:`memwall.golden.pim.mapping.fits`). No tile size is left out.

Classes. A schedule's energy is its refresh-free energy ``E0`` (activations, sense amps, row
writes, buffer reads and writes, and the logic's energy over the refresh-free cycles: one per
write, input beat and activation: exact) plus the energy of its macro and buffer refreshes
(never negative; a macro refresh's includes its cycle of logic energy and leakage). The
refresh-free counters (:func:`memwall.golden.pim.closed_form._static`) depend on the tile sizes
only through

* the tile counts ``c_m, c_k, c_n`` (``c = ceil(D / t)``: loads, fills, input and partial-sum
  traffic, and which loop is the innermost that moves), and
* on the dimension a row's fields run over (``n`` row-wise, ``k`` dot-product), the field
  groups of its tiles, ``G = sum_i ceil(t_i / F)`` over the tiles' extents (the rows every
  activation and every write walks: ``P * K * G`` row-wise, ``P * N * G`` dot-product), and
* on ``k``, the input beats ``B = sum_i ceil(tk_i / F)`` (each a cycle of logic energy; the
  dot-product's ``G``).

So the schedules with one (order, VPD, ``c_m``, ``c_k``, ``c_n``, ``G``, ``B``) form a *class*
whose members share ``E0``. Members differ only in how their tiles' extents place the refreshes
(the counterexample of the old "most even tiling per count" rule: 2x11x10, dot-product, tn = 6
(tiles 6 + 4) refreshes 10 rows where tn = 5 (5 + 5) refreshes 12, same ``E0``).

Search. Classes are walked in increasing ``E0`` (ties: order, smallest tm, tk, tn, VPD) until
the first class whose ``E0`` is above the best energy found. In a class reached, each fitting
member gets its own bound ``E1 = E0 +`` the energy of its macro refreshes, which are exact in
closed form from its residency kinds (:func:`~memwall.golden.pim.closed_form.
macro_refreshes`); only the buffer's refreshes (never negative) are left out. Members whose
``E1`` is above the best are dropped; the others are evaluated exactly (:func:`~memwall.
golden.pim.closed_form.evaluate`, equal to the event simulator) in increasing ``E1``. Members
of one *timing* (:func:`~memwall.golden.pim.closed_form.timing`: the same tile counts, m and
non-field extents, and field groups of the fields dimension's full and last tile) have the
same step cycles and macro refreshes and differ only in their buffer blocks' words, so one
walk of the steps (:func:`~memwall.golden.pim.closed_form.walk`) gives each its exact
counters.

Proof that the result is the minimum over the whole space, ties broken by (energy, cycles,
order index, tm, tk, tn, VPD). Every schedule that fits is a member of exactly one class. One
that is not evaluated exactly is in a class not reached, so its energy >= its class's ``E0`` >
the best energy found, or was dropped by its own bound, so its energy >= ``E1`` > the best.
Either way its energy is strictly above the result's: it can neither beat nor tie it. Every
other schedule that fits is evaluated exactly, and the result is the least key among them.
Floating point: ``E0`` is the exact energy's sum with the refresh terms at zero (same terms,
same order), so it is never rounded above it; ``E1`` adds a term in another order, a few ulps
off, so a member is dropped only when ``E1`` passes the best by the factor :data:`SLACK`.
Nothing is pruned by any other rule; in particular no tile size is left out because another
tiling with the same tile count is more even (the 2x11x10 counterexample above).

Fit. Every rule of ``fits`` is monotone in each tile size with the tile counts fixed: a larger
tile never takes fewer macro rows or input beats (the full tile is the largest), nor fewer
buffer bits (input tile ``tm * tk``; the peak partial sums, ``tm * N``, ``tm * tn``, ``M * N`` or
``M * tn`` by loop order once ``c_k > 1``). So a class has a fitting member iff its smallest
member on each dimension fits (the walk checks only those), and its fitting members are a
down-set (the expansion stops at the first misfit of each loop).

Cost. The walk passes over classes, not schedules: per dimension about ``2 sqrt(D)`` tile
counts (and, on the fields dimension, their field groups), so the classes number about what
the old restricted grid's candidates did, while the schedules number up to ``M x K x N x 6 x
levels`` (:func:`space_size`). The classes are counted before any walk, from per-dimension
tables, for the :class:`SearchBound`; the exact evaluations are one step walk per timing
reached, plus a sum over buffer block kinds per member.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from memwall.families.pim.config import ORDERS
from memwall.golden.pim import closed_form
from memwall.golden.pim.macro import (
    BUFFER_COUNTERS,
    INPUT_COUNTERS,
    MACRO_COUNTERS,
    TRAFFIC_COUNTERS,
    energy,
)
from memwall.golden.pim.mapping import Schedule
from memwall.inputs import InputError

__all__ = ["search", "candidates", "tile_classes", "space_size", "NoSchedule",
           "SearchTooLarge", "SearchBound", "DEFAULT_BOUND", "UNBOUNDED", "CHUNK",
           "EVAL_OVERHEAD_STEPS"]


class NoSchedule(InputError, ValueError):
    """No schedule of the GEMM fits the config's macro and buffer: bad input (exit 2)."""


class SearchTooLarge(InputError, ValueError):
    """The search would pass its work bound (:class:`SearchBound`): bad input (exit 2), with
    the estimate."""


@dataclasses.dataclass(frozen=True)
class SearchBound:
    """What one :func:`search` may cost, checked before the work it bounds.

    The search walks its classes (module docstring) in chunks (:data:`CHUNK`), in pools taken
    in bound order, so its memory does not grow with their number. Measured here: about
    0.1 µs a class a pass; an exact evaluation's walk of its steps about 0.3-0.5 µs and 200
    bytes a step (a step: one (m, k, n) tile of the loop nest) and 0.3 ms besides; a member
    evaluated on its timing's walk about 0.1 ms; a timing's bound about 15 µs.

    ``candidates``: the classes the walk passes over (times the VPD levels), counted first;
    ``eval_steps``: the steps of the largest exact evaluation (its memory); ``search_steps``:
    the steps of every walk the search may make, plus the costs of its other work in steps
    (:data:`EVAL_OVERHEAD_STEPS` and the constants below it): its time, shared by the two
    searches of :func:`memwall.golden.pim.schedule.compare`.
    None: unbounded (the report's paper workloads).
    """
    candidates: int | None = 8_000_000
    eval_steps: int | None = 1 << 23
    search_steps: int | None = 30_000_000   # the report's shapes pass (pim_paper QKV GEMM: 9 s)

    @classmethod
    def allowing(cls, steps: int) -> SearchBound:
        """``--max-search-steps``: ``steps`` for the search and for one evaluation in it, and
        as many classes (at least the default's)."""
        return cls(candidates=max(cls.candidates, steps), eval_steps=steps, search_steps=steps)


#: The bound of the CLI's searches: within a minute and 2 GiB here.
DEFAULT_BOUND = SearchBound()
UNBOUNDED = SearchBound(None, None, None)
#: Classes (or tile pairs, when counting schedules) a chunk of the walk holds.
CHUNK = 1 << 20
#: Costs charged to ``search_steps``, in steps of an exact evaluation's walk (0.3-0.5 µs):
#: an exact evaluation's fixed cost;
EVAL_OVERHEAD_STEPS = 500
#: a member's exact counters from its timing's walk (:func:`memwall.golden.pim.closed_form.
#: walk`: its static counters and a sum over its buffer block kinds);
SHARED_EVAL_STEPS = 200
#: a timing's bound (its macro refreshes in closed form), plus one step per m tile;
BOUND_STEPS = 40
#: listing a member of a class and its timing.
MEMBER_STEPS = 5
#: A member is dropped when its bound passes the best energy by this factor: its bound and
#: its exact energy are sums of the same nonnegative terms in another order, a few ulps
#: apart (1e-12 is thousands of ulps).
SLACK = 1 + 1e-12


def _key(e: dict) -> tuple:
    """The order of results: energy, then cycles, order index, tm, tk, tn, VPD."""
    s = e["schedule"]
    return (e["energy"]["total"], e["cycles"], s.order_code, s.tm, s.tk, s.tn, s.vpd)


# --- the classes of one dimension -----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Dimension:
    """The tile sizes of one dimension grouped by class: class ``c`` has ``count[c]`` tiles,
    ``groups[c]`` field groups (0 off the fields dimension) and members ``sizes[start[c]:
    start[c + 1]]``, ascending (``first[c]`` the smallest)."""
    count: np.ndarray
    groups: np.ndarray
    first: np.ndarray
    sizes: np.ndarray
    start: np.ndarray

    def members(self, c: int) -> np.ndarray:
        return self.sizes[self.start[c]:self.start[c + 1]]


def _field_groups(size: int, tile, fields: int):
    """``sum_i ceil(extent_i / fields)`` over the tiles of a dimension (ints or arrays)."""
    count = -(-size // tile)
    return (count - 1) * -(-tile // fields) + -(-(size - (count - 1) * tile) // fields)


def _dimension(size: int, fields: int | None, cap: int) -> _Dimension:
    """Every tile size 1..min(size, cap) of a dimension of ``size``, by class; ``fields``: the
    row's fields run over this dimension; ``cap``: a size above it cannot fit whatever the
    other dimensions (a pure speed-up: :func:`_caps`)."""
    t = np.arange(1, min(size, cap) + 1, dtype=np.int64)
    count = -(-size // t)
    groups = _field_groups(size, t, fields) if fields else np.zeros_like(t)
    order = np.lexsort((t, groups, count))
    t, count, groups = t[order], count[order], groups[order]
    new = np.ones(len(t), dtype=bool)
    new[1:] = (count[1:] != count[:-1]) | (groups[1:] != groups[:-1])
    start = np.flatnonzero(new)
    return _Dimension(count[start], groups[start], t[start], t, np.append(start, len(t)))


def tile_classes(size: int, fields: int | None = None) -> list[tuple[int, int, list[int]]]:
    """``(tile count, field groups, tile sizes)`` of every class of a dimension of ``size``
    (``fields``: the row's fields run over it); together the sizes are 1..size."""
    d = _dimension(size, fields, size)
    return [(int(d.count[c]), int(d.groups[c]), d.members(c).tolist())
            for c in range(len(d.first))]


# --- fit rules, vectorised ------------------------------------------------------------------

def _rows(cfg, tk, tn):
    """Macro rows of a full weight tile (ints or arrays)."""
    F, P = cfg.fields, cfg.planes
    return P * (tk * -(-tn // F) if cfg.row_wise else tn * -(-tk // F))


def _buffer_terms(cfg, order: str, M: int, K: int, N: int, tk, tn):
    """(slope, const): the buffer bits ``tm * slope + const`` a schedule needs (its input tile
    and its peak partial sums, :func:`memwall.golden.pim.closed_form._peak_psum`), linear in
    tm."""
    tk, tn = np.asarray(tk, dtype=np.int64), np.asarray(tn, dtype=np.int64)
    split = -(-K // tk) > 1                      # partial sums live only across k tiles
    per_tm = {"mkn": N + 0 * tn, "mnk": tn, "nmk": tn}.get(order, 0 * tn)
    fixed = {"kmn": M * N + 0 * tn, "knm": M * N + 0 * tn, "nkm": M * tn}.get(order, 0 * tn)
    acc = cfg.acc_bits
    return tk * cfg.input_bits + np.where(split, per_tm, 0) * acc, np.where(split, fixed, 0) * acc


def _largest_tm(cfg, order: str, M: int, K: int, N: int, tk, tn):
    """The largest tm whose schedule fits the buffer (0: none), given tk and tn."""
    slope, const = _buffer_terms(cfg, order, M, K, N, tk, tn)
    room = cfg.buffer_bits - const
    return np.clip(np.where(room >= 0, room // slope, 0), 0, M)


def _caps(cfg, M: int, K: int, N: int) -> tuple[int, int, int]:
    """Above these, a tile size fits with no tile of the other dimensions (each rule at its
    smallest other tiles: 1 row group, 1 input row)."""
    F, P, R, ib = cfg.fields, cfg.planes, cfg.rows, cfg.input_bits
    groups = R // P                                  # field groups one tile may take
    cap_m = cfg.buffer_bits // ib
    cap_k = min(F * cfg.input_beats, cfg.buffer_bits // ib,
                groups if cfg.row_wise else F * groups)
    cap_n = F * groups if cfg.row_wise else groups
    return min(M, cap_m), min(K, cap_k), min(N, cap_n)


# --- the space ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Space:
    """The classes of a GEMM on a config: per dimension, and the (k class, n class) pairs
    whose smallest weight tile fits the macro's rows and input beats."""
    M: int
    K: int
    N: int
    m: _Dimension
    k: _Dimension
    n: _Dimension
    pair_k: np.ndarray
    pair_n: np.ndarray


def _space(cfg, M: int, K: int, N: int) -> _Space:
    cap_m, cap_k, cap_n = _caps(cfg, M, K, N)
    F = cfg.fields
    m = _dimension(M, None, cap_m)
    k = _dimension(K, F, cap_k)      # a row's fields, or the input beats (row-wise)
    n = _dimension(N, F if cfg.row_wise else None, cap_n)
    # Pairs in chunks of k classes: a (k, n) grid may be millions at max_dim.
    pk, pn = [], []
    per = max(1, CHUNK // max(1, len(n.first)))
    for s in range(0, len(k.first), per):
        kk, nn = np.meshgrid(np.arange(s, min(s + per, len(k.first))), np.arange(len(n.first)),
                             indexing="ij")
        kk, nn = kk.ravel(), nn.ravel()
        tk, tn = k.first[kk], n.first[nn]
        keep = (_rows(cfg, tk, tn) <= cfg.rows) & (-(-tk // F) <= cfg.input_beats)
        pk.append(kk[keep])
        pn.append(nn[keep])
    empty = np.empty(0, dtype=np.int64)
    return _Space(M, K, N, m, k, n, np.concatenate(pk) if pk else empty,
                  np.concatenate(pn) if pn else empty)


def _class_count(cfg, sp: _Space) -> int:
    """Classes that fit (one VPD level): per order and pair, the m classes whose smallest tm
    fits the buffer with that pair's smallest tiles."""
    firsts = np.sort(sp.m.first)
    tk, tn = sp.k.first[sp.pair_k], sp.n.first[sp.pair_n]
    return int(sum(np.searchsorted(firsts, _largest_tm(cfg, order, sp.M, sp.K, sp.N, tk, tn),
                                   side="right").sum() for order in ORDERS))


def _weight_tiles(cfg, M: int, K: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Every tk that fits the input beats, and per tk the largest tn whose full weight tile
    fits the macro's rows (0: none): the (tk, tn) pairs that fit are ``tn <= top``."""
    F = cfg.fields
    tks = np.arange(1, _caps(cfg, M, K, N)[1] + 1, dtype=np.int64)
    tks = tks[-(-tks // F) <= cfg.input_beats]
    groups = cfg.rows // cfg.planes
    top = F * (groups // tks) if cfg.row_wise else groups // -(-tks // F)
    return tks, np.minimum(top, N)


def space_size(cfg, M: int, K: int, N: int, levels: int | None = None) -> int:
    """Schedules of the space that fit: every (order, tm, tk, tn) with ``fits``, times the VPD
    levels; counted over the (tk, tn) pairs that fit the macro, about :data:`CHUNK` at a time
    (per pair and order, the tm that fit the buffer are 1..largest)."""
    tks, top = _weight_tiles(cfg, M, K, N)
    ends = np.cumsum(top)
    total, begin = 0, 0
    while begin < len(tks):
        done = ends[begin - 1] if begin else 0
        end = max(begin + 1, int(np.searchsorted(ends, done + CHUNK, side="right")))
        tk = np.repeat(tks[begin:end], top[begin:end])
        tn = np.arange(len(tk)) + done - np.repeat(ends[begin:end] - top[begin:end],
                                                   top[begin:end]) + 1
        for order in ORDERS:
            total += int(_largest_tm(cfg, order, M, K, N, tk, tn).sum())
        begin = end
    return total * (cfg.levels if levels is None else levels)


def _chunks(cfg, sp: _Space):
    """The classes that fit, as ``(order code, order, m class, pair index)`` arrays of at most
    about :data:`CHUNK` each (every order, m-class-major)."""
    tk, tn = sp.k.first[sp.pair_k], sp.n.first[sp.pair_n]
    per = max(1, CHUNK // max(1, len(tk)))
    classes = np.arange(len(sp.m.first))
    for code, order in enumerate(ORDERS):
        largest = _largest_tm(cfg, order, sp.M, sp.K, sp.N, tk, tn)
        for start in range(0, len(classes), per):
            part = classes[start:start + per]
            mi = np.repeat(part, len(tk))
            pair = np.tile(np.arange(len(tk)), len(part))
            fit = sp.m.first[mi] <= largest[pair]
            yield code, order, mi[fit], pair[fit]


def _bounded_chunks(cfg, sp: _Space, levels, ones, gating):
    """Per chunk of :func:`_chunks`, each class's refresh-free energy at every VPD level
    (exact for its members but for the refreshes, which only add), as arrays: bound, order
    index, smallest tm, tk, tn, VPD, m class, pair index."""
    static = closed_form._static
    for code, order, mi, pair in _chunks(cfg, sp):
        if not len(mi):
            continue
        tm, tk, tn = sp.m.first[mi], sp.k.first[sp.pair_k[pair]], sp.n.first[sp.pair_n[pair]]
        c = static(cfg, sp.M, sp.K, sp.N, order, tm, tk, tn, ones)
        for v in levels:
            bound = energy(cfg, c, gating=gating, vpd=v)["total"]
            yield (np.asarray(bound, np.float64), np.full(len(tm), code), tm, tk, tn,
                   np.full(len(tm), v), mi, pair)


def _smallest_bound(cfg, sp, levels, ones, gating, above: float, count: int) -> float:
    """The ``count``-th smallest bound above ``above`` (inf if fewer), streaming: at most
    ``count`` + a chunk of bounds held at once."""
    kept = np.empty(0)
    for bounds, *_ in _bounded_chunks(cfg, sp, levels, ones, gating):
        kept = np.concatenate([kept, bounds[bounds > above]])
        if len(kept) > count:
            kept = np.partition(kept, count - 1)[:count]
    return float(kept.max()) if len(kept) >= count else np.inf


def _pool(cfg, sp, levels, ones, gating, above: float, upto: float):
    """The classes whose bound is in (above, upto], in search order (bound, order, smallest
    tm, tk, tn, VPD): arrays bound, order index, tm, tk, tn, vpd, m class, pair index."""
    parts = [tuple(column[(a[0] > above) & (a[0] <= upto)] for column in a)
             for a in _bounded_chunks(cfg, sp, levels, ones, gating)]
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    order = np.lexsort(tuple(reversed(columns[:6])))
    return [column[order] for column in columns]


def _members(cfg, sp: _Space, order: str, mi: int, pair: int):
    """The fitting members (tm, tk, tn) of a class, ascending; its fitting members are a
    down-set (module docstring), so each loop stops at its first misfit."""
    ms = sp.m.members(mi)
    ks = sp.k.members(int(sp.pair_k[pair]))
    ns = sp.n.members(int(sp.pair_n[pair]))
    ks = ks[(_rows(cfg, ks, ns[0]) <= cfg.rows) & (-(-ks // cfg.fields) <= cfg.input_beats)]
    for tk in ks.tolist():
        tn_fit = ns[_rows(cfg, tk, ns) <= cfg.rows]
        if not len(tn_fit):
            break
        largest = _largest_tm(cfg, order, sp.M, sp.K, sp.N, tk, tn_fit)
        for tm in ms.tolist():
            tns = tn_fit[largest >= tm]
            if not len(tns):
                break
            for tn in tns.tolist():
                yield tm, tk, tn


def candidates(cfg, M: int, K: int, N: int, levels=None) -> list[Schedule]:
    """Every schedule of the space that fits (all tile sizes, orders and VPD levels), class
    by class: for small GEMMs and the tests."""
    levels = range(cfg.levels) if levels is None else levels
    sp = _space(cfg, M, K, N)
    out = []
    for _code, order, mi, pair in _chunks(cfg, sp):
        for a, b in zip(mi.tolist(), pair.tolist(), strict=True):
            out += [Schedule(M, K, N, tm, tk, tn, order, v)
                    for tm, tk, tn in _members(cfg, sp, order, a, b) for v in levels]
    return out


def _too_large(what: str, M: int, K: int, N: int, cfg, estimate: str) -> SearchTooLarge:
    return SearchTooLarge(f"the schedule search of {M}x{K}x{N} on config {cfg.name} {what} "
                          f"({estimate}); a smaller GEMM, or --max-search-steps to allow it")


def search(cfg, M: int, K: int, N: int, *, ones: float | None = None, levels=None,
           gating: bool = True, refresh: str = "skip",
           bound: SearchBound = UNBOUNDED) -> dict:
    """The minimum-energy schedule over the whole space (module docstring): :func:`memwall.
    golden.pim.closed_form.evaluate`'s result plus ``searched`` (schedules in the space),
    ``classes`` (classes that fit), ``evaluated`` (exact evaluations), ``walked`` (walks of
    steps, one per timing evaluated), ``bounded`` (members dropped by their own bound),
    ``work_steps`` and ``seconds``.

    Classes are taken in the order of their refresh-free energy (ties: order, smallest tm, tk,
    tn, VPD), each fitting member bounded and, unless its bound is above the best energy,
    evaluated exactly, until the next class's bound is above the best energy: none after it
    can be better or equal. The order is walked in pools of about :data:`CHUNK` classes (each
    pool: two streaming passes), so memory does not grow with their number. ``bound``
    (:class:`SearchBound`): the classes are counted first, and a search of more is refused
    before any work; each evaluation's steps are checked before it runs, and a search whose
    work passes ``search_steps`` stops there, saying how many candidates were still left.
    ``refresh="off"`` makes it a retention-unaware scheduler (the class bound is then exact,
    and ties are broken by cycles, then tiles)."""
    begin = time.perf_counter()
    levels = list(range(cfg.levels)) if levels is None else list(levels)
    sp = _space(cfg, M, K, N)
    classes = _class_count(cfg, sp) * len(levels)
    if not classes:
        raise NoSchedule(f"no schedule of {M}x{K}x{N} fits config {cfg.name}: the macro has "
                         f"{cfg.rows} rows, the buffer {cfg.buffer_bits} bits (a larger "
                         f"buffer_kib or more rows fits more)")
    if bound.candidates is not None and classes > bound.candidates:
        # The schedules, at most: every tm with every (tk, tn) that fits the macro.
        most = int(_weight_tiles(cfg, M, K, N)[1].sum()) * M * len(ORDERS) * len(levels)
        raise _too_large(f"walks {classes:,} classes (schedules of one refresh-free energy) "
                         f"of its up to {most:,} candidates, past its bound of "
                         f"{bound.candidates:,} classes", M, K, N, cfg,
                         f"about {0.1e-6 * classes:.0f} s a pass over them, two a pool")
    searched = space_size(cfg, M, K, N, len(levels))
    # Energy of one macro refresh at each level, its cycle's logic included (energy() is
    # linear in the counters).
    zero = dict.fromkeys(MACRO_COUNTERS + BUFFER_COUNTERS + INPUT_COUNTERS + TRAFFIC_COUNTERS
                         + ("input_beats",), 0)
    refresh_pj = [energy(cfg, dict(zero, refreshes=1), vpd=v)["total"]
                  - energy(cfg, zero, vpd=v)["total"] for v in range(cfg.levels)]
    best, evaluated, walked, bounded, work = None, 0, 0, 0, 0
    above, done = -np.inf, False

    def best_energy() -> float:
        return np.inf if best is None else best["energy"]["total"]

    def charge(steps: int, members_left: int, later) -> None:
        nonlocal work
        work += steps
        if bound.search_steps is not None and work > bound.search_steps:
            # Each later class with a bound not above the best has a fitting member.
            left = members_left + int(np.sum(later <= best_energy()))
            raise _too_large(f"passed its bound of {bound.search_steps:,} steps after "
                             f"{evaluated:,} exact evaluations, with at least {left:,} "
                             "candidates still to bound or evaluate", M, K, N, cfg,
                             f"{time.perf_counter() - begin:.0f} s so far")

    while not done:
        upto = _smallest_bound(cfg, sp, levels, ones, gating, above, CHUNK)
        bounds, code, _tm, _tk, _tn, vpd, mi, pair = _pool(cfg, sp, levels, ones, gating,
                                                            above, upto)
        done, above = not np.isfinite(upto), upto   # the last pool holds every class left
        for i in range(len(bounds)):
            if bounds[i] > best_energy():
                done = True   # no class after this one can be better or equal
                break
            order, level, later = ORDERS[int(code[i])], int(vpd[i]), bounds[i + 1:]
            count_m = int(sp.m.count[mi[i]])
            steps = count_m * int(sp.k.count[sp.pair_k[pair[i]]]
                                  * sp.n.count[sp.pair_n[pair[i]]])
            if bound.eval_steps is not None and steps > bound.eval_steps:
                raise _too_large(f"reached a schedule of {steps:,} steps, past its bound of "
                                 f"{bound.eval_steps:,} for one evaluation", M, K, N, cfg,
                                 f"about {steps * 214 / 2**30:.1f} GiB for it")
            # Members with one timing (schedule.timing: same steps, same cycles, same macro
            # refreshes) differ only in the words of their buffer blocks: one walk of their
            # steps serves them all. Each timing's bound: the class's energy plus its macro
            # refreshes' (exact, from its residency kinds; refresh skipping only), leaving
            # out only the buffer's refreshes, which only add. The bound is rounded apart
            # from an exact energy by a few ulps, so it prunes only past SLACK of the best.
            timings: dict[tuple, list] = {}
            interval = cfg.refresh_interval(level)
            for tm, tk, tn in _members(cfg, sp, order, int(mi[i]), int(pair[i])):
                charge(MEMBER_STEPS, 1, later)
                key = closed_form._timing(cfg, M, K, N, order, tm, tk, tn, level)
                group = timings.get(key)
                if group is None:
                    own = float(bounds[i])
                    if refresh == "skip":
                        charge(BOUND_STEPS + count_m, 1, later)
                        own += refresh_pj[level] * closed_form._macro_refreshes(
                            cfg, M, K, N, order, tm, tk, tn, interval)
                    group = timings[key] = [own, []]
                if group[0] > best_energy() * SLACK:
                    bounded += 1
                else:
                    group[1].append((tm, tk, tn))
            # Timings in bound order, so the best falls early and prunes the rest.
            ranked = sorted((own, members) for own, members in timings.values() if members)
            for n, (own, members) in enumerate(ranked):
                if own > best_energy() * SLACK:
                    bounded += sum(len(m) for _, m in ranked[n:])
                    break
                shared = None
                for tm, tk, tn in members:
                    s = Schedule(M, K, N, tm, tk, tn, order, level)
                    if shared is None:
                        charge(steps + EVAL_OVERHEAD_STEPS, len(members), later)
                        shared = closed_form.walk(cfg, s, refresh)
                        walked += 1
                    else:
                        charge(SHARED_EVAL_STEPS, len(members), later)
                    e = closed_form.evaluate(cfg, s, ones=ones, gating=gating,
                                             refresh=refresh, walked=shared)
                    evaluated += 1
                    if best is None or _key(e) < _key(best):
                        best = e
    best.update(searched=searched, classes=classes, evaluated=evaluated, walked=walked,
                bounded=bounded, work_steps=work, seconds=time.perf_counter() - begin)
    return best
