"""cocotb testbench: a :class:`~memwall.hdl.common.lanes.LockstepControl` (the command pipeline
beside a lane array) against a cycle-accurate reference model of its stages.

``tb_params()``: ``cmd_width``, ``latency``, ``last_cmd`` (bool) and ``commands`` (how many
random ones). Commands (directed: zero, all ones, each bit alone; then random) are streamed with
random gaps and taken with random back-pressure. Every cycle the model's stages (valid bit and
command each) give ``i.ready``, every ``load`` bit, ``o.valid``, ``o.payload`` and ``last_cmd``,
and each must be equal; every command must come out once, in order, unchanged. A lane array
reads every bit of the commands it is given, so no field is left unchecked.
"""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, start


class _Stages:
    """The reference: ``latency`` stages of (valid, command), all clear after reset."""

    def __init__(self, latency: int):
        self.valid, self.cmd = [0] * latency, [0] * latency

    def step(self, i_valid: int, i_payload: int, o_ready: int) -> dict:
        """What the control must show this cycle; then the clock edge."""
        advance = int(not self.valid[-1] or o_ready)
        incoming = [i_valid, *self.valid[:-1]]
        sources = [i_payload, *self.cmd[:-1]]
        load = [advance & v for v in incoming]
        shown = {"i_ready": advance, "load": sum(bit << j for j, bit in enumerate(load)),
                 "o_valid": self.valid[-1], "o_payload": self.cmd[-1], "last_cmd": sources[-1]}
        if advance:
            self.valid = incoming
        self.cmd = [s if bit else c for s, c, bit in zip(sources, self.cmd, load, strict=True)]
        return shown


@cocotb.test()
async def commands_in_order(dut):
    p = tb_params()
    width, latency = p["cmd_width"], p["latency"]
    seed = cocotb.RANDOM_SEED
    rng = np.random.default_rng(seed)
    clk = await start(dut)
    source = StreamSource(dut, "i", clk, idle_prob=0.3, rng=random.Random(seed))
    dut.i__payload.value = 0          # the model reads it every cycle, before the first send
    sink = StreamSink(dut, "o", clk, ready_prob=0.5, rng=random.Random(seed + 1))
    cocotb.start_soon(sink.run())
    commands = [0, (1 << width) - 1, *(1 << b for b in range(width)),
                *(int(c) for c in rng.integers(0, 1 << width, p.get("commands", 200)))]
    board = Scoreboard("lockstep", dut._log)

    async def watch():
        model = _Stages(latency)
        cycle = 0
        while True:
            await RisingEdge(clk)
            cycle += 1
            shown = model.step(int(dut.i__valid.value), int(dut.i__payload.value),
                               int(dut.o__ready.value))
            seen = {"i_ready": dut.i__ready, "load": dut.load, "o_valid": dut.o__valid,
                    "o_payload": dut.o__payload}
            if p.get("last_cmd"):
                seen["last_cmd"] = dut.last_cmd
            for name, port in seen.items():
                board.compare(f"{name} in cycle {cycle}", shown[name], int(port.value))

    cocotb.start_soon(watch())
    for command in commands:
        await source.send(command)
    observed = await sink.wait_for(len(commands))
    board.compare("commands out", np.array(commands), np.array([o["payload"] for o in observed]))
    board.result()
