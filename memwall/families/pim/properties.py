"""PIM's formal properties (``memwall prove``)."""

from __future__ import annotations

from memwall.formal import stream_protocol


def properties(cfg):
    from memwall.hdl.pim.core import PimCore

    return [stream_protocol(
        "pim_core_streams", lambda: PimCore(cfg),
        f"PIM core of {cfg.name}: descriptor, operand and result streams keep the valid/ready "
        "protocol (held valid and payload until ready, nothing valid the cycle after reset), "
        "inputs free; k-induction, so for every depth.", mode="prove", depth=8)]
