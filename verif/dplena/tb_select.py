"""cocotb testbench: V_SELECT_INT lanes against golden masked select."""

from __future__ import annotations

import random

import cocotb
import numpy as np

from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import (
    Scoreboard,
    StreamSink,
    StreamSource,
    pack_lanes,
    start,
    unpack_lanes,
)


def _golden(mask, a, b):
    return np.where(mask, a, b)


@cocotb.test()
async def random_and_directed(dut):
    p = tb_params()
    lanes, width = p["lanes"], p["width"]
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    clk = await start(dut)
    source = StreamSource(dut, "i", clk, idle_prob=0.2, rng=random.Random(cocotb.RANDOM_SEED))
    sink = StreamSink(dut, "o", clk, sideband=("y",), ready_prob=0.6,
                      rng=random.Random(cocotb.RANDOM_SEED + 1))
    cocotb.start_soon(sink.run())
    top = np.uint64((1 << width) - 1)
    cases = [  # directed: all-select-a, all-select-b, extremes, alternating
        (np.ones(lanes, bool), np.full(lanes, top), np.zeros(lanes, np.uint64)),
        (np.zeros(lanes, bool), np.full(lanes, top), np.zeros(lanes, np.uint64)),
        (np.arange(lanes) % 2 == 0, np.full(lanes, 1 << (width - 1), np.uint64),
         np.full(lanes, top, np.uint64)),
    ]
    for _ in range(p.get("random_vectors", 40)):
        cases.append((rng.random(lanes) < 0.5,
                      rng.integers(0, 1 << width, lanes, dtype=np.uint64),
                      rng.integers(0, 1 << width, lanes, dtype=np.uint64)))
    for n, (mask, a, b) in enumerate(cases):
        await source.send(n % 16, mask=pack_lanes(mask, 1), a=pack_lanes(a, width),
                          b=pack_lanes(b, width))
    observed = await sink.wait_for(len(cases))
    board = Scoreboard("masked_select", dut._log)
    for n, ((mask, a, b), item) in enumerate(zip(cases, observed, strict=True)):
        board.compare(f"vector {n} tag", n % 16, item["payload"])
        board.compare(f"vector {n} y", _golden(mask, a, b), unpack_lanes(item["y"], width, lanes))
    board.result()
