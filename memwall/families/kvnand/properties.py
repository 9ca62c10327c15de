"""Formal properties of the KVNAND plane logic (``memwall prove kvnand_small``)."""

from __future__ import annotations

from memwall.formal import Property, stream_protocol

__all__ = ["properties"]


def properties(cfg) -> list[Property]:
    from memwall.hdl.kvnand.bch import BchEncoder
    from memwall.hdl.kvnand.core import kv_buffer
    from memwall.hdl.kvnand.pe import Pe

    return [
        stream_protocol(
            "kvnand_pe_streams", lambda: Pe(cfg),
            f"PE of {cfg.name} ({cfg.n_fmac} FMACs, {cfg.fmt}): cmd, page and result streams "
            "keep the valid/ready protocol (held valid and payload until ready, nothing valid "
            "the cycle after reset), inputs free; k-induction, so for every depth.",
            mode="prove", depth=8),
        stream_protocol(
            "kvnand_kvbuf_streams", lambda: kv_buffer(cfg),
            f"KV write buffer of {cfg.name} ({cfg.kv_slots} slots of {cfg.page_bytes} B, "
            f"{cfg.kv_mapping} mapping): slice, flush and program streams keep the protocol; "
            "k-induction.", mode="prove", depth=8),
        stream_protocol(
            "kvnand_bch_streams", lambda: BchEncoder(cfg.bch_bits),
            f"BCH encoder, {cfg.bch_bits} bits a cycle: message and codeword streams keep the "
            "protocol within 16 cycles of reset (bounded: the induction step does not close "
            "over the output buffer's state at this depth).", mode="bmc", depth=16),
    ]
