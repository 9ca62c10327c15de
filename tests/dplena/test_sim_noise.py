# amaranth: UnusedElaboratable=no
"""The streaming noisy argmax (hdl/dplena/noise.py): parameters and ports, and cocotb runs against
golden noisy_argmax_hw every cycle (verif/dplena/tb_noise.py)."""

import pytest
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from memwall.hdl.dplena.noise import NoisyArgmax
from memwall.verif.common.runner import simulate

TB = "memwall.verif.dplena.tb_noise"


def _latency(lanes, threefry_rounds=2, gumbel_stages=12, mul_stages=3, add_stages=3) -> int:
    """The documented latency: Threefry (20 / rounds) + Gumbel (stages + 1) + multiply + add +
    tree levels + the result register."""
    return (20 // threefry_rounds + gumbel_stages + 1 + mul_stages + add_stages
            + (lanes.bit_length() - 1) + 1)


@pytest.mark.sim
@pytest.mark.parametrize("lanes, depths", [(4, {}), (8, {"threefry_rounds": 5, "gumbel_stages": 3,
                                                          "mul_stages": 0, "add_stages": 1})])
def test_noisy_argmax_matches_golden(lanes, depths):
    dut = NoisyArgmax(lanes, **depths)
    assert dut.latency == _latency(lanes, **depths)
    simulate(dut, "noisy_argmax", TB, {"lanes": lanes, "latency": dut.latency, "rows": 40})


@pytest.mark.sim
@pytest.mark.slow     # 32 lanes of Gumbel units: the Verilator build alone is many minutes
def test_noisy_argmax_verilator_wide():
    dut = NoisyArgmax(32)
    simulate(dut, "noisy_argmax", TB, {"lanes": 32, "latency": dut.latency, "rows": 60,
                                       "idle_prob": 0.2}, sim="verilator")


def test_ports_and_params():
    dut = NoisyArgmax(8)
    assert dut.params == {"lanes": 8, "threefry_rounds": 2, "gumbel_stages": 12,
                          "mul_stages": 3, "add_stages": 3}
    assert dict(dut.signature.members) == (
        {name: In(32) for name in ("token", "row", "seed", "step", "temperature")}
        | {"valid": In(1), "first": In(1), "z": In(data.ArrayLayout(16, 8)), "count": In(range(9)),
           "idle": Out(1), "found": Out(1), "index": Out(32), "value": Out(16), "key": Out(32)})


@pytest.mark.parametrize("bad, error", [(3, ValueError), (1, ValueError), (0, ValueError),
                                        (6, ValueError), (2.0, TypeError), (True, TypeError)])
def test_lanes_are_checked(bad, error):
    with pytest.raises(error, match="lanes"):
        NoisyArgmax(bad)


def test_block_depths_are_checked_by_the_blocks():
    with pytest.raises(ValueError, match="divide 20"):
        NoisyArgmax(4, threefry_rounds=3)
    with pytest.raises(ValueError, match="GumbelUnit"):
        NoisyArgmax(4, gumbel_stages=13)
