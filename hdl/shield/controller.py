"""SHIELD segmented eDRAM controller (paper Fig. 3): field split + lifecycle-aware refresh.

Every word of the activation workspace is split by its number format: the sign+exponent field
goes to the Standard Refresh Bank, the mantissa to the Relaxed Refresh Bank (KV words) or the
Refresh-less Bank (QO words). The banks are external eDRAM macros driven through plain ports; the
controller owns the address map, the per-row liveness and the refresh schedule.

Refresh schedule (shared, word for word, with :mod:`memwall.golden.shield.refresh`): cycle 1 is the
first cycle after reset. A refreshed bank with ``R`` rows and interval ``T`` cycles refreshes row
``r`` in every cycle ``t`` with ``t mod T == (r * T) // R``, provided the row is live in that cycle.
A row is live in cycle ``t`` if a word of its class was written, in a cycle before ``t``, to a row
of the same liveness block (``live_block_rows`` consecutive rows of the class, see
:attr:`ShieldConfig.live_blocks`), and its class was not released in a cycle before ``t``.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.families.shield.config import ShieldConfig
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["Op", "Cls", "RefreshScheduler", "ResponseQueue", "ShieldController", "BANKS",
           "REFRESHED_BANKS", "TOP_NAME", "build_top", "schedule_offset", "request_layout"]

TOP_NAME = "shield_controller"
#: the three eDRAM banks, in port order
BANKS = ("standard", "relaxed", "refreshless")
#: the banks the controller refreshes
REFRESHED_BANKS = ("standard", "relaxed")
#: read responses the controller can hold while ``resp`` is stalled (3 keeps one read per cycle)
RESP_DEPTH = 3


class Op(enum.Enum, shape=2):
    READ = 0
    WRITE = 1
    RELEASE = 2     # kill every word of ``cls`` (its rows stop being refreshed)


class Cls(enum.Enum, shape=1):
    KV = 0          # persistent KV cache: mantissa in the Relaxed Refresh Bank
    QO = 1          # transient Q/O activations: mantissa in the Refresh-less Bank


def schedule_offset(row: int, rows: int, interval: int) -> int:
    """Cycle phase (``t mod interval``) at which ``row`` of a ``rows``-row bank is refreshed."""
    return (row * interval) // rows


def request_layout(cfg: ShieldConfig) -> data.StructLayout:
    """Payload of the controller's ``req`` stream (fields packed LSB-first in this order)."""
    return data.StructLayout({
        "op": Op, "cls": Cls, "addr": unsigned(cfg.addr_width), "data": cfg.word_bits})


def _width(count: int) -> int:
    """Bits of an index into ``count`` items (at least 1, so empty banks keep legal ports)."""
    return max(1, ceil_log2(max(count, 1)))


class RefreshScheduler(wiring.Component):
    """Names the row whose refresh slot is the current cycle, for a ``rows``-row bank.

    Row ``r``'s slot is the cycle ``t`` (cycles since reset, 1 in the first cycle after reset)
    with ``t mod interval == (r * interval) // rows``. The row pointer holds the next row to
    refresh, and a down-counter the cycles until its slot: ``slot`` is high when it reaches 0;
    the pointer then advances (wrapping after the last row) and the counter reloads with the gap
    to the next row's slot, ``interval // rows`` or one more, kept exactly by a Bresenham
    remainder ``(row * interval) mod rows`` (the last row's gap closes the interval). So no
    multiplier, divider or offset table is needed, and no phase counter: only the counter's
    ``log2(interval / rows)`` bits change in a cycle without a slot (a phase counter and its
    comparators toggled every cycle). Slots are distinct because ``interval > rows``.
    ``next_row`` is the pointer's value in the next cycle, so a client can look up that row's
    state one cycle ahead (the controller registers the row's liveness, keeping its per-row
    lookup off the access path).

    Parameters
    ----------
    rows : int
        Rows of the bank, ``>= 1``.
    interval : int
        Refresh interval in cycles, ``> rows``.

    Attributes
    ----------
    row : Out(range(rows))
        Row whose slot this is (valid when ``slot``).
    slot : Out(1)
        This cycle is ``row``'s refresh slot.
    next_row : Out(range(rows))
        ``row`` in the next cycle.
    params : dict
        ``{"rows": rows, "interval": interval}``.
    """

    def __init__(self, rows: int, interval: int):
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise ValueError(f"rows must be an int >= 1, got {rows!r}")
        if not isinstance(interval, int) or isinstance(interval, bool) or interval <= rows:
            raise ValueError(f"interval must be an int > rows ({rows}), got {interval!r}")
        self.rows, self.interval = rows, interval
        self.params = {"rows": rows, "interval": interval}
        super().__init__({"row": Out(range(rows)), "slot": Out(1),
                          "next_row": Out(range(rows))})

    @property
    def staged(self) -> bool:
        """The successor of the pointer is precomputed into registers (``T >= 2 R``: slots are
        at least two cycles apart, so the cycle after a slot has time to compute it)."""
        return self.interval >= 2 * self.rows

    def elaborate(self, platform):
        m = Module()
        R, T = self.rows, self.interval
        step, step_frac = divmod(T, R)
        # State in cycle 1 (phase 1): the first row whose slot is not behind it, or row 0 of the
        # next interval, and the cycles until that slot.
        phase0 = 1 % T
        row0 = next((r for r in range(R) if schedule_offset(r, R, T) >= phase0), 0)
        wait0 = schedule_offset(row0, R, T) - phase0 if row0 or phase0 == 0 else T - phase0
        row = Signal(range(R), init=row0)
        frac = Signal(range(R), init=(row0 * T) % R)       # (row * T) mod R
        wait_max = max(step + 1, wait0 + 1)
        wait = Signal(range(wait_max), init=wait0)

        def successor(row, frac):
            """(row, remainder, wait) after ``row``'s slot: the next row, its remainder and
            the cycles from this slot to its slot, minus one."""
            last = row == R - 1
            carry = frac + step_frac >= R
            return (Mux(last, 0, row + 1),
                    Mux(last, 0, Mux(carry, frac + step_frac - R, frac + step_frac)),
                    Mux(last, T - schedule_offset(R - 1, R, T) - 1, step - 1 + carry))

        slot = Signal()
        m.d.comb += [slot.eq(wait == 0), self.slot.eq(slot), self.row.eq(row)]
        if self.staged:
            # The successor waits in registers, computed in the cycle after each slot: the
            # pointer and remainder then load from registers under the slot alone (a hold
            # multiplexer a clock gate can take; an adder in front of them made them toggle
            # their clock pins every cycle), and ``next_row`` is a multiplexer, not an adder.
            # Their value in cycle 1: row0's successor, from the schedule itself.
            nxt0 = (row0 + 1) % R
            succ0 = (nxt0, (nxt0 * T) % R,
                     (schedule_offset(nxt0, R, T) - schedule_offset(row0, R, T) - 1) % T)
            n_row = Signal(range(R), name="succ_row", init=succ0[0])
            n_frac = Signal(range(R), name="succ_frac", init=succ0[1])
            n_wait = Signal(range(wait_max), name="succ_wait", init=succ0[2])
            after = Signal(name="after_slot")
            m.d.sync += after.eq(slot)
            with m.If(after):
                m.d.sync += [sig.eq(v) for sig, v in zip((n_row, n_frac, n_wait),
                                                         successor(row, frac), strict=True)]
            m.d.comb += self.next_row.eq(Mux(slot, n_row, row))
            with m.If(slot):
                m.d.sync += [row.eq(n_row), frac.eq(n_frac), wait.eq(n_wait)]
            with m.Else():
                m.d.sync += wait.eq(wait - 1)
            return m
        # Slots may be one cycle apart: the successor is computed in the slot's cycle.
        s_row, s_frac, s_wait = successor(row, frac)
        m.d.comb += self.next_row.eq(Mux(slot, s_row, row))
        with m.If(slot):
            m.d.sync += [row.eq(s_row), frac.eq(s_frac), wait.eq(s_wait)]
        with m.Else():
            m.d.sync += wait.eq(wait - 1)
        return m


class _Liveness:
    """Per-class liveness bits (one per block of rows), each word of them loaded from a
    one-entry write stage of its own, built into ``m``.

    A write to a block not yet live (the filter: a write to a live block changes nothing) loads
    its word's stage with the word, the block's bit set; the cycle after, the word loads from
    its stage. So a word's bits load from their stage alone, under one enable, and only when a
    block first becomes live: they hold (and clock-gate) in every other cycle, as does the
    stage. A stage per word, not one shared by all: a shared stage's bit ``i`` would feed bit
    ``i`` of every word, and the clock-gating analysis then keys every such bit apart. The
    liveness in a cycle is the bits OR the stages (:meth:`lookup`). A release of a class clears
    its bits (and its staged words) from the next cycle.

    Words are ``word_bits`` wide: a power of two, the whole class up to 64 blocks, else about
    the square root of the blocks and at least 64 (a word's flops make one clock-gating group,
    and the fewer the stages the fewer the gates); the last word of a class padded with zeros.
    Class 1 is KV, 0 QO (:class:`Cls` values).
    """

    def __init__(self, m: Module, blocks: dict[str, int]):
        self.m = m
        n = {1: max(blocks["kv"], 1), 0: max(blocks["qo"], 1)}
        widest = max(n.values())
        self.word_log = ceil_log2(widest) if widest <= 64 else max(6, ceil_log2(widest) // 2)
        self.word_bits = wb = 1 << self.word_log
        self.n = n
        self.bits = {1: Signal(n[1], name="kv_live"), 0: Signal(n[0], name="qo_live")}
        self.count = {c: -(-n[c] // wb) for c in n}
        self.words = {c: [self._padded(self.bits[c][w * wb:(w + 1) * wb])
                          for w in range(self.count[c])] for c in n}
        prefix = {1: "kv", 0: "qo"}
        self.st_valid = {c: [Signal(name=f"live_stage_{prefix[c]}{w}_valid")
                             for w in range(self.count[c])] for c in n}
        self.st_word = {c: [Signal(wb, name=f"live_stage_{prefix[c]}{w}")
                            for w in range(self.count[c])] for c in n}
        # Each word with its stage: the liveness this cycle.
        self.now_words = {c: [w_bits | Mux(v, st, 0) for w_bits, v, st in
                              zip(self.words[c], self.st_valid[c], self.st_word[c],
                                  strict=True)] for c in n}
        # The liveness this cycle, whole (for the formal harness; unused in the netlist).
        for c, name in ((1, "kv_live_now"), (0, "qo_live_now")):
            now = Signal(n[c], name=name)
            m.d.comb += now.eq(Cat(*self.now_words[c])[:n[c]])

    def _padded(self, bits: Value) -> Value:
        """``bits`` widened to a word with zeros (the last word of a class)."""
        short = self.word_bits - len(bits)
        return Cat(bits, Const(0, short)) if short else bits

    def _split(self, block: Value) -> tuple[Value, Value]:
        """(word index, bit in the word) of a block index."""
        if not self.word_log:
            return block, Const(0, 1)
        return block[self.word_log:], block[:self.word_log]

    def _word(self, cls: int, index: Value, words) -> Value:
        return Array(words[cls])[index] if self.count[cls] > 1 else words[cls][0]

    def lookup(self, cls: int, block: Value) -> Value:
        """Is ``block`` of class ``cls`` live this cycle (``block`` below the class's blocks)."""
        index, bit = self._split(block)
        return self._word(cls, index, self.now_words).bit_select(bit, 1)

    def update(self, write: Value, is_kv: Value, block: Value, release_kv: Value,
               release_qo: Value) -> None:
        """``write``: a word of ``block`` of the class ``is_kv`` is written this cycle; a
        release of each class this cycle (never in the cycle of a write)."""
        m, wb = self.m, self.word_bits
        index, bit = self._split(block)
        # Named signals, so the per-word logic refers to them instead of repeating them.
        mark, new_bit = Signal(name="live_mark"), Signal(wb, name="live_new_bit")
        m.d.comb += [mark.eq(write & ~Mux(is_kv, self.lookup(1, block), self.lookup(0, block))),
                     new_bit.eq((Const(1, wb) << bit)[:wb])]
        for cls, gone in ((1, release_kv), (0, release_qo)):
            mine = Signal(name=f"live_mark_{'kv' if cls else 'qo'}")
            m.d.comb += mine.eq(mark & (is_kv == cls))
            for w in range(self.count[cls]):
                valid, stage = self.st_valid[cls][w], self.st_word[cls][w]
                here = mine & (index == w) if self.count[cls] > 1 else mine
                m.d.sync += valid.eq(here)
                with m.If(here):
                    m.d.sync += stage.eq(self.now_words[cls][w] | new_bit)
                bits = self.bits[cls][w * wb:min((w + 1) * wb, self.n[cls])]
                with m.If(gone | valid):
                    m.d.sync += bits.eq(Mux(gone, 0, stage[:len(bits)]))
        # Each stage's word holds its word's bits (so loading it loses none) and no bit past
        # the class's blocks: a proof invariant (the formal harness asserts it; unused in the
        # netlist).
        ok = []
        for cls in self.n:
            for w in range(self.count[cls]):
                mask = (1 << max(0, min(wb, self.n[cls] - w * wb))) - 1
                stage = self.st_word[cls][w]
                ok.append(~self.st_valid[cls][w]
                          | (((self.words[cls][w] & ~stage) | (stage & ~Const(mask, wb))) == 0))
        covers = Signal(name="live_stage_covers")
        m.d.comb += covers.eq(Cat(*ok).all())


class ResponseQueue(wiring.Component):
    """A first-in first-out queue of ``depth`` words in flip-flops, with the ports of
    :class:`amaranth.lib.fifo.SyncFIFO` (``w_data``, ``w_en``, ``w_rdy``, ``r_data``, ``r_en``,
    ``r_rdy``, ``level``; ``r_data`` is the head while ``r_rdy``).

    Its entries are registers, each loading only when written (one enable per entry), rather
    than SyncFIFO's memory with an asynchronous read port, which no SRAM macro implements, so
    synthesis would leave it unmapped and its area and power uncounted.

    Parameters
    ----------
    width : int
        Bits of a word, ``>= 1``.
    depth : int
        Words held, ``>= 1``.
    """

    def __init__(self, width: int, depth: int):
        for key, value in (("width", width), ("depth", depth)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{key} must be an int >= 1, got {value!r}")
        self.width, self.depth = width, depth
        super().__init__({"w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
                          "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
                          "level": Out(range(depth + 1))})

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        entries = [Signal(self.width, name=f"entry{i}") for i in range(depth)]
        produce = Signal(range(depth), name="produce")
        consume = Signal(range(depth), name="consume")
        level = Signal(range(depth + 1), name="level")
        write = self.w_en & self.w_rdy
        read = self.r_en & self.r_rdy
        m.d.comb += [self.w_rdy.eq(level != depth), self.r_rdy.eq(level != 0),
                     self.level.eq(level),
                     self.r_data.eq(Array(entries)[consume] if depth > 1 else entries[0])]
        for i, entry in enumerate(entries):
            with m.If(write & (produce == i)):
                m.d.sync += entry.eq(self.w_data)
        with m.If(write):
            m.d.sync += produce.eq(Mux(produce == depth - 1, 0, produce + 1))
        with m.If(read):
            m.d.sync += consume.eq(Mux(consume == depth - 1, 0, consume + 1))
        m.d.sync += level.eq(level + write - read)
        return m


class ShieldController(wiring.Component):
    """SHIELD segmented eDRAM controller: splits words by field, refreshes live rows on schedule.

    Commands on ``req`` are processed in order, at most one per cycle:

    * ``WRITE cls addr data``: the high field ``data[lo_bits:]`` (sign + exponent) is written to
      the Standard Refresh Bank at ``addr`` (KV) or ``kv_words + addr`` (QO); the mantissa
      ``data[:lo_bits]`` to the Relaxed Refresh Bank (KV) or the Refresh-less Bank (QO) at
      ``addr``. The rows written become live from the next cycle.
    * ``READ cls addr``: both fields are read and the reassembled word is returned on ``resp``
      two cycles after the command is accepted (bank read data arrives one cycle after ``re``
      and is queued in a ``RESP_DEPTH``-entry buffer). Responses come back in command order.
    * ``RELEASE cls``: every word of ``cls`` dies (QO at the end of a layer); its rows stop
      being refreshed from the next cycle. Needs no bank and is never stalled.

    Bank address ``a`` is row ``a // row_words``, column ``a % row_words``. An ``addr`` outside
    the class region (``>= kv_words`` / ``>= qo_words``) is a protocol error: such a write is
    dropped and such a read returns 0. Undefined op codes are accepted and ignored.

    Refresh: see the module docstring for the schedule. A refresh drives ``<bank>_ref`` with the
    row on ``<bank>_row`` and takes priority over accesses: a READ or WRITE that needs a bank in
    its refresh cycle is not accepted that cycle (``req.ready`` low) and retries the next, so no
    live row ever waits longer than its interval. Every READ/WRITE needs the standard bank; KV
    accesses also the relaxed bank. The Refresh-less Bank is never refreshed. Liveness is kept
    per class in blocks of ``live_block_rows`` rows (``kv_words`` may share a standard-bank row
    with QO words: the row stays live while either class's block is): a write makes its row's
    whole block live. Each word of the bits loads from a one-entry write stage of its own, and
    only when a block first becomes live, so they hold (and clock-gate) under one enable per
    word (:class:`_Liveness`). The controller keeps no refresh counters (the testbench counts the
    ``<bank>_ref`` strobes the banks see): a 32-bit event counter per bank would clock 64
    flip-flops every cycle for an observability feature.

    ``req.ready`` depends combinationally on ``req.payload`` (op and class) and on the refresh
    state; the bank ports are driven combinationally from the accepted command. Throughput is one
    command per cycle except in refresh cycles: with every standard row live, ``rows / T_std``
    of all cycles refresh the standard bank (16/45 in ``shield_small``, 4096/45000 in
    ``shield_2mb``), so a burst of accesses runs that much longer than one word per cycle.

    Parameters
    ----------
    cfg : ShieldConfig
        Format (``hi_bits``/``lo_bits``), ``kv_words``, ``qo_words``, ``row_words`` and the
        intervals ``t_std_cycles``/``t_rel_cycles``; each interval must exceed its bank's rows
        so accesses find free cycles.
    interval_scale : int
        Verification hook, default 1: multiplies both refresh intervals, i.e. breaks the
        schedule on purpose so a testbench can show that its checks catch a late refresh.
        Never set it in a real design.

    Attributes
    ----------
    req : In(stream.Signature(req_layout))
        Commands; payload fields ``op`` (:class:`Op`, 2 bits), ``cls`` (:class:`Cls`, 1 bit),
        ``addr`` (``cfg.addr_width``), ``data`` (``word_bits``), packed LSB-first in that order.
    resp : Out(stream.Signature(word_bits))
        Read data, one transfer per READ, in order.
    standard_row, standard_col, standard_we, standard_re, standard_wdata : Out
        Standard Refresh Bank access port (``hi_bits`` fields, ``rows(kv_words + qo_words)``
        rows); ``standard_rdata`` (In) is the field read in the previous cycle.
    standard_ref : Out(1)
        Refresh row ``standard_row`` this cycle.
    relaxed_* : as ``standard_*``
        Relaxed Refresh Bank (KV mantissas, ``lo_bits``, ``rows(kv_words)`` rows).
    refreshless_* : as ``standard_*`` without ``_ref``
        Refresh-less Bank (QO mantissas, ``lo_bits``, ``rows(qo_words)`` rows).
    req_layout : StructLayout
        The ``req`` payload layout.
    bank_rows, bank_bits : dict
        Rows and field width of each bank.
    intervals : dict
        Refresh interval in cycles of each refreshed bank (scaled by ``interval_scale``).
    params : dict
        ``format``, ``hi_bits``, ``lo_bits``, ``kv_words``, ``qo_words``, ``row_words``,
        ``t_std_cycles``, ``t_rel_cycles``, ``interval_scale``.
    """

    def __init__(self, cfg: ShieldConfig, *, interval_scale: int = 1):
        if not isinstance(cfg, ShieldConfig):
            raise ValueError(f"cfg must be a ShieldConfig, got {type(cfg).__name__}")
        if not isinstance(interval_scale, int) or isinstance(interval_scale, bool) \
                or interval_scale < 1:
            raise ValueError(f"interval_scale must be an int >= 1 (1 = the real schedule), "
                             f"got {interval_scale!r}")
        self.cfg = cfg
        self.interval_scale = interval_scale
        self.hi_bits, self.lo_bits, self.word_bits = cfg.hi_bits, cfg.lo_bits, cfg.word_bits
        self.kv_words, self.qo_words, self.row_words = cfg.kv_words, cfg.qo_words, cfg.row_words
        self.bank_rows = dict(cfg.bank_rows)
        self.bank_bits = {"standard": cfg.hi_bits, "relaxed": cfg.lo_bits,
                          "refreshless": cfg.lo_bits}
        nominal = {"standard": cfg.t_std_cycles, "relaxed": cfg.t_rel_cycles}
        for bank, key in (("standard", "t_std_cycles"), ("relaxed", "t_rel_cycles")):
            if nominal[bank] <= self.bank_rows[bank]:
                raise ValueError(
                    f"{key} is {nominal[bank]}, but the {bank} bank has {self.bank_rows[bank]} "
                    f"rows: the interval must exceed the rows (one refresh per cycle at most, "
                    f"plus free cycles for accesses); raise the interval, clock_mhz or row_words")
        self.intervals = {bank: t * interval_scale for bank, t in nominal.items()}
        self.params = {
            "format": cfg.format, "hi_bits": cfg.hi_bits, "lo_bits": cfg.lo_bits,
            "kv_words": cfg.kv_words, "qo_words": cfg.qo_words, "row_words": cfg.row_words,
            "t_std_cycles": cfg.t_std_cycles, "t_rel_cycles": cfg.t_rel_cycles,
            "live_block_rows": cfg.live_block_rows, "interval_scale": interval_scale,
        }
        self.req_layout = request_layout(cfg)
        members = {"req": In(stream.Signature(self.req_layout)),
                   "resp": Out(stream.Signature(cfg.word_bits))}
        for bank in BANKS:
            members[f"{bank}_row"] = Out(_width(self.bank_rows[bank]))
            members[f"{bank}_col"] = Out(_width(cfg.row_words))
            members[f"{bank}_we"] = Out(1)
            members[f"{bank}_re"] = Out(1)
            members[f"{bank}_wdata"] = Out(self.bank_bits[bank])
            members[f"{bank}_rdata"] = In(self.bank_bits[bank])
            if bank in REFRESHED_BANKS:
                members[f"{bank}_ref"] = Out(1)
        super().__init__(members)

    def _split(self, address):
        """(row, column) of a bank address; slices when ``row_words`` is a power of two."""
        rw = self.row_words
        if rw & (rw - 1) == 0:
            shift = rw.bit_length() - 1
            return address >> shift, address[:max(shift, 1)] if shift else Const(0, 1)
        return address // rw, address % rw

    def elaborate(self, platform):
        m = Module()
        rows, kv_words, qo_words = self.bank_rows, self.kv_words, self.qo_words

        sched = {}
        for bank in REFRESHED_BANKS:
            sched[bank] = RefreshScheduler(rows[bank], self.intervals[bank])
            unique_submodule(m, f"sched_{bank}", sched[bank])

        # Liveness per class in blocks of ``live_block_rows`` rows (a power of two): KV block
        # ``b`` covers relaxed rows = standard rows ``[b B, (b+1) B)``; QO block ``b`` standard
        # rows ``qo_base + [b B, (b+1) B)``, from the first row that can hold a QO word on (a
        # standard row may hold both classes). See :class:`_Liveness`.
        qo_base = kv_words // self.row_words
        shift = self.cfg.live_block_rows.bit_length() - 1
        live = _Liveness(m, self.cfg.live_blocks)

        # row_live: is the scheduler's row live this cycle. Looked up one cycle ahead (at its
        # next_row, with that cycle's write or release bypassed in) and registered, so the
        # lookup ends at a register instead of sitting in front of req.ready, the bank strobes
        # and the liveness updates.
        row_live = {bank: Signal(name=f"row_live_{bank}") for bank in REFRESHED_BANKS}
        refresh = {}
        for bank in REFRESHED_BANKS:
            refresh[bank] = Signal(name=f"refresh_{bank}")
            m.d.comb += [refresh[bank].eq(sched[bank].slot & row_live[bank]),
                         getattr(self, f"{bank}_ref").eq(refresh[bank])]

        # -- command decode ------------------------------------------------------------------
        cmd = self.req.payload
        is_kv = cmd.cls == Cls.KV
        is_read = cmd.op == Op.READ
        is_write = cmd.op == Op.WRITE
        is_access = is_read | is_write
        in_range = Mux(is_kv, cmd.addr < kv_words, cmd.addr < qo_words)
        std_addr = Signal(range(kv_words + max(qo_words, 1)))
        m.d.comb += std_addr.eq(Mux(is_kv, cmd.addr, kv_words + cmd.addr))
        std_row, std_col = self._split(std_addr)
        lo_row, lo_col = self._split(cmd.addr)

        # Read responses: bank data arrives the cycle after `re` and is queued; a READ is only
        # accepted when the queue has room for it and the read already in flight.
        resp_q = ResponseQueue(self.word_bits, RESP_DEPTH)
        m.submodules.resp_q = resp_q
        rd_pend = Signal()
        rd_kv = Signal()
        rd_ok = Signal()
        room = resp_q.level + rd_pend < RESP_DEPTH

        blocked = refresh["standard"] | (refresh["relaxed"] & is_kv)
        m.d.comb += self.req.ready.eq(~(is_access & (blocked | (is_read & ~room))))
        fire = self.req.valid & self.req.ready
        do_write = fire & is_write & in_range
        do_read = fire & is_read & in_range

        # -- bank ports ----------------------------------------------------------------------
        lo_bank_kv = {"relaxed": 1, "refreshless": 0}
        for bank in BANKS:
            if bank == "standard":
                row, col, use = std_row, std_col, Const(1)
                wdata = cmd.data[self.lo_bits:]
            else:
                row, col = lo_row, lo_col
                use = is_kv if lo_bank_kv[bank] else ~is_kv
                wdata = cmd.data[:self.lo_bits]
            port_row = getattr(self, f"{bank}_row")
            if bank in REFRESHED_BANKS:
                m.d.comb += port_row.eq(Mux(refresh[bank], sched[bank].row, row))
            else:
                m.d.comb += port_row.eq(row)
            m.d.comb += [
                getattr(self, f"{bank}_col").eq(col),
                getattr(self, f"{bank}_wdata").eq(wdata),
                getattr(self, f"{bank}_we").eq(do_write & use),
                getattr(self, f"{bank}_re").eq(do_read & use),
            ]

        # -- liveness ------------------------------------------------------------------------
        # A write makes its row's block live from the next cycle; a release kills its class
        # from the next cycle. KV words sit at standard row == relaxed row.
        release = fire & (cmd.op == Op.RELEASE)
        release_kv, release_qo = release & is_kv, release & ~is_kv
        # The written block, class-relative (std_row >= qo_base for every QO word in range).
        block = Signal(max(ceil_log2(max(max(self.cfg.live_blocks.values()), 2)), 1),
                       name="written_block")
        m.d.comb += block.eq(Mux(is_kv, lo_row >> shift,
                                 (std_row - qo_base)[:len(std_row)] >> shift))
        live.update(do_write, is_kv, block, release_kv, release_qo)

        def blocks_of(row):
            """(KV block, row holds KV words, QO block, row holds QO words) of a standard row."""
            return (row >> shift, row < rows["relaxed"],
                    (row - qo_base)[:len(row)] >> shift, row >= qo_base)

        nxt = {bank: sched[bank].next_row for bank in REFRESHED_BANKS}
        kv_b, kv_in, qo_b, qo_in = blocks_of(nxt["standard"])
        rel_b = nxt["relaxed"] >> shift
        m.d.sync += [
            row_live["standard"].eq(
                (kv_in & live.lookup(1, kv_b) & ~release_kv)
                | (qo_in & live.lookup(0, qo_b) & ~release_qo)
                | (do_write & Mux(is_kv, kv_in & (block == kv_b), qo_in & (block == qo_b)))),
            row_live["relaxed"].eq(
                (live.lookup(1, rel_b) & ~release_kv)
                | (do_write & is_kv & (block == rel_b))),
        ]

        # -- read return ---------------------------------------------------------------------
        m.d.sync += rd_pend.eq(fire & is_read)
        with m.If(fire & is_read):      # held between reads (they steer only read data)
            m.d.sync += [rd_kv.eq(is_kv), rd_ok.eq(in_range)]
        lo = Mux(rd_kv, self.relaxed_rdata, self.refreshless_rdata)
        m.d.comb += [
            resp_q.w_data.eq(Mux(rd_ok, Cat(lo, self.standard_rdata), 0)),
            resp_q.w_en.eq(rd_pend),
            self.resp.valid.eq(resp_q.r_rdy),
            self.resp.payload.eq(resp_q.r_data),
            resp_q.r_en.eq(self.resp.ready),
        ]
        return m


def build_top(cfg: ShieldConfig) -> tuple[str, ShieldController]:
    """Top of ``memwall gen`` for a SHIELD config: the controller (banks are external macros)."""
    return TOP_NAME, ShieldController(cfg)
