"""Run page commands on the generated KVNAND PE, or messages through the BCH encoder (behind
``memwall run kvnand``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from memwall.families.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.bch import BchEncoder
from memwall.hdl.kvnand.pe import Pe
from memwall.hdl.kvnand.program import PageCommand
from memwall.verif.common.runner import simulate_for_result

__all__ = ["run_pages", "run_bch"]


def run_pages(cfg: KvnandConfig, commands: list[PageCommand], sim: str | None = None,
              seed: int | None = None) -> list[dict]:
    """Per command: ``cycles`` and ``results`` (FP32 bits)."""
    listed = [{"mode": c.mode, "command": c.command, "beats": c.beats, "vec": c.vec,
               "scales": c.scales, "outputs": 0 if c.expect is None else len(c.expect)}
              for c in commands]
    return simulate_for_result(Pe(cfg), "kvnand_pe", "memwall.verif.kvnand.tb_pe",
                               {"config": dataclasses.asdict(cfg), "commands": listed},
                               testcase="program", sim=sim, seed=seed)


def run_bch(cfg: KvnandConfig, messages: np.ndarray, sim: str | None = None,
            seed: int | None = None) -> tuple[np.ndarray, int]:
    """The codewords ``(N, 9088)`` of message rows ``(N, 8192)`` and the encoder's cycles."""
    enc = BchEncoder(cfg.bch_bits)
    res = simulate_for_result(
        enc, f"kvnand_bch_p{cfg.bch_bits}", "memwall.verif.kvnand.tb_bch_run",
        {**enc.params, "messages_bits": np.asarray(messages, np.uint8).tolist()},
        testcase="program", sim=sim, seed=seed)
    return np.asarray(res["codewords"], np.uint8), int(res["cycles"])
