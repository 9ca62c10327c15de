"""cocotb testbench of the KVNAND plane PE (:class:`memwall.hdl.kvnand.pe.Pe`) against
:mod:`memwall.golden.kvnand.pe`.

A seeded sequence of page commands in the config's format (:func:`make_cases`): GEMV pages of
several shapes, LOGIT at every head count the config allows, and an ATTEND stream of two pages
(the first clears, the second emits; in W8A8 with probability scales 2**-7 and 2**-12 folded
into the V pages' group scales, :func:`memwall.golden.kvnand.pe.prob_scales`). BF16 operands
include signed zeros, subnormals, values near overflow, infinities and NaNs; integer pages their
extremes. Before each command the input-vector words and scales are written. Checked: every
FP32 result bit for bit, in order; with ``params["stall"]`` the page source idles and the result
sink back-pressures at random; without, each command takes exactly
:func:`memwall.hdl.kvnand.program.command_cycles`. The ``program`` test runs given commands
for ``memwall run kvnand``.
"""

from __future__ import annotations

import json
import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.families.kvnand.config import KvnandConfig
from memwall.golden.kvnand import pe as golden
from memwall.hdl.kvnand.pe import Pe, command_layout
from memwall.hdl.kvnand.program import PageCommand, command_cycles, plan_page
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, pack_struct, start

#: BF16 codes worth meeting: +-0, smallest subnormal, largest subnormal, near the top, inf, NaN.
SPECIAL_BF16 = (0x0000, 0x8000, 0x0001, 0x007F, 0x7F7F, 0xFF00, 0x7F80, 0xFF80, 0x7FC1)


def _bf16(rng, shape, special: float) -> np.ndarray:
    """BF16 codes over 24 octaves either side of 1 (so that sums round and their order
    shows), some special."""
    v = rng.standard_normal(shape) * 2.0 ** rng.integers(-24, 24, shape)
    bits = (v.astype(np.float32).view(np.uint32) >> 16).astype(np.int64)
    pick = rng.random(shape) < special
    return np.where(pick, rng.choice(SPECIAL_BF16, shape), bits)


def _codes(rng, kind: str, shape, special: float) -> np.ndarray:
    if kind == "bf16":
        return _bf16(rng, shape, special)
    lo, hi = (-128, 127) if kind == "int8" else (-8, 7)
    out = rng.integers(lo, hi + 1, shape)
    out.ravel()[: 2] = (lo, hi)
    return out


def _inputs(rng, cfg: KvnandConfig, shape, special: float) -> np.ndarray:
    return _codes(rng, golden.input_kind(cfg.fmt), shape, special)


def make_cases(cfg: KvnandConfig, rng: np.random.Generator, special: float = 0.03
               ) -> list[PageCommand]:
    n, cases = cfg.n_fmac, []

    def scales(kind, count):
        if kind == "bf16":
            return None
        return _bf16(rng, -(-count // cfg.group), 0.0)

    kind = golden.page_kind(cfg.fmt, "gemv")
    most = cfg.page_elements(kind)
    # Special values in one case of each mode only: a NaN or inf input poisons every sum it
    # meets, and the other cases must show the order of the sums.
    for i, cols in enumerate(sorted({n, 2 * n, min(most, 8 * n)})):
        rows = max(1, min(most // cols, 16))
        sp = special if i == 0 else 0.0
        codes = _codes(rng, kind, rows * cols, sp)
        cases.append(plan_page(cfg, "gemv", codes, cols, _inputs(rng, cfg, cols, sp),
                               scales(kind, rows * cols)))
    kv = golden.page_kind(cfg.fmt, "logit")
    heads = 1
    while heads <= cfg.max_heads:
        d = max(n, cfg.max_d // 2)
        tokens = max(1, min(cfg.page_elements(kv) // d, 8))
        sp = special if heads == 1 else 0.0
        codes = _codes(rng, kv, tokens * d, sp)
        cases.append(plan_page(cfg, "logit", codes, d, _inputs(rng, cfg, (heads, d), sp),
                               scales(kv, tokens * d)))
        heads *= 2
    heads, d = cfg.max_heads, cfg.max_d
    tokens = max(1, min(cfg.page_elements(kv) // d, 4))
    acc = None
    for page in range(2):
        codes = _codes(rng, kv, tokens * d, special)
        p = _inputs(rng, cfg, (tokens, heads), special)
        sc = scales(kv, tokens * d)
        if golden.input_kind(cfg.fmt) == "int8":
            # W8A8: p = c * 2**e, the scale folded into the V page's (golden/kvnand/pe.py):
            # softmax-like codes 0..127 in units of 1/128, then every code in finer units.
            p_exp = (-7, -12)[page]
            if page == 0:
                p = rng.integers(0, 128, (tokens, heads))
            sc = golden.prob_scales(sc, p_exp)
        cmd = plan_page(cfg, "attend", codes, d, p, sc, clear=page == 0, emit=page == 1,
                        acc=acc)
        acc = cmd.acc
        cases.append(cmd)
    return cases


class Testbench:
    def __init__(self, dut, params: dict):
        self.dut = dut
        self.cfg = KvnandConfig(**params["config"])
        self.stall = float(params.get("stall", 0.0))
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.cycle = 0

    async def _clock(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    async def _write(self, clk, prefix: str, words: list[int]):
        dut = self.dut
        for addr, word in enumerate(words):
            getattr(dut, f"{prefix}_we").value = 1
            getattr(dut, f"{prefix}_addr").value = addr
            getattr(dut, f"{prefix}_data").value = word
            await RisingEdge(clk)
        getattr(dut, f"{prefix}_we").value = 0

    async def _start(self):
        dut = self.dut
        clk = await start(dut)
        cocotb.start_soon(self._clock())
        self.clk = clk
        self.cmd_src = StreamSource(dut, "cmd", clk)
        self.pages = StreamSource(dut, "page", clk, idle_prob=self.stall, rng=self.rng)
        self.sink = StreamSink(dut, "result", clk, ready_prob=1.0 - self.stall, rng=self.rng)
        cocotb.start_soon(self.sink.run())
        self.seen = 0

    async def _command(self, n: int, mode: str, command: dict, beats, vec, scales,
                       outputs: int) -> tuple[int, np.ndarray]:
        """Write the vector and scales, run one command; its cycles (acceptance to the next
        ``cmd.ready``) and its ``outputs`` results (FP32 bits)."""
        dut, clk = self.dut, self.clk
        await self._write(clk, "vec", vec)
        if scales:
            await self._write(clk, "scale", scales)

        async def feed():
            for beat in beats:
                await self.pages.send(beat)
        cocotb.start_soon(feed())
        await self.cmd_src.send(pack_struct(command_layout(self.cfg), **command))
        began = self.cycle - 1                 # the edge that accepted the command
        await RisingEdge(clk)
        while not int(dut.cmd__ready.value):
            await RisingEdge(clk)
            assert self.cycle - began < 1_000_000, f"command {n} ({mode}) hangs"
        took = self.cycle - began
        items = await self.sink.wait_for(self.seen + outputs) if outputs else []
        got = np.array([it["payload"] for it in items[self.seen:]], np.uint32)
        self.seen += outputs
        return took, got

    async def run(self):
        dut, cfg = self.dut, self.cfg
        await self._start()
        board = Scoreboard("kvnand_pe", dut._log)
        pe = Pe(cfg)
        for n, case in enumerate(make_cases(cfg, np.random.default_rng(cocotb.RANDOM_SEED))):
            c = case.command
            outputs = 0 if case.expect is None else len(case.expect)
            took, got = await self._command(n, case.mode, c, case.beats, case.vec, case.scales,
                                            outputs)
            dut._log.info("command %d %s units %d width %d heads %d emit %d: %d cycles", n,
                          case.mode, c["units"], c["width"], 1 << c["heads_log2"], c["emit"],
                          took)
            if not self.stall:
                want = command_cycles(cfg, case, pe.latency(case.mode, c["heads_log2"],
                                                             bool(c["emit"])))
                board.compare(f"command {n} ({case.mode}) cycles", want, took)
            if outputs:
                board.compare(f"command {n} ({case.mode}, heads {1 << c['heads_log2']}) "
                              "results", case.expect.astype(np.uint32), got)
        board.result()


@cocotb.test()
async def pages(dut):
    await Testbench(dut, tb_params()).run()


@cocotb.test()
async def program(dut):
    """Run ``params["commands"]`` (each: mode, command, beats, vec, scales, outputs) and write
    each one's cycles and results to ``params["out"]`` (``memwall run kvnand --op pe``)."""
    p = tb_params()
    tb = Testbench(dut, p)
    await tb._start()
    out = []
    for n, c in enumerate(p["commands"]):
        took, got = await tb._command(n, c["mode"], c["command"], c["beats"], c["vec"],
                                      c["scales"], c["outputs"])
        out.append({"cycles": took, "results": got.tolist()})
    with open(p["out"], "w") as f:
        json.dump(out, f)


def full_pages(cfg: KvnandConfig, rng: np.random.Generator) -> list[PageCommand]:
    """One whole BF16 page per mode at the config's largest head group: GEMV rows of
    ``max_d`` columns, LOGIT and ATTEND tokens of ``max_d`` (the paper's balance cases)."""
    d, heads = cfg.max_d, cfg.max_heads
    kind = golden.page_kind(cfg.fmt, "logit")
    tokens = cfg.page_elements(kind) // d
    cases = []
    if golden.page_kind(cfg.fmt, "gemv") == "bf16":
        cases.append(plan_page(cfg, "gemv", _bf16(rng, tokens * d, 0), d,
                               _inputs(rng, cfg, d, 0)))
    cases.append(plan_page(cfg, "logit", _bf16(rng, tokens * d, 0), d,
                           _inputs(rng, cfg, (heads, d), 0)))
    cases.append(plan_page(cfg, "attend", _bf16(rng, tokens * d, 0), d,
                           _inputs(rng, cfg, (tokens, heads), 0), emit=False))
    return cases


@cocotb.test()
async def balance(dut):
    """Whole pages (:func:`full_pages`): results bit-exact, cycles equal to the golden count;
    each command's cycles go to ``params["out"]`` for the balance against tR."""
    p = tb_params()
    tb = Testbench(dut, p)
    await tb._start()
    board = Scoreboard("kvnand_pe balance", dut._log)
    pe, out = Pe(tb.cfg), []
    for n, case in enumerate(full_pages(tb.cfg, np.random.default_rng(cocotb.RANDOM_SEED))):
        c = case.command
        outputs = 0 if case.expect is None else len(case.expect)
        took, got = await tb._command(n, case.mode, c, case.beats, case.vec, case.scales,
                                      outputs)
        want = command_cycles(tb.cfg, case, pe.latency(case.mode, c["heads_log2"],
                                                        bool(c["emit"])))
        board.compare(f"{case.mode} page cycles", want, took)
        if outputs:
            board.compare(f"{case.mode} page results", case.expect.astype(np.uint32), got)
        out.append({"mode": case.mode, "heads": 1 << c["heads_log2"], "cycles": took,
                    "macs": c["units"] * c["width"] * (1 if case.mode == "gemv"
                                                       else 1 << c["heads_log2"])})
    board.result()
    with open(p["out"], "w") as f:
        json.dump(out, f)
