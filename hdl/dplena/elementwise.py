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

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from memwall.families.dplena.config import FpStages
from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
from memwall.hdl.common.lanes import LaneArray, LockstepControl
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.pipeline import delay
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

#: Every block combinational (the default of the lanes and units).
COMBINATIONAL = FpStages()

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
    """One BF16 lane: ``y = a op b`` (or ``exp(a)``), registered when the result is loaded.

    Combinational blocks (``d = 0``): the result register is the only stage. Pipelined blocks
    (``d`` = the deepest of add, multiply and exp): stage 0 registers the operands (``b``
    already the scalar where the command says so) and the op, so the blocks start from
    registers whatever drives the lane; the blocks follow (the shallower ones padded to
    ``d``); stage ``d + 1`` registers the result of the op that ``last_cmd`` (the command
    entering it) names. Latency :attr:`FpStages.elementwise_latency`.

    Parameters
    ----------
    stages : FpStages
        Only ``add_bf16``, ``mul_bf16`` and ``exp`` matter.

    Attributes
    ----------
    load : In(latency)
    cmd : In(EW_CMD)
        The command entering the lane (broadcast to all lanes).
    last_cmd : In(EW_CMD)
        Only when ``d > 0``: the command entering the result register.
    a, b : In(16)
        BF16 operands.
    y : Out(16)
        BF16 result.
    """

    def __init__(self, stages: FpStages = COMBINATIONAL):
        self.stages = stages
        self.depth = max(stages.add_bf16, stages.mul_bf16, stages.exp)
        self.params = _lane_params(stages, ("add_bf16", "mul_bf16", "exp"))
        ports = {"load": In(stages.elementwise_latency), "cmd": In(EW_CMD), "a": In(16),
                 "b": In(16), "y": Out(16)}
        if self.depth:
            ports["last_cmd"] = In(EW_CMD)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = self.stages
        add, mul = FpAdd("bf16", stages=st.add_bf16), FpMul("bf16", stages=st.mul_bf16)
        exp = Bf16Exp(stages=st.exp)
        a, b, op, load = _operands(m, self.depth, self.load, EwOp, self.cmd.op, self.a,
                                   Mux(self.cmd.scalar_b, self.cmd.scalar, self.b))
        use_add = (op == EwOp.ADD) | (op == EwOp.SUB)
        use_mul = op == EwOp.MUL
        use_exp = op == EwOp.EXP
        m.d.comb += [
            add.a.eq(_isolate(a, use_add)), add.b.eq(_isolate(b, use_add)),
            add.sub.eq(op == EwOp.SUB),
            mul.a.eq(_isolate(a, use_mul)), mul.b.eq(_isolate(b, use_mul)),
            exp.a.eq(_isolate(a, use_exp)),
        ]
        ys = _blocks(m, load, self.depth, (("add", add), ("mul", mul), ("exp", exp)))
        last_op = (self.last_cmd if self.depth else self.cmd).op
        result = Signal(16, reset_less=True)
        with m.If(load[self.depth]):
            with m.Switch(last_op):
                with m.Case(EwOp.ADD, EwOp.SUB):
                    m.d.sync += result.eq(ys["add"])
                with m.Case(EwOp.MUL):
                    m.d.sync += result.eq(ys["mul"])
                with m.Case(EwOp.EXP):
                    m.d.sync += result.eq(ys["exp"])
        m.d.comb += self.y.eq(result)
        return m


def _lane_params(stages: FpStages, fields: tuple[str, ...]) -> dict:
    """A lane's ``params``: the depths of its own blocks, none when all are combinational."""
    return {name: value for name, value in stages.as_params().items() if name in fields}


def _operands(m: Module, depth: int, load, op_enum, op, *operands):
    """The operands and op (of enum ``op_enum``) the blocks see, and the loads of the stages
    after the operand register.

    Combinational lanes use them as they come. Pipelined lanes register them at stage 0
    (``load[0]``), so the blocks' first stage starts from registers."""
    if not depth:
        return (*operands, op, load)
    regs = [Signal(len(Value.cast(value)), name=f"operand{n}", reset_less=True)
            for n, value in enumerate(operands)]
    op_reg = Signal(op_enum, name="op", reset_less=True)
    with m.If(load[0]):
        m.d.sync += [reg.eq(value) for reg, value in zip(regs, operands, strict=True)]
        m.d.sync += op_reg.eq(op)
    return (*regs, op_reg, load[1:])


def _blocks(m: Module, load, depth: int, blocks) -> dict:
    """Add the lane's ``blocks`` (name, block), driving each block's stages from ``load``,
    and return their outputs, each padded (:func:`delay`) to ``depth`` stages."""
    ys = {}
    for name, block in blocks:
        unique_submodule(m, name, block)
        if block.stages:
            m.d.comb += block.load.eq(load[:block.stages])
        ys[name] = delay(m, block.y, [load[j] for j in range(block.stages, depth)], name)
    return ys


class ElementwiseUnit(LaneArray):
    """VLEN-lane BF16 elementwise unit: one vector per cycle, results
    ``stages.elementwise_latency`` cycles after their command.

    Ports: ``i`` (command stream, :data:`EW_CMD`), ``a``/``b`` (``ArrayLayout(16, vlen)``,
    sampled with ``i``), ``o`` (command echo) and ``y`` (results, valid with ``o``).

    Parameters
    ----------
    vlen : int
        Lanes.
    stages : FpStages
        Pipeline depth of the lanes' blocks.
    """

    module_name = "elementwise_unit"

    def __init__(self, vlen: int, stages: FpStages = COMBINATIONAL):
        if vlen < 1:
            raise ValueError(f"vlen must be >= 1, got {vlen}")
        self.params = {"vlen": vlen, **_lane_params(stages, ("add_bf16", "mul_bf16", "exp"))}
        latency = stages.elementwise_latency
        super().__init__(lane_factory=lambda: ElementwiseLane(stages), count=vlen,
                         control=LockstepControl(EW_CMD, latency=latency,
                                                 last_cmd=latency > 1),
                         links=_links(latency))


def _links(latency: int) -> dict:
    links = {"load": "load", "cmd": "i__payload"}
    return {**links, "last_cmd": "last_cmd"} if latency > 1 else links


class ScalarOp(enum.Enum, shape=2):
    EXP = 0      # BF16 e^a
    RECIP = 1    # BF16 1/a
    TO_BF16 = 2  # FP32 a rounded to BF16 (RNE)


SCALAR_CMD = data.StructLayout({"op": ScalarOp, "tag": 4})


class ScalarFpLane(wiring.Component):
    """The FP unit's datapath: e^x, 1/x (BF16) and FP32 -> BF16, pipelined like
    :class:`ElementwiseLane` (operands registered at stage 0 when the blocks are pipelined).
    Latency :attr:`FpStages.scalar_fp_latency`.

    Attributes
    ----------
    load : In(latency)
    cmd : In(SCALAR_CMD)
    last_cmd : In(SCALAR_CMD)
        Only when the blocks are pipelined.
    a : In(32)
        FP32 operand for TO_BF16; BF16 in ``a[0:16]`` for EXP and RECIP.
    y : Out(16)
    """

    def __init__(self, stages: FpStages = COMBINATIONAL):
        self.stages = stages
        self.depth = max(stages.exp, stages.recip, stages.to_bf16)
        self.params = _lane_params(stages, ("exp", "recip", "to_bf16"))
        ports = {"load": In(stages.scalar_fp_latency), "cmd": In(SCALAR_CMD), "a": In(32),
                 "y": Out(16)}
        if self.depth:
            ports["last_cmd"] = In(SCALAR_CMD)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        st = self.stages
        exp, recip = Bf16Exp(stages=st.exp), Bf16Recip(stages=st.recip)
        cvt = Fp32ToBf16(stages=st.to_bf16)
        a, op, load = _operands(m, self.depth, self.load, ScalarOp, self.cmd.op, self.a)
        m.d.comb += [
            exp.a.eq(_isolate(a[:16], op == ScalarOp.EXP)),
            recip.a.eq(_isolate(a[:16], op == ScalarOp.RECIP)),
            cvt.a.eq(_isolate(a, op == ScalarOp.TO_BF16)),
        ]
        ys = _blocks(m, load, self.depth, (("exp", exp), ("recip", recip), ("to_bf16", cvt)))
        last_op = (self.last_cmd if self.depth else self.cmd).op
        result = Signal(16, reset_less=True)
        with m.If(load[self.depth]):
            with m.Switch(last_op):
                with m.Case(ScalarOp.EXP):
                    m.d.sync += result.eq(ys["exp"])
                with m.Case(ScalarOp.RECIP):
                    m.d.sync += result.eq(ys["recip"])
                with m.Default():
                    m.d.sync += result.eq(ys["to_bf16"])
        m.d.comb += self.y.eq(result)
        return m


class ScalarFpUnit(LaneArray):
    """The scalar FP unit: one :class:`ScalarFpLane` behind a command stream.

    ``lanes`` > 1 replicates the same lane (used to test all 2**16 inputs quickly).

    Parameters
    ----------
    lanes : int
        1 for the d-PLENA FP unit.
    stages : FpStages
        Pipeline depth of the lane's blocks.
    """

    module_name = "scalar_fp_unit"

    def __init__(self, lanes: int = 1, stages: FpStages = COMBINATIONAL):
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        self.params = {"lanes": lanes, **_lane_params(stages, ("exp", "recip", "to_bf16"))}
        latency = stages.scalar_fp_latency
        super().__init__(lane_factory=lambda: ScalarFpLane(stages), count=lanes,
                         control=LockstepControl(SCALAR_CMD, latency=latency,
                                                 last_cmd=latency > 1),
                         links=_links(latency))
