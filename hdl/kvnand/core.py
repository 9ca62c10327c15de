"""The KVNAND plane's logic die top (``kvnand_plane``): the PE on the page register and the BCH
encoder that protects KV pages before they are programmed, side by side with their own ports
(``pe_*`` and ``bch_*``)."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from memwall.hdl.common.netlist import unique_submodule

from .bch import BchEncoder
from .config import KvnandConfig
from .pe import Pe

__all__ = ["KvnandPlane", "TOP_NAME", "build_top"]

TOP_NAME = "kvnand_plane"


class KvnandPlane(wiring.Component):
    """The PE's ports (:class:`~.pe.Pe`) prefixed ``pe_``, the encoder's (``i``, ``o``:
    :class:`~.bch.BchEncoder`) prefixed ``bch_``."""

    def __init__(self, cfg: KvnandConfig):
        self.cfg = cfg
        self._pe, self._bch = Pe(cfg), BchEncoder(cfg.bch_bits)
        super().__init__({f"{prefix}{name}": member
                          for prefix, sub in (("pe_", self._pe), ("bch_", self._bch))
                          for name, member in sub.signature.members.items()})

    def elaborate(self, platform):
        m = Module()
        unique_submodule(m, "pe", self._pe)
        unique_submodule(m, "bch", self._bch)
        for prefix, sub in (("pe_", self._pe), ("bch_", self._bch)):
            for name, member in sub.signature.members.items():
                outer, inner = getattr(self, prefix + name), getattr(sub, name)
                if member.is_signature:
                    wiring.connect(m, wiring.flipped(outer), inner)
                elif member.flow == wiring.In:
                    m.d.comb += inner.eq(outer)
                else:
                    m.d.comb += outer.eq(inner)
        return m


def build_top(cfg: KvnandConfig):
    return TOP_NAME, KvnandPlane(cfg)
