"""One rDXE tile (DXT): its VACs on the HLINK and RC chains, the vector engine, the buffers and
the GBUS, driven cycle by cycle by the group's sequencer (:mod:`memwall.hdl.rdxe.sequencer`).

Buffers, words of ``lanes`` elements:

* ``abuf``, the activation-reuse buffer (INT8): operand vectors, a gain vector, and the
  results a GEMV writes back (the rr-SRAM's role: a layer's output is the next one's input).
  Two read ports (operand and gain) and one byte-wide write port.
* ``sbuf``, the score buffer (INT16, ``max_tokens`` entries): QK's results, read back a word at
  a time for the exponentials.
* ``fbuf``, the feature buffer (INT8): only the sequential baseline writes it (the normalised
  vector); built only when the tile is ``sequential``.

A control word (:func:`ctrl_layout`) enters each cycle. Stage A addresses the buffers; stage B
forms the beat from their data (an operand word, or the exponentials of a score word, or a
feature word), feeds the vector engine, writes the feature buffer or a KV byte group; the beat
then enters the feeder register, which is VAC 0's HLINK input. Results leave the VACs one per
cycle (the chains' skew) onto the GBUS, where the tile numbers them in order and writes them to
the score buffer (with the running maximum) or to ``abuf``, and offers them to the group.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.families.rdxe.config import RdxeConfig
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.rdxe.vac import RC_LAYOUT, SRC_KV, Vac, beat_layout
from memwall.hdl.rdxe.ve import VectorEngine

__all__ = ["Dxt", "ctrl_layout", "op_layout", "XSEL_ABUF", "XSEL_EXP", "XSEL_FBUF",
           "NORM_NONE", "NORM_XG", "NORM_E", "DEST_NONE", "DEST_SCORES", "DEST_ABUF",
           "GBUS_BYTES"]

XSEL_ABUF, XSEL_EXP, XSEL_FBUF = 0, 1, 2
NORM_NONE, NORM_XG, NORM_E = 0, 1, 2
DEST_NONE, DEST_SCORES, DEST_ABUF = 0, 1, 2
#: Bytes the 32-bit GBUS moves per cycle in a KV write-back.
GBUS_BYTES = 4


def _bits(n: int) -> int:
    return max(1, ceil_log2(n))


def addr_bits(cfg: RdxeConfig) -> int:
    return _bits(max(cfg.wmem_words, cfg.kv_words))


def ctrl_layout(cfg: RdxeConfig) -> data.StructLayout:
    """The per-cycle control word from the sequencer (stage A)."""
    return data.StructLayout({
        "valid": 1,                        # a beat for the VACs
        "xsel": 2,                         # XSEL_*: the beat's operand
        "a_addr": _bits(cfg.abuf_words),   # operand word (also the KV write-back's source word)
        "g_addr": _bits(cfg.abuf_words),   # gain word (sequential RMSNorm)
        "s_addr": _bits(cfg.max_tokens // cfg.lanes),
        "f_addr": _bits(cfg.fbuf_words),
        "zmask": cfg.lanes,                # tokens of the score word
        "src": 1, "addr": addr_bits(cfg), "first": 1, "last": 1, "mac": 1, "gather": 1,
        "gsel": _bits(cfg.lanes), "glane": _bits(cfg.lanes), "rows": 8,
        "sq": 1,                           # the operand word feeds sum x**2
        "esum": 1,                         # the exponentials feed sum e
        "norm": 2,                         # NORM_*: write a normalised word to fbuf[f_waddr]
        "f_waddr": _bits(cfg.fbuf_words),
        "kvw": 1,                          # KV write-back of GBUS_BYTES bytes from byte kv_i
        "kv_i": _bits(cfg.max_head_dim),
    })


def op_layout(cfg: RdxeConfig) -> data.StructLayout:
    """Fields that hold for a whole command (set by the sequencer when it takes one)."""
    return data.StructLayout({
        "dest": 2,                         # DEST_*: where results go besides the group
        "res_base": 16,                    # first element index of the results in dest
        "kv_v": 1,                         # KV write-back: V (else K)
        "iwur": 1,                         # V layout: iWuR (else baseline)
        "token": _bits(cfg.max_tokens),
        "dh": _bits(cfg.max_head_dim + 1),
        "eps_sum": 32, "smant": 16, "sshift": signed(8), "nr_op": 1,
    })


class Dxt(wiring.Component):
    """One DXT.

    Parameters
    ----------
    cfg : RdxeConfig
    kv : bool
        The tile owns its VACs' KV caches (else it reads them over ``kv_link``).
    sequential : bool
        Build the sequential baseline's feature buffer and normalisation lanes.

    Attributes
    ----------
    ctrl : In(ctrl_layout)
    op : In(op_layout)
    res_reset : In(1)
        Number results from 0 again (a new command).
    ve_clear, max_clear, nr_start : In(1)
        The vector engine's sums, its running maximum, and the start of its RC.
    rc : In(RC_LAYOUT)
        Into the RC chain head this cycle (a static factor, or ``clear``).
    rc_from_ve : In(1)
        Put the vector engine's RC into the chain head (with ``rc.narrow``).
    rc_valid : Out(1)
        The vector engine's RC is ready.
    load_a_we, load_a_addr, load_a_data : In
        Word write into ``abuf`` (a load).
    load_w_we, load_w_vac, load_w_addr, load_w_data : In
        Word write into one VAC's weight memory.
    res_valid : Out(1)
    res_value : Out(signed(16))
    res_acc : Out(signed(32))
    kv_rdata : Out(vacs * 8 * lanes)
        The VACs' KV read data (the VLINK), with ``kv``.
    kv_link : In(vacs * 8 * lanes)
        Without ``kv``.
    kv_reads, kv_gathers : Out(32)
        Beats that read a whole KV word (iWuR, QK) and beats that read one byte (baseline
        gather), counted at VAC 0.
    """

    def __init__(self, cfg: RdxeConfig, kv: bool = True, sequential: bool = True):
        self.cfg, self.kv, self.sequential = cfg, kv, sequential
        lanes, vacs = cfg.lanes, cfg.vacs
        self.params = {"vacs": vacs, "lanes": lanes, "wmem_words": cfg.wmem_words,
                       "kv_words": cfg.kv_words, "abuf_words": cfg.abuf_words,
                       "fbuf_words": cfg.fbuf_words, "max_tokens": cfg.max_tokens,
                       "max_head_dim": cfg.max_head_dim, "kv": kv, "sequential": sequential}
        ports = {
            "ctrl": In(ctrl_layout(cfg)), "op": In(op_layout(cfg)), "res_reset": In(1),
            "ve_clear": In(1), "max_clear": In(1), "nr_start": In(1), "rc": In(RC_LAYOUT),
            "rc_from_ve": In(1), "rc_valid": Out(1),
            "load_a_we": In(1), "load_a_addr": In(range(cfg.abuf_words)),
            "load_a_data": In(8 * lanes),
            "load_w_we": In(1), "load_w_vac": In(range(vacs)),
            "load_w_addr": In(range(cfg.wmem_words)), "load_w_data": In(8 * lanes),
            "res_valid": Out(1), "res_value": Out(signed(16)), "res_acc": Out(signed(32)),
            "kv_reads": Out(32), "kv_gathers": Out(32),
        }
        ports["kv_rdata" if kv else "kv_link"] = (Out if kv else In)(vacs * 8 * lanes)
        super().__init__(ports)

    def elaborate(self, platform):  # noqa: C901 - one datapath, read top to bottom
        m = Module()
        cfg = self.cfg
        lanes, vacs = cfg.lanes, cfg.vacs
        c = self.ctrl

        # --- buffers -------------------------------------------------------------------------
        m.submodules.abuf = abuf = memory.Memory(shape=8 * lanes, depth=cfg.abuf_words, init=[])
        a_wr = abuf.write_port(granularity=8)
        a_rd = abuf.read_port(transparent_for=())
        g_rd = abuf.read_port(transparent_for=())
        m.d.comb += [a_rd.addr.eq(c.a_addr), g_rd.addr.eq(c.g_addr)]
        if self.sequential:    # the gain is read only for stage B's x*g normalisation
            m.d.comb += g_rd.en.eq(c.norm == NORM_XG)
        score_words = cfg.max_tokens // lanes
        m.submodules.sbuf = sbuf = memory.Memory(shape=16 * lanes, depth=score_words, init=[])
        s_wr = sbuf.write_port(granularity=16)
        s_rd = sbuf.read_port(transparent_for=())
        m.d.comb += s_rd.addr.eq(c.s_addr)
        if self.sequential:
            m.submodules.fbuf = fbuf = memory.Memory(shape=8 * lanes, depth=cfg.fbuf_words,
                                                     init=[])
            f_wr = fbuf.write_port()
            f_rd = fbuf.read_port(transparent_for=())
            # Read only for a beat that takes its operand from fbuf (stage B's XSEL_FBUF): an
            # always-enabled port accessed the macro every cycle, idle or not.
            m.d.comb += [f_rd.addr.eq(c.f_addr), f_rd.en.eq(c.xsel == XSEL_FBUF)]

        # --- stage B: the beat ---------------------------------------------------------------
        b = Signal.like(c, name="ctrl_b")
        m.d.sync += b.eq(c)
        ve = VectorEngine(lanes, self.sequential)
        unique_submodule(m, "ve", ve)
        m.d.comb += [ve.clear.eq(self.ve_clear), ve.max_clear.eq(self.max_clear),
                     ve.z.eq(s_rd.data), ve.z_mask.eq(b.zmask),
                     ve.esum_add.eq(b.esum), ve.sq_valid.eq(b.sq), ve.sq_x.eq(a_rd.data),
                     ve.nr_start.eq(self.nr_start), ve.nr_op.eq(self.op.nr_op),
                     ve.eps_sum.eq(self.op.eps_sum), ve.smant.eq(self.op.smant),
                     ve.sshift.eq(self.op.sshift), self.rc_valid.eq(ve.rc_valid)]
        x = Signal(8 * lanes)
        sh = Signal(3 * lanes)
        with m.Switch(b.xsel):
            with m.Case(XSEL_EXP):
                m.d.comb += [x.eq(Cat(*(Cat(ve.e_m[7 * i:7 * i + 7], Const(0, 1))
                                        for i in range(lanes)))), sh.eq(ve.e_s)]
            if self.sequential:
                with m.Case(XSEL_FBUF):
                    m.d.comb += x.eq(f_rd.data)
            with m.Default():
                m.d.comb += x.eq(a_rd.data)
        if self.sequential:
            # Normalisation lanes: x*g (INT16) or e (<= 2**12) times the VE's RC, into fbuf.
            xg, ev = Signal(16 * lanes), Signal(16 * lanes)
            for i in range(lanes):      # each lane 16 bits wide, whatever its value's width
                m.d.comb += [
                    xg.word_select(i, 16).eq(a_rd.data[8 * i:8 * i + 8].as_signed()
                                             * g_rd.data[8 * i:8 * i + 8].as_signed()),
                    ev.word_select(i, 16).eq(ve.e_m[7 * i:7 * i + 7] << ve.e_s[3 * i:3 * i + 3])]
            m.d.comb += [ve.norm_a.eq(Mux(b.norm == NORM_E, ev, xg)),
                         f_wr.en.eq(b.norm != NORM_NONE), f_wr.addr.eq(b.f_waddr),
                         f_wr.data.eq(ve.norm_y)]

        beat = beat_layout(lanes, addr_bits(cfg))
        feeder = Signal(beat, name="feeder")
        m.d.sync += [feeder.x.eq(x), feeder.sh.eq(sh)]
        m.d.sync += [getattr(feeder, name).eq(getattr(b, name)) for name in
                     ("valid", "src", "addr", "first", "last", "mac", "gather", "gsel", "glane",
                      "rows")]
        rc_head = Signal(RC_LAYOUT, name="rc_head")
        m.d.sync += rc_head.eq(self.rc)
        with m.If(self.rc_from_ve):
            m.d.sync += [rc_head.load.eq(1), rc_head.clear.eq(0), rc_head.mant.eq(ve.rc_mant),
                         rc_head.shift.eq(ve.rc_shift)]

        # --- KV write-back: GBUS_BYTES bytes of abuf from byte kv_i ---------------------------
        kv_be = [Signal(lanes, name=f"kv_be{j}") for j in range(vacs)]
        kv_addr = [Signal(range(cfg.kv_words), name=f"kv_addr{j}") for j in range(vacs)]
        kv_data = [Signal(8 * lanes, name=f"kv_data{j}") for j in range(vacs)]
        op = self.op
        dh_words = op.dh >> ceil_log2(lanes)                  # words of a K row
        k_words_per_vac = ((cfg.max_tokens + vacs - 1) // vacs) * (cfg.max_head_dim // lanes)
        token_words = cfg.max_tokens // lanes
        src_bytes = Array(a_rd.data[8 * i:8 * i + 8] for i in range(lanes))
        for slot in range(GBUS_BYTES):
            i = Signal(_bits(cfg.max_head_dim), name=f"kv_i{slot}")
            m.d.comb += i.eq(b.kv_i + slot)
            byte = src_bytes[i[:ceil_log2(lanes)] if lanes > 1 else 0]
            vac, word, lane = Signal(range(vacs)), Signal(range(cfg.kv_words)), \
                Signal(range(lanes))
            t = op.token
            with m.If(~op.kv_v):       # K: the token's VAC, its row, byte i
                m.d.comb += [vac.eq(t % vacs),
                             word.eq((t // vacs) * dh_words + (i >> ceil_log2(lanes))),
                             lane.eq(i % lanes)]
            with m.Elif(op.iwur):      # V, iWuR: dimension i's VAC, column word, byte t
                m.d.comb += [vac.eq(i % vacs),
                             word.eq(k_words_per_vac + (i // vacs) * token_words
                                     + (t >> ceil_log2(lanes))),
                             lane.eq(t % lanes)]
            with m.Else():             # V, baseline: dimension i's VAC, token row, byte i/vacs
                m.d.comb += [vac.eq(i % vacs), word.eq(k_words_per_vac + t),
                             lane.eq(i // vacs)]
            for j in range(vacs):
                with m.If(b.kvw & (vac == j) & (i < op.dh)):
                    m.d.comb += [kv_be[j].bit_select(lane, 1).eq(1), kv_addr[j].eq(word),
                                 kv_data[j].word_select(lane, 8).eq(byte)]

        # --- the VACs --------------------------------------------------------------------------
        hin, rc_in = feeder, rc_head
        gbus_valid = Signal()
        gbus_value, gbus_acc = Signal(signed(16)), Signal(signed(32))
        rdata = []
        for j in range(vacs):
            vac = Vac(lanes, cfg.wmem_words, cfg.kv_words, kv=self.kv)
            unique_submodule(m, f"vac{j}", vac)
            m.d.comb += [vac.hin.eq(hin), vac.rc_in.eq(rc_in), vac.index.eq(j),
                         vac.wmem_we.eq(self.load_w_we & (self.load_w_vac == j)),
                         vac.wmem_addr.eq(self.load_w_addr), vac.wmem_data.eq(self.load_w_data)]
            if self.kv:
                m.d.comb += [vac.kv_be.eq(kv_be[j]), vac.kv_addr.eq(kv_addr[j]),
                             vac.kv_data.eq(kv_data[j])]
                rdata.append(vac.kv_rdata)
            else:
                m.d.comb += vac.kv_link.eq(self.kv_link.word_select(j, 8 * lanes))
            with m.If(vac.result_valid):      # one VAC at a time: the chains' skew
                m.d.comb += [gbus_valid.eq(1), gbus_value.eq(vac.result),
                             gbus_acc.eq(vac.result_acc)]
            hin, rc_in = vac.hout, vac.rc_out
        if self.kv:
            m.d.comb += self.kv_rdata.eq(Cat(*rdata))

        # Read-width counters at VAC 0 (every VAC reads at the same address).
        v0 = feeder
        with m.If(v0.valid & (v0.src == SRC_KV)):
            with m.If(v0.gather):
                m.d.sync += self.kv_gathers.eq(self.kv_gathers + 1)
            with m.Else():
                m.d.sync += self.kv_reads.eq(self.kv_reads + 1)

        # --- GBUS: number the results, write them back, offer them --------------------------
        n_res = Signal(16)
        with m.If(self.res_reset):
            m.d.sync += n_res.eq(0)
        with m.Elif(gbus_valid):
            m.d.sync += n_res.eq(n_res + 1)
        index = Signal(16)
        m.d.comb += index.eq(op.res_base + n_res)
        m.d.comb += [self.res_valid.eq(gbus_valid), self.res_value.eq(gbus_value),
                     self.res_acc.eq(gbus_acc)]
        m.d.comb += [ve.score_valid.eq(gbus_valid & (op.dest == DEST_SCORES)),
                     ve.score.eq(gbus_value)]
        shift = ceil_log2(lanes)
        m.d.comb += [s_wr.addr.eq(index >> shift),
                     s_wr.data.eq(Cat(*(gbus_value for _ in range(lanes)))),
                     s_wr.en.eq(Mux(gbus_valid & (op.dest == DEST_SCORES),
                                    Const(1, lanes) << index[:shift], 0))]
        with m.If(self.load_a_we):
            m.d.comb += [a_wr.en.eq((1 << lanes) - 1), a_wr.addr.eq(self.load_a_addr),
                         a_wr.data.eq(self.load_a_data)]
        with m.Elif(gbus_valid & (op.dest == DEST_ABUF)):
            m.d.comb += [a_wr.en.eq(Const(1, lanes) << index[:shift]),
                         a_wr.addr.eq(index >> shift),
                         a_wr.data.eq(Cat(*(gbus_value[:8] for _ in range(lanes))))]
        return m
