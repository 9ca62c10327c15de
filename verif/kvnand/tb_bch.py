"""cocotb testbench of the KVNAND BCH encoder (:class:`memwall.hdl.kvnand.bch.BchEncoder`)
against :func:`memwall.golden.kvnand.bch.encode`.

Codewords of the messages named in ``params["messages"]`` (``random``, ``zero``, ``ones``,
``single``: one 1 at a random position; default all four), sent back to back as p-bit words
(word order of :mod:`memwall.golden.kvnand.bch`); every output word is compared bit for bit with the
golden codeword stream. ``streaming``: no stalls, and the output must be one word per cycle from
the first word to the last (full throughput, parity words included). ``stalls``: the source idles
and the sink back-pressures at random with probability ``params["stall"]`` (default 0.3).
``params["p"]``: the word width the design was built with.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.kvnand import bch
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, start

KINDS = ("random", "zero", "ones", "single")


def make_messages(kinds, rng: np.random.Generator) -> np.ndarray:
    """One 8192-bit message per kind, ``uint8`` (rows, 8192)."""
    out = np.zeros((len(kinds), bch.K), dtype=np.uint8)
    for row, kind in enumerate(kinds):
        if kind == "random":
            out[row] = rng.integers(0, 2, bch.K)
        elif kind == "ones":
            out[row] = 1
        elif kind == "single":
            out[row, rng.integers(0, bch.K)] = 1
        elif kind != "zero":
            raise ValueError(f"message kind {kind!r} is not one of {KINDS}")
    return out


class Testbench:
    def __init__(self, dut, params: dict):
        self.dut, self.p = dut, int(params["p"])
        self.kinds = tuple(params.get("messages", KINDS))
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.np_rng = np.random.default_rng(cocotb.RANDOM_SEED)
        self.cycle = 0
        self.out_cycles: list[int] = []      # cycles of the output transfers

    async def _monitor(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            if dut.o__valid.value and dut.o__ready.value:
                self.out_cycles.append(self.cycle)

    async def run(self, stall: float) -> None:
        dut, p = self.dut, self.p
        clk = await start(dut)
        cocotb.start_soon(self._monitor())
        source = StreamSource(dut, "i", clk, idle_prob=stall, rng=self.rng)
        sink = StreamSink(dut, "o", clk, ready_prob=1.0 - stall, rng=self.rng)
        cocotb.start_soon(sink.run())

        messages = make_messages(self.kinds, self.np_rng)
        expected = bch.encode(messages)
        per_word = bch.N // p
        dut._log.info("p=%d: %d codewords (%s), %d words each, stall %.2f", p, len(messages),
                      ", ".join(self.kinds), per_word, stall)

        async def feed():
            for word in bch.to_words(messages, p):
                await source.send(word)

        cocotb.start_soon(feed())
        total = len(messages) * per_word
        items = await sink.wait_for(total, timeout_cycles=total * 50 + 100)

        board = Scoreboard(f"bch_encoder p={p}", dut._log)
        for c, codeword in enumerate(expected):
            words = bch.to_words(codeword, p)
            for w, exp in enumerate(words):
                got = items[c * per_word + w]["payload"]
                phase = "message" if w < bch.K // p else "parity"
                board.compare(f"codeword {c} ({self.kinds[c]}) {phase} word {w}",
                              bch.from_words([exp], p), bch.from_words([got], p))
        board.result()
        if not stall:
            first, last = self.out_cycles[0], self.out_cycles[total - 1]
            assert last - first == total - 1, \
                f"{total} output words took {last - first + 1} cycles without stalls " \
                f"(expected one word per cycle)"


@cocotb.test()
async def streaming(dut):
    await Testbench(dut, tb_params()).run(stall=0.0)


@cocotb.test()
async def stalls(dut):
    params = tb_params()
    await Testbench(dut, params).run(stall=float(params.get("stall", 0.3)))

