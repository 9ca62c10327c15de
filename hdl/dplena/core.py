"""The d-PLENA sampling core (paper Fig. 3): sequencer, memories, MXFP8 streaming and the units.

``dplena_core`` runs Algorithm 2 (one diffusion sampling step over a block) from its
instruction memory. It is a structural top, so no VLEN-wide vector passes through an Amaranth
conversion:

* :class:`Sequencer` -- decoder/sequencer (ISA in :mod:`memwall.hdl.dplena.isa`): instruction
  memory, GP and FP register files, FP SRAM, INT SRAM, the token-ID output FIFO, the scalar FP
  unit, the top-k unit and the INT select lane. It drives the vector side only with addresses
  and commands; of a Vector SRAM row it sees lanes ``0..L-1`` (the L-element vectors of phases
  3-4).
* ``vector_sram``: ``VLEN / W`` banks (:class:`VectorSramBank`) of ``W = hbm_bytes_per_cycle``
  lanes. Each bank has two halves (row MSB) with one read and one write port each, so the
  prefetch of one buffer and the in-place writes to the other proceed in the same cycle; a
  same-half collision stalls the prefetch for that cycle.
* :class:`~memwall.hdl.dplena.dequant.Dequantiser` between the HBM beat port and the banks.
* :class:`~memwall.hdl.dplena.reduction.ReductionUnit` and
  :class:`~memwall.hdl.dplena.elementwise.ElementwiseUnit` reading rows, the latter writing back.

Host interface: while ``busy`` is low, ``host_we`` writes ``host_wdata`` to the instruction
memory (``host_imem = 1``) or to INT SRAM (``host_imem = 0``, low 32 bits) at ``host_addr``;
``start`` runs the program from address 0 until HALT; ``cycles`` counts the cycles run; results
leave on the ``out`` stream (32-bit words, the order the program pushes them).
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, exact_log2
from memwall.hdl.common.fp import FpAdd, FpMul, bf16_key
from memwall.hdl.common.netlist import Design, Netlist, unique_submodule

from .config import DplenaConfig
from .dequant import Dequantiser, dequant_cmd_layout
from .elementwise import EW_CMD, ElementwiseUnit, EwOp, ScalarFpUnit, ScalarOp
from .isa import FIELDS, NUM_FP, NUM_GP, WORD_BITS, Op
from .reduction import RESULT_LAYOUT, ReduceOp, ReductionUnit, reduce_cmd_layout
from .select import MaskedSelectUnit
from .topk import TopkMaskUnit

__all__ = ["TOP_NAME", "VectorSramBank", "Sequencer", "DplenaCore", "build_top"]

TOP_NAME = "dplena_core"
BF16_ONE = 0x3F80


class VectorSramBank(wiring.Component):
    """``lanes`` BF16 lanes of every Vector SRAM row, in two halves selected by the row MSB.

    Each half is a 1R1W memory (one macro). Writes: the vector path (``vec_*``; ``stage_sel``
    picks ``stage_data`` instead of ``vec_data``) and the prefetch path (``dma_*``) may write in
    the same cycle if they address different halves; the parent never lets them collide.
    Reads are synchronous: ``rd_data`` is valid the cycle after ``rd_en``.

    Parameters
    ----------
    lanes : int
        Lanes per bank (``W``).
    rows : int
        Rows of the whole SRAM (power of two >= 2).
    """

    def __init__(self, lanes: int, rows: int):
        self.lanes, self.rows = lanes, rows
        self.params = {"lanes": lanes, "rows": rows}
        row = range(rows)
        vec = data.ArrayLayout(16, lanes)
        super().__init__({
            "rd_en": In(1), "rd_row": In(row), "rd_data": Out(vec),
            "vec_we": In(1), "vec_row": In(row), "vec_data": In(vec),
            "stage_sel": In(1), "stage_data": In(vec),
            "dma_we": In(1), "dma_row": In(row), "dma_data": In(vec),
        })

    def elaborate(self, platform):
        m = Module()
        half_rows = self.rows // 2
        local = exact_log2(half_rows)
        read_half = Signal()
        with m.If(self.rd_en):
            m.d.sync += read_half.eq(self.rd_row[local])
        vec_data = Mux(self.stage_sel, self.stage_data.as_value(), self.vec_data.as_value())
        halves = []
        for h in range(2):
            mem = Memory(shape=16 * self.lanes, depth=half_rows, init=[])
            m.submodules[f"half{h}"] = mem
            rd, wr = mem.read_port(), mem.write_port()
            vec_here = self.vec_we & (self.vec_row[local] == h)
            m.d.comb += [
                rd.en.eq(self.rd_en & (self.rd_row[local] == h)),
                rd.addr.eq(self.rd_row[:local]),
                wr.en.eq(vec_here | (self.dma_we & (self.dma_row[local] == h))),
                wr.addr.eq(Mux(vec_here, self.vec_row[:local], self.dma_row[:local])),
                wr.data.eq(Mux(vec_here, vec_data, self.dma_data.as_value())),
            ]
            halves.append(rd.data)
        m.d.comb += self.rd_data.eq(Mux(read_half, halves[1], halves[0]))
        return m


class Sequencer(wiring.Component):
    """Decoder/sequencer of the sampling core, with its scalar memories and scalar units.

    One instruction per cycle for scalar ALU/FP/branch instructions (the instruction memory is
    read with the next PC, so taken branches cost nothing); vector instructions stream one row
    per cycle after a cycle of set-up and end when their last result is written; prefetches run
    in the dequantiser while the program continues. Exact cycle costs: :mod:`memwall.dplena_model`.

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
                       "fifo_depth": cfg.out_fifo_depth}
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
        cfg = self.cfg
        m = Module()
        L, vlen = cfg.block_len, cfg.vlen
        vshift = exact_log2(vlen)

        # --- memories -------------------------------------------------------------------------
        m.submodules.imem = imem = Memory(shape=WORD_BITS, depth=cfg.imem_words, init=[])
        m.submodules.fp_sram = fp_sram = Memory(shape=16, depth=cfg.fp_sram_words, init=[])
        m.submodules.int_sram = int_sram = Memory(shape=32, depth=cfg.int_sram_words, init=[])
        imem_rd, imem_wr = imem.read_port(), imem.write_port()
        fp_rd, fp_wr = fp_sram.read_port(), fp_sram.write_port()
        int_rd, int_wr = int_sram.read_port(), int_sram.write_port()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=32, depth=cfg.out_fifo_depth)
        m.d.comb += [self.out.valid.eq(fifo.r_rdy), self.out.payload.eq(fifo.r_data),
                     fifo.r_en.eq(self.out.ready)]

        # --- units ----------------------------------------------------------------------------
        sfp = ScalarFpUnit()
        topk = TopkMaskUnit(L, cfg.k_max)
        select = MaskedSelectUnit(1, width=32)
        add32, mul32, sub16 = FpAdd("fp32"), FpMul("fp32"), FpAdd("bf16")
        for name, unit in (("scalar_fp", sfp), ("topk", topk), ("select", select),
                           ("add_fp32", add32), ("mul_fp32", mul32), ("sub_bf16", sub16)):
            unique_submodule(m, name, unit)

        # --- architectural state --------------------------------------------------------------
        running = Signal()
        pc = Signal(range(cfg.imem_words))
        cycles = Signal(32)
        gp = Array(Signal(32, name=f"g{n}") for n in range(NUM_GP))
        fp = Array(Signal(32, name=f"f{n}") for n in range(NUM_FP))
        stage = Array(Signal(16, name=f"stage{n}") for n in range(L))
        flags = Signal(L)
        m.d.comb += [self.busy.eq(running), self.cycles.eq(cycles),
                     self.stage.eq(Cat(*stage))]
        with m.If(running):
            m.d.sync += cycles.eq(cycles + 1)

        word = imem_rd.data
        fields = {name: word[off:off + width] for name, (off, width) in FIELDS.items()}
        op, rd, rs1, rs2, rs3 = (fields[k] for k in ("opcode", "rd", "rs1", "rs2", "rs3"))
        imm = fields["imm"]
        imm_s = imm.as_signed()
        g_rd, g1, g2, g3 = gp[rd], gp[rs1], gp[rs2], gp[rs3]
        f_rd, f1, f2, f3 = fp[rd], fp[rs1], fp[rs2], fp[rs3]

        def set_gp(index, value):
            with m.If(index != 0):
                m.d.sync += gp[index].eq(value)

        # --- fetch: the read port always holds the instruction at `pc` ------------------------
        done = Signal()      # the instruction at pc completes this cycle
        next_pc = Signal.like(pc)
        m.d.comb += next_pc.eq(pc + 1)
        m.d.comb += imem_rd.addr.eq(Mux(done, next_pc, pc))
        with m.If(done):
            m.d.sync += pc.eq(next_pc)

        # Host writes (only while idle) and start.
        host_int = self.host_we & ~running & ~self.host_imem
        m.d.comb += [imem_wr.en.eq(self.host_we & ~running & self.host_imem),
                     imem_wr.addr.eq(self.host_addr), imem_wr.data.eq(self.host_wdata)]
        with m.If(~running & self.start):
            m.d.sync += [running.eq(1), pc.eq(0), cycles.eq(0)]
            m.d.comb += imem_rd.addr.eq(0)

        # --- multi-cycle instruction state ----------------------------------------------------
        step = Signal(range(8))          # sub-phase of the running instruction
        issued = Signal(32)
        retired = Signal(32)
        # one cycle behind an issue: the SRAM data is valid now
        p_valid, p_first, p_last = Signal(), Signal(), Signal()
        p_lanes = Signal(range(vlen + 1))
        p_index = Signal(range(max(L, 2)))
        pend_valid, pend_data = Signal(), Signal(32)   # a word on its way to the FIFO
        m.d.comb += [fifo.w_en.eq(pend_valid), fifo.w_data.eq(pend_data)]
        with m.If(pend_valid & fifo.w_rdy):
            m.d.sync += pend_valid.eq(0)
        fifo_slot = ~pend_valid | fifo.w_rdy   # a read issued now can land in `pend` next cycle

        def read_row(row):
            """Read a Vector SRAM row: its lanes 0..L-1 are on ``vs_rd_lo`` next cycle."""
            m.d.comb += [self.vs_rd_en.eq(1), self.vs_rd_row.eq(row)]

        lo_nonzero = Cat(lane != 0 for lane in self.vs_rd_lo)   # a 0/1 mask row as bits

        red_cmd = self.red_i.payload
        ew_cmd = self.ew_i.payload
        m.d.comb += [self.red_o.ready.eq(1), self.ew_o.ready.eq(1),
                     self.red_i.valid.eq(0), self.ew_i.valid.eq(0)]
        # The operand registers hold still while an instruction runs, so its size is derived:
        # rows of a vector operand (g2 elements), or the immediate element count.
        vector_op = ((op == Op.V_RED_MAX) | (op == Op.V_RED_SUM) | (op == Op.V_RED_MAX_IDX) |
                     (op == Op.V_SUB_VF) | (op == Op.V_EXP_V))
        n_items = Mux(vector_op, (g2 + (vlen - 1)) >> vshift, imm)
        left = g2 - (issued << vshift)   # elements of a vector operand not yet issued

        def start_vector():
            m.d.sync += [issued.eq(0), retired.eq(0), step.eq(1)]

        def issue_rows():
            """Read one row per cycle; the unit sees it, with its command, the next cycle."""
            with m.If(issued != n_items):
                m.d.comb += [self.vs_rd_en.eq(1), self.vs_rd_row.eq(g1 + issued)]
                m.d.sync += [p_valid.eq(1), p_first.eq(issued == 0),
                             p_last.eq(issued + 1 == n_items),
                             p_lanes.eq(Mux(left >= vlen, vlen, left)),
                             issued.eq(issued + 1)]
            with m.Else():
                m.d.sync += p_valid.eq(0)

        m.d.comb += [
            red_cmd.count.eq(p_lanes),
            red_cmd.first.eq(p_first & imm[0]),
            red_cmd.last.eq(p_last & imm[1]),
            ew_cmd.scalar.eq(f3[16:]),
            ew_cmd.tag.eq(0),
        ]
        with m.Switch(op):
            with m.Case(Op.V_RED_MAX):
                m.d.comb += red_cmd.op.eq(ReduceOp.MAX)
            with m.Case(Op.V_RED_SUM):
                m.d.comb += red_cmd.op.eq(ReduceOp.SUM)
            with m.Default():
                m.d.comb += red_cmd.op.eq(ReduceOp.MAX_IDX)
        m.d.comb += [ew_cmd.op.eq(Mux(op == Op.V_EXP_V, EwOp.EXP, EwOp.SUB)),
                     ew_cmd.scalar_b.eq(1)]

        # Scalar FP datapath (combinational units).
        m.d.comb += [add32.a.eq(f1), add32.b.eq(f2), add32.sub.eq(0),
                     mul32.a.eq(f1), mul32.b.eq(f2),
                     sub16.a.eq(f1[16:]), sub16.b.eq(f2[16:]), sub16.sub.eq(1)]
        sfp_cmd = sfp.i.payload
        m.d.comb += [sfp.o.ready.eq(1), sfp.a.eq(Mux(op == Op.S_CVT_BF, f1, f1[16:]))]
        with m.Switch(op):
            with m.Case(Op.S_EXP_BF):
                m.d.comb += sfp_cmd.op.eq(ScalarOp.EXP)
            with m.Case(Op.S_RECIP_BF):
                m.d.comb += sfp_cmd.op.eq(ScalarOp.RECIP)
            with m.Default():
                m.d.comb += sfp_cmd.op.eq(ScalarOp.TO_BF16)

        # Memory port defaults.
        m.d.comb += [fp_rd.addr.eq(g1 + issued), int_rd.addr.eq(g1 + issued)]
        int_wr_en, int_wr_addr, int_wr_data = Signal(), Signal(32), Signal(32)
        m.d.comb += [int_wr.en.eq(Mux(running, int_wr_en, host_int)),
                     int_wr.addr.eq(Mux(running, int_wr_addr, self.host_addr)),
                     int_wr.data.eq(Mux(running, int_wr_data, self.host_wdata[:32]))]

        k_clipped = Mux(g3 > cfg.k_max, cfg.k_max, g3)
        topk_in = topk.i.payload
        m.d.comb += [topk_in.value.eq(stage[issued[:bits_for(L - 1)]]),
                     topk_in.valid.eq(flags.bit_select(issued[:bits_for(L - 1)], 1)),
                     topk_in.k.eq(k_clipped), topk_in.last.eq(issued + 1 == n_items),
                     topk.o.ready.eq(0)]
        sel_mask = select.mask
        select_a = Signal(32)
        m.d.comb += [select.o.ready.eq(1), select.i.payload.eq(0),
                     sel_mask.eq(flags.bit_select(issued[:bits_for(L - 1)], 1)),
                     select.a.eq(select_a), select.b.eq(int_rd.data)]

        with m.If(running):
            with m.Switch(op):
                # ----- control and integer -----
                with m.Case(Op.NOP):
                    m.d.comb += done.eq(1)
                with m.Case(Op.HALT):
                    m.d.sync += running.eq(0)
                with m.Case(Op.ADDI):
                    set_gp(rd, g1 + imm)
                    m.d.comb += done.eq(1)
                with m.Case(Op.ADD):
                    set_gp(rd, g1 + g2)
                    m.d.comb += done.eq(1)
                with m.Case(Op.SUB):
                    set_gp(rd, g1 - g2)
                    m.d.comb += done.eq(1)
                with m.Case(Op.BNE, Op.BEQ):
                    taken = (g1 != g2) ^ (op == Op.BEQ)
                    m.d.comb += [done.eq(1), next_pc.eq(Mux(taken, pc + imm_s, pc + 1))]
                with m.Case(Op.S_LD_INT):
                    m.d.comb += int_rd.addr.eq(g1 + imm)
                    with m.If(step == 0):
                        m.d.sync += step.eq(1)
                    with m.Else():
                        set_gp(rd, int_rd.data)
                        m.d.sync += step.eq(0)
                        m.d.comb += done.eq(1)
                with m.Case(Op.S_ST_INT):
                    m.d.comb += [int_wr_en.eq(1), int_wr_addr.eq(g1 + imm),
                                 int_wr_data.eq(g_rd), done.eq(1)]
                with m.Case(Op.S_ST_FP):
                    m.d.comb += [fp_wr.en.eq(1), fp_wr.addr.eq(g1 + imm),
                                 fp_wr.data.eq(f_rd[16:]), done.eq(1)]
                # ----- scalar FP -----
                with m.Case(Op.S_LI_F):
                    m.d.sync += f_rd.eq(imm)
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_MOV_F):
                    m.d.sync += f_rd.eq(f1)
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_ADD_F):
                    m.d.sync += f_rd.eq(add32.y)
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_MUL_F):
                    m.d.sync += f_rd.eq(mul32.y)
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_SUB_BF):
                    m.d.sync += f_rd.eq(Cat(Const(0, 16), sub16.y))
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_MAX_IDX_F):
                    with m.If(bf16_key(f1[16:]) > bf16_key(f_rd[16:])):
                        m.d.sync += f_rd.eq(f1)
                        set_gp(rs3, g2)
                    m.d.comb += done.eq(1)
                with m.Case(Op.S_EXP_BF, Op.S_RECIP_BF, Op.S_CVT_BF):
                    with m.If(step == 0):
                        m.d.comb += sfp.i.valid.eq(1)
                        m.d.sync += step.eq(1)
                    with m.Elif(sfp.o.valid):
                        m.d.sync += [f_rd.eq(Cat(Const(0, 16), sfp.y)), step.eq(0)]
                        m.d.comb += done.eq(1)
                # ----- prefetch -----
                with m.Case(Op.H_PREFETCH_V):
                    m.d.comb += [self.dma_cmd.valid.eq(~self.dma_busy),
                                 self.dma_cmd.payload.count.eq(g1),
                                 self.dma_cmd.payload.row.eq(g_rd),
                                 self.dma_cmd.payload.bf16.eq(imm[0]),
                                 done.eq(self.dma_cmd.valid & self.dma_cmd.ready)]
                with m.Case(Op.H_WAIT):
                    m.d.comb += done.eq(~self.dma_busy)
                # ----- vector -----
                with m.Case(Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX):
                    with m.If(step == 0):
                        start_vector()
                        m.d.sync += p_valid.eq(0)
                    with m.Else():
                        issue_rows()
                        m.d.comb += self.red_i.valid.eq(p_valid)
                        with m.If(imm[1]):      # LAST: wait for the result
                            with m.If(self.red_o.valid):
                                m.d.sync += [f_rd.eq(self.red_o.payload.value), step.eq(0)]
                                with m.If(op == Op.V_RED_MAX_IDX):
                                    set_gp(rs3, self.red_o.payload.index)
                                m.d.comb += done.eq(1)
                        with m.Elif(p_valid & p_last):
                            m.d.sync += step.eq(0)
                            m.d.comb += done.eq(1)
                with m.Case(Op.V_SUB_VF, Op.V_EXP_V):
                    with m.If(step == 0):
                        start_vector()
                        m.d.sync += p_valid.eq(0)
                    with m.Else():
                        issue_rows()
                        m.d.comb += self.ew_i.valid.eq(p_valid)
                        with m.If(self.ew_o.valid):
                            m.d.comb += [self.vs_wr_en.eq(1),
                                         self.vs_wr_row.eq(g_rd + retired)]
                            m.d.sync += retired.eq(retired + 1)
                            with m.If(retired + 1 == n_items):
                                m.d.sync += step.eq(0)
                                m.d.comb += done.eq(1)
                # ----- L-element instructions -----
                with m.Case(Op.S_MAP_V_FP, Op.V_CMP_EQ_INT):
                    # step 0: clear the stage; 1: read element `issued` per cycle; 2: write row.
                    with m.If(step == 0):
                        m.d.sync += [Cat(*stage).eq(0), issued.eq(0), p_valid.eq(0), step.eq(1)]
                    with m.Elif(step == 1):
                        with m.If(issued != n_items):
                            m.d.sync += [issued.eq(issued + 1), p_valid.eq(1),
                                         p_index.eq(issued)]
                        with m.Else():
                            m.d.sync += [p_valid.eq(0), step.eq(2)]
                    with m.Else():
                        m.d.comb += [self.vs_wr_en.eq(1), self.vs_wr_row.eq(g_rd),
                                     self.vs_wr_stage.eq(1), done.eq(1)]
                        m.d.sync += step.eq(0)
                    with m.If(p_valid):
                        value = Mux(op == Op.S_MAP_V_FP, fp_rd.data,
                                    Mux(int_rd.data == g2, BF16_ONE, 0))
                        m.d.sync += stage[p_index].eq(value)
                with m.Case(Op.V_TOPK_MASK):
                    # 0: read valid row; 1: latch flags, read conf row; 2: latch stage;
                    # 3: stream to top-k; 4: mask -> stage; 5: write row.
                    with m.Switch(step):
                        with m.Case(0):
                            read_row(g2)
                            m.d.sync += [step.eq(1), issued.eq(0)]
                        with m.Case(1):
                            m.d.sync += [flags.eq(lo_nonzero),
                                         step.eq(2)]
                            read_row(g1)
                        with m.Case(2):
                            m.d.sync += [Cat(*stage).eq(self.vs_rd_lo), step.eq(3)]
                        with m.Case(3):
                            m.d.comb += topk.i.valid.eq(1)
                            with m.If(topk.i.ready):
                                m.d.sync += issued.eq(issued + 1)
                                with m.If(issued + 1 == n_items):
                                    m.d.sync += step.eq(4)
                        with m.Case(4):
                            m.d.comb += topk.o.ready.eq(1)
                            with m.If(topk.o.valid):
                                m.d.sync += [stage[n].eq(Mux(topk.o.payload[n], BF16_ONE, 0))
                                             for n in range(L)]
                                m.d.sync += step.eq(5)
                        with m.Default():
                            m.d.comb += [self.vs_wr_en.eq(1), self.vs_wr_row.eq(g_rd),
                                         self.vs_wr_stage.eq(1), done.eq(1)]
                            m.d.sync += step.eq(0)
                with m.Case(Op.V_SELECT_INT):
                    # 0: read the mask row; 1: latch flags; then per element (INT SRAM has one
                    # read port): 2 read a; 3 latch a, read b; 4 select. The select lane
                    # writes back one cycle later, overlapping the next element's step 2.
                    with m.If(select.o.valid):
                        m.d.comb += [int_wr_en.eq(1), int_wr_addr.eq(g_rd + retired),
                                     int_wr_data.eq(select.y)]
                        m.d.sync += retired.eq(retired + 1)
                    with m.Switch(step):
                        with m.Case(0):
                            read_row(g3)
                            m.d.sync += [step.eq(1), issued.eq(0), retired.eq(0)]
                        with m.Case(1):
                            m.d.sync += [flags.eq(lo_nonzero),
                                         step.eq(2)]
                        with m.Case(2):
                            with m.If(issued != n_items):
                                m.d.sync += step.eq(3)
                            with m.Elif(select.o.valid & (retired + 1 == n_items)):
                                m.d.sync += step.eq(0)
                                m.d.comb += done.eq(1)
                        with m.Case(3):
                            m.d.comb += int_rd.addr.eq(g2 + issued)
                            m.d.sync += [select_a.eq(int_rd.data), step.eq(4)]
                        with m.Default():
                            m.d.comb += select.i.valid.eq(1)
                            m.d.sync += [issued.eq(issued + 1), step.eq(2)]
                with m.Case(Op.H_STORE_INT):
                    # Two cycles a word: read, then hand it to the FIFO register (the FIFO may
                    # be full, and the read port does not hold its data).
                    with m.Switch(step):
                        with m.Case(0):
                            m.d.sync += [step.eq(1), issued.eq(0)]
                        with m.Case(1):
                            with m.If(issued == n_items):
                                m.d.sync += step.eq(0)
                                m.d.comb += done.eq(1)
                            with m.Elif(fifo_slot):
                                m.d.sync += step.eq(2)
                        with m.Default():
                            m.d.sync += [pend_valid.eq(1), pend_data.eq(int_rd.data),
                                         issued.eq(issued + 1), step.eq(1)]
                with m.Case(Op.H_STORE_V):
                    with m.Switch(step):
                        with m.Case(0):
                            read_row(g1)
                            m.d.sync += [step.eq(1), issued.eq(0)]
                        with m.Case(1):
                            m.d.sync += [Cat(*stage).eq(self.vs_rd_lo), step.eq(2)]
                        with m.Default():
                            with m.If(issued == n_items):
                                m.d.sync += step.eq(0)
                                m.d.comb += done.eq(1)
                            with m.Elif(fifo_slot):
                                m.d.sync += [pend_valid.eq(1),
                                             pend_data.eq(stage[issued[:bits_for(L - 1)]]),
                                             issued.eq(issued + 1)]
                with m.Default():   # undefined opcode: stop rather than run wild
                    m.d.sync += running.eq(0)
        return m


class DplenaCore:
    """The structural top ``dplena_core`` (see the module docstring)."""

    module_name = TOP_NAME

    def __init__(self, cfg: DplenaConfig):
        self.cfg = cfg
        self.params = {"config": {k: getattr(cfg, k) for k in (
            "vlen", "block_len", "k_max", "hbm_bytes_per_cycle", "vector_sram_kib",
            "fp_sram_words", "int_sram_words", "imem_words", "out_fifo_depth")}}

    def parts(self) -> dict:
        cfg = self.cfg
        row_bits = exact_log2(cfg.vector_sram_rows)
        return {
            "sequencer": Sequencer(cfg),
            "bank": VectorSramBank(cfg.bank_lanes, cfg.vector_sram_rows),
            "dequantiser": Dequantiser(cfg.vlen, cfg.hbm_bytes_per_cycle, row_bits),
            "reduction": ReductionUnit(cfg.vlen),
            "elementwise": ElementwiseUnit(cfg.vlen),
        }

    def emit_verilog(self, design: Design, name: str) -> str:
        cfg = self.cfg
        parts = self.parts()
        vlen, L, W, banks = cfg.vlen, cfg.block_len, cfg.bank_lanes, cfg.banks
        row_bits = exact_log2(cfg.vector_sram_rows)
        netlist = Netlist(design)
        seq_info = design.module_for(parts["sequencer"])
        dq_info = design.module_for(parts["dequantiser"])

        # Top-level ports: the host side of the sequencer, and the HBM beat stream.
        binds = {}
        for port in seq_info.ports:
            if port.name.startswith(("host_", "start", "busy", "cycles", "out__")):
                binds[port.name] = netlist.port(port.name, port.direction, port.width)
        for port in dq_info.ports:
            if port.name.startswith("beat__"):
                netlist.port(f"hbm_{port.name}", port.direction, port.width)

        def wire(name, width):
            return netlist.wire(name, width)

        rd_data = wire("rd_data", 16 * vlen)
        y = wire("ew_y", 16 * vlen)
        # The L-element rows of phases 3-4 (confidence, valid, transfer): lanes 0..L-1, +0 above.
        wire("stage_row", 16 * vlen)
        netlist.assign("stage_row", f"{{{16 * (vlen - L)}'b0, seq_stage}}" if vlen > L
                       else "seq_stage")
        seq_wires = {}
        for port in seq_info.ports:
            if port.name in binds or port.name in ("clk", "rst"):
                continue
            if port.name == "vs_rd_lo":
                seq_wires[port.name] = f"rd_data[{16 * L - 1}:0]"
            else:
                seq_wires[port.name] = wire(f"seq_{port.name}", port.width)
        netlist.instance("sequencer", parts["sequencer"], {**binds, **seq_wires})

        dq = {p.name: (f"hbm_{p.name}" if p.name.startswith("beat__")
                       else wire(f"dq_{p.name}", p.width))
              for p in dq_info.ports if p.name not in ("clk", "rst")}
        # The sequencer's command goes straight in; a write to the half the vector path is
        # writing this cycle waits.
        for field in ("valid", "ready", "payload"):
            dq[f"cmd__{field}"] = f"seq_dma_cmd__{field}"
        dq["busy"] = "seq_dma_busy"
        msb = row_bits - 1
        dq["wr_ready"] = (f"~(seq_vs_wr_en & (seq_vs_wr_row[{msb}] == dq_wr_row[{msb}]))")
        netlist.instance("dequantiser", parts["dequantiser"], dq)

        netlist.instance("bank", parts["bank"], {
            "rd_en": "seq_vs_rd_en", "rd_row": "seq_vs_rd_row",
            "rd_data": f"rd_data[i*{16 * W} +: {16 * W}]",
            "vec_we": "seq_vs_wr_en", "vec_row": "seq_vs_wr_row",
            "vec_data": f"ew_y[i*{16 * W} +: {16 * W}]",
            "stage_sel": "seq_vs_wr_stage",
            "stage_data": f"stage_row[i*{16 * W} +: {16 * W}]",
            "dma_we": f"dq_wr_valid & ~(seq_vs_wr_en & (seq_vs_wr_row[{msb}] == "
                      f"dq_wr_row[{msb}])) & (dq_wr_bank == i)",
            "dma_row": "dq_wr_row", "dma_data": "dq_wr_data",
        }, replicate=banks)

        netlist.instance("reduction", parts["reduction"], {
            "i__valid": "seq_red_i__valid", "i__ready": "seq_red_i__ready",
            "i__payload": "seq_red_i__payload", "data": rd_data,
            "o__valid": "seq_red_o__valid", "o__ready": "seq_red_o__ready",
            "o__payload": "seq_red_o__payload"})
        netlist.instance("elementwise", parts["elementwise"], {
            "i__valid": "seq_ew_i__valid", "i__ready": "seq_ew_i__ready",
            "i__payload": "seq_ew_i__payload", "a": rd_data, "b": f"{16 * vlen}'b0",
            "o__valid": "seq_ew_o__valid", "o__ready": "seq_ew_o__ready",
            "o__payload": "seq_ew_o__payload", "y": y})
        return netlist.text(name)


def build_top(cfg: DplenaConfig) -> tuple[str, DplenaCore]:
    return TOP_NAME, DplenaCore(cfg)
