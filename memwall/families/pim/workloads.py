"""The PIM core's power workload: one scheduled GEMM of seeded random integers, simulated as the
synthesised top (``pim_core``), so every net takes its activity from the run."""

from __future__ import annotations

import numpy as np

from memwall.families.pim.config import PimConfig
from memwall.family import PowerWorkload

__all__ = ["power_workloads", "power_gemm"]

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


def power_workloads(cfg: PimConfig) -> list[PowerWorkload]:
    from memwall.golden.pim.schedule import search
    from memwall.hdl.pim.core import TOP_NAME, PimCore
    from memwall.verif.pim.run import TB, gemm_params

    a, b = power_gemm(cfg)
    best = search(cfg, *a.shape, b.shape[1])
    return [PowerWorkload(TOP_NAME, PimCore(cfg), TB, gemm_params(cfg, [(a, b, best["schedule"])]),
                          "gemm", description=f"GEMM {a.shape[0]}x{a.shape[1]}x{b.shape[1]} "
                          f"of seeded random operands, schedule {best['schedule']}")]
