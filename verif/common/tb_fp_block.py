"""cocotb testbench: a pipelined FP block (:class:`~memwall.verif.common.fp_harness.
StreamedFpBlock`) against the golden results its test computed.

``tb_params()``: ``inputs`` (operand port -> values) and ``expected`` (``y`` per operand set).
The operands are streamed with random gaps and the results taken with random back-pressure;
each result is compared with its expected value, and its tag with the operand set's index.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np

from memwall.verif.common.fp_harness import TAG_BITS
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, start


@cocotb.test()
async def stream_matches_golden(dut):
    inputs, expected = tb_params()["inputs"], tb_params()["expected"]
    clk = await start(dut)
    source = StreamSource(dut, "i", clk, idle_prob=0.3, rng=random.Random(cocotb.RANDOM_SEED))
    sink = StreamSink(dut, "o", clk, sideband=("y",), ready_prob=0.6,
                      rng=random.Random(cocotb.RANDOM_SEED + 1))
    cocotb.start_soon(sink.run())

    async def drive():
        for n in range(len(expected)):
            await source.send(n % (1 << TAG_BITS),
                              **{name: values[n] for name, values in inputs.items()})

    cocotb.start_soon(drive())
    observed = await sink.wait_for(len(expected), timeout_cycles=20 * len(expected) + 200)
    board = Scoreboard(dut._name, dut._log)
    board.compare("y", np.array(expected, dtype=np.int64),
                  np.array([item["y"] for item in observed], dtype=np.int64))
    board.compare("tags", np.arange(len(expected)) % (1 << TAG_BITS),
                  np.array([item["payload"] for item in observed]))
    board.result()
