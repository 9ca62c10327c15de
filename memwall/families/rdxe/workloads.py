"""rDXE's power workload: the activity ``memwall synth`` gives every module of a tile group."""

from __future__ import annotations

import dataclasses

from memwall.families.rdxe.config import RdxeConfig
from memwall.family import PowerWorkload


def power_workloads(cfg: RdxeConfig):
    """The regression's session (every operation, both KV layouts) on the config's own group:
    its activity sets the power of every module. The normalisations run in the one VRC mode
    the config is for: sequential where it builds the sequential baseline, else fused, so
    that a config pair differing only in ``sequential_baseline`` compares the two VRCs on the
    same operands (``reports/rdxe/synthesis.md``)."""
    from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup

    if cfg.max_head_dim < 16 or cfg.max_tokens < 16:
        return []
    params = {"config": dataclasses.asdict(cfg), "seed": 5, "d": 4 * cfg.lanes,
              "n": cfg.vacs + 2, "tokens": min(cfg.max_tokens, 13), "dh": cfg.max_head_dim,
              "stall": 0.0,
              "modes": ["sequential" if cfg.sequential_baseline else "fused"]}
    return [PowerWorkload(name=TOP_NAME, component=RdxeGroup(cfg),
                          testbench="memwall.verif.rdxe.tb_group", params=params,
                          testcase="session",
                          description=f"rdxe session, VRC {params['modes'][0]}: GEMV, "
                                      "RMSNorm-GEMV, K/V write-back, QK, P.V (iWuR and "
                                      "baseline)")]
