"""V_SELECT_INT: element-wise ``mask ? a : b`` over INT32 vectors (paper Table I, phase 4)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall.hdl.common.lanes import LaneArray, LockstepControl

__all__ = ["SelectLane", "MaskedSelectUnit"]


class SelectLane(wiring.Component):
    """One lane of V_SELECT_INT: registers ``mask ? a : b`` when ``load`` is high.

    Parameters
    ----------
    width : int
        Integer element width in bits.
    """

    def __init__(self, width: int):
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.params = {"width": width}
        super().__init__({
            "load": In(1), "mask": In(1), "a": In(width), "b": In(width), "y": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        result = Signal.like(self.y, reset_less=True)  # datapath register: no reset needed
        with m.If(self.load):
            m.d.sync += result.eq(Mux(self.mask, self.a, self.b))
        m.d.comb += self.y.eq(result)
        return m


class MaskedSelectUnit(LaneArray):
    """VLEN-lane masked select: on each ``i`` transfer, ``y[n] = mask[n] ? a[n] : b[n]``.

    One cycle of latency; ``o`` carries the command tag back so a sequencer can match results.

    Parameters
    ----------
    lanes : int
        Vector length (lanes working in parallel).
    width : int
        Element width (INT32 in d-PLENA).
    tag_width : int
        Width of the caller's tag passed from ``i.payload`` to ``o.payload``.
    """

    module_name = "masked_select_unit"

    def __init__(self, lanes: int, width: int = 32, tag_width: int = 4):
        self.params = {"lanes": lanes, "width": width, "tag_width": tag_width}
        super().__init__(lane_factory=lambda: SelectLane(width), count=lanes,
                         control=LockstepControl(unsigned(tag_width), latency=1),
                         links={"load": "load"})
