# amaranth: UnusedElaboratable=no
"""GumbelUnit (hdl/dplena/gumbel.py) against the golden gumbel_fp32 through the Verilog flow:
directed corners, every table-segment boundary and random inputs with random gaps under Icarus
at several depths, a large random stream under Verilator (and, marked slow, all 2**23 inputs),
its parameters and ports, and its normaliser in Amaranth's simulator."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Shape
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from memwall.golden.dplena.gumbel import gumbel_fp32
from memwall.hdl.dplena.gumbel import GumbelUnit, Normaliser
from memwall.verif.common.runner import simulate
from memwall.verif.dplena.tb_gumbel import HALF, M_MAX, corner_mantissas

TB = "memwall.verif.dplena.tb_gumbel"
DEFAULT = GumbelUnit().stages
MAX = max(GumbelUnit.DEPTHS)


@pytest.mark.sim
@pytest.mark.parametrize("stages", sorted({0, 5, DEFAULT, MAX}))
def test_gumbel_unit_matches_golden(stages):
    """0: the output register alone; 5: partial products summed in the next stage's logic;
    the default and deepest: every multiply split."""
    unit = GumbelUnit(stages)
    simulate(unit, "gumbel_unit", TB, {"latency": unit.latency, "random": 4000})


@pytest.mark.sim
def test_gumbel_unit_verilator_large_random_stream():
    unit = GumbelUnit()
    simulate(unit, "gumbel_unit", TB, {"latency": unit.latency, "random": 1 << 16,
                                       "idle_prob": 0.1}, sim="verilator")


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("stages", sorted({0, MAX}))
def test_gumbel_unit_verilator_every_input(stages):
    """All 2**23 inputs in order (minutes under Verilator: make test-slow)."""
    unit = GumbelUnit(stages)
    simulate(unit, "gumbel_unit", TB, {"latency": unit.latency, "exhaustive": True,
                                       "idle_prob": 0.05}, sim="verilator")


def test_latency_and_ports():
    for stages in range(MAX + 1):
        unit = GumbelUnit(stages)
        assert unit.latency == stages + 1
        assert unit.params == {"stages": stages}
        assert len(unit.cuts) == stages
    unit = GumbelUnit()
    widths = {name: (member.flow, Shape.cast(member.shape).width)
              for name, member in unit.signature.members.items()}
    assert widths == {"valid": (In, 1), "mantissa": (In, 23), "o_valid": (Out, 1),
                      "g": (Out, 32)}
    assert GumbelUnit.module_name == "gumbel_unit"


@pytest.mark.parametrize("bad", [-1, MAX + 1, 100])
def test_out_of_range_stages_are_refused(bad):
    with pytest.raises(ValueError, match=rf"stages must be an int in 0\.\.{MAX}"):
        GumbelUnit(bad)


@pytest.mark.parametrize("bad", [1.0, "2", None, True])
def test_non_int_stages_are_refused(bad):
    with pytest.raises(TypeError, match=rf"stages must be an int in 0\.\.{MAX}"):
        GumbelUnit(bad)


def test_depth_table_is_ordered_and_complete():
    for k, cuts in GumbelUnit.DEPTHS.items():
        assert len(cuts) == k
        order = [GumbelUnit.CUT_POINTS.index(c) for c in cuts]
        assert order == sorted(set(order))
    assert sorted(GumbelUnit.DEPTHS) == list(range(1, MAX + 1))


@pytest.mark.parametrize("width, max_shift", [(8, 7), (11, 4), (9, 8)])
def test_normaliser_every_input(width, max_shift):
    """Every value whose leading zeros it handles: y has its top bit set and is value << shift;
    0 gives y = 0."""
    dut = Normaliser(width, max_shift)
    cases = [v for v in range(1 << width) if v == 0 or width - v.bit_length() <= max_shift]
    seen = []

    async def bench(ctx):
        for v in cases:
            ctx.set(dut.value, v)
            seen.append((ctx.get(dut.y), ctx.get(dut.shift)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    for v, (y, shift) in zip(cases, seen, strict=True):
        if v == 0:
            assert y == 0
        else:
            assert shift == width - v.bit_length() and y == v << shift, (v, y, shift)


def test_normaliser_parameters_are_checked():
    with pytest.raises(ValueError, match="max_shift in 1..width - 1"):
        Normaliser(8, 8)
    with pytest.raises(TypeError, match="width must be an int"):
        Normaliser(8.0, 3)


def test_directed_inputs_cover_the_corners():
    """The testbench's directed set has the named corners and both branches' boundaries, and
    its golden results span G's whole range (both signs, zero)."""
    m = corner_mantissas()
    assert {0, 1, 2, HALF - 1, HALF, HALF + 1, M_MAX} <= set(m.tolist())
    # every segment of h (u >= 1/2) and of the first log2 (u < 1/2) is entered
    d = (1 << 24) - (2 * m[m >= HALF] + 1)
    assert set((d >> 17).tolist()) == set(range(64))
    g = gumbel_fp32(m).view(np.float32)
    assert g.min() < -2.8 and g.max() > 16.6 and np.any(g == 0)
