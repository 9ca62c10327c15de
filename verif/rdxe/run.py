"""Run a host program on the generated ``rdxe_group`` (behind ``memwall run rdxe``)."""

from __future__ import annotations

import dataclasses

from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup
from memwall.hdl.rdxe.program import Program
from memwall.verif.common.runner import simulate_for_result

__all__ = ["run_program", "TB"]

TB = "memwall.verif.rdxe.tb_group"


def run_program(prog: Program, sim: str | None = None, seed: int | None = None) -> list[dict]:
    """Per command: ``cycles`` and, for MAC commands, ``values`` and ``accs`` per tile."""
    return simulate_for_result(RdxeGroup(prog.cfg), TOP_NAME, TB,
                               {"config": dataclasses.asdict(prog.cfg),
                                "commands": prog.commands, "data": prog.data},
                               testcase="program", sim=sim, seed=seed)
