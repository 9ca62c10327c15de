"""Vector reduction unit: MAX, SUM and MAX_IDX over VLEN lanes, accumulated across chunks.

Paper: d-PLENA Fig. 3 "Reduction Unit", instructions V_RED_MAX, V_RED_SUM, V_RED_MAX_IDX.
Bit-exact with :func:`memwall.golden.fparith.reduce_max_idx` / ``reduce_sum``.

The tree is built by recursive halving: ``ReductionTree(n)`` is two ``ReductionTree(n/2)`` and
one node, so a VLEN-lane tree is log2(VLEN) unique modules whatever VLEN is, and the pairwise
order of the SUM (lanes 2i and 2i+1 first) is fixed by construction. Every tree level is one
pipeline stage.
"""

from __future__ import annotations



from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from memwall.hdl.common.fp import FpAdd, bf16_key
from memwall.hdl.common.lanes import LockstepControl
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["ReduceOp", "ReductionTree", "ReductionUnit", "BF16_NEG_INF"]

BF16_NEG_INF = 0xFF80


class ReduceOp(enum.Enum, shape=2):
    MAX = 0
    SUM = 1
    MAX_IDX = 2


class ReductionTree(wiring.Component):
    """Pipelined pairwise tree over ``lanes`` BF16 inputs: (max, its index) and FP32 sum.

    Lanes ``count`` and above are invalid: they never win the max and add ``+0`` to the sum.
    ``count`` is split per level (left half ``min(count, n/2)``, right half the rest) rather
    than decoded into a VLEN-bit valid mask. The max node keeps
    the lower-index operand unless the other is valid and strictly greater by
    :func:`~memwall.hdl.common.fp.bf16_key`, so the first index wins ties.

    Parameters
    ----------
    lanes : int
        Power of two >= 2.

    Attributes
    ----------
    data : In(ArrayLayout(16, lanes))
        BF16 lane values.
    count : In(range(lanes + 1))
        Valid lanes: ``0 .. count-1``.
    load : In(log2(lanes))
        Stage enables, one per tree level (level 0 = the leaf pairs).
    max_value, max_valid, max_index : Out
        The winning lane's BF16 bits, whether any lane was valid, and its lane index.
    sum : Out(32)
        FP32 pairwise-tree sum of the valid lanes.
    """

    def __init__(self, lanes: int):
        if lanes < 2 or lanes & (lanes - 1):
            raise ValueError(f"lanes must be a power of two >= 2, got {lanes}")
        self.lanes = lanes
        self.levels = exact_log2(lanes)
        self.params = {"lanes": lanes}
        super().__init__({
            "data": In(data.ArrayLayout(16, lanes)),
            "count": In(range(lanes + 1)),
            "load": In(self.levels),
            "max_value": Out(16), "max_valid": Out(1), "max_index": Out(self.levels),
            "sum": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        half = self.lanes // 2
        upper = self.count >= half
        counts = (Mux(upper, half, self.count), Mux(upper, self.count - half, 0))
        if self.lanes == 2:
            # Leaves: BF16 widens to FP32 exactly; an invalid lane contributes +0.
            valid = (self.count >= 1, self.count >= 2)
            left, right = (dict(value=self.data[n], valid=valid[n], index=Const(0, 0),
                                sum=Mux(valid[n], Cat(Const(0, 16), self.data[n]), 0))
                           for n in range(2))
        else:
            sides = []
            for n, name in enumerate(("left", "right")):
                sub = ReductionTree(half)
                unique_submodule(m, name, sub)
                m.d.comb += [
                    sub.data.as_value().eq(self.data.as_value()[n * half * 16:(n + 1) * half * 16]),
                    sub.count.eq(counts[n]),
                    sub.load.eq(self.load[:-1]),
                ]
                sides.append(dict(value=sub.max_value, valid=sub.max_valid, index=sub.max_index,
                                  sum=sub.sum))
            left, right = sides

        adder = FpAdd("fp32")
        unique_submodule(m, "adder", adder)
        m.d.comb += [adder.a.eq(left["sum"]), adder.b.eq(right["sum"]), adder.sub.eq(0)]
        right_wins = right["valid"] & (~left["valid"] |
                                       (bf16_key(right["value"]) > bf16_key(left["value"])))
        # Pipeline registers of this level: data path only, no reset needed.
        max_value = Signal(16, reset_less=True)
        max_valid = Signal(1, reset_less=True)
        max_index = Signal(self.levels, reset_less=True)
        total = Signal(32, reset_less=True)
        with m.If(self.load[-1]):
            m.d.sync += [
                max_value.eq(Mux(right_wins, right["value"], left["value"])),
                max_valid.eq(left["valid"] | right["valid"]),
                max_index.eq(Cat(Mux(right_wins, right["index"], left["index"]), right_wins)),
                total.eq(adder.y),
            ]
        m.d.comb += [self.max_value.eq(max_value), self.max_valid.eq(max_valid),
                     self.max_index.eq(max_index), self.sum.eq(total)]
        return m


def reduce_cmd_layout(vlen: int) -> data.StructLayout:
    return data.StructLayout({
        "op": ReduceOp,
        "count": range(vlen + 1),   # valid lanes of this chunk: lanes 0 .. count-1
        "first": 1,                 # first chunk of a vector: restart the accumulation
        "last": 1,                  # last chunk: emit the result
    })


RESULT_LAYOUT = data.StructLayout({"value": 32, "index": 32})


class ReductionUnit(wiring.Component):
    """Reduces vectors of any length, VLEN lanes per chunk, to one result per vector.

    Each ``i`` transfer carries one chunk (``data`` sampled with it) and its command. Results:
    MAX gives the max as BF16 bits in ``value[16:32]`` (exact FP32 widening) and index 0;
    MAX_IDX the same plus the global index (chunk offset + lane) of the first maximum; SUM the
    FP32 sum (tree sum per chunk, then ``acc = acc + chunk`` in chunk order). Across chunks a
    later maximum replaces the running one only if strictly greater. A vector with no valid lane
    gives MAX = -inf, index 0, SUM = +0. Latency: log2(VLEN) + 1 cycles per chunk; one chunk
    per cycle.

    Parameters
    ----------
    vlen : int
        Lanes (power of two, 2 .. 2048).

    Attributes
    ----------
    i : In(stream.Signature(reduce_cmd_layout(vlen)))
    data : In(ArrayLayout(16, vlen))
        BF16 chunk, qualified by ``i``.
    o : Out(stream.Signature(RESULT_LAYOUT))
    """

    module_name = "reduction_unit"

    def __init__(self, vlen: int):
        if vlen < 2 or vlen > 2048 or vlen & (vlen - 1):
            # 2048 lanes of BF16 already take half of the 65,536 input bits Amaranth can number.
            raise ValueError(f"vlen must be a power of two in [2, 2048], got {vlen}")
        self.vlen = vlen
        self.params = {"vlen": vlen}
        super().__init__({
            "i": In(stream.Signature(reduce_cmd_layout(vlen))),
            "data": In(data.ArrayLayout(16, vlen)),
            "o": Out(stream.Signature(RESULT_LAYOUT)),
        })

    def elaborate(self, platform):
        m = Module()
        vlen = self.vlen
        levels = exact_log2(vlen)
        cmd = reduce_cmd_layout(vlen)

        control = LockstepControl(cmd, latency=levels)
        tree = ReductionTree(vlen)
        unique_submodule(m, "control", control)
        unique_submodule(m, "tree", tree)
        m.d.comb += [
            control.i.valid.eq(self.i.valid), control.i.payload.eq(self.i.payload),
            self.i.ready.eq(control.i.ready),
            tree.data.eq(self.data), tree.count.eq(self.i.payload.count),
            tree.load.eq(control.load),
        ]

        # Accumulation stage: combine each chunk's tree result with the running result.
        chunk = control.o.payload
        acc_value = Signal(16, init=BF16_NEG_INF)
        acc_valid = Signal()
        acc_index = Signal(32)
        acc_sum = Signal(32)
        chunk_base = Signal(32)
        out_valid = Signal()
        out = Signal(RESULT_LAYOUT)

        adder = FpAdd("fp32")
        unique_submodule(m, "acc_adder", adder)
        m.d.comb += [adder.a.eq(acc_sum), adder.b.eq(tree.sum), adder.sub.eq(0)]

        base = Mux(chunk.first, 0, chunk_base)
        prev_valid = acc_valid & ~chunk.first
        take_new = tree.max_valid & (~prev_valid |
                                     (bf16_key(tree.max_value) > bf16_key(acc_value)))
        new_valid = prev_valid | tree.max_valid
        new_value = Mux(take_new, tree.max_value, Mux(prev_valid, acc_value, BF16_NEG_INF))
        new_index = Mux(take_new, base + tree.max_index, Mux(prev_valid, acc_index, 0))
        new_sum = Mux(chunk.first, tree.sum, adder.y)

        accept = control.o.valid & (~out_valid | self.o.ready)
        m.d.comb += control.o.ready.eq(~out_valid | self.o.ready)
        with m.If(self.o.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(accept):
            m.d.sync += [acc_value.eq(new_value), acc_valid.eq(new_valid),
                         acc_index.eq(new_index), acc_sum.eq(new_sum),
                         chunk_base.eq(base + vlen)]
            with m.If(chunk.last):
                m.d.sync += out_valid.eq(1)
                with m.Switch(chunk.op):
                    with m.Case(ReduceOp.SUM):
                        m.d.sync += [out.value.eq(new_sum), out.index.eq(0)]
                    with m.Case(ReduceOp.MAX_IDX):
                        m.d.sync += [out.value.eq(Cat(Const(0, 16), new_value)),
                                     out.index.eq(new_index)]
                    with m.Default():
                        m.d.sync += [out.value.eq(Cat(Const(0, 16), new_value)),
                                     out.index.eq(0)]
        m.d.comb += [self.o.valid.eq(out_valid), self.o.payload.eq(out)]
        return m
