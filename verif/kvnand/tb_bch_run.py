"""cocotb test behind ``memwall run kvnand --op bch``: the given messages through the BCH
encoder (:mod:`memwall.verif.kvnand.tb_bch`'s harness), codewords and cycles to a file."""

from __future__ import annotations

import json

import cocotb
import numpy as np

from memwall.golden.kvnand import bch
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import StreamSink, StreamSource, start
from memwall.verif.kvnand.tb_bch import Testbench


@cocotb.test()
async def program(dut):
    """Encode ``params["messages_bits"]`` (rows of 8192 0/1) and write the codeword rows to
    ``params["out"]`` with the cycles from the first input word to the last output word
    (``memwall run kvnand --op bch``)."""
    params = tb_params()
    tb = Testbench(dut, params)
    p = tb.p
    clk = await start(dut)
    cocotb.start_soon(tb._monitor())
    source = StreamSource(dut, "i", clk)
    sink = StreamSink(dut, "o", clk)
    cocotb.start_soon(sink.run())
    messages = np.asarray(params["messages_bits"], np.uint8)
    began = tb.cycle

    async def feed():
        for word in bch.to_words(messages, p):
            await source.send(word)

    cocotb.start_soon(feed())
    total = len(messages) * (bch.N // p)
    items = await sink.wait_for(total, timeout_cycles=total * 50 + 100)
    words = [it["payload"] for it in items[:total]]
    codewords = bch.from_words(words, p).reshape(len(messages), bch.N)
    with open(params["out"], "w") as f:
        json.dump({"codewords": codewords.tolist(), "cycles": tb.out_cycles[total - 1] - began},
                  f)
