"""Run page commands on the generated KVNAND PE, or messages through the BCH encoder (behind
``memwall run kvnand``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
from memwall.hdl.kvnand.bch import BchEncoder
from memwall.hdl.kvnand.config import KvnandConfig
from memwall.hdl.kvnand.pe import Pe
from memwall.hdl.kvnand.program import PageCommand
from memwall.verif.common.runner import simulate

__all__ = ["run_pages", "run_bch"]


def _run(component, top: str, tb: str, params: dict, sim, seed):
    out_dir = Path(tempfile.mkdtemp(prefix="memwall-kvnand-run-"))
    try:
        out = out_dir / "result.json"
        simulate(component, top, tb, {**params, "out": str(out)}, sim=sim, seed=seed,
                 testcase="program")
        return json.loads(out.read_text())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def run_pages(cfg: KvnandConfig, commands: list[PageCommand], sim: str | None = None,
              seed: int | None = None) -> list[dict]:
    """Per command: ``cycles`` and ``results`` (FP32 bits)."""
    listed = [{"mode": c.mode, "command": c.command, "beats": c.beats, "vec": c.vec,
               "scales": c.scales, "outputs": 0 if c.expect is None else len(c.expect)}
              for c in commands]
    return _run(Pe(cfg), "kvnand_pe", "memwall.verif.kvnand.tb_pe",
                {"config": dataclasses.asdict(cfg), "commands": listed}, sim, seed)


def run_bch(cfg: KvnandConfig, messages: np.ndarray, sim: str | None = None,
            seed: int | None = None) -> tuple[np.ndarray, int]:
    """The codewords ``(N, 9088)`` of message rows ``(N, 8192)`` and the encoder's cycles."""
    enc = BchEncoder(cfg.bch_bits)
    res = _run(enc, f"kvnand_bch_p{cfg.bch_bits}", "memwall.verif.kvnand.tb_bch_run",
               {**enc.params, "messages_bits": np.asarray(messages, np.uint8).tolist()},
               sim, seed)
    return np.asarray(res["codewords"], np.uint8), int(res["cycles"])
