"""The PIM core's power workload: one scheduled GEMM of seeded random integers, simulated as the
synthesised top (``pim_core``), so every net takes its activity from the run."""

from __future__ import annotations

import dataclasses

import numpy as np

from memwall.families.pim.config import PimConfig
from memwall.family import PowerWorkload

__all__ = ["power_workloads", "power_gemm", "power_schedule"]

#: Seed of the workload's operands (the same switching activity run to run).
POWER_SEED = 2024


def power_gemm(cfg: PimConfig) -> tuple[np.ndarray, np.ndarray]:
    """A GEMM that fills the row (two result groups of every field) and several k-tiles:
    M = 2, K = 2 * rows / planes, N = 2 * fields (row-wise) or 2 (dot-product)."""
    rng = np.random.default_rng(POWER_SEED)
    m, k = 2, max(2, 2 * cfg.rows // cfg.planes)
    n = 2 * cfg.fields if cfg.row_wise else 2

    def operand(shape, bits, signed):
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        return rng.integers(lo, hi, size=shape, dtype=np.int64)

    return (operand((m, k), cfg.input_bits, cfg.input_signed),
            operand((k, n), cfg.weight_bits, cfg.weight_signed))


def power_schedule(cfg: PimConfig, a, b):
    """The schedule the power workload runs: the search's minimum of the macro's and buffer's
    energy alone, so it does not depend on the logic calibration (and the DRAM traffic) that
    the power figures feed."""
    from memwall.families.pim.config import LOGIC_TERMS
    from memwall.golden.pim.schedule import search

    macro_only = dataclasses.replace(cfg, logic_energy=dict.fromkeys(LOGIC_TERMS, 0.0),
                                     dram_e_bit_pj=0.0)
    return search(macro_only, a.shape[0], a.shape[1], b.shape[1])["schedule"]


def power_workloads(cfg: PimConfig) -> list[PowerWorkload]:
    from memwall.hdl.pim.core import TOP_NAME, PimCore
    from memwall.verif.pim.run import TB, gemm_params

    a, b = power_gemm(cfg)
    schedule = power_schedule(cfg, a, b)
    return [PowerWorkload(TOP_NAME, PimCore(cfg), TB, gemm_params(cfg, [(a, b, schedule)]),
                          "gemm", description=f"GEMM {a.shape[0]}x{a.shape[1]}x{b.shape[1]} "
                          f"of seeded random operands, schedule {schedule}")]
