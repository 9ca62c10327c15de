"""Random programs on the generated d-PLENA core against the instruction-level model.

The sampling-step tests (``tests/dplena/test_sim_core.py``) run the one program the generator
writes; each case here runs a random program that fills dplena32's instruction memory with every
instruction of the ISA, random registers and operands, branches and loops
(:mod:`memwall.verif.dplena.random_program`), and checks the output FIFO word for word and the
cycle count exactly against :func:`memwall.golden.dplena.interpreter.run_program` (two of the
programs with HBM gaps and output back-pressure: the same words, no fewer cycles). The
interpreter itself is checked against the cycle model and the sampling step's golden model
below, so a disagreement here points at the RTL. A restart keeps the state, and an undefined
opcode stops the core and changes nothing (``test_undefined_opcodes_stop_and_change_nothing``).
"""

import dataclasses

import numpy as np
import pytest

from memwall.config import load_config
from memwall.golden.dplena import sampling as golden
from memwall.golden.dplena.interpreter import run_program, stream_beats
from memwall.golden.dplena.isa import FIELDS, Op, encode
from memwall.golden.dplena.model import estimate
from memwall.golden.dplena.program import Workload, generate
from memwall.verif.dplena.core_run import hbm_beats, run_words, step_prefetches
from memwall.verif.dplena.random_program import (
    lane_readback,
    random_program,
    readback_values,
    register_fill,
    state_dump,
)

SEEDS = (1, 2, 3, 4, 5, 6)
#: Seeds run with random gaps in the HBM stream and back-pressure on the output FIFO (which
#: then fills, and the stores wait): the words must not change; the cycles can only grow.
STALLED = (5, 6)


def _assert_same_words(words, expected) -> None:
    mismatches = [(i, hex(int(got)), hex(exp)) for i, (got, exp) in
                  enumerate(zip(words, expected, strict=True)) if int(got) != exp]
    assert not mismatches, f"{len(mismatches)} output words differ (index, RTL, model): " \
                           f"{mismatches[:8]}"


@pytest.mark.sim
@pytest.mark.parametrize("seed", SEEDS)
def test_random_program_matches_interpreter(seed):
    cfg = load_config("dplena32")
    program = random_program(cfg, seed)
    want = run_program(cfg, program.words, program.int_image, program.prefetches)
    stall = seed in STALLED
    words, cycles = run_words(cfg, program.words, program.int_image, program.beats,
                              len(want["out"]), stall=stall)
    _assert_same_words(words, want["out"])
    if stall:
        assert cycles >= want["cycles"], (cycles, want["cycles"])
    else:
        assert cycles == want["cycles"], (cycles, want["cycles"])


@pytest.mark.sim
def test_every_vector_sram_lane_reads_back_exactly():
    """Each bit of each lane of each Vector SRAM row, written as 0 and as 1 by a prefetch past
    2^15 elements, read back by a reduction and out through the FIFO word for word (the random
    programs show only lanes 0..L-1 bit for bit; sums of random rows round low bits away)."""
    cfg = load_config("dplena32")
    program = lane_readback(cfg, 11)
    want = run_program(cfg, program.words, program.int_image, program.prefetches)
    assert list(want["out"]) == readback_values(program, cfg)
    words, cycles = run_words(cfg, program.words, program.int_image, program.beats,
                              len(want["out"]))
    _assert_same_words(words, want["out"])
    assert cycles == want["cycles"], (cycles, want["cycles"])


def _undefined(opcode: int, rd: int, rng) -> int:
    """An instruction word of an undefined ``opcode``: destination ``rd``, the other fields
    random (sources other than ``rd``)."""
    fields = {"opcode": opcode, "rd": rd, "imm": int(rng.integers(0, 1 << 32)),
              **{name: int(rng.choice([r for r in range(16) if r != rd]))
                 for name in ("rs1", "rs2", "rs3")}}
    return sum(value << FIELDS[name][0] for name, value in fields.items())


@pytest.mark.sim
def test_undefined_opcodes_stop_and_change_nothing():
    """Every undefined opcode, with two random destination registers, started alone after a
    program that fills the registers: each stops the core and changes nothing, which the last
    program (the random programs' epilogue) shows: its words and cycles are the interpreter's
    for the filled state. Registers and memories keep their values across a start."""
    cfg = load_config("dplena32")
    rng = np.random.default_rng(7)
    fill = [encode(i) for i in register_fill(cfg, 7)]
    dump = [encode(i) for i in state_dump(cfg)]
    undefined = sorted(set(range(1 << FIELDS["opcode"][1])) - {int(op) for op in Op})
    stops = [[_undefined(op, int(rd), rng)] for op in undefined
             for rd in rng.choice(16, 2, replace=False)]
    state = run_program(cfg, fill)["state"]
    for stop in stops:
        assert run_program(cfg, stop, state=state)["instructions"] == 1
    want = run_program(cfg, dump, state=state)
    words, cycles = run_words(cfg, fill, {}, stream_beats([], cfg.hbm_bytes_per_cycle),
                              len(want["out"]), restarts=[*stops, dump])
    _assert_same_words(words, want["out"])
    assert cycles == want["cycles"], (cycles, want["cycles"])


def test_random_programs_use_every_instruction():
    """Across the seeds, the bodies use every opcode of the ISA (the epilogue alone does not)."""
    cfg = load_config("dplena32")
    used = {i.op for seed in SEEDS for i in random_program(cfg, seed).instrs}
    assert used == set(Op)


def _step(cfg, fmt):
    rng = np.random.default_rng(5)
    batch, block_len, vocab = 2, cfg.block_len, 200
    logits = (rng.standard_normal((batch, block_len, vocab)) * 3).astype(np.float32)
    x = rng.integers(0, 50_000, (batch, block_len))
    x[rng.random((batch, block_len)) < 0.6] = 126336
    wl = Workload(batch, block_len, vocab, 64, (3, 2), 126336, fmt)
    return wl, logits, x


@pytest.mark.parametrize("mode", ["two_pass", "fused"])
@pytest.mark.parametrize("fmt", ["bf16", "mxfp8"])
def test_interpreter_runs_the_sampling_step(mode, fmt):
    """On the generator's program, the interpreter gives the golden sampling step's outputs
    and the cycle model's cycles."""
    cfg = dataclasses.replace(load_config("dplena32"), stable_max=mode)
    wl, logits, x = _step(cfg, fmt)
    program = generate(cfg, wl)
    # The prefetches' data, in program order, as the core's HBM stream carries it.
    data = step_prefetches(program, logits)
    assert len(hbm_beats(program, logits)) > 0
    got = run_program(cfg, program.words, program.int_image(np.asarray(x)), data)
    assert got["cycles"] == estimate(cfg, wl).cycles
    out = program.decode_outputs(np.asarray(got["out"], dtype=np.uint64))
    want = golden.sample_step_hw(golden.prepare_logits(logits, fmt), x, wl.mask_id, wl.k,
                                 cfg.vlen, stable_max=mode, v_chunk=wl.v_chunk,
                                 sum_partials=cfg.stages.sum_partials)
    for key in ("x", "x0", "transfer"):
        assert np.array_equal(out[key], want[key]), key
