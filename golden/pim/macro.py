"""eDRAM PIM (RED-style) golden model: the contract of the ``pim`` family and its event-level
simulator. The RTL (``hdl/pim``), the behavioural macro (``verif/shield/edram.PimMacro``) and
the closed-form scheduler (:mod:`memwall.golden.pim.schedule`) all answer to this docstring.

Macro. ``R = cfg.rows`` rows of ``W = cfg.width`` columns (every subarray of every bank
activates the same row in lockstep). A row holds ``F = cfg.fields`` fields of
``fw = cfg.field_bits`` columns: bit-parallel, a whole ``wb``-bit weight word per field;
bit-serial, one weight bit per field and ``P = wb`` rows (bit-planes ``b``) per weight
position. Words are two's complement (signed) or plain binary, in ``wb`` / ``ib`` bits.

Mapping of a weight tile ``k in [k0, k0+Tk_i)``, ``n in [n0, n0+Tn_i)``:

* row-wise: groups ``g`` of ``F`` consecutive ``n``; row ``(g*Tk_i + k)*P + b`` holds in field
  ``f`` the word (or its bit ``b``) ``w[k0+k, n0+g*F+f]``. Every column of a valid field gets
  bit ``j`` of ``a[m, k0+k]``; fields past the tile's ``n`` get 0.
* dot-product: groups ``kg`` of ``F`` consecutive ``k`` (``KG = ceil(Tk_i/F)``); row
  ``(n*KG + kg)*P + b`` holds in field ``f`` ``w[k0+kg*F+f, n0+n]``; the columns of field ``f``
  get bit ``j`` of ``a[m, k0+kg*F+f]``; fields past the tile's ``k`` get 0.

Rows per tile: row-wise ``Tk_i*ceil(Tn_i/F)*P``, dot-product ``Tn_i*ceil(Tk_i/F)*P``. A schedule
fits (:func:`fits`) when every tile has at most ``R`` rows, ``ceil(Tk/F) <= cfg.input_beats``
and the buffer holds the input tile and the live partial sums (:func:`peak_psum_words`).

Sense amps. An activation drives ``W`` input bits; a 0 gates the sense amp (output 0), a 1
enables it, so the sense amp is the 1-bit multiplier: output = stored bit AND input bit.
``sa_on + sa_gated = W * activations``. Every (m, k, n) product is formed once, each input bit
meets the ``wb`` stored bits of each of the ``N`` weights of its row of B, so
``sa_on = N * wb * ones(A)`` whatever the tiling (``ones``: 1 bits of A as ``ib``-bit patterns).

PU arithmetic (exact). Field value ``v_f``: the ANDed field as a signed or unsigned ``wb``-bit
word (bit-parallel) or a bit (bit-serial). Shift ``s = j`` (+ ``b`` bit-serially); the term is
negative iff ``(input_signed and j == ib-1) XOR (bit_serial and weight_signed and b == wb-1)``.
Row-wise: ``acc[f] += ±v_f << s``; dot-product: ``acc += ±(sum_f v_f) << s``. A group (row-wise:
one n-group; dot-product: one n) starts from 0 when ``ik == 0``, else from the previous k-tile's
partial sums (``psum``), and is emitted after its last activation.

Loop nest. A :class:`Schedule` ``(M, K, N, tm, tk, tn, order, vpd)``; ``order`` is a permutation
of ``"mkn"``, outer to inner. Per step ``(im, ik, in)``: LOAD (only when the weight tile
``(ik, in)`` differs from the previous step's): one cycle per row, in row order; then per input
row ``m`` of the tile: INPUT, ``ceil(Tk_i/F)`` cycles (one beat of ``F`` words each, zero past the
tile's ``k``); COMPUTE, every row in row order, ``ib`` consecutive activations ``j = 0..ib-1``
each. After the last activation, ``PU_LATENCY`` cycles until the last result is accepted.

Refresh (age-triggered, before everything else). A row is live from its write until its last
activation of the residency (the consecutive steps using its weight tile). In a cycle ``t``
where a live row ``r`` has ``t - restore[r] == I_v`` (``cfg.refresh_interval(vpd)``) the cycle is
a refresh of ``r`` (``restore[r] = t``) and the pending action waits. Writes and refreshes
restore; reads do not. Restores happen one per cycle, so at most one row is due per cycle.

Cycles: counted from 0, the cycle after the descriptor's handshake (the event logs use this
numbering); the count is the last activation's cycle plus 1 plus ``PU_LATENCY`` (2: read data
and the PU's add in the next cycle, the result valid and accepted in the one after). With no
stalls: LOAD + INPUT + activations + refreshes + ``PU_LATENCY``.

Buffer (model only; it never stalls the macro). Counters: ``buffer_input_fills`` (``Tm_i*Tk_i``
words when the input tile ``(im, ik)`` differs from the previous step's), ``buffer_input_reads``
(``Tk_i`` words per input row and step), ``buffer_psum_reads`` (``Tn_i`` per input row of a step
with ``ik > 0``), ``buffer_psum_writes`` (``Tn_i`` per input row of a step with ``ik`` below the
last). Refresh granularity: a tile, over wall-clock step spans (a step runs from the cycle after
the previous step's last activation to its own last activation). An input tile's
``ceil(Tm_i*Tk_i/buffer_row_words)`` rows live from the first cycle of the step that fills it to
the last cycle of the last consecutive step that reads it; a partial-sum block's
``ceil(Tm_i*Tn_i/row_words)`` rows strictly between the end of the step that writes it and the
start of the step that reads it (refresh ``"all"``: until the end of the reading step). A block
alive ``L > 0`` cycles is refreshed ``floor((L-1)/I_B)`` times per row.

Energy (pJ), ``S = subarrays*banks``: ``E_PIM = S*(activations*e_access(v) + writes*e_write +
refreshes*e_refresh(v)) + sa_on*e_sense(v)``, plus the logic's energy
(:mod:`memwall.golden.pim.logic`: per cycle, per input 1 bit and toggle, per write, and leakage
over the run's time); off-macro weight traffic ``weight_words*wb*e_dram_bit`` (every weight
written into the macro is fetched from DRAM: the unified buffer holds the inputs and partial
sums, as in the paper's E_Buffer; ``weight_words`` counts ``Tk_i*Tn_i`` per LOAD), and
``E_Buffer = (fills +
psum_writes)*e_bw + (input_reads + psum_reads)*e_br + buffer_refreshes*e_bref``. Without
sense-amp gating every sense amp of an activation is on: ``sa_on = W*activations``.
"""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np

from memwall.families.pim.config import ORDERS
from memwall.golden.pim.logic import logic_energy
from memwall.golden.pim.mapping import (
    OperandError,
    Schedule,
    check_operands,
    fit_problems,
    fits,
    input_beats,
    input_bits_for,
    input_ones,
    operand_range,
    peak_psum_words,
    sweep_input_bits,
    tile_bits,
    tile_rows,
    weight_row_images,
)

__all__ = ["PU_LATENCY", "REFRESH_MODES", "MACRO_COUNTERS", "BUFFER_COUNTERS", "ORDERS",
           "INPUT_COUNTERS", "TRAFFIC_COUNTERS", "cycles_of",
           "Schedule", "OperandError", "check_operands", "operand_range", "tile_rows",
           "fit_problems", "fits", "peak_psum_words", "weight_row_images", "input_beats",
           "input_bits_for", "input_ones", "tile_bits", "sweep_input_bits", "simulate", "energy",
           "steps"]

PU_LATENCY = 2
REFRESH_MODES = ("skip", "all", "off")
MACRO_COUNTERS = ("activations", "sa_on", "sa_gated", "writes", "refreshes", "pu_ops")
#: The inputs' 1 bits and all their bits (``ib``-bit patterns): the logic's data activity.
INPUT_COUNTERS = ("input_ones", "input_bits")
#: Weight words fetched from off-macro memory (DRAM) for the macro's row writes.
TRAFFIC_COUNTERS = ("weight_words",)
BUFFER_COUNTERS = ("buffer_input_fills", "buffer_input_reads", "buffer_psum_reads",
                   "buffer_psum_writes", "buffer_refreshes")


def _tiles(size: int, tile: int) -> list[tuple[int, int]]:
    return [(start, min(tile, size - start)) for start in range(0, size, tile)]


def steps(s: Schedule):
    """The loop nest: ``{"m": (m0, tm_i), "k": (k0, tk_i), "n": (n0, tn_i)}`` per step."""
    ranges = {"m": _tiles(s.M, s.tm), "k": _tiles(s.K, s.tk), "n": _tiles(s.N, s.tn)}
    for combo in itertools.product(*(ranges[d] for d in s.order)):
        yield dict(zip(s.order, combo, strict=True))


def _tile_row_fields(cfg, b, k0, tk_i, n0, tn_i) -> np.ndarray:
    """(rows, F) field values (unsigned bit patterns) of one weight tile, in row order."""
    F, P, wb = cfg.fields, cfg.planes, cfg.weight_bits
    tile = np.asarray(b)[k0:k0 + tk_i, n0:n0 + tn_i].astype(np.int64) & ((1 << wb) - 1)
    if not cfg.row_wise:
        tile = tile.T                                 # (n, k): fields run over k
    outer, inner = tile.shape
    groups = -(-inner // F)
    padded = np.zeros((outer, groups * F), dtype=np.int64)
    padded[:, :inner] = tile
    blocks = padded.reshape(outer, groups, F)
    if cfg.row_wise:
        blocks = blocks.transpose(1, 0, 2)           # (g, k, F)
    blocks = blocks.reshape(-1, F)
    if cfg.bit_serial:
        planes = (blocks[:, None, :] >> np.arange(P)[None, :, None]) & 1
        return planes.reshape(-1, F)
    return blocks


# --- event-level simulator ------------------------------------------------------------------

def _tile_activations(cfg, a_bits, fields, m, k0, tk_i, tn_i):
    """Per row of the tile, per input plane j: the broadcast field bits (rows, ib, F)."""
    F, P = cfg.fields, cfg.planes
    row_in = a_bits[m, k0:k0 + tk_i]                                  # (tk_i, ib) 0/1
    if cfg.row_wise:
        groups = -(-tn_i // F)
        valid = (np.arange(groups)[:, None] * F + np.arange(F)[None, :]) < tn_i   # (g, F)
        bits = valid[:, None, None, :] & row_in[None, :, :, None].astype(bool)    # g,k,ib,F
        bits = np.repeat(bits[:, :, None], P, axis=2).reshape(-1, cfg.input_bits, F)
    else:
        kg = -(-tk_i // F)
        padded = np.zeros((kg * F, cfg.input_bits), dtype=bool)
        padded[:tk_i] = row_in
        per_group = padded.reshape(kg, F, cfg.input_bits).transpose(0, 2, 1)     # kg,ib,F
        bits = np.broadcast_to(per_group[None, :, None], (tn_i, kg, P, cfg.input_bits, F))
        bits = bits.reshape(-1, cfg.input_bits, F)
    return bits


def _field_value(cfg, raw: np.ndarray) -> np.ndarray:
    if cfg.bit_serial or not cfg.weight_signed:
        return raw
    wb = cfg.weight_bits
    return np.where(raw >> (wb - 1) & 1, raw - (1 << wb), raw)


def simulate(cfg, a, b, s: Schedule, refresh: str = "skip") -> dict:
    """Walk the schedule action by action; see the module docstring for every rule.

    ``refresh``: ``"skip"`` (the contract: live rows only), ``"all"`` (the eDRAM baseline:
    every row written in this GEMM is refreshed every ``I_v`` until the GEMM's last activation,
    live or not; a buffer block over its whole stay), ``"off"`` (no refresh: a negative
    control; ``max_read_age`` shows it). Event cycles in the logs count from 0.
    """
    if refresh not in REFRESH_MODES:
        raise ValueError(f"refresh {refresh!r}; allowed: {', '.join(REFRESH_MODES)}")
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    check_operands(cfg, a, b)
    if (a.shape[0], a.shape[1], b.shape[1]) != (s.M, s.K, s.N):
        raise ValueError(f"operands {a.shape} @ {b.shape} do not match schedule {s}")
    problems = fit_problems(cfg, s, buffer=False)
    if problems:
        raise ValueError(f"schedule {s} does not fit config {cfg.name}: {problems[0]}")
    F, P, ib, W, acc_bits = cfg.fields, cfg.planes, cfg.input_bits, cfg.width, cfg.acc_bits
    interval = cfg.refresh_interval(s.vpd)
    a_bits = (((a & ((1 << ib) - 1))[:, :, None] >> np.arange(ib)) & 1).astype(bool)
    plane_weight = np.array([[(1 << (j + (p if cfg.bit_serial else 0)))
                              * (-1 if ((cfg.input_signed and j == ib - 1)
                                        ^ (cfg.bit_serial and cfg.weight_signed and p == P - 1))
                                 else 1) for j in range(ib)] for p in range(P)], dtype=np.int64)
    counts = dict.fromkeys(MACRO_COUNTERS + BUFFER_COUNTERS + TRAFFIC_COUNTERS
                           + ("input_beats",), 0)
    counts.update(input_ones=input_ones(cfg, a), input_bits=a.size * ib)
    now = -1                         # last cycle used (0-based)
    queue: deque = deque()           # (due cycle, row), oldest first
    live = np.zeros(cfg.rows, dtype=bool)
    restore = np.full(cfg.rows, -1, dtype=np.int64)
    last_age = np.zeros(cfg.rows, dtype=np.int64)
    write_events, refresh_events, read_events, read_ages = [], [], [], []
    psum: dict[tuple, np.ndarray] = {}
    emissions: list[dict] = []
    spans = []

    def next_cycle() -> int:
        """The next action's cycle, after the refreshes due before it."""
        nonlocal now
        while True:
            now += 1
            while queue and queue[0][0] < now:
                queue.popleft()                       # dead, or refresh off
            if queue and queue[0][0] == now:
                _, row = queue.popleft()
                if refresh == "off" or (refresh == "skip" and not live[row]):
                    return now
                counts["refreshes"] += 1
                refresh_events.append((now, row))
                restore[row] = now
                queue.append((now + interval, row))
                continue
            return now

    nest = list(steps(s))
    for index, step in enumerate(nest):
        (m0, tm_i), (k0, tk_i), (n0, tn_i) = step["m"], step["k"], step["n"]
        last_k = k0 + tk_i >= s.K
        nxt = nest[index + 1] if index + 1 < len(nest) else None
        tile_ends = nxt is None or (nxt["k"][0], nxt["n"][0]) != (k0, n0)
        first_cycle = now + 1
        fields = _tile_row_fields(cfg, b, k0, tk_i, n0, tn_i)
        n_rows = len(fields)
        if index == 0 or (nest[index - 1]["k"][0], nest[index - 1]["n"][0]) != (k0, n0):
            if refresh == "skip":
                queue.clear()         # every row of the old tile is dead
                live[:] = False
            counts["weight_words"] += tk_i * tn_i
            for row in range(n_rows):
                t = next_cycle()
                if refresh == "all":  # the write restores it: its old entry goes
                    for entry in [e for e in queue if e[1] == row]:
                        queue.remove(entry)
                live[row], restore[row] = True, t
                queue.append((t + interval, row))
                write_events.append((t, row))
                counts["writes"] += 1
        values = _field_value(cfg, fields)                            # (rows, F)
        for m in range(m0, m0 + tm_i):
            final_sweep = tile_ends and m == m0 + tm_i - 1
            for _ in range(-(-tk_i // F)):
                next_cycle()
                counts["input_beats"] += 1
            counts["buffer_input_reads"] += tk_i
            if k0 > 0:
                counts["buffer_psum_reads"] += tn_i
            if not last_k:
                counts["buffer_psum_writes"] += tn_i
            bits = _tile_activations(cfg, a_bits, fields, m, k0, tk_i, tn_i)   # rows, ib, F
            ones = int(bits.sum()) * cfg.field_bits
            counts["sa_on"] += ones
            counts["sa_gated"] += W * n_rows * ib - ones
            counts["activations"] += n_rows * ib
            counts["pu_ops"] += n_rows * ib
            for row in range(n_rows):
                for _ in range(ib):
                    t = next_cycle()
                    age = t - int(restore[row])
                    read_events.append((t, row))
                    read_ages.append(age)
                    last_age[row] = age
                if final_sweep:
                    live[row] = False
            contrib = values[:, None, :] * bits                         # rows, ib, F
            planes = np.tile(plane_weight, (n_rows // P, 1))            # rows, ib
            weighted = contrib * planes[:, :, None]
            groups = -(-tn_i // F) if cfg.row_wise else tn_i
            per_group = weighted.reshape(groups, -1, F).sum(axis=1)    # (groups, F)
            for g in range(groups):
                key_n0 = n0 + (g * F if cfg.row_wise else g)
                sums = per_group[g] if cfg.row_wise else per_group[g].sum(keepdims=True)
                total = _wrap(sums + (psum[(m, key_n0)] if k0 > 0 else 0), acc_bits)
                psum[(m, key_n0)] = total
                emissions.append({"m": m, "n0": key_n0, "first": k0 == 0, "last": last_k,
                                  "values": [int(v) for v in total], "cycle": now})
        spans.append((step, first_cycle, now))
    _buffer_refreshes(cfg, s, spans, refresh, counts)
    c = np.zeros((s.M, s.N), dtype=np.int64)
    for e in emissions:
        if e["last"]:
            width = min(len(e["values"]), s.N - e["n0"])
            c[e["m"], e["n0"]:e["n0"] + width] = e["values"][:width]
    result = {"c": c, "cycles": now + 1 + PU_LATENCY, "counters": counts, "vpd": s.vpd,
              "refresh": refresh, "emissions": emissions, "write_events": write_events,
              "refresh_events": refresh_events,
              "read_events": np.array(read_events, dtype=np.int64).reshape(-1, 2),
              "read_ages": np.array(read_ages, dtype=np.int64), "last_read_age": last_age,
              "max_read_age": max(read_ages, default=0), "interval": interval,
              "peak_psum_words": peak_psum_words(s),
              "by_level": {k: tuple(counts[k] if v == s.vpd else 0 for v in range(cfg.levels))
                           for k in MACRO_COUNTERS},
              "steps": [(st["m"][0] // s.tm, st["k"][0] // s.tk, st["n"][0] // s.tn, first, last)
                        for st, first, last in spans]}
    result.update(counts)
    return result


def _buffer_refreshes(cfg, s: Schedule, spans, refresh: str, counts: dict) -> None:
    """Fills and refreshes of the buffer's tiles, from the steps' first and last cycles."""
    if refresh == "off":
        refresh_rows = None
    else:
        refresh_rows = cfg.buffer_interval

    def charge(words: int, life: int) -> None:
        if refresh_rows is not None and life > 0:
            counts["buffer_refreshes"] += -(-words // cfg.buffer_row_words) \
                * ((life - 1) // refresh_rows)

    block = None                                   # input tile: [key, words, first, last]
    written: dict[tuple, tuple[int, int]] = {}     # psum (m0, n0) -> (words, writer's last)
    for step, first, last in spans:
        (m0, tm_i), (k0, tk_i), (n0, tn_i) = step["m"], step["k"], step["n"]
        if block is None or block[0] != (m0, k0):
            if block is not None:
                charge(block[1], block[3] - block[2] + 1)
            counts["buffer_input_fills"] += tm_i * tk_i
            block = [(m0, k0), tm_i * tk_i, first, last]
        block[3] = last
        if k0 > 0:
            words, end = written.pop((m0, n0))
            charge(words, (last - end) if refresh == "all" else (first - end - 1))
        if k0 + tk_i < s.K:
            written[(m0, n0)] = (tm_i * tn_i, last)
    if block is not None:
        charge(block[1], block[3] - block[2] + 1)


def _density(cfg, counts: dict):
    bits = counts.get("input_bits")
    if bits is None:
        return cfg.input_bit_density
    return np.where(np.asarray(bits) > 0, counts["input_ones"] / np.maximum(bits, 1), 0.0)


def _wrap(values: np.ndarray, bits: int) -> np.ndarray:
    values = np.asarray(values, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(values >> (bits - 1) & 1, values - (1 << bits), values)


def cycles_of(counts: dict):
    """The cycles of a run from its counters: one per row write, input beat, activation and
    refresh, and the PU's latency (the macro never stalls; the simulator's count equals it)."""
    return (counts["writes"] + counts["input_beats"] + counts["activations"]
            + counts["refreshes"] + PU_LATENCY)


def energy(cfg, counts: dict, *, gating: bool = True, vpd: int | None = None) -> dict:
    """Energy breakdown (pJ) of a run's counters (module docstring). ``counts`` is a
    :func:`simulate` result (it carries its VPD level) or a flat mapping with ``vpd`` given.
    The logic (controller and PU) is charged by :func:`memwall.golden.pim.logic.logic_energy`
    from the run's cycles (:func:`cycles_of`) and its inputs' bit density; without data the
    density is the config's ``input_bit_density``."""
    level = counts["vpd"] if vpd is None else vpd
    counts = counts.get("counters", counts)
    entry = cfg.macro_table[level]
    S = cfg.subarray_count
    sa_on = counts["sa_on"] if gating else cfg.width * counts["activations"]
    parts = {
        "pim_access": S * counts["activations"] * entry["e_access_pj"],
        "pim_sense": sa_on * entry["e_sense_pj"],
        "pim_write": S * counts["writes"] * cfg.e_write_pj,
        "pim_refresh": S * counts["refreshes"] * cfg.e_refresh_pj(level),
        **logic_energy(cfg, cycles_of(counts), counts["activations"], _density(cfg, counts),
                       counts["writes"]),
        "buffer_access": (counts["buffer_input_fills"] + counts["buffer_psum_writes"])
        * cfg.buffer_e_write_pj
        + (counts["buffer_input_reads"] + counts["buffer_psum_reads"]) * cfg.buffer_e_read_pj,
        "buffer_refresh": counts["buffer_refreshes"] * cfg.buffer_e_refresh_pj,
        "weight_fetch": counts["weight_words"] * cfg.weight_bits * cfg.dram_e_bit_pj,
    }
    parts["total"] = sum(parts.values())
    return parts
