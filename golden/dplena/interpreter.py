"""Instruction-level model of the d-PLENA sampling core: any program, bit for bit and cycle for
cycle.

:func:`run_program` executes a program of :mod:`memwall.golden.dplena.isa` words on the state the
core has after a reset and a host load (registers and SRAMs zero, the INT SRAM image written):
what each instruction does is the ISA table, with the golden models of the units
(:mod:`memwall.golden.common.fparith`, :mod:`memwall.golden.common.transcendental`, :func:`topk_mask
<memwall.golden.dplena.sampling.topk_mask>`, :func:`dequantize
<memwall.golden.dplena.mx.dequantize>`), and what it costs is :class:`SequencerTiming`, the cycle
model's table (:mod:`memwall.golden.dplena.model`). The result is what the core's output FIFO
receives and its cycle counter at HALT, so a test can compare a random program's run on the RTL with
it (``tests/dplena/test_sim_isa.py``), where the sampling-step tests only run the program the
generator writes.

A start keeps the state the last program left (registers, SRAMs; ``state``), as the core
does: its registers and memories are not cleared by ``start``. An undefined opcode stops the
program and changes nothing (the sequencer goes back to idle).

Prefetches complete at once here; the core streams them while the program runs on. A program
agrees with the core only if it waits (``H_WAIT``) before it touches rows a prefetch writes,
which is the discipline the generated programs keep and the random ones are built to.
"""

from __future__ import annotations

import math

import numpy as np

from memwall.families.dplena.config import DplenaConfig, sum_fold_cycles
from memwall.golden.common.formats import BF16, FP32
from memwall.golden.common.fparith import (
    bf16_key,
    fp32_to_bf16,
    fp_add,
    fp_mul,
    fp_sub,
    reduce_max_idx,
    reduce_sum,
)
from memwall.golden.common.transcendental import bf16_exp, bf16_recip
from memwall.golden.dplena.hbm import (
    DEFAULT_FORMAT,
    num_beats,
    prefetch_beats_bf16,
    prefetch_beats_mx,
)
from memwall.golden.dplena.isa import (
    FIELDS,
    NUM_FP,
    NUM_GP,
    PREFETCH_BF16,
    RED_FIRST,
    RED_LAST,
    Instr,
    Op,
    decode,
)
from memwall.golden.dplena.mx import dequantize
from memwall.golden.dplena.sampling import topk_mask

__all__ = ["SequencerTiming", "Prefetch", "stream_beats", "run_program"]

_MASK32 = (1 << 32) - 1
_BF16_ONE = 0x3F80
_ONE_CYCLE = {Op.NOP, Op.HALT, Op.ADDI, Op.ADD, Op.SUB, Op.BNE, Op.BEQ, Op.S_ST_INT, Op.S_ST_FP,
              Op.S_LI_F, Op.S_MOV_F, Op.S_MAX_IDX_F}
_SCALAR_FP = {Op.S_EXP_BF, Op.S_RECIP_BF, Op.S_CVT_BF}
_REDUCE = {Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX}


class SequencerTiming:
    """The sequencer's cycles per instruction (the table of :mod:`memwall.golden.dplena.model`),
    with the state they depend on: when the prefetch engine is free, the chunks of the running
    V_RED_SUM since its FIRST, and the HBM beats streamed so far (``beats``)."""

    def __init__(self, cfg: DplenaConfig):
        st = cfg.stages
        self.vlen = cfg.vlen
        self.beat_bytes = cfg.hbm_bytes_per_cycle
        self.mx_format = cfg.mx_format
        self.tree = st.tree_latency(int(math.log2(cfg.vlen)))
        self.elementwise = st.elementwise_latency
        self.add_fp32 = st.add_fp32
        self.scalar = {Op.S_LD_INT: 2, Op.S_ADD_F: st.arith_cycles(st.add_fp32),
                       Op.S_MUL_F: st.arith_cycles(st.mul_fp32),
                       Op.S_SUB_BF: st.arith_cycles(st.add_bf16),
                       **{op: 1 + st.scalar_fp_latency for op in _SCALAR_FP}}
        self.sum_chunks = 0
        self.dma_free = 1     # the start's FETCH cycle is cycle 0
        self.beats = 0

    def cost(self, ins: Instr, g1: int, g2: int, now: int, taken: bool = False) -> int:
        """Cycles of ``ins`` issued at cycle ``now``, with ``g1``/``g2`` its ``rs1``/``rs2``
        register values; ``taken``: a branch that is taken (its target is fetched)."""
        op, vlen = ins.op, self.vlen
        if op in _ONE_CYCLE or op in self.scalar:
            return self.scalar.get(op, 1) + int(taken)
        if op in (Op.H_PREFETCH_V, Op.H_WAIT):
            start = max(now, self.dma_free)
            if op == Op.H_PREFETCH_V:
                fmt = "bf16" if ins.imm & PREFETCH_BF16 else self.mx_format
                beats = num_beats(g1, fmt, self.beat_bytes) if g1 else 0
                self.beats += beats
                self.dma_free = start + (beats + 2 if g1 else 1)
            return start - now + 1
        if op in _REDUCE:
            rows = -(-g2 // vlen)
            if op == Op.V_RED_SUM:
                self.sum_chunks = rows if ins.imm & RED_FIRST else self.sum_chunks + rows
            if not ins.imm & RED_LAST:
                return rows + 2
            fold = sum_fold_cycles(self.sum_chunks, self.add_fp32) if op == Op.V_RED_SUM else 0
            return rows + 3 + self.tree + fold
        if op in (Op.V_SUB_VF, Op.V_EXP_V):
            return -(-g2 // vlen) + 2 + self.elementwise
        if op in (Op.S_MAP_V_FP, Op.V_CMP_EQ_INT, Op.H_STORE_V):
            return ins.imm + 3
        if op == Op.V_TOPK_MASK:
            return ins.imm + 5
        if op == Op.V_SELECT_INT:
            return 3 * ins.imm + 3
        if op == Op.H_STORE_INT:
            return 2 * ins.imm + 2
        raise ValueError(f"cycle model: no cost for {op.name}")


class Prefetch:
    """The logits one ``H_PREFETCH_V`` streams: BF16 bit patterns (``bits``), or the codes of
    MX format ``fmt`` (``elements``) with one ``scales`` byte per 32 of them."""

    def __init__(self, bits=None, elements=None, scales=None, fmt: str = DEFAULT_FORMAT):
        self.bits, self.elements, self.scales, self.fmt = bits, elements, scales, fmt

    def values(self) -> np.ndarray:
        """The BF16 bit patterns the dequantiser writes."""
        if self.bits is not None:
            return np.asarray(self.bits, dtype=np.uint16)
        return np.asarray(dequantize(self.elements, self.scales, self.fmt), dtype=np.uint16)

    def beats(self, beat_bytes: int) -> np.ndarray:
        """Its HBM beats (:mod:`memwall.golden.dplena.hbm`'s layout)."""
        if self.bits is not None:
            return prefetch_beats_bf16(np.asarray(self.bits, dtype=np.uint16), beat_bytes)
        return prefetch_beats_mx(self.elements, self.scales, beat_bytes, self.fmt)


def stream_beats(prefetches: list[Prefetch], beat_bytes: int) -> np.ndarray:
    """The HBM beat stream of ``prefetches``, in order."""
    beats = [p.beats(beat_bytes) for p in prefetches]
    return np.concatenate(beats) if beats else np.zeros((0, beat_bytes), np.uint8)


def _bf16(x: int) -> np.ndarray:
    return np.asarray([x & 0xFFFF], dtype=np.uint16)


def _hi(f: int) -> int:
    """The BF16 a 32-bit FP register holds (its upper half)."""
    return (f >> 16) & 0xFFFF


class _Core:
    """The architectural state of the core and one instruction's effect on it."""

    def __init__(self, cfg: DplenaConfig):
        self.cfg = cfg
        self.gp = [0] * NUM_GP
        self.fp = [0] * NUM_FP
        self.int_sram = [0] * cfg.int_sram_words
        self.fp_sram = [0] * cfg.fp_sram_words
        self.rows = np.zeros((cfg.vector_sram_rows, cfg.vlen), dtype=np.uint16)
        self.prefetches: list[Prefetch] = []
        self.out: list[int] = []
        # The reduction unit's running operand since the last FIRST (V_RED_* without LAST).
        self.reduce_elements: list[np.ndarray] = []

    # Addresses wrap at each memory's depth (the ports take the low address bits).
    def int_at(self, addr: int) -> int:
        return self.int_sram[addr % len(self.int_sram)]

    def vector(self, row: int, n: int) -> np.ndarray:
        """``n`` elements from row ``row`` on (``ceil(n / VLEN)`` rows)."""
        rows = -(-n // self.cfg.vlen)
        index = (row + np.arange(rows)) % len(self.rows)
        return self.rows[index].reshape(-1)[:n]

    def write_rows(self, row: int, values: np.ndarray) -> None:
        vlen = self.cfg.vlen
        for i in range(-(-len(values) // vlen)):
            self.rows[(row + i) % len(self.rows), :len(values[i * vlen:(i + 1) * vlen])] = \
                values[i * vlen:(i + 1) * vlen]

    def write_stage(self, row: int, stage: np.ndarray) -> None:
        """A row of the L-lane stage, +0 above lane L."""
        full = np.zeros(self.cfg.vlen, dtype=np.uint16)
        full[:len(stage)] = stage
        self.rows[row % len(self.rows)] = full

    def set_gp(self, index: int, value: int) -> None:
        if index:                              # g0 reads 0
            self.gp[index] = value & _MASK32

    def step(self, ins: Instr) -> int | None:
        """Execute ``ins``; returns a branch offset when it is a taken branch."""
        op, L = ins.op, self.cfg.block_len
        imm = ins.imm & _MASK32
        g, f = self.gp, self.fp
        g1, g2, g3, gd = g[ins.rs1], g[ins.rs2], g[ins.rs3], g[ins.rd]
        f1, f2, f3, fd = f[ins.rs1], f[ins.rs2], f[ins.rs3], f[ins.rd]
        if op in (Op.NOP, Op.H_WAIT, Op.HALT):
            pass
        elif op == Op.ADDI:
            self.set_gp(ins.rd, g1 + imm)
        elif op in (Op.ADD, Op.SUB):
            self.set_gp(ins.rd, g1 + g2 if op == Op.ADD else g1 - g2)
        elif op in (Op.BNE, Op.BEQ):
            if (g1 != g2) == (op == Op.BNE):
                return ins.imm
        elif op == Op.S_LD_INT:
            self.set_gp(ins.rd, self.int_at(g1 + imm))
        elif op == Op.S_ST_INT:
            self.int_sram[(g1 + imm) % len(self.int_sram)] = gd
        elif op == Op.S_ST_FP:
            self.fp_sram[(g1 + imm) % len(self.fp_sram)] = _hi(fd)
        elif op == Op.S_LI_F:
            f[ins.rd] = imm
        elif op == Op.S_MOV_F:
            f[ins.rd] = f1
        elif op in (Op.S_ADD_F, Op.S_MUL_F):
            a, b = np.asarray([f1], np.uint32), np.asarray([f2], np.uint32)
            f[ins.rd] = int((fp_add if op == Op.S_ADD_F else fp_mul)(a, b, FP32)[0])
        elif op == Op.S_SUB_BF:
            f[ins.rd] = int(fp_sub(_bf16(_hi(f1)), _bf16(_hi(f2)), BF16)[0]) << 16
        elif op == Op.S_EXP_BF:
            f[ins.rd] = int(bf16_exp(_bf16(_hi(f1)))[0]) << 16
        elif op == Op.S_RECIP_BF:
            f[ins.rd] = int(bf16_recip(_bf16(_hi(f1)))[0]) << 16
        elif op == Op.S_CVT_BF:
            f[ins.rd] = int(fp32_to_bf16(np.asarray([f1], np.uint32))[0]) << 16
        elif op == Op.S_MAX_IDX_F:
            if int(bf16_key(_bf16(_hi(f1)))[0]) > int(bf16_key(_bf16(_hi(fd)))[0]):
                f[ins.rd] = f1
                self.set_gp(ins.rs3, g2)
        elif op == Op.H_PREFETCH_V:
            if g1:
                values = self.prefetches.pop(0).values()
                if len(values) != g1:
                    raise ValueError(f"H_PREFETCH_V of {g1} elements, but its data has "
                                     f"{len(values)}")
                self.write_rows(gd, values)
        elif op in _REDUCE:
            self._reduce(ins, self.vector(g1, g2))
        elif op == Op.V_SUB_VF:
            rows = self.vector(g1, -(-g2 // self.cfg.vlen) * self.cfg.vlen)
            self.write_rows(gd, fp_sub(rows, np.full_like(rows, _hi(f3)), BF16))
        elif op == Op.V_EXP_V:
            self.write_rows(gd, bf16_exp(self.vector(g1, -(-g2 // self.cfg.vlen)
                                                     * self.cfg.vlen)))
        elif op == Op.S_MAP_V_FP:
            self.write_stage(gd, [self.fp_sram[(g1 + i) % len(self.fp_sram)] for i in range(imm)])
        elif op == Op.V_CMP_EQ_INT:
            self.write_stage(gd, [_BF16_ONE if self.int_at(g1 + i) == g2 else 0
                                  for i in range(imm)])
        elif op == Op.V_TOPK_MASK:
            conf = self.rows[g1 % len(self.rows), :imm][None, :]
            valid = self.rows[g2 % len(self.rows), :imm][None, :] != 0
            mask = topk_mask(conf, valid, [min(g3, self.cfg.k_max)])[0]
            self.write_stage(gd, np.where(mask, _BF16_ONE, 0))
        elif op == Op.V_SELECT_INT:
            flags = self.rows[g3 % len(self.rows), :L] != 0
            for i in range(imm):
                a, b = self.int_at(g1 + i), self.int_at(g2 + i)
                self.int_sram[(gd + i) % len(self.int_sram)] = a if flags[i] else b
        elif op == Op.H_STORE_INT:
            self.out += [self.int_at(g1 + i) for i in range(imm)]
        elif op == Op.H_STORE_V:
            self.out += [int(x) for x in self.rows[g1 % len(self.rows), :imm]]
        else:
            raise ValueError(f"{op.name}: the interpreter does not model it")
        return None

    def _reduce(self, ins: Instr, elements: np.ndarray) -> None:
        """V_RED_*: the unit accumulates from FIRST; LAST writes the result (a FIRST's rows
        must be whole, as the generator's are, for the chunks to line up)."""
        if ins.imm & RED_FIRST:
            self.reduce_elements = []
        self.reduce_elements.append(elements)
        if not ins.imm & RED_LAST:
            return
        z = np.concatenate(self.reduce_elements)
        if ins.op == Op.V_RED_SUM:
            self.fp[ins.rd] = int(reduce_sum(z, self.cfg.vlen, self.cfg.stages.sum_partials))
            return
        value, index = reduce_max_idx(z, self.cfg.vlen)
        self.fp[ins.rd] = int(value) << 16
        if ins.op == Op.V_RED_MAX_IDX:
            self.set_gp(ins.rs3, int(index))


_OPCODES = {int(op) for op in Op}


def _defined(word: int) -> bool:
    offset, width = FIELDS["opcode"]
    return (word >> offset) & ((1 << width) - 1) in _OPCODES


def run_program(cfg: DplenaConfig, words, int_image: dict[int, int] | None = None,
                prefetches: list[Prefetch] = (), max_instructions: int = 100_000, *,
                state: _Core | None = None) -> dict:
    """Run ``words`` (64-bit instruction words, from address 0) to its HALT, or to an
    undefined opcode (which stops it, changing nothing).

    ``int_image``: the INT SRAM words the host writes before the start; ``prefetches``: the
    data of each ``H_PREFETCH_V`` with a non-zero count, in the order they run; ``state``: a
    previous run's, for a restart (default: the state after a reset). Returns ``out`` (the
    words this run pushed to the output FIFO, in order), ``cycles`` (the core's cycle counter
    at HALT; None after an undefined opcode, whose timing is not modelled), ``instructions``
    (executed) and ``state``."""
    core = state or _Core(cfg)
    for addr, word in (int_image or {}).items():
        core.int_sram[addr] = int(word) & _MASK32
    core.prefetches += list(prefetches)
    first_out = len(core.out)
    timing = SequencerTiming(cfg)
    pc, now = 0, 1      # the start's FETCH cycle
    for executed in range(1, max_instructions + 1):
        word = int(words[pc % len(words)])
        if not _defined(word):       # EXECUTE sends the sequencer back to idle
            return {"out": core.out[first_out:], "cycles": None, "instructions": executed,
                    "beats": timing.beats, "state": core}
        ins = decode(word)
        g1, g2 = core.gp[ins.rs1], core.gp[ins.rs2]
        jump = core.step(ins)
        now += timing.cost(ins, g1, g2, now, taken=jump is not None)
        if ins.op == Op.HALT:
            return {"out": core.out[first_out:], "cycles": now, "instructions": executed,
                    "beats": timing.beats, "state": core}
        pc = (pc + (1 if jump is None else jump)) % cfg.imem_words
    raise ValueError(f"no HALT within {max_instructions} instructions")
