"""Functional formal properties of d-PLENA units: the masked select against its golden model and
the reduction unit's MAX_IDX tie rule (:mod:`memwall.families.dplena.properties` lists them).

Each harness drives the unit's consumed streams from :func:`memwall.formal.protocol_source`
(free values, the valid/ready protocol assumed), leaves every other input free, lets the
synchronous reset come at any cycle (the harness's own registers reset with the unit's) and
checks every result the unit offers against a reference computed from what it was given.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import (
    Array,
    Assert,
    Assume,
    C,
    Cat,
    Elaboratable,
    Module,
    Mux,
    ResetSignal,
    Signal,
    Value,
    signed,
)
from amaranth.hdl._ast import AnySeq

from memwall.formal import protocol_source
from memwall.golden.dplena.sampling import NEG_INF_BF16
from memwall.hdl.common.fp import bf16_key

__all__ = ["MaskedSelectHarness", "ReductionTreeHarness", "ReductionAccumulatorHarness",
           "first_max"]


def _after_reset(m: Module) -> Signal:
    """A register that is high in the cycle after a reset: a reset ends an offered transfer."""
    after_reset = Signal(name="after_reset", reset_less=True)
    m.d.sync += after_reset.eq(ResetSignal())
    return after_reset


class MaskedSelectHarness(Elaboratable):
    """:class:`~memwall.hdl.dplena.select.MaskedSelectUnit` against
    :func:`memwall.golden.dplena.sampling.masked_select`: every ``o`` transfer answers the oldest
    unanswered ``i`` transfer, with its tag and ``y[n] = mask[n] ? a[n] : b[n]`` of the operands
    sampled with it; a result is offered exactly when one is owed, so none is lost, duplicated
    or made up. ``mask``, ``a`` and ``b`` are free in every cycle (only their values at the
    ``i`` transfer matter); ``o.ready`` and the reset are free.

    ``make`` builds the unit (default: ``MaskedSelectUnit(lanes, width, tag_width)``), so a
    test can hand in a broken one.
    """

    def __init__(self, lanes: int, width: int, tag_width: int,
                 make: Callable[[], Elaboratable] | None = None):
        self.lanes, self.width, self.tag_width = lanes, width, tag_width
        self.make = make

    def elaborate(self, platform):
        from memwall.hdl.dplena.select import MaskedSelectUnit

        m = Module()
        lanes, width = self.lanes, self.width
        dut = (self.make or (lambda: MaskedSelectUnit(lanes, width, self.tag_width)))()
        m.submodules.dut = dut
        protocol_source(m, "cmd", dut.i, _after_reset(m))
        m.d.comb += [dut.mask.eq(AnySeq(lanes)), dut.a.eq(AnySeq(lanes * width)),
                     dut.b.eq(AnySeq(lanes * width)), dut.o.ready.eq(AnySeq(1))]

        golden = Cat(Mux(dut.mask[n], dut.a[n], dut.b[n]) for n in range(lanes))
        owed = Signal(2)                      # results owed: the unit holds at most one
        want_tag = Signal(self.tag_width)
        want_y = Signal(lanes * width)
        take_i = dut.i.valid & dut.i.ready
        take_o = dut.o.valid & dut.o.ready
        m.d.sync += owed.eq(owed + take_i - take_o)
        with m.If(take_i):
            m.d.sync += [want_tag.eq(dut.i.payload), want_y.eq(golden)]
        m.d.comb += [Assert(owed <= 1), Assert(dut.o.valid == (owed == 1))]
        with m.If(dut.o.valid):
            m.d.comb += [Assert(dut.o.payload == want_tag),
                         Assert(Value.cast(dut.y) == want_y)]
        return m


def first_max(m: Module, lanes, count, valid, value, index, ties: str = "first") -> None:
    """Assert that ``(valid, value, index)`` is the first maximum of ``lanes[:count]`` (BF16
    bit patterns): ``valid`` iff ``count > 0``; then ``index < count``, ``value`` is that lane's
    bits, no lane has a greater :func:`~memwall.hdl.common.fp.bf16_key` and every lane before
    ``index`` a smaller one (so among equal maxima the lowest index). ``ties="last"`` expects
    the highest index instead (a wrong rule, for negative controls)."""
    if ties not in ("first", "last"):
        raise ValueError(f"ties must be 'first' or 'last', got {ties!r}")
    keys = []
    for n, lane in enumerate(lanes):
        keys.append(Signal(signed(17), name=f"lane{n}_key"))
        m.d.comb += keys[-1].eq(bf16_key(lane))
    best = Signal(signed(17), name="result_key")
    m.d.comb += [best.eq(bf16_key(value)), Assert(valid == (count != 0))]
    with m.If(count != 0):
        m.d.comb += [Assert(index < count), Assert(value == Array(lanes)[index])]
        for n, key in enumerate(keys):
            with m.If(n < count):
                m.d.comb += Assert(key <= best)
            with m.If((n < index) if ties == "first" else ((n > index) & (n < count))):
                m.d.comb += Assert(key < best)


class ReductionTreeHarness(Elaboratable):
    """The reduction tree of one chunk (:func:`~memwall.hdl.dplena.reduction.reduction_tree`,
    ``lanes`` lanes, ``stages`` adder stages) with every stage loading in every cycle, as the
    unit's lockstep control runs it when nothing stalls (a stall holds every stage): the
    ``max_value``, ``max_valid`` and ``max_index`` that leave it ``latency`` cycles after a chunk
    entered are that chunk's first maximum (:func:`first_max`) over its lanes ``0 .. count-1``;
    ``data`` free, ``count`` at most ``lanes`` (the unit's contract), its lanes valid as the
    unit's :class:`~memwall.hdl.dplena.reduction.LaneMask` marks them. The harness delays each
    chunk as long as the tree does, so the pipeline is flushed within ``latency`` cycles and
    k-induction at a depth above that closes. ``ties="last"`` expects the wrong tie rule (a
    negative control)."""

    def __init__(self, lanes: int, stages: int, ties: str = "first"):
        self.lanes, self.stages, self.ties = lanes, stages, ties

    def elaborate(self, platform):
        from amaranth.utils import exact_log2

        from memwall.families.dplena.config import tree_latency
        from memwall.hdl.dplena.reduction import reduction_tree

        m = Module()
        lanes = self.lanes
        latency = tree_latency(exact_log2(lanes), self.stages)
        m.submodules.dut = tree = reduction_tree(lanes, self.stages)
        count = Signal(range(lanes + 1), name="count")
        m.d.comb += [tree.load.eq(-1), tree.data.eq(AnySeq(16 * lanes)),
                     count.eq(AnySeq(len(count))),
                     tree.valid.eq(Cat(count > lane for lane in range(lanes)))]
        m.d.comb += Assume(count <= lanes)
        data = Value.cast(tree.data)
        for stage in range(latency):
            data_q = Signal(16 * lanes, name=f"data{stage}", reset_less=True)
            count_q = Signal.like(count, name=f"count{stage}", reset_less=True)
            m.d.sync += [data_q.eq(data), count_q.eq(count)]
            data, count = data_q, count_q
        filled = Signal(range(latency + 1))      # cycles since the start, up to latency
        with m.If(filled != latency):
            m.d.sync += filled.eq(filled + 1)
        with m.If(filled == latency):
            first_max(m, [data[16 * n:16 * (n + 1)] for n in range(lanes)], count,
                      tree.max_valid, tree.max_value, tree.max_index, self.ties)
        return m


class ReductionAccumulatorHarness(Elaboratable):
    """The reduction unit's cross-chunk accumulator
    (:class:`~memwall.hdl.dplena.reduction.ReductionAccumulator`, ``vlen`` lanes a chunk,
    ``stages`` adder stages), given each chunk's first maximum (``max_value``, ``max_valid``,
    ``max_index``, free: the tree's result, :class:`ReductionTreeHarness`): a vector's MAX and
    MAX_IDX result is the maximum of its chunks' maxima, and its index the global index (chunk
    offset + lane) of the *first* chunk's maximum among equal ones (a later chunk replaces the
    running maximum only if strictly greater, by :func:`~memwall.hdl.common.fp.bf16_key`), over
    any number of chunks and vectors; -inf and index 0 with no valid lane; MAX reports index 0.
    One result per LAST chunk, in order, none made up; SUM results are only counted (their
    values are not checked: cut the adder, ``dut.adder``, to spare the solver). Chunks keep the
    stream protocol with free commands (ops of the enum);
    ``o.ready`` and the reset are free. Internal invariants tie the running result and the
    result register to the reference, so k-induction closes. ``ties="last"`` makes the
    reference let a later chunk win ties (the wrong rule, for negative controls)."""

    def __init__(self, vlen: int, stages: int, ties: str = "first"):
        if ties not in ("first", "last"):
            raise ValueError(f"ties must be 'first' or 'last', got {ties!r}")
        self.vlen, self.stages, self.ties = vlen, stages, ties

    def elaborate(self, platform):
        from amaranth.hdl import Fragment

        from memwall.formal import internal
        from memwall.hdl.dplena.reduction import ReduceOp, ReductionAccumulator

        m = Module()
        acc = ReductionAccumulator(self.vlen, self.stages)
        m.submodules.dut = frag = Fragment.get(acc, platform)
        protocol_source(m, "chunks", acc.chunk, _after_reset(m))
        m.d.comb += [acc.max_value.eq(AnySeq(16)), acc.max_valid.eq(AnySeq(1)),
                     acc.max_index.eq(AnySeq(len(acc.max_index))), acc.sum.eq(AnySeq(32)),
                     acc.o.ready.eq(AnySeq(1))]
        cmd = acc.chunk.payload
        with m.If(acc.chunk.valid):                    # an op of the enum (2 bits hold 4)
            m.d.comb += Assume(cmd.op.as_value() <= ReduceOp.MAX_IDX.value)

        # The reference: the first maximum of the vector's chunks so far (valid, key, bits,
        # global index) and the global index of the next chunk's lane 0.
        ref_valid, ref_key = Signal(), Signal(signed(17))
        ref_bits, ref_index, ref_base = Signal(16), Signal(32), Signal(32)
        chunk_key = Signal(signed(17))
        m.d.comb += chunk_key.eq(bf16_key(acc.max_value))
        valid = Mux(cmd.first, 0, ref_valid)
        base = Mux(cmd.first, 0, ref_base)
        wins = (chunk_key > ref_key) if self.ties == "first" else (chunk_key >= ref_key)
        better = acc.max_valid & (~valid | wins)
        new_bits = Mux(better, acc.max_value, Mux(valid, ref_bits, NEG_INF_BF16))
        new_index = Mux(better, base + acc.max_index, Mux(valid, ref_index, 0))
        take = acc.chunk.valid & acc.chunk.ready
        with m.If(take):
            m.d.sync += [ref_valid.eq(valid | acc.max_valid),
                         ref_key.eq(Mux(better, chunk_key, ref_key)),
                         ref_bits.eq(new_bits), ref_index.eq(new_index),
                         ref_base.eq(base + self.vlen)]

        # The result owed (the accumulator holds one): its op, bits and index.
        owed, want_op = Signal(), Signal(ReduceOp)
        want_bits, want_index = Signal(16), Signal(32)
        pop = acc.o.valid & acc.o.ready
        with m.If(pop):
            m.d.sync += owed.eq(0)
        with m.If(take & cmd.last):
            m.d.sync += [owed.eq(1), want_op.eq(cmd.op), want_bits.eq(new_bits),
                         want_index.eq(new_index)]
            m.d.comb += Assert(~owed | pop)               # never more than one result held
        result = acc.o.payload
        with m.If(acc.o.valid):
            m.d.comb += Assert(owed)
            with m.Switch(want_op):
                with m.Case(ReduceOp.MAX_IDX):
                    m.d.comb += [Assert(result.value == Cat(C(0, 16), want_bits)),
                                 Assert(result.index == want_index)]
                with m.Case(ReduceOp.MAX):
                    m.d.comb += [Assert(result.value == Cat(C(0, 16), want_bits)),
                                 Assert(result.index == 0)]

        # Invariants: the accumulator's running result and its result register are the
        # reference's (a SUM being folded is owed too).
        def sig(name):
            return internal(frag, "", name)

        acc_valid, acc_value, acc_index = sig("acc_valid"), sig("acc_value"), sig("acc_index")
        out_valid, folding = sig("out_valid"), sig("folding")
        m.d.comb += [Assert(acc_valid == ref_valid), Assert(sig("chunk_base") == ref_base),
                     Assert(owed == (out_valid | folding)), Assert(~(out_valid & folding))]
        with m.If(folding):
            m.d.comb += Assert(want_op == ReduceOp.SUM)
        with m.If(ref_valid):
            m.d.comb += [Assert(acc_value == ref_bits), Assert(bf16_key(acc_value) == ref_key),
                         Assert(acc_index == ref_index)]
        with m.If(out_valid & (want_op != ReduceOp.SUM)):
            m.d.comb += [Assert(sig("out") == Cat(C(0, 16), want_bits,
                                                  Mux(want_op == ReduceOp.MAX, 0, want_index)))]
        return m
