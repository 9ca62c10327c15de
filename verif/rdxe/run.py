"""Run a host program on the generated ``rdxe_group`` (behind ``memwall run rdxe``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup
from memwall.hdl.rdxe.program import Program
from memwall.verif.common.runner import simulate

__all__ = ["run_program", "TB"]

TB = "memwall.verif.rdxe.tb_group"


def run_program(prog: Program, sim: str | None = None, seed: int | None = None) -> list[dict]:
    """Per command: ``cycles`` and, for MAC commands, ``values`` and ``accs`` per tile."""
    out_dir = Path(tempfile.mkdtemp(prefix="memwall-rdxe-run-"))
    try:
        out = out_dir / "result.json"
        simulate(RdxeGroup(prog.cfg), TOP_NAME, TB,
                 {"config": dataclasses.asdict(prog.cfg), "commands": prog.commands,
                  "data": prog.data, "out": str(out)}, sim=sim, seed=seed, testcase="program")
        return json.loads(out.read_text())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
