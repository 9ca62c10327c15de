"""Floating-point arithmetic: add/sub, multiply, FP32 -> BF16, BF16 compare key.

Bit-exact with :mod:`memwall.golden.common.fparith`: IEEE-754 round to nearest, ties to even,
subnormal inputs and outputs, overflow to a signed infinity, IEEE signs of exact zeros, and one
canonical quiet NaN output (``fmt.qnan_bits``: sign 0, exponent all ones, fraction MSB set).

These blocks are instantiated once per vector lane, so they are written lean: one magnitude
swap, one alignment shifter with a sticky OR, one adder, a log-depth leading-zero counter, one
normalisation shifter, and rounding as an increment of the packed ``{exponent, fraction}`` field
(its carry moves a subnormal to the smallest normal and the largest finite to infinity for free).

The blocks are combinational by default; ``stages=k`` places ``k`` register stages at named cut
points of the same datapath (:mod:`memwall.hdl.common.pipeline`), so the arithmetic, and the
bit-exactness, do not depend on the depth.

Every adder is the plain ``+``, at every depth: Yosys maps it to a Brent-Kung carry tree, which
the flow's ABC script keeps (``reports/fp_stages.md`` has adders alone under it and under
Yosys' default script, whose ``dc2`` turns them into ripple carry). The pipelined blocks had
carry-select adders while the flow ran ``dc2``. Measured without it, through the harness of
``benchmarks/fp_stages.py``, at the 13 depths the FpAdd and FpMul tables then had, the plain
``+`` gave a 183 ps (1.7 %) smaller sum of the worst stages and 31 um2 (1.0 %) less area, so
the carry-select form was dropped. (A stage of FP32 rounding alone, FpMul's ``shift`` cut to
the output, was 110-175 ps faster with a two-block carry-select increment; no FP32 depth of
the table has that stage.)
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, ceil_log2

from memwall.golden.common.formats import BF16, FP32, FloatFormat
from memwall.hdl.common.pipeline import Stages, depth_cuts, with_stages

__all__ = ["FORMATS", "Fp32ToBf16", "FpAdd", "FpMul", "bf16_key", "bf16_greater",
           "fp32_greater", "leading_zero_count"]

#: Formats the generators accept, by the name stored in ``params``.
FORMATS = {"bf16": BF16, "fp32": FP32}


def _format(fmt) -> FloatFormat:
    """Accept a :class:`FloatFormat` (BF16/FP32) or its name; raise ``ValueError`` otherwise."""
    if isinstance(fmt, str) and fmt in FORMATS:
        return FORMATS[fmt]
    for known in FORMATS.values():
        if fmt == known:
            return known
    raise ValueError(f"fmt must be one of {sorted(FORMATS)} (or golden.formats.BF16/FP32), "
                     f"got {fmt!r}")


def _wire(m: Module, value, name: str) -> Signal:
    """Name an intermediate value. Same hardware; lets the Python simulator share the node
    instead of re-evaluating the expression tree at every use (exponential in the LZC tree)."""
    value = Value.cast(value)
    sig = Signal(value.shape(), name=name)
    m.d.comb += sig.eq(value)
    return sig


def leading_zero_count(m: Module, value: Value, name: str = "lzc") -> Value:
    """Leading-zero count of a non-zero ``value`` as a log-depth tree (unsigned).

    The result for ``value == 0`` is unspecified (callers handle zero themselves). Widths that
    are not a power of two are padded at the LSB end with a one, which also bounds the count by
    the original width.
    """
    value = Value.cast(value)
    width = len(value)
    size = 1 << ceil_log2(width)
    if size != width:
        value = Cat(Const(0, size - width - 1), Const(1, 1), value)

    def tree(bits: Value, path: str) -> tuple[Value, Value]:
        # (all zero, leading-zero count modulo len(bits)) of a power-of-two-wide slice.
        if len(bits) == 1:
            return ~bits[0], Const(0, 0)
        half = len(bits) // 2
        zero_lo, count_lo = tree(bits[:half], path + "l")
        zero_hi, count_hi = tree(bits[half:], path + "h")
        zero = _wire(m, zero_hi & zero_lo, f"{path}_zero")
        count = _wire(m, Cat(Mux(zero_hi, count_lo, count_hi), zero_hi), f"{path}_count")
        return zero, count

    return tree(value, name)[1]


class _Unpacked:
    """Fields of one operand: sign, exponent field, fraction and the derived flags."""

    def __init__(self, m: Module, fmt: FloatFormat, bits: Value, name: str,
                 sign: Value | None = None):
        man, ew = fmt.man_bits, fmt.exp_bits
        self.sign = _wire(m, bits[man + ew] if sign is None else sign, f"{name}_sign")
        self.mag = bits[:man + ew]
        exp_ones = _wire(m, bits[man:man + ew] == fmt.exp_max, f"{name}_exp_ones")
        frac_zero = _wire(m, bits[:man] == 0, f"{name}_frac_zero")
        self.is_nan = exp_ones & ~frac_zero
        self.is_inf = exp_ones & frac_zero
        self.is_zero = (bits[man:man + ew] == 0) & frac_zero


def _fields(m: Module, fmt: FloatFormat, mag: Value, name: str) -> tuple[Value, Value]:
    """Significand with its hidden bit, and effective biased exponent (subnormals use 1)."""
    man = fmt.man_bits
    exp = mag[man:]
    normal = _wire(m, exp.any(), f"{name}_normal")
    return (_wire(m, Cat(mag[:man], normal), f"{name}_sig"),
            _wire(m, Cat(exp[0] | ~normal, exp[1:]), f"{name}_e"))


class FpAdd(wiring.Component):
    """IEEE-754 add/subtract, bit-exact with ``golden.fparith.fp_add``/``fp_sub``.

    Round to nearest even with subnormals; an exact zero sum is ``+0`` unless both (effective)
    operands are ``-0``; overflow gives a signed inf; ``inf - inf`` and NaN operands give the
    canonical quiet NaN.

    Combinational by default. With ``stages = k > 0`` it has ``k`` register stages
    (:mod:`~memwall.hdl.common.pipeline`) and a latency of ``k`` cycles. Cut points, in
    dataflow order (:attr:`CUT_POINTS`):

    * ``swap``: after unpacking and the magnitude compare and swap;
    * ``align``: after the alignment shifter and its sticky bit;
    * ``add``: after the significand adder;
    * ``lzc``: after the leading-zero count (and its clamp to the exponent);
    * ``norm``: after the normalisation shifter, before rounding.

    Active cuts per depth (:attr:`DEPTHS`), chosen from ``benchmarks/fp_stages.py --search`` on
    ASAP7 at 1 GHz (``reports/fp_stages.md``):

    * ``bf16``: 1 ``add``; 2 ``swap, add``; 3 ``swap, align, lzc``; 4 ``swap, align, add, norm``.
    * ``fp32``: 1 ``add``; 2 ``align, lzc``; 3 ``swap, align, lzc``; 4 ``swap, align, add, lzc``.

    Parameters
    ----------
    fmt : FloatFormat or str
        ``BF16``/``"bf16"`` or ``FP32``/``"fp32"``.
    stages : int
        Pipeline register stages, ``0 .. max(DEPTHS[fmt])`` (4).

    Attributes
    ----------
    a, b : In(fmt.width)
        Operand bit patterns.
    sub : In(1)
        ``1`` computes ``a - b`` (the sign of ``b`` is flipped), ``0`` computes ``a + b``.
    load : In(stages)
        Only when ``stages > 0``: bit ``j`` loads the registers of stage ``j``.
    y : Out(fmt.width)
        Result bit pattern, ``stages`` cycles after its operands.
    params : dict
        ``{"fmt": name}``, plus ``"stages"`` when it is not 0.
    """

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("swap", "align", "add", "lzc", "norm")
    #: Active cut points per format and depth.
    DEPTHS = {
        "bf16": {1: ("add",), 2: ("swap", "add"), 3: ("swap", "align", "lzc"),
                 4: ("swap", "align", "add", "norm")},
        "fp32": {1: ("add",), 2: ("align", "lzc"), 3: ("swap", "align", "lzc"),
                 4: ("swap", "align", "add", "lzc")},
    }

    def __init__(self, fmt, stages: int = 0):
        self.fmt = _format(fmt)
        self.cuts = depth_cuts(self.DEPTHS[self.fmt.name], stages, f"FpAdd({self.fmt.name})")
        self.stages = stages
        self.params = with_stages({"fmt": self.fmt.name}, stages)
        w = self.fmt.width
        ports = {"a": In(w), "b": In(w), "sub": In(1), "y": Out(w)}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        f = self.fmt
        man, ew = f.man_bits, f.exp_bits
        a = _Unpacked(m, f, self.a, "a")
        b = _Unpacked(m, f, self.b, "b", sign=self.b[man + ew] ^ self.sub)

        # x: the operand of larger magnitude, y: the other one (|x| >= |y|).
        swap = _wire(m, b.mag > a.mag, "swap")
        x_mag = _wire(m, Mux(swap, b.mag, a.mag), "x_mag")
        y_mag = _wire(m, Mux(swap, a.mag, b.mag), "y_mag")
        x_sign = _wire(m, Mux(swap, b.sign, a.sign), "x_sign")
        eff_sub = _wire(m, a.sign ^ b.sign, "eff_sub")
        # Special operands are settled here and carried to the output select.
        nan = a.is_nan | b.is_nan | (a.is_inf & b.is_inf & eff_sub)
        inf = a.is_inf | b.is_inf
        zero_sign = a.sign & b.sign          # the sign of an exact zero sum
        x_mag, y_mag, x_sign, eff_sub, nan, inf, zero_sign = st.cut(
            "swap", x_mag, y_mag, x_sign, eff_sub, nan=nan, inf=inf, zero_sign=zero_sign)
        x_sig, x_e = _fields(m, f, x_mag, "x")
        y_sig, y_e = _fields(m, f, y_mag, "y")

        # Align y to x: 3 extra bits below the significand (guard, round, sticky). From man + 3
        # positions on, all of y lands in the sticky bit, so the shift amount is clamped there.
        dist = x_e - y_e
        dist_c = _wire(m, Mux(dist > man + 3, man + 3, dist[:bits_for(man + 3)]), "dist")
        low = man  # positions that collect what is shifted below the sticky bit
        shifted = _wire(m, Cat(Const(0, low + 3), y_sig) >> dist_c, "y_shifted")
        y_al = _wire(m, Cat(shifted[low] | shifted[:low].any(), shifted[low + 1:low + man + 4]),
                     "y_al")
        x_sig, y_al, x_e, x_sign, eff_sub, nan, inf, zero_sign = st.cut(
            "align", x_sig, y_al, x_e, x_sign, eff_sub, nan=nan, inf=inf, zero_sign=zero_sign)
        x_al = Cat(Const(0, 3), x_sig)

        # One adder for both: x - y = x + ~y + 1, whose carry out (always 1, |x| >= |y|) is dropped.
        raw = x_al + (y_al ^ eff_sub.replicate(man + 4)) + eff_sub
        # s: man + 5 bits, the sum is s * 2**(x_e - bias - man - 3)
        s = _wire(m, Cat(raw[:man + 4], raw[man + 4] & ~eff_sub), "s")
        s, x_e, x_sign, nan, inf, zero_sign = st.cut(
            "add", s, x_e, x_sign, nan=nan, inf=inf, zero_sign=zero_sign)
        s_zero = s == 0

        # Normalise: leading one to the top bit, but never below the smallest exponent (then the
        # result is subnormal: top bit clear, exponent field 0).
        lz = leading_zero_count(m, s)
        amount = _wire(m, Mux(lz > x_e, x_e[:len(lz)], lz), "amount")
        s, amount, x_e, x_sign, nan, inf, zero_sign, s_zero = st.cut(
            "lzc", s, amount, x_e, x_sign, nan=nan, inf=inf, zero_sign=zero_sign, s_zero=s_zero)
        norm = _wire(m, (s << amount)[:man + 5], "norm")
        e_r = _wire(m, x_e + 1 - amount, "e_r")  # biased exponent of the top bit, <= exp_max
        norm, e_r, x_sign, nan, inf, zero_sign, s_zero = st.cut(
            "norm", norm, e_r, x_sign, nan=nan, inf=inf, zero_sign=zero_sign, s_zero=s_zero)
        top = norm[man + 4]
        round_up = norm[3] & (norm[:3].any() | norm[4])  # guard & (sticky | lsb)
        packed = Cat(norm[4:man + 4], Mux(top, e_r[:ew], 0)) + round_up
        overflow = top & (e_r == f.exp_max)
        st.done()

        inf_mag = Const(f.inf_bits, man + ew)
        with m.If(nan):
            m.d.comb += self.y.eq(f.qnan_bits)
        with m.Elif(inf | overflow):
            m.d.comb += self.y.eq(Cat(inf_mag, x_sign))
        with m.Elif(s_zero):
            m.d.comb += self.y.eq(Cat(Const(0, man + ew), zero_sign))
        with m.Else():
            m.d.comb += self.y.eq(Cat(packed[:man + ew], x_sign))
        return m


class FpMul(wiring.Component):
    """IEEE-754 multiply, bit-exact with ``golden.fparith.fp_mul``.

    Round to nearest even with subnormal inputs and outputs; the sign is the XOR of the operand
    signs (zeros and underflow to zero included); overflow gives a signed inf; ``0 * inf`` and
    NaN operands give the canonical quiet NaN.

    Combinational by default. With ``stages = k > 0`` it has ``k`` register stages
    (:mod:`~memwall.hdl.common.pipeline`) and a latency of ``k`` cycles. Cut points, in
    dataflow order (:attr:`CUT_POINTS`):

    * ``partial``: inside the multiplier: the significand product as :attr:`PARTS` partial
      products (``a`` times equal slices of ``b``: two for BF16, three for FP32), added after
      the cut;
    * ``product``: after the significand product;
    * ``lzc``: after the leading-zero count and the left shift amount;
    * ``shift``: after the normalisation shifts and the sticky bit, before rounding.

    In the pipelined block the exponent sum and the right shift amount are worked out beside
    the multiplier and the result exponent after the ``lzc`` cut. Active cuts per depth
    (:attr:`DEPTHS`), chosen from ``benchmarks/fp_stages.py --search`` on ASAP7 at 1 GHz
    (``reports/fp_stages.md``):

    * ``bf16``: 1 ``product``; 2 ``partial, lzc``; 3 ``partial, lzc, shift``;
      4 ``partial, product, lzc, shift``.
    * ``fp32``: 1 ``product``; 2 ``partial, lzc``; 3 ``partial, product, lzc``.

    Parameters
    ----------
    fmt : FloatFormat or str
        ``BF16``/``"bf16"`` or ``FP32``/``"fp32"``.
    stages : int
        Pipeline register stages, ``0 .. max(DEPTHS[fmt])`` (4 for BF16, 3 for FP32).

    Attributes
    ----------
    a, b : In(fmt.width)
        Operand bit patterns.
    load : In(stages)
        Only when ``stages > 0``: bit ``j`` loads the registers of stage ``j``.
    y : Out(fmt.width)
        Result bit pattern, ``stages`` cycles after its operands.
    params : dict
        ``{"fmt": name}``, plus ``"stages"`` when it is not 0.
    """

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("partial", "product", "lzc", "shift")
    #: Partial products at the ``partial`` cut, per format (equal slices of ``b``). Three for
    #: FP32: its fastest depth then has a worst stage of 712 ps (3: ``partial, product,
    #: lzc``). With two it was 769 ps (the same cuts), and the table stopped at depth 2 with
    #: 787 ps: 13 ps under the 800 ps target, less than the 25 ps the search counts as noise.
    PARTS = {"bf16": 2, "fp32": 3}
    #: Active cut points per format and depth.
    DEPTHS = {
        "bf16": {1: ("product",), 2: ("partial", "lzc"), 3: ("partial", "lzc", "shift"),
                 4: ("partial", "product", "lzc", "shift")},
        "fp32": {1: ("product",), 2: ("partial", "lzc"), 3: ("partial", "product", "lzc")},
    }

    def __init__(self, fmt, stages: int = 0):
        self.fmt = _format(fmt)
        self.cuts = depth_cuts(self.DEPTHS[self.fmt.name], stages, f"FpMul({self.fmt.name})")
        self.stages = stages
        self.params = with_stages({"fmt": self.fmt.name}, stages)
        w = self.fmt.width
        ports = {"a": In(w), "b": In(w), "y": Out(w)}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        f = self.fmt
        man, ew = f.man_bits, f.exp_bits
        pw = 2 * man + 2  # product width
        a = _Unpacked(m, f, self.a, "a")
        b = _Unpacked(m, f, self.b, "b")
        sign = a.sign ^ b.sign
        a_sig, a_e = _fields(m, f, a.mag, "a")
        b_sig, b_e = _fields(m, f, b.mag, "b")
        # Special operands are settled here and carried to the output select.
        nan = a.is_nan | b.is_nan | (a.is_inf & b.is_zero) | (b.is_inf & a.is_zero)
        inf = a.is_inf | b.is_inf

        # value = prod * 2**(a_e + b_e - 2*bias - 2*man); after a left shift by L the top bit
        # (pw - 1) has biased exponent sh + 1 - L with sh = a_e + b_e - bias.
        if self.stages:
            prod, left, right, e_r, sign, nan, inf = self._pipelined_product(
                m, st, a_sig, a_e, b_sig, b_e, sign, nan, inf)
        else:
            prod = _wire(m, a_sig * b_sig, "prod")
            sh = _wire(m, (a_e + b_e - f.bias).as_signed(), "sh")
            # unspecified for prod == 0, which gives 0 whatever the shift
            lz = leading_zero_count(m, prod)
            neg = sh < 0
            left = _wire(m, Mux(neg, 0, Mux(sh < lz, sh[:len(lz)], lz)), "left")
            e_r = _wire(m, sh + 1 - left, "e_r")  # top bit's biased exponent (if it is set)
            # sh < 0: the result is subnormal; shift right by -sh, collecting a sticky bit. From
            # man + 2 on, the top bit is below the guard bit and the result is 0: clamp there.
            right = _wire(m, Mux(neg, Mux(-sh > man + 2, man + 2, (-sh)[:bits_for(man + 2)]),
                                 0), "right")
        shifted = _wire(m, Cat(Const(0, man + 2), (prod << left)[:pw]) >> right, "shifted")
        norm = shifted[man + 2:]
        sticky = norm[:man].any() | shifted[:man + 2].any()
        if st.active("shift"):
            # Only the guard bit and above are kept; the bits below are in the sticky bit.
            e_r, kept, sticky, sign, nan, inf = st.cut(
                "shift", e_r, kept=norm[man:], sticky=sticky, sign=sign, nan=nan, inf=inf)
            norm = Cat(Const(0, man), kept)
        top = norm[pw - 1]
        round_up = norm[man] & (sticky | norm[man + 1])  # guard & (sticky | lsb)
        packed = Cat(norm[man + 1:pw - 1], Mux(top, e_r[:ew], 0)) + round_up
        overflow = top & (e_r >= f.exp_max)
        st.done()

        inf_mag = Const(f.inf_bits, man + ew)
        with m.If(nan):
            m.d.comb += self.y.eq(f.qnan_bits)
        with m.Elif(inf | overflow):
            m.d.comb += self.y.eq(Cat(inf_mag, sign))
        with m.Else():
            m.d.comb += self.y.eq(Cat(packed[:man + ew], sign))
        return m


    def _pipelined_product(self, m, st, a_sig, a_e, b_sig, b_e, sign, nan, inf):
        """Product, exponent and shift amounts as the pipelined block computes them: as the
        combinational one, with ``sh`` and the right shift (they depend on the exponents only)
        beside the multiplier, ``e_r`` after the ``lzc`` cut."""
        f = self.fmt
        man, pw = f.man_bits, 2 * f.man_bits + 2
        sh = _wire(m, (a_e + b_e - f.bias).as_signed(), "sh")
        right = _wire(m, Mux(sh < 0, Mux(-sh > man + 2, man + 2, (-sh)[:bits_for(man + 2)]), 0),
                      "right")
        if st.active("partial"):
            # a times PARTS slices of b, summed after the cut.
            step = -(-(man + 1) // self.PARTS[f.name])
            parts = {f"pp{lo // step}": a_sig * b_sig[lo:lo + step]
                     for lo in range(0, man + 1, step)}
            sh, right, *pp, sign, nan, inf = st.cut("partial", sh, right, **parts, sign=sign,
                                                    nan=nan, inf=inf)
            total = pp[0]
            for i, part in enumerate(pp[1:], 1):
                total = total + (part << (i * step))
            prod = _wire(m, total[:pw], "prod")
        else:
            prod = _wire(m, a_sig * b_sig, "prod")
        prod, sh, right, sign, nan, inf = st.cut("product", prod, sh, right, sign=sign, nan=nan,
                                                 inf=inf)
        lz = leading_zero_count(m, prod)
        left = _wire(m, Mux(sh < 0, 0, Mux(sh < lz, sh[:len(lz)], lz)), "left")
        prod, sh, left, right, sign, nan, inf = st.cut("lzc", prod, sh, left, right, sign=sign,
                                                       nan=nan, inf=inf)
        e_r = _wire(m, sh + 1 - left, "e_r")
        return prod, left, right, e_r, sign, nan, inf


class Fp32ToBf16(wiring.Component):
    """FP32 -> BF16 rounding, bit-exact with ``golden.fparith.fp32_to_bf16``.

    Round to nearest even on the dropped 16 fraction bits, so FP32 values below BF16's normal
    range become BF16 subnormals, overflow gives a signed inf, and every NaN becomes
    ``BF16.qnan_bits``.

    Combinational by default. With ``stages = 1`` it has one register stage
    (:mod:`~memwall.hdl.common.pipeline`) and a latency of one cycle. Cut points
    (:attr:`CUT_POINTS`): ``detect`` (after the NaN test and the round-up bit), ``round``
    (after the increment, before the NaN select). Active cuts per depth (:attr:`DEPTHS`),
    from ``benchmarks/fp_stages.py --search`` on ASAP7 at 1 GHz (``reports/fp_stages.md``):
    1 ``round``. The block meets 1 GHz combinationally there; the stage is for latency
    alignment, not timing.

    Parameters
    ----------
    stages : int
        Pipeline register stages, ``0 .. max(DEPTHS)`` (1).

    Attributes
    ----------
    a : In(32)
        FP32 bit pattern.
    load : In(stages)
        Only when ``stages > 0``: bit ``j`` loads the registers of stage ``j``.
    y : Out(16)
        BF16 bit pattern, ``stages`` cycles after ``a``.
    params : dict
        ``{}``, or ``{"stages": k}`` when pipelined.
    """

    #: Candidate cut points in dataflow order.
    CUT_POINTS = ("detect", "round")
    #: Active cut points per depth.
    DEPTHS = {1: ("round",)}

    def __init__(self, stages: int = 0):
        self.cuts = depth_cuts(self.DEPTHS, stages, "Fp32ToBf16")
        self.stages = stages
        self.params = with_stages({}, stages)
        ports = {"a": In(32), "y": Out(16)}
        if stages:
            ports["load"] = In(stages)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = Stages(m, self.CUT_POINTS, self.cuts, self.load if self.stages else None)
        a = self.a
        is_nan = (a[23:31] == 0xFF) & a[:23].any()
        round_up = a[15] & (a[:15].any() | a[16])
        mag, sign, round_up, is_nan = st.cut("detect", mag=a[16:31], sign=a[31],
                                             round_up=round_up, is_nan=is_nan)
        rounded = mag + round_up  # a carry into the exponent is the right answer
        rounded, sign, is_nan = st.cut("round", rounded=rounded, sign=sign, is_nan=is_nan)
        st.done()
        m.d.comb += self.y.eq(Mux(is_nan, BF16.qnan_bits, Cat(rounded[:15], sign)))
        return m


def bf16_key(value) -> Value:
    """Total-order compare key of a BF16 value, as ``golden.fparith.bf16_key`` (17-bit signed).

    ``+(bits & 0x7FFF)`` for sign 0, ``-(bits & 0x7FFF)`` for sign 1 (so ``+0`` and ``-0`` are
    equal), and ``0x7F81`` (above +inf) for every NaN. Compare keys with signed ``>``/``<``.

    Parameters
    ----------
    value : Value, 16 bits
        BF16 bit pattern.
    """
    value = Value.cast(value)
    if len(value) != 16:
        raise ValueError(f"bf16_key needs a 16-bit value, got {len(value)} bits")
    mag = value[:15]
    is_nan = (value[7:15] == 0xFF) & value[:7].any()
    key = Mux(is_nan, 0x7F81, Mux(value[15], -mag, mag))  # signed(16): -0x7FFF .. 0x7F81
    return Cat(key, key[-1]).as_signed()


def bf16_greater(a, b) -> Value:
    """``bf16_key(a) > bf16_key(b)``, without the keys: one bit.

    The same total order (every NaN equal and above +inf, ``-0 == +0``), compared as sign and
    magnitude: two 15-bit magnitude compares and the NaN tests run side by side, where the keys
    negate each operand before a 17-bit signed compare (on dplena32 that carry chain after the
    register-file read missed 1 GHz). ``tests/common/test_fparith.py`` proves the two equal
    for every pair.

    Parameters
    ----------
    a, b : Value, 16 bits
        BF16 bit patterns.
    """
    return _greater(a, b, BF16, "bf16_greater")


def fp32_greater(a, b) -> Value:
    """:func:`bf16_greater`'s order on FP32 patterns, ``golden.dplena.noise.fp32_key(a) >
    fp32_key(b)``: one bit (every NaN equal and above +inf, ``-0 == +0``).

    Parameters
    ----------
    a, b : Value, 32 bits
        FP32 bit patterns.
    """
    return _greater(a, b, FP32, "fp32_greater")


def _greater(a, b, fmt: FloatFormat, name: str) -> Value:
    """The total order of :func:`bf16_greater` for ``fmt``, as sign and magnitude; ``name`` is
    the caller's, for the width error."""
    a, b = Value.cast(a), Value.cast(b)
    if len(a) != fmt.width or len(b) != fmt.width:
        raise ValueError(f"{name} needs {fmt.width}-bit values, got {len(a)} and {len(b)} bits")
    top, inf = fmt.width - 1, fmt.inf_bits
    mag_a, mag_b, neg_a, neg_b = a[:top], b[:top], a[top], b[top]
    nan_a, nan_b = mag_a > inf, mag_b > inf
    both_zero = (mag_a == 0) & (mag_b == 0)
    by_sign = Mux(neg_a,
                  neg_b & (mag_a < mag_b),                # -|a| > -|b|
                  Mux(neg_b, ~both_zero, mag_a > mag_b))  # +|a| > -|b| unless both zero
    return Mux(nan_a, ~nan_b, ~nan_b & by_sign)
