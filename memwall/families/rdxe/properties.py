"""rDXE's formal properties (``memwall prove``)."""

from __future__ import annotations

from memwall.formal import stream_protocol


def properties(cfg):
    from memwall.hdl.rdxe.core import RdxeGroup

    return [stream_protocol(
        "rdxe_group_streams", lambda: RdxeGroup(cfg),
        f"rDXE tile group of {cfg.name}: command, data and result streams keep the "
        "valid/ready protocol (held valid and payload until ready, nothing valid the cycle "
        "after reset), inputs free; k-induction at depth 2, the smallest that proves it "
        "(about 10 s at rdxe_small; at depth 8 the base case ran past 10 minutes).",
        mode="prove", depth=2)]
