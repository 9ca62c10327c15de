"""cocotb testbench of the test-only accumulator family."""

from __future__ import annotations

import json
import random

import cocotb
from cocotb.triggers import RisingEdge

from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, start

from . import accumulate


async def _drive(dut, values, width) -> list[int]:
    clk = await start(dut)
    totals = []
    for value in values:
        dut.i__valid.value = 1
        dut.i__payload.value = value
        await RisingEdge(clk)
        dut.i__valid.value = 0
        await RisingEdge(clk)
        totals.append(int(dut.total.value.to_unsigned()))
    return totals


@cocotb.test()
async def random_values(dut):
    p = tb_params()
    rng = random.Random(cocotb.RANDOM_SEED)
    values = [rng.randrange(1 << p["width"]) for _ in range(p["count"])]
    board = Scoreboard("tinyacc")
    board.compare("totals", [int(v) for v in accumulate(values, p["width"])],
                  await _drive(dut, values, p["width"]))
    board.result()


@cocotb.test()
async def replay(dut):
    p = tb_params()
    with open(p["out"], "w") as f:
        json.dump(await _drive(dut, p["values"], p["width"]), f)
