# amaranth: UnusedElaboratable=no
"""The pipelined Threefry-2x32-20 (hdl/dplena/threefry.py): parameters and ports, and cocotb runs
against the golden model (verif/dplena/tb_threefry.py)."""

import pytest
from amaranth.lib.wiring import In, Out

from memwall.hdl.dplena.threefry import Threefry2x32
from memwall.verif.common.runner import simulate

TB = "memwall.verif.dplena.tb_threefry"


def _simulate(rounds_per_stage: int, **kwargs) -> None:
    dut = Threefry2x32(rounds_per_stage)
    latency = 20 // rounds_per_stage   # the documented latency, not read from the design
    assert dut.latency == latency
    simulate(dut, "threefry2x32", TB, {"latency": latency, "inputs": 3000}, **kwargs)


@pytest.mark.sim
@pytest.mark.parametrize("rounds_per_stage", [1, 2, 5])
def test_threefry_matches_golden(rounds_per_stage):
    _simulate(rounds_per_stage)


@pytest.mark.sim
def test_threefry_verilator():
    _simulate(2, sim="verilator")


def test_ports_params_and_latency():
    dut = Threefry2x32()
    assert dut.params == {"rounds_per_stage": 2} and dut.module_name == "threefry2x32"
    assert dict(dut.signature.members) == (
        {name: In(32) for name in ("key0", "key1", "ctr0", "ctr1")}
        | {"valid": In(1), "o_valid": Out(1), "w0": Out(32), "w1": Out(32)})
    for rounds_per_stage, latency in {1: 20, 2: 10, 4: 5, 5: 4, 10: 2, 20: 1}.items():
        dut = Threefry2x32(rounds_per_stage=rounds_per_stage)
        assert dut.stages == dut.latency == latency
        assert dut.params == {"rounds_per_stage": rounds_per_stage}


@pytest.mark.parametrize("bad", [0, 3, 6, 7, 8, 40, -2])
def test_rounds_per_stage_must_divide_20(bad):
    with pytest.raises(ValueError, match=r"divide 20: one of \(1, 2, 4, 5, 10, 20\)"):
        Threefry2x32(bad)


@pytest.mark.parametrize("bad", [2.0, "2", None, True])
def test_rounds_per_stage_must_be_an_int(bad):
    with pytest.raises(TypeError, match=r"must be an int, one of \(1, 2, 4, 5, 10, 20\)"):
        Threefry2x32(bad)
