"""The lockstep controls of dplena32 (the command pipeline of each lane array and of the
reduction unit) through the Verilog flow, each against a cycle-accurate model of its stages
(``verif/common/tb_lockstep.py``). A unit reads only some fields of the commands it pipelines
(the reduction accumulator ignores the lane count), so only a test of the control itself sees
every bit of it."""

import pytest
from amaranth.hdl import Shape

from memwall.config import load_config
from memwall.families.dplena.properties import lockstep_controls
from memwall.hdl.common.lanes import LockstepControl
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim

CONTROLS = lockstep_controls(load_config("dplena32"))


@pytest.mark.parametrize("unit", sorted(CONTROLS))
def test_lockstep_control_at_regression_config(unit):
    shape, latency, last_cmd = CONTROLS[unit]
    simulate(LockstepControl(shape, latency, last_cmd), "lockstep_control",
             "memwall.verif.common.tb_lockstep",
             {"cmd_width": Shape.cast(shape).width, "latency": latency, "last_cmd": last_cmd})
