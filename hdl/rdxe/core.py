"""The generated rDXE top (``rdxe_group``): ``gqa_group`` tiles in lockstep under one sequencer.

Tile 0 owns the KV caches; the other tiles read them over VLINK at the same addresses and the
same cycles, so a KV head serves ``gqa_group`` query heads and is stored once. Every tile has its
own operand buffer and weights (``LOAD_A``/``LOAD_W`` name the tile); every other command runs
on all tiles at once, and a result beat carries one result per tile.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.families.rdxe.config import RdxeConfig
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.rdxe.dxt import Dxt
from memwall.hdl.rdxe.sequencer import DxtSequencer, command_layout

__all__ = ["RdxeGroup", "build_top", "result_layout", "TOP_NAME"]

TOP_NAME = "rdxe_group"


def result_layout(cfg: RdxeConfig) -> data.ArrayLayout:
    """One result beat: per tile, the INT8/INT16 result and its INT32 accumulator."""
    return data.ArrayLayout(data.StructLayout({"value": 16, "acc": 32}), cfg.gqa_group)


def out_depth(cfg: RdxeConfig) -> int:
    """Result FIFO depth: room for the groups in flight (a group starts only if its results fit
    behind them), so that a reader taking a result a cycle never holds the tiles back."""
    return 6 * cfg.vacs


class RdxeGroup(wiring.Component):
    """``gqa_group`` DXTs sharing tile 0's KV caches.

    Parameters
    ----------
    cfg : RdxeConfig

    Attributes
    ----------
    cmd : In(stream.Signature(command_layout))
    data_in : In(stream.Signature(8 * lanes))
    result : Out(stream.Signature(result_layout))
    busy : Out(1)
        A command is running (or results are still on their way).
    kv_reads, kv_gathers : Out(32)
        Tile 0's KV read beats: whole words, and one-byte gathers (baseline layout).
    """

    def __init__(self, cfg: RdxeConfig):
        self.cfg = cfg
        super().__init__({
            "cmd": In(stream.Signature(command_layout(cfg))),
            "data_in": In(stream.Signature(8 * cfg.lanes)),
            "result": Out(stream.Signature(result_layout(cfg))),
            "busy": Out(1), "kv_reads": Out(32), "kv_gathers": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        depth = out_depth(cfg)
        seq = DxtSequencer(cfg, depth)
        unique_submodule(m, "seq", seq)
        wiring.connect(m, wiring.flipped(self.cmd), seq.cmd)
        wiring.connect(m, wiring.flipped(self.data_in), seq.data_in)
        m.submodules.out = out = fifo.SyncFIFOBuffered(width=len(self.result.payload.as_value()),
                                                       depth=depth)
        m.d.comb += [self.result.valid.eq(out.r_rdy), self.result.payload.eq(out.r_data),
                     out.r_en.eq(self.result.ready), seq.out_level.eq(out.level)]
        tiles = []
        for t in range(cfg.gqa_group):
            tile = Dxt(cfg, kv=t == 0, sequential=cfg.sequential_baseline)
            unique_submodule(m, f"tile{t}", tile)
            tiles.append(tile)
            for name in ("ctrl", "op", "res_reset", "ve_clear", "max_clear", "nr_start", "rc",
                         "rc_from_ve", "load_a_addr", "load_w_vac", "load_w_addr"):
                m.d.comb += getattr(tile, name).eq(getattr(seq, name))
            mine = seq.load_tile == t
            m.d.comb += [tile.load_a_we.eq(seq.load_a_we & mine),
                         tile.load_w_we.eq(seq.load_w_we & mine),
                         tile.load_a_data.eq(seq.load_data), tile.load_w_data.eq(seq.load_data)]
            if t:
                m.d.comb += tile.kv_link.eq(tiles[0].kv_rdata)
        lead = tiles[0]
        m.d.comb += [seq.rc_valid.eq(lead.rc_valid), seq.res_valid.eq(lead.res_valid),
                     out.w_en.eq(lead.res_valid),
                     out.w_data.eq(Cat(*(Cat(tile.res_value, tile.res_acc) for tile in tiles))),
                     self.kv_reads.eq(lead.kv_reads), self.kv_gathers.eq(lead.kv_gathers)]
        busy = Signal()
        m.d.comb += [busy.eq(seq.busy | out.r_rdy), self.busy.eq(busy)]
        return m


def build_top(cfg: RdxeConfig):
    return TOP_NAME, RdxeGroup(cfg)
