"""Vector reduction unit: MAX, SUM and MAX_IDX over VLEN lanes, accumulated across chunks.

Paper: d-PLENA Fig. 3 "Reduction Unit", instructions V_RED_MAX, V_RED_SUM, V_RED_MAX_IDX.
Bit-exact with :func:`memwall.golden.fparith.reduce_max_idx` / ``reduce_sum``.

The tree is built by recursive halving: ``ReductionTree(n)`` is two ``ReductionTree(n/2)``, a
count splitter and one :class:`ReductionNode`, so a VLEN-lane tree is log2(VLEN) unique modules
whatever VLEN is, and the pairwise order of the SUM (lanes 2i and 2i+1 first) is fixed by
construction. Every tree level is one pipeline stage. The tree levels and the unit are written as
structural Verilog (:class:`~memwall.hdl.common.structural.Netlist`): they only route wide
vectors, so generation time does not grow with VLEN.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2
from memwall.hdl.common.fp import FpAdd, bf16_key
from memwall.hdl.common.lanes import LockstepControl
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.structural import Netlist, Structural

__all__ = ["ReduceOp", "ReductionNode", "ReductionLeafPair", "CountSplit", "ReductionTree",
           "ReductionAccumulator", "ReductionUnit", "reduction_tree", "reduce_cmd_layout",
           "RESULT_LAYOUT", "BF16_NEG_INF"]

BF16_NEG_INF = 0xFF80


class ReduceOp(enum.Enum, shape=2):
    MAX = 0
    SUM = 1
    MAX_IDX = 2


def _tree_outputs(index_width: int) -> dict:
    return {"max_value": Out(16), "max_valid": Out(1), "max_index": Out(index_width),
            "sum": Out(32)}


def _merge(m: Module, component, left: dict, right: dict) -> None:
    """One tree node: compare-select the max and add the sums, registered when ``load``.

    The right (higher-index) side wins only if valid and strictly greater by ``bf16_key`` or
    the left is invalid, so the first index wins ties.
    """
    adder = FpAdd("fp32")
    unique_submodule(m, "adder", adder)
    m.d.comb += [adder.a.eq(left["sum"]), adder.b.eq(right["sum"]), adder.sub.eq(0)]
    right_wins = right["valid"] & (~left["valid"] |
                                   (bf16_key(right["value"]) > bf16_key(left["value"])))
    # Pipeline registers: data path only, no reset needed.
    regs = {name: Signal(len(getattr(component, name)), reset_less=True, name=name)
            for name in ("max_value", "max_valid", "max_index", "sum")}
    with m.If(component.load):
        m.d.sync += [
            regs["max_value"].eq(Mux(right_wins, right["value"], left["value"])),
            regs["max_valid"].eq(left["valid"] | right["valid"]),
            regs["max_index"].eq(Cat(Mux(right_wins, right["index"], left["index"]), right_wins)),
            regs["sum"].eq(adder.y),
        ]
    m.d.comb += [getattr(component, name).eq(reg) for name, reg in regs.items()]


class ReductionNode(wiring.Component):
    """Merges two sub-tree results (max, valid, index, FP32 sum) into one, one pipeline stage.

    Parameters
    ----------
    index_width : int
        Index bits of each input; the output index has one more (the side that won).
    """

    def __init__(self, index_width: int):
        if index_width < 1:
            raise ValueError(f"index_width must be >= 1, got {index_width}")
        self.params = {"index_width": index_width}
        side = {"value": In(16), "valid": In(1), "index": In(index_width), "sum": In(32)}
        super().__init__({**{f"l_{k}": v for k, v in side.items()},
                          **{f"r_{k}": v for k, v in side.items()},
                          "load": In(1), **_tree_outputs(index_width + 1)})

    def elaborate(self, platform):
        m = Module()
        sides = [{k: getattr(self, f"{s}_{k}") for k in ("value", "valid", "index", "sum")}
                 for s in ("l", "r")]
        _merge(m, self, *sides)
        return m


class ReductionLeafPair(wiring.Component):
    """The leaves: two BF16 lanes (lane 1 valid if ``count`` >= 2), merged like a node.

    BF16 widens to FP32 exactly; an invalid lane contributes +0 to the sum.
    """

    def __init__(self):
        self.params = {}
        super().__init__({"data": In(data.ArrayLayout(16, 2)), "count": In(range(3)),
                          "load": In(1), **_tree_outputs(1)})

    def elaborate(self, platform):
        m = Module()
        valid = (self.count >= 1, self.count >= 2)
        left, right = ({"value": self.data[n], "valid": valid[n], "index": Const(0, 0),
                        "sum": Mux(valid[n], Cat(Const(0, 16), self.data[n]), 0)}
                       for n in range(2))
        _merge(m, self, left, right)
        return m


class CountSplit(wiring.Component):
    """Valid-lane count of an n-lane tree -> counts of its halves: min(c, n/2), max(c - n/2, 0)."""

    def __init__(self, lanes: int):
        self.lanes = lanes
        self.params = {"lanes": lanes}
        half = range(lanes // 2 + 1)
        super().__init__({"count": In(range(lanes + 1)), "left": Out(half), "right": Out(half)})

    def elaborate(self, platform):
        m = Module()
        half = self.lanes // 2
        upper = self.count >= half
        m.d.comb += [self.left.eq(Mux(upper, half, self.count)),
                     self.right.eq(Mux(upper, self.count - half, 0))]
        return m


class ReductionTree(Structural, wiring.Component):
    """Pipelined pairwise tree over ``lanes`` >= 4 BF16 inputs: (max, its index) and FP32 sum.

    Lanes ``count`` and above are invalid: they never win the max and add ``+0`` to the sum.
    ``count`` is split per level rather than decoded into a VLEN-bit valid mask.

    Parameters
    ----------
    lanes : int
        Power of two >= 4 (use :func:`reduction_tree` for any power of two >= 2).

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
        if lanes < 4 or lanes & (lanes - 1):
            raise ValueError(f"lanes must be a power of two >= 4, got {lanes}")
        self.lanes = lanes
        self.levels = exact_log2(lanes)
        self.params = {"lanes": lanes}
        super().__init__({"data": In(data.ArrayLayout(16, lanes)), "count": In(range(lanes + 1)),
                          "load": In(self.levels), **_tree_outputs(self.levels)})

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        half, sub_levels = self.lanes // 2, self.levels - 1
        data, load = netlist.net(io.data), netlist.net(io.load)
        split = netlist.instance("split", CountSplit(self.lanes))
        netlist.connect(io.count, split.count)
        subtrees = [netlist.instance(side, reduction_tree(half)) for side in ("left", "right")]
        node = netlist.instance("node", ReductionNode(sub_levels))
        for n, (sub, count, side) in enumerate(zip(subtrees, (split.left, split.right), "lr",
                                                   strict=True)):
            netlist.bind(sub.data, data[n * half * 16:(n + 1) * half * 16])
            netlist.connect(count, sub.count)
            netlist.bind(sub.load, load[:sub_levels])
            for out, into in _NODE_INPUTS.items():
                netlist.connect(sub[out], node[f"{side}_{into}"])
        netlist.bind(node.load, load[self.levels - 1])
        for out in _NODE_INPUTS:
            netlist.connect(node[out], io[out])


#: a (sub)tree output -> the node input it feeds (prefixed ``l_``/``r_``)
_NODE_INPUTS = {"max_value": "value", "max_valid": "valid", "max_index": "index", "sum": "sum"}


def reduction_tree(lanes: int):
    """The tree component for ``lanes`` (a power of two >= 2)."""
    return ReductionLeafPair() if lanes == 2 else ReductionTree(lanes)


def reduce_cmd_layout(vlen: int) -> data.StructLayout:
    return data.StructLayout({
        "op": ReduceOp,
        "count": range(vlen + 1),   # valid lanes of this chunk: lanes 0 .. count-1
        "first": 1,                 # first chunk of a vector: restart the accumulation
        "last": 1,                  # last chunk: emit the result
    })


RESULT_LAYOUT = data.StructLayout({"value": 32, "index": 32})


class ReductionAccumulator(wiring.Component):
    """Combines each chunk's tree result with the running result; emits on the last chunk.

    Parameters
    ----------
    vlen : int
        Lanes per chunk (the global index of a lane is chunk offset + lane).
    """

    def __init__(self, vlen: int):
        self.vlen = vlen
        self.params = {"vlen": vlen}
        super().__init__({
            "chunk": In(stream.Signature(reduce_cmd_layout(vlen))),
            "max_value": In(16), "max_valid": In(1), "max_index": In(exact_log2(vlen)),
            "sum": In(32),
            "o": Out(stream.Signature(RESULT_LAYOUT)),
        })

    def elaborate(self, platform):
        m = Module()
        chunk = self.chunk.payload
        acc_value = Signal(16, init=BF16_NEG_INF)
        acc_valid = Signal()
        acc_index = Signal(32)
        acc_sum = Signal(32)
        chunk_base = Signal(32)
        out_valid = Signal()
        out = Signal(RESULT_LAYOUT)

        adder = FpAdd("fp32")
        unique_submodule(m, "adder", adder)
        m.d.comb += [adder.a.eq(acc_sum), adder.b.eq(self.sum), adder.sub.eq(0)]

        base = Mux(chunk.first, 0, chunk_base)
        prev_valid = acc_valid & ~chunk.first
        # Strictly greater: an earlier chunk keeps its maximum on ties.
        take_new = self.max_valid & (~prev_valid |
                                     (bf16_key(self.max_value) > bf16_key(acc_value)))
        new_valid = prev_valid | self.max_valid
        new_value = Mux(take_new, self.max_value, Mux(prev_valid, acc_value, BF16_NEG_INF))
        new_index = Mux(take_new, base + self.max_index, Mux(prev_valid, acc_index, 0))
        new_sum = Mux(chunk.first, self.sum, adder.y)

        m.d.comb += self.chunk.ready.eq(~out_valid | self.o.ready)
        with m.If(self.o.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(self.chunk.valid & self.chunk.ready):
            m.d.sync += [acc_value.eq(new_value), acc_valid.eq(new_valid),
                         acc_index.eq(new_index), acc_sum.eq(new_sum),
                         chunk_base.eq(base + self.vlen)]
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


class ReductionUnit(Structural, wiring.Component):
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
        Lanes (power of two >= 2).

    Attributes
    ----------
    i : In(stream.Signature(reduce_cmd_layout(vlen)))
    data : In(ArrayLayout(16, vlen))
        BF16 chunk, qualified by ``i``.
    o : Out(stream.Signature(RESULT_LAYOUT))
    """

    module_name = "reduction_unit"

    def __init__(self, vlen: int):
        if vlen < 2 or vlen & (vlen - 1):
            raise ValueError(f"vlen must be a power of two >= 2, got {vlen}")
        self.vlen = vlen
        self.params = {"vlen": vlen}
        super().__init__({
            "i": In(stream.Signature(reduce_cmd_layout(vlen))),
            "data": In(data.ArrayLayout(16, vlen)),
            "o": Out(stream.Signature(RESULT_LAYOUT)),
        })

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        cmd = reduce_cmd_layout(self.vlen)
        control = netlist.instance("control",
                                   LockstepControl(cmd, latency=exact_log2(self.vlen)))
        tree = netlist.instance("tree", reduction_tree(self.vlen))
        accumulator = netlist.instance("accumulator", ReductionAccumulator(self.vlen))
        netlist.connect(io.i, control.i)
        netlist.connect(control.o, accumulator.chunk)
        netlist.connect(control.load, tree.load)
        netlist.connect(io.data, tree.data)
        count = cmd["count"]   # the tree sees the count of the chunk entering it
        netlist.bind(tree.count,
                     netlist.net(io.i.payload)[count.offset:count.offset + count.width])
        for name in _NODE_INPUTS:
            netlist.connect(tree[name], accumulator[name])
        netlist.connect(accumulator.o, io.o)
