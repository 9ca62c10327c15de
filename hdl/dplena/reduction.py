"""Vector reduction unit: MAX, SUM and MAX_IDX over VLEN lanes, accumulated across chunks.

Paper: d-PLENA Fig. 3 "Reduction Unit", instructions V_RED_MAX, V_RED_SUM, V_RED_MAX_IDX.
Bit-exact with :func:`memwall.golden.common.fparith.reduce_max_idx` / ``reduce_sum``.

The tree is built by recursive halving: ``ReductionTree(n)`` is two ``ReductionTree(n/2)``, a
count splitter and one :class:`ReductionNode`, so a VLEN-lane tree is log2(VLEN) unique modules
whatever VLEN is, and the pairwise order of the SUM (lanes 2i and 2i+1 first) is fixed by
construction. Every tree level is one pipeline stage. The tree levels and the unit are written as
structural Verilog (:class:`~memwall.hdl.common.structural.Netlist`): they only route wide
vectors, so generation time does not grow with VLEN.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from memwall.families.dplena.config import tree_latency
from memwall.hdl.common.fp import FpAdd, bf16_key
from memwall.hdl.common.lanes import LockstepControl
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.pipeline import delay, with_stages
from memwall.hdl.common.structural import Netlist, Structural

__all__ = ["ReduceOp", "ReductionNode", "ReductionLeafPair", "LaneMask", "ReductionTree",
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


def _merge(m: Module, load, component, left: dict, right: dict, stages: int) -> None:
    """One tree node: compare-select the max and add the sums; ``stages + 1`` pipeline stages.

    The FP32 adder has ``stages`` register stages (``load[:stages]``); the compare-select
    result waits beside it in plain registers, and stage ``stages`` registers both. The right
    (higher-index) side wins only if valid and strictly greater by ``bf16_key`` or the left is
    invalid, so the first index wins ties.
    """
    adder = FpAdd("fp32", stages=stages)
    unique_submodule(m, "adder", adder)
    m.d.comb += [adder.a.eq(left["sum"]), adder.b.eq(right["sum"]), adder.sub.eq(0)]
    if stages:
        m.d.comb += adder.load.eq(load[:stages])
    right_wins = right["valid"] & (~left["valid"] |
                                   (bf16_key(right["value"]) > bf16_key(left["value"])))
    waits = [load[j] for j in range(stages)]
    selected = {
        "max_value": Mux(right_wins, right["value"], left["value"]),
        "max_valid": left["valid"] | right["valid"],
        "max_index": Cat(Mux(right_wins, right["index"], left["index"]), right_wins),
    }
    selected = {name: delay(m, value, waits, name) for name, value in selected.items()}
    selected["sum"] = adder.y
    # Pipeline registers: data path only, no reset needed.
    regs = {name: Signal(len(getattr(component, name)), reset_less=True, name=name)
            for name in ("max_value", "max_valid", "max_index", "sum")}
    with m.If(load[stages]):
        m.d.sync += [regs[name].eq(value) for name, value in selected.items()]
    m.d.comb += [getattr(component, name).eq(reg) for name, reg in regs.items()]


class ReductionNode(wiring.Component):
    """Merges two sub-tree results (max, valid, index, FP32 sum) into one: one tree level,
    ``stages + 1`` pipeline stages (:func:`_merge`).

    Parameters
    ----------
    index_width : int
        Index bits of each input; the output index has one more (the side that won).
    stages : int
        Register stages of the FP32 adder.
    """

    def __init__(self, index_width: int, stages: int = 0):
        if index_width < 1:
            raise ValueError(f"index_width must be >= 1, got {index_width}")
        self.stages = stages
        self.params = with_stages({"index_width": index_width}, stages)
        side = {"value": In(16), "valid": In(1), "index": In(index_width), "sum": In(32)}
        super().__init__({**{f"l_{k}": v for k, v in side.items()},
                          **{f"r_{k}": v for k, v in side.items()},
                          "load": In(stages + 1), **_tree_outputs(index_width + 1)})

    def elaborate(self, platform):
        m = Module()
        sides = [{k: getattr(self, f"{s}_{k}") for k in ("value", "valid", "index", "sum")}
                 for s in ("l", "r")]
        _merge(m, self.load, self, *sides, self.stages)
        return m


class ReductionLeafPair(wiring.Component):
    """The leaves: two BF16 lanes, each with its ``valid`` bit, merged like a node.

    BF16 widens to FP32 exactly; an invalid lane contributes +0 to the sum.
    """

    def __init__(self, stages: int = 0):
        self.stages = stages
        self.params = with_stages({}, stages)
        super().__init__({"data": In(data.ArrayLayout(16, 2)), "valid": In(2),
                          "load": In(tree_latency(1, stages)), **_tree_outputs(1)})

    def elaborate(self, platform):
        m = Module()
        valid = (self.valid[0], self.valid[1])
        sides = [{"value": self.data[n], "valid": valid[n], "index": Const(0, 0),
                  "sum": Mux(valid[n], Cat(Const(0, 16), self.data[n]), 0)} for n in range(2)]
        load = self.load
        if self.stages:
            # Pipelined adders start from registers: the valid mask's decode and the
            # masking get a cycle of their own.
            sides = [{key: _register(m, value, f"in{n}_{key}", load[0])
                      for key, value in side.items()} for n, side in enumerate(sides)]
            load = load[1:]
        _merge(m, load, self, *sides, self.stages)
        return m


def _register(m: Module, value, name: str, load):
    value = Value.cast(value)
    if not len(value):
        return value
    reg = Signal(len(value), name=name, reset_less=True)
    with m.If(load):
        m.d.sync += reg.eq(value)
    return reg


class LaneMask(wiring.Component):
    """Valid-lane count -> one valid bit per lane: ``valid[i] = count > i``.

    Every bit compares the count with a constant, side by side. Splitting the count level by
    level down the tree instead (min(c, n/2), max(c - n/2, 0) per node) chains a subtract and
    a compare per level: on dplena512 the nine levels missed 1 GHz by 200 ps.
    """

    def __init__(self, lanes: int):
        self.lanes = lanes
        self.params = {"lanes": lanes}
        super().__init__({"count": In(range(lanes + 1)), "valid": Out(lanes)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.valid.eq(Cat(self.count > lane for lane in range(self.lanes)))
        return m


class ReductionTree(Structural, wiring.Component):
    """Pipelined pairwise tree over ``lanes`` >= 4 BF16 inputs: (max, its index) and FP32 sum.

    A lane whose ``valid`` bit is clear never wins the max and adds ``+0`` to the sum
    (:class:`LaneMask` makes the bits of a count of valid lanes).

    Parameters
    ----------
    lanes : int
        Power of two >= 4 (use :func:`reduction_tree` for any power of two >= 2).
    stages : int
        Register stages of each level's FP32 adder: a level is ``stages + 1`` pipeline stages.

    Attributes
    ----------
    data : In(ArrayLayout(16, lanes))
        BF16 lane values.
    valid : In(lanes)
        One bit per lane.
    load : In(tree_latency(log2(lanes), stages))
        Stage enables: the leaves' input register when ``stages > 0``, then ``stages + 1``
        per tree level (level 0 = the leaf pairs).
    max_value, max_valid, max_index : Out
        The winning lane's BF16 bits, whether any lane was valid, and its lane index.
    sum : Out(32)
        FP32 pairwise-tree sum of the valid lanes.
    """

    def __init__(self, lanes: int, stages: int = 0):
        if lanes < 4 or lanes & (lanes - 1):
            raise ValueError(f"lanes must be a power of two >= 4, got {lanes}")
        self.lanes, self.stages = lanes, stages
        self.levels = exact_log2(lanes)
        self.params = with_stages({"lanes": lanes}, stages)
        super().__init__({"data": In(data.ArrayLayout(16, lanes)), "valid": In(lanes),
                          "load": In(tree_latency(self.levels, stages)),
                          **_tree_outputs(self.levels)})

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        half, sub_levels = self.lanes // 2, self.levels - 1
        sub_latency = tree_latency(sub_levels, self.stages)
        data, load = netlist.net(io.data), netlist.net(io.load)
        valid = netlist.net(io.valid)
        subtrees = [netlist.instance(side, reduction_tree(half, self.stages))
                    for side in ("left", "right")]
        node = netlist.instance("node", ReductionNode(sub_levels, self.stages))
        for n, (sub, side) in enumerate(zip(subtrees, "lr", strict=True)):
            netlist.bind(sub.data, data[n * half * 16:(n + 1) * half * 16])
            netlist.bind(sub.valid, valid[n * half:(n + 1) * half])
            netlist.bind(sub.load, load[:sub_latency])
            for out, into in _NODE_INPUTS.items():
                netlist.connect(sub[out], node[f"{side}_{into}"])
        netlist.bind(node.load, load[sub_latency:])
        for out in _NODE_INPUTS:
            netlist.connect(node[out], io[out])


#: a (sub)tree output -> the node input it feeds (prefixed ``l_``/``r_``)
_NODE_INPUTS = {"max_value": "value", "max_valid": "valid", "max_index": "index", "sum": "sum"}


def reduction_tree(lanes: int, stages: int = 0):
    """The tree component for ``lanes`` (a power of two >= 2), ``stages`` per adder."""
    return ReductionLeafPair(stages) if lanes == 2 else ReductionTree(lanes, stages)


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

    MAX and MAX_IDX: one compare-select a chunk, the result the cycle after the last chunk.

    SUM: with a pipelined FP32 adder (``stages > 0``) an add is in flight ``stages + 1``
    cycles (its operands are registered first), so a chunk's add is not done when the next
    chunk arrives. The accumulator keeps ``P = stages + 2`` partial sums: chunk ``c`` of a
    vector goes to partial ``c mod P`` (the first chunk of a partial is stored, later ones are
    added), so the partial a chunk adds to is always ``P`` chunks, at least ``P`` cycles, old.
    After the last chunk the partials are folded in order, ``((p0 + p1) + p2) + ...``, one add
    at a time, and the sum is emitted: :func:`memwall.golden.common.fparith.reduce_sum` with
    ``partials=P``. With ``stages=0``, ``P = 1``: the running sum of the chunks in order, the
    add combinational. Exact timing: :func:`sum_fold_cycles`.

    Parameters
    ----------
    vlen : int
        Lanes per chunk (the global index of a lane is chunk offset + lane).
    stages : int
        Register stages of the FP32 adder.
    """

    def __init__(self, vlen: int, stages: int = 0):
        self.vlen, self.stages = vlen, stages
        self.partials = stages + 2 if stages else 1
        self.params = with_stages({"vlen": vlen}, stages)
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
        chunk_base = Signal(32)
        out_valid = Signal()
        out = Signal(RESULT_LAYOUT)
        folding = Signal()                   # SUM: folding the partials after the last chunk
        accept = self.chunk.valid & self.chunk.ready
        is_sum = chunk.op == ReduceOp.SUM

        base = Mux(chunk.first, 0, chunk_base)
        prev_valid = acc_valid & ~chunk.first
        # Strictly greater: an earlier chunk keeps its maximum on ties.
        take_new = self.max_valid & (~prev_valid |
                                     (bf16_key(self.max_value) > bf16_key(acc_value)))
        new_valid = prev_valid | self.max_valid
        new_value = Mux(take_new, self.max_value, Mux(prev_valid, acc_value, BF16_NEG_INF))
        new_index = Mux(take_new, base + self.max_index, Mux(prev_valid, acc_index, 0))

        sums = _PartialSums(m, self.stages, self.sum)
        m.d.comb += self.chunk.ready.eq((~out_valid | self.o.ready) & ~folding)
        with m.If(self.o.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(accept):
            m.d.sync += [acc_value.eq(new_value), acc_valid.eq(new_valid),
                         acc_index.eq(new_index), chunk_base.eq(base + self.vlen)]
            with m.If(is_sum):
                sums.take_chunk(chunk.first)
            with m.If(chunk.last):
                # A SUM with several partials folds them first; the rest emit now.
                fold = is_sum if self.partials > 1 else Const(0)
                with m.If(fold):
                    m.d.sync += folding.eq(1)
                    sums.start_fold()
                with m.Else():
                    m.d.sync += out_valid.eq(1)
                    with m.Switch(chunk.op):
                        with m.Case(ReduceOp.SUM):
                            m.d.sync += [out.value.eq(sums.single_sum(chunk.first)),
                                         out.index.eq(0)]
                        with m.Case(ReduceOp.MAX_IDX):
                            m.d.sync += [out.value.eq(Cat(Const(0, 16), new_value)),
                                         out.index.eq(new_index)]
                        with m.Default():
                            m.d.sync += [out.value.eq(Cat(Const(0, 16), new_value)),
                                         out.index.eq(0)]
        with m.If(folding & sums.fold_done):
            m.d.sync += [folding.eq(0), out_valid.eq(1), out.value.eq(sums.part[0]),
                         out.index.eq(0)]
        m.d.comb += [self.o.valid.eq(out_valid), self.o.payload.eq(out)]
        return m


class _PartialSums:
    """The SUM side of :class:`ReductionAccumulator`: ``stages + 1`` partial sums, one FP32
    adder with ``stages`` register stages, its in-flight bookkeeping and the final fold."""

    def __init__(self, m: Module, stages: int, chunk_sum):
        self.m, self.stages = m, stages
        # Cycles an add is in flight: the operand register and the adder's stages.
        self.latency = stages + 1 if stages else 0
        self.count = self.latency + 1
        self.adder = adder = FpAdd("fp32", stages=stages)
        unique_submodule(m, "adder", adder)
        self.chunk_sum = chunk_sum
        self.part = [Signal(32, name=f"part{j}", reset_less=True) for j in range(self.count)]
        self.part_valid = Signal(self.count)
        self.slot = Signal(range(self.count))      # the partial the next chunk goes to
        self.fold_next = Signal(range(self.count + 1))   # the partial the fold adds next
        # An add in each cycle of its flight: valid bit and the partial its result goes to.
        self.busy = [Signal(name=f"busy{j}") for j in range(self.latency)]
        self.tag = [Signal(range(self.count), name=f"tag{j}") for j in range(self.latency)]
        self.issue = Signal()                      # an add starts this cycle
        self.issue_tag = Signal(range(self.count))
        self.a, self.b = Signal(32), Signal(32)
        if self.latency:
            # The operands are registered, so the adder starts from registers.
            a, b = (Signal(32, name=f"operand_{n}", reset_less=True) for n in "ab")
            with m.If(self.issue):
                m.d.sync += [a.eq(self.a), b.eq(self.b)]
            m.d.comb += [adder.a.eq(a), adder.b.eq(b), adder.load.eq(Cat(*self.busy[:-1]))]
            m.d.sync += [busy.eq(src) for busy, src in
                         zip(self.busy, [self.issue, *self.busy[:-1]], strict=True)]
            m.d.sync += [tag.eq(src) for tag, src in
                         zip(self.tag, [self.issue_tag, *self.tag[:-1]], strict=True)]
            done, done_tag = self.busy[-1], self.tag[-1]
        else:
            m.d.comb += [adder.a.eq(Mux(self.issue, self.a, 0)),
                         adder.b.eq(Mux(self.issue, self.b, 0))]
            done, done_tag = self.issue, self.issue_tag
        m.d.comb += adder.sub.eq(0)
        # The adder's result lands in its partial in the cycle it leaves the adder, unless a
        # chunk is stored there in the same cycle (a new vector's first chunk wins). The
        # result takes the last multiplexer before each partial: it arrives late (the adder's
        # last stage), the selects early (dplena32 missed 1 GHz by 8 ps with two after it).
        self.store, self.store_slot = Signal(), Signal(range(self.count))
        for j, part in enumerate(self.part):
            stored = self.store & (self.store_slot == j)
            with m.If(done & (done_tag == j) & ~stored):
                m.d.sync += part.eq(adder.y)
            with m.Elif(stored):
                m.d.sync += part.eq(chunk_sum)
        self.idle = ~Cat(*self.busy).any() if self.latency else Const(1)
        self.fold_done = Signal()
        if self.count > 1:
            self._fold()

    def take_chunk(self, first) -> None:
        """A SUM chunk is accepted: store it in an empty partial or add it to its partial."""
        m, slot = self.m, Mux(first, 0, self.slot)
        valid = Mux(first, 0, self.part_valid)
        nxt = Mux(slot == self.count - 1, 0, slot + 1)
        m.d.sync += self.slot.eq(nxt)
        with m.If(first):   # a new vector: drop the adds of one that never had its last chunk
            m.d.sync += [busy.eq(0) for busy in self.busy]
        with m.If(valid.bit_select(slot, 1)):
            m.d.comb += [self.issue.eq(1), self.issue_tag.eq(slot),
                         self.a.eq(Array(self.part)[slot]), self.b.eq(self.chunk_sum)]
        with m.Else():
            m.d.comb += [self.store.eq(1), self.store_slot.eq(slot)]
            m.d.sync += self.part_valid.eq(valid | (Const(1, self.count) << slot))

    def single_sum(self, first):
        """With one partial (no adder stages): the sum after this chunk, ready this cycle."""
        return Mux(first | ~self.part_valid[0], self.chunk_sum, self.adder.y)

    def start_fold(self) -> None:
        self.m.d.sync += self.fold_next.eq(1)

    def _fold(self) -> None:
        """``part[0] += part[j]`` for each valid ``j`` in order, each once no add is in flight;
        done when the next partial is missing (partials fill in order) or all are added."""
        m, nxt = self.m, self.fold_next
        present = (nxt < self.count) & self.part_valid.bit_select(nxt, 1)
        folding = nxt != 0
        m.d.comb += self.fold_done.eq(folding & self.idle & ~present)
        with m.If(folding & self.idle & present):
            m.d.comb += [self.issue.eq(1), self.issue_tag.eq(0),
                         self.a.eq(self.part[0]), self.b.eq(Array(self.part)[nxt])]
            m.d.sync += nxt.eq(nxt + 1)
        with m.If(self.fold_done):
            m.d.sync += nxt.eq(0)


class ReductionUnit(Structural, wiring.Component):
    """Reduces vectors of any length, VLEN lanes per chunk, to one result per vector.

    Each ``i`` transfer carries one chunk (``data`` sampled with it) and its command. Results:
    MAX gives the max as BF16 bits in ``value[16:32]`` (exact FP32 widening) and index 0;
    MAX_IDX the same plus the global index (chunk offset + lane) of the first maximum; SUM the
    FP32 sum (tree sum per chunk, then ``acc = acc + chunk`` in chunk order). Across chunks a
    later maximum replaces the running one only if strictly greater. A vector with no valid lane
    gives MAX = -inf, index 0, SUM = +0. One chunk per cycle; a chunk takes
    ``log2(VLEN) * (stages + 1)`` cycles through the tree, then the accumulator emits MAX and
    MAX_IDX a cycle after the last chunk, SUM :func:`sum_fold_cycles` later.

    Parameters
    ----------
    vlen : int
        Lanes (power of two >= 2).
    stages : int
        Register stages of every FP32 adder (tree levels and accumulator).

    Attributes
    ----------
    i : In(stream.Signature(reduce_cmd_layout(vlen)))
    data : In(ArrayLayout(16, vlen))
        BF16 chunk, qualified by ``i``.
    o : Out(stream.Signature(RESULT_LAYOUT))
    """

    module_name = "reduction_unit"

    def __init__(self, vlen: int, stages: int = 0):
        if vlen < 2 or vlen & (vlen - 1):
            raise ValueError(f"vlen must be a power of two >= 2, got {vlen}")
        self.vlen, self.stages = vlen, stages
        self.params = with_stages({"vlen": vlen}, stages)
        super().__init__({
            "i": In(stream.Signature(reduce_cmd_layout(vlen))),
            "data": In(data.ArrayLayout(16, vlen)),
            "o": Out(stream.Signature(RESULT_LAYOUT)),
        })

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        cmd = reduce_cmd_layout(self.vlen)
        latency = tree_latency(exact_log2(self.vlen), self.stages)
        control = netlist.instance("control", LockstepControl(cmd, latency=latency))
        mask = netlist.instance("mask", LaneMask(self.vlen))
        tree = netlist.instance("tree", reduction_tree(self.vlen, self.stages))
        accumulator = netlist.instance("accumulator",
                                       ReductionAccumulator(self.vlen, self.stages))
        netlist.connect(io.i, control.i)
        netlist.connect(control.o, accumulator.chunk)
        netlist.connect(control.load, tree.load)
        netlist.connect(io.data, tree.data)
        count = cmd["count"]   # the tree sees the valid lanes of the chunk entering it
        netlist.bind(mask.count,
                     netlist.net(io.i.payload)[count.offset:count.offset + count.width])
        netlist.connect(mask.valid, tree.valid)
        for name in _NODE_INPUTS:
            netlist.connect(tree[name], accumulator[name])
        netlist.connect(accumulator.o, io.o)
