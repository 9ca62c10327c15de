"""SHIELD segmented eDRAM controller (paper Fig. 3): field split + lifecycle-aware refresh.

Every word of the activation workspace is split by its number format: the sign+exponent field
goes to the Standard Refresh Bank, the mantissa to the Relaxed Refresh Bank (KV words) or the
Refresh-less Bank (QO words). The banks are external eDRAM macros driven through plain ports; the
controller owns the address map, the per-row liveness and the refresh schedule.

Refresh schedule (shared, word for word, with :mod:`memwall.golden.shield.refresh`): cycle 1 is the
first cycle after reset. A refreshed bank with ``R`` rows and interval ``T`` cycles refreshes row
``r`` in every cycle ``t`` with ``t mod T == (r * T) // R``, provided the row is live in that cycle.
A row is live in cycle ``t`` if a word stored in it was written in a cycle before ``t`` and its
class was not released in a cycle before ``t``.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.families.shield.config import ShieldConfig
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["Op", "Cls", "RefreshScheduler", "ShieldController", "BANKS", "REFRESHED_BANKS",
           "TOP_NAME", "build_top", "schedule_offset", "request_layout", "one_hot", "predecode"]

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


def one_hot(m: Module, index: Signal, count: int, name: str):
    """``count`` bits, bit ``i`` high when ``index == i``: a two-level predecoder.

    The index's low and high halves are decoded apart (about ``2 sqrt(count)`` comparators,
    held in signals ``<name>_lo``/``<name>_hi`` so each is built once) and bit ``i`` is the AND
    of one line of each, as in an SRAM row decoder. Built from whole-vector operations, so its
    netlist (and the time to generate, simulate and synthesise it) stays linear in ``count``;
    a per-bit ``bit_select`` assignment becomes a ``count``-way switch instead. ``index`` has
    ``ceil_log2(count)`` bits or more; an index ``>= count`` selects no bit.
    """
    lo, hi = predecode(m, index, count, name)
    return Cat(*(lo & hi[h].replicate(len(lo)) for h in range(len(hi))))[:count]


def predecode(m: Module, index: Signal, count: int, name: str) -> tuple[Signal, Signal]:
    """The two line sets of :func:`one_hot`: ``lo`` (``2**lo_bits`` lines, one per value of the
    index's low half) and ``hi`` (one per group of ``len(lo)`` consecutive indices below
    ``count``); index ``i`` is ``lo[i % len(lo)] & hi[i // len(lo)]``."""
    width = len(index)
    if width < ceil_log2(count):
        raise ValueError(f"index of {width} bits cannot address {count} bits")
    lo_bits = ceil_log2(count) // 2
    lo = Signal(1 << lo_bits, name=f"{name}_lo")
    hi = Signal(-(-count >> lo_bits), name=f"{name}_hi")
    m.d.comb += [lo.eq(Cat(*(index[:lo_bits] == i for i in range(len(lo))))),
                 hi.eq(Cat(*(index[lo_bits:] == h for h in range(len(hi)))))]
    return lo, hi


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
        wait = Signal(range(max(step + 1, wait0 + 1)), init=wait0)

        slot = Signal()
        last = row == R - 1
        m.d.comb += [slot.eq(wait == 0), self.slot.eq(slot), self.row.eq(row),
                     self.next_row.eq(Mux(slot, Mux(last, 0, row + 1), row))]
        m.d.sync += row.eq(self.next_row)
        with m.If(slot):
            with m.If(last):
                # Row 0 of the next interval: T - (R - 1) * T // R cycles on.
                m.d.sync += [wait.eq(T - schedule_offset(R - 1, R, T) - 1), frac.eq(0)]
            with m.Else():
                carry = frac + step_frac >= R
                m.d.sync += [
                    wait.eq(step - 1 + carry),
                    frac.eq(Mux(carry, frac + step_frac - R, frac + step_frac)),
                ]
        with m.Else():
            m.d.sync += wait.eq(wait - 1)
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
    per row and per class (``kv_words`` may share a standard-bank row with QO words: the row stays
    live while either class is), in flip-flops that load a group of rows at a time from a
    one-entry write stage (so each group holds, and clock-gates, under one enable).
    ``refresh_count_<bank>`` counts the refreshes issued (wrapping at 2**32).

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
    refresh_count_standard, refresh_count_relaxed : Out(32)
        Refreshes issued since reset.
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
            "interval_scale": interval_scale,
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
        for bank in REFRESHED_BANKS:
            members[f"refresh_count_{bank}"] = Out(32)
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

        # Liveness per row and class: KV words occupy relaxed row r and standard row r alike,
        # so one bit per relaxed row serves both; QO words are tracked per standard row from
        # the first one that can hold a QO word (``kv_words // row_words``) on.
        qo_base = kv_words // self.row_words
        kv_live = Signal(rows["relaxed"])
        qo_live = Signal(max(rows["standard"] - qo_base, 1))
        # Each class's bits at their standard-bank rows (a row may hold both classes).
        kv_std = Cat(kv_live, Const(0, rows["standard"]))[:rows["standard"]]
        qo_std = Cat(Const(0, qo_base), qo_live)[:rows["standard"]]
        # A write reaches the liveness bits through a one-entry stage: the cycle after it, the
        # whole group of rows it falls in is loaded with the stage's word (the group's bits
        # with the written one set). A group's bits so load from the stage alone, under one
        # enable per group: they hold (and clock-gate) except in the cycle after a write to the
        # group or a release of their class. Liveness in a cycle is the bits OR the stage.
        group_bits = ceil_log2(rows["standard"]) // 2           # predecode's low half
        group = 1 << group_bits
        groups = -(-rows["standard"] // group)
        st_valid, st_kv = Signal(name="live_stage_valid"), Signal(name="live_stage_kv")
        st_group = Signal(range(max(groups, 2)), name="live_stage_group")
        st_word = Signal(group, name="live_stage_word")

        def group_words(std):
            """``std`` (one bit per standard-bank row) as its groups' words, the last padded."""
            return [Cat(std, Const(0, groups * group))[g * group:(g + 1) * group]
                    for g in range(groups)]

        def effective(std, kv_class, row):
            """Is ``row`` (a standard-bank row) live this cycle in ``std``'s class.

            The row's group word is selected first and the bit within it last: a scheduler's
            row advances every few cycles, and its low bits so drive a ``group``-to-1
            multiplexer, not the select lines of a ``rows``-to-1 one (whose fan-out buffers
            toggled with every refresh slot)."""
            if not group_bits:
                return std.bit_select(row, 1) \
                    | (st_valid & (st_kv == kv_class) & (row == st_group) & st_word[0])
            words = Array(group_words(std))
            low = row[:group_bits]
            staged = st_valid & (st_kv == kv_class) & (row[group_bits:] == st_group) \
                & st_word.bit_select(low, 1)
            return words[row[group_bits:]].bit_select(low, 1) | staged

        # The liveness this cycle, whole (for the formal harness; unused in the netlist).
        stage_std = Signal(rows["standard"], name="live_stage_rows")
        m.d.comb += stage_std.eq(Cat(*(st_word & (st_valid & (st_group == g)).replicate(group)
                                       for g in range(groups)))[:rows["standard"]])
        kv_now, qo_now = Signal(len(kv_live), name="kv_live_now"), \
            Signal(len(qo_live), name="qo_live_now")
        m.d.comb += [kv_now.eq(kv_live | Mux(st_kv, stage_std[:len(kv_live)], 0)),
                     qo_now.eq(qo_live | Mux(~st_kv, stage_std[qo_base:], 0))]

        # row_live: is the scheduler's row live this cycle. Looked up one cycle ahead (at its
        # next_row, with that cycle's write or release bypassed in) and registered, so the
        # per-row lookup (a rows-to-1 multiplexer) ends at a register instead of sitting in
        # front of req.ready, the bank strobes and the liveness updates.
        row_live = {bank: Signal(name=f"row_live_{bank}") for bank in REFRESHED_BANKS}
        refresh = {}
        for bank in REFRESHED_BANKS:
            refresh[bank] = Signal(name=f"refresh_{bank}")
            m.d.comb += [refresh[bank].eq(sched[bank].slot & row_live[bank]),
                         getattr(self, f"{bank}_ref").eq(refresh[bank])]
            count = getattr(self, f"refresh_count_{bank}")
            count_reg = Signal(32, name=f"count_{bank}")
            m.d.comb += count.eq(count_reg)
            with m.If(refresh[bank]):
                m.d.sync += count_reg.eq(count_reg + 1)

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
        resp_q = fifo.SyncFIFO(width=self.word_bits, depth=RESP_DEPTH)
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
        # A write makes its row live from the next cycle; a release kills its class from the
        # next cycle. KV words sit at standard row == relaxed row, so one decoder serves both.
        release = fire & (cmd.op == Op.RELEASE)
        release_kv, release_qo = release & is_kv, release & ~is_kv
        # std_row is below rows["standard"] whenever do_write is high (in_range).
        written_row = Signal(range(rows["standard"]))
        m.d.comb += written_row.eq(std_row)
        lo_lines, _ = predecode(m, written_row, rows["standard"], "written")
        written_group = written_row[group_bits:] if group_bits < len(written_row) else Const(0)
        # The written group's bits this cycle (the stage's word when it holds the same group
        # and class), with the written row's bit set.
        kv_words_of, qo_words_of = group_words(kv_std), group_words(qo_std)
        current = Signal(group, name="live_written_group")
        m.d.comb += current.eq(Mux(is_kv, Array(kv_words_of)[written_group],
                                   Array(qo_words_of)[written_group]))
        # The stage's word holds its group's bits (so loading it loses none) and no row of the
        # other class: a proof invariant (the formal harness asserts it; unused in the netlist).
        def rows_of(first, end):
            return [Const(sum(1 << (r - g * group) for r in range(max(first, g * group),
                                                                min(end, (g + 1) * group))),
                          group) for g in range(groups)]

        kv_mask = rows_of(0, len(kv_live))
        qo_mask = rows_of(qo_base, rows["standard"])
        held = Mux(st_kv, Array(kv_words_of)[st_group], Array(qo_words_of)[st_group])
        mask = Mux(st_kv, Array(kv_mask)[st_group], Array(qo_mask)[st_group])
        covers = Signal(name="live_stage_covers")
        m.d.comb += covers.eq(~st_valid | (((held & ~st_word) | (st_word & ~mask)) == 0))
        same = st_valid & (st_kv == is_kv) & (st_group == written_group)
        m.d.sync += st_valid.eq(do_write)
        with m.If(do_write):
            m.d.sync += [st_kv.eq(is_kv), st_group.eq(written_group),
                         st_word.eq(current | Mux(same, st_word, 0) | lo_lines[:group])]
        # A release at t kills its class at t+1, the stage's write (of t-1) included.
        for kv_class, live, first, gone in ((1, kv_live, 0, release_kv),
                                            (0, qo_live, qo_base, release_qo)):
            end = min(first + len(live), rows["standard"])
            for g in range(first // group, -(-end // group)):
                start, stop = max(first, g * group), min(end, (g + 1) * group)
                bits = live[start - first:stop - first]
                load = st_valid & (st_kv == kv_class) & (st_group == g)
                with m.If(gone | load):
                    m.d.sync += bits.eq(Mux(gone, 0, st_word[start - g * group:
                                                             stop - g * group]))
        nxt = {bank: sched[bank].next_row for bank in REFRESHED_BANKS}
        m.d.sync += [
            row_live["standard"].eq(
                (effective(kv_std, 1, nxt["standard"]) & ~release_kv)
                | (effective(qo_std, 0, nxt["standard"]) & ~release_qo)
                | (do_write & (written_row == nxt["standard"]))),
            row_live["relaxed"].eq(
                (effective(kv_std, 1, nxt["relaxed"]) & ~release_kv)
                | (do_write & is_kv & (lo_row == nxt["relaxed"]))),
        ]

        # -- read return ---------------------------------------------------------------------
        m.d.sync += [rd_pend.eq(fire & is_read), rd_kv.eq(is_kv), rd_ok.eq(in_range)]
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
