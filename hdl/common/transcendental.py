"""BF16 ``exp(x)`` and ``1/x``, bit-exact with :mod:`memwall.golden.common.transcendental`.

One of each sits in every vector lane, so both are sized for area. ``Bf16Recip`` is a 128 x 9
ROM, a 2-way input normaliser and a 2-position output denormaliser. ``Bf16Exp`` is a
five-adder constant multiplier, a 16-position shifter, a 64 x 16 ROM and a 4 x 4 interpolation
multiplier. The ROM contents come from the golden module, so the RTL and the model share every
constant.

Yosys generic-gate estimates (``synth -flatten; abc -g cmos2; stat -tech cmos``, Debian Yosys
0.23): ``Bf16Exp`` about 5100 transistors, ``Bf16Recip`` about 2300; ``FpMul("bf16")`` is about
6400 for comparison. The exp widths were picked from an exhaustive sweep of accuracy against
this area figure (see ``Bf16Exp``).

Both are combinational by default; ``stages=k`` places ``k`` register stages at named cut points
of the same datapath (:mod:`memwall.hdl.common.pipeline`).
"""

# No `from __future__ import annotations`: wiring.Component reads the port annotations as
# objects, and postponed (string) annotations would hide them.

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall.golden.common.formats import BF16
from memwall.golden.common.transcendental import (
    EXP_E_HI,
    EXP_E_LO,
    LOG2E_CONST,
    LOG2E_FRAC_BITS,
    exp_tables,
    recip_table,
)
from memwall.hdl.common.pipeline import Stages, depth_cuts, with_stages

__all__ = ["Bf16Exp", "Bf16Recip"]


def _mul_log2e(x: Value) -> Value:
    """``x * LOG2E_CONST`` (23637) as ``85x + 23x * 2**10`` with ``85x = 5x + 5x * 16`` and
    ``23x = 3x * 8 - x``: five adders. A plain ``x * C`` gets one adder per set bit of C (eight)
    from Yosys, and the canonical signed-digit form needs six, which is about 30 % more area."""
    assert LOG2E_CONST == 85 + (23 << 10)
    x5 = x + (x << 2)
    x85 = x5 + (x5 << 4)
    x23 = ((x + (x << 1)) << 3) - x
    return (x85 + (x23 << 10))[:len(x) + LOG2E_CONST.bit_length()]


class Bf16Exp(wiring.Component):
    """BF16 ``e**x``, bit-exact with ``golden.transcendental.bf16_exp``.

    The block works out ``t = x * log2(e)`` in fixed point and splits it into ``n + f``.
    ``2**f`` is a linear interpolation between ``2**T`` table points, and the result is
    ``2**n * 2**f`` rounded to 8 significant bits. With the default widths the max error is
    0.604 ulp and 99.77 % of finite inputs are correctly rounded; the golden docstring has the
    full figures. The output is monotonic in x. Results below 2**-126 flush to +0, and NaN
    gives ``0x7FC0``.

    Widths (defaults, :data:`~memwall.golden.common.transcendental.EXP_PARAMS`), chosen as the knee
    of an exhaustive accuracy-vs-area sweep over all five widths:

    * log2(e) is a fixed 16-bit constant, ``23637 / 2**14``. It is as accurate as a 17-bit
      one, and its error adds at most 4.3e-4 relative at ``|x| = 128``.
    * ``t_frac_bits = 10``: f has error below 2**-11 after centring, 3.4e-4 relative in 2**f.
      Fewer bits take the max error above 0.7 ulp.
    * ``table_bits = 6``, ``interp_bits = 4``: 64 segments, interpolated on the remaining
      4 bits of f. The 64-entry ROM is cheaper than the wider interpolation multiplier that
      16- or 32-entry tables need for the same accuracy (measured).
    * ``slope_frac_bits = 3``: the slope times ``r < 2**-6`` needs only a 4 x 4 product. The
      slope's coarseness goes into the per-segment minimax fit of ``base``, whose error is
      below 2.2 * 2**-12 (5.2e-4).
    * ``table_frac_bits = 12``: 5 bits below the output ulp of 2**-7.

    Combinational by default. With ``stages = k > 0`` it has ``k`` register stages
    (:mod:`~memwall.hdl.common.pipeline`) and a latency of ``k`` cycles. Cut points, in
    dataflow order (:attr:`CUT_POINTS`):

    * ``product``: after the constant multiplier ``|x| * log2(e)``;
    * ``fixed``: after the exponent shift into fixed point and the split ``t = n + f``;
    * ``rom``: after the table lookup of base and slope;
    * ``interp``: after the interpolation and the result exponent, before the special select.

    Active cuts per depth (:attr:`DEPTHS`), chosen from ``benchmarks/fp_stages.py --search``
    on ASAP7 at 1 GHz (``reports/fp_stages.md``): 1 ``fixed``; 2 ``product, rom``;
    3 ``product, rom, interp``.

    Parameters
    ----------
    params : dict, optional
        Datapath widths, keys as :data:`~memwall.golden.common.transcendental.EXP_PARAMS` (the
        default). They are validated, and ``ValueError`` names the bad key. A ``"stages"`` key
        (as in the ``params`` of a pipelined block) is taken as ``stages``.
    stages : int
        Pipeline register stages, ``0 .. max(DEPTHS)`` (3).

    Attributes
    ----------
    a : In(16)
        BF16 input bit pattern.
    load : In(stages)
        Only when ``stages > 0``: bit ``j`` loads the registers of stage ``j``.
    y : Out(16)
        BF16 bit pattern of ``e**a``, ``stages`` cycles after ``a``.
    params : dict
        The datapath widths (JSON-serialisable), plus ``"stages"`` when it is not 0, for
        module deduplication.
    """

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("product", "fixed", "rom", "interp")
    #: Active cut points per depth.
    DEPTHS = {1: ("fixed",), 2: ("product", "rom"), 3: ("product", "rom", "interp")}

    def __init__(self, params: dict | None = None, stages: int = 0):
        if params is not None and "stages" in params:
            params = dict(params)
            given = params.pop("stages")
            if stages and stages != given:
                raise ValueError(f"Bf16Exp: stages={stages!r} disagrees with params['stages']"
                                 f"={given!r}")
            stages = given
        self._tables = exp_tables(params)   # validates the keys and ranges
        self.cuts = depth_cuts(self.DEPTHS, stages, "Bf16Exp")
        self.stages = stages
        self.params = with_stages(self._tables.p, stages)
        ports = {"a": In(16), "y": Out(16)}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        p, tb = self._tables.p, self._tables
        fb, t, r, w = p["t_frac_bits"], p["table_bits"], p["interp_bits"], p["table_frac_bits"]
        sign, exp, frac = self.a[15], self.a[7:15], self.a[:7]
        # Special inputs are settled here and carried to the output select.
        nan = (exp == 0xFF) & frac.any()
        big = exp > EXP_E_HI                               # |x| >= 128 and ±inf
        tiny = exp < EXP_E_LO                              # |x| < 2**-9: e**x rounds to 1

        # |t| = 1.frac * 2**(exp - 127) * log2(e): the 8-bit significand times C, then moved by
        # the exponent. Only exp in 118..133 matters (the rest are specials), so the shift is
        # 4 bits. |t| < 185 has 8 integer bits; keep F fraction bits.
        # The product's bits below lo - 15 never reach t (sh <= 15): not carried, not
        # registered.
        lo = LOG2E_FRAC_BITS + 16 - fb
        drop = max(0, lo - 15)
        prod = _mul_log2e(Cat(frac, Const(1, 1)))[drop:]
        sh = (exp[:4] + (16 - EXP_E_LO % 16))[:4]          # (exp - 118) mod 16
        prod, sh, sign, nan, big, tiny = st.cut("product", prod=prod, sh=sh, sign=sign, nan=nan,
                                                big=big, tiny=tiny)
        t_abs = (prod << sh)[lo - drop:lo - drop + 8 + fb]
        # t = n + f, f in [0, 1). For x < 0 take the one's complement (-|t| - 2**-F): like the
        # truncation for x > 0, it leaves the exact t less than 2**-F above the kept value.
        t_fix = Cat(t_abs ^ sign.replicate(8 + fb), sign).as_signed()
        n = t_fix[fb:].as_signed()
        f = t_fix[:fb]
        seg = f[fb - t:]
        rr = f[fb - t - r:fb - t]
        n, seg, rr, sign, nan, big, tiny = st.cut("fixed", n=n, seg=seg, rr=rr, sign=sign,
                                                  nan=nan, big=big, tiny=tiny)

        # 2**f - 1 = base[seg] + slope[seg] * r. A case ROM keeps the block combinational.
        base = Signal(max(tb.base).bit_length())
        slope = Signal(max(max(tb.slope).bit_length(), 1))
        with m.Switch(seg):
            for i in range(1 << t):
                with m.Case(i):
                    m.d.comb += [base.eq(tb.base[i]), slope.eq(tb.slope[i])]
        base, slope, rr, n, sign, nan, big, tiny = st.cut(
            "rom", base, slope, rr=rr, n=n, sign=sign, nan=nan, big=big, tiny=tiny)
        pv = (base + ((slope * rr) >> tb.prod_shift))[:w + 1]
        # base holds the half-ulp rounding offset, so the rounding is a plain truncation.
        # q = 128 is 2**f rounded up to 2.0: fraction 0 and a carry into the exponent.
        q = pv[w - 7:w + 1]
        be = (n + BF16.bias + q[7]).as_signed()
        q, be, sign, nan, big, tiny = st.cut("interp", q=q, be=be, sign=sign, nan=nan, big=big,
                                             tiny=tiny)
        st.done()

        with m.If(nan):
            m.d.comb += self.y.eq(BF16.qnan_bits)
        with m.Elif(big):
            m.d.comb += self.y.eq(Mux(sign, 0, BF16.inf_bits))
        with m.Elif(tiny):
            m.d.comb += self.y.eq(BF16.bias << BF16.man_bits)
        with m.Elif(be >= BF16.exp_max):
            m.d.comb += self.y.eq(BF16.inf_bits)
        with m.Elif(be <= 0):                              # below 2**-126: flush to +0
            m.d.comb += self.y.eq(0)
        with m.Else():
            m.d.comb += self.y.eq(Cat(q[:7], be[:8], Const(0, 1)))
        return m


class Bf16Recip(wiring.Component):
    """BF16 ``1/x``, bit-exact with ``golden.transcendental.bf16_recip``.

    Correctly rounded (RNE) for every input, subnormals included. BF16 has a 7-bit fraction,
    so ``1/m`` fits one 128-entry ROM of correctly rounded 8-bit significands. Each entry also
    holds its rounding direction, so that the rare subnormal results (``|x| >= 2**126``) can be
    rounded a second time exactly. A subnormal input is normalised by a 1- or 2-bit shift;
    smaller inputs overflow. ``±0 -> ±inf``, ``±inf -> ±0``, NaN -> ``0x7FC0``.

    Combinational by default. With ``stages = k > 0`` it has ``k`` register stages
    (:mod:`~memwall.hdl.common.pipeline`) and a latency of ``k`` cycles. Cut points, in
    dataflow order (:attr:`CUT_POINTS`): ``rom`` (after the input normaliser and the table
    lookup), ``round`` (after the result exponent and the subnormal roundings, before the
    result select). Active cuts per depth (:attr:`DEPTHS`), chosen from
    ``benchmarks/fp_stages.py --search`` on ASAP7 at 1 GHz (``reports/fp_stages.md``):
    1 ``rom``; 2 ``rom, round``. Its depth 0 already meets the report's target there; the
    stages are for latency alignment.

    Parameters
    ----------
    stages : int
        Pipeline register stages, ``0 .. max(DEPTHS)`` (2).

    Attributes
    ----------
    a : In(16)
        BF16 input bit pattern.
    load : In(stages)
        Only when ``stages > 0``: bit ``j`` loads the registers of stage ``j``.
    y : Out(16)
        BF16 bit pattern of ``1/a``, ``stages`` cycles after ``a``.
    params : dict
        ``{}``, or ``{"stages": k}`` when pipelined.
    """

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("rom", "round")
    #: Active cut points per depth.
    DEPTHS = {1: ("rom",), 2: ("rom", "round")}

    def __init__(self, stages: int = 0):
        self.cuts = depth_cuts(self.DEPTHS, stages, "Bf16Recip")
        self.stages = stages
        self.params = with_stages({}, stages)
        ports = {"a": In(16), "y": Out(16)}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        sign, exp, frac = self.a[15], self.a[7:15], self.a[:7]
        sub = exp == 0
        # Subnormal input: leading one at bit 6 (value 1.f' * 2**-127, as if exp were 0) or
        # bit 5 (1.f' * 2**-128, exp -1). Below that, 1/x >= 2**128 overflows.
        idx = Mux(sub, Mux(frac[6], Cat(Const(0, 1), frac[:6]), Cat(Const(0, 2), frac[:5])),
                  frac)
        e_eff = Mux(sub, Mux(frac[6], 0, -1), exp)         # signed, -1..254
        # Special inputs are settled here and carried to the output select.
        inf_in = exp == 0xFF
        huge = sub & ~frac[5:].any()                       # ±0 and |x| < 2**-128
        nan = (exp == 0xFF) & frac.any()

        entry = Signal(9)
        with m.Switch(idx):
            for i, v in enumerate(recip_table()):
                with m.Case(i):
                    m.d.comb += entry.eq(v)
        entry, e_eff, sign, inf_in, huge, nan = st.cut(
            "rom", entry, e_eff=e_eff, sign=sign, inf_in=inf_in, huge=huge, nan=nan)
        q8 = Cat(entry[:7], Const(1, 1))
        down = entry[7]
        be = (253 - e_eff + entry[8]).as_signed()          # -1..255

        # Subnormal results: q8 shifted right by 1 (be == 0) or 2 (be == -1), rounded to
        # nearest. q8 is never exact there, so with the stored direction there are no ties.
        sub1 = q8[1:] + (q8[0] & down)
        sub2 = q8[2:] + ((q8[:2] == 3) | ((q8[:2] == 2) & down))
        frac_r = entry[:7]
        frac_r, be, sub1, sub2, sign, inf_in, huge, nan = st.cut(
            "round", frac_r=frac_r, be=be, sub1=sub1, sub2=sub2, sign=sign, inf_in=inf_in,
            huge=huge, nan=nan)
        st.done()
        mag = Signal(15)
        with m.If(inf_in):
            m.d.comb += mag.eq(0)                          # 1/±inf (NaN replaced below)
        with m.Elif(huge):
            m.d.comb += mag.eq(BF16.inf_bits)              # ±0 and |x| < 2**-128
        with m.Elif(be >= BF16.exp_max):
            m.d.comb += mag.eq(BF16.inf_bits)              # |x| == 2**-128
        with m.Elif(be >= 1):
            m.d.comb += mag.eq(Cat(frac_r, be[:8]))
        with m.Elif(be == 0):
            m.d.comb += mag.eq(sub1)
        with m.Else():
            m.d.comb += mag.eq(sub2)
        m.d.comb += self.y.eq(Mux(nan, BF16.qnan_bits, Cat(mag, sign)))
        return m
