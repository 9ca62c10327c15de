"""A pipelined FP block behind the lockstep control its lanes use, as a stream to simulate.

The lanes of the d-PLENA units (and of rDXE and KVNAND) drive each block's ``load`` from a
:class:`~memwall.hdl.common.lanes.LockstepControl`; this harness does the same for one block
on its own, so a cocotb testbench can run it through the Verilog flow (and the mutation run
sees the block's module under test) with stalls and back-pressure. Operands are sideband
inputs taken with each ``i`` transfer; ``y`` holds the result while ``o.valid`` is high; the
payload is a tag that comes back with its result.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.hdl.common.lanes import LockstepControl
from memwall.hdl.common.netlist import unique_submodule

__all__ = ["StreamedFpBlock", "TAG_BITS"]

#: Width of the tag carried beside each operand set.
TAG_BITS = 8


class StreamedFpBlock(wiring.Component):
    """``block`` (an FP block with ``stages >= 1``) fed by a LockstepControl of its depth."""

    def __init__(self, block):
        if not block.stages:
            raise ValueError("the harness drives a pipelined block's load; stages must be >= 1")
        self.block = block
        self.operands = {name: member.shape for name, member in block.signature.members.items()
                         if member.flow == In and name != "load"}
        super().__init__({"i": In(stream.Signature(TAG_BITS)),
                          "o": Out(stream.Signature(TAG_BITS)),
                          **{name: In(shape) for name, shape in self.operands.items()},
                          "y": Out(block.y.shape())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.control = control = LockstepControl(TAG_BITS, self.block.stages)
        unique_submodule(m, "block", self.block)
        wiring.connect(m, wiring.flipped(self.i), control.i)
        wiring.connect(m, control.o, wiring.flipped(self.o))
        m.d.comb += self.block.load.eq(control.load)
        m.d.comb += [getattr(self.block, name).eq(getattr(self, name)) for name in self.operands]
        m.d.comb += self.y.eq(self.block.y)
        return m
