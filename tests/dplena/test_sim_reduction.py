import pytest

from memwall.config import load_config
from memwall.families.dplena.config import FpStages
from memwall.hdl.dplena.reduction import ReductionNode, ReductionUnit
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation

TB = "memwall.verif.dplena.tb_reduction"


@pytest.mark.parametrize("vlen", [2, 8, 16])
def test_reduction(vlen):
    simulate(ReductionUnit(vlen), "reduction_unit", TB, {"vlen": vlen})


@pytest.mark.parametrize("stages", sorted({1, 2, FpStages.uniform(99).add_fp32}))
def test_pipelined_reduction(stages):
    """FP32 adders of ``stages``: tree levels of stages + 1, stages + 2 partial sums."""
    partials = FpStages(add_fp32=stages).sum_partials
    simulate(ReductionUnit(8, stages), "reduction_unit", TB, {"vlen": 8, "partials": partials})


def test_reduction_at_regression_config():
    """The unit as dplena32 builds it (32 lanes, its FP32 adder depth): the modules the
    mutation run scores, checked in seconds instead of through a whole core step."""
    cfg = load_config("dplena32")
    simulate(ReductionUnit(cfg.vlen, cfg.stages.add_fp32), "reduction_unit", TB,
             {"vlen": cfg.vlen, "partials": cfg.stages.sum_partials})


@pytest.mark.parametrize("index_width", [1, 2, 3, 4])
def test_reduction_node_at_regression_config(index_width):
    """Each node of dplena32's 32-lane tree on its own, every BF16 value on each side: a
    compare's wrong key bit for one value, or a rule the tree's valid-lane prefix hides."""
    stages = load_config("dplena32").stages.add_fp32
    simulate(ReductionNode(index_width, stages), "reduction_node",
             "memwall.verif.dplena.tb_reduction_node",
             {"index_width": index_width, "stages": stages})


def test_reduction_verilator():
    simulate(ReductionUnit(8), "reduction_unit", TB, {"vlen": 8}, sim="verilator")
