"""The lane-array mechanism outside a Design: Amaranth's simulator runs the same component."""

import numpy as np
from amaranth.sim import Simulator

from memwall.hdl.dplena.select import MaskedSelectUnit
from memwall.verif.common.streams import pack_lanes, unpack_lanes


def test_lane_array_simulates_in_amaranth():
    lanes, width = 4, 32
    dut = MaskedSelectUnit(lanes, width=width)
    rng = np.random.default_rng(0)
    vectors = [(rng.random(lanes) < 0.5, rng.integers(0, 1 << 32, lanes, dtype=np.uint64),
                rng.integers(0, 1 << 32, lanes, dtype=np.uint64)) for _ in range(6)]
    results = []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        for tag, (mask, a, b) in enumerate(vectors):
            ctx.set(dut.mask.as_value(), pack_lanes(mask, 1))
            ctx.set(dut.a.as_value(), pack_lanes(a, width))
            ctx.set(dut.b.as_value(), pack_lanes(b, width))
            ctx.set(dut.i.payload, tag)
            ctx.set(dut.i.valid, 1)
            await ctx.tick()
            ctx.set(dut.i.valid, 0)
            await ctx.tick().until(dut.o.valid)  # one cycle of latency
            results.append((ctx.get(dut.o.payload), ctx.get(dut.y.as_value())))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(testbench)
    sim.run()
    for tag, ((mask, a, b), (got_tag, got_y)) in enumerate(zip(vectors, results, strict=True)):
        assert got_tag == tag
        assert np.array_equal(unpack_lanes(got_y, width, lanes), np.where(mask, a, b))
