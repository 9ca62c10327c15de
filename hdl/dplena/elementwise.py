"""Elementwise unit (VLEN BF16 lanes) and scalar FP unit (paper Fig. 3).

Vector ops V_ADD/V_SUB/V_MUL (vector-vector or vector-scalar) and V_EXP; scalar ops e^x, 1/x
and the FP32 -> BF16 rounding that turns a reduction SUM into a reciprocal operand. Each is a
:class:`~memwall.hdl.common.lanes.LaneArray` of one lane module; the arithmetic blocks are the
shared ones of :mod:`memwall.hdl.common.fp` and :mod:`memwall.hdl.common.transcendental`, so
results are bit-exact with ``golden.fparith`` and ``golden.transcendental``.

Operand isolation: each arithmetic block sees zeros unless the op uses it, so an idle block does
not toggle (the lanes are most of the datapath's power).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out
from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
from memwall.hdl.common.lanes import LaneArray, LockstepControl
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

__all__ = ["EwOp", "ElementwiseLane", "ElementwiseUnit", "ScalarOp", "ScalarFpLane",
           "ScalarFpUnit", "EW_CMD", "SCALAR_CMD"]


class EwOp(enum.Enum, shape=2):
    ADD = 0
    SUB = 1
    MUL = 2
    EXP = 3      # y = exp(a); b is ignored


EW_CMD = data.StructLayout({
    "op": EwOp,
    "scalar_b": 1,   # 1: b is the broadcast `scalar` (V_*_VF), 0: b is the vector operand
    "scalar": 16,
    "tag": 4,        # returned on o.payload so a sequencer can match results
})


def _isolate(value, enable):
    """``value`` when ``enable`` else 0, so the block behind it stays quiet."""
    return Mux(enable, value, 0)


class ElementwiseLane(wiring.Component):
    """One BF16 lane: ``y = a op b`` (or ``exp(a)``), registered when ``load``.

    Attributes
    ----------
    load : In(1)
    cmd : In(EW_CMD)
        The command (broadcast to all lanes).
    a, b : In(16)
        BF16 operands.
    y : Out(16)
        BF16 result.
    """

    def __init__(self):
        self.params = {}
        super().__init__({"load": In(1), "cmd": In(EW_CMD), "a": In(16), "b": In(16),
                          "y": Out(16)})

    def elaborate(self, platform):
        m = Module()
        add, mul, exp = FpAdd("bf16"), FpMul("bf16"), Bf16Exp()
        for name, block in (("add", add), ("mul", mul), ("exp", exp)):
            unique_submodule(m, name, block)
        op = self.cmd.op
        b = Mux(self.cmd.scalar_b, self.cmd.scalar, self.b)
        use_add = (op == EwOp.ADD) | (op == EwOp.SUB)
        use_mul = op == EwOp.MUL
        use_exp = op == EwOp.EXP
        m.d.comb += [
            add.a.eq(_isolate(self.a, use_add)), add.b.eq(_isolate(b, use_add)),
            add.sub.eq(op == EwOp.SUB),
            mul.a.eq(_isolate(self.a, use_mul)), mul.b.eq(_isolate(b, use_mul)),
            exp.a.eq(_isolate(self.a, use_exp)),
        ]
        result = Signal(16, reset_less=True)
        with m.If(self.load):
            with m.Switch(op):
                with m.Case(EwOp.ADD, EwOp.SUB):
                    m.d.sync += result.eq(add.y)
                with m.Case(EwOp.MUL):
                    m.d.sync += result.eq(mul.y)
                with m.Case(EwOp.EXP):
                    m.d.sync += result.eq(exp.y)
        m.d.comb += self.y.eq(result)
        return m


class ElementwiseUnit(LaneArray):
    """VLEN-lane BF16 elementwise unit, one cycle of latency, one vector per cycle.

    Ports: ``i`` (command stream, :data:`EW_CMD`), ``a``/``b`` (``ArrayLayout(16, vlen)``,
    sampled with ``i``), ``o`` (command echo) and ``y`` (results, valid with ``o``).

    Parameters
    ----------
    vlen : int
        Lanes.
    """

    module_name = "elementwise_unit"

    def __init__(self, vlen: int):
        if vlen < 1:
            raise ValueError(f"vlen must be >= 1, got {vlen}")
        self.params = {"vlen": vlen}
        super().__init__(lane_factory=ElementwiseLane, count=vlen,
                         control=LockstepControl(EW_CMD, latency=1),
                         links={"load": "load", "cmd": "i__payload"})


class ScalarOp(enum.Enum, shape=2):
    EXP = 0      # BF16 e^a
    RECIP = 1    # BF16 1/a
    TO_BF16 = 2  # FP32 a rounded to BF16 (RNE)


SCALAR_CMD = data.StructLayout({"op": ScalarOp, "tag": 4})


class ScalarFpLane(wiring.Component):
    """The FP unit's datapath: e^x, 1/x (BF16) and FP32 -> BF16, registered when ``load``.

    Attributes
    ----------
    load : In(1)
    cmd : In(SCALAR_CMD)
    a : In(32)
        FP32 operand for TO_BF16; BF16 in ``a[0:16]`` for EXP and RECIP.
    y : Out(16)
    """

    def __init__(self):
        self.params = {}
        super().__init__({"load": In(1), "cmd": In(SCALAR_CMD), "a": In(32), "y": Out(16)})

    def elaborate(self, platform):
        m = Module()
        exp, recip, cvt = Bf16Exp(), Bf16Recip(), Fp32ToBf16()
        for name, block in (("exp", exp), ("recip", recip), ("to_bf16", cvt)):
            unique_submodule(m, name, block)
        op = self.cmd.op
        m.d.comb += [
            exp.a.eq(_isolate(self.a[:16], op == ScalarOp.EXP)),
            recip.a.eq(_isolate(self.a[:16], op == ScalarOp.RECIP)),
            cvt.a.eq(_isolate(self.a, op == ScalarOp.TO_BF16)),
        ]
        result = Signal(16, reset_less=True)
        with m.If(self.load):
            with m.Switch(op):
                with m.Case(ScalarOp.EXP):
                    m.d.sync += result.eq(exp.y)
                with m.Case(ScalarOp.RECIP):
                    m.d.sync += result.eq(recip.y)
                with m.Default():
                    m.d.sync += result.eq(cvt.y)
        m.d.comb += self.y.eq(result)
        return m


class ScalarFpUnit(LaneArray):
    """The scalar FP unit: one :class:`ScalarFpLane` behind a command stream.

    ``lanes`` > 1 replicates the same lane (used to test all 2**16 inputs quickly).

    Parameters
    ----------
    lanes : int
        1 for the d-PLENA FP unit.
    """

    module_name = "scalar_fp_unit"

    def __init__(self, lanes: int = 1):
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        self.params = {"lanes": lanes}
        super().__init__(lane_factory=ScalarFpLane, count=lanes,
                         control=LockstepControl(SCALAR_CMD, latency=1),
                         links={"load": "load", "cmd": "i__payload"})
