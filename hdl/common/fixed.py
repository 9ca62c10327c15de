"""Fixed-point blocks, bit-exact with :mod:`memwall.golden.common.fixedpoint`: the RC factor applied
to an accumulator (RCU + PPU), ``2**x`` as a 7-bit float, and a Newton–Raphson unit for ``1/u``
and ``1/sqrt(u)`` that folds a static factor into its result.

The Newton–Raphson unit is iterative: one 32 x 32 multiplier serves every product of the
iterations and the final scaling, a product per cycle, because an RC is needed once per
operation (a vector's RMS, a head's softmax sum) and its latency hides under the MACs.
The ROM contents come from the golden module, so both sides share every constant.
"""

# No `from __future__ import annotations`: wiring.Component reads the port annotations.

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall.golden.common import fixedpoint as fx
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.pipeline import Stages, depth_cuts, with_stages

__all__ = ["RcApply", "SignedByUnsigned", "Exp2Float", "NewtonRaphson", "leading_one"]

MANT = fx.RC_MANT_BITS
SHIFT_BITS = 6


def leading_one(m: Module, value, name: str):
    """Position of the top set bit of ``value`` (0 when ``value`` is 0), as a Signal."""
    width = len(value)
    pos = Signal(range(max(width, 2)), name=name)
    for i in range(width):          # later assignments win: the highest set bit
        with m.If(value[i]):
            m.d.comb += pos.eq(i)
    return pos


def _normalise(m: Module, y, point, name: str):
    """``fx.normalise_rc``: ``(mant, shift)`` of ``y * 2**-point`` (``y > 0``), clamped."""
    top = leading_one(m, y, f"{name}_top")
    drop = Signal(signed(8), name=f"{name}_drop")
    m.d.comb += drop.eq(top - (MANT - 1))
    mant = Signal(MANT, name=f"{name}_mant")
    m.d.comb += mant.eq(Mux(drop >= 0, y >> drop[:6], y << (-drop)[:5]))
    shift = Signal(signed(10), name=f"{name}_shift")
    m.d.comb += shift.eq(point - drop)
    out_mant, out_shift = Signal(MANT, name=f"{name}_m"), Signal(SHIFT_BITS, name=f"{name}_s")
    with m.If(shift > fx.RC_SHIFT_MAX):
        m.d.comb += [out_mant.eq(0), out_shift.eq(fx.RC_SHIFT_MAX)]
    with m.Elif(shift < 0):
        m.d.comb += [out_mant.eq((1 << MANT) - 1), out_shift.eq(0)]
    with m.Else():
        m.d.comb += [out_mant.eq(mant), out_shift.eq(shift[:SHIFT_BITS])]
    return out_mant, out_shift


class SignedByUnsigned(wiring.Component):
    """``a * b``, ``a`` signed and ``b`` unsigned, as an unsigned product less the sign's weight
    (``a = u - s * 2**n``, so ``a * b = u * b - s * (b << n)``). Measured on the product alone,
    Yosys 0.58 maps a 32 x 25 signed multiply in over 2 minutes and the unsigned one in 3.5 s;
    the kept wire stops Yosys merging the subtraction into it (one ``$macc``: 57 s).

    Attributes
    ----------
    a : In(signed(a_bits))
    b : In(b_bits)
    y : Out(signed(a_bits + b_bits + 1))
    """

    def __init__(self, a_bits: int, b_bits: int):
        self.a_bits, self.b_bits = a_bits, b_bits
        self.params = {"a_bits": a_bits, "b_bits": b_bits}
        super().__init__({"a": In(signed(a_bits)), "b": In(b_bits),
                          "y": Out(signed(a_bits + b_bits + 1))})

    def elaborate(self, platform):
        m = Module()
        n = self.a_bits
        unsigned_prod = Signal(n + self.b_bits, attrs={"keep": 1})
        m.d.comb += [unsigned_prod.eq(self.a.as_unsigned() * self.b),
                     self.y.eq(unsigned_prod - Mux(self.a[n - 1], self.b << n, 0))]
        return m


class RcApply(wiring.Component):
    """``sat(shift_round(acc * mant, shift))``: a VAC's recompute unit and post-processing unit.

    Parameters
    ----------
    acc_bits : int
        Accumulator width (two's complement).
    out_bits : int
        Output width; ``narrow`` saturates to ``narrow_bits`` instead (INT8 activations against
        INT16 scores, say).
    narrow_bits : int
        The narrower saturation width.
    stages : int
        0 (combinational) or 1 (a register after the product).

    Attributes
    ----------
    acc : In(signed(acc_bits))
    mant : In(25)
        RC mantissa.
    shift : In(6)
        RC shift.
    narrow : In(1)
        Saturate to ``narrow_bits``.
    load : In(stages)
        Only when ``stages > 0``.
    y : Out(signed(out_bits))
    """

    CUT_POINTS = ("product",)
    DEPTHS = {1: ("product",)}

    def __init__(self, acc_bits: int = 32, out_bits: int = 16, narrow_bits: int = 8,
                 stages: int = 0):
        self.cuts = depth_cuts(self.DEPTHS, stages, "RcApply")
        self.acc_bits, self.out_bits, self.narrow_bits = acc_bits, out_bits, narrow_bits
        self.stages = stages
        self.params = with_stages({"acc_bits": acc_bits, "out_bits": out_bits,
                                   "narrow_bits": narrow_bits}, stages)
        ports = {"acc": In(signed(acc_bits)), "mant": In(MANT), "shift": In(SHIFT_BITS),
                 "narrow": In(1), "y": Out(signed(out_bits))}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        # acc * mant in a module of its own, so that hierarchical synthesis maps the product
        # and the rounding separately (ABC takes minutes on the two in one cone).
        product = SignedByUnsigned(self.acc_bits, MANT)
        unique_submodule(m, "product", product)
        m.d.comb += [product.a.eq(self.acc), product.b.eq(self.mant)]
        prod = product.y
        prod, shift, narrow = st.cut("product", prod, shift=self.shift, narrow=self.narrow)
        st.done()
        # floor(prod / 2**s + 1/2) as (floor(prod / 2**(s-1)) + 1) >> 1: the shifter before the
        # increment, and saturation from the top bits, not comparators (ABC: 1 s for this form
        # alone, minutes for an adder, shifter and comparators).
        width = len(prod) + 1
        halved = Signal(signed(width))
        m.d.comb += halved.eq(Mux(shift == 0, prod << 1, prod >> (shift - 1)[:6]))
        rounded = Signal(signed(width))
        m.d.comb += rounded.eq(Mux(shift == 0, prod, (halved + 1) >> 1))

        def fits(bits):
            top = rounded[bits - 1:]
            return (top == 0) | (top == (1 << len(top)) - 1)

        wide_top = (1 << (self.out_bits - 1)) - 1
        narrow_top = (1 << (self.narrow_bits - 1)) - 1
        top = Mux(narrow, narrow_top, wide_top)
        bottom = Mux(narrow, -narrow_top - 1, -wide_top - 1)
        ok = Mux(narrow, fits(self.narrow_bits), fits(self.out_bits))
        m.d.comb += self.y.eq(Mux(ok, rounded[:self.out_bits], Mux(rounded[-1], bottom, top)))
        return m


class Exp2Float(wiring.Component):
    """``fx.exp2_float``: ``2**(12 + d/256)`` for ``d = -nd <= 0`` as a 7-bit float ``(m, s)``.

    A 256 x 8 ROM of ``round(128 * 2**(-f/256))``, the octave carry and a rounding right shift
    for gradual underflow. Combinational.

    Attributes
    ----------
    nd : In(nd_bits)
        ``-d``, unsigned.
    m : Out(7)
    s : Out(3)
    """

    def __init__(self, nd_bits: int = 17):
        self.nd_bits = nd_bits
        self.params = {"nd_bits": nd_bits}
        super().__init__({"nd": In(nd_bits), "m": Out(7), "s": Out(3)})

    def elaborate(self, platform):
        m = Module()
        frac = fx.EXP_FRAC_BITS
        rom = Signal(8)
        with m.Switch(self.nd[:frac]):
            for f, v in enumerate(fx.exp2_table()):
                with m.Case(f):
                    m.d.comb += rom.eq(v)
        i = self.nd[frac:]
        carry = rom[7]
        mant = Mux(carry, 64, rom[:7])
        # p = EXP_SHIFT_MAX - 1 - i + carry, signed; i saturates far below the underflow.
        i_sat = Signal(range(64))
        m.d.comb += i_sat.eq(Mux(i > 63, 63, i))
        p = Signal(signed(8))
        m.d.comb += p.eq(fx.EXP_SHIFT_MAX - 1 - i_sat + carry)
        under = Signal(range(9))
        m.d.comb += under.eq(Mux(-p > 8, 8, -p))
        with m.If(p >= 0):
            m.d.comb += [self.m.eq(mant), self.s.eq(p)]
        with m.Else():
            half = (Const(1, 10) << under)[1:]
            m.d.comb += [self.m.eq((mant + half) >> under), self.s.eq(0)]
        return m


class NewtonRaphson(wiring.Component):
    """``RC = f(u) * static``: ``fx.rc_mul(*fx.recip_rc(u), smant, sshift)`` (``op`` 0) or the
    same with ``fx.invsqrt_rc`` (``op`` 1), bit-exact.

    ``start`` takes the operands (ignored while ``busy``); ``done`` pulses one cycle when
    ``mant``/``shift`` hold the result, which stays until the next ``start``. Latency: 2 + 2*2
    (reciprocal) or 2 + 3*2 (inverse square root) products, then the scaling and the result
    register: ``latency(op)`` cycles from ``start`` to ``done``.

    Attributes
    ----------
    start : In(1)
    op : In(1)
        0: ``1/u``; 1: ``1/sqrt(u)``.
    u : In(32)
        0 is taken as 1.
    smant : In(16)
        Static factor mantissa.
    sshift : In(signed(8))
        Static factor shift.
    busy, done : Out(1)
    mant : Out(25)
    shift : Out(6)
    """

    @staticmethod
    def latency(op: int) -> int:
        """Cycles from ``start`` to ``done``."""
        return 3 + fx.NR_ITERATIONS * (3 if op else 2)

    def __init__(self):
        self.params = {}
        super().__init__({
            "start": In(1), "op": In(1), "u": In(32), "smant": In(16), "sshift": In(signed(8)),
            "busy": Out(1), "done": Out(1), "mant": Out(MANT), "shift": Out(SHIFT_BITS)})

    def elaborate(self, platform):
        m = Module()
        frac, nin, seed_bits = fx.NR_FRAC, fx.NR_IN_BITS, fx.NR_SEED_BITS
        op, big_m, y, t = Signal(), Signal(32), Signal(31), Signal(32)
        e = Signal(range(32))
        smant, sshift = Signal(16), Signal(signed(8))
        step = Signal(range(4))
        it = Signal(range(fx.NR_ITERATIONS + 1))
        a, b = Signal(32), Signal(32)
        prod = Signal(64)
        m.d.comb += prod.eq(a * b)

        # Input normalisation and seed (combinational from the ports, taken on start).
        u = Mux(self.u == 0, 1, self.u)
        top = leading_one(m, u, "u_top")
        e_in = Mux(self.op, top & ~1, top)
        lead = Mux(self.op, nin - 2, nin - 1)
        s = Signal(signed(7))
        m.d.comb += s.eq(e_in - lead)
        mant16 = Signal(nin)
        m.d.comb += mant16.eq(Mux(s >= 0, u >> s[:5], u << (-s)[:4]))
        recip_seed, isqrt_seed = Signal(31), Signal(31)
        with m.Switch(mant16[nin - 1 - seed_bits:nin - 1]):
            for i, v in enumerate(fx.recip_seed_table()):
                with m.Case(i):
                    m.d.comb += recip_seed.eq(v)
        with m.Switch(mant16[nin - seed_bits:]):
            for i, v in enumerate(fx.invsqrt_seed_table()):
                with m.Case(i):
                    m.d.comb += isqrt_seed.eq(v)

        y_mant, y_shift = _normalise(m, y, frac + Mux(op, e >> 1, e), "y")
        r_mant, r_shift = _normalise(m, prod[:MANT + 16], Cat(y_shift, Const(0, 2)).as_signed()
                                     + sshift, "r")
        m.d.comb += self.done.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [op.eq(self.op), e.eq(e_in), smant.eq(self.smant),
                                 sshift.eq(self.sshift), it.eq(0), step.eq(0),
                                 big_m.eq(Mux(self.op, mant16 << (frac - (nin - 2)),
                                              mant16 << (frac - (nin - 1)))),
                                 y.eq(Mux(self.op, isqrt_seed, recip_seed))]
                    m.next = "ITERATE"
            with m.State("ITERATE"):
                m.d.comb += self.busy.eq(1)
                with m.If(it == fx.NR_ITERATIONS):
                    m.next = "SCALE"
                with m.Elif(~op):                         # t = M*y; y = y*(2 - t)
                    with m.If(step == 0):
                        m.d.comb += [a.eq(big_m), b.eq(y)]
                        m.d.sync += [t.eq(prod >> frac), step.eq(1)]
                    with m.Else():
                        m.d.comb += [a.eq(y), b.eq((2 << frac) - t)]
                        m.d.sync += [y.eq(prod >> frac), step.eq(0), it.eq(it + 1)]
                with m.Else():                            # t = y*y; t = M*t; y = y*(3 - t)/2
                    with m.Switch(step):
                        with m.Case(0):
                            m.d.comb += [a.eq(y), b.eq(y)]
                            m.d.sync += [t.eq(prod >> frac), step.eq(1)]
                        with m.Case(1):
                            m.d.comb += [a.eq(big_m), b.eq(t)]
                            m.d.sync += [t.eq(prod >> frac), step.eq(2)]
                        with m.Default():
                            m.d.comb += [a.eq(y), b.eq((3 << frac) - t)]
                            m.d.sync += [y.eq(prod >> (frac + 1)), step.eq(0), it.eq(it + 1)]
            with m.State("SCALE"):
                m.d.comb += [self.busy.eq(1), a.eq(y_mant), b.eq(smant)]
                with m.If(prod == 0):
                    m.d.sync += [self.mant.eq(0), self.shift.eq(fx.RC_SHIFT_MAX)]
                with m.Else():
                    m.d.sync += [self.mant.eq(r_mant), self.shift.eq(r_shift)]
                m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += [self.busy.eq(1), self.done.eq(1)]
                m.next = "IDLE"
        return m
