"""The vector-accumulate core (VAC) of an rDXE tile: 16 INT8 lanes, an INT32 accumulator, the
HLINK register, the recompute and post-processing units, a weight memory and a KV cache
(arithmetic: :mod:`memwall.golden.rdxe.datapath`).

A beat travels the HLINK chain: each VAC registers it and passes it on, so VAC ``j`` sees a beat
``j`` cycles after VAC 0 and the tile is a systolic array on its input path. A beat carries the
broadcast operand (``lanes`` INT8s and, for softmax numerators, a product shift per lane) and
the control of the cycle: which memory to read at which word, whether the accumulation starts
or ends here, and how many VACs of the group have a row. Every VAC reads its own memories at
that address, so the sequencer drives one address stream for the whole tile. The RC factor
travels a chain of its own beside HLINK with the same skew.

Pipeline of a beat, from the cycle it is in the HLINK register: memory read (synchronous);
the lane products, shifted and summed; accumulation; the RCU and PPU on the finished sum, into
the result register. ``RESULT_LATENCY`` cycles from a ``last`` beat to its result when the RC
is current; a fused operation's first results wait for the vector engine's RC instead.

Baseline KV layout (``gather``): a beat reads one row and keeps byte ``gsel`` of it in lane
``glane`` of a gather register; the MAC runs only on beats with ``mac`` set, on the gathered
word. The iWuR layout reads whole words and sets ``mac`` on every beat.

GQA: a VAC built without a KV cache (``kv=False``) takes its KV read data from ``kv_link``,
the vertical link from the VAC of the same position in the tile that owns the cache.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.golden.common import fixedpoint as fx
from memwall.hdl.common.fixed import RcApply
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["Vac", "beat_layout", "RC_LAYOUT", "RESULT_LATENCY", "SRC_WMEM", "SRC_KV"]

#: Cycles from a ``last`` beat in a VAC's HLINK register to its ``result``.
RESULT_LATENCY = 4
SRC_WMEM, SRC_KV = 0, 1
SH_BITS = 3
ACC_BITS = 32


def beat_layout(lanes: int, addr_bits: int) -> data.StructLayout:
    """One HLINK beat: operand, product shifts and the cycle's control."""
    return data.StructLayout({
        "valid": 1,
        "x": 8 * lanes,            # INT8 per lane (a softmax numerator's mantissa is 0..127)
        "sh": SH_BITS * lanes,     # left shift of each lane's product (softmax numerators)
        "src": 1,                  # SRC_WMEM or SRC_KV
        "addr": addr_bits,
        "first": 1,                # the accumulation starts at this beat
        "last": 1,                 # ... and ends at this one (result follows)
        "mac": 1,                  # accumulate this beat (else: gather only)
        "gather": 1,               # baseline layout: keep byte gsel of the row in lane glane
        "gsel": max(1, ceil_log2(lanes)),
        "glane": max(1, ceil_log2(lanes)),
        "rows": 8,                 # VACs with a row in this group: VAC j answers if j < rows
    })


#: The RC factor as it travels the chain: ``load`` sets it, ``clear`` marks it stale.
RC_LAYOUT = data.StructLayout({"load": 1, "clear": 1, "mant": fx.RC_MANT_BITS, "shift": 6,
                               "narrow": 1})


class Vac(wiring.Component):
    """One VAC.

    Parameters
    ----------
    lanes : int
        INT8 multipliers (and bytes per memory word).
    wmem_words, kv_words : int
        Depth of the weight memory and of the KV cache, in words of ``lanes`` bytes.
    kv : bool
        The VAC owns a KV cache (else it reads ``kv_link``).

    Attributes
    ----------
    hin : In(beat_layout)
        The HLINK register of the previous VAC (or the tile's feeder).
    hout : Out(beat_layout)
        This VAC's HLINK register.
    wmem_we, wmem_addr, wmem_data : In
        Weight memory write port (whole words).
    kv_be, kv_addr, kv_data : In
        KV cache write port, a byte enable per lane (only with ``kv``).
    kv_rdata : Out(8 * lanes)
        KV cache read data (the VLINK source), with ``kv``.
    kv_link : In(8 * lanes)
        KV read data of the owning VAC, without ``kv``.
    rc_in : In(RC_LAYOUT)
        The RC factor and the output width (``narrow``: INT8, else INT16) from the previous VAC
        (or the tile), one cycle behind it like the beats, so VAC ``j`` sees it ``j`` cycles
        after VAC 0.
    rc_out : Out(RC_LAYOUT)
        This VAC's RC chain register.
    index : In(8)
        This VAC's position in the tile (a port, so that every VAC is one module).
    result_valid : Out(1)
    result : Out(signed(16))
    result_acc : Out(signed(32))
        The raw accumulator of the result.
    """

    def __init__(self, lanes: int, wmem_words: int, kv_words: int, kv: bool = True):
        self.lanes, self.wmem_words, self.kv_words, self.kv = lanes, wmem_words, kv_words, kv
        self.addr_bits = max(1, ceil_log2(max(wmem_words, kv_words)))
        self.params = {"lanes": lanes, "wmem_words": wmem_words, "kv_words": kv_words, "kv": kv}
        beat = beat_layout(lanes, self.addr_bits)
        ports = {
            "hin": In(beat), "hout": Out(beat),
            "wmem_we": In(1), "wmem_addr": In(range(wmem_words)), "wmem_data": In(8 * lanes),
            "rc_in": In(RC_LAYOUT), "rc_out": Out(RC_LAYOUT), "index": In(8),
            "result_valid": Out(1), "result": Out(signed(16)), "result_acc": Out(signed(ACC_BITS)),
        }
        if kv:
            ports.update({"kv_be": In(lanes), "kv_addr": In(range(kv_words)),
                          "kv_data": In(8 * lanes), "kv_rdata": Out(8 * lanes)})
        else:
            ports["kv_link"] = In(8 * lanes)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lanes = self.lanes
        m.d.sync += self.hout.eq(self.hin)

        # Stage 0 -> 1: synchronous memory reads at the beat's address.
        m.submodules.wmem = wmem = memory.Memory(shape=8 * lanes, depth=self.wmem_words, init=[])
        wr = wmem.write_port()
        m.d.comb += [wr.en.eq(self.wmem_we), wr.addr.eq(self.wmem_addr), wr.data.eq(self.wmem_data)]
        wrd = wmem.read_port(transparent_for=())
        m.d.comb += wrd.addr.eq(self.hin.addr)
        if self.kv:
            m.submodules.kvmem = kvmem = memory.Memory(shape=8 * lanes, depth=self.kv_words,
                                                       init=[])
            kw = kvmem.write_port(granularity=8)
            m.d.comb += [kw.en.eq(self.kv_be), kw.addr.eq(self.kv_addr), kw.data.eq(self.kv_data)]
            krd = kvmem.read_port(transparent_for=())
            m.d.comb += [krd.addr.eq(self.hin.addr), self.kv_rdata.eq(krd.data)]
            kv_word = krd.data
        else:
            kv_word = self.kv_link
        s1 = Signal.like(self.hin, name="s1")
        m.d.sync += s1.eq(self.hin)
        word = Signal(8 * lanes)
        m.d.comb += word.eq(Mux(s1.src == SRC_KV, kv_word, wrd.data))

        # Baseline layout: gather one byte per beat.
        gathered = Array(Signal(8, name=f"g{i}") for i in range(lanes))
        row_bytes = Array(word[8 * i:8 * i + 8] for i in range(lanes))
        picked = row_bytes[s1.gsel]
        with m.If(s1.valid & s1.gather):
            m.d.sync += gathered[s1.glane].eq(picked)
        operand = Signal(8 * lanes)
        gather_now = Cat(*(Mux(s1.glane == i, picked, gathered[i]) for i in range(lanes)))
        m.d.comb += operand.eq(Mux(s1.gather, gather_now, word))

        # Stage 1 -> 2: lane products, shifted, summed.
        sum_bits = 16 + (1 << SH_BITS) + ceil_log2(lanes)
        total = 0
        for i in range(lanes):
            a = s1.x[8 * i:8 * i + 8].as_signed()
            b = operand[8 * i:8 * i + 8].as_signed()
            prod = Signal(signed(16), name=f"p{i}")
            m.d.comb += prod.eq(a * b)
            total = total + (prod << s1.sh[SH_BITS * i:SH_BITS * (i + 1)])
        s2_sum = Signal(signed(sum_bits))
        s2 = Signal.like(self.hin, name="s2")
        m.d.sync += [s2_sum.eq(total), s2.eq(s1)]

        # The RC chain: a VAC's factor, and whether it is current.
        m.d.sync += self.rc_out.eq(self.rc_in)
        rc = Signal(RC_LAYOUT)
        rc_ok = Signal()
        with m.If(self.rc_in.load):
            m.d.sync += [rc.eq(self.rc_in), rc_ok.eq(1)]
        with m.Elif(self.rc_in.clear):
            m.d.sync += rc_ok.eq(0)

        # Stage 2 -> 3: accumulate. A finished sum waits (pending) for a current RC; the
        # sequencer starts no group before the RC of its operation is on the chain, so the
        # accumulator is never overwritten while a result waits.
        acc = Signal(signed(ACC_BITS))
        pending = Signal()
        fire = pending & rc_ok
        with m.If(s2.valid & s2.mac):
            m.d.sync += acc.eq(Mux(s2.first, 0, acc) + s2_sum)
        with m.If(s2.valid & s2.mac & s2.last & (self.index < s2.rows)):
            m.d.sync += pending.eq(1)
        with m.Elif(fire):
            m.d.sync += pending.eq(0)

        # Stage 3 -> 4: RCU + PPU into the result register.
        ppu = RcApply(ACC_BITS, 16, 8)
        unique_submodule(m, "ppu", ppu)
        m.d.comb += [ppu.acc.eq(acc), ppu.mant.eq(rc.mant), ppu.shift.eq(rc.shift),
                     ppu.narrow.eq(rc.narrow)]
        m.d.sync += self.result_valid.eq(fire)
        with m.If(fire):
            m.d.sync += [self.result.eq(ppu.y), self.result_acc.eq(acc)]
        return m
