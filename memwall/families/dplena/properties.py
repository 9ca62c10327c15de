"""Formal properties of d-PLENA units (``memwall prove dplena32``).

* The stream protocol of every stream port of every d-PLENA component class that has one (the
  units of ``dplena_core``: top-k, masked select, scalar FP, elementwise, reduction unit and
  its accumulator, the lockstep control of each lane array, the dequantiser and its control,
  the sequencer), at the config's own parameters, by k-induction. Data a unit drives beside a
  stream (a lane array's ``y``, the dequantiser's Vector SRAM write) is held with it.
  ``dplena_core`` itself is a structural top with no signature: its ports are the sequencer's
  ``out`` and the dequantiser's ``beat``.
* Functional properties: the top-k mask (here), the masked select and the reduction unit's
  first-maximum rule (:mod:`.properties_units`), the sequencer's retirement and prefetch
  discipline (:mod:`.properties_sequencer`).
"""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Elaboratable, Module, Mux, Signal, signed, unsigned
from amaranth.hdl._ast import AnySeq, Initial
from amaranth.utils import bits_for, exact_log2

from memwall.families.dplena.properties_sequencer import sequencer_property
from memwall.families.dplena.properties_units import (
    MaskedSelectHarness,
    ReductionAccumulatorHarness,
    ReductionTreeHarness,
)
from memwall.formal import Property, internal, protocol_source, stream_protocol
from memwall.hdl.common.fp import bf16_key

__all__ = ["properties", "TopkHarness"]

#: The key of an element with ``valid = 0``: -inf's (the unit's ranking).
_MINUS_INF_KEY = -0x7F80

#: The stream-protocol statement every protocol property's docstring starts from.
_PROTOCOL = ("keep the valid/ready protocol (an offered valid held, with its payload, until "
             "ready; nothing valid the cycle after a reset), every other input free and the "
             "consumed streams' sources assumed to keep it")


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


def _accumulator_invariant(path: str):
    """The reduction accumulator never holds a result while it folds a SUM (so a waiting
    result cannot be overwritten by a fold); ``path`` is the accumulator in the harness."""

    def invariants(m: Module, fragment) -> None:
        folding, out_valid = (internal(fragment, path, name) for name in ("folding", "out_valid"))
        m.d.comb += Assert(~(folding & out_valid))

    return invariants


def lockstep_controls(cfg) -> dict[str, tuple]:
    """The lockstep control of each lane array of ``cfg``'s core and of its reduction unit:
    unit -> (command shape, latency, whether it has ``last_cmd``)."""
    from memwall.families.dplena.config import tree_latency
    from memwall.hdl.dplena.elementwise import EW_CMD, SCALAR_CMD
    from memwall.hdl.dplena.reduction import reduce_cmd_layout

    st = cfg.stages
    return {
        "scalar_fp": (SCALAR_CMD, st.scalar_fp_latency, st.scalar_fp_latency > 1),
        "select": (unsigned(4), 1, False),
        "reduction": (reduce_cmd_layout(cfg.vlen),
                      tree_latency(exact_log2(cfg.vlen), st.add_fp32), False),
        "elementwise": (EW_CMD, st.elementwise_latency, st.elementwise_latency > 1),
    }


def _stream_properties(cfg) -> list[Property]:
    from memwall.families.dplena.config import tree_latency
    from memwall.hdl.common.lanes import LockstepControl
    from memwall.hdl.dplena.dequant import DequantControl, Dequantiser
    from memwall.hdl.dplena.elementwise import ElementwiseUnit, ScalarFpUnit
    from memwall.hdl.dplena.reduction import ReductionAccumulator, ReductionUnit
    from memwall.hdl.dplena.select import MaskedSelectUnit
    from memwall.hdl.dplena.topk import TopkMaskUnit

    st, vlen, name = cfg.stages, cfg.vlen, cfg.name
    row_bits = exact_log2(cfg.vector_sram_rows)
    beat = cfg.hbm_bytes_per_cycle
    mx_label = "MXFP8" if cfg.mx_format == "mxfp8_e4m3" else cfg.mx_format
    y = {"o": ("y",)}
    red_latency = tree_latency(exact_log2(vlen), st.add_fp32)
    controls = lockstep_controls(cfg)

    def control(unit):
        shape, latency, last_cmd = controls[unit]
        return lambda: LockstepControl(shape, latency, last_cmd)

    props = [
        stream_protocol(
            "dplena_topk_streams", lambda: TopkMaskUnit(cfg.block_len, cfg.k_max),
            f"top-k mask unit of {name} (length {cfg.block_len}, k_max {cfg.k_max}): element "
            f"and mask streams {_PROTOCOL}. k-induction (depth 4), so for every depth.",
            depth=4),
        stream_protocol(
            "dplena_select_streams", lambda: MaskedSelectUnit(1, width=32),
            f"masked select unit of {name} (1 lane of INT32, as the sequencer builds it): "
            f"command and result streams {_PROTOCOL}; the result y is held with o. "
            "k-induction (depth 3).", depth=3, sideband=y),
        stream_protocol(
            "dplena_scalar_fp_streams", lambda: ScalarFpUnit(1, st),
            f"scalar FP unit of {name} (e^x, 1/x, FP32->BF16 with its FP stages, latency "
            f"{st.scalar_fp_latency}): command and result streams {_PROTOCOL}; y is held with "
            "o. k-induction (depth 3).", depth=3, sideband=y),
        stream_protocol(
            "dplena_elementwise_streams", lambda: ElementwiseUnit(vlen, st),
            f"elementwise unit of {name} ({vlen} BF16 lanes, latency {st.elementwise_latency}):"
            f" command and result streams {_PROTOCOL}; the {vlen}-lane result y is held with o. "
            "k-induction (depth 3).", depth=3, sideband=y),
        stream_protocol(
            "dplena_reduction_streams", lambda: ReductionUnit(vlen, st.add_fp32),
            f"reduction unit of {name} ({vlen} lanes, {st.add_fp32}-stage FP32 adders, tree "
            f"latency {red_latency}): chunk and result streams {_PROTOCOL}. k-induction "
            "(depth 3), strengthened by the accumulator's invariant: no result is held while a "
            "SUM folds.", depth=3, invariants=_accumulator_invariant("accumulator")),
        stream_protocol(
            "dplena_reduction_accumulator_streams",
            lambda: ReductionAccumulator(vlen, st.add_fp32),
            f"reduction accumulator of {name} ({vlen} lanes a chunk, "
            f"{st.add_fp32 + 2 if st.add_fp32 else 1} interleaved partial sums): chunk and "
            f"result streams {_PROTOCOL}. k-induction (depth 3), with the invariant that no "
            "result is held while a SUM folds.", depth=3, invariants=_accumulator_invariant("")),
        stream_protocol(
            "dplena_dequant_control_streams",
            lambda: DequantControl(vlen, beat, row_bits, cfg.mx_format),
            f"dequantiser control of {name} ({beat}-byte beats, {row_bits}-bit rows): it only "
            "consumes streams (cmd, beat); its Vector SRAM write (wr_valid/wr_ready with "
            f"wr_row, wr_bank) and the streams {_PROTOCOL}. k-induction (depth 3).",
            depth=3, handshakes={"wr": ("wr_valid", "wr_ready", ("wr_row", "wr_bank"))}),
        stream_protocol(
            "dplena_dequantiser_streams", lambda: Dequantiser(vlen, beat, row_bits, cfg.mx_format),
            f"{mx_label} dequantiser of {name} (control and {cfg.bank_lanes} lanes): cmd and "
            "beat consumed; "
            "its Vector SRAM write (wr_valid/wr_ready with wr_row, wr_bank and the lanes' "
            f"wr_data) and the streams {_PROTOCOL}. k-induction (depth 3).",
            depth=3,
            handshakes={"wr": ("wr_valid", "wr_ready", ("wr_row", "wr_bank", "wr_data"))}),
    ]
    for unit, (_, latency, last_cmd) in controls.items():
        props.append(stream_protocol(
            f"dplena_lockstep_{unit}_streams", control(unit),
            f"the lockstep control of {name}'s {unit} unit (latency {latency}"
            f"{', last_cmd' if last_cmd else ''}): command streams {_PROTOCOL}. k-induction "
            "(depth 3).", depth=3))
    props.append(sequencer_property(
        "dplena_sequencer_streams", cfg,
        f"sequencer of {name}, for every program (instruction memory, registers and SRAMs "
        f"free in the induction step): out, dma_cmd, red_i and ew_i {_PROTOCOL}, under its "
        "neighbours' contracts (the dequantiser takes a command exactly when not busy; the "
        "reduction unit is ready unless it owes a result; the elementwise unit always ready; "
        "results only when owed). Also proved: the sequencer never back-pressures a result "
        "(red_o.ready, ew_o.ready) and never offers a reduction chunk while a reduction result "
        "is owed (the unit may be folding a SUM then), the sequencer's side of those "
        "contracts. It ignores red_i.ready and ew_i.ready: that holds only with such units. "
        "k-induction (depth 3), strengthened by invariants on the sequencer's counters.",
        ("streams",), depth=3))
    return props


def properties(cfg) -> list[Property]:
    from memwall.hdl.dplena.select import MaskedSelectUnit

    st, name = cfg.stages, cfg.name
    length, k_max = 3, 2      # small: z3 takes ~70 s for 2 vectors of 3 (4 took > 10 min)
    tree_lanes = 4            # 8 lanes: z3's induction step alone takes 5 min
    return [
        *_stream_properties(cfg),
        Property(
            "dplena_topk_mask", lambda: TopkHarness(length, k_max),
            f"top-k mask unit (length {length}, k_max {k_max}): popcount(mask) = min(k, k_max, "
            "n); every marked key >= every unmarked key, the first position winning ties; no "
            f"position past n marked; any BF16 values (NaN, infinities, signed zeros), "
            f"invalid elements as -inf. Bounded: two vectors ({2 * (length + 1)} cycles).",
            mode="bmc", depth=2 * (length + 1)),
        Property(
            "dplena_select_function",
            lambda: MaskedSelectHarness(1, 32, 4, lambda: MaskedSelectUnit(1, width=32)),
            f"masked select unit of {name} (1 lane of INT32, 4-bit tag, as the sequencer "
            "builds it) against golden.dplena.masked_select: every result answers the oldest "
            "unanswered command, with its tag and y[n] = mask[n] ? a[n] : b[n] of the operands "
            "sampled with it; a result is offered exactly when one is owed (none lost, "
            "duplicated or made up). Operands, o.ready and reset free; commands keep the "
            "protocol. k-induction (depth 3), so for every depth.", depth=3),
        Property(
            "dplena_reduction_tree_first_max",
            lambda: ReductionTreeHarness(tree_lanes, st.add_fp32),
            f"reduction tree of {tree_lanes} lanes with {name}'s {st.add_fp32}-stage FP32 "
            "adders (leaf pairs and node: every module kind of the "
            f"{cfg.vlen}-lane tree, which is the same recursion over more levels, not proved "
            "here), every stage loading each cycle: the result leaving it is the first maximum of "
            "the chunk that entered latency cycles before, its lanes below count valid (the "
            "unit's lane mask): valid iff count > 0, its value is "
            "that lane's BF16 bits, no lane below count has a greater bf16_key (NaN largest, "
            "+0 == -0) and every lane before its index a smaller one, so the lowest index "
            "wins ties. Data free, count <= lanes. The adders are cut (their sums free: the "
            "max never reads them). k-induction (depth latency + 2).",
            depth=_tree_depth(tree_lanes, st.add_fp32), cut=("dut.*adder",)),
        Property(
            "dplena_reduction_accumulator_first_max",
            lambda: ReductionAccumulatorHarness(cfg.vlen, st.add_fp32),
            f"reduction accumulator of {name} ({cfg.vlen} lanes a chunk, {st.add_fp32}-stage "
            "adder): given each chunk's first maximum (the tree's result, free), a vector's "
            "MAX_IDX result is the maximum's BF16 bits (value[16:32]) and the global index "
            "(chunk offset + lane) of the first chunk maximum among equal ones: a later chunk "
            "replaces it only if strictly greater; over any number of chunks and vectors; -inf "
            "and index 0 with no valid lane; MAX the same value with index 0; one result per "
            "LAST chunk, in order, none made up. Commands keep the protocol (ops of the enum), "
            "o.ready and reset free; the adder is cut (SUM values free). k-induction (depth 3), "
            "strengthened by invariants tying its running result to the reference. With "
            "dplena_reduction_tree_first_max: the unit's MAX_IDX is the first index among "
            "equal maxima of the whole vector.",
            depth=3, cut=("dut.adder",)),
        sequencer_property(
            "dplena_sequencer_retire", cfg,
            f"sequencer of {name}, every program, under the neighbours' contracts of "
            "dplena_sequencer_streams: an instruction retires only once what it waits for is "
            "in: H_WAIT only with the dequantiser idle (a prefetched buffer is complete); "
            "H_PREFETCH_V only when its command is taken; V_RED_* with LAST in the cycle its "
            "result arrives, without LAST with its last chunk; V_SUB_VF/V_EXP_V with their last "
            "row written back; S_EXP_BF/S_RECIP_BF/S_CVT_BF with the FP unit's result; "
            "V_SELECT_INT with its last element written; S_ADD_F/S_MUL_F/S_SUB_BF after "
            "exactly their block's stages + 2 cycles. And in the cycle after any retirement no "
            "unit owes anything to an earlier instruction (no reduction result, elementwise row, "
            "scalar FP result, select write-back or top-k vector in flight), so the next "
            "instruction's operands are ready. k-induction (depth 3), strengthened by "
            "invariants tying each unit's occupancy to its instruction's counters.",
            ("retire",), depth=3),
        sequencer_property(
            "dplena_sequencer_prefetch", cfg,
            f"sequencer of {name}, every program that keeps the double-buffer discipline "
            "(assumed: a prefetch fills rows of one half; until an H_WAIT follows it, no "
            "instruction names a Vector SRAM row of that half, per the ISA table's operands): "
            "while a prefetch is in flight (from its command taken until the dequantiser is "
            "idle) the sequencer neither reads nor writes a row of the half it fills, so a "
            "prefetch never overwrites the buffer being read. What the hardware adds to the "
            "discipline: one prefetch at a time, H_WAIT waits for it, vector instructions "
            "touch only the rows they name and only while they run. Neighbours' contracts as "
            "dplena_sequencer_streams. k-induction (depth 3), strengthened by invariants on "
            "the running instruction's row counters.",
            ("prefetch",), depth=3),
    ]


def _tree_depth(lanes: int, stages: int) -> int:
    from memwall.families.dplena.config import tree_latency

    return tree_latency(exact_log2(lanes), stages) + 2
