"""Structural descriptions (``memwall.hdl.common.structural``) and the instance tree of a Design."""

from __future__ import annotations

import itertools
import re

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from memwall.config import load_config
from memwall.gen import build_design
from memwall.hdl.common.netlist import Design, unique_submodule
from memwall.hdl.common.structural import Structural
from memwall.hdl.dplena.core import VectorSramWriteArbiter
from memwall.hdl.dplena.reduction import ReduceOp, ReductionUnit


class Source(wiring.Component):
    """A child with a stream out, a plain output and an input (no logic worth simulating)."""

    def __init__(self, width: int = 8):
        self.params = {"width": width}
        super().__init__({"o": Out(stream.Signature(width)), "flag": Out(1), "en": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.o.valid.eq(self.en), self.flag.eq(self.o.ready)]
        return m


class Sink(wiring.Component):
    def __init__(self, width: int = 8):
        self.params = {"width": width}
        super().__init__({"i": In(stream.Signature(width)), "seen": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.i.ready.eq(1), self.seen.eq(self.i.valid)]
        return m


class Pair(Structural, wiring.Component):
    """Source -> Sink, with ``en`` and ``seen`` as ports, described by ``build``."""

    def __init__(self, build):
        self._build = build
        self.params = {"test": id(build)}
        super().__init__({"en": In(1), "seen": Out(1)})

    def structure(self, netlist):
        self._build(self, netlist)


def _emit(build) -> str:
    design = Design()
    design.add_top(Pair(build), "pair")
    return design.module_text("pair")


def test_connect_by_signature_names_wires_after_the_driver():
    def build(self, n):
        src, dst = n.instance("src", Source()), n.instance("dst", Sink())
        n.connect(src.o, dst.i)
        n.connect(n.io.en, src.en)
        n.connect(dst.seen, n.io.seen)
        n.bind(src.flag, n.wire("unused_flag", 1))

    text = _emit(build)
    assert "wire [7:0] src_o__payload;" in text
    assert "wire [0:0] dst_i__ready;" in text          # ready is driven by the sink
    assert re.search(r"^  sink_width8 dst \(.*\.i__ready\(dst_i__ready\)", text, re.M)
    assert ".en(en)" in text and ".seen(seen)" in text


@pytest.mark.parametrize(("build", "message"), [
    (lambda self, n: n.connect(n.instance("a", Source(8)).o, n.instance("b", Sink(9)).i),
     "different widths"),
    (lambda self, n: n.connect(n.instance("a", Source()).o, n.instance("b", Source()).o),
     "driven by 2 ends"),
    (lambda self, n: n.connect(n.instance("a", Sink()).i, n.instance("b", Sink()).i),
     "driven by 0 ends"),
    (lambda self, n: n.connect(n.instance("a", Source()).o, n.instance("b", Sink()).seen),
     "members differ"),
    (lambda self, n: n.bind(n.instance("a", Source()).en, n.wire("w", 2)), "is 1 bits"),
    (lambda self, n: n.bind(n.instance("a", Source()).o, n.wire("w", 8)), "is an interface"),
    (lambda self, n: n.instance("a", Source()).nothing, "has no member"),
])
def test_connect_and_bind_check_signatures(build, message):
    with pytest.raises((ValueError, TypeError, AttributeError), match=message):
        _emit(build)


def test_unbound_port_is_an_error():
    def build(self, n):
        src = n.instance("src", Source())
        n.connect(n.io.en, src.en)

    unbound = r"\['flag', 'o__payload', 'o__ready', 'o__valid'\]"
    with pytest.raises(ValueError, match=rf"instance src: unbound ports {unbound}"):
        _emit(build)


def test_expose_makes_ports_from_the_child_signature():
    class Top(Structural):
        module_name = "top"
        params = {}

        def structure(self, n):
            src = n.instance("src", Source())
            n.expose(src.o, "out")
            n.expose(src.en)
            n.bind(src.flag, n.wire("flag", 1))

    design = Design()
    design.add_top(Top(), "top")
    text = design.module_text("top")
    assert text.startswith("module top(out__payload, out__valid, out__ready, en);")
    assert "  output [7:0] out__payload;" in text
    assert "  input [0:0] out__ready;" in text
    assert "  input [0:0] en;" in text


def test_structural_component_simulates_in_amaranth():
    """ReductionUnit's one description, elaborated by Amaranth: MAX_IDX and SUM of a chunk."""
    dut = ReductionUnit(4)
    results = []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        lanes = [0x3F80, 0x4000, 0x4000, 0xBF80]          # 1, 2, 2, -1
        ctx.set(dut.data.as_value(), sum(v << (16 * n) for n, v in enumerate(lanes)))
        for op in (ReduceOp.MAX_IDX, ReduceOp.SUM):
            ctx.set(dut.i.payload, {"op": op, "count": 4, "first": 1, "last": 1})
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)
            *_, payload = await ctx.tick().sample(dut.o.payload).until(dut.o.valid)
            results.append((payload.value, payload.index))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(testbench)
    sim.run()
    assert results[0] == (0x40000000, 1)       # first 2.0 wins
    assert results[1][0] == 0x40800000         # 1 + 2 + 2 - 1 = 4.0 (FP32)


def test_bank_write_arbiter_truth_table():
    dut = VectorSramWriteArbiter(banks=4, row_bits=3)

    async def testbench(ctx):
        for vec_we, vec_row, valid, row, bank in itertools.product(
                (0, 1), range(8), (0, 1), range(8), range(4)):
            for sig, value in ((dut.vec_we, vec_we), (dut.vec_row, vec_row),
                               (dut.dma_valid, valid), (dut.dma_row, row),
                               (dut.dma_bank, bank)):
                ctx.set(sig, value)
            ready = not (vec_we and (vec_row >> 2) == (row >> 2))
            assert ctx.get(dut.dma_ready) == ready
            assert ctx.get(dut.dma_we) == ((1 << bank) if valid and ready else 0)

    sim = Simulator(dut)
    sim.add_testbench(testbench)
    sim.run()


# --- the instance tree -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def design32():
    return build_design(load_config("dplena32"))


def test_instance_tree_matches_the_verilog(design32):
    design, top = design32
    tree = design.instance_tree()
    assert list(tree) == design.module_names
    for parent, entries in tree.items():
        text = design.module_text(parent)
        counts: dict[str, int] = {}
        for entry in entries:
            module, name = entry["module"], entry["instance"]
            line = re.search(rf"^(\s*){re.escape(module)}\s+{re.escape(name)}\s*\(", text, re.M)
            assert line, (parent, entry)
            if "generate" in entry:
                block, count = entry["generate"]["block"], entry["generate"]["count"]
                loop = (rf"for \((\w+) = 0; \1 < {count}; \1 = \1 \+ 1\) begin : {block}\n"
                        rf"\s*{re.escape(module)} {re.escape(name)} \(")
                assert re.search(loop, text), (parent, entry)
            else:
                count = 1
            counts[module] = counts.get(module, 0) + count
        assert counts == design.children[parent], parent
    # the top: its units by name, the banks in a generate loop
    names = {e["instance"]: e for e in tree[top]}
    assert set(names) >= {"sequencer", "dequantiser", "bank_arbiter", "u", "reduction",
                          "elementwise"}
    assert names["u"]["generate"] == {"block": "bank", "count": 1}
    sequencer = names["sequencer"]["module"]
    assert {e["instance"] for e in tree[sequencer]} == {
        "scalar_fp", "topk", "select", "add_fp32", "mul_fp32", "sub_bf16"}


class _Inner(wiring.Component):
    def __init__(self):
        super().__init__({"a": In(32), "y": Out(32)})

    def elaborate(self, platform):
        from memwall.hdl.common.fp import FpAdd
        m = Module()
        adder = FpAdd("fp32")
        unique_submodule(m, "adder", adder)     # in a submodule that is not deduplicated
        m.d.comb += [adder.a.eq(self.a), adder.b.eq(self.a), adder.sub.eq(0),
                     self.y.eq(adder.y)]
        return m


class _Outer(wiring.Component):
    def __init__(self):
        self.params = {}
        super().__init__({"a": In(32), "y": Out(32)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = _Inner()
        m.d.comb += [inner.a.eq(self.a), self.y.eq(inner.y)]
        return m


def test_instance_outside_the_parent_module_is_refused():
    """An instance the manifest would place at the wrong scope is an error, not a wrong tree."""
    with pytest.raises(RuntimeError, match="is not a cell of module outer"):
        Design().add_top(_Outer(), "outer")
