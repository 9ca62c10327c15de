"""The KVNAND logic die's BCH(9088, 8192, t=64) encoder: a p-bit-per-cycle systematic encoder
(code, bit and word order: :mod:`memwall.golden.kvnand.bch`).

A codeword is 8192/p message words, passed through from ``i`` to ``o`` while the 896-bit
remainder register takes one step of the parallel LFSR per word
(:func:`~memwall.golden.kvnand.bch.parallel_lfsr_matrices`), then 896/p parity words read from the
top of the register, which shifts up by p per word and so ends every codeword at zero. ``i.ready``
is low while parity words are produced.

Output goes through a two-word buffer whose ``ready`` depends on registers only, so there is no
combinational path from ``o.ready`` to ``i.ready`` (or from ``i`` to ``o``), and one word per
cycle flows in and out when neither side stalls (latency: one cycle).

XOR network: next-state bit k is the reduction XOR of the terms of row k of ``[A | B]``. Input
bit ``u[b]`` and state bit ``s[895 - b]`` enter the LFSR only through their sum (the serial
feedback), so where a row has both they are taken from ``d = u ^ s[895:895-p]`` as one term:
one Verilog assignment per state bit, about half the terms of the plain A/B form.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.golden.kvnand import bch

__all__ = ["BchEncoder"]


class BchEncoder(wiring.Component):
    """Systematic BCH(9088, 8192, t=64) encoder, ``p`` bits per cycle.

    Parameters
    ----------
    p : int
        Bits per word (one of :data:`memwall.golden.kvnand.bch.WORD_BITS`: the divisors of 128, so
        that both 8192 and 896 are whole numbers of words).

    Attributes
    ----------
    i : In(stream.Signature(p))
        Message words: bit b of word w is message bit ``w * p + b`` (m[0], the coefficient of
        x^8191, is bit 0 of the first word). 8192/p words per codeword, back to back.
    o : Out(stream.Signature(p))
        Codeword words in the same bit order: the message words, then 896/p parity words.
    """

    def __init__(self, p: int):
        if isinstance(p, bool) or not isinstance(p, int) or p not in bch.WORD_BITS:
            self._MustUse__silence = True     # never elaborated: no "created but never used"
            raise ValueError(f"BchEncoder: p={p!r} is not allowed; p must divide both 8192 and "
                             f"896: one of {bch.WORD_BITS}")
        self.p = p
        self.params = {"p": p}
        super().__init__({"i": In(stream.Signature(p)), "o": Out(stream.Signature(p))})

    @property
    def message_words(self) -> int:
        return bch.K // self.p

    @property
    def parity_words(self) -> int:
        return bch.PARITY_BITS // self.p

    @property
    def codeword_words(self) -> int:
        return bch.N // self.p

    def _next_state(self, m: Module, state: Signal, u) -> Value:
        p, width = self.p, bch.PARITY_BITS
        a, b = bch.parallel_lfsr_matrices(p)
        top = Cat(*(state[width - 1 - j] for j in range(p)))      # s[895 - j] pairs with u[j]
        d = Signal(p)
        m.d.comb += d.eq(u ^ top)
        rows = []
        for k in range(width):
            terms = [state[j] for j in range(width - p) if a[k, j]]
            for j in range(p):
                s_term, u_term = a[k, width - 1 - j], b[k, j]
                if s_term and u_term:
                    terms.append(d[j])
                elif s_term:
                    terms.append(state[width - 1 - j])
                elif u_term:
                    terms.append(u[j])
            rows.append(Cat(*terms).xor() if terms else Const(0, 1))
        return Cat(*rows)

    def elaborate(self, platform):
        m = Module()
        p, width = self.p, bch.PARITY_BITS

        state = Signal(width)                  # running remainder, s[k] <-> x^k
        count = Signal(range(self.codeword_words))
        parity = Signal()                      # producing parity words

        # Output buffer: up to two words; `room` is registered (no path from o.ready to i.ready).
        level = Signal(range(3))
        head, tail = Signal(p), Signal(p)
        room = level != 2
        m.d.comb += [self.o.valid.eq(level != 0), self.o.payload.eq(head),
                     self.i.ready.eq(~parity & room)]

        push = Signal()
        word = Signal(p)
        parity_word = Cat(*(state[width - 1 - j] for j in range(p)))
        next_state = self._next_state(m, state, self.i.payload)
        with m.If(parity):
            m.d.comb += [push.eq(room), word.eq(parity_word)]
        with m.Else():
            m.d.comb += [push.eq(self.i.valid & room), word.eq(self.i.payload)]

        with m.If(push):
            with m.If(parity):
                m.d.sync += state.eq(Cat(Const(0, p), state[:width - p]))
                with m.If(count == self.codeword_words - 1):
                    m.d.sync += [count.eq(0), parity.eq(0)]
                with m.Else():
                    m.d.sync += count.eq(count + 1)
            with m.Else():
                m.d.sync += [state.eq(next_state), count.eq(count + 1)]
                with m.If(count == self.message_words - 1):
                    m.d.sync += parity.eq(1)

        pop = self.o.valid & self.o.ready
        with m.If(push & ~pop):
            m.d.sync += level.eq(level + 1)
            with m.If(level == 0):
                m.d.sync += head.eq(word)
            with m.Else():
                m.d.sync += tail.eq(word)
        with m.Elif(pop & ~push):
            m.d.sync += [level.eq(level - 1), head.eq(tail)]
        with m.Elif(pop & push):          # level is 1 here: push needs room, pop a word
            m.d.sync += head.eq(word)
        return m
