"""cocotb testbench of the KVNAND KV write-combine buffer (:class:`memwall.hdl.kvnand.kvbuf.
KvWriteBuffer`) against :func:`memwall.golden.kvnand.kvbuf.simulate`.

A seeded session: ``tokens`` tokens of the interleaved decode order (every layer, every head
group, K then V; :func:`memwall.golden.kvnand.kvbuf.generation_order`) or, with
``params["order"] == "random"``, the same slices with the streams interleaved at random (each
stream's tokens still in order), random slice bytes; then one ``flush``. Checked, in order:
every program request's header (stream, page number, valid bytes, partial flag) and every byte
of its page (0xFF padding included), the ``header``/``last`` framing, that nothing more comes
out, and the ``programs``/``partials`` counters. With ``params["stall"]`` the slice source
idles and the request sink back-pressures at random.

params: the component's (``slots``, ``page_bytes``, ``slice_bytes``, ``stream_bits``,
``word_bytes``, ``mapping``, ``policy``, ``page_bits``, ``count_bits``) and ``tokens``,
``layers``, ``head_groups``, ``stall``, ``order``.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.kvnand import kvbuf as golden
from memwall.hdl.kvnand.kvbuf import in_layout, out_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, pack_struct, start


def make_slices(p: dict, rng: np.random.Generator) -> list[tuple[int, np.ndarray]]:
    slices = golden.generation_order(p["tokens"], p["layers"], p["head_groups"],
                                     p["slice_bytes"], rng)
    if p.get("order", "interleaved") == "random":
        per_stream: dict[int, list] = {}
        for item in slices:
            per_stream.setdefault(item[0], []).append(item)
        streams = [s for s, items in per_stream.items() for _ in items]
        rng.shuffle(streams)
        slices = [per_stream[s].pop(0) for s in streams]
    return slices


class Testbench:
    def __init__(self, dut, params: dict):
        self.dut, self.p = dut, params
        self.stall = float(params.get("stall", 0.0))
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.word_bytes = params["word_bytes"]
        self.wpp = params["page_bytes"] // self.word_bytes
        self.ilayout = in_layout(params["stream_bits"], self.word_bytes)
        self.olayout = out_layout(params["stream_bits"], params["page_bits"],
                                  params["page_bytes"], self.word_bytes)

    async def _feed(self, source: StreamSource, flush: StreamSource, slices) -> None:
        wb = self.word_bytes
        for stream, data in slices:
            for k in range(0, len(data), wb):
                word = int.from_bytes(bytes(data[k:k + wb]), "little")
                await source.send(pack_struct(self.ilayout, data=word, stream=stream))
        await flush.send()

    async def run(self) -> None:
        dut, p = self.dut, self.p
        clk = await start(dut)
        slices = make_slices(p, np.random.default_rng(cocotb.RANDOM_SEED))
        want = golden.simulate(slices, p["slots"], p["page_bytes"], p["slice_bytes"],
                               p["mapping"], p["policy"])
        programs, counters = want["programs"], want["counters"]
        dut._log.info("%d slices, %s mapping, %s policy: %d programs (%d partial, %d evictions)",
                      len(slices), p["mapping"], p["policy"], counters["programs"],
                      counters["partial"], counters["evictions"])
        source = StreamSource(dut, "i", clk, idle_prob=self.stall, rng=self.rng)
        flush = StreamSource(dut, "flush", clk)
        sink = StreamSink(dut, "o", clk, ready_prob=1.0 - self.stall, rng=self.rng)
        cocotb.start_soon(sink.run())
        cocotb.start_soon(self._feed(source, flush, slices))

        beats = len(programs) * (1 + self.wpp)
        items = await sink.wait_for(beats, timeout_cycles=50 * beats + 10_000)
        board = Scoreboard("kvnand_kvbuf", dut._log)
        page_mod = 1 << p["page_bits"]
        for n, prog in enumerate(programs):
            group = [self.olayout.from_bits(it["payload"])
                     for it in items[n * (1 + self.wpp):(n + 1) * (1 + self.wpp)]]
            head, body = group[0], group[1:]
            info = head.body.info
            board.compare(f"program {n} header (header, stream, page, valid, partial)",
                          [1, prog["stream"], prog["page"] % page_mod, prog["valid"],
                           int(prog["partial"])],
                          [head.header, info.stream, info.page, info.valid, info.partial])
            board.compare(f"program {n} framing (header, last per data beat)",
                          [[0, int(k == self.wpp - 1)] for k in range(self.wpp)],
                          [[b.header, b.last] for b in body])
            got = b"".join(int(b.body.data).to_bytes(self.word_bytes, "little") for b in body)
            board.compare(f"program {n} (stream {prog['stream']} page {prog['page']}) bytes",
                          prog["data"], np.frombuffer(got, np.uint8))
        for _ in range(4 * self.wpp):          # nothing more comes out
            await RisingEdge(clk)
        board.compare("output beats", beats, len(sink.items))
        count_mod = 1 << p["count_bits"]
        board.compare("counters (programs, partials)",
                      [counters["programs"] % count_mod, counters["partial"] % count_mod],
                      [dut.programs.value.to_unsigned(), dut.partials.value.to_unsigned()])
        board.result()


@cocotb.test()
async def session(dut):
    await Testbench(dut, tb_params()).run()
