"""The rDXE tile sequencer: turns commands into the tiles' per-cycle control.

A command (:func:`command_layout`) is one operation with its loop bounds already worked out by
the host (:mod:`memwall.hdl.rdxe.program`), so the sequencer only counts:

* ``LOAD_A``: ``groups`` words of ``data_in`` into ``abuf`` of tile ``tile`` from ``a_base``;
* ``LOAD_W``: ``groups`` x ``vacs`` words into the weight memories (address-major, VAC 0
  first) of tile ``tile`` from ``w_base``;
* ``KV_WB``: the ``dh`` bytes of ``abuf`` from ``a_base`` into the KV caches as K or V of
  ``token`` (op fields), ``GBUS_BYTES`` a cycle;
* ``MAC`` (GEMV, GEMV with RMSNorm, QK, P.V): ``groups`` row groups of ``beats`` beats (each
  ``lanes`` sub-beats when ``gather``), the beat's memory address running from
  ``w_base + g * gstride``; ``rows`` results in all, ``vacs`` per group but the last.

MAC flags: ``stats`` makes the first group feed the vector engine (``sum x**2`` with the
operand, or ``sum e`` with the exponentials; ``exp`` selects the exponentials of the score
buffer as the operand), ``fused`` takes the RC from the vector engine after the first group,
and ``sequential`` runs the statistics as a pass of their own, then a normalisation pass into
the feature buffer, then the MAC pass on it with the static RC.

Timing, in cycles from the one in which the command is taken (no stalls): the first control
word goes out the next cycle, one per cycle; after each group of ``n`` beats, ``max(0, vacs -
n)`` idle cycles keep the results one per cycle on the GBUS; a statistics pass ends with 3
cycles for the sums, the last of them the Newton–Raphson start, then the wait for its RC;
a fused MAC puts the RC on the chain the cycle it is ready, then idles ``vacs`` cycles; the
sequential normalisation pass is followed by 1 idle cycle (the feature buffer's write). The
command ends the cycle after its last result leaves the GBUS.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.families.rdxe.config import RdxeConfig
from memwall.golden.common import fixedpoint as fx
from memwall.hdl.rdxe.dxt import (
    DEST_SCORES,
    GBUS_BYTES,
    NORM_E,
    NORM_XG,
    XSEL_ABUF,
    XSEL_EXP,
    XSEL_FBUF,
    _bits,
    addr_bits,
    ctrl_layout,
    op_layout,
)
from memwall.hdl.rdxe.vac import RC_LAYOUT, SRC_KV, SRC_WMEM

__all__ = ["DxtSequencer", "command_layout", "OP_LOAD_A", "OP_LOAD_W", "OP_KV_WB", "OP_MAC"]

OP_LOAD_A, OP_LOAD_W, OP_KV_WB, OP_MAC = 0, 1, 2, 3


def command_layout(cfg: RdxeConfig) -> data.StructLayout:
    return data.StructLayout({
        "op": 2, "tile": 3,
        "kv": 1,          # MAC: the beats read the KV cache (else the weight memory)
        "exp": 1,         # MAC: the operand is the exponentials of the score buffer
        "gather": 1,      # MAC: baseline V layout, lanes sub-beats per beat
        "stats": 1,       # MAC: the first group (or a pass) feeds the vector engine
        "fused": 1,       # MAC: RC from the vector engine after the first group
        "sequential": 1,  # MAC: statistics pass, normalisation pass, then MAC on fbuf
        "narrow": 1,      # INT8 results (else INT16)
        "groups": 16, "beats": 16, "rows": 16, "tokens": _bits(cfg.max_tokens + 1),
        "a_base": _bits(cfg.abuf_words), "g_base": _bits(cfg.abuf_words),
        "w_base": addr_bits(cfg), "gstride": addr_bits(cfg),
        "rc_mant": fx.RC_MANT_BITS, "rc_shift": 6,
        "op_fields": op_layout(cfg),
    })


class DxtSequencer(wiring.Component):
    """Commands in, the tiles' control out.

    Attributes
    ----------
    cmd : In(stream.Signature(command_layout))
    data_in : In(stream.Signature(8 * lanes))
        Words of ``LOAD_A`` and ``LOAD_W``.
    ctrl, op, res_reset, ve_clear, max_clear, nr_start, rc, rc_from_ve : Out
        To every tile (see :class:`~memwall.hdl.rdxe.dxt.Dxt`).
    load_tile : Out(3)
        The tile a load writes.
    load_a_we, load_a_addr, load_w_we, load_w_vac, load_w_addr : Out
    load_data : Out(8 * lanes)
    rc_valid, res_valid : In(1)
        From tile 0.
    out_level : In(16)
        Results waiting in the group's output FIFO.
    out_depth : int
        The FIFO's depth: a group starts only if its results fit behind those in flight.
    busy : Out(1)
    """

    def __init__(self, cfg: RdxeConfig, out_depth: int):
        self.cfg, self.out_depth = cfg, out_depth
        lanes = cfg.lanes
        self.params = {"vacs": cfg.vacs, "lanes": lanes, "out_depth": out_depth,
                       "abuf_words": cfg.abuf_words, "fbuf_words": cfg.fbuf_words,
                       "max_tokens": cfg.max_tokens, "max_head_dim": cfg.max_head_dim,
                       "wmem_words": cfg.wmem_words, "kv_words": cfg.kv_words}
        super().__init__({
            "cmd": In(stream.Signature(command_layout(cfg))),
            "data_in": In(stream.Signature(8 * lanes)),
            "ctrl": Out(ctrl_layout(cfg)), "op": Out(op_layout(cfg)), "res_reset": Out(1),
            "ve_clear": Out(1), "max_clear": Out(1), "nr_start": Out(1), "rc": Out(RC_LAYOUT),
            "rc_from_ve": Out(1), "load_tile": Out(3),
            "load_a_we": Out(1), "load_a_addr": Out(range(cfg.abuf_words)),
            "load_w_we": Out(1), "load_w_vac": Out(range(cfg.vacs)),
            "load_w_addr": Out(range(cfg.wmem_words)), "load_data": Out(8 * lanes),
            "rc_valid": In(1), "res_valid": In(1), "out_level": In(16), "busy": Out(1),
        })

    def elaborate(self, platform):  # noqa: C901 - one FSM, read top to bottom
        m = Module()
        cfg = self.cfg
        lanes, vacs = cfg.lanes, cfg.vacs
        lane_bits = lanes.bit_length() - 1
        cur = Signal(command_layout(cfg))
        g, k, lane = Signal(16), Signal(16), Signal(range(lanes))
        addr_g, off = Signal(addr_bits(cfg)), Signal(addr_bits(cfg))
        left = Signal(16)             # rows of the groups not yet finished
        pending = Signal(17)          # results of started groups not yet off the GBUS
        remaining = Signal(17)        # results of the command not yet off the GBUS
        pitch = Signal(16)            # idle cycles after a group
        wait = Signal(16)
        c = self.ctrl
        m.d.comb += [self.op.eq(cur.op_fields), self.load_data.eq(self.data_in.payload),
                     self.load_tile.eq(cur.tile)]

        inc = Signal(9)
        m.d.sync += [pending.eq(pending + inc - self.res_valid),
                     remaining.eq(remaining - self.res_valid)]

        def token_mask():
            base = k << lane_bits
            return [c.zmask[i].eq(base + i < cur.tokens) for i in range(lanes)]

        def stats_word():
            """A word of the statistics or normalisation pass (no beat for the VACs)."""
            m.d.comb += [c.xsel.eq(Mux(cur.exp, XSEL_EXP, XSEL_ABUF)),
                         c.a_addr.eq(cur.a_base + k), c.g_addr.eq(cur.g_base + k),
                         c.s_addr.eq(k), c.f_waddr.eq(k), *token_mask()]

        def next_group_or(state_after):
            """After a group's last beat: the next group (after its pitch), or drain."""
            m.d.sync += [g.eq(g + 1), k.eq(0), lane.eq(0), off.eq(0),
                         addr_g.eq(addr_g + cur.gstride)]
            with m.If(g + 1 == cur.groups):
                m.next = state_after
            with m.Elif(pitch != 0):
                m.d.sync += wait.eq(pitch - 1)
                m.next = "PITCH"

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    p = self.cmd.payload
                    per_group = Mux(p.gather, p.beats << lane_bits, p.beats)
                    m.d.sync += [cur.eq(p), g.eq(0), k.eq(0), lane.eq(0), off.eq(0),
                                 addr_g.eq(p.w_base), left.eq(p.rows), remaining.eq(p.rows),
                                 pitch.eq(Mux(per_group < vacs, vacs - per_group, 0))]
                    is_mac = p.op == OP_MAC
                    m.d.comb += [self.res_reset.eq(1), self.ve_clear.eq(is_mac),
                                 self.max_clear.eq(is_mac & (p.op_fields.dest == DEST_SCORES)),
                                 self.rc.load.eq(is_mac & ~p.fused),
                                 self.rc.clear.eq(is_mac & p.fused),
                                 self.rc.mant.eq(p.rc_mant), self.rc.shift.eq(p.rc_shift),
                                 self.rc.narrow.eq(p.narrow)]
                    with m.Switch(p.op):
                        with m.Case(OP_LOAD_A):
                            m.next = "LOAD_A"
                        with m.Case(OP_LOAD_W):
                            m.next = "LOAD_W"
                        with m.Case(OP_KV_WB):
                            m.next = "KV_WB"
                        with m.Default():
                            with m.If(p.sequential):
                                m.next = "STATS"
                            with m.Else():
                                m.next = "MAC"

            with m.State("LOAD_A"):
                m.d.comb += [self.data_in.ready.eq(1), self.busy.eq(1),
                             self.load_a_we.eq(self.data_in.valid),
                             self.load_a_addr.eq(cur.a_base + k)]
                with m.If(self.data_in.valid):
                    m.d.sync += k.eq(k + 1)
                    with m.If(k == cur.groups - 1):
                        m.next = "IDLE"

            with m.State("LOAD_W"):
                m.d.comb += [self.data_in.ready.eq(1), self.busy.eq(1),
                             self.load_w_we.eq(self.data_in.valid), self.load_w_vac.eq(g),
                             self.load_w_addr.eq(cur.w_base + k)]
                with m.If(self.data_in.valid):
                    m.d.sync += g.eq(g + 1)
                    with m.If(g == vacs - 1):
                        m.d.sync += [g.eq(0), k.eq(k + 1)]
                        with m.If(k == cur.groups - 1):
                            m.next = "IDLE"

            with m.State("KV_WB"):
                m.d.comb += [self.busy.eq(1), c.kvw.eq(1), c.kv_i.eq(k),
                             c.a_addr.eq(cur.a_base + (k >> lane_bits))]
                m.d.sync += k.eq(k + GBUS_BYTES)
                with m.If(k + GBUS_BYTES >= cur.op_fields.dh):
                    m.next = "IDLE"

            with m.State("STATS"):            # sequential: the statistics pass
                m.d.comb += self.busy.eq(1)
                stats_word()
                m.d.comb += [c.sq.eq(~cur.exp), c.esum.eq(cur.exp)]
                m.d.sync += k.eq(k + 1)
                with m.If(k == cur.beats - 1):
                    m.d.sync += [k.eq(0), wait.eq(2)]
                    m.next = "SUMS"

            with m.State("SUMS"):             # the sums settle, then Newton-Raphson starts
                m.d.comb += self.busy.eq(1)
                m.d.sync += wait.eq(wait - 1)
                with m.If(wait == 0):
                    m.d.comb += self.nr_start.eq(1)
                    m.next = "RC"

            with m.State("RC"):
                m.d.comb += self.busy.eq(1)
                with m.If(self.rc_valid):
                    with m.If(cur.sequential):
                        m.next = "NORM"
                    with m.Else():
                        # The fused output factor goes into the chain with the command's width
                        # (INT8 results saturate at 8 bits, not 16).
                        m.d.comb += [self.rc_from_ve.eq(1), self.rc.narrow.eq(cur.narrow)]
                        m.d.sync += wait.eq(vacs - 1)
                        m.next = "PITCH"

            with m.State("NORM"):             # sequential: the normalised vector into fbuf
                m.d.comb += self.busy.eq(1)
                stats_word()
                m.d.comb += c.norm.eq(Mux(cur.exp, NORM_E, NORM_XG))
                m.d.sync += k.eq(k + 1)
                with m.If(k == cur.beats - 1):
                    m.d.sync += k.eq(0)
                    m.next = "GAP"

            with m.State("GAP"):              # fbuf's last write lands
                m.d.comb += self.busy.eq(1)
                m.next = "MAC"

            with m.State("PITCH"):
                m.d.comb += self.busy.eq(1)
                m.d.sync += wait.eq(wait - 1)
                with m.If(wait == 0):
                    with m.If(g == cur.groups):
                        m.next = "DRAIN"
                    with m.Else():
                        m.next = "MAC"

            with m.State("MAC"):
                m.d.comb += self.busy.eq(1)
                starting = (k == 0) & (lane == 0)
                rows = Mux(left > vacs, vacs, left)
                with m.If(~starting | (self.out_level + pending + vacs <= self.out_depth)):
                    mac = Mux(cur.gather, lane == lanes - 1, 1)
                    stats = cur.stats & cur.fused & (g == 0)
                    m.d.comb += [
                        c.valid.eq(1),
                        c.xsel.eq(Mux(cur.sequential, XSEL_FBUF,
                                      Mux(cur.exp, XSEL_EXP, XSEL_ABUF))),
                        c.a_addr.eq(cur.a_base + k), c.s_addr.eq(k), c.f_addr.eq(k),
                        *token_mask(),
                        c.src.eq(Mux(cur.kv, SRC_KV, SRC_WMEM)), c.addr.eq(addr_g + off),
                        c.first.eq(k == 0), c.last.eq(k == cur.beats - 1), c.mac.eq(mac),
                        c.gather.eq(cur.gather), c.gsel.eq(g), c.glane.eq(lane),
                        c.rows.eq(rows),
                        c.sq.eq(stats & ~cur.exp), c.esum.eq(stats & cur.exp & mac)]
                    with m.If(starting):
                        m.d.comb += inc.eq(rows)
                    m.d.sync += [lane.eq(lane + 1), off.eq(off + 1)]
                    with m.If(mac):
                        m.d.sync += [lane.eq(0), k.eq(k + 1)]
                        with m.If(k == cur.beats - 1):
                            m.d.sync += left.eq(left - rows)
                            with m.If(stats):
                                m.d.sync += [g.eq(1), k.eq(0), lane.eq(0), off.eq(0),
                                             addr_g.eq(addr_g + cur.gstride), wait.eq(2)]
                                m.next = "SUMS"
                            with m.Else():
                                next_group_or("DRAIN")

            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(remaining != 0)
                with m.If(remaining == 0):
                    m.next = "IDLE"
        return m
