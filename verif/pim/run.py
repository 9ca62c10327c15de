"""Run one scheduled GEMM through the generated ``pim_core`` (behind ``memwall run pim``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from memwall.families.pim.config import PimConfig
from memwall.hdl.pim.core import TOP_NAME, PimCore
from memwall.verif.common.runner import simulate_for_result

__all__ = ["run_gemm", "gemm_params", "TB"]

TB = "memwall.verif.pim.tb_core"


def gemm_params(cfg: PimConfig, gemms, **extra) -> dict:
    """``simulate`` params of the ``gemm`` test: the config and ``(a, b, schedule)`` cases."""
    return {"config": dataclasses.asdict(cfg),
            "gemms": [{"a": np.asarray(a).tolist(), "b": np.asarray(b).tolist(),
                       "schedule": dataclasses.asdict(schedule)} for a, b, schedule in gemms],
            **extra}


def run_gemm(cfg: PimConfig, a, b, schedule, sim: str | None = None,
             seed: int | None = None) -> dict:
    """``C = A @ B`` on the RTL under ``schedule``; returns ``{"c", "cycles", "counters"}``.

    The testbench checks the result against the golden event simulator bit for bit (and the
    macro's counters and the cycle count); a mismatch raises
    :class:`~memwall.verif.common.runner.SimulationFailed`.
    """
    result = simulate_for_result(PimCore(cfg), TOP_NAME, TB,
                                 gemm_params(cfg, [(a, b, schedule)]), testcase="gemm",
                                 sim=sim, seed=seed)[0]
    result["c"] = np.array(result["c"], dtype=np.int64).reshape(len(a), np.shape(b)[1])
    return result
