"""V_TOPK_MASK: streaming insertion top-k over one vector of BF16 confidences (paper phase 3).

Bit-exact with :func:`memwall.golden.dplena.sampling.topk_mask`: ``k_max`` sorted slots, one
comparator per slot, elements shifted in one per cycle (O(k) area, O(L * k) comparisons).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from memwall.golden.dplena.sampling import NEG_INF_BF16
from memwall.hdl.common.fp import bf16_key

__all__ = ["TopkMaskUnit"]


class TopkMaskUnit(wiring.Component):
    """Streaming insertion top-k: marks the ``min(k, k_max)`` largest confidences of a vector.

    Elements arrive on ``i`` in position order, one per transfer. The unit keeps ``k_max`` slots
    of ``(key, index, occupied)`` sorted by key, largest first. Every slot compares the newcomer
    with its own entry in parallel; the newcomer beats a slot if the slot is empty or its key is
    *strictly* smaller (so among equal keys the earlier position stays ahead). Slot ``j`` takes
    slot ``j-1``'s entry if the newcomer beat both, takes the newcomer if it beat ``j`` only, and
    holds otherwise; the last entry drops out.

    Ranking is by :func:`memwall.hdl.common.fp.bf16_key`: NaN (any sign or payload) is the
    largest, then +inf, finite values, -inf; ``-0 == +0``. An element with ``valid = 0`` is ranked
    exactly as -inf (``0xFF80``): it ties with real -inf by position and is still marked when
    ``k`` exceeds the number of better positions.

    Semantics:

    * ``k`` is read from the first element of a vector and ignored on the others. ``k > k_max``
      behaves as ``k_max``; ``k = 0`` gives an all-zero mask.
    * A vector ends with the element whose ``last`` is set. It may be shorter than ``length``:
      absent positions get mask bit 0, and exactly ``min(k, k_max, n)`` bits are set for ``n``
      elements. Elements past position ``length - 1`` (a protocol error) are accepted and
      ignored until ``last``.
    * Timing: one element per cycle. The mask of a vector is valid on ``o`` in the cycle after
      its ``last`` element was transferred (latency 1 cycle), while the slots are already empty
      for the next vector, so back-to-back vectors run without bubbles when ``o`` is ready.
      While a mask waits on ``o`` (``o.valid & ~o.ready``) the input stalls (``i.ready = 0``);
      ``i.ready`` depends combinationally on ``o.ready``.

    Cost: ``k_max`` slots of 16-bit key + index + occupied bit, a snapshot of ``k_max``
    (index, marked) pairs, ``k_max`` 16-bit signed comparators, and ``k_max`` one-hot decoders
    of ``length`` bits ORed into the mask (combinational from the snapshot registers). With
    ``k_max = length`` the last slot has no key nor comparator (nothing comes after it).

    Parameters
    ----------
    length : int
        Longest vector (L, the diffusion block length); ``length >= 1``.
    k_max : int
        Slots (most positions marked per vector); ``1 <= k_max <= length``.

    Attributes
    ----------
    i : In(stream.Signature(StructLayout))
        Payload fields ``value`` (16, BF16 bits), ``valid`` (1), ``k`` (``bits_for(k_max)``),
        ``last`` (1), packed LSB-first in that order.
    element_layout : StructLayout
        The ``i`` payload layout.
    o : Out(stream.Signature(length))
        One mask per vector: bit ``j`` set iff position ``j`` is among the top ``k``.
    params : dict
        ``{"length": length, "k_max": k_max}``.
    """

    def __init__(self, length: int, k_max: int):
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"length must be an int >= 1, got {length!r}")
        if not isinstance(k_max, int) or not 1 <= k_max <= length:
            raise ValueError(f"k_max must be an int in [1, length = {length}], got {k_max!r}")
        self.length = length
        self.k_max = k_max
        self.params = {"length": length, "k_max": k_max}
        self.element_layout = data.StructLayout({
            "value": 16, "valid": 1, "k": self.k_width, "last": 1,
        })
        super().__init__({
            "i": In(stream.Signature(self.element_layout)),
            "o": Out(stream.Signature(length)),
        })

    @property
    def k_width(self) -> int:
        """Width of the ``k`` field (holds ``0 .. k_max``)."""
        return bits_for(self.k_max)

    @property
    def index_width(self) -> int:
        """Width of a stored position index (``0 .. length - 1``)."""
        return bits_for(self.length - 1)

    def elaborate(self, platform):
        m = Module()
        n, L = self.k_max, self.length
        el = self.i.payload

        # Keys span -0x7FFF .. 0x7F81 (NaN), so 16 signed bits hold them exactly. With
        # k_max = length the last slot fills only with the vector's last element: its key is
        # never compared, so it has neither key register nor comparator.
        keyed = n - 1 if n == L else n
        slot_key = [Signal(signed(16), name=f"slot{j}_key") for j in range(keyed)]
        slot_idx = [Signal(self.index_width, name=f"slot{j}_idx") for j in range(n)]
        slot_occ = [Signal(name=f"slot{j}_occ") for j in range(n)]
        # Snapshot of the finished vector (indices and "marked" bits), so the slots can clear
        # and take the next vector while the mask waits on ``o``.
        out_idx = [Signal(self.index_width, name=f"out{j}_idx") for j in range(n)]
        out_en = [Signal(name=f"out{j}_en") for j in range(n)]
        out_valid = Signal()

        pos = Signal(range(L + 1))        # saturates at L: later elements are ignored
        k_reg = Signal(self.k_width)      # k of the current vector, from its first element
        first = pos == 0
        # No clamp needed: a k above k_max still only enables the k_max slots that exist.
        k_cur = Mux(first, el.k, k_reg)

        new_key = Signal(signed(16))
        m.d.comb += new_key.eq(bf16_key(Mux(el.valid, el.value, NEG_INF_BF16)))
        in_range = pos < L

        # One comparator per slot; the slots are sorted, so `beats` reads F..F T..T.
        beats = [Signal(name=f"beats{j}") for j in range(n)]
        for j in range(n):
            m.d.comb += beats[j].eq(~slot_occ[j] | (new_key > slot_key[j] if j < keyed else 0))

        nxt_key = [Signal(signed(16), name=f"nxt{j}_key") for j in range(keyed)]
        nxt_idx = [Signal(self.index_width, name=f"nxt{j}_idx") for j in range(n)]
        nxt_occ = [Signal(name=f"nxt{j}_occ") for j in range(n)]
        for j in range(n):
            load = beats[j] & ~beats[j - 1] if j else beats[0]
            hold_key = Mux(load, new_key, slot_key[j]) if j < keyed else None
            hold_idx = Mux(load, pos[:self.index_width], slot_idx[j])
            hold_occ = slot_occ[j] | load
            if j:  # beaten predecessor: shift its entry down one place
                if j < keyed:
                    hold_key = Mux(beats[j - 1], slot_key[j - 1], hold_key)
                hold_idx = Mux(beats[j - 1], slot_idx[j - 1], hold_idx)
                hold_occ = Mux(beats[j - 1], slot_occ[j - 1], hold_occ)
            if j < keyed:
                m.d.comb += nxt_key[j].eq(hold_key)
            m.d.comb += [nxt_idx[j].eq(hold_idx), nxt_occ[j].eq(hold_occ)]

        # The input stalls only while a finished mask is refused by the consumer.
        m.d.comb += [
            self.i.ready.eq(~out_valid | self.o.ready),
            self.o.valid.eq(out_valid),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += out_valid.eq(0)

        accepted = self.i.valid & self.i.ready
        # One enable for the slots, not an If inside the transfer's: the inner If's hold path
        # would serve only elements past `length`, whose keys are never read (logic no test
        # can check).
        with m.If(accepted & in_range):
            m.d.sync += [slot_key[j].eq(nxt_key[j]) for j in range(keyed)]
            m.d.sync += [slot_idx[j].eq(nxt_idx[j]) for j in range(n)]
            m.d.sync += [slot_occ[j].eq(nxt_occ[j]) for j in range(n)]
            m.d.sync += pos.eq(pos + 1)
        with m.If(accepted):
            with m.If(first):
                m.d.sync += k_reg.eq(el.k)
            with m.If(el.last):
                # Ignored (out-of-range) last elements leave the slots as they are. Their
                # occupied bits need no such care: past `length` elements every slot is
                # occupied, and an occupied slot stays so in nxt_occ.
                final_idx = [Mux(in_range, nxt_idx[j], slot_idx[j]) for j in range(n)]
                m.d.sync += [out_idx[j].eq(final_idx[j]) for j in range(n)]
                m.d.sync += [out_en[j].eq(nxt_occ[j] & (k_cur > j)) for j in range(n)]
                m.d.sync += out_valid.eq(1)
                m.d.sync += [slot_occ[j].eq(0) for j in range(n)]
                m.d.sync += pos.eq(0)

        # Decode the snapshot: k_max one-hot decoders ORed together.
        mask = 0
        for j in range(n):
            onehot = Cat(out_idx[j] == p for p in range(L))
            mask = mask | Mux(out_en[j], onehot, 0)
        m.d.comb += self.o.payload.eq(mask)
        return m
