"""cocotb testbench: V_TOPK_MASK streaming insertion top-k against golden ``topk_mask``."""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.common.fparith import bf16_key
from memwall.golden.dplena.sampling import topk_mask
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, start, unpack_lanes
from memwall.verif.dplena.stimulus import bf16_vector

# BF16 patterns where a raw-bit or IEEE compare would go wrong: zeros, infinities, NaNs of both
# signs and several payloads, subnormals, extremes and the negatives around them.
SPECIALS = np.array([
    0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x0001, 0x8001,
    0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x4000, 0xC000, 0x0080, 0x8080,
], dtype=np.uint16)


class Vector:
    """One top-k request: ``n`` elements (``conf``, ``valid``), ``k`` and the per-element k field
    (only element 0's is meant to count)."""

    def __init__(self, conf, valid, k: int, k_field=None):
        self.conf = np.asarray(conf, dtype=np.uint16)
        self.valid = np.asarray(valid, dtype=bool)
        self.k = int(k)
        self.k_field = np.full(len(self.conf), self.k) if k_field is None else k_field
        self.k_field[0] = self.k

    def expected(self, length: int, k_max: int) -> np.ndarray:
        """Golden mask over the positions the unit ranks (at most ``length``), k clamped."""
        n = min(len(self.conf), length)
        out = np.zeros(length, dtype=np.uint64)
        out[:n] = topk_mask(self.conf[None, :n], self.valid[None, :n],
                            np.array([min(self.k, k_max)]))[0]
        return out


class TopkTestbench:
    """Random and directed vectors driven through the shared stream drivers, checked in order."""

    def __init__(self, dut, clk, params: dict, seed: int):
        self.length, self.k_max = params["length"], params["k_max"]
        self.k_width = self.k_max.bit_length()
        self.k_top = (1 << self.k_width) - 1  # largest k the field can carry (may be > k_max)
        self.rng = np.random.default_rng(seed)
        self.dut = dut
        self.source = StreamSource(dut, "i", clk, idle_prob=0.25, rng=random.Random(seed))
        self.sink = StreamSink(dut, "o", clk, ready_prob=0.6, rng=random.Random(seed + 1))
        self.sent: list[Vector] = []

    def payload(self, value: int, valid: bool, k: int, last: bool) -> int:
        return value | int(valid) << 16 | k << 17 | int(last) << (17 + self.k_width)

    async def send(self, vec: Vector) -> None:
        self.sent.append(vec)
        n = len(vec.conf)
        for pos in range(n):
            await self.source.send(self.payload(int(vec.conf[pos]), vec.valid[pos],
                                                int(vec.k_field[pos]), pos == n - 1))

    # -- stimulus -------------------------------------------------------------------------------
    def random_values(self, n: int) -> np.ndarray:
        rng = self.rng
        style = rng.integers(6)
        if style == 0:  # any bit pattern: half negative, occasional NaN/inf/subnormal
            return rng.integers(0, 1 << 16, n, dtype=np.uint16)
        if style == 1:  # few distinct values (many ties), drawn from the specials
            return rng.choice(rng.choice(SPECIALS, rng.integers(1, 5)), n)
        if style == 2:  # all negative (finite, -0, -inf): raw-bit ranking gets these backwards
            neg = rng.integers(0, 0x7F81, n, dtype=np.uint16) | np.uint16(0x8000)
            return np.where(rng.random(n) < 0.2, rng.choice(SPECIALS[[1, 3, 9, 11]], n), neg)
        if style == 3:  # mixture of specials and random, ascending or descending
            vals = np.where(rng.random(n) < 0.5, rng.choice(SPECIALS, n),
                            rng.integers(0, 1 << 16, n, dtype=np.uint16)).astype(np.uint16)
            order = np.argsort(bf16_key(vals), kind="stable")
            return vals[order if rng.random() < 0.5 else order[::-1]]
        if style == 4:  # near-ties: one sign, keys a few units apart
            return bf16_vector(rng, n, "near_ties")
        # small integers of both signs, -0 and +0: many ties
        small = rng.choice(np.array([-3, -2, -1, -0.0, 0.0, 1, 2, 3], np.float32), n)
        return (small.view(np.uint32) >> 16).astype(np.uint16)

    def random_vector(self) -> Vector:
        rng, L = self.rng, self.length
        n = L if rng.random() < 0.6 else int(rng.integers(1, L + 1))
        valid = rng.random(n) < rng.choice([1.0, 0.8, 0.5, 0.2, 0.0])
        r = rng.random()
        if r < 0.1:
            k = 0
        elif r < 0.2:
            k = self.k_max
        elif r < 0.3 and self.k_top > self.k_max:
            k = int(rng.integers(self.k_max + 1, self.k_top + 1))  # behaves as k_max
        else:
            k = int(rng.integers(0, self.k_max + 1))
        k_field = rng.integers(0, self.k_top + 1, n)  # garbage after element 0
        return Vector(self.random_values(n), valid, k, k_field)

    def directed(self) -> list[Vector]:
        L, K, rng = self.length, self.k_max, self.rng
        ones = np.ones(L, bool)
        rand = rng.integers(0, 1 << 16, L, dtype=np.uint16)
        neg = np.arange(L, dtype=np.uint16) + np.uint16(0xBF80)  # -1.0, then more negative
        return [
            Vector(rand, ones, 0),                                   # k = 0
            Vector(rand, ones, K),                                   # k = k_max
            Vector(rand, ones, min(L, self.k_top)),                  # k = length (or clamped)
            Vector(rand, ones, self.k_top),                          # largest k field
            Vector(rand, np.zeros(L, bool), K),                      # all invalid
            Vector(rand, np.zeros(L, bool), 1),
            Vector(rand, np.arange(L) % 4 == 3, K),                  # k > valid positions
            Vector(rand[:1], [True], 1),                             # one-element vectors
            Vector(rand[:1], [False], K),
            Vector(rand[:1], [True], 0),
            Vector(np.where(np.arange(L) % 2, 0x8000, 0x0000), ones, max(1, K // 2)),  # +-0 ties
            Vector(rng.choice(SPECIALS[[4, 5, 6, 7]], L), ones, max(1, K - 1)),  # NaNs only
            Vector(neg, ones, max(1, K // 2)),                       # all negative, descending
            Vector(neg[::-1], ones, max(1, K // 2)),                 # all negative, ascending
            Vector(np.resize(SPECIALS[[2, 3]], L), np.arange(L) % 3 != 1, K),  # +-inf, invalid
            Vector(np.full(L, 0xFF80), ones, K),                     # -inf ties with invalid
            Vector(np.arange(L, dtype=np.uint16) + 0x3F80, ones, K),  # ascending: shifts all
            Vector(rng.integers(0, 1 << 16, L + 2, dtype=np.uint16), np.ones(L + 2, bool),
                   K),                                               # too long: tail ignored
        ] + [
            # Near ties with the cut after each slot in turn: which of two close keys a slot
            # holds decides the mask only when k puts the cut right there.
            Vector(bf16_vector(rng, L, "near_ties"), ones, k)
            for k in range(1, min(K, L - 1) + 1) for _ in range(8)
        ]

    # -- checking -------------------------------------------------------------------------------
    async def check(self, board: Scoreboard) -> None:
        observed = await self.sink.wait_for(len(self.sent))
        for n, (vec, item) in enumerate(zip(self.sent, observed, strict=True)):
            board.compare(f"vector {n} (n={len(vec.conf)}, k={vec.k})",
                          vec.expected(self.length, self.k_max),
                          unpack_lanes(item["payload"], 1, self.length))


@cocotb.test()
async def random_and_directed(dut):
    """Directed edge cases and random vectors, random idle cycles and backpressure."""
    p = tb_params()
    clk = await start(dut)
    tb = TopkTestbench(dut, clk, p, cocotb.RANDOM_SEED)
    cocotb.start_soon(tb.sink.run())
    for vec in tb.directed():
        await tb.send(vec)
    for _ in range(p.get("random_vectors", 40)):
        await tb.send(tb.random_vector())
    # A burst with no idle cycles and an always-ready sink: back-to-back vectors.
    tb.source.idle_prob, tb.sink.ready_prob = 0.0, 1.0
    for _ in range(8):
        await tb.send(tb.random_vector())
    board = Scoreboard("topk_mask", dut._log)
    await tb.check(board)
    board.result()


@cocotb.test()
async def latency_and_throughput(dut):
    """Documented timing: one element per cycle, mask one cycle after ``last``, no bubbles."""
    p = tb_params()
    clk = await start(dut)
    tb = TopkTestbench(dut, clk, p, cocotb.RANDOM_SEED + 7)
    tb.source.idle_prob, tb.sink.ready_prob = 0.0, 1.0
    cocotb.start_soon(tb.sink.run())
    in_cycles, out_cycles = [], []

    async def monitor():
        cycle = 0
        while True:
            await RisingEdge(clk)
            cycle += 1
            if dut.i__valid.value and dut.i__ready.value:
                in_cycles.append(cycle)
            if dut.o__valid.value and dut.o__ready.value:
                out_cycles.append(cycle)

    cocotb.start_soon(monitor())
    vectors = [tb.random_vector() for _ in range(4)]
    for vec in vectors:
        await tb.send(vec)
    board = Scoreboard("topk_mask timing", dut._log)
    await tb.check(board)
    total = sum(len(v.conf) for v in vectors)
    board.compare("input transfers on consecutive cycles", np.arange(total),
                  np.array(in_cycles) - in_cycles[0])
    lasts = np.cumsum([len(v.conf) for v in vectors]) - 1
    board.compare("mask one cycle after last", np.array(in_cycles)[lasts] + 1,
                  np.array(out_cycles))
    board.result()
