"""Formal properties of the SHIELD refresh controller (``memwall prove <shield config>``).

Harnesses around :class:`~memwall.hdl.shield.controller.ShieldController`, all built from the
config's own parameters (rows, ``row_words``, ``kv_words``/``qo_words``, the intervals in
cycles), so ``memwall prove shield_small`` proves them at shield_small's 16 standard rows of
T_std = 45 cycles and 8 relaxed rows of T_rel = 1216 cycles, 8 words a row:

* ``shield_refresh_standard``, ``shield_refresh_relaxed`` (:class:`RefreshHarness`, one per
  refreshed bank: z3 took about 60 s for one harness of both banks, 11 + 13 s for the two):
  no live row goes unrefreshed past its interval, and the refreshes are exactly the
  documented schedule; k-induction (unbounded), strengthened by invariants over the
  schedulers and the liveness bits.
* ``shield_controller_streams``: the ``req``/``resp`` stream protocol; k-induction, strengthened
  by the response FIFO's pointer invariant (:func:`resp_fifo_invariants`).

The harness size grows with the rows (an age counter per row), so the proofs suit small
configs like shield_small; shield_2mb's 4096 rows of 45000 cycles are beyond them.

What "live" and "refreshed" mean (the module docstring of :mod:`memwall.hdl.shield.controller`,
:mod:`memwall.golden.shield.refresh` and the cocotb testbench ``verif/shield`` agree): a row of a
refreshed bank is live in cycle ``t`` if a WRITE of a word stored in it was accepted on ``req``
(``valid`` and ``ready``, address inside its class) before ``t`` and no RELEASE of that word's class
was accepted since. Standard bank: KV word ``a`` at address ``a``, QO word ``a`` at ``kv_words +
a``; relaxed bank: KV word ``a`` at ``a``; row = address // ``row_words`` (a row may hold both
classes). A row is refreshed in cycle ``t`` when the controller drives ``<bank>_ref`` with the row
on ``<bank>_row`` (what the eDRAM macro sees). Neither is taken from the controller's own
bookkeeping: the harness keeps its own liveness from the accepted commands.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Cat, Const, Elaboratable, Fragment, Module, Mux, Signal, Value
from amaranth.hdl._ast import AnySeq
from amaranth.lib import wiring

from memwall.formal import Property, internal, stream_protocol

__all__ = ["RefreshHarness", "properties", "resp_fifo_invariants", "retention_property"]


class RefreshHarness(Elaboratable):
    """The refresh guarantee of one refreshed bank (``standard`` or ``relaxed``) of a
    :class:`ShieldController` of ``cfg``, every input free.

    Per row of the bank the harness keeps an age: cycles since the row was last refreshed
    (``<bank>_ref`` with ``<bank>_row`` = the row) or, if later, since the WRITE that made it
    live (a write to a row already live restores one word, not the row, so it does not reset
    the age); 0 while the row is dead. The age bounds the time since the last restore of every
    live word of the row, the quantity the testbench's eDRAM model checks per cell. Asserted
    every cycle:

    * **retention**: a live row's age is at most the bank's interval ``T`` (``t_std_cycles`` or
      ``t_rel_cycles``) plus ``slack`` (0: the design's documented bound, no margin; it is
      tight, the age reaches ``T`` at each refresh of a row live throughout);
    * **schedule** (with ``invariants``): row ``r`` is refreshed in cycle ``t`` exactly when
      ``t mod T == (r * T) // R`` and the row is live (``t`` counts cycles since reset, the
      first cycle after it being 1), no other refresh is issued, and the bank is not read or
      written in a cycle it is refreshed.

    ``req`` (valid and payload), ``resp.ready``, the banks' read data and the reset are free in
    every cycle: the guarantee needs no environment assumption, not even the stream protocol.

    ``invariants`` adds the strengthening asserts that make the proof close by k-induction at
    depth 1 (they are inductive), each proved too: with the harness's phase ``t mod T``, the
    bank's scheduler's row pointer is the first row whose slot is not behind the phase (0 past
    the last), with its Bresenham remainder, and its down-counter is the cycles from the phase
    to that row's slot; the controller's per-class liveness
    bits equal the harness's; its registered lookahead ``row_live_<bank>`` is the liveness of
    the scheduler's row; a live row's age is at most the cycles since its last slot, ``(t - (r
    T) // R) mod T`` (``T`` in the slot cycle itself), a dead row's age 0. Without them only the
    retention assert is checked (the negative controls: a late schedule must be caught by it
    alone, in bounded mode).

    ``interval_scale`` is passed to the controller (its verification hook: > 1 refreshes too
    late on purpose); the harness keeps the config's nominal intervals.
    """

    def __init__(self, cfg, bank: str, *, slack: int = 0, invariants: bool = True,
                 interval_scale: int = 1):
        from memwall.hdl.shield.controller import REFRESHED_BANKS

        if bank not in REFRESHED_BANKS:
            raise ValueError(f"bank {bank!r}; refreshed banks: {', '.join(REFRESHED_BANKS)}")
        self.cfg, self.bank, self.slack, self.invariants = cfg, bank, slack, invariants
        self.interval_scale = interval_scale

    def elaborate(self, platform):
        from memwall.hdl.shield.controller import Cls, Op, ShieldController

        m = Module()
        cfg, bank = self.cfg, self.bank
        dut = ShieldController(cfg, interval_scale=self.interval_scale)
        m.submodules.dut = fragment = Fragment.get(dut, platform)
        for _path, member, port in dut.signature.flatten(dut):
            if member.flow == wiring.In:                          # every input free
                m.d.comb += port.eq(AnySeq(Value.cast(port).shape().width))

        rw, kv_words, qo_words = cfg.row_words, cfg.kv_words, cfg.qo_words
        R = cfg.bank_rows[bank]
        T = cfg.t_std_cycles if bank == "standard" else cfg.t_rel_cycles

        # -- the accepted command and the harness's own liveness, per class and row --------
        p = dut.req.payload
        fire = dut.req.valid & dut.req.ready
        is_kv = p.cls == Cls.KV
        write = fire & (p.op == Op.WRITE) & Mux(is_kv, p.addr < kv_words, p.addr < qo_words)
        release = fire & (p.op == Op.RELEASE)

        # A word makes every row of its liveness block live: ``B`` consecutive rows of its
        # class, KV blocks from row 0, QO blocks from ``qo_base`` (the first row a QO word can
        # be in).
        B = cfg.live_block_rows
        qo_base = kv_words // rw

        def block_first(r, first):      # the first row of row r's block, in a class from first
            return first + (r - first) // B * B

        def hits(address, n, first):    # bit r: ``address`` lies in row r's block
            return Cat(*((address >= block_first(r, first) * rw)
                         & (address < (block_first(r, first) + B) * rw) if r >= first
                         else Const(0) for r in range(n)))

        kv_rows = cfg.bank_rows["relaxed"]                       # a KV word's row: a // rw
        kv = Signal(kv_rows, name="h_kv_live")
        kv_next = Signal(kv_rows, name="h_kv_next")
        m.d.comb += kv_next.eq(Mux(release & is_kv, 0,
                                   kv | Mux(write & is_kv, hits(p.addr, kv_rows, 0), 0)))
        m.d.sync += kv.eq(kv_next)
        live, live_next = kv, kv_next
        if bank == "standard":                                   # QO words too, at kv_words + a
            qo = Signal(R, name="h_qo_live")
            qo_next = Signal(R, name="h_qo_next")
            m.d.comb += qo_next.eq(Mux(release & ~is_kv, 0, qo | Mux(
                write & ~is_kv, hits(p.addr + kv_words, R, qo_base), 0)))
            m.d.sync += qo.eq(qo_next)
            pad = Const(0, R - kv_rows)
            live, live_next = Cat(kv, pad) | qo, Cat(kv_next, pad) | qo_next

        # -- t mod T, the refreshes seen at the bank port, the ages ---------------------------
        offset = [(r * T) // R for r in range(R)]
        phase = Signal(range(T), init=1 % T, name="h_phase")
        m.d.sync += phase.eq(Mux(phase == T - 1, 0, phase + 1))
        ref, row = getattr(dut, f"{bank}_ref"), getattr(dut, f"{bank}_row")
        refreshed = Cat(*(ref & (row == r) for r in range(R)))
        for r in range(R):
            age = Signal(range(T + 2), name=f"h_age_{r}")
            m.d.sync += age.eq(Mux(~live_next[r], 0, Mux(refreshed[r] | ~live[r], 1,
                                                          Mux(age > T, T + 1, age + 1))))
            with m.If(live[r]):
                m.d.comb += Assert(age <= T + self.slack)              # retention
            if not self.invariants:
                continue
            since_slot = Mux(phase >= offset[r], phase - offset[r], phase + T - offset[r])
            with m.If(live[r]):
                m.d.comb += Assert(age <= Mux(since_slot == 0, T, since_slot))
            with m.Else():
                m.d.comb += Assert(age == 0)
            # Schedule: refreshed exactly in its slots while live.
            m.d.comb += Assert(refreshed[r] == ((phase == offset[r]) & live[r]))
        if not self.invariants:
            return m
        m.d.comb += Assert(ref == refreshed.any())                     # no row out of range
        with m.If(ref):
            m.d.comb += Assert(~getattr(dut, f"{bank}_we") & ~getattr(dut, f"{bank}_re"))

        # -- strengthening: the scheduler's state is a function of the phase ----------------
        sched = f"sched_{bank}"
        s_row = internal(fragment, sched, "row")
        s_wait = internal(fragment, sched, "wait")
        s_frac = internal(fragment, sched, "frac")
        # The row pointer is the first row whose slot is not behind the phase (row 0 once the
        # phase is past the last slot), with its remainder, and the down-counter the cycles
        # from the phase to that row's slot.
        m.d.comb += [Assert(phase < T), Assert(s_row < R)]
        for r in range(R):
            after_previous = (phase == 0) | (phase > offset[-1]) if r == 0 \
                else (phase > offset[r - 1]) & (phase <= offset[r])
            to_slot = Mux(phase == 0, 0, T - phase) if r == 0 else offset[r] - phase
            with m.If(s_row == r):
                m.d.comb += [Assert(after_previous), Assert(s_wait == to_slot),
                             Assert(s_frac == (r * T) % R)]
        if dut.intervals[bank] >= 2 * R:
            # The staged scheduler's successor registers hold the successor of its pointer,
            # except in the cycle after a slot (which is never a slot), when they load it.
            after = internal(fragment, sched, "after_slot")
            n_row, n_frac, n_wait = (internal(fragment, sched, f"succ_{x}")
                                     for x in ("row", "frac", "wait"))
            for r in range(R):
                last = r == R - 1
                succ = (0, 0, T - offset[-1] - 1) if last else \
                    (r + 1, ((r + 1) * T) % R, offset[r + 1] - offset[r] - 1)
                with m.If(s_row == r):
                    with m.If(after):
                        m.d.comb += Assert(phase == (offset[r - 1] + 1) % T)
                    with m.Else():
                        m.d.comb += [Assert(n_row == succ[0]), Assert(n_frac == succ[1]),
                                     Assert(n_wait == succ[2])]
        # -- strengthening: the controller's liveness is the harness's ----------------------
        row_live = internal(fragment, "", f"row_live_{bank}")
        # (its bits with their write stages, one bit per block, each the liveness of its
        # block's first row; the harness's rows of a block agree)
        kv_firsts = range(0, kv_rows, B)
        m.d.comb += [Assert(row_live == live.bit_select(s_row, 1)),
                     Assert(internal(fragment, "", "kv_live_now", "comb")
                            == Cat(*(kv[r] for r in kv_firsts))),
                     Assert(internal(fragment, "", "live_stage_covers", "comb"))]
        m.d.comb += [Assert(kv[r] == kv[block_first(r, 0)]) for r in range(kv_rows)]
        if bank == "standard":
            qo_firsts = range(qo_base, R, B)   # the controller keeps QO bits from qo_base on
            if qo_words and R > qo_base:
                m.d.comb += Assert(internal(fragment, "", "qo_live_now", "comb")
                                   == Cat(*(qo[r] for r in qo_firsts)))
                m.d.comb += [Assert(qo[r] == qo[block_first(r, qo_base)])
                             for r in range(qo_base, R)]
            if qo_base:
                m.d.comb += Assert(qo[:qo_base] == 0)
        return m


def retention_property(cfg, bank: str, *, slack: int = 0, invariants: bool = True,
                       interval_scale: int = 1, mode: str = "prove", depth: int = 1,
                       name: str | None = None) -> Property:
    """The :class:`RefreshHarness` of ``cfg``'s ``bank`` as the property
    ``shield_refresh_<bank>`` (the keywords are the harness's; the defaults are the design's
    claim, proved unbounded)."""
    rows = cfg.bank_rows[bank]
    interval = cfg.t_std_cycles if bank == "standard" else cfg.t_rel_cycles
    held = "fields (sign + exponent of every word)" if bank == "standard" \
        else "fields (KV mantissas)"
    doc = (
        f"SHIELD controller of {cfg.name}, {bank} bank: no live row goes unrefreshed past its "
        f"interval, proved unbounded (k-induction, depth {depth}) at the config's own "
        f"parameters: {rows} rows of {cfg.row_words} {held}, T = {interval} cycles, "
        f"{cfg.kv_words} KV + {cfg.qo_words} QO words. In every cycle a row is live (a word of "
        "it written, its class not released since: tracked by the harness from the accepted "
        "req commands), the cycles since its last refresh (<bank>_ref with the row on "
        "<bank>_row) or since the write that made it live are at most T (no margin; tight). "
        "Also proved: the refreshes are exactly the documented schedule (row r in the cycles t "
        "with t mod T == (r*T)//R while it is live), never in a cycle the bank is accessed. "
        "Every input free (req, resp.ready, bank read data, reset): no environment assumption. "
        "Strengthened by invariants tying the scheduler's counters to t mod T and the "
        "controller's liveness bits to the harness's (RefreshHarness).")
    if (slack, invariants, interval_scale, mode) != (0, True, 1, "prove"):
        doc = (f"NEGATIVE CONTROL (slack {slack}, invariants {invariants}, interval_scale "
               f"{interval_scale}, {mode} depth {depth}): expected to fail. " + doc)
    return Property(name or f"shield_refresh_{bank}",
                    lambda: RefreshHarness(cfg, bank, slack=slack, invariants=invariants,
                                           interval_scale=interval_scale),
                    doc, mode=mode, depth=depth)


def resp_fifo_invariants(m: Module, fragment: Fragment) -> None:
    """The controller's response FIFO (``resp_q``, a ``SyncFIFO``): its level matches its
    pointers, ``(produce - consume) mod depth == level mod depth``, ``level <= depth``. Without
    it the induction step starts from a FIFO whose pointers disagree with its level (a write
    then overwrites the held head), which no induction depth rules out."""
    from memwall.hdl.shield.controller import RESP_DEPTH

    produce = internal(fragment, "resp_q", "produce")
    consume = internal(fragment, "resp_q", "consume")
    level = internal(fragment, "resp_q", "level")
    ahead = Mux(produce >= consume, produce - consume, produce + RESP_DEPTH - consume)
    m.d.comb += [Assert(level <= RESP_DEPTH), Assert(produce < RESP_DEPTH),
                 Assert(consume < RESP_DEPTH),
                 Assert(ahead == Mux(level == RESP_DEPTH, 0, level))]


def properties(cfg) -> list[Property]:
    from memwall.hdl.shield.controller import ShieldController

    return [
        stream_protocol(
            "shield_controller_streams", lambda: ShieldController(cfg),
            f"SHIELD controller of {cfg.name}: its request and response streams keep the "
            "valid/ready protocol (held valid and payload until ready, nothing valid the cycle "
            "after reset), inputs free, the request source assumed to keep the protocol. "
            "Unbounded (k-induction, depth 2) at the config's own parameters, strengthened by "
            "the response FIFO's invariant (level = produce - consume mod its depth).",
            mode="prove", depth=2, invariants=resp_fifo_invariants),
        retention_property(cfg, "standard"),
        retention_property(cfg, "relaxed"),
    ]
