"""The Gumbel variate of the sampling noise, ``G = -ln(-ln u)``, fully pipelined.

Bit-exact with :func:`memwall.golden.dplena.gumbel.gumbel_fp32`, whose docstring has the
arithmetic: from the uniform's 23-bit cell index ``m`` (``u = (2m + 1) * 2**-24``), ``t = -ln u``
by a table-interpolated ``log2`` (``u < 1/2``) or ``d * h(d)`` with a table-interpolated
``h(d) = -ln(1 - d)/d`` (``u >= 1/2``), then ``G = -ln 2 * log2 t`` by a second interpolated
``log2``, all in fixed point with ``FRAC_BITS`` (24) fraction bits and the golden truncations,
and one round to nearest even to FP32. The tables are the golden ``log2_table()`` and
``h_table()``, read here, never retyped.

**Datapath.** The golden model computes both branches of step 1 and selects; here they share
hardware, since only one is used: one 128-entry ROM (log2 rows for ``u < 1/2``, h rows above),
one interpolator, and one ``29 x 25`` multiplier that forms ``a * ln2`` or ``d * h``. Its
product always carries 48 fraction bits (for ``a * ln2`` its low 24 bits are cleared, the
golden ``>> 24`` truncation), so one normaliser (:class:`Normaliser`, a priority encoder and a
barrel shifter) serves both. ``G = -ln2 * (q * 2**24 + v)`` is formed as
``|q| * ln2 -/+ (v * ln2 >> 24)``, which is the golden floor exactly and gives G's sign and
magnitude with no signed multiply and no negation; a third normaliser and a rounding increment
make the FP32 pattern. Step by step: input normaliser and ROM index (``index``), ROM lookup
(``rom1``), interpolation ``slope * rest`` (``interp1_partial``, ``interp1``), the product
(``product_partial``, ``product``), normaliser (``norm``), second ROM (``rom2``), second
interpolation (``interp2_partial``, ``interp2``), ``* ln2`` (``log_partial``, ``log``), FP32
normalise and round (``round``). These are the candidate cut points (:attr:`GumbelUnit.
CUT_POINTS`); a ``*_partial`` cut splits its multiplier into partial products summed after it.

**Latency** = ``stages + 1`` cycles, ``stages = 0 .. 12`` (default 12: latency 13):
``stages`` register stages at the cuts of :attr:`GumbelUnit.DEPTHS` plus the output register,
which every depth has (``stages = 0`` is the combinational datapath in front of it). An input
presented in cycle ``c`` (sampled at the clock edge that ends it) is on ``o_valid``/``g`` in
cycle ``c + latency``. One input a cycle, no stall. **Timing:** not yet a recorded figure. The
unit is in no config, so no sign-off row times it, and ``reports/fp_stages.md`` does not list it.
Time it there, or in the core's sign-off, before any clock claim rests on it.

**Registers.** ``valid`` shifts down a chain of reset registers (``rst`` empties the pipeline);
data registers are reset-less and load only when valid data enters their stage
(:mod:`memwall.hdl.common.pipeline`); ``g`` holds its last value while ``o_valid`` is low.

**Ports.** In: ``valid`` (1), ``mantissa`` (23). Out: ``o_valid`` (1), ``g`` (32, the FP32 bit
pattern). Implicit ``clk`` and synchronous active-high ``rst``.
"""

# No `from __future__ import annotations`: wiring reads the port annotations as objects.
from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from memwall.golden.dplena.gumbel import _LN2 as LN2  # the golden's constant: one definition
from memwall.golden.dplena.gumbel import FRAC_BITS, TABLE_BITS, h_table, log2_table
from memwall.golden.dplena.rng import UNIFORM_BITS
from memwall.hdl.common.fp import leading_zero_count
from memwall.hdl.common.pipeline import Stages, depth_cuts

__all__ = ["GumbelUnit", "Normaliser", "LN2", "DEFAULT_STAGES", "MAX_STAGES"]

#: The deepest entry of :attr:`GumbelUnit.DEPTHS` (latency 13 cycles): every multiply and
#: normalise step is its own stage, as the FP blocks' deepest tables cut theirs.
DEFAULT_STAGES = 12

F, T = FRAC_BITS, TABLE_BITS
_N = UNIFORM_BITS + 1        # n = 2m + 1 has 24 bits
_X_BITS = 29                 # a < 25 * 2**24 (the ln2 operand: a fits, d has 23 bits)
_Y_BITS = 25                 # h < 2 ln2 * 2**24 (ln2 has 24 bits)
_P_BITS = 53                 # a * ln2 < 2**53; d * h < 2**48
_MAG_BITS = 29               # |G| <= 24 ln2 * 2**24 < 2**29
_Q0 = _P_BITS - 1 - 2 * F    # t = P * 2**-48 has q = _Q0 - (P's leading zeros)
_DROP = _MAG_BITS - 1 - 23   # bits of |G| below the FP32 fraction once normalised


def _rom(m: Module, index: Value, rows: list[tuple[int, int]], name: str):
    """``(lo, slope)`` of table row ``index``, a case ROM (combinational)."""
    lo = Signal(max(max(r[0] for r in rows).bit_length(), 1), name=f"{name}_lo")
    slope = Signal(max(max(r[1] for r in rows).bit_length(), 1), name=f"{name}_slope")
    with m.Switch(index):
        for i, (a, b) in enumerate(rows):
            with m.Case(i):
                m.d.comb += [lo.eq(a), slope.eq(b)]
    return lo, slope


def _rows(table) -> list[tuple[int, int]]:
    """Segment rows ``(entry below, next entry - entry below)`` of a golden table (the golden
    interpolation's ``lo`` and ``hi - lo``; every slope is >= 0)."""
    t = [int(v) for v in table]
    rows = [(t[i], t[i + 1] - t[i]) for i in range(len(t) - 1)]
    assert all(s >= 0 for _, s in rows)
    return rows


def _products(st: Stages, cut: str, a: Value, b: Value, parts: int, **carry):
    """The terms of ``a * b``, as ``[(value, shift)]``: the product itself, or, if ``cut`` is
    active, ``parts`` partial products (``a`` times equal slices of ``b``) registered there.
    Returns the terms and ``carry`` (the other values live at the cut), in that order."""
    if not st.active(cut):
        return ([(a * b, 0)], *st.cut(cut, **carry))
    step = -(-len(b) // parts)
    pp = {f"pp{i}": a * b[lo:lo + step] for i, lo in enumerate(range(0, len(b), step))}
    *out, = st.cut(cut, **pp, **carry)
    return ([(v, i * step) for i, v in enumerate(out[:len(pp)])], *out[len(pp):])


def _floor_sum(base: Value, terms, shift: int, subtract=False) -> Value:
    """``base -/+ floor(sum(terms) / 2**shift)`` (the golden ``lo + (slope * rest >> s)``
    forms) as one multi-operand sum, so the adders of the product and the addend share one
    carry-propagate adder: ``(base * 2**s + sum) >> s``, and for ``subtract``
    ``(base * 2**s + 2**s - 1 - sum) >> s``, which is the same floor."""
    acc = Cat(Const((1 << shift) - 1 if subtract else 0, shift), base)
    for value, at in terms:
        acc = acc - (value << at) if subtract else acc + (value << at)
    return acc[shift:shift + len(base) + 1]


class Normaliser(wiring.Component):
    """``value`` shifted left until its top bit is set, and the shift: a priority encoder (a
    log-depth leading-zero count, the FP blocks' own) and a barrel shifter.
    The count looks at the top ``max_shift + 1`` bits only
    (:func:`memwall.hdl.common.fp.leading_zero_count`).

    Correct when ``value != 0`` and its leading zeros are at most ``max_shift``; the datapath
    guarantees that. ``value == 0`` gives ``y = 0`` (its top bit clear).

    Parameters
    ----------
    width : int
        Bits of ``value``.
    max_shift : int
        Largest leading-zero count to handle, ``1 .. width - 1``.

    Attributes
    ----------
    value : In(width)
    y : Out(width)
        ``value << shift``.
    shift : Out(bits_for(max_shift))
        The leading-zero count of ``value``.
    """

    def __init__(self, width: int, max_shift: int):
        for key, v in (("width", width), ("max_shift", max_shift)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Normaliser: {key} must be an int, got {v!r}")
        if width < 2 or not 1 <= max_shift < width:
            raise ValueError(f"Normaliser: width must be >= 2 and max_shift in 1..width - 1, "
                             f"got width={width}, max_shift={max_shift}")
        self.width, self.max_shift = width, max_shift
        self.params = {"width": width, "max_shift": max_shift}
        super().__init__({"value": In(width), "y": Out(width),
                          "shift": Out(bits_for(max_shift))})

    def elaborate(self, platform):
        m = Module()
        top = self.value[self.width - self.max_shift - 1:]
        count = leading_zero_count(m, top)[:len(self.shift)]   # padded below: at most len(top)
        m.d.comb += [self.shift.eq(count), self.y.eq((self.value << count)[:self.width])]
        return m


class GumbelUnit(wiring.Component):
    """Fully pipelined ``g = gumbel_fp32(mantissa)`` (see the module docstring).

    Latency ``stages + 1`` cycles, one input a cycle. The cut points (:attr:`CUT_POINTS`)
    are named in the module docstring; :attr:`DEPTHS` says which are registers at each depth.
    Each depth's cuts were chosen as the FP blocks' are (the subset with the smallest worst
    stage, register to register, in the harness and flow of ``benchmarks/fp_stages.py``), from
    a per-step delay model and one measured subset a depth; that search is not recorded in
    ``reports/`` (see the module docstring's Timing), so the table carries no delays.

    Parameters
    ----------
    stages : int
        Register stages in front of the output register, ``0 .. MAX_STAGES`` (12); default
        :data:`DEFAULT_STAGES` (12). ``TypeError`` for a non-int, ``ValueError`` outside the
        range.

    Attributes
    ----------
    valid : In(1)
        An input is presented this cycle.
    mantissa : In(23)
        The uniform's cell index ``m`` (:func:`memwall.golden.dplena.rng.uniform_mantissa`).
    o_valid : Out(1)
        ``g`` holds the result of the input presented :attr:`latency` cycles ago.
    g : Out(32)
        FP32 bit pattern of ``G = -ln(-ln u)``.
    latency : int
        ``stages + 1``.
    params : dict
        ``{"stages": stages}``.
    """

    module_name = "gumbel_unit"

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("index", "rom1", "interp1_partial", "interp1", "product_partial", "product",
                  "norm", "rom2", "interp2_partial", "interp2", "log_partial", "log", "round")
    #: Active cut points per depth.
    DEPTHS = {
        1: ("norm",),
        2: ("product_partial", "interp2"),
        3: ("interp1", "rom2", "log_partial"),
        4: ("interp1_partial", "product", "interp2_partial", "log"),
        5: ("interp1_partial", "product_partial", "norm", "interp2", "log"),
        6: ("rom1", "interp1", "product", "rom2", "interp2", "log"),
        7: ("rom1", "interp1", "product", "rom2", "interp2", "log", "round"),
        8: ("index", "interp1_partial", "interp1", "product", "rom2", "interp2", "log",
            "round"),
        9: ("index", "interp1_partial", "interp1", "product", "rom2", "interp2",
            "log_partial", "log", "round"),
        10: ("rom1", "interp1_partial", "interp1", "product_partial", "product", "rom2",
             "interp2", "log_partial", "log", "round"),
        11: ("rom1", "interp1_partial", "interp1", "product_partial", "product", "rom2",
             "interp2_partial", "interp2", "log_partial", "log", "round"),
        12: ("rom1", "interp1_partial", "interp1", "product_partial", "product", "norm",
             "rom2", "interp2_partial", "interp2", "log_partial", "log", "round"),
    }
    #: Partial products at each ``*_partial`` cut (equal slices of the second operand).
    PARTS = {"interp1_partial": 2, "product_partial": 3, "interp2_partial": 2,
             "log_partial": 2}

    valid: In(1)
    mantissa: In(UNIFORM_BITS)
    o_valid: Out(1)
    g: Out(32)

    def __init__(self, stages: int = DEFAULT_STAGES):
        if isinstance(stages, bool) or not isinstance(stages, int):
            raise TypeError(f"GumbelUnit: stages must be an int in 0..{max(self.DEPTHS)}, "
                            f"got {stages!r}")
        self.cuts = depth_cuts(self.DEPTHS, stages, "GumbelUnit")
        self.stages = stages
        self.params = {"stages": stages}
        super().__init__()

    @property
    def latency(self) -> int:
        """Cycles from an input to its result: ``stages + 1`` (the output register)."""
        return self.stages + 1

    def elaborate(self, platform):
        m = Module()
        k = self.stages
        valid = [self.valid, *(Signal(name=f"p{j + 1}_valid") for j in range(k))]
        m.d.sync += [valid[j + 1].eq(valid[j]) for j in range(k)]
        st = Stages(m, self.CUT_POINTS, self.cuts, Cat(*valid[:k]) if k else None)
        parts = self.PARTS

        # 1. u = n * 2**-24, n = 2m + 1. Low (u < 1/2, n < 2**23): n = 2**p (1 + f), found by
        # normalising n's 23 bits (lz = 22 - p). High: d = 2**24 - n = 2 * ~m + 1, no adder.
        mant = self.mantissa
        low = ~mant[UNIFORM_BITS - 1]
        m.submodules.norm_n = norm_n = Normaliser(_N - 1, _N - 2)
        m.d.comb += norm_n.value.eq(Cat(Const(1, 1), mant[:UNIFORM_BITS - 1]))
        lz, n_sh = norm_n.shift, norm_n.y
        inv = ~mant
        d = Cat(Const(1, 1), inv[:UNIFORM_BITS - 1])
        # The interpolated fraction (F bits): low f = n_sh[:22] << 2, high 2d. Its bit 0 is 0
        # in both, so the rest below the table index has F - T - 1 significant bits.
        index = Cat(Mux(low, n_sh[16:22], inv[16:22]), ~low)
        rest = Mux(low, Cat(Const(0, 1), n_sh[:16]), d[:F - T - 1])
        index, rest, lz, d, low = st.cut("index", index=index, rest=rest, lz=lz, d=d, low=low)

        # Low: a = ((24 - p) << F) - interp, interp = lo + (slope * rest >> 17). The ROM's log2
        # rows hold 2**F - lo (1 .. 2**F), so ((24 - p) << F) - lo = ((lz + 1) << F) + row: a
        # 5-bit add, not a 29-bit subtraction, in front of the interpolation.
        lows = [((1 << F) - lo, sl) for lo, sl in _rows(log2_table())]
        row, slope = _rom(m, index, lows + _rows(h_table()), "rom1")
        base = Mux(low, Cat(row[:F], (lz + 1 + row[F])[:_X_BITS - F]), row)
        base, slope, rest, d, low = st.cut("rom1", base=base, slope=slope, rest=rest, d=d,
                                           low=low)

        terms, base, d, low = _products(st, "interp1_partial", slope, rest,
                                        parts["interp1_partial"], base=base, d=d, low=low)
        r = Mux(low, _floor_sum(base, terms, F - T - 1, subtract=True),       # a
                _floor_sum(base, terms, F - T - 1))[:_X_BITS]                 # h
        x = Mux(low, r, d)
        y = Mux(low, LN2, r[:_Y_BITS])
        x, y, low = st.cut("interp1", x=x, y=y, low=low)

        # t = P * 2**-48: a * ln2 truncated to 24 fraction bits (low), d * h exactly (high).
        terms, low = _products(st, "product_partial", x, y, parts["product_partial"], low=low)
        p = _floor_sum(Const(0, _P_BITS), terms, 0)
        p = Cat(Mux(low, 0, p[:F]), p[F:_P_BITS])
        p, = st.cut("product", p=p)

        # 2. t = 2**q (1 + g): the leading one of P is at 48 + q, bits 24 .. 52 (P >= 2**24).
        m.submodules.norm_t = norm_t = Normaliser(_P_BITS, _P_BITS - 1 - F)
        m.d.comb += norm_t.value.eq(p)
        g = norm_t.y[_P_BITS - 1 - F:_P_BITS - 1]
        lz2 = norm_t.shift                                  # -q = lz2 - _Q0
        g, lz2 = st.cut("norm", g=g, lz2=lz2)

        lo2, slope2 = _rom(m, g[F - T:], _rows(log2_table()), "rom2")
        lo2, slope2, rest2, lz2 = st.cut("rom2", lo2, slope2, rest2=g[:F - T], lz2=lz2)
        terms, lo2, lz2 = _products(st, "interp2_partial", slope2, rest2,
                                    parts["interp2_partial"], lo2=lo2, lz2=lz2)
        v = _floor_sum(lo2, terms, F - T)[:F]                # log2(1 + g) < 1
        v, lz2 = st.cut("interp2", v=v, lz2=lz2)

        # G = -((log_t * ln2) >> F) with log_t = (q << F) + v is -q ln2 - w, w = v ln2 >> F <
        # ln2 (the floor splits exactly over the multiple of 2**F). So G > 0 for -q >= 1, and
        # G <= 0 with |G| = |q| ln2 + w for -q <= 0: sign and magnitude directly.
        neg = lz2 <= _Q0
        aq = Mux(neg, _Q0 - lz2, lz2 - _Q0)[:5]
        terms, aq, neg = _products(st, "log_partial", v, Const(LN2, 24), parts["log_partial"],
                                   aq=aq, neg=neg)
        base2 = (aq * LN2)[:_MAG_BITS]
        mag = Mux(neg, _floor_sum(base2, terms, F),
                  _floor_sum(base2, terms, F, subtract=True))[:_MAG_BITS]
        mag, neg = st.cut("log", mag=mag, neg=neg)

        # FP32, round to nearest even: the leading one to bit 28, then 23 fraction bits, the
        # guard bit and 4 sticky bits. G = 0 (at one input, t = 1) has no leading one: +0.
        m.submodules.norm_g = norm_g = Normaliser(_MAG_BITS, _MAG_BITS - 1)
        m.d.comb += norm_g.value.eq(mag)
        yn = norm_g.y
        exp = (_MAG_BITS - 1 - F + 127 - norm_g.shift)[:8]   # 131 - leading zeros
        up = yn[_DROP - 1] & (yn[:_DROP - 1].any() | yn[_DROP])
        frac, exp, up, neg, zero = st.cut("round", frac=yn[_DROP:_MAG_BITS - 1], exp=exp,
                                          up=up, neg=neg, zero=~yn[_MAG_BITS - 1])
        st.done()
        bits = (Cat(frac, exp) + up)[:31]          # a carry out of the fraction bumps exp
        result = Mux(zero, 0, Cat(bits, neg))

        out = Signal(32, name="g_reg", reset_less=True)
        with m.If(valid[k]):
            m.d.sync += out.eq(result)
        m.d.sync += self.o_valid.eq(valid[k])
        m.d.comb += self.g.eq(out)
        return m


#: The deepest entry of :attr:`GumbelUnit.DEPTHS`.
MAX_STAGES = max(GumbelUnit.DEPTHS)
