"""The vector engine (VE) of an rDXE tile: the statistics the VRC needs and the RC factor
(arithmetic: :mod:`memwall.golden.rdxe.datapath`).

* ``sum x**2`` of INT8 operand words as they stream past (RMSNorm);
* the running maximum of the INT16 scores as they are written back (softmax);
* ``e = 2**(12 + (z - z_max)/256)`` for a word of scores, one :class:`Exp2Float` per lane, and
  ``sum e`` of the words it is asked to add;
* ``RC = 1/sqrt(sum x**2 + eps_sum)`` or ``1/sum e``, times a static factor, by one iterative
  :class:`NewtonRaphson`;
* for the sequential (unfused) baseline only (``sequential``): a lane-wide
  ``sat8(a * RC)`` that writes the normalised vector (``x * g`` or ``e``).

Every input is registered where it enters a sum, so the VE adds no combinational path to the
tile's operand buses.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.golden.common import fixedpoint as fx
from memwall.hdl.common.fixed import Exp2Float, NewtonRaphson, RcApply
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["VectorEngine", "E_BITS", "ESUM_BITS", "NORM_BITS"]

#: Bits of an exponential's integer value (``m << s`` <= 2**12).
E_BITS = 7 + fx.EXP_SHIFT_MAX
#: ``sum e`` fits 32 bits for any token count the config allows.
ESUM_BITS = 32
SQ_BITS = 32
SCORE_BITS = 16
#: Bits of a normalisation lane's operand (``x*g``, or ``e``) in the sequential baseline.
NORM_BITS = 16


class VectorEngine(wiring.Component):
    """One tile's vector engine.

    Parameters
    ----------
    lanes : int
        Elements per word.
    sequential : bool
        Build the sequential baseline's normalisation lanes.

    Attributes
    ----------
    clear : In(1)
        Zero ``sum x**2`` and ``sum e``.
    max_clear : In(1)
        Set the maximum to the lowest score (a new head's scores follow).
    sq_valid : In(1)
    sq_x : In(8 * lanes)
        An INT8 word to add to ``sum x**2``.
    score_valid : In(1)
    score : In(signed(16))
        A written-back score for the running maximum.
    z : In(16 * lanes)
        A word of scores for the exponentials (``e_m``, ``e_s``, combinational).
    z_mask : In(lanes)
        Lanes of ``z`` that are tokens (others give ``e = 0``).
    esum_add : In(1)
        Add this word's ``e`` (masked) to ``sum e``.
    e_m : Out(7 * lanes)
    e_s : Out(3 * lanes)
    nr_start, nr_op : In(1)
        Start the RC: ``nr_op`` 1 is ``1/sqrt(sum x**2 + eps_sum)``, 0 is ``1/sum e``.
    eps_sum : In(32)
    smant : In(16)
    sshift : In(signed(8))
    rc_valid : Out(1)
        ``rc_mant``/``rc_shift`` hold the RC of the last start (until the next).
    rc_mant : Out(25)
    rc_shift : Out(6)
    z_max : Out(signed(16))
    sum_sq, sum_e : Out(32)
    norm_a : In(16 * lanes)
        Sequential only: INT16 operands of the normalisation lanes.
    norm_y : Out(8 * lanes)
        Sequential only: ``sat8(norm_a * RC)`` per lane, combinational.
    """

    def __init__(self, lanes: int, sequential: bool = True):
        self.lanes, self.sequential = lanes, sequential
        self.params = {"lanes": lanes, "sequential": sequential}
        ports = {
            "clear": In(1), "max_clear": In(1), "sq_valid": In(1), "sq_x": In(8 * lanes),
            "score_valid": In(1), "score": In(signed(SCORE_BITS)),
            "z": In(SCORE_BITS * lanes), "z_mask": In(lanes), "esum_add": In(1),
            "e_m": Out(7 * lanes), "e_s": Out(3 * lanes),
            "nr_start": In(1), "nr_op": In(1), "eps_sum": In(32), "smant": In(16),
            "sshift": In(signed(8)),
            "rc_valid": Out(1), "rc_mant": Out(fx.RC_MANT_BITS), "rc_shift": Out(6),
            "z_max": Out(signed(SCORE_BITS)), "sum_sq": Out(SQ_BITS), "sum_e": Out(ESUM_BITS),
        }
        if sequential:
            ports.update({"norm_a": In(NORM_BITS * lanes), "norm_y": Out(8 * lanes)})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        lanes = self.lanes

        # sum x**2: the word is registered, squared and added (two cycles to the sum).
        sq_word, sq_go = Signal(8 * lanes), Signal()
        m.d.sync += [sq_word.eq(self.sq_x), sq_go.eq(self.sq_valid)]
        # x**2 = |x|**2: unsigned 8 x 8 squares (|-128| = 128 fits 8 bits); Yosys 0.58 maps
        # signed multiplies merged into a sum very slowly.
        mags = []
        for i in range(lanes):
            x = sq_word[8 * i:8 * i + 8].as_signed()
            mag = Signal(8, name=f"mag{i}")
            m.d.comb += mag.eq(Mux(x < 0, -x, x))
            mags.append(mag)
        squares = sum(mag * mag for mag in mags)
        sq_sum = Signal(15 + ceil_log2(lanes) + 1)
        m.d.comb += sq_sum.eq(squares)
        top = (1 << SQ_BITS) - 1
        with m.If(self.clear):
            m.d.sync += self.sum_sq.eq(0)
        with m.Elif(sq_go):
            total = self.sum_sq + sq_sum
            m.d.sync += self.sum_sq.eq(Mux(total > top, top, total))

        # Running maximum of the written-back scores.
        with m.If(self.max_clear):
            m.d.sync += self.z_max.eq(-(1 << (SCORE_BITS - 1)))
        with m.Elif(self.score_valid & (self.score > self.z_max)):
            m.d.sync += self.z_max.eq(self.score)

        # Exponentials of a word of scores, and their sum.
        e_vals = []
        for i in range(lanes):
            exp = Exp2Float(SCORE_BITS + 1)
            unique_submodule(m, f"exp{i}", exp)
            z = self.z[SCORE_BITS * i:SCORE_BITS * (i + 1)].as_signed()
            nd = Signal(SCORE_BITS + 1, name=f"nd{i}")
            m.d.comb += nd.eq(Mux(self.z_max > z, self.z_max - z, 0))
            m.d.comb += exp.nd.eq(nd)
            mi = Mux(self.z_mask[i], exp.m, 0)
            si = Mux(self.z_mask[i], exp.s, 0)
            m.d.comb += [self.e_m[7 * i:7 * i + 7].eq(mi), self.e_s[3 * i:3 * i + 3].eq(si)]
            e_vals.append(mi << si)
        e_word = Signal(E_BITS + ceil_log2(lanes) + 1)
        m.d.comb += e_word.eq(sum(e_vals))
        e_reg, e_go = Signal.like(e_word), Signal()
        m.d.sync += [e_reg.eq(e_word), e_go.eq(self.esum_add)]
        with m.If(self.clear):
            m.d.sync += self.sum_e.eq(0)
        with m.Elif(e_go):
            m.d.sync += self.sum_e.eq(self.sum_e + e_reg)

        # The RC factor.
        nr = NewtonRaphson()
        unique_submodule(m, "nr", nr)
        u_sq = self.sum_sq + self.eps_sum
        m.d.comb += [nr.start.eq(self.nr_start), nr.op.eq(self.nr_op),
                     nr.u.eq(Mux(self.nr_op, Mux(u_sq > top, top, u_sq), self.sum_e)),
                     nr.smant.eq(self.smant), nr.sshift.eq(self.sshift),
                     self.rc_mant.eq(nr.mant), self.rc_shift.eq(nr.shift)]
        with m.If(self.nr_start):
            m.d.sync += self.rc_valid.eq(0)
        with m.Elif(nr.done):
            m.d.sync += self.rc_valid.eq(1)

        if self.sequential:
            outs = []
            for i in range(lanes):
                norm = RcApply(NORM_BITS, 8, 8)
                unique_submodule(m, f"norm{i}", norm)
                m.d.comb += [norm.acc.eq(self.norm_a.word_select(i, NORM_BITS).as_signed()),
                             norm.mant.eq(nr.mant), norm.shift.eq(nr.shift), norm.narrow.eq(1)]
                outs.append(norm.y[:8])
            m.d.comb += self.norm_y.eq(Cat(*outs))
        return m
