"""cocotb testbench: MX/BF16 dequantiser and Vector SRAM write engine.

The dequantiser is built for the MX format of the ``fmt`` parameter (default MXFP8 E4M3).
Prefetches are laid out as HBM beats by :mod:`memwall.golden.dplena.hbm` and their expected BF16
lanes come from :func:`memwall.golden.dplena.mx.dequantize` (or are the BF16 input itself). One
monitor samples every clock edge: it checks ``busy`` against a cycle model (high from the accepting
edge of a non-empty command until the edge that accepts its last write), that beats and writes only
move while busy, and records each write's row, bank and lanes, which are then compared with the
golden model (``row = cmd.row + k // NB``, ``bank = k % NB``, lanes holding valid elements).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.dplena.hbm import (
    beats_to_words,
    num_beats,
    prefetch_beats_bf16,
    prefetch_beats_mx,
    write_lanes,
)
from memwall.golden.dplena.mx import dequantize, mx_format, num_blocks, quantize
from memwall.hdl.dplena.dequant import DEFAULT_FORMAT, dequant_cmd_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSource, pack_struct, start, unpack_lanes


@dataclass
class Prefetch:
    fmt: str                 # an MX format name or "bf16"
    row: int
    expected: np.ndarray     # uint16 BF16 bits, one per element
    words: list[int]         # HBM beats as port words
    # Observed by the monitor:
    beats_taken: int = 0
    writes: list[tuple[int, int, int]] = field(default_factory=list)   # (row, bank, data)
    accept_edge: int | None = None
    done_edge: int | None = None

    @property
    def count(self) -> int:
        return len(self.expected)

    def num_writes(self, w: int) -> int:
        return -(-self.count // w)


def mx_prefetch(elements: np.ndarray, scales: np.ndarray, row: int, w: int,
                fmt: str = DEFAULT_FORMAT) -> Prefetch:
    return Prefetch(fmt, row, dequantize(elements, scales, fmt),
                    beats_to_words(prefetch_beats_mx(elements, scales, w, fmt)))


def bf16_prefetch(bits: np.ndarray, row: int, w: int) -> Prefetch:
    return Prefetch("bf16", row, bits.astype(np.uint16),
                    beats_to_words(prefetch_beats_bf16(bits.astype(np.uint16), w)))


class DequantTestbench:
    """Drives commands and beats, applies ``wr_ready`` backpressure, monitors every edge."""

    def __init__(self, dut, *, beat_idle: float = 0.0, cmd_idle: float = 0.0,
                 ready_prob: float = 1.0):
        params = tb_params()
        self.dut = dut
        self.vlen, self.w, self.row_bits = params["vlen"], params["beat_bytes"], params["row_bits"]
        self.fmt = params.get("fmt", DEFAULT_FORMAT)
        self.lanes = write_lanes(self.fmt, self.w)     # elements per write
        self.banks = self.vlen // self.lanes
        self.layout = dequant_cmd_layout(self.row_bits)
        self.beat_idle, self.cmd_idle, self.ready_prob = beat_idle, cmd_idle, ready_prob
        self.board = Scoreboard(dut._name, dut._log)
        self.errors: list[str] = []
        self.extra_writes = 0

    def error(self, msg: str) -> None:
        if len(self.errors) < 20:
            self.dut._log.error(msg)
        self.errors.append(msg)

    async def run(self, prefetches: list[Prefetch], drain_cycles: int = 64) -> None:
        dut, seed = self.dut, cocotb.RANDOM_SEED
        dut.wr_ready.value = 0
        clk = await start(dut)
        cmds = StreamSource(dut, "cmd", clk, idle_prob=self.cmd_idle, rng=random.Random(seed))
        beats = StreamSource(dut, "beat", clk, idle_prob=self.beat_idle,
                             rng=random.Random(seed + 1))

        async def drive_cmds():
            for p in prefetches:
                await cmds.send(pack_struct(self.layout, count=p.count, bf16=p.fmt == "bf16",
                                            row=p.row))

        async def drive_beats():
            for p in prefetches:
                for word in p.words:
                    await beats.send(word)

        cocotb.start_soon(drive_cmds())
        cocotb.start_soon(drive_beats())
        total_beats = sum(len(p.words) for p in prefetches)
        budget = 20 * (total_beats + len(prefetches)) + 2000
        await self._monitor(clk, prefetches, budget, drain_cycles)
        self._score(prefetches)

    async def _monitor(self, clk, prefetches, budget: int, drain_cycles: int) -> None:
        dut = self.dut
        ready_rng = random.Random(cocotb.RANDOM_SEED + 2)
        accepted = 0                  # commands accepted so far
        current: Prefetch | None = None
        busy_model = False
        finished_at = None
        isolation = _isolation_wires(dut)
        for edge in range(budget):
            dut.wr_ready.value = int(ready_rng.random() < self.ready_prob)
            await RisingEdge(clk)
            if isolation:
                self._check_isolation(edge, *isolation)
            busy = bool(dut.busy.value)
            cmd_fire = bool(dut.cmd__valid.value) and bool(dut.cmd__ready.value)
            beat_fire = bool(dut.beat__valid.value) and bool(dut.beat__ready.value)
            wr_valid = bool(dut.wr_valid.value)
            wr_fire = wr_valid and bool(dut.wr_ready.value)
            if busy != busy_model:
                self.error(f"edge {edge}: busy = {int(busy)}, expected {int(busy_model)}")
            if bool(dut.cmd__ready.value) == busy:
                self.error(f"edge {edge}: cmd.ready = {int(dut.cmd__ready.value)} with busy "
                           f"= {int(busy)}")
            if (beat_fire or wr_valid) and not busy_model:
                self.error(f"edge {edge}: beat or write outside a prefetch "
                           f"(beat {int(beat_fire)}, wr_valid {int(wr_valid)})")
            if beat_fire and busy_model:
                current.beats_taken += 1
            if wr_fire:
                if current is None or not busy_model:
                    self.extra_writes += 1
                else:
                    current.writes.append((int(dut.wr_row.value), int(dut.wr_bank.value),
                                           dut.wr_data.value.to_unsigned()))
                    if len(current.writes) == current.num_writes(self.lanes):
                        busy_model = False
                        current.done_edge = edge
            if cmd_fire:
                if accepted >= len(prefetches):
                    self.error(f"edge {edge}: unexpected command accepted")
                else:
                    current = prefetches[accepted]
                    current.accept_edge = edge
                    accepted += 1
                    busy_model = current.count > 0
                    if not busy_model:
                        current.done_edge = edge
            if finished_at is None and accepted == len(prefetches) and not busy_model:
                finished_at = edge
            if finished_at is not None and edge - finished_at >= drain_cycles:
                return
        self.error(f"timeout after {budget} edges: {accepted} of {len(prefetches)} commands "
                   f"accepted, busy model {busy_model}")

    def _check_isolation(self, edge: int, mode_bf16, lane_elem, lane_raw) -> None:
        """The control's operand isolation (the lanes' inputs of the format not in use are
        held at zero, so their logic does not toggle): a power contract no output shows."""
        bf16 = bool(mode_bf16.value)
        idle = lane_elem if bf16 else lane_raw
        if idle.value.to_unsigned():
            self.error(f"edge {edge}: lane_{'elem' if bf16 else 'raw'} is not zero in "
                       f"{'BF16' if bf16 else self.fmt} mode")

    def _score(self, prefetches: list[Prefetch]) -> None:
        w, g, mask = self.w, self.lanes, (1 << self.row_bits) - 1
        for n, p in enumerate(prefetches):
            label = f"prefetch {n} ({p.fmt}, count {p.count}, row {p.row})"
            want_beats = num_beats(p.count, p.fmt, w)
            if p.beats_taken != want_beats or len(p.writes) != p.num_writes(g):
                self.error(f"{label}: {p.beats_taken} beats taken (expected {want_beats}), "
                           f"{len(p.writes)} writes (expected {p.num_writes(g)})")
            for k, (row, bank, word) in enumerate(p.writes):
                want_row, want_bank = (p.row + k // self.banks) & mask, k % self.banks
                if (row, bank) != (want_row, want_bank):
                    self.error(f"{label} write {k}: row {row} bank {bank}, expected row "
                               f"{want_row} bank {want_bank}")
                valid = min(g, p.count - k * g)
                lanes = unpack_lanes(word, 16, g)[:valid].astype(np.uint16)
                self.board.compare(f"{label} write {k}", p.expected[k * g:k * g + valid], lanes)
        if self.extra_writes:
            self.error(f"{self.extra_writes} writes outside any prefetch")
        assert not self.errors, f"{len(self.errors)} protocol errors; first: {self.errors[0]}"
        self.board.result()


def _isolation_wires(dut) -> tuple | None:
    """The control's ``mode_bf16``, ``lane_elem`` and ``lane_raw``: wires of the top module,
    which Icarus shows (Verilator keeps only the ports)."""
    if "icarus" not in cocotb.SIM_NAME.lower():
        return None
    return dut.control_mode_bf16, dut.control_lane_elem, dut.control_lane_raw


def random_scales(rng: np.random.Generator, n: int) -> np.ndarray:
    """E8M0 scales: mostly near 2**0, some at both extremes (subnormal, overflow) and NaN."""
    kind = rng.choice(["near", "low", "high", "any"], n, p=[0.5, 0.2, 0.2, 0.1])
    near = rng.integers(110, 145, n)
    low = rng.integers(0, 12, n)
    high = rng.integers(240, 256, n)
    anyv = rng.integers(0, 256, n)
    out = np.select([kind == "near", kind == "low", kind == "high"], [near, low, high], anyv)
    return out.astype(np.uint8)


def random_prefetch(rng: np.random.Generator, w: int, row_bits: int, fmt: str, count: int):
    row = int(rng.integers(0, 1 << row_bits))
    if fmt == "bf16":
        return bf16_prefetch(rng.integers(0, 1 << 16, count, dtype=np.uint16), row, w)
    if rng.random() < 0.3:        # realistic logits through the golden quantiser
        x = (rng.standard_normal(count) * np.exp2(rng.uniform(-8, 8))).astype(np.float32)
        elements, scales = quantize(x, fmt)
    else:
        elements = rng.integers(0, 1 << mx_format(fmt).bits, count, dtype=np.uint8)
        scales = random_scales(rng, num_blocks(count))
    return mx_prefetch(elements, scales, row, w, fmt)


def random_counts(rng: np.random.Generator, w: int, n: int) -> list[int]:
    group = 32 * w
    directed = [0, 1, 31, 32, 33, w - 1, w, w + 1, w // 2, w // 2 + 1, 3 * w // 2,
                2 * w - 1, 2 * w, 2 * w + 1, 4 * w // 3, 4 * w // 3 + 1, 3 * w, 4 * w + 5,
                group - 1, group, group + 1, 2 * group + w + 17]
    counts = list(directed)
    while len(counts) < n:
        counts.append(int(rng.integers(1, 3 * group)))
    rng.shuffle(counts)
    return counts


@cocotb.test()
async def exhaustive_lanes(dut):
    """All 2**(bits + 8) (element, scale) pairs through the lanes in one MX prefetch (no
    stalls), then a BF16 and a short MX prefetch; also checks the no-stall cycle counts."""
    params = tb_params()
    w, row_bits = params["beat_bytes"], params["row_bits"]
    fmt = params.get("fmt", DEFAULT_FORMAT)
    codes = 1 << mx_format(fmt).bits
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    # Every scale covers max(1, codes / 32) blocks of 32 elements holding every code.
    blocks = max(1, codes // 32)
    scales = np.repeat(rng.permutation(256).astype(np.uint8), blocks)
    elements = np.concatenate([rng.permutation(np.resize(np.arange(codes), 32 * blocks))
                               for _ in range(256)]).astype(np.uint8)
    pairs = set(zip(np.repeat(scales, 32).tolist(), elements.tolist(), strict=True))
    assert len(pairs) == codes * 256
    prefetches = [mx_prefetch(elements, scales, 3, w, fmt),
                  random_prefetch(rng, w, row_bits, "bf16", 5 * w + 3),
                  random_prefetch(rng, w, row_bits, fmt, 40 * w + 5)]
    tb = DequantTestbench(dut)
    await tb.run(prefetches)
    for n, p in enumerate(prefetches):
        # Accepting edge + beats + one edge for the last write; the next command waits one more.
        spent = p.done_edge - p.accept_edge
        assert spent == len(p.words) + 1, f"prefetch {n}: {spent} edges, expected " \
            f"{len(p.words) + 1}"
        if n:
            gap = p.accept_edge - prefetches[n - 1].accept_edge
            assert gap == len(prefetches[n - 1].words) + 2, f"prefetch {n}: period {gap}"


@cocotb.test()
async def random_stream(dut):
    """Random prefetches of both formats, beat idle gaps and write backpressure."""
    params = tb_params()
    w, row_bits = params["beat_bytes"], params["row_bits"]
    fmt = params.get("fmt", DEFAULT_FORMAT)
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    counts = random_counts(rng, w, params.get("prefetches", 30))
    prefetches = [random_prefetch(rng, w, row_bits, str(rng.choice([fmt, "bf16"])), c)
                  for c in counts]
    tb = DequantTestbench(dut, beat_idle=0.25, cmd_idle=0.3, ready_prob=0.6)
    await tb.run(prefetches)
