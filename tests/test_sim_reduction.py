import pytest
from memwall.hdl.dplena.reduction import ReductionUnit
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation


@pytest.mark.parametrize("vlen", [2, 8, 16])
def test_reduction(vlen):
    simulate(ReductionUnit(vlen), "reduction_unit", "memwall.verif.dplena.tb_reduction",
             {"vlen": vlen})


def test_reduction_verilator():
    simulate(ReductionUnit(8), "reduction_unit", "memwall.verif.dplena.tb_reduction",
             {"vlen": 8}, sim="verilator")
