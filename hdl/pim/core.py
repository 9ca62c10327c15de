"""The PIM macro controller (``pim_core``): executes one schedule descriptor, a tiled GEMM
``C = A @ B`` with B in the eDRAM macro, cycle for cycle as :mod:`memwall.golden.pim.macro` says.

Per step of the loop nest it writes the weight tile into the macro (when the tile changes),
then for every input row m of the tile loads the inputs into its register file and activates
every row of the tile once per input bit-plane, broadcasting the plane's bits as the sense-amp
enables. The PU (:class:`PimPu`) accumulates; a group's sums leave on ``result`` (and come back
on ``psum`` for the next k-tile, from the unified buffer the testbench plays).

Refresh is age-triggered with priority over everything else: every write or refresh of a row
enters a restore queue in time order, so the queue head is always the oldest row. When the
head's age reaches the VPD's interval it leaves the queue and, if the row is still live (it has
activations left in this residency of its tile), is refreshed this cycle and re-enters the queue.
A row dies at its last activation. A new tile's load empties the queue: every row of the old
tile is dead by then.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.families.pim.config import ORDERS, PimConfig
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.pim.pu import PimPu, max_shift, result_words

__all__ = ["PimCore", "build_top", "descriptor_layout", "result_layout", "TOP_NAME"]

TOP_NAME = "pim_core"
DIMS = "mkn"


def _bits(count: int) -> int:
    return max(1, ceil_log2(count + 1))


def descriptor_layout(cfg: PimConfig) -> data.StructLayout:
    """The ``desc`` payload: GEMM shape, tile sizes, loop order code (:data:`ORDERS`), VPD."""
    dim = unsigned(_bits(cfg.max_dim))
    return data.StructLayout({"M": dim, "K": dim, "N": dim, "tm": dim, "tk": dim, "tn": dim,
                              "order": unsigned(3), "vpd": unsigned(3)})


def result_layout(cfg: PimConfig) -> data.StructLayout:
    """The ``result`` payload: the sums of one group and where they belong."""
    dim = unsigned(_bits(cfg.max_dim))
    return data.StructLayout({"sums": result_words(cfg) * cfg.acc_bits, "m": dim, "n0": dim,
                              "last": 1})


class PimCore(wiring.Component):
    """Schedule executor, restore queue and PU for one eDRAM PIM macro.

    Parameters
    ----------
    cfg : PimConfig

    Attributes
    ----------
    desc : In(stream of descriptor_layout)
        One GEMM; the tiles must fit (:func:`memwall.golden.pim.macro.fits`); not checked here.
    weights : In(stream of width bits)
        Row images in load order.
    inputs : In(stream of fields * input_bits)
        Input words (lane 0 in the LSBs), ``ceil(Tk_i / fields)`` beats per input row and step.
    psum : In(stream of words * acc_bits)
        A group's partial sums from the previous k-tile, when the k-tile is not the first.
    result : Out(stream of result_layout)
    macro_row, macro_we, macro_wdata, macro_re, macro_inbits, macro_ref, macro_vpd, macro_vref
        Drive the eDRAM macro; ``macro_rdata`` (in) is its read data, the cycle after ``re``.
    refresh_enable : In(1)
        0 suppresses every refresh (a negative control for the testbench).
    busy : Out(1)
    """

    def __init__(self, cfg: PimConfig):
        self.cfg = cfg
        self.params = {k: getattr(cfg, k) for k in (
            "rows", "processing", "operation", "weight_bits", "input_bits", "weight_signed",
            "input_signed", "acc_bits", "max_dim", "input_beats", "refresh_margin_cycles",
            "clock_mhz")}
        self.params["width"] = cfg.width
        self.params["levels"] = tuple(level["retention_us"] for level in cfg.macro_table)
        words = result_words(cfg)
        super().__init__({
            "desc": In(stream.Signature(descriptor_layout(cfg))),
            "weights": In(stream.Signature(cfg.width)),
            "inputs": In(stream.Signature(cfg.fields * cfg.input_bits)),
            "psum": In(stream.Signature(words * cfg.acc_bits)),
            "result": Out(stream.Signature(result_layout(cfg))),
            "macro_row": Out(range(cfg.rows)), "macro_we": Out(1), "macro_wdata": Out(cfg.width),
            "macro_re": Out(1), "macro_inbits": Out(cfg.width), "macro_ref": Out(1),
            "macro_vpd": Out(3), "macro_vref": Out(3), "macro_rdata": In(cfg.width),
            "refresh_enable": In(1, init=1), "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        F, P, ib, fw = cfg.fields, cfg.planes, cfg.input_bits, cfg.field_bits
        dim = _bits(cfg.max_dim)
        intervals = [cfg.refresh_interval(v) for v in range(cfg.levels)]
        tw = max(intervals).bit_length() + 1

        desc = Signal(descriptor_layout(cfg))
        size = {"m": desc.M, "k": desc.K, "n": desc.N}
        tile = {"m": desc.tm, "k": desc.tk, "n": desc.tn}
        pos = {d: Signal(dim, name=f"{d}0") for d in DIMS}
        # Tile extents of this step: the last tile of a dimension may be short.
        ext = {}
        last = {}
        for d in DIMS:
            rest = Signal(dim, name=f"rest_{d}")
            ext[d] = Signal(dim, name=f"t{d}_i")
            last[d] = Signal(name=f"last_{d}")
            m.d.comb += [rest.eq(size[d] - pos[d]), ext[d].eq(Mux(rest < tile[d], rest, tile[d])),
                         last[d].eq(rest <= tile[d])]
        # Odometer: a dimension advances when every dimension inside it is on its last tile.
        inc = {d: Signal(name=f"inc_{d}") for d in DIMS}
        with m.Switch(desc.order):
            for code, nest in enumerate(ORDERS):
                with m.Case(code):
                    for depth, d in enumerate(nest):
                        m.d.comb += inc[d].eq(Cat(1, *(last[e] for e in nest[depth + 1:])).all())
        gemm_last = Signal()
        m.d.comb += gemm_last.eq(last["m"] & last["k"] & last["n"])
        # The next step needs another weight tile (or there is none): this residency ends.
        tile_ends = Signal()
        m.d.comb += tile_ends.eq(gemm_last | (inc["k"] & (tile["k"] < size["k"]))
                                 | (inc["n"] & (tile["n"] < size["n"])))

        # -- row walker: groups (outer) x middle x weight planes (b) ------------------------------
        # row-wise: outer = n in steps of F (a group = F outputs), middle = k in steps of 1;
        # dot-product: outer = n in steps of 1 (a group = one output), middle = k in steps of F.
        outer_step, mid_step = (F, 1) if cfg.row_wise else (1, F)
        outer = Signal(dim)
        mid = Signal(dim)           # k offset within the tile
        beat = Signal(range(cfg.input_beats))
        lane = Signal(range(F))
        plane = Signal(range(P))
        row = Signal(range(cfg.rows))
        j = Signal(range(ib))
        last_plane = plane == P - 1
        last_mid = mid + mid_step >= ext["k"]
        last_outer = outer + outer_step >= ext["n"]
        last_row = last_plane & last_mid & last_outer

        def walk_reset():
            return [outer.eq(0), mid.eq(0), beat.eq(0), lane.eq(0), plane.eq(0), row.eq(0)]

        def walk_advance():
            stmts = [row.eq(row + 1)]
            with_mid = [mid.eq(mid + mid_step)]
            if cfg.row_wise:
                with_mid += [lane.eq(Mux(lane == F - 1, 0, lane + 1)),
                             beat.eq(Mux(lane == F - 1, beat + 1, beat))]
            else:
                with_mid += [beat.eq(beat + 1)]
            return stmts, with_mid

        # -- state --------------------------------------------------------------------------------
        m_row = Signal(dim)          # input row within the m tile
        in_beat = Signal(range(cfg.input_beats + 1))
        vpd = Signal(3)
        interval = Signal(tw)
        m.d.comb += interval.eq(Array(Const(v, tw) for v in intervals)[vpd])
        now = Signal(tw)
        m.d.sync += now.eq(now + 1)

        # -- input register file (flip-flops: read in the cycle its index changes) ---------------
        in_regs = [Signal(F * ib, name=f"in_beat{q}") for q in range(cfg.input_beats)]
        in_we = Signal()
        with m.If(in_we):
            for q, reg in enumerate(in_regs):
                with m.If(in_beat == q):
                    m.d.sync += reg.eq(self.inputs.payload)
        in_data = Signal(F * ib)
        m.d.comb += in_data.eq(Array(in_regs)[beat])
        words = [in_data[f * ib:(f + 1) * ib] for f in range(F)]

        # -- broadcast input bits (sense-amp enables) ---------------------------------------------
        valid_fields = Signal(range(F + 1))
        remain = Signal(dim)
        m.d.comb += remain.eq((ext["n"] - outer) if cfg.row_wise else (ext["k"] - mid))
        m.d.comb += valid_fields.eq(Mux(remain < F, remain, F))
        # Named signals, not expressions: a replicated expression is copied per bit in the
        # netlist (F * fw comparators and shifters instead of F and one).
        field_on = Signal(F)
        m.d.comb += field_on.eq(Cat(*(valid_fields > f for f in range(F))))
        plane_bits = Signal(F)      # bit j of every input word of the beat
        m.d.comb += plane_bits.eq(Cat(*(w.bit_select(j, 1) for w in words)))
        per_field = Signal(F)
        if cfg.row_wise:     # one input word, broadcast to every valid field
            lane_bit = Signal()
            m.d.comb += [lane_bit.eq(plane_bits.bit_select(lane, 1)),
                         per_field.eq(field_on & lane_bit.replicate(F))]
        else:                # each field its own input word
            m.d.comb += per_field.eq(field_on & plane_bits)
        inbits = Cat(*(per_field[f].replicate(fw) for f in range(F)))

        # -- restore queue (per-row restore timestamps, oldest first) and live bits ---------------
        entry = data.StructLayout({"row": range(cfg.rows), "time": tw})
        queue = memory.Memory(shape=entry, depth=cfg.rows, init=[])
        m.submodules.restore_queue = queue
        q_wr = queue.write_port()
        # A synchronous read of the next head (as SRAM macros read): its data is the head's entry
        # in the cycle the head pointer takes that value, a push to it in the same cycle included.
        q_rd = queue.read_port(transparent_for=(q_wr,))
        q_head = Signal(range(cfg.rows))
        q_tail = Signal(range(cfg.rows))
        q_count = Signal(range(cfg.rows + 1))
        live = Signal(cfg.rows)
        head = q_rd.data
        head_due = Signal()
        refresh = Signal()
        m.d.comb += [head_due.eq((q_count != 0) & ((now - head.time)[:tw] == interval)),
                     refresh.eq(head_due & live.bit_select(head.row, 1) & self.refresh_enable)]
        push = Signal()
        push_row = Signal(range(cfg.rows))
        flush = Signal()
        m.d.comb += [q_wr.addr.eq(q_tail), q_wr.data.row.eq(push_row), q_wr.data.time.eq(now),
                     q_wr.en.eq(push)]

        def bump(ptr):
            return Mux(ptr == cfg.rows - 1, 0, ptr + 1)

        pop = head_due
        head_next = Signal(range(cfg.rows))
        m.d.comb += [head_next.eq(Mux(flush, 0, Mux(pop, bump(q_head), q_head))),
                     q_rd.addr.eq(head_next)]
        m.d.sync += q_head.eq(head_next)
        with m.If(flush):
            m.d.sync += [q_tail.eq(0), q_count.eq(0)]
        with m.Else():
            m.d.sync += q_count.eq(q_count + push - pop)
            with m.If(push):
                m.d.sync += q_tail.eq(bump(q_tail))

        # -- PU and its pipeline register ---------------------------------------------------------
        pu = PimPu(cfg)
        unique_submodule(m, "pu", pu)
        acc_words = result_words(cfg) * cfg.acc_bits
        pipe_valid, pipe_first, pipe_last = Signal(), Signal(), Signal()
        pipe_shift = Signal(range(max_shift(cfg) + 1))
        pipe_neg = Signal()
        pipe_init = Signal(acc_words)
        pipe_m, pipe_n0, pipe_lastk = Signal(dim), Signal(dim), Signal()
        m.d.comb += [pu.valid.eq(pipe_valid), pu.rdata.eq(self.macro_rdata),
                     pu.shift.eq(pipe_shift), pu.negate.eq(pipe_neg), pu.first.eq(pipe_first),
                     pu.last.eq(pipe_last), pu.init.eq(pipe_init)]
        out = Signal(result_layout(cfg))
        out_valid = Signal()
        m.d.comb += [self.result.valid.eq(out_valid), self.result.payload.eq(out)]
        with m.If(self.result.ready):
            m.d.sync += out_valid.eq(0)
        with m.If(pu.emit):
            m.d.sync += [out_valid.eq(1), out.sums.eq(pu.result), out.m.eq(pipe_m),
                         out.n0.eq(pipe_n0), out.last.eq(pipe_lastk)]

        # -- activation controls ------------------------------------------------------------------
        group_first = (mid == 0) & (plane == 0) & (j == 0)
        group_last = last_mid & last_plane & (j == ib - 1)
        need_psum = group_first & (pos["k"] != 0)
        out_free = (~out_valid | self.result.ready) & ~(pipe_valid & pipe_last)
        can_activate = (~need_psum | self.psum.valid) & (~group_last | out_free)
        shift = j + (plane if cfg.bit_serial else 0)
        negate = Const(0)
        if cfg.input_signed:
            negate = negate ^ (j == ib - 1)
        if cfg.bit_serial and cfg.weight_signed:
            negate = negate ^ last_plane
        final_sweep = tile_ends & (m_row + 1 >= ext["m"])

        m.d.comb += [self.macro_vpd.eq(vpd), self.macro_vref.eq(vpd)]
        m.d.sync += pipe_valid.eq(0)
        with m.If(refresh):
            m.d.comb += [self.macro_ref.eq(1), self.macro_row.eq(head.row), push.eq(1),
                         push_row.eq(head.row)]

        advance, with_mid = walk_advance()

        def walk_step():
            with m.If(~last_plane):
                m.d.sync += [plane.eq(plane + 1), row.eq(row + 1)]
            with m.Elif(~last_mid):
                m.d.sync += [plane.eq(0), *advance, *with_mid]
            with m.Else():
                m.d.sync += [plane.eq(0), mid.eq(0), beat.eq(0), lane.eq(0),
                             outer.eq(outer + outer_step), *advance]

        def next_step():
            """Advance the odometer after the last input row of a step."""
            for d in DIMS:
                with m.If(inc[d]):
                    m.d.sync += pos[d].eq(Mux(last[d], 0, pos[d] + tile[d]))

        with m.FSM(name="pim"):
            with m.State("IDLE"):
                m.d.comb += self.desc.ready.eq(1)
                with m.If(self.desc.valid):
                    m.d.sync += [desc.eq(self.desc.payload), vpd.eq(self.desc.payload.vpd),
                                 *(pos[d].eq(0) for d in DIMS), m_row.eq(0),
                                 *walk_reset()]
                    m.d.comb += flush.eq(1)
                    m.next = "LOAD"
            with m.State("LOAD"):
                m.d.comb += self.busy.eq(1)
                with m.If(~refresh):
                    m.d.comb += [self.weights.ready.eq(1)]
                    with m.If(self.weights.valid):
                        m.d.comb += [self.macro_we.eq(1), self.macro_row.eq(row),
                                     self.macro_wdata.eq(self.weights.payload), push.eq(1),
                                     push_row.eq(row)]
                        m.d.sync += live.bit_select(row, 1).eq(1)
                        walk_step()
                        with m.If(last_row):
                            m.d.sync += [*walk_reset(), in_beat.eq(0)]
                            m.next = "INPUT"
            with m.State("INPUT"):
                m.d.comb += self.busy.eq(1)
                with m.If(~refresh):
                    m.d.comb += self.inputs.ready.eq(1)
                    with m.If(self.inputs.valid):
                        m.d.comb += in_we.eq(1)
                        m.d.sync += in_beat.eq(in_beat + 1)
                        with m.If((in_beat + 1) * F >= ext["k"]):
                            m.d.sync += j.eq(0)
                            m.next = "COMPUTE"
            with m.State("COMPUTE"):
                m.d.comb += self.busy.eq(1)
                with m.If(~refresh & can_activate):
                    m.d.comb += [self.macro_re.eq(1), self.macro_row.eq(row),
                                 self.macro_inbits.eq(inbits), self.psum.ready.eq(need_psum)]
                    m.d.sync += [pipe_valid.eq(1), pipe_first.eq(group_first),
                                 pipe_last.eq(group_last), pipe_shift.eq(shift),
                                 pipe_neg.eq(negate),
                                 pipe_m.eq(pos["m"] + m_row),
                                 pipe_n0.eq(pos["n"] + outer),
                                 pipe_lastk.eq(last["k"])]
                    # The PU reads init only on a group's first activation: load it then alone,
                    # so its acc_words flops hold (and clock-gate) the rest of the group.
                    with m.If(group_first):
                        m.d.sync += pipe_init.eq(Mux(need_psum, self.psum.payload, 0))
                    with m.If(j != ib - 1):
                        m.d.sync += j.eq(j + 1)
                    with m.Else():
                        m.d.sync += j.eq(0)
                        with m.If(final_sweep):

                            m.d.sync += live.bit_select(row, 1).eq(0)
                        walk_step()
                        with m.If(last_row):
                            m.d.sync += [*walk_reset(), in_beat.eq(0)]
                            with m.If(m_row + 1 < ext["m"]):
                                m.d.sync += m_row.eq(m_row + 1)
                                m.next = "INPUT"
                            with m.Elif(gemm_last):
                                m.next = "DRAIN"
                            with m.Else():
                                m.d.sync += m_row.eq(0)
                                next_step()
                                with m.If(tile_ends):
                                    m.d.comb += flush.eq(1)
                                    m.next = "LOAD"
                                with m.Else():
                                    m.next = "INPUT"
            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(~pipe_valid & (~out_valid | self.result.ready)):
                    m.next = "IDLE"
        return m


def build_top(cfg: PimConfig) -> tuple[str, PimCore]:
    """Top of ``memwall gen`` for a PIM config: the controller and PU (the macro is external)."""
    return TOP_NAME, PimCore(cfg)
