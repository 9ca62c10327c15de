"""The KVNAND plane PE: ``n_fmac`` FP32 FMACs on the page register (arithmetic, order and
formats: :mod:`memwall.golden.kvnand.pe`).

Per command (GEMV, LOGIT or ATTEND over one page) an issue stage steps through the page's
elements ``J = n_fmac / G`` at a time, ``G`` the command's heads, and gives lane ``k = g*J + j``
element ``j`` of the step and lane ``k`` of an input-vector word. The pipeline behind it::

    R1  the lane's raw element, the input word and the scale (memories read at issue)
    M1  FP32 element x scale (scaled formats only; exact), mul_stages
    R2
    M2  FP32 element x input (exact but at the range's ends), mul_stages
    R3  acc[k][addr] = (first ? +0 : acc) + product   (one FpAdd a lane, accumulator memory)
    T0..T_log2(n)   a pairwise tree over a head's J lane sums at a row's or token's end
    serialiser -> result FIFO -> ``result``

The pipeline never stalls: the issue stage waits for a page beat and, before a step that ends a
row or token, for room in the result FIFO for its G outputs (credits), so back-pressure on
``result`` only holds the issue stage. An ATTEND command with ``emit`` then streams its
accumulators out, head by head. A command ends when its last output is in the FIFO;
``cmd.ready`` is high between commands.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, ceil_log2, exact_log2

from memwall.families.kvnand.config import KvnandConfig
from memwall.golden.kvnand.pe import KINDS, add_stage, input_kind, page_kind
from memwall.golden.kvnand.pe import latency as golden_latency
from memwall.hdl.common.fixed import leading_one
from memwall.hdl.common.fp import FpAdd, FpMul
from memwall.hdl.common.netlist import unique_submodule
from memwall.hdl.common.pipeline import delay

__all__ = ["Pe", "command_layout", "MODE_CODES"]

MODE_CODES = {"gemv": 0, "logit": 1, "attend": 2}
ONE_FP32 = 0x3F80_0000


def command_layout(cfg: KvnandConfig) -> data.StructLayout:
    """A page command: ``units`` rows (GEMV) or tokens, of ``width`` elements (cols or d);
    ``heads_log2`` G = 2**heads_log2 (GEMV: 0); ATTEND's ``clear`` and ``emit``;
    ``vec_base`` the first input-vector word."""
    most = max(cfg.page_elements(kind) for kind in cfg.kinds)
    return data.StructLayout({
        "mode": 2, "units": bits_for(most), "width": bits_for(most),
        "heads_log2": bits_for(exact_log2(cfg.max_heads)), "clear": 1, "emit": 1,
        "vec_base": ceil_log2(cfg.vec_words)})


def _int_to_fp32(m: Module, value, name: str) -> Signal:
    """FP32 bits of a 16-bit two's-complement integer of at most 8 magnitude bits (INT8 and
    INT4 elements; exact)."""
    neg = value[15]
    mag = Signal(8, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(neg, -value, value))
    top = leading_one(m, mag, f"{name}_top")
    shift, exp = Signal(5, name=f"{name}_shift"), Signal(8, name=f"{name}_exp")
    man = Signal(24, name=f"{name}_man")
    m.d.comb += [shift.eq(23 - top), exp.eq(top + 127), man.eq(mag << shift)]
    out = Signal(32, name=name)
    m.d.comb += out.eq(Mux(mag == 0, 0, Cat(man[:23], exp, neg)))
    return out


class Pe(wiring.Component):
    """One plane's PE.

    Attributes
    ----------
    cmd : In(stream.Signature(command_layout(cfg)))
    page : In(stream.Signature(cfg.beat_bits))
        Page beats: a command's elements from its first, ``beat_bits / bits`` a beat.
    vec_we, vec_addr, vec_data : In
        Write an input-vector word (``n_fmac`` lanes of 16 bits); between commands.
    scale_we, scale_addr, scale_data : In
        Write a BF16 scale of a scaled page's group (only where the format has scales).
    result : Out(stream.Signature(32))
        FP32 results in the order of :mod:`memwall.golden.kvnand.pe`.
    busy : Out(1)
    """

    def __init__(self, cfg: KvnandConfig):
        self.cfg = cfg
        self.n = cfg.n_fmac
        self.scaled = cfg.scaled
        self.fifo_depth = 1 << ceil_log2(self._r3() + exact_log2(cfg.n_fmac)
                                         + 4 * cfg.max_heads + 4)
        self.params = {"n": cfg.n_fmac, "fmt": cfg.fmt, "page": cfg.page_bytes,
                       "group": cfg.group, "heads": cfg.max_heads, "d": cfg.max_d,
                       "vec": cfg.vec_words, "mul": cfg.mul_stages}
        ports = {"cmd": In(stream.Signature(command_layout(cfg))),
                 "page": In(stream.Signature(cfg.beat_bits)),
                 "vec_we": In(1), "vec_addr": In(range(cfg.vec_words)),
                 "vec_data": In(16 * cfg.n_fmac),
                 "result": Out(stream.Signature(32)), "busy": Out(1)}
        if self.scaled:
            ports.update({"scale_we": In(1), "scale_addr": In(range(cfg.scale_words)),
                          "scale_data": In(16)})
        super().__init__(ports)

    # -- timing -----------------------------------------------------------------------------------
    def _r3(self) -> int:
        """Pipeline stage of the accumulator add (R1 is stage 0): the golden timing's
        :func:`~memwall.golden.kvnand.pe.add_stage`, which :meth:`elaborate` asserts it
        builds."""
        return add_stage(self.cfg.mul_stages, self.scaled)

    def latency(self, mode: str, heads_log2: int = 0, emit: bool = False) -> int:
        """Cycles of a command beyond its steps: :func:`memwall.golden.kvnand.pe.latency`."""
        return golden_latency(self.n, self.cfg.mul_stages, self.scaled, mode, 1 << heads_log2,
                              emit)

    # -- datapath -------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        cfg, n = self.cfg, self.n
        log_n = exact_log2(n)
        kinds = {mode: page_kind(cfg.fmt, mode) for mode in MODE_CODES}
        in_int = input_kind(cfg.fmt) == "int8"

        m.submodules.vec = vec = memory.Memory(shape=16 * n, depth=cfg.vec_words, init=[])
        vec_w, vec_r = vec.write_port(), vec.read_port(transparent_for=())
        m.d.comb += [vec_w.en.eq(self.vec_we), vec_w.addr.eq(self.vec_addr),
                     vec_w.data.eq(self.vec_data)]
        if self.scaled:
            m.submodules.scales = sc = memory.Memory(shape=16, depth=cfg.scale_words, init=[])
            sc_w, sc_r = sc.write_port(), sc.read_port(transparent_for=())
            m.d.comb += [sc_w.en.eq(self.scale_we), sc_w.addr.eq(self.scale_addr),
                         sc_w.data.eq(self.scale_data)]
        m.submodules.acc = acc = memory.Memory(shape=32 * n, depth=cfg.acc_words, init=[])
        acc_w = acc.write_port()
        acc_r = acc.read_port(transparent_for=(acc_w,))
        m.submodules.out = out = fifo.SyncFIFOBuffered(width=32, depth=self.fifo_depth)
        m.d.comb += [self.result.valid.eq(out.r_rdy), self.result.payload.eq(out.r_data),
                     out.r_en.eq(self.result.ready)]

        # --- command and issue state ---------------------------------------------------------
        cmd = Signal(command_layout(cfg), name="cur")
        u = Signal.like(cmd.units, name="unit")
        s = Signal.like(cmd.width, name="step")
        off = Signal(range(max(n * 16 // KINDS[k] for k in kinds.values()) + 1), name="off")
        pos = Signal(bits_for(max(cfg.page_elements(k) for k in kinds.values())), name="pos")
        beat = Signal(cfg.beat_bits, name="beat")
        have = Signal(name="have")
        committed = Signal(range(self.fifo_depth + 1), name="committed")

        heads = Signal(range(cfg.max_heads + 1), name="heads")
        lanes_j = Signal(range(n + 1), name="lanes_j")      # J
        steps = Signal.like(cmd.width, name="steps")
        level = Signal(range(log_n + 1), name="level")     # log2(J)
        m.d.comb += [level.eq(log_n - cmd.heads_log2), heads.eq(1 << cmd.heads_log2),
                     lanes_j.eq(n >> cmd.heads_log2), steps.eq(cmd.width >> level)]
        is_attend = cmd.mode == MODE_CODES["attend"]
        gemv = cmd.mode == MODE_CODES["gemv"]
        per_beat = Signal.like(off, name="per_beat")        # elements in a beat, this kind
        m.d.comb += per_beat.eq(Mux(gemv, n * 16 // KINDS[kinds["gemv"]],
                                    n * 16 // KINDS[kinds["logit"]]))
        last_step = s == steps - 1
        final = last_step & (u == cmd.units - 1)
        unit_end = last_step & ~is_attend
        room = committed + heads <= self.fifo_depth
        issue = Signal(name="issue")
        consume = Signal(name="consume")
        m.d.comb += consume.eq(issue & ((off + lanes_j == per_beat) | final))
        m.d.comb += self.page.ready.eq(~have | consume)
        with m.If(self.page.valid & self.page.ready):
            m.d.sync += [beat.eq(self.page.payload), have.eq(1)]
        with m.Elif(consume):
            m.d.sync += have.eq(0)

        # --- stage R1: raw elements, memory reads ---------------------------------------------
        flag_layout = data.StructLayout({"valid": 1, "first": 1, "last": 1,
                                         "addr": range(cfg.acc_words), "int": 1})
        depth = self._r3() + 1
        flags = [Signal(flag_layout, name=f"flags{i}") for i in range(depth)]
        issued = Signal(flag_layout, name="issued")
        m.d.comb += [issued.valid.eq(issue), issued.last.eq(unit_end),
                     issued.first.eq(Mux(is_attend, cmd.clear & (u == 0), s == 0)),
                     issued.addr.eq(Mux(is_attend, s, 0)),
                     issued.int.eq(Mux(gemv, kinds["gemv"] != "bf16",
                                       kinds["logit"] != "bf16"))]
        m.d.sync += flags[0].eq(issued)
        for i in range(1, depth):
            m.d.sync += flags[i].eq(flags[i - 1])
        m.d.comb += vec_r.addr.eq(cmd.vec_base + Mux(is_attend, u, s))
        if self.scaled:
            m.d.comb += sc_r.addr.eq(pos >> exact_log2(cfg.group))

        raw = Signal(16 * n, name="raw")      # R1: each lane's element, 16 bits
        for k in range(n):
            mask = Signal(range(n), name=f"mask{k}")
            m.d.comb += mask.eq(k & (lanes_j - 1))
            picks = []
            for kind in dict.fromkeys(kinds.values()):
                bits = KINDS[kind]
                chosen = Signal(bits, name=f"el{k}_{kind}")
                m.d.comb += chosen.eq(beat.word_select(off | mask, bits))
                picks.append((kind, chosen if bits == 16 else chosen.as_signed()))
            wide = picks[0][1] if len(picks) == 1 else Mux(gemv, *(dict(picks)[kinds[mode]]
                                                               for mode in ("gemv", "logit")))
            with m.If(issue):
                m.d.sync += raw.word_select(k, 16).eq(wide)

        # --- R1 -> M1 -> R2 -> M2 -> R3 ------------------------------------------------------
        ms = cfg.mul_stages
        valid = [f.valid for f in flags]
        a32, b32 = [], []
        for k in range(n):
            lane = raw.word_select(k, 16)
            as_int = _int_to_fp32(m, lane, f"a_int{k}")
            a32.append(Mux(flags[0].int, as_int, Cat(Const(0, 16), lane)))
            vin = vec_r.data.word_select(k, 16)
            b32.append(_int_to_fp32(m, vin, f"b_int{k}") if in_int else Cat(Const(0, 16), vin))
        stage = 0
        if self.scaled:
            scale = Mux(flags[0].int, Cat(Const(0, 16), sc_r.data), ONE_FP32)
            deq = []
            for k in range(n):
                mul = FpMul("fp32", ms)
                unique_submodule(m, f"dequant{k}", mul)
                m.d.comb += [mul.a.eq(a32[k]), mul.b.eq(scale)]
                if ms:
                    m.d.comb += mul.load.eq(Cat(*valid[0:ms]))
                deq.append(mul.y)
            b32 = [delay(m, b, valid[0:ms], f"b{k}_m1") for k, b in enumerate(b32)]
            r2a = [Signal(32, name=f"r2a{k}") for k in range(n)]
            r2b = [Signal(32, name=f"r2b{k}") for k in range(n)]
            m.d.sync += [r.eq(v) for r, v in zip(r2a + r2b, deq + b32, strict=True)]
            a32, b32, stage = r2a, r2b, ms + 1
        products = []
        for k in range(n):
            mul = FpMul("fp32", ms)
            unique_submodule(m, f"mul{k}", mul)
            m.d.comb += [mul.a.eq(a32[k]), mul.b.eq(b32[k])]
            if ms:
                m.d.comb += mul.load.eq(Cat(*valid[stage:stage + ms]))
            products.append(mul.y)
        r3 = self._r3()
        assert r3 == stage + ms + 1
        prod = Signal(32 * n, name="prod")
        m.d.sync += prod.eq(Cat(*products))

        # --- R3: accumulate --------------------------------------------------------------------
        f3 = flags[r3]
        m.d.comb += [acc_r.addr.eq(flags[r3 - 1].addr)]
        sums = []
        for k in range(n):
            add = FpAdd("fp32")
            unique_submodule(m, f"acc{k}", add)
            m.d.comb += [add.a.eq(Mux(f3.first, 0, acc_r.data.word_select(k, 32))),
                         add.b.eq(prod.word_select(k, 32))]
            sums.append(add.y)
        m.d.comb += [acc_w.en.eq(f3.valid), acc_w.addr.eq(f3.addr), acc_w.data.eq(Cat(*sums))]

        # --- the tree, the serialiser ----------------------------------------------------------
        level_vals = [Signal(32 * n, name="tree0")]
        level_valid = [Signal(name="tree0_valid")]
        m.d.sync += level_valid[0].eq(f3.valid & f3.last)
        with m.If(f3.valid & f3.last):
            m.d.sync += level_vals[0].eq(Cat(*sums))
        for lvl in range(1, log_n + 1):
            width = n >> lvl
            vals, ok = Signal(32 * width, name=f"tree{lvl}"), Signal(name=f"tree{lvl}_valid")
            prev = level_vals[-1]
            outs = []
            for i in range(width):
                add = FpAdd("fp32")
                unique_submodule(m, f"tree{lvl}_{i}", add)
                m.d.comb += [add.a.eq(prev.word_select(2 * i, 32)),
                             add.b.eq(prev.word_select(2 * i + 1, 32))]
                outs.append(add.y)
            m.d.sync += ok.eq(level_valid[-1])
            with m.If(level_valid[-1]):
                m.d.sync += vals.eq(Cat(*outs))
            level_vals.append(vals)
            level_valid.append(ok)

        ser = Signal(32 * cfg.max_heads, name="ser")
        ser_count = Signal(range(cfg.max_heads + 1), name="ser_count")
        push = Signal(name="push")
        push_data = Signal(32, name="push_data")
        with m.If(ser_count != 0):
            m.d.comb += [push.eq(1), push_data.eq(ser[:32])]
            m.d.sync += [ser.eq(ser >> 32), ser_count.eq(ser_count - 1)]
        for h in range(exact_log2(cfg.max_heads) + 1):
            lvl = log_n - h
            with m.If((cmd.heads_log2 == h) & level_valid[lvl]):
                m.d.sync += [ser.eq(level_vals[lvl][:32 << h]), ser_count.eq(1 << h)]

        # --- command sequencing, ATTEND's emit ---------------------------------------------
        emit_g = Signal.like(heads, name="emit_g")
        emit_i = Signal.like(cmd.width, name="emit_i")
        emit_read = Signal(name="emit_read")
        emit_lane = Signal(range(n), name="emit_lane")
        emit_valid = Signal(name="emit_valid")
        m.d.sync += emit_valid.eq(emit_read)
        with m.If(emit_read):
            m.d.sync += emit_lane.eq((emit_g << level)
                                     | (emit_i & (lanes_j - 1)))
        with m.If(emit_valid):
            m.d.comb += [push.eq(1), push_data.eq(acc_r.data.word_select(emit_lane, 32))]
        m.d.comb += [out.w_en.eq(push), out.w_data.eq(push_data)]

        pops = out.r_en & out.r_rdy
        commit = Signal(range(cfg.max_heads + 1), name="commit")
        m.d.sync += committed.eq(committed + commit - pops)
        pipeline_busy = Cat(*valid, *level_valid, emit_valid).any() | (ser_count != 0)

        with m.FSM(name="pe"):
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    m.d.sync += [cmd.eq(self.cmd.payload), u.eq(0), s.eq(0), off.eq(0),
                                 pos.eq(0)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += issue.eq(have & (~unit_end | room))
                with m.If(issue & unit_end):
                    m.d.comb += commit.eq(heads)
                with m.If(issue):
                    m.d.sync += [pos.eq(pos + lanes_j),
                                 off.eq(Mux(off + lanes_j == per_beat, 0, off + lanes_j))]
                    with m.If(last_step):
                        m.d.sync += [s.eq(0), u.eq(u + 1)]
                    with m.Else():
                        m.d.sync += s.eq(s + 1)
                    with m.If(final):
                        m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(~pipeline_busy):
                    m.d.sync += [emit_g.eq(0), emit_i.eq(0)]
                    with m.If(is_attend & cmd.emit):
                        m.next = "EMIT"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("EMIT"):
                m.d.comb += acc_r.addr.eq(emit_i >> level)
                with m.If(committed + 1 <= self.fifo_depth):
                    m.d.comb += [emit_read.eq(1), commit.eq(1)]
                    with m.If(emit_i == cmd.width - 1):
                        m.d.sync += [emit_i.eq(0), emit_g.eq(emit_g + 1)]
                        with m.If(emit_g == heads - 1):
                            m.next = "FLUSH"
                    with m.Else():
                        m.d.sync += emit_i.eq(emit_i + 1)
            with m.State("FLUSH"):                        # the last emitted value's push
                with m.If(~emit_valid):
                    m.next = "IDLE"
        m.d.comb += self.busy.eq(~self.cmd.ready)
        return m
