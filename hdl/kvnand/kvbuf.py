"""The KVNAND KV write-combine buffer: collects K/V slices into flash pages and emits page-program
requests (contract and golden model: :mod:`memwall.golden.kvnand.kvbuf`).

**Input** ``i``: one beat of ``word_bytes`` bytes a cycle (:func:`in_layout`: ``data``, byte 0 in
the least significant bits, and ``stream``). A slice is ``slice_bytes / word_bytes`` beats; the
``stream`` field is sampled on a slice's first beat and ignored on the others (the buffer counts
the beats, so slices need no framing bit). ``flush`` (valid/ready, no payload) is taken only at a
slice boundary, before a waiting slice; it programs every occupied slot as a partial page, in
slot order, and frees it: the end of a session.

**Output** ``o``: per program request a header beat, then ``page_bytes / word_bytes`` data beats
(:func:`out_layout`: ``header`` marks the header beat, ``last`` the page's last beat; ``body`` is
a union of ``data`` and ``info`` (:func:`header_layout`: ``stream``, ``page``, ``valid`` bytes,
``partial``)). Data words past the valid bytes read ``0xFF`` (erased flash).

**Structure.** The page buffer is one ``amaranth.lib.memory.Memory`` of ``slots * page_bytes /
word_bytes`` words (naive mapping: one page); slot ``s`` is words ``s * words_per_page ...``.
The slot table (owner stream, fill in words, occupied; LRU ranks) is in registers, the page
number of each stream in a memory of ``2**stream_bits`` entries read asynchronously. A controller
in one of four states: ACCEPT (slice beats are written into their slot; a slice whose stream has
no slot and finds none free starts an eviction instead), HEADER, DATA (the page's words from the
memory's synchronous read port; the port holds its word while ``o`` is stalled) and FLUSH (scans
the slots). Input and output take turns: while a page is programmed ``i.ready`` is low, and
``i.ready`` never depends on ``o.ready``. On a slice's first beat it depends combinationally on
``i.valid`` and ``i.payload.stream`` (the slot lookup); the source holds the payload while
``valid`` is high, as the stream rules require.

Page numbers wrap at ``2**page_bits``; the counters at ``2**count_bits``. Reset clears the slot
table and the counters, not the page-number memory (zero at configuration).
"""

from __future__ import annotations

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from memwall.golden.kvnand.kvbuf import MAPPINGS, POLICIES, check_geometry

__all__ = ["KvWriteBuffer", "in_layout", "header_layout", "out_layout", "FLUSH_SIGNATURE"]


def in_layout(stream_bits: int, word_bytes: int) -> data.StructLayout:
    """An input beat: ``word_bytes`` bytes (byte 0 lowest) and the slice's stream id."""
    return data.StructLayout({"data": 8 * word_bytes, "stream": stream_bits})


def header_layout(stream_bits: int, page_bits: int, page_bytes: int) -> data.StructLayout:
    """A program request: stream (0 in naive order), its page number, valid bytes, partial."""
    return data.StructLayout({"stream": stream_bits, "page": page_bits,
                              "valid": bits_for(page_bytes), "partial": 1})


def out_layout(stream_bits: int, page_bits: int, page_bytes: int,
               word_bytes: int) -> data.StructLayout:
    """An output beat: the header beat (``header``) or a data beat (``last`` on the page's last)."""
    body = data.UnionLayout({"data": 8 * word_bytes,
                             "info": header_layout(stream_bits, page_bits, page_bytes)})
    return data.StructLayout({"header": 1, "last": 1, "body": body})


#: A payload-less stream (valid/ready only): ``stream.Signature(0)`` would give a zero-width
#: payload port, which Verilog declares as ``[-1:0]`` (two bits).
FLUSH_SIGNATURE = wiring.Signature({"valid": Out(1), "ready": In(1)})


class State(enum.Enum, shape=2):
    ACCEPT = 0
    HEADER = 1
    DATA = 2
    FLUSH = 3


class KvWriteBuffer(wiring.Component):
    """KV write-combine buffer with flush-on-full page programs.

    Parameters
    ----------
    slots : int
        Open pages (page mapping); naive order keeps one.
    page_bytes, slice_bytes, word_bytes : int
        A flash page, a slice (one stream's K or V for one token), a beat. ``word_bytes``
        divides ``slice_bytes``, which divides ``page_bytes``.
    stream_bits : int
        Width of a stream id (``2**stream_bits`` streams, each with a page number).
    mapping : str
        ``"page"`` (one stream per open page) or ``"naive"`` (arrival order).
    policy : str
        Eviction victim when a stream needs a slot and none is free: ``"fullest"`` (most bytes,
        lowest slot on ties) or ``"lru"`` (least recently written).
    page_bits, count_bits : int
        Widths of a page number and of the counters.

    Attributes
    ----------
    i : In(stream.Signature(in_layout))
        Slice beats.
    flush : In(FLUSH_SIGNATURE)
        Program every occupied slot (partial pages) and free it.
    o : Out(stream.Signature(out_layout))
        Program requests: a header beat, then the page's data beats.
    programs, partials : Out(count_bits)
        Program requests issued, and those with fewer valid bytes than a page.
    """

    def __init__(self, slots: int, page_bytes: int, slice_bytes: int, stream_bits: int,
                 word_bytes: int, mapping: str = "page", policy: str = "fullest",
                 page_bits: int = 16, count_bits: int = 16):
        check_geometry(slots, page_bytes, slice_bytes, mapping, policy)
        for name, value in (("stream_bits", stream_bits), ("word_bytes", word_bytes),
                            ("page_bits", page_bits), ("count_bits", count_bits)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if slice_bytes % word_bytes:
            raise ValueError(f"word_bytes ({word_bytes}) must divide slice_bytes ({slice_bytes})")
        assert mapping in MAPPINGS and policy in POLICIES
        self.slots, self.page_bytes, self.slice_bytes = slots, page_bytes, slice_bytes
        self.stream_bits, self.word_bytes = stream_bits, word_bytes
        self.mapping, self.policy = mapping, policy
        self.page_bits, self.count_bits = page_bits, count_bits
        self.params = {"slots": slots, "page_bytes": page_bytes, "slice_bytes": slice_bytes,
                       "stream_bits": stream_bits, "word_bytes": word_bytes, "mapping": mapping,
                       "policy": policy, "page_bits": page_bits, "count_bits": count_bits}
        super().__init__({
            "i": In(stream.Signature(self.in_layout)),
            "flush": In(FLUSH_SIGNATURE),
            "o": Out(stream.Signature(self.out_layout)),
            "programs": Out(count_bits),
            "partials": Out(count_bits),
        })

    @property
    def in_layout(self) -> data.StructLayout:
        return in_layout(self.stream_bits, self.word_bytes)

    @property
    def header_layout(self) -> data.StructLayout:
        return header_layout(self.stream_bits, self.page_bits, self.page_bytes)

    @property
    def out_layout(self) -> data.StructLayout:
        return out_layout(self.stream_bits, self.page_bits, self.page_bytes, self.word_bytes)

    @property
    def words_per_page(self) -> int:
        return self.page_bytes // self.word_bytes

    @property
    def beats_per_slice(self) -> int:
        return self.slice_bytes // self.word_bytes

    @property
    def buffer_slots(self) -> int:
        """Pages of buffer memory: ``slots`` with page mapping, one in naive order."""
        return self.slots if self.mapping == "page" else 1

    def elaborate(self, platform):
        m = Module()
        wpp, spw, n = self.words_per_page, self.beats_per_slice, self.buffer_slots
        page_mode = self.mapping == "page"

        m.submodules.buf = buf = memory.Memory(shape=8 * self.word_bytes, depth=n * wpp, init=[])
        wr = buf.write_port()
        rd = buf.read_port(transparent_for=())
        m.submodules.pages = pages = memory.Memory(shape=self.page_bits,
                                                   depth=2 ** self.stream_bits, init=[])
        pn_rd = pages.read_port(domain="comb")
        pn_wr = pages.write_port()

        # Slot table.
        owner = [Signal(self.stream_bits, name=f"owner{s}") for s in range(n)]
        fill = [Signal(range(wpp + 1), name=f"fill{s}") for s in range(n)]   # words
        occ = [Signal(name=f"occ{s}") for s in range(n)]
        rank = [Signal(range(n), init=s, name=f"rank{s}") for s in range(n)]  # 0: newest
        a_owner, a_fill, a_occ, a_rank = Array(owner), Array(fill), Array(occ), Array(rank)

        state = Signal(State)
        beat = Signal(range(spw))         # beat of the slice on the input
        cur = Signal(range(n))            # the slot of the slice being written
        prog = Signal(range(n))           # the slot being programmed
        in_flush = Signal()               # the program is part of a flush
        scan = Signal(range(n + 1))       # flush: the next slot to look at
        out_idx = Signal(range(wpp))      # data beat on ``o``

        # Slot lookup for a first beat: the stream's slot, else the lowest free one.
        sid = self.i.payload.stream
        hit, hit_idx = Signal(), Signal(range(n))
        free, free_idx = Signal(), Signal(range(n))
        for s in reversed(range(n)):   # later assignments win: the lowest slot
            with m.If(occ[s] & (owner[s] == sid)):
                m.d.comb += [hit.eq(1), hit_idx.eq(s)]
            with m.If(~occ[s]):
                m.d.comb += [free.eq(1), free_idx.eq(s)]

        # Eviction victim (only asked when every slot is occupied).
        victim = Signal(range(n))
        if self.policy == "fullest":
            best_fill, best = fill[0], Const(0, range(n))
            for s in range(1, n):
                more = fill[s] > best_fill
                best_fill = Mux(more, fill[s], best_fill)
                best = Mux(more, s, best)
            m.d.comb += victim.eq(best)
        else:
            for s in range(n):
                with m.If(rank[s] == n - 1):
                    m.d.comb += victim.eq(s)

        first = beat == 0
        if page_mode:
            slot = Mux(first, Mux(hit, hit_idx, free_idx), cur)
            room = ~first | hit | free
        else:
            slot, room = Const(0, range(n)), Const(1)
        slot_fill = a_fill[slot]

        # Header fields of the page being programmed.
        prog_fill = a_fill[prog]
        stream_out = a_owner[prog] if page_mode else Const(0, self.stream_bits)
        m.d.comb += pn_rd.addr.eq(stream_out)
        partial = prog_fill != wpp

        m.d.comb += [wr.data.eq(self.i.payload.data), wr.addr.eq(slot * wpp + slot_fill),
                     rd.en.eq(0)]

        with m.Switch(state):
            with m.Case(State.ACCEPT):
                m.d.comb += [self.flush.ready.eq(first),
                             self.i.ready.eq(room & ~(first & self.flush.valid))]
                with m.If(first & self.flush.valid):
                    m.d.sync += [state.eq(State.FLUSH), scan.eq(0)]
                with m.Elif(self.i.valid & ~room):
                    m.d.sync += [prog.eq(victim), in_flush.eq(0), state.eq(State.HEADER)]
                with m.Elif(self.i.valid):
                    m.d.comb += wr.en.eq(1)
                    m.d.sync += [a_fill[slot].eq(slot_fill + 1),
                                 beat.eq(Mux(beat == spw - 1, 0, beat + 1))]
                    with m.If(first):
                        m.d.sync += [cur.eq(slot), a_occ[slot].eq(1), a_owner[slot].eq(sid)]
                        # LRU: the slot becomes the newest; those newer than it age by one.
                        for s in range(n):
                            with m.If(rank[s] < a_rank[slot]):
                                m.d.sync += rank[s].eq(rank[s] + 1)
                        m.d.sync += a_rank[slot].eq(0)
                    with m.If((beat == spw - 1) & (slot_fill == wpp - 1)):
                        m.d.sync += [prog.eq(slot), in_flush.eq(0), state.eq(State.HEADER)]

            with m.Case(State.HEADER):
                info = self.o.payload.body.info
                m.d.comb += [self.o.valid.eq(1), self.o.payload.header.eq(1),
                             info.stream.eq(stream_out), info.page.eq(pn_rd.data),
                             info.valid.eq(prog_fill * self.word_bytes), info.partial.eq(partial)]
                with m.If(self.o.ready):
                    m.d.comb += [pn_wr.en.eq(1), pn_wr.addr.eq(stream_out),
                                 pn_wr.data.eq(pn_rd.data + 1),
                                 rd.en.eq(1), rd.addr.eq(prog * wpp)]
                    m.d.sync += [self.programs.eq(self.programs + 1),
                                 self.partials.eq(self.partials + partial),
                                 out_idx.eq(0), state.eq(State.DATA)]

            with m.Case(State.DATA):
                last = out_idx == wpp - 1
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(last),
                             self.o.payload.body.data.eq(
                                 Mux(out_idx < prog_fill, rd.data, (1 << 8 * self.word_bytes) - 1))]
                with m.If(self.o.ready):
                    m.d.sync += out_idx.eq(out_idx + 1)
                    with m.If(last):
                        m.d.sync += [a_occ[prog].eq(0), a_fill[prog].eq(0)]
                        with m.If(in_flush):
                            m.d.sync += [scan.eq(scan + 1), state.eq(State.FLUSH)]
                        with m.Else():
                            m.d.sync += state.eq(State.ACCEPT)
                    with m.Else():   # the next word; while stalled the port holds this one
                        m.d.comb += [rd.en.eq(1), rd.addr.eq(prog * wpp + out_idx + 1)]

            with m.Case(State.FLUSH):
                with m.If(scan == n):
                    m.d.sync += state.eq(State.ACCEPT)
                with m.Elif(a_occ[scan]):
                    m.d.sync += [prog.eq(scan), in_flush.eq(1), state.eq(State.HEADER)]
                with m.Else():
                    m.d.sync += scan.eq(scan + 1)
        return m
