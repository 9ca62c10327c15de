"""Formal properties of the d-PLENA sequencer (:mod:`memwall.hdl.dplena.sequencer`).

The sequencer is proved alone, for *every* program: its instruction memory, registers and
SRAMs are whatever the induction step picks, its host inputs are free. Its neighbours in
``dplena_core`` are replaced by their contracts (assumed), which the harness states once
(:class:`_Neighbours`) and every sequencer property shares:

* the dequantiser takes a prefetch command exactly when it is not busy (``cmd.ready = ~busy``)
  and is busy in the cycle after it took one of a non-zero count;
* the reduction unit takes a chunk whenever it owes no result (it stalls only while it folds
  a SUM, which only a LAST chunk starts) and offers a result only when it owes one (a LAST
  chunk was taken and its result not yet);
* the elementwise unit is always ready (its pipeline stalls only on ``o.ready``, which the
  sequencer holds high) and offers a result only when it owes one.

The sequencer's side of these contracts is asserted: it never back-pressures a unit's
results, and never offers a reduction chunk while a reduction result is owed (the unit may
be folding then). The invariants each proof needs to close by k-induction are asserted beside
the property: they are proved too (they hold in every reachable state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from amaranth.hdl import Assert, Assume, Cat, Fragment, Module, Mux, Signal, Value
from amaranth.utils import exact_log2

from memwall.formal import Property, internal, stream_protocol

__all__ = ["sequencer_property", "SEQUENCER_CHECKS"]

#: What a sequencer property asserts, besides the stream protocol of its ports.
SEQUENCER_CHECKS = ("streams", "retire", "prefetch")


def _states(fragment: Fragment) -> tuple[Signal, dict[str, int]]:
    """The sequencer FSM's state register and its encoding, by state name."""
    state = internal(fragment, "", "fsm_state")
    codes = {}
    for code in range(1 << len(state)):
        try:
            codes[state.decoder(code).split("/")[0]] = code
        except KeyError:
            continue
    return state, codes


class _Neighbours:
    """The contracts of the sequencer's neighbours (assumed; see the module docstring) and the
    ghost state they need: a reduction result owed, elementwise results owed, a prefetch
    taken last cycle."""

    def __init__(self, m: Module, seq):
        red_i, red_o, ew_i, ew_o, cmd = seq.red_i, seq.red_o, seq.ew_i, seq.ew_o, seq.dma_cmd
        busy = seq.dma_busy
        self.pf_take = cmd.valid & cmd.ready
        self.pf_started = Signal(name="pf_started")
        m.d.sync += self.pf_started.eq(self.pf_take & (cmd.payload.count != 0))
        m.d.comb += Assume(cmd.ready == ~busy)
        with m.If(self.pf_started):
            m.d.comb += Assume(busy)

        self.red_take = red_i.valid & red_i.ready
        self.red_done = red_o.valid & red_o.ready
        self.red_owed = Signal(name="red_owed")
        with m.If(self.red_done):
            m.d.sync += self.red_owed.eq(0)
        with m.If(self.red_take & red_i.payload.last):
            m.d.sync += self.red_owed.eq(1)
        with m.If(~self.red_owed):
            m.d.comb += Assume(red_i.ready)
        with m.If(red_o.valid):
            m.d.comb += Assume(self.red_owed)

        self.ew_take = ew_i.valid & ew_i.ready
        self.ew_done = ew_o.valid & ew_o.ready
        self.ew_owed = Signal(32, name="ew_owed")
        m.d.sync += self.ew_owed.eq(self.ew_owed + self.ew_take - self.ew_done)
        m.d.comb += Assume(ew_i.ready)
        with m.If(ew_o.valid):
            m.d.comb += Assume(self.ew_owed != 0)


_REDUCE_OPS = ("V_RED_MAX", "V_RED_SUM", "V_RED_MAX_IDX")
_EW_OPS = ("V_SUB_VF", "V_EXP_V")
_SFP_OPS = ("S_EXP_BF", "S_RECIP_BF", "S_CVT_BF")

#: The states of each instruction after its EXECUTE cycle.
_STATES_OF = {
    ("S_LD_INT",): ("LOAD_INT",),
    _SFP_OPS: ("SCALAR_FP",),
    _REDUCE_OPS: ("REDUCE",),
    _EW_OPS: ("ELEMENTWISE",),
    ("S_MAP_V_FP", "V_CMP_EQ_INT"): ("MAP_READ", "MAP_WRITE"),
    ("V_TOPK_MASK",): ("TOPK_FLAGS", "TOPK_STAGE", "TOPK_STREAM", "TOPK_MASK", "TOPK_WRITE"),
    ("V_SELECT_INT",): ("SELECT_FLAGS", "SELECT_READ_A", "SELECT_READ_B", "SELECT_ISSUE"),
    ("H_STORE_INT",): ("STORE_INT_NEXT", "STORE_INT_PUSH"),
    ("H_STORE_V",): ("STORE_V_STAGE", "STORE_V_PUSH"),
}


class _Checks:
    """The asserts of one sequencer property over the elaborated sequencer ``seq``, and the
    invariants every one needs: each instruction's own states run only its opcode."""

    def __init__(self, m: Module, seq, fragment: Fragment, checks: Sequence[str]):
        from memwall.golden.dplena.isa import Op

        self.m, self.seq, self.cfg, self.Op = m, seq, seq.cfg, Op
        self.dp = seq.datapath
        self.fragment = fragment
        self.state, self.codes = _states(fragment)
        self.env = _Neighbours(m, seq)
        dp = self.dp
        self.pipelined = {op: block.stages for op, (block, _) in dp.arith.items()
                          if block.stages}
        states_of = dict(_STATES_OF)
        if self.pipelined:
            states_of[tuple(op.name for op in self.pipelined)] = ("SCALAR_ARITH",
                                                                  "SCALAR_WRITE")
        for ops, states in states_of.items():
            with m.If(self._in(*states)):
                m.d.comb += Assert(self._op(*ops))
        for check in checks:
            getattr(self, f"_{check}")()
        # Named copies of the datapath's unnamed registers, for reading a counterexample.
        for name in ("issued", "retired", "n_items", "n_items_m1", "p_valid", "p_last",
                     "red_flags", "wr_row", "arith_wait"):
            value = Value.cast(getattr(dp, name))
            probe = Signal(len(value), name=f"seq_{name}")
            m.d.comb += probe.eq(value)

    def _in(self, *names: str) -> Value:
        return Cat(self.state == self.codes[name] for name in names).any()

    def _op(self, *names: str) -> Value:
        return Cat(self.dp.op == self.Op[name] for name in names).any()

    def _unit(self, path: str, name: str) -> Signal:
        return internal(self.fragment, path, name)

    # -- the unit contracts' other side, and the invariants they need --------------------------
    def _streams(self) -> None:
        m, seq, env = self.m, self.seq, self.env
        m.d.comb += [Assert(seq.red_o.ready), Assert(seq.ew_o.ready)]
        with m.If(seq.red_i.valid):
            m.d.comb += Assert(~env.red_owed)
        self._reduce_invariants()

    def _row_invariants(self) -> None:
        """A vector instruction's size registers agree, and its row counter stays in range:
        ``p_last`` marks the row of index ``n - 1``."""
        m, dp = self.m, self.dp
        with m.If(~self._in("IDLE", "FETCH", "EXECUTE")):
            m.d.comb += Assert(dp.n_items_m1 == (dp.n_items - 1)[:33])
        with m.If(self._in("REDUCE", "ELEMENTWISE")):
            m.d.comb += [Assert(dp.issued <= dp.n_items), Assert(~dp.p_valid | (dp.issued != 0))]
            with m.If(dp.p_valid):
                m.d.comb += Assert(dp.p_last == (dp.issued == dp.n_items))

    def _reduce_invariants(self) -> None:
        """A reduction result is owed only to a V_RED with LAST that sent all its chunks."""
        m, dp, env = self.m, self.dp, self.env
        self._row_invariants()
        with m.If(self._in("REDUCE")):
            m.d.comb += Assert(dp.red_flags == dp.imm[:2])
        with m.If(env.red_owed):
            m.d.comb += [Assert(self._in("REDUCE")), Assert(dp.imm[1]),
                         Assert(dp.issued == dp.n_items), Assert(~dp.p_valid)]

    def _elementwise_invariants(self) -> None:
        """The elementwise results owed are the rows handed over and not yet written back."""
        m, dp, env = self.m, self.dp, self.env
        in_flight = Mux(self._in("ELEMENTWISE"), dp.issued - dp.p_valid - dp.retired, 0)
        self._row_invariants()
        m.d.comb += Assert(env.ew_owed == in_flight[:32])
        with m.If(self._in("ELEMENTWISE")):
            m.d.comb += Assert(dp.retired + dp.p_valid <= dp.issued)

    # -- an instruction retires only once what it waits for is in -------------------------------
    def _retire(self) -> None:
        m, seq, dp, env = self.m, self.seq, self.dp, self.env
        self._reduce_invariants()
        self._elementwise_invariants()
        sfp = [self._unit("scalar_fp/control", f"valid{j}")
               for j in range(self.cfg.stages.scalar_fp_latency)]
        select = self._unit("select/control", "valid0")
        topk_valid, topk_pos = self._unit("topk", "out_valid"), self._unit("topk", "pos")
        # Cycles since the instruction's EXECUTE (for the pipelined scalar blocks).
        top = max(self.pipelined.values(), default=0) + 3
        age = Signal(range(top + 1), name="age")
        with m.If(self._in("EXECUTE")):
            m.d.sync += age.eq(1)
        with m.Elif(age != top):
            m.d.sync += age.eq(age + 1)

        with m.If(dp.done):
            with m.If(self._op("H_WAIT")):
                m.d.comb += Assert(~seq.dma_busy)             # the prefetch has finished
            with m.If(self._op("H_PREFETCH_V")):
                m.d.comb += Assert(env.pf_take)               # the dequantiser took it
            with m.If(self._op(*_REDUCE_OPS) & dp.imm[1]):
                m.d.comb += Assert(env.red_done)              # LAST: its result arrives
            with m.If(self._op(*_REDUCE_OPS) & ~dp.imm[1]):
                m.d.comb += Assert(seq.red_i.valid & dp.p_last)   # its last chunk goes
            with m.If(self._op(*_EW_OPS)):                    # its last row is written back
                m.d.comb += [Assert(env.ew_done), Assert(env.ew_owed == 1),
                             Assert(dp.issued == dp.n_items)]
            with m.If(self._op(*_SFP_OPS)):
                m.d.comb += Assert(dp.sfp.o.valid)
            with m.If(self._op("V_SELECT_INT")):              # its last element is written
                m.d.comb += [Assert(dp.select.o.valid), Assert(dp.issued == dp.n_items)]
            for op, stages in self.pipelined.items():         # its block had every stage
                with m.If(dp.op == op):
                    m.d.comb += Assert(age == stages + 2)
        # When the next instruction starts, no unit owes anything to an earlier one.
        retired = Signal(name="retired_last")
        m.d.sync += retired.eq(dp.done)
        with m.If(retired):
            m.d.comb += [Assert(~env.red_owed), Assert(env.ew_owed == 0),
                         Assert(~Cat(*sfp).any()), Assert(~select),
                         Assert(~topk_valid), Assert(topk_pos == 0)]

        # Invariants: each unit holds work only in its instruction's states, as much as the
        # instruction's counters say.
        m.d.comb += Assert(sum(sfp) == self._in("SCALAR_FP"))
        m.d.comb += Assert(~select | self._in("SELECT_READ_A"))
        with m.If(self._in("SELECT_FLAGS", "SELECT_READ_A", "SELECT_READ_B", "SELECT_ISSUE")):
            m.d.comb += [Assert(dp.retired + select == dp.issued),
                         Assert(dp.issued <= dp.n_items)]
        with m.If(topk_valid | (topk_pos != 0)):
            m.d.comb += Assert(self._in("TOPK_STREAM", "TOPK_MASK"))
        with m.If(self._in("TOPK_STREAM")):
            m.d.comb += Assert(~topk_valid)
        with m.If(self._in("TOPK_MASK")):
            m.d.comb += [Assert(topk_valid), Assert(topk_pos == 0)]
        for op, stages in self.pipelined.items():
            with m.If(dp.op == op):
                with m.If(self._in("SCALAR_ARITH")):
                    m.d.comb += Assert(age + dp.arith_wait == stages + 1)
                with m.If(self._in("SCALAR_WRITE")):
                    m.d.comb += Assert(age == stages + 2)


    # -- a prefetch never overwrites the buffer half being read ----------------------------------
    def _half(self, row) -> Value:
        return Value.cast(row)[self.row_bits - 1]

    def _rows_in_a_half(self, start, n) -> Value:
        """Rows ``start .. start + n - 1`` (modulo the SRAM) lie in one half (or ``n = 0``)."""
        start = Value.cast(start)[:self.row_bits - 1]
        return (n == 0) | (start + n <= self.cfg.vector_sram_rows // 2)

    def _rows_avoid(self, start, n, half) -> Value:
        """Rows ``start .. start + n - 1`` (modulo the SRAM) all lie in the half other than
        ``half`` (or ``n = 0``)."""
        return (n == 0) | ((self._half(Value.cast(start)[:self.row_bits]) != half) &
                           self._rows_in_a_half(start, n))

    def _named_rows_avoid(self, half) -> Value:
        """The running instruction's Vector SRAM operands (the rows the ISA table names for it)
        all lie outside ``half``."""
        dp = self.dp
        n = Mux(self._in("EXECUTE"), dp.n_items_next, dp.n_items)
        row = {name: self._half(Value.cast(reg)[:self.row_bits]) != half
               for name, reg in (("g1", dp.g1), ("g2", dp.g2), ("g3", dp.g3), ("gd", dp.g_rd))}
        cases = [
            (_REDUCE_OPS, self._rows_avoid(dp.g1, n, half)),
            (_EW_OPS, self._rows_avoid(dp.g1, n, half) & self._rows_avoid(dp.g_rd, n, half)),
            (("S_MAP_V_FP", "V_CMP_EQ_INT"), row["gd"]),
            (("V_TOPK_MASK",), row["g1"] & row["g2"] & row["gd"]),
            (("V_SELECT_INT",), row["g3"]),
            (("H_STORE_V",), row["g1"]),
        ]
        ok = 1
        for ops, avoid in cases:
            ok = Mux(self._op(*ops), avoid, ok)
        return ok

    def _prefetch(self) -> None:
        m, seq, dp, env, cfg = self.m, self.seq, self.dp, self.env, self.cfg
        self.row_bits = exact_log2(cfg.vector_sram_rows)
        self._elementwise_invariants()
        self._reduce_invariants()
        cmd = seq.dma_cmd.payload
        # The prefetch in flight (taken, the dequantiser not yet idle) and the half it writes;
        # the last prefetch no H_WAIT has waited for, and its half.
        inflight, inflight_half = Signal(name="pf_inflight"), Signal(name="pf_half")
        unwaited, unwaited_half = Signal(name="pf_unwaited"), Signal(name="pf_unwaited_half")
        with m.If(~seq.dma_busy):
            m.d.sync += inflight.eq(0)
        with m.If(dp.done & self._op("H_WAIT")):
            m.d.sync += unwaited.eq(0)
        with m.If(env.pf_take & (cmd.count != 0)):
            m.d.sync += [inflight.eq(1), inflight_half.eq(self._half(cmd.row)),
                         unwaited.eq(1), unwaited_half.eq(self._half(cmd.row))]

        # The program's discipline (assumed): a prefetch fills rows of one half, and until an
        # H_WAIT follows it no instruction names a row of that half.
        with m.If(self._in("EXECUTE") & self._op("H_PREFETCH_V")):
            rows = (dp.g1 + (cfg.vlen - 1)) >> exact_log2(cfg.vlen)
            m.d.comb += Assume(self._rows_in_a_half(dp.g_rd, rows))
        with m.If(dp.running & unwaited):
            m.d.comb += Assume(self._named_rows_avoid(unwaited_half))

        # The property: while a prefetch writes a half, the sequencer neither reads nor writes
        # a row of it.
        with m.If(inflight):
            with m.If(seq.vs_rd_en):
                m.d.comb += Assert(self._half(seq.vs_rd_row) != inflight_half)
            with m.If(seq.vs_wr_en):
                m.d.comb += Assert(self._half(seq.vs_wr_row) != inflight_half)

        # Invariants: a prefetch in flight has not been waited for; an elementwise instruction
        # writes its rows in order.
        with m.If(inflight):
            m.d.comb += [Assert(unwaited), Assert(unwaited_half == inflight_half)]
        with m.If(env.pf_started):
            m.d.comb += Assert(inflight)
        with m.If(self._in("ELEMENTWISE")):
            m.d.comb += Assert(dp.wr_row == (dp.g_rd + dp.retired)[:self.row_bits])


def sequencer_property(name: str, cfg, doc: str, checks: Sequence[str],
                       mode: str = "prove", depth: int = 4,
                       make: Callable | None = None) -> Property:
    """A property of ``Sequencer(cfg)`` (or ``make(cfg)``): the stream protocol of its ports
    (:func:`memwall.formal.stream_protocol`) under the neighbours' contracts, and the
    ``checks`` (:data:`SEQUENCER_CHECKS`)."""
    from memwall.hdl.dplena.sequencer import Sequencer

    unknown = set(checks) - set(SEQUENCER_CHECKS)
    if unknown:
        raise ValueError(f"unknown sequencer checks {sorted(unknown)}; allowed: "
                         f"{', '.join(SEQUENCER_CHECKS)}")
    made = []

    def build():
        made.append(seq := (make or Sequencer)(cfg))
        return seq

    def harness(m: Module, fragment: Fragment) -> None:
        _Checks(m, made[-1], fragment, checks)

    return stream_protocol(name, build, doc, mode, depth, harness)

