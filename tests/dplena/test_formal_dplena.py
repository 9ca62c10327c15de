"""d-PLENA's formal properties (memwall/families/dplena/properties*.py): the fast proofs hold,
and each functional property has a negative control -- a broken unit or a wrong expectation --
that it refutes from reset with a counterexample trace. The sequencer's controls run a preloaded
program through a whole instruction (about a minute each): marked slow, as are the longer
proofs."""

from __future__ import annotations

from pathlib import Path

import pytest
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

import memwall.hdl.dplena.sequencer as sequencer_module
from memwall.config import load_config
from memwall.families.dplena.config import DplenaConfig
from memwall.families.dplena.properties import properties
from memwall.families.dplena.properties_sequencer import sequencer_property
from memwall.families.dplena.properties_units import (
    MaskedSelectHarness,
    ReductionAccumulatorHarness,
    ReductionTreeHarness,
)
from memwall.formal import Property, run_property, stream_protocol
from memwall.golden.dplena.isa import RED_FIRST, RED_LAST, Instr, Op, encode
from memwall.hdl.common.lanes import LaneArray, LockstepControl
from memwall.hdl.dplena.select import SelectLane

CFG = load_config("dplena32")

#: Proofs of a few seconds to half a minute each (k-induction).
FAST = ("dplena_select_streams", "dplena_select_function", "dplena_scalar_fp_streams",
        "dplena_reduction_accumulator_streams", "dplena_reduction_accumulator_first_max",
        "dplena_dequant_control_streams", "dplena_lockstep_select_streams",
        "dplena_sequencer_streams")
#: The rest of the new proofs (up to several minutes each).
SLOW = ("dplena_elementwise_streams", "dplena_reduction_streams", "dplena_dequantiser_streams",
        "dplena_lockstep_scalar_fp_streams", "dplena_lockstep_reduction_streams",
        "dplena_lockstep_elementwise_streams", "dplena_reduction_tree_first_max",
        "dplena_sequencer_retire", "dplena_sequencer_prefetch")


def _prop(name: str) -> Property:
    return {p.name: p for p in properties(CFG)}[name]


def _fails_with_trace(result: dict) -> None:
    assert result["status"] == "fail", result
    assert Path(result["trace"]).suffix == ".vcd" and Path(result["trace"]).is_file()


def test_every_stream_component_has_a_protocol_property():
    """Each d-PLENA component class with a stream port has a ``*_streams`` property."""
    names = {p.name for p in properties(CFG)}
    for unit in ("topk", "select", "scalar_fp", "elementwise", "reduction",
                 "reduction_accumulator", "dequant_control", "dequantiser", "sequencer",
                 "lockstep_scalar_fp", "lockstep_select", "lockstep_reduction",
                 "lockstep_elementwise"):
        assert f"dplena_{unit}_streams" in names
    assert set(FAST) | set(SLOW) <= names


@pytest.mark.tool
@pytest.mark.parametrize("name", FAST)
def test_fast_proofs_hold(name, tmp_path):
    result = run_property(_prop(name), tmp_path / name)
    assert result["status"] == "proved", result


@pytest.mark.slow
@pytest.mark.tool
@pytest.mark.parametrize("name", SLOW)
def test_slow_proofs_hold(name, tmp_path):
    result = run_property(_prop(name), tmp_path / name)
    assert result["status"] == "proved", result


# --- the stream-protocol harness's sideband and handshake checks --------------------------------

class LeakyLane(wiring.Component):
    """``o`` held while stalled, but ``y`` (its data) counts on regardless."""

    def __init__(self):
        super().__init__({"o": Out(stream.Signature(4)), "y": Out(4),
                          "wr_valid": Out(1), "wr_ready": In(1), "wr_data": Out(4)})

    def elaborate(self, platform):
        m = Module()
        count = Signal(4)
        m.d.sync += count.eq(count + 1)
        m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(5), self.y.eq(count),
                     self.wr_valid.eq(1), self.wr_data.eq(count)]
        return m


@pytest.mark.tool
def test_sideband_data_must_be_held(tmp_path):
    result = run_property(stream_protocol("leaky_sideband", LeakyLane, "negative control",
                                          depth=4, sideband={"o": ("y",)}), tmp_path / "y")
    _fails_with_trace(result)


@pytest.mark.tool
def test_handshake_data_must_be_held(tmp_path):
    result = run_property(stream_protocol(
        "leaky_handshake", LeakyLane, "negative control", depth=4,
        handshakes={"wr": ("wr_valid", "wr_ready", ("wr_data",))}), tmp_path / "wr")
    _fails_with_trace(result)


# --- masked select ------------------------------------------------------------------------------

class SwappedLane(SelectLane):
    """A lane that selects ``b`` where the mask is set: the wrong way round."""

    def elaborate(self, platform):
        m = Module()
        result = Signal.like(self.y)
        with m.If(self.load):
            m.d.sync += result.eq(Mux(self.mask, self.b, self.a))
        m.d.comb += self.y.eq(result)
        return m


@pytest.mark.tool
def test_select_function_refutes_a_swapped_select(tmp_path):
    def swapped():
        return LaneArray(lane_factory=lambda: SwappedLane(32), count=1,
                         control=LockstepControl(4, latency=1), links={"load": "load"})

    prop = Property("select_swapped", lambda: MaskedSelectHarness(1, 32, 4, swapped),
                    "negative control", depth=3)
    _fails_with_trace(run_property(prop, tmp_path / "select"))


# --- reduction: the first index among equal maxima ----------------------------------------------

@pytest.mark.tool
def test_tree_refutes_the_last_index_rule(tmp_path):
    """The tree keeps the first of equal maxima, so expecting the last one fails (the bound:
    the 4-lane tree's latency, 2 levels, and two cycles to load and compare)."""
    prop = Property("tree_last", lambda: ReductionTreeHarness(4, CFG.stages.add_fp32, "last"),
                    "negative control", depth=CFG.stages.tree_latency(2) + 2,
                    cut=("dut.*adder",))
    _fails_with_trace(run_property(prop, tmp_path / "tree"))


@pytest.mark.tool
def test_accumulator_refutes_the_later_chunk_rule(tmp_path):
    """Across chunks the earlier maximum stands, so a reference letting the later one win a
    tie fails."""
    prop = Property("acc_last",
                    lambda: ReductionAccumulatorHarness(CFG.vlen, CFG.stages.add_fp32, "last"),
                    "negative control", depth=3, cut=("dut.adder",))
    _fails_with_trace(run_property(prop, tmp_path / "acc"))


# --- sequencer: broken variants running a preloaded program -------------------------------------

def _program(*instrs: Instr) -> list[int]:
    return [encode(i) for i in instrs]


class _Preloaded(sequencer_module._Datapath):
    """The datapath with :attr:`PROGRAM` in its instruction memory from reset (the host may
    still overwrite it), so a counterexample needs no host writes."""

    PROGRAM: list[int] = []

    def _memories(self):
        super()._memories()
        self.imem_rd.memory.init = self.PROGRAM


class WaitsForNothing(_Preloaded):
    """H_WAIT retires at once, prefetch running or not."""

    PROGRAM = _program(Instr(Op.ADDI, rd=1, imm=32),                  # g1 = one row of logits
                       Instr(Op.H_PREFETCH_V, rd=0, rs1=1),           # into row 0 (half 0)
                       Instr(Op.H_WAIT),
                       Instr(Op.H_STORE_V, rs1=0, imm=1),             # reads row 0
                       Instr(Op.HALT))

    def execute(self):
        super().execute()
        with self.m.If(self.op == Op.H_WAIT):
            self.m.d.comb += self.done.eq(1)


class ReducesEarly(_Preloaded):
    """A V_RED with LAST retires when its last chunk leaves, not when its result arrives (the
    next V_RED then offers a chunk while the unit still owes that result)."""

    PROGRAM = _program(Instr(Op.ADDI, rd=2, imm=1),                   # g2 = 1 element
                       Instr(Op.V_RED_MAX, rd=1, rs1=0, rs2=2, imm=RED_FIRST | RED_LAST),
                       Instr(Op.V_RED_MAX, rd=1, rs1=0, rs2=2, imm=RED_FIRST | RED_LAST),
                       Instr(Op.HALT))

    def vector_states(self):      # Sequencer's, but REDUCE never waits for a result
        m, seq = self.m, self.seq
        with m.State("REDUCE"):
            self.issue_rows()
            m.d.comb += seq.red_i.valid.eq(self.p_valid)
            with m.If(self.p_valid & self.p_last):
                self.complete()
        with m.State("ELEMENTWISE"):
            self.issue_rows()
            m.d.comb += seq.ew_i.valid.eq(self.p_valid)
            with m.If(seq.ew_o.valid):
                m.d.comb += [seq.vs_wr_en.eq(1), seq.vs_wr_row.eq(self.wr_row)]
                m.d.sync += [self.retired.eq(self.retired + 1), self.wr_row.eq(self.wr_row + 1)]
                with m.If(self.retired == self.n_items_m1):
                    self.complete()


#: The smallest core (16 instructions, 2-word SRAMs, a block of 2): the same harness as
#: dplena32's, where z3 finds the counterexamples in about a minute instead of ten.
SMALL = DplenaConfig(name="dplena_formal_small", vlen=32, block_len=2, k_max=1,
                     hbm_bytes_per_cycle=32, vector_sram_kib=1, fp_sram_words=2,
                     int_sram_words=2, imem_words=16, out_fifo_depth=2)


def _broken_sequencer(monkeypatch, tmp_path, datapath, check: str, depth: int) -> dict:
    monkeypatch.setattr(sequencer_module, "_Datapath", datapath)
    prop = sequencer_property(f"broken_{check}", SMALL, "negative control", (check,),
                              mode="bmc", depth=depth)
    return run_property(prop, tmp_path / check)


@pytest.mark.slow
@pytest.mark.tool
def test_prefetch_refutes_an_h_wait_that_does_not_wait(monkeypatch, tmp_path):
    _fails_with_trace(_broken_sequencer(monkeypatch, tmp_path, WaitsForNothing, "prefetch", 10))


@pytest.mark.slow
@pytest.mark.tool
def test_retire_refutes_an_h_wait_that_does_not_wait(monkeypatch, tmp_path):
    _fails_with_trace(_broken_sequencer(monkeypatch, tmp_path, WaitsForNothing, "retire", 10))


@pytest.mark.slow
@pytest.mark.tool
def test_retire_refutes_a_reduction_that_does_not_wait_for_its_result(monkeypatch, tmp_path):
    _fails_with_trace(_broken_sequencer(monkeypatch, tmp_path, ReducesEarly, "retire", 10))


@pytest.mark.slow
@pytest.mark.tool
def test_streams_refute_a_reduction_that_leaves_its_result_owed(monkeypatch, tmp_path):
    """The streams property holds only while a reduction result is owed to the V_RED waiting
    for it (so no chunk is offered to a unit that may be folding): leaving early breaks it."""
    _fails_with_trace(_broken_sequencer(monkeypatch, tmp_path, ReducesEarly, "streams", 12))
