"""The d-PLENA sampling core (paper Fig. 3): sequencer, memories, MX logits streaming and the units.

``dplena_core`` runs Algorithm 2 (one diffusion sampling step over a block) from its
instruction memory. It is a structural top (a
:class:`~memwall.hdl.common.structural.Netlist`: instances and wires only, every gate in an
Amaranth component), so no VLEN-wide vector passes through an Amaranth conversion:

* :class:`~memwall.hdl.dplena.sequencer.Sequencer` -- decoder/sequencer (ISA in
  :mod:`memwall.golden.dplena.isa`): instruction memory, GP and FP register files, FP SRAM, INT
  SRAM, the token-ID output FIFO, the scalar FP unit, the top-k unit and the INT select lane.
  It drives the vector side only with addresses and commands; of a Vector SRAM row it sees
  lanes ``0..L-1`` (the L-element vectors of phases 3-4).
* ``vector_sram``: ``VLEN / G`` banks (:class:`VectorSramBank`) of ``G = cfg.bank_lanes``
  lanes, one dequantiser write (``hbm_bytes_per_cycle``, or twice that for 6- and 4-bit MX).
  Each bank has two halves (row MSB) with one read and one write port each, so the prefetch
  of one buffer and the in-place writes to the other proceed in the same cycle; a
  same-half collision stalls the prefetch for that cycle (:class:`VectorSramWriteArbiter`).
* :class:`~memwall.hdl.dplena.dequant.Dequantiser` between the HBM beat port and the banks.
* :class:`~memwall.hdl.dplena.reduction.ReductionUnit` and
  :class:`~memwall.hdl.dplena.elementwise.ElementwiseUnit` reading rows, the latter writing back.

Host interface: while ``busy`` is low, ``host_we`` writes ``host_wdata`` to the instruction
memory (``host_imem = 1``) or to INT SRAM (``host_imem = 0``, low 32 bits) at ``host_addr``;
``start`` runs the program from address 0 until HALT; ``cycles`` counts the cycles run; results
leave on the ``out`` stream (32-bit words, the order the program pushes them).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from memwall.families.dplena.config import DplenaConfig
from memwall.hdl.common.structural import Concat, Constant, Netlist, Structural
from memwall.hdl.dplena.dequant import Dequantiser
from memwall.hdl.dplena.elementwise import ElementwiseUnit
from memwall.hdl.dplena.reduction import ReductionUnit
from memwall.hdl.dplena.sequencer import Sequencer

__all__ = ["TOP_NAME", "VectorSramBank", "VectorSramWriteArbiter", "Sequencer", "DplenaCore",
           "build_top"]

TOP_NAME = "dplena_core"


class VectorSramBank(wiring.Component):
    """``lanes`` BF16 lanes of every Vector SRAM row, in two halves selected by the row MSB.

    Each half is a 1R1W memory (one macro). Writes: the vector path (``vec_*``; ``stage_sel``
    picks ``stage_data`` instead of ``vec_data``) and the prefetch path (``dma_*``) may write in
    the same cycle if they address different halves; the parent never lets them collide.
    Reads are synchronous: ``rd_data`` is valid the cycle after ``rd_en``.

    Parameters
    ----------
    lanes : int
        Lanes per bank (``G``, one dequantiser write).
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


class VectorSramWriteArbiter(wiring.Component):
    """Lets the dequantiser's write into a Vector SRAM bank unless the vector path collides.

    The vector path (the sequencer) writes a whole row, every bank, and always wins; a prefetch
    write waits (``dma_ready`` low) while the vector path writes the same half (row MSB) of
    the banks, and goes to bank ``dma_bank`` only (``dma_we`` one-hot) when it proceeds.

    Parameters
    ----------
    banks : int
        Banks of the Vector SRAM (``VLEN / G``).
    row_bits : int
        Row address width (>= 1).

    Attributes
    ----------
    vec_we : In(1)
    vec_row : In(row_bits)
    dma_valid : In(1)
    dma_ready : Out(1)
    dma_row : In(row_bits)
    dma_bank : In(max(1, ceil_log2(banks)))
    dma_we : Out(banks)
        Write enable of each bank's prefetch port.
    """

    module_name = "vector_sram_bank_arbiter"

    def __init__(self, banks: int, row_bits: int):
        if banks < 1 or row_bits < 1:
            raise ValueError(f"banks and row_bits must be >= 1, got {banks}, {row_bits}")
        self.banks, self.row_bits = banks, row_bits
        self.params = {"banks": banks, "row_bits": row_bits}
        super().__init__({
            "vec_we": In(1), "vec_row": In(row_bits),
            "dma_valid": In(1), "dma_ready": Out(1), "dma_row": In(row_bits),
            "dma_bank": In(max(1, ceil_log2(banks))), "dma_we": Out(banks),
        })

    def elaborate(self, platform):
        m = Module()
        msb = self.row_bits - 1
        m.d.comb += self.dma_ready.eq(~(self.vec_we & (self.vec_row[msb] == self.dma_row[msb])))
        for bank in range(self.banks):
            m.d.comb += self.dma_we[bank].eq(self.dma_valid & self.dma_ready &
                                             (self.dma_bank == bank))
        return m


class DplenaCore(Structural):
    """The structural top ``dplena_core`` (see the module docstring)."""

    module_name = TOP_NAME

    def __init__(self, cfg: DplenaConfig):
        self.cfg = cfg
        self.params = {"config": {k: getattr(cfg, k) for k in (
            "vlen", "block_len", "k_max", "hbm_bytes_per_cycle", "vector_sram_kib",
            "fp_sram_words", "int_sram_words", "imem_words", "out_fifo_depth")}}
        if cfg.fp_stages:
            self.params["config"]["fp_stages"] = cfg.fp_stages

    def structure(self, netlist: Netlist) -> None:
        cfg = self.cfg
        vlen, L, W, rows = cfg.vlen, cfg.block_len, cfg.bank_lanes, cfg.vector_sram_rows
        row_bits = exact_log2(rows)
        seq = netlist.instance("sequencer", Sequencer(cfg))
        dq = netlist.instance(
            "dequantiser", Dequantiser(vlen, cfg.hbm_bytes_per_cycle, row_bits, cfg.mx_format))
        arbiter = netlist.instance("bank_arbiter", VectorSramWriteArbiter(cfg.banks, row_bits))
        banks = netlist.instances("bank", lambda: VectorSramBank(W, rows), cfg.banks)
        reduction = netlist.instance("reduction", ReductionUnit(vlen, cfg.stages.add_fp32))
        elementwise = netlist.instance("elementwise", ElementwiseUnit(vlen, cfg.stages))

        # Ports: the host side of the sequencer, its output FIFO, and the HBM beat stream.
        for name in ("host_we", "host_imem", "host_addr", "host_wdata", "start", "busy",
                     "cycles", "out"):
            netlist.expose(seq[name])
        netlist.expose(dq.beat, "hbm_beat")

        # Rows read: all VLEN lanes to the units, lanes 0..L-1 to the sequencer.
        rd_data = netlist.wire("rd_data", 16 * vlen)
        netlist.connect(seq.vs_rd_en, banks.rd_en)
        netlist.connect(seq.vs_rd_row, banks.rd_row)
        netlist.bind(banks.rd_data, rd_data.lane(16 * W))
        netlist.bind(seq.vs_rd_lo, rd_data[:16 * L])
        netlist.bind(reduction.data, rd_data)
        netlist.bind(elementwise.a, rd_data)
        netlist.bind(elementwise.b, Constant(0, 16 * vlen))
        netlist.connect(seq.red_i, reduction.i)
        netlist.connect(reduction.o, seq.red_o)
        netlist.connect(seq.ew_i, elementwise.i)
        netlist.connect(elementwise.o, seq.ew_o)

        # Rows written by the vector path: the elementwise result, or the L-element stage row
        # of phases 3-4 (confidence, valid, transfer) in lanes 0..L-1, +0 above.
        ew_y = netlist.wire("ew_y", 16 * vlen)
        netlist.bind(elementwise.y, ew_y)
        netlist.bind(banks.vec_data, ew_y.lane(16 * W))
        stage = netlist.net(seq.stage)
        stage_row = netlist.wire("stage_row", 16 * vlen)
        netlist.assign(stage_row, Concat(stage, Constant(0, 16 * (vlen - L))) if vlen > L
                       else stage)
        netlist.bind(banks.stage_data, stage_row.lane(16 * W))
        netlist.connect(seq.vs_wr_en, arbiter.vec_we, banks.vec_we)
        netlist.connect(seq.vs_wr_row, arbiter.vec_row, banks.vec_row)
        netlist.connect(seq.vs_wr_stage, banks.stage_sel)

        # Prefetch: the sequencer's command straight in; a write to the half the vector path
        # is writing this cycle waits.
        netlist.connect(seq.dma_cmd, dq.cmd)
        netlist.connect(dq.busy, seq.dma_busy)
        netlist.connect(dq.wr_valid, arbiter.dma_valid)
        netlist.connect(arbiter.dma_ready, dq.wr_ready)
        netlist.connect(dq.wr_row, arbiter.dma_row, banks.dma_row)
        netlist.connect(dq.wr_bank, arbiter.dma_bank)
        netlist.connect(dq.wr_data, banks.dma_data)
        netlist.bind(banks.dma_we, netlist.net(arbiter.dma_we).lane(1))


def build_top(cfg: DplenaConfig) -> tuple[str, DplenaCore]:
    return TOP_NAME, DplenaCore(cfg)
