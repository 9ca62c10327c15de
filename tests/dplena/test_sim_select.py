import pytest

from memwall.hdl.dplena.select import MaskedSelectUnit
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation


@pytest.mark.parametrize("lanes", [1, 16, 64])
def test_masked_select(lanes):
    simulate(MaskedSelectUnit(lanes), "masked_select_unit", "memwall.verif.dplena.tb_select",
             {"lanes": lanes, "width": 32})


def test_masked_select_verilator():
    simulate(MaskedSelectUnit(16), "masked_select_unit", "memwall.verif.dplena.tb_select",
             {"lanes": 16, "width": 32}, sim="verilator")
