"""cocotb testbench: :class:`~memwall.hdl.dplena.gumbel.GumbelUnit` against the golden
:func:`~memwall.golden.dplena.gumbel.gumbel_fp32`, bit for bit, and its latency.

``tb_params()``: ``latency`` (the unit's, cycles), ``random`` (how many random inputs beside
the directed ones, default 4000), ``corners`` (include :func:`corner_mantissas`, default true),
``exhaustive`` (instead: every one of the 2**23 inputs, in order; default false), ``idle_prob``
(chance of an idle cycle before each input, default 0.3; the runs of back-to-back inputs test
the throughput of one a cycle). Seeds: ``COCOTB_RANDOM_SEED`` (printed by the runner).

Every cycle drives ``valid`` and ``mantissa`` (random garbage while idle) and samples
``o_valid`` and ``g``. Checked: ``o_valid`` is high in exactly the cycles ``c + latency`` of the
inputs' cycles ``c``; ``g`` there is the golden result of that input; ``g`` holds its value
while ``o_valid`` is low.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.common.fixedpoint import bit_length
from memwall.golden.dplena.gumbel import _LN2 as LN2  # the golden's constant, not retyped
from memwall.golden.dplena.gumbel import FRAC_BITS, TABLE_BITS, gumbel_fp32, h_table, log2_table
from memwall.golden.dplena.rng import UNIFORM_BITS
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, start

__all__ = ["corner_mantissas", "stimulus", "cycle_plan"]

M_MAX = (1 << UNIFORM_BITS) - 1
HALF = 1 << (UNIFORM_BITS - 1)      # the first cell of u >= 1/2


def _cells(n) -> np.ndarray:
    """The cells ``m`` of the odd ``n = 2m + 1`` near the given ``n`` (``n - 3 .. n + 3``)."""
    n = np.asarray(n, dtype=np.int64).ravel()
    near = (n[:, None] + np.arange(-3, 4)).ravel()
    near = near[(near % 2 == 1) & (near >= 1) & (near < (1 << (UNIFORM_BITS + 1)))]
    return (near - 1) // 2


def _second_log_segments(m: np.ndarray) -> np.ndarray:
    """``(q, table index)`` of step 2 for every ``m``, as one integer. For the stimulus only:
    step 1 of the golden model again (``t = t_sig * 2**(t_exp - F)``), to find where the second
    log2 moves to the next segment; the scoreboard compares with ``gumbel_fp32`` itself."""
    F, n = FRAC_BITS, 2 * m + 1
    shift = F - TABLE_BITS
    low = n < (1 << UNIFORM_BITS)
    p = bit_length(n) - 1
    d = (np.int64(1) << (UNIFORM_BITS + 1)) - n
    frac = np.where(low, (n - (np.int64(1) << p)) << np.maximum(F - p, 0), d << 1)
    i, rest = frac >> shift, frac & ((1 << shift) - 1)
    lo = np.where(low, log2_table()[i], h_table()[i])
    hi = np.where(low, log2_table()[i + 1], h_table()[i + 1])
    interp = lo + (((hi - lo) * rest) >> shift)
    t_sig = np.where(low, (((UNIFORM_BITS + 1 - p) << F) - interp) * LN2 >> F, d * interp)
    bits = bit_length(t_sig)                       # t_sig >= 2**23: bits - 1 >= TABLE_BITS
    q = bits - 1 + np.where(low, 0, -(UNIFORM_BITS + 1)) - F
    top = (t_sig >> (bits - 1 - TABLE_BITS)) & ((1 << TABLE_BITS) - 1)
    return ((q + 64) << TABLE_BITS) | top


def corner_mantissas() -> np.ndarray:
    """The directed inputs, sorted and unique: both ends of u and of each branch, every
    ``m < 64`` (few bits of n), and the cells around every table-segment boundary: of the
    first log2 (``u < 1/2``, every octave of n), of h (``u >= 1/2``, every segment of d) and
    of the second log2 (every octave and segment of t)."""
    fixed = [0, 1, 2, HALF - 1, HALF, HALF + 1, M_MAX, *range(64)]
    seg = 1 << TABLE_BITS
    # log2 of n = 2**p (1 + i/64): segment starts in every octave p (i = 64: the next octave).
    starts = [(1 << p) + (i << p) // seg for p in range(UNIFORM_BITS) for i in range(seg + 1)]
    low = _cells(starts)
    low = low[low < HALF]
    # h of d = 2**24 - n at d = i * 2**17 (the 2**-(T+1) steps of d in [0, 1/2]).
    step = 1 << (UNIFORM_BITS + 1 - TABLE_BITS - 1)
    high = _cells((1 << (UNIFORM_BITS + 1)) - np.arange(seg + 1) * step)
    high = high[high >= HALF]
    # Second log2: where t (monotone in m) enters a new octave or segment.
    every = np.arange(1 << UNIFORM_BITS, dtype=np.int64)
    change = np.flatnonzero(np.diff(_second_log_segments(every))) + 1
    second = (change[:, None] + np.arange(-2, 2)).ravel()
    m = np.concatenate([fixed, low, high, second])
    return np.unique(m[(m >= 0) & (m <= M_MAX)])


def stimulus(random_count: int, seed: int, corners: bool = True) -> np.ndarray:
    """The inputs of one run: :func:`corner_mantissas` (if ``corners``) then ``random_count``
    uniform random cells, shuffled together so directed inputs meet random neighbours."""
    rng = np.random.default_rng(seed)
    parts = [corner_mantissas()] if corners else []
    parts.append(rng.integers(0, M_MAX + 1, random_count))
    m = np.concatenate(parts).astype(np.int64)
    return rng.permutation(m)


def cycle_plan(count: int, latency: int, idle_prob: float, seed: int):
    """``(valid, mantissa)`` per cycle for ``count`` inputs, and each input's cycle: a random
    number of idle cycles (random mantissas, to be ignored) before each input, geometric with
    ``idle_prob``, and ``latency + 3`` idle cycles at the end to drain the pipeline."""
    rng = np.random.default_rng(seed + 1)
    idle = rng.geometric(1 - idle_prob, count) - 1 if idle_prob > 0 else np.zeros(count, int)
    in_cycles = np.arange(count) + np.cumsum(idle)
    total = (int(in_cycles[-1]) + 1 if count else 0) + latency + 3
    valid = np.zeros(total, dtype=np.int64)
    valid[in_cycles] = 1
    return valid, rng.integers(0, M_MAX + 1, total), in_cycles


@cocotb.test()
async def matches_golden_at_its_latency(dut):
    p = tb_params()
    latency, seed = p["latency"], cocotb.RANDOM_SEED
    if p.get("exhaustive", False):
        inputs = np.arange(M_MAX + 1, dtype=np.int64)
        directed = 0
    else:
        inputs = stimulus(p.get("random", 4000), seed, p.get("corners", True))
        directed = len(inputs) - p.get("random", 4000)
    expected = gumbel_fp32(inputs).view(np.uint32).astype(np.int64)
    valid, mant, in_cycles = cycle_plan(len(inputs), latency, p.get("idle_prob", 0.3), seed)
    mant[in_cycles] = inputs
    dut._log.info("%d inputs (%d directed) in %d cycles, latency %d, seed %d", len(inputs),
                  directed, len(valid), latency, seed)

    clk = await start(dut)
    o_valid = np.zeros(len(valid), dtype=np.int64)
    g = np.zeros(len(valid), dtype=np.int64)
    dut_valid, dut_mant, dut_o_valid, dut_g = dut.valid, dut.mantissa, dut.o_valid, dut.g
    for c, (v, mv) in enumerate(zip(valid.tolist(), mant.tolist(), strict=True)):
        dut_valid.value = v
        dut_mant.value = mv
        await RisingEdge(clk)     # reads the values of cycle c (before the edge's update)
        o_valid[c] = int(dut_o_valid.value)
        g[c] = int(dut_g.value)

    board = Scoreboard(dut._name, dut._log)
    want_cycles = in_cycles + latency
    board.compare("o_valid cycles (input cycle + latency)", want_cycles, np.flatnonzero(o_valid))
    got = g[want_cycles]
    bad = np.flatnonzero(got != expected)
    for i in bad[:8]:
        dut._log.error("mantissa %#x: g %#010x, golden %#010x", inputs[i], got[i], expected[i])
    board.compare("g (FP32 bits) per input", expected, got)
    # Between results g keeps the last one (its register loads only with valid data).
    first = want_cycles[0]
    held = np.maximum.accumulate(np.where(o_valid[first:] == 1, np.arange(first, len(valid)), 0))
    board.compare("g held while o_valid is low", g[held], g[first:])
    board.result()
