import pytest

from memwall.config import load_config
from memwall.families.dplena.config import FpStages
from memwall.hdl.dplena.elementwise import ElementwiseUnit, ScalarFpUnit
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation

TB = "memwall.verif.dplena.tb_elementwise"
#: Pipelined lanes: blocks of unequal depth (padded to the deepest), and every block deepest.
UNEQUAL = FpStages(add_bf16=2, mul_bf16=1, exp=0, recip=1, to_bf16=0)
DEEPEST = FpStages.uniform(99)


@pytest.mark.parametrize("lanes, stages", [(64, FpStages()), (8, UNEQUAL), (8, DEEPEST)],
                         ids=["64-comb", "8-unequal", "8-deepest"])
def test_elementwise(lanes, stages):
    simulate(ElementwiseUnit(lanes, stages), "elementwise_unit", TB,
             {"lanes": lanes, **({"vectors_per_op": 40} if lanes < 64 else {})},
             testcase="elementwise_ops")


@pytest.mark.parametrize("stages", [FpStages(), UNEQUAL, DEEPEST],
                         ids=["comb", "unequal", "deepest"])
def test_scalar_fp_unit_single_lane(stages):
    simulate(ScalarFpUnit(1, stages), "scalar_fp_unit", TB,
             {"lanes": 1, "exhaustive": False, "to_bf16_vectors": 300}, testcase="scalar_ops")


def test_scalar_fp_lane_exhaustive():
    """Every BF16 input of EXP and RECIP, through 64 copies of the lane as dplena32 pipelines
    it: the lane, exp and recip modules the mutation run scores. (The combinational lane has
    the same arithmetic without the registers; ``test_scalar_fp_unit_single_lane[comb]``
    samples it.)"""
    stages = load_config("dplena32").stages
    simulate(ScalarFpUnit(64, stages), "scalar_fp_unit", TB, {"lanes": 64},
             testcase="scalar_ops")


def test_elementwise_at_regression_config():
    """The unit as dplena32 builds it (its lanes and FP depths): the modules the mutation run
    scores, checked in seconds instead of through a whole core step."""
    cfg = load_config("dplena32")
    simulate(ElementwiseUnit(cfg.vlen, cfg.stages), "elementwise_unit", TB,
             {"lanes": cfg.vlen, "vectors_per_op": 40}, testcase="elementwise_ops")


def test_scalar_fp_unit_at_regression_config():
    """The sequencer's scalar FP unit as dplena32 builds it (one lane, its FP depths)."""
    cfg = load_config("dplena32")
    simulate(ScalarFpUnit(1, cfg.stages), "scalar_fp_unit", TB,
             {"lanes": 1, "exhaustive": False, "to_bf16_vectors": 300}, testcase="scalar_ops")


def test_elementwise_verilator():
    simulate(ElementwiseUnit(4), "elementwise_unit", TB, {"lanes": 4, "vectors_per_op": 20},
             testcase="elementwise_ops", sim="verilator")
