"""The KVNAND plane's logic die top (``kvnand_plane``): the PE on the page register, the KV
write-combine buffer (the paper's per-plane KV buffer, KVNAND-C) and the BCH encoder that
protects KV pages before they are programmed, side by side with their own ports (``pe_*``,
``kv_*`` and ``bch_*``)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring

from memwall.families.kvnand.config import PAGE_NUMBER_BITS, KvnandConfig
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.kvnand.bch import BchEncoder
from memwall.hdl.kvnand.kvbuf import KvWriteBuffer
from memwall.hdl.kvnand.pe import Pe

__all__ = ["KvnandPlane", "TOP_NAME", "build_top", "kv_buffer"]

TOP_NAME = "kvnand_plane"


class KvnandPlane(wiring.Component):
    """The PE's ports (:class:`~.pe.Pe`) prefixed ``pe_``, the KV buffer's
    (:class:`~.kvbuf.KvWriteBuffer`) ``kv_``, the encoder's (:class:`~.bch.BchEncoder`)
    ``bch_``."""

    def __init__(self, cfg: KvnandConfig):
        self.cfg = cfg
        self._parts = (("pe", Pe(cfg)),
                       ("kv", kv_buffer(cfg)),
                       ("bch", BchEncoder(cfg.bch_bits)))
        super().__init__({f"{prefix}_{name}": member for prefix, sub in self._parts
                          for name, member in sub.signature.members.items()})

    def elaborate(self, platform):
        m = Module()
        for prefix, sub in self._parts:
            unique_submodule(m, prefix, sub)
            for name, member in sub.signature.members.items():
                outer, inner = getattr(self, f"{prefix}_{name}"), getattr(sub, name)
                if member.is_signature:
                    wiring.connect(m, wiring.flipped(outer), inner)
                elif member.flow == wiring.In:
                    m.d.comb += inner.eq(outer)
                else:
                    m.d.comb += outer.eq(inner)
        return m


def kv_buffer(cfg: KvnandConfig) -> KvWriteBuffer:
    """The config's KV write-combine buffer."""
    return KvWriteBuffer(cfg.kv_slots, cfg.page_bytes, cfg.kv_slice_bytes, cfg.kv_stream_bits,
                         cfg.kv_word_bytes, cfg.kv_mapping, cfg.kv_policy,
                         page_bits=PAGE_NUMBER_BITS)


def build_top(cfg: KvnandConfig):
    return TOP_NAME, KvnandPlane(cfg)
