import pytest
from memwall.hdl.dplena.elementwise import ElementwiseUnit, ScalarFpUnit
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation

TB = "memwall.verif.dplena.tb_elementwise"


@pytest.mark.parametrize("lanes", [64])
def test_elementwise(lanes):
    simulate(ElementwiseUnit(lanes), "elementwise_unit", TB, {"lanes": lanes},
             testcase="elementwise_ops")


def test_scalar_fp_unit_single_lane():
    simulate(ScalarFpUnit(1), "scalar_fp_unit", TB,
             {"lanes": 1, "exhaustive": False, "to_bf16_vectors": 300}, testcase="scalar_ops")


def test_scalar_fp_lane_exhaustive():
    # The same lane module as the FP unit, 64 copies wide, to cover all 2**16 inputs quickly.
    simulate(ScalarFpUnit(64), "scalar_fp_unit", TB, {"lanes": 64}, testcase="scalar_ops")


def test_elementwise_verilator():
    simulate(ElementwiseUnit(4), "elementwise_unit", TB, {"lanes": 4, "vectors_per_op": 20},
             testcase="elementwise_ops", sim="verilator")
