"""Decoder/sequencer of the d-PLENA sampling core, with its scalar memories and scalar units.

The instruction word is :data:`~memwall.golden.dplena.isa.INSTR_LAYOUT`; what each instruction does
is the table in :mod:`memwall.golden.dplena.isa`. Control is one ``m.FSM``:

* ``IDLE`` -- not running; the host may write the instruction memory and INT SRAM. ``start``
  reads address 0.
* ``FETCH`` -- after a start or a taken branch: the instruction read goes to the instruction
  register (one cycle).
* ``EXECUTE`` -- the first cycle of every instruction. Scalar ALU/FP/branch instructions,
  stores and prefetch commands complete here (one a cycle); a multi-cycle instruction does its
  first step and moves to its own states, which return to ``EXECUTE`` when it completes.
* per instruction: ``LOAD_INT``; ``SCALAR_ARITH`` and ``SCALAR_WRITE`` (S_ADD_F, S_MUL_F,
  S_SUB_BF on pipelined blocks: wait for the result, register it, write it); ``SCALAR_FP``
  (wait for the FP unit); ``REDUCE`` and ``ELEMENTWISE`` (a Vector SRAM row a cycle into the
  unit, then the result); ``MAP_READ``/``MAP_WRITE`` (S_MAP_V_FP, V_CMP_EQ_INT); ``TOPK_*``;
  ``SELECT_*``; ``STORE_INT_*``; ``STORE_V_*``.

Instructions execute from an instruction register, and the memory reads the next instruction
while one runs, so straight-line code runs one instruction a cycle; a start or a taken branch
costs one FETCH cycle. Exact cycle costs:
:mod:`memwall.golden.dplena.model`.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, exact_log2

from memwall.families.dplena.config import DplenaConfig
from memwall.golden.dplena.isa import INSTR_LAYOUT, NUM_FP, NUM_GP, WORD_BITS, Op
from memwall.hdl.common.fp import FpAdd, FpMul, bf16_greater
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.dplena.dequant import dequant_cmd_layout
from memwall.hdl.dplena.elementwise import EW_CMD, EwOp, ScalarFpUnit, ScalarOp
from memwall.hdl.dplena.reduction import RESULT_LAYOUT, ReduceOp, reduce_cmd_layout
from memwall.hdl.dplena.select import MaskedSelectUnit
from memwall.hdl.dplena.topk import TopkMaskUnit

__all__ = ["Sequencer"]

BF16_ONE = 0x3F80

#: instructions whose element count ``gs2`` covers ``ceil(gs2 / VLEN)`` Vector SRAM rows
_VECTOR_OPS = (Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX, Op.V_SUB_VF, Op.V_EXP_V)


class Sequencer(wiring.Component):
    """Decoder/sequencer of the sampling core, with its scalar memories and scalar units.

    One instruction per cycle for scalar ALU/FP/branch instructions; vector instructions stream
    one row per cycle after a cycle of set-up and end when their last result is written;
    prefetches run in the dequantiser while the program continues (see the module docstring).

    Parameters
    ----------
    cfg : DplenaConfig

    Attributes
    ----------
    host_we, host_imem, host_addr, host_wdata, start : In
    busy : Out(1)
    cycles : Out(32)
    out : Out(stream.Signature(32))
        The token-ID output FIFO.
    dma_cmd : Out(stream.Signature(StructLayout(count, bf16, row)))
    dma_busy : In(1)
    vs_rd_en, vs_rd_row, vs_wr_en, vs_wr_row, vs_wr_stage : Out
        Vector SRAM access (``vs_wr_stage``: write ``stage`` in lanes ``0..L-1``, +0 elsewhere,
        instead of the elementwise result).
    vs_rd_lo : In(ArrayLayout(16, L))
        Lanes ``0..L-1`` of the row read.
    stage : Out(ArrayLayout(16, L))
    red_i, red_o, ew_i, ew_o : streams to/from the reduction and elementwise units.
    """

    def __init__(self, cfg: DplenaConfig):
        self.cfg = cfg
        self.params = {"vlen": cfg.vlen, "block_len": cfg.block_len, "k_max": cfg.k_max,
                       "rows": cfg.vector_sram_rows, "fp_words": cfg.fp_sram_words,
                       "int_words": cfg.int_sram_words, "imem_words": cfg.imem_words,
                       "fifo_depth": cfg.out_fifo_depth, **cfg.stages.as_params()}
        self.row_bits = exact_log2(cfg.vector_sram_rows)
        lo = data.ArrayLayout(16, cfg.block_len)
        row = range(cfg.vector_sram_rows)
        super().__init__({
            "host_we": In(1), "host_imem": In(1), "host_addr": In(32),
            "host_wdata": In(WORD_BITS), "start": In(1),
            "busy": Out(1), "cycles": Out(32),
            "out": Out(stream.Signature(32)),
            "dma_cmd": Out(stream.Signature(dequant_cmd_layout(self.row_bits))),
            "dma_busy": In(1),
            "vs_rd_en": Out(1), "vs_rd_row": Out(row), "vs_rd_lo": In(lo),
            "vs_wr_en": Out(1), "vs_wr_row": Out(row), "vs_wr_stage": Out(1),
            "stage": Out(lo),
            "red_i": Out(stream.Signature(reduce_cmd_layout(cfg.vlen))),
            "red_o": In(stream.Signature(RESULT_LAYOUT)),
            "ew_i": Out(stream.Signature(EW_CMD)),
            "ew_o": In(stream.Signature(EW_CMD)),
        })

    def elaborate(self, platform):
        m = Module()
        # Kept for formal harnesses, which state properties over its registers
        # (memwall/families/dplena/properties_sequencer.py); no hardware depends on it.
        self.datapath = core = _Datapath(self, m)
        # Two actions run in every cycle of their instruction, whatever its state. The select
        # lane's write-back comes before the FSM (V_SELECT_INT's set-up zeroes `retired` over
        # it); the stage capture after it (over S_MAP_V_FP's clearing of the stage).
        with m.If(core.running & (core.op == Op.V_SELECT_INT)):
            core.select_retire()
        with m.FSM(init="IDLE") as fsm:
            with m.State("IDLE"):
                core.idle()
            with m.State("FETCH"):
                core.fetch()
            with m.State("EXECUTE"):
                core.execute()
            core.scalar_states()
            core.vector_states()
            core.l_element_states()
            core.topk_states()
            core.select_states()
            core.store_states()
        with m.If(core.running & ((core.op == Op.S_MAP_V_FP) | (core.op == Op.V_CMP_EQ_INT))):
            core.map_capture()
        m.d.comb += core.running.eq(~fsm.ongoing("IDLE"))
        return m


class _Datapath:
    """The sequencer's memories, units, registers and the actions of its FSM states."""

    def __init__(self, seq: Sequencer, m: Module):
        self.seq, self.m, self.cfg = seq, m, seq.cfg
        self._memories()
        self._units()
        self._registers()
        self._fetch()
        self._defaults()

    # -- structure ----------------------------------------------------------------------------
    def _memories(self) -> None:
        m, cfg, seq = self.m, self.cfg, self.seq
        m.submodules.imem = imem = Memory(shape=WORD_BITS, depth=cfg.imem_words, init=[])
        m.submodules.fp_sram = fp_sram = Memory(shape=16, depth=cfg.fp_sram_words, init=[])
        m.submodules.int_sram = int_sram = Memory(shape=32, depth=cfg.int_sram_words, init=[])
        self.imem_rd, self.imem_wr = imem.read_port(), imem.write_port()
        self.fp_rd, self.fp_wr = fp_sram.read_port(), fp_sram.write_port()
        self.int_rd, self.int_wr = int_sram.read_port(), int_sram.write_port()
        m.submodules.fifo = self.fifo = SyncFIFOBuffered(width=32, depth=cfg.out_fifo_depth)
        m.d.comb += [seq.out.valid.eq(self.fifo.r_rdy), seq.out.payload.eq(self.fifo.r_data),
                     self.fifo.r_en.eq(seq.out.ready)]

    def _units(self) -> None:
        cfg, st = self.cfg, self.cfg.stages
        self.sfp = ScalarFpUnit(1, st)
        self.topk = TopkMaskUnit(cfg.block_len, cfg.k_max)
        self.select = MaskedSelectUnit(1, width=32)
        self.add32, self.mul32 = FpAdd("fp32", st.add_fp32), FpMul("fp32", st.mul_fp32)
        self.sub16 = FpAdd("bf16", st.add_bf16)
        for name, unit in (("scalar_fp", self.sfp), ("topk", self.topk),
                           ("select", self.select), ("add_fp32", self.add32),
                           ("mul_fp32", self.mul32), ("sub_bf16", self.sub16)):
            unique_submodule(self.m, name, unit)
        # The scalar ops of the pipelined blocks: op -> (block, its result as an FP register).
        self.arith = {Op.S_ADD_F: (self.add32, self.add32.y),
                      Op.S_MUL_F: (self.mul32, self.mul32.y),
                      Op.S_SUB_BF: (self.sub16, Cat(Const(0, 16), self.sub16.y))}
        # Cycles left until the pipelined block of the running scalar op has its result, and
        # the operands it runs on.
        self.arith_wait = Signal(range(max(block.stages for block, _ in self.arith.values()) + 1))
        self.arith_a, self.arith_b = Signal(32), Signal(32)

    def _registers(self) -> None:
        m, cfg, seq = self.m, self.cfg, self.seq
        L = cfg.block_len
        self.running = Signal()               # the FSM is not in IDLE
        self.pc = Signal(range(cfg.imem_words))
        self.cycles = Signal(32)
        self.gp = Array(Signal(32, name=f"g{n}") for n in range(NUM_GP))
        self.fp = Array(Signal(32, name=f"f{n}") for n in range(NUM_FP))
        self._write_ports()
        self.stage = Array(Signal(16, name=f"stage{n}") for n in range(L))
        self.flags = Signal(L)
        m.d.comb += [seq.busy.eq(self.running), seq.cycles.eq(self.cycles),
                     seq.stage.eq(Cat(*self.stage))]
        with m.If(self.running):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        # Progress of a multi-cycle instruction: items issued and retired.
        self.issued, self.retired = Signal(32), Signal(32)
        # A row read issued last cycle: its SRAM data is valid now.
        self.p_valid, self.p_first, self.p_last = Signal(), Signal(), Signal()
        self.p_lanes = Signal(range(cfg.vlen + 1))
        self.p_index = Signal(range(max(L, 2)))
        self.select_a = Signal(32)
        # A word on its way to the output FIFO.
        self.pend_valid, self.pend_data = Signal(), Signal(32)
        m.d.comb += [self.fifo.w_en.eq(self.pend_valid), self.fifo.w_data.eq(self.pend_data)]
        with m.If(self.pend_valid & self.fifo.w_rdy):
            m.d.sync += self.pend_valid.eq(0)
        # A read issued now can land in `pend` next cycle.
        self.fifo_slot = ~self.pend_valid | self.fifo.w_rdy

    def _write_ports(self) -> None:
        """One write port per register file (at most one write per file in a cycle): an
        address, the data, and a decoded enable per register. Writing through ``Array``
        indexing instead gives every register a case per address, whose compares are
        redundant (logic no test can check)."""
        m = self.m
        self.gp_we, self.gp_wa, self.gp_wd = Signal(), Signal(range(NUM_GP)), Signal(32)
        self.fp_we, self.fp_wa, self.fp_wd = Signal(), Signal(range(NUM_FP)), Signal(32)
        for we, wa, wd, registers, first in ((self.gp_we, self.gp_wa, self.gp_wd, self.gp, 1),
                                             (self.fp_we, self.fp_wa, self.fp_wd, self.fp, 0)):
            for n in range(first, len(registers)):        # g0 reads 0: never written
                with m.If(we & (wa == n)):
                    m.d.sync += registers[n].eq(wd)

    def _fetch(self) -> None:
        """The instruction register holds the instruction at ``pc``; the read port already
        holds the one after it (its address went out last cycle). ``done`` moves that one into
        the register; a taken branch (``jump``) reads its target instead, and the FETCH state
        loads it. Decoding from a register rather than from the macro's output leaves the
        execute cycle the macro's clock-to-output time."""
        m, seq = self.m, self.seq
        self.ir = Signal(WORD_BITS)
        self.instr = instr = INSTR_LAYOUT(self.ir)
        self.op, self.imm = instr.opcode, instr.imm
        gp, fp = self.gp, self.fp
        self.g_rd, self.g1, self.g2, self.g3 = (gp[instr.rd], gp[instr.rs1], gp[instr.rs2],
                                                gp[instr.rs3])
        self.f_rd, self.f1, self.f2, self.f3 = (fp[instr.rd], fp[instr.rs1], fp[instr.rs2],
                                                fp[instr.rs3])
        self.done = Signal()                  # the instruction at pc completes this cycle
        self.jump = Signal()                  # ... and branches to `target`
        self.target = Signal.like(self.pc)
        m.d.comb += self.imem_rd.addr.eq(Mux(self.jump, self.target,
                                             Mux(self.done, self.pc + 2, self.pc + 1)))
        with m.If(self.done):
            with m.If(self.jump):
                m.d.sync += self.pc.eq(self.target)
            with m.Else():
                m.d.sync += [self.pc.eq(self.pc + 1), self.ir.eq(self.imem_rd.data)]
        # Host writes, only while idle.
        host = seq.host_we & ~self.running
        self.host_int = host & ~seq.host_imem
        m.d.comb += [self.imem_wr.en.eq(host & seq.host_imem),
                     self.imem_wr.addr.eq(seq.host_addr),
                     self.imem_wr.data.eq(seq.host_wdata)]

    def _defaults(self) -> None:
        """What every unit and memory port sees unless a state says otherwise."""
        m, cfg, seq = self.m, self.cfg, self.seq
        L, vlen, vshift = cfg.block_len, cfg.vlen, exact_log2(cfg.vlen)
        op, imm, f1, f2, g1, g2 = self.op, self.imm, self.f1, self.f2, self.g1, self.g2
        elem = self.issued[:bits_for(L - 1)]
        # An instruction's size, set in its EXECUTE cycle (no later state recomputes it from
        # the decode): rows of a vector operand (g2 elements), or the immediate element count;
        # the elements of a vector operand not issued yet; the next Vector SRAM row to write.
        vector_op = 0
        for vop in _VECTOR_OPS:
            vector_op = vector_op | (op == vop)
        self.n_items_next = Mux(vector_op, (g2 + (vlen - 1)) >> vshift, imm)
        self.n_items, self.left = Signal(32), Signal(32)
        # n_items - 1, registered with it: "element i is the last" is then an equality of two
        # registers, not an increment and a compare (the top-k unit's `last` input was the
        # critical path of dplena2048 at 1 GHz). 33 bits, so n_items = 0 matches no count.
        # Its own carry chain beside n_items_next's, not one after it (the two in a row missed
        # 1 GHz on dplena32): ceil(g2 / vlen) - 1 = floor((g2 - 1) / vlen), -1 for g2 = 0.
        self.n_items_m1 = Signal(33)
        self.n_items_m1_next = Mux(vector_op, (Cat(g2, Const(0, 1)).as_signed() - 1) >> vshift,
                                   imm - 1)
        self.wr_row = Signal(range(cfg.vector_sram_rows))
        self.lo_nonzero = Cat(lane != 0 for lane in seq.vs_rd_lo)   # a 0/1 mask row as bits

        # The units' commands come from registers set when a vector instruction starts
        # (start_vector), not from the decode of the instruction memory's output: the units
        # then have a whole cycle for their first stage.
        red_cmd, ew_cmd = seq.red_i.payload, seq.ew_i.payload
        self.red_op, self.red_flags = Signal(ReduceOp), Signal(2)
        self.ew_op, self.ew_scalar = Signal(EwOp), Signal(16)
        m.d.comb += [seq.red_o.ready.eq(1), seq.ew_o.ready.eq(1),
                     seq.red_i.valid.eq(0), seq.ew_i.valid.eq(0),
                     red_cmd.op.eq(self.red_op),
                     red_cmd.count.eq(self.p_lanes),
                     red_cmd.first.eq(self.p_first & self.red_flags[0]),
                     red_cmd.last.eq(self.p_last & self.red_flags[1]),
                     ew_cmd.scalar.eq(self.ew_scalar), ew_cmd.tag.eq(0),
                     ew_cmd.op.eq(self.ew_op), ew_cmd.scalar_b.eq(1)]
        self.red_op_next = Signal(ReduceOp)
        with m.Switch(op):
            with m.Case(Op.V_RED_MAX):
                m.d.comb += self.red_op_next.eq(ReduceOp.MAX)
            with m.Case(Op.V_RED_SUM):
                m.d.comb += self.red_op_next.eq(ReduceOp.SUM)
            with m.Default():
                m.d.comb += self.red_op_next.eq(ReduceOp.MAX_IDX)

        # Scalar FP datapath (combinational units, and the pipelined FP unit).
        add32, mul32, sub16, sfp = self.add32, self.mul32, self.sub16, self.sfp
        # A pipelined block starts from operand registers set in EXECUTE, and its stages load
        # while its instruction runs: the result is ready ``stages + 1`` cycles after EXECUTE.
        x1, x2 = f1, f2
        if any(block.stages for block, _ in self.arith.values()):
            x1, x2 = self.arith_a, self.arith_b
        for arith_op, (block, _) in self.arith.items():
            if block.stages:
                m.d.comb += block.load.eq((self.running & (op == arith_op))
                                          .replicate(block.stages))
        ins = {block: (x1, x2) if block.stages else (f1, f2)
               for block in (add32, mul32, sub16)}
        m.d.comb += [add32.a.eq(ins[add32][0]), add32.b.eq(ins[add32][1]), add32.sub.eq(0),
                     mul32.a.eq(ins[mul32][0]), mul32.b.eq(ins[mul32][1]),
                     sub16.a.eq(ins[sub16][0][16:]), sub16.b.eq(ins[sub16][1][16:]),
                     sub16.sub.eq(1),
                     sfp.o.ready.eq(1), sfp.a.eq(Mux(op == Op.S_CVT_BF, f1, f1[16:]))]
        with m.Switch(op):
            with m.Case(Op.S_EXP_BF):
                m.d.comb += sfp.i.payload.op.eq(ScalarOp.EXP)
            with m.Case(Op.S_RECIP_BF):
                m.d.comb += sfp.i.payload.op.eq(ScalarOp.RECIP)
            with m.Default():
                m.d.comb += sfp.i.payload.op.eq(ScalarOp.TO_BF16)

        # Memory ports: scalar memories read element `issued` of operand g1; the INT SRAM
        # write port belongs to the host while idle.
        m.d.comb += [self.fp_rd.addr.eq(g1 + self.issued), self.int_rd.addr.eq(g1 + self.issued)]
        self.int_wr_en, self.int_wr_addr, self.int_wr_data = Signal(), Signal(32), Signal(32)
        running = self.running
        m.d.comb += [
            self.int_wr.en.eq(Mux(running, self.int_wr_en, self.host_int)),
            self.int_wr.addr.eq(Mux(running, self.int_wr_addr, seq.host_addr)),
            self.int_wr.data.eq(Mux(running, self.int_wr_data, seq.host_wdata[:32]))]

        topk, select = self.topk, self.select
        topk_in = topk.i.payload
        # Every top-k input field is a register: the unit's comparators and slot muxes take
        # most of a 1 GHz cycle from its input (dplena32: 670 ps), so an element index mux or
        # a GP-register read before them missed the clock. TOPK_STREAM shifts the row and its
        # flags down one element a transfer; TOPK_FLAGS latches the clamped k.
        self.topk_k = Signal(topk.k_width)
        m.d.comb += [topk_in.value.eq(self.stage[0]),
                     topk_in.valid.eq(self.flags[0]),
                     topk_in.k.eq(self.topk_k),
                     topk_in.last.eq(self.issued == self.n_items_m1),
                     topk.o.ready.eq(0)]
        m.d.comb += [select.o.ready.eq(1), select.i.payload.eq(0),
                     select.mask.eq(self.flags.bit_select(elem, 1)),
                     select.a.eq(self.select_a), select.b.eq(self.int_rd.data)]

    # -- helpers ----------------------------------------------------------------------------------
    def set_gp(self, index, value) -> None:
        """Write ``value`` to GP register ``index`` at the end of this cycle."""
        self.m.d.comb += [self.gp_we.eq(1), self.gp_wa.eq(index), self.gp_wd.eq(value)]

    def set_f_rd(self, value) -> None:
        """Write ``value`` to the instruction's FP register ``rd`` at the end of this cycle."""
        self.m.d.comb += [self.fp_we.eq(1), self.fp_wa.eq(self.instr.rd), self.fp_wd.eq(value)]

    def complete(self) -> None:
        """The instruction completes this cycle: fetch the next one."""
        self.m.d.comb += self.done.eq(1)
        self.m.next = "EXECUTE"

    def read_row(self, row) -> None:
        """Read a Vector SRAM row: its lanes 0..L-1 are on ``vs_rd_lo`` next cycle."""
        self.m.d.comb += [self.seq.vs_rd_en.eq(1), self.seq.vs_rd_row.eq(row)]

    def write_stage_row(self) -> None:
        """Write the stage (lanes 0..L-1, +0 above) to row ``gd``; the instruction completes."""
        # wr_row: g_rd as EXECUTE latched it, not the register-file read again (its mux, from
        # the instruction register, went on through the bank arbiter into the dequantiser's
        # lane enables: dplena64 missed 1 GHz by 15 ps on it).
        self.m.d.comb += [self.seq.vs_wr_en.eq(1), self.seq.vs_wr_row.eq(self.wr_row),
                          self.seq.vs_wr_stage.eq(1)]
        self.complete()

    def start_vector(self, state: str) -> None:
        """Set up a vector instruction: nothing issued or retired yet; its unit command."""
        self.m.d.sync += [self.issued.eq(0), self.retired.eq(0), self.p_valid.eq(0),
                          self.red_op.eq(self.red_op_next), self.red_flags.eq(self.imm[:2]),
                          self.ew_op.eq(Mux(self.op == Op.V_EXP_V, EwOp.EXP, EwOp.SUB)),
                          self.ew_scalar.eq(self.f3[16:])]
        self.m.next = state

    def issue_rows(self) -> None:
        """Read one row per cycle; the unit sees it, with its command, the next cycle."""
        m, seq, issued, n = self.m, self.seq, self.issued, self.n_items
        vlen = self.cfg.vlen
        with m.If(issued != n):
            m.d.comb += [seq.vs_rd_en.eq(1), seq.vs_rd_row.eq(self.g1 + issued)]
            m.d.sync += [self.p_valid.eq(1), self.p_first.eq(issued == 0),
                         self.p_last.eq(issued == self.n_items_m1),
                         self.p_lanes.eq(Mux(self.left >= vlen, vlen, self.left)),
                         self.left.eq(self.left - vlen), issued.eq(issued + 1)]
        with m.Else():
            m.d.sync += self.p_valid.eq(0)

    # -- states -----------------------------------------------------------------------------------
    def idle(self) -> None:
        m = self.m
        with m.If(self.seq.start):
            m.d.sync += [self.pc.eq(0), self.cycles.eq(0)]
            m.d.comb += self.imem_rd.addr.eq(0)
            m.next = "FETCH"

    def fetch(self) -> None:
        """The cycle after a start or a taken branch: the read port holds the instruction at
        ``pc``; it goes to the instruction register."""
        self.m.d.sync += self.ir.eq(self.imem_rd.data)
        self.m.next = "EXECUTE"

    def execute(self) -> None:
        """The first cycle of every instruction."""
        m, seq = self.m, self.seq
        m.d.sync += [self.n_items.eq(self.n_items_next), self.left.eq(self.g2),
                     self.n_items_m1.eq(self.n_items_m1_next), self.wr_row.eq(self.g_rd)]
        op, imm, g_rd, g1, g2 = self.op, self.imm, self.g_rd, self.g1, self.g2
        f_rd, f1 = self.f_rd, self.f1
        instr = self.instr
        with m.Switch(op):
            # ----- control and integer -----
            with m.Case(Op.NOP):
                m.d.comb += self.done.eq(1)
            with m.Case(Op.HALT):
                m.next = "IDLE"
            with m.Case(Op.ADDI):
                self.set_gp(instr.rd, g1 + imm)
                m.d.comb += self.done.eq(1)
            with m.Case(Op.ADD):
                self.set_gp(instr.rd, g1 + g2)
                m.d.comb += self.done.eq(1)
            with m.Case(Op.SUB):
                self.set_gp(instr.rd, g1 - g2)
                m.d.comb += self.done.eq(1)
            with m.Case(Op.BNE, Op.BEQ):
                taken = (g1 != g2) ^ (op == Op.BEQ)
                m.d.comb += [self.done.eq(1), self.jump.eq(taken),
                             self.target.eq(self.pc + imm.as_signed())]
                with m.If(taken):
                    m.next = "FETCH"
            with m.Case(Op.S_LD_INT):
                m.d.comb += self.int_rd.addr.eq(g1 + imm)
                m.next = "LOAD_INT"
            with m.Case(Op.S_ST_INT):
                m.d.comb += [self.int_wr_en.eq(1), self.int_wr_addr.eq(g1 + imm),
                             self.int_wr_data.eq(g_rd), self.done.eq(1)]
            with m.Case(Op.S_ST_FP):
                m.d.comb += [self.fp_wr.en.eq(1), self.fp_wr.addr.eq(g1 + imm),
                             self.fp_wr.data.eq(f_rd[16:]), self.done.eq(1)]
            # ----- scalar FP -----
            with m.Case(Op.S_LI_F):
                self.set_f_rd(imm)
                m.d.comb += self.done.eq(1)
            with m.Case(Op.S_MOV_F):
                self.set_f_rd(f1)
                m.d.comb += self.done.eq(1)
            for arith_op, (block, result) in self.arith.items():
                with m.Case(arith_op):
                    if block.stages:      # register the operands, wait for the block
                        m.d.sync += [self.arith_wait.eq(block.stages),
                                     self.arith_a.eq(f1), self.arith_b.eq(self.f2)]
                        m.next = "SCALAR_ARITH"
                    else:
                        self.set_f_rd(result)
                        m.d.comb += self.done.eq(1)
            with m.Case(Op.S_MAX_IDX_F):
                with m.If(bf16_greater(f1[16:], f_rd[16:])):
                    self.set_f_rd(f1)
                    self.set_gp(instr.rs3, g2)
                m.d.comb += self.done.eq(1)
            with m.Case(Op.S_EXP_BF, Op.S_RECIP_BF, Op.S_CVT_BF):
                m.d.comb += self.sfp.i.valid.eq(1)
                m.next = "SCALAR_FP"
            # ----- prefetch -----
            with m.Case(Op.H_PREFETCH_V):
                m.d.comb += [seq.dma_cmd.valid.eq(~seq.dma_busy),
                             seq.dma_cmd.payload.count.eq(g1),
                             seq.dma_cmd.payload.row.eq(g_rd),
                             seq.dma_cmd.payload.bf16.eq(imm[0]),
                             self.done.eq(seq.dma_cmd.valid & seq.dma_cmd.ready)]
            with m.Case(Op.H_WAIT):
                m.d.comb += self.done.eq(~seq.dma_busy)
            # ----- vector -----
            with m.Case(Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX):
                self.start_vector("REDUCE")
            with m.Case(Op.V_SUB_VF, Op.V_EXP_V):
                self.start_vector("ELEMENTWISE")
            # ----- L-element instructions -----
            with m.Case(Op.S_MAP_V_FP, Op.V_CMP_EQ_INT):
                m.d.sync += [Cat(*self.stage).eq(0), self.issued.eq(0), self.p_valid.eq(0)]
                m.next = "MAP_READ"
            with m.Case(Op.V_TOPK_MASK):
                self.read_row(self.g2)                   # the valid row
                m.d.sync += self.issued.eq(0)
                m.next = "TOPK_FLAGS"
            with m.Case(Op.V_SELECT_INT):
                self.read_row(self.g3)                   # the mask row
                m.d.sync += [self.issued.eq(0), self.retired.eq(0)]
                m.next = "SELECT_FLAGS"
            with m.Case(Op.H_STORE_INT):
                m.d.sync += self.issued.eq(0)
                m.next = "STORE_INT_NEXT"
            with m.Case(Op.H_STORE_V):
                self.read_row(g1)
                m.d.sync += self.issued.eq(0)
                m.next = "STORE_V_STAGE"
            with m.Default():   # undefined opcode: stop rather than run wild
                m.next = "IDLE"

    def scalar_states(self) -> None:
        m = self.m
        with m.State("LOAD_INT"):
            m.d.comb += self.int_rd.addr.eq(self.g1 + self.imm)
            self.set_gp(self.instr.rd, self.int_rd.data)
            self.complete()
        pipelined = {op: result for op, (block, result) in self.arith.items() if block.stages}
        if pipelined:
            # Each block's result goes to a register of its own (no mux in front) before the
            # FP register file, so a block's last stage does not share a cycle with the
            # register file's write mux.
            results = {op: Signal(32, name=f"{op.name.lower()}_result")
                       for op in pipelined}
            with m.State("SCALAR_ARITH"):
                with m.If(self.arith_wait == 0):
                    for arith_op, result in pipelined.items():
                        with m.If(self.op == arith_op):
                            m.d.sync += results[arith_op].eq(result)
                    m.next = "SCALAR_WRITE"
                with m.Else():
                    m.d.sync += self.arith_wait.eq(self.arith_wait - 1)
            with m.State("SCALAR_WRITE"):
                with m.Switch(self.op):
                    for arith_op, reg in results.items():
                        with m.Case(arith_op):
                            self.set_f_rd(reg)
                self.complete()
        with m.State("SCALAR_FP"):
            with m.If(self.sfp.o.valid):
                self.set_f_rd(Cat(Const(0, 16), self.sfp.y))
                self.complete()

    def vector_states(self) -> None:
        """V_RED_* and V_SUB_VF/V_EXP_V: a row a cycle into the unit; finish on its result."""
        m, seq = self.m, self.seq
        with m.State("REDUCE"):
            self.issue_rows()
            m.d.comb += seq.red_i.valid.eq(self.p_valid)
            with m.If(self.imm[1]):      # LAST: wait for the result
                with m.If(seq.red_o.valid):
                    self.set_f_rd(seq.red_o.payload.value)
                    with m.If(self.op == Op.V_RED_MAX_IDX):
                        self.set_gp(self.instr.rs3, seq.red_o.payload.index)
                    self.complete()
            with m.Elif(self.p_valid & self.p_last):
                self.complete()
        with m.State("ELEMENTWISE"):
            self.issue_rows()
            m.d.comb += seq.ew_i.valid.eq(self.p_valid)
            with m.If(seq.ew_o.valid):
                m.d.comb += [seq.vs_wr_en.eq(1), seq.vs_wr_row.eq(self.wr_row)]
                m.d.sync += [self.retired.eq(self.retired + 1), self.wr_row.eq(self.wr_row + 1)]
                with m.If(self.retired == self.n_items_m1):
                    self.complete()

    def map_capture(self) -> None:
        """S_MAP_V_FP / V_CMP_EQ_INT, any state: the element read last cycle goes to its lane."""
        m = self.m
        with m.If(self.p_valid):
            value = Mux(self.op == Op.S_MAP_V_FP, self.fp_rd.data,
                        Mux(self.int_rd.data == self.g2, BF16_ONE, 0))
            m.d.sync += self.stage[self.p_index].eq(value)

    def l_element_states(self) -> None:
        """S_MAP_V_FP, V_CMP_EQ_INT: read element ``issued`` a cycle, then write the row."""
        m = self.m
        with m.State("MAP_READ"):
            with m.If(self.issued != self.n_items):
                m.d.sync += [self.issued.eq(self.issued + 1), self.p_valid.eq(1),
                             self.p_index.eq(self.issued)]
            with m.Else():
                m.d.sync += self.p_valid.eq(0)
                m.next = "MAP_WRITE"
        with m.State("MAP_WRITE"):
            self.write_stage_row()

    def topk_states(self) -> None:
        """V_TOPK_MASK: latch the valid flags and the confidence row, stream them to the top-k
        unit, then write its mask as a 1.0/+0 row."""
        m, seq, topk, L = self.m, self.seq, self.topk, self.cfg.block_len
        with m.State("TOPK_FLAGS"):
            g3 = self.g3
            m.d.sync += [self.flags.eq(self.lo_nonzero),
                         self.topk_k.eq(Mux(g3 > self.cfg.k_max, self.cfg.k_max, g3))]
            self.read_row(self.g1)                       # the confidence row
            m.next = "TOPK_STAGE"
        with m.State("TOPK_STAGE"):
            m.d.sync += Cat(*self.stage).eq(seq.vs_rd_lo)
            m.next = "TOPK_STREAM"
        with m.State("TOPK_STREAM"):
            m.d.comb += topk.i.valid.eq(1)
            with m.If(topk.i.ready):
                m.d.sync += [self.issued.eq(self.issued + 1),
                             Cat(*self.stage).eq(Cat(*self.stage[1:], Const(0, 16))),
                             self.flags.eq(self.flags >> 1)]
                with m.If(self.issued == self.n_items_m1):
                    m.next = "TOPK_MASK"
        with m.State("TOPK_MASK"):
            m.d.comb += topk.o.ready.eq(1)
            with m.If(topk.o.valid):
                m.d.sync += [self.stage[n].eq(Mux(topk.o.payload[n], BF16_ONE, 0))
                             for n in range(L)]
                m.next = "TOPK_WRITE"
        with m.State("TOPK_WRITE"):
            self.write_stage_row()

    def select_retire(self) -> None:
        """V_SELECT_INT, any state: the select lane's result of an element goes to INT SRAM."""
        m, select = self.m, self.select
        with m.If(select.o.valid):
            m.d.comb += [self.int_wr_en.eq(1), self.int_wr_addr.eq(self.g_rd + self.retired),
                         self.int_wr_data.eq(select.y)]
            m.d.sync += self.retired.eq(self.retired + 1)

    def select_states(self) -> None:
        """V_SELECT_INT: latch the mask flags; then per element (INT SRAM has one read port)
        read a, latch a and read b, select. The select lane writes back one cycle later,
        overlapping the next element's read of a."""
        m, select = self.m, self.select
        with m.State("SELECT_FLAGS"):
            m.d.sync += self.flags.eq(self.lo_nonzero)
            m.next = "SELECT_READ_A"
        with m.State("SELECT_READ_A"):                   # int_rd reads g1 + issued
            with m.If(self.issued != self.n_items):
                m.next = "SELECT_READ_B"
            with m.Elif(select.o.valid & (self.retired == self.n_items_m1)):
                self.complete()
        with m.State("SELECT_READ_B"):
            m.d.comb += self.int_rd.addr.eq(self.g2 + self.issued)
            m.d.sync += self.select_a.eq(self.int_rd.data)
            m.next = "SELECT_ISSUE"
        with m.State("SELECT_ISSUE"):
            m.d.comb += select.i.valid.eq(1)
            m.d.sync += self.issued.eq(self.issued + 1)
            m.next = "SELECT_READ_A"

    def store_states(self) -> None:
        """H_STORE_INT (two cycles a word: read, then hand it to the FIFO register, as the FIFO
        may be full and the read port does not hold its data) and H_STORE_V."""
        m, seq, L = self.m, self.seq, self.cfg.block_len
        issued, n = self.issued, self.n_items
        with m.State("STORE_INT_NEXT"):                  # int_rd reads g1 + issued
            with m.If(issued == n):
                self.complete()
            with m.Elif(self.fifo_slot):
                m.next = "STORE_INT_PUSH"
        with m.State("STORE_INT_PUSH"):
            m.d.sync += [self.pend_valid.eq(1), self.pend_data.eq(self.int_rd.data),
                         issued.eq(issued + 1)]
            m.next = "STORE_INT_NEXT"
        with m.State("STORE_V_STAGE"):
            m.d.sync += Cat(*self.stage).eq(seq.vs_rd_lo)
            m.next = "STORE_V_PUSH"
        with m.State("STORE_V_PUSH"):
            with m.If(issued == n):
                self.complete()
            with m.Elif(self.fifo_slot):
                m.d.sync += [self.pend_valid.eq(1),
                             self.pend_data.eq(self.stage[issued[:bits_for(L - 1)]]),
                             issued.eq(issued + 1)]
