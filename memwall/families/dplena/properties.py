"""Formal properties of d-PLENA units (``memwall prove dplena32``)."""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Elaboratable, Module, Mux, Signal, signed
from amaranth.hdl._ast import AnySeq, Initial
from amaranth.utils import bits_for

from memwall.formal import Property, protocol_source, stream_protocol
from memwall.hdl.common.fp import bf16_key

__all__ = ["properties", "TopkHarness"]

#: The key of an element with ``valid = 0``: -inf's (the unit's ranking).
_MINUS_INF_KEY = -0x7F80


class TopkHarness(Elaboratable):
    """Top-k's mask against the vector it marks: ``popcount(mask) = min(k, k_max, n)``, and
    every marked position's key is at least every unmarked one's, the earlier position first
    among equal keys. The environment keeps to the stream protocol and sends at most
    ``length`` elements a vector (more is the unit's documented protocol error)."""

    def __init__(self, length: int, k_max: int):
        self.length, self.k_max = length, k_max

    def elaborate(self, platform):
        from memwall.hdl.dplena.topk import TopkMaskUnit

        m = Module()
        length = self.length
        m.submodules.dut = dut = TopkMaskUnit(length, self.k_max)
        with m.If(Initial()):
            m.d.comb += Assume(dut.i.valid == 0)
        m.d.comb += dut.o.ready.eq(AnySeq(1))
        protocol_source(m, "elements", dut.i)     # a valid element is held until taken

        # The vector being received, and the last complete one (what the mask is of).
        count_bits = bits_for(length)
        keys = Array(Signal(signed(17), name=f"key{j}") for j in range(length))
        done = Array(Signal(signed(17), name=f"done{j}") for j in range(length))
        n, done_n = Signal(count_bits), Signal(count_bits)
        k, done_k = Signal(bits_for(self.k_max)), Signal(bits_for(self.k_max))
        p = dut.i.payload
        key = Signal(signed(17))
        m.d.comb += key.eq(Mux(p.valid, bf16_key(p.value), _MINUS_INF_KEY))
        take = dut.i.valid & dut.i.ready
        with m.If(dut.i.valid):                                     # no element past length
            m.d.comb += Assume(n < length)
        with m.If(take):
            m.d.sync += keys[n].eq(key)
            with m.If(n == 0):
                m.d.sync += k.eq(p.k)
            with m.If(p.last):
                m.d.sync += [n.eq(0), done_n.eq(n + 1), done_k.eq(Mux(n == 0, p.k, k))]
                for j in range(length):
                    m.d.sync += done[j].eq(Mux(n == j, key, keys[j]))
            with m.Else():
                m.d.sync += n.eq(n + 1)

        mask = dut.o.payload
        with m.If(dut.o.valid):
            k_eff = Mux(done_k > self.k_max, self.k_max, done_k)
            want = Mux(k_eff < done_n, k_eff, done_n)         # min(k, k_max, n)
            m.d.comb += Assert(sum(mask[j] for j in range(length)) == want)
            for i in range(length):
                for j in range(length):
                    if i == j:
                        continue
                    both = (i < done_n) & (j < done_n) & mask[i] & ~mask[j]
                    # Marked i beats unmarked j: a larger key, or an equal key earlier.
                    ok = (done[i] > done[j]) | ((done[i] == done[j]) & (i < j))
                    with m.If(both):
                        m.d.comb += Assert(ok)
                with m.If(i >= done_n):
                    m.d.comb += Assert(~mask[i])
        return m


def properties(cfg) -> list[Property]:
    from memwall.hdl.dplena.topk import TopkMaskUnit

    length, k_max = 3, 2      # small: z3 takes ~70 s for 2 vectors of 3 (4 took > 10 min)
    return [
        stream_protocol(
            "dplena_topk_streams", lambda: TopkMaskUnit(length, k_max),
            f"top-k mask unit (length {length}, k_max {k_max}): element and mask streams keep "
            "the valid/ready protocol; k-induction.", mode="prove", depth=10),
        Property(
            "dplena_topk_mask", lambda: TopkHarness(length, k_max),
            f"top-k mask unit (length {length}, k_max {k_max}): popcount(mask) = min(k, k_max, "
            "n); every marked key >= every unmarked key, the first position winning ties; no "
            f"position past n marked; any BF16 values (NaN, infinities, signed zeros), "
            f"invalid elements as -inf. Bounded: two vectors ({2 * (length + 1)} cycles).",
            mode="bmc", depth=2 * (length + 1)),
    ]
