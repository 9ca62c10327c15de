"""Cycle model of the d-PLENA sampling core: the generated program, timed instruction by
instruction.

The model runs the same program image the RTL runs (:func:`memwall.golden.dplena.program.generate`):
it executes the integer/branch instructions to follow the control flow (no FP value ever steers
it) and charges each instruction the sequencer's cycles, with the prefetch engine running beside
it. Costs (:class:`~memwall.golden.dplena.interpreter.SequencerTiming`, which the
instruction-level model of any program shares), from
:class:`memwall.hdl.dplena.sequencer.Sequencer` (``n`` = rows of a vector
operand, ``e`` = elements of an L-element operand, ``lv`` = log2 VLEN reduction-tree levels):

=====================================  ==================================================
scalar ALU / FP / branch / stores       1
S_ADD_F, S_MUL_F, S_SUB_BF              1; the block's stages + 3 when pipelined
taken BNE / BEQ                         2 (the target is fetched into the instruction register)
S_LD_INT                                2
S_EXP_BF, S_RECIP_BF, S_CVT_BF          1 + the scalar FP unit's latency
V_RED_* with LAST / without             n + 3 + the tree's latency (+ fold) / n + 2
V_SUB_VF, V_EXP_V                       n + 2 + the elementwise latency
S_MAP_V_FP, V_CMP_EQ_INT, H_STORE_V     e + 3
V_TOPK_MASK / V_SELECT_INT              e + 5 / 3e + 3
H_STORE_INT                             2e + 2
H_PREFETCH_V, H_WAIT                    1, once the prefetch engine is free
=====================================  ==================================================

Latencies come from :class:`memwall.families.dplena.config.FpStages` (``cfg.stages``); a V_RED_SUM
with LAST adds the fold of the accumulator's partial sums over the chunks since its FIRST
(:func:`memwall.families.dplena.config.sum_fold_cycles`).

A prefetch of ``c`` logits keeps the engine busy ``beats(c) + 2`` cycles after the cycle it is
issued in (``beats`` from :func:`memwall.golden.dplena.hbm.num_beats`: one beat a cycle from an HBM
port that never stalls). Not modelled: Vector SRAM half collisions between a prefetch and the
phase-3 row writes (a cycle each, rare), and a host that stalls the HBM port or the FIFO.

``bound_cycles = max(HBM bytes / hbm_bytes_per_cycle, elements / VLEN)`` per step: the port
time of the logits (MX: ``b`` bits per element plus one scale byte per 32) or one vector pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memwall.families.dplena.config import DplenaConfig
from memwall.golden.dplena.hbm import canonical_format
from memwall.golden.dplena.interpreter import SequencerTiming
from memwall.golden.dplena.isa import Op
from memwall.golden.dplena.mx import mx_format
from memwall.golden.dplena.program import Program, Workload, WorkloadError, generate

__all__ = ["CycleEstimate", "estimate", "default_v_chunk", "bound_cycles", "hbm_bytes"]

_CONTROL = {Op.NOP, Op.HALT, Op.ADDI, Op.ADD, Op.SUB, Op.BNE, Op.BEQ}
_VECTOR = {Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX, Op.V_SUB_VF, Op.V_EXP_V}
_MEMORY = {Op.H_PREFETCH_V, Op.H_WAIT, Op.H_STORE_INT, Op.H_STORE_V}


def _category(op: Op) -> str:
    """Where the breakdown counts an instruction's cycles."""
    if op in _CONTROL:
        return "control"
    return "vector" if op in _VECTOR else "memory" if op in _MEMORY else "scalar"


@dataclass(frozen=True)
class CycleEstimate:
    cycles: int
    bound_cycles: float
    hbm_bytes: int
    streamed_bytes: int
    breakdown: dict
    v_chunk: int
    instructions: int

    def as_dict(self) -> dict:
        return {"cycles": self.cycles, "bound_cycles": self.bound_cycles,
                "ratio_to_bound": self.cycles / self.bound_cycles, "hbm_bytes": self.hbm_bytes,
                "streamed_bytes": self.streamed_bytes,
                "v_chunk": self.v_chunk, "instructions_executed": self.instructions,
                "breakdown": self.breakdown}


def hbm_bytes(wl: Workload) -> int:
    """Bytes of one step's logits on the HBM port: BF16 two a logit; MX the packed elements
    (``b`` bits each, rounded up to a byte per row) plus one scale byte per 32, without the
    layout's padding to whole beats (:mod:`memwall.golden.dplena.hbm`)."""
    rows = wl.batch * wl.block_len
    fmt = canonical_format(wl.logits_format)
    if fmt == "bf16":
        return 2 * rows * wl.vocab
    return rows * (math.ceil(wl.vocab * mx_format(fmt).bits / 8) + math.ceil(wl.vocab / 32))


def bound_cycles(cfg: DplenaConfig, wl: Workload) -> float:
    """max(port time of the logits, one VLEN-wide pass over them) for one step."""
    elements = wl.batch * wl.block_len * wl.vocab
    return max(hbm_bytes(wl) / cfg.hbm_bytes_per_cycle, elements / cfg.vlen)


def default_v_chunk(cfg: DplenaConfig, vocab: int) -> int:
    """The chunk the model and ``memwall run`` use when none is given.

    The largest chunk whose two buffers fit the Vector SRAM, then evened out so the chunks of
    a row are about equal (a short last chunk leaves the port idle while the long one before
    it computes), aligned to VLEN and to MX scale groups (32 x port width) where possible.
    """
    half = cfg.vector_sram_rows // 2
    max_chunk = (half - 3) * cfg.vlen
    if max_chunk < cfg.vlen:
        raise WorkloadError(f"{cfg.name}: the Vector SRAM ({cfg.vector_sram_kib} KiB) cannot "
                            f"hold two chunk buffers and three L-rows")
    if vocab <= max_chunk:
        return vocab
    group = 32 * cfg.hbm_bytes_per_cycle
    align = math.lcm(cfg.vlen, group) if math.lcm(cfg.vlen, group) <= max_chunk else cfg.vlen
    max_chunk -= max_chunk % align
    chunks = math.ceil(vocab / max_chunk)
    while True:
        v_chunk = math.ceil(math.ceil(vocab / chunks) / align) * align
        if v_chunk <= max_chunk:
            return v_chunk
        chunks += 1


def estimate(cfg: DplenaConfig, wl: Workload, steps: int = 1,
             program: Program | None = None) -> CycleEstimate:
    """Cycles of ``steps`` sampling steps of ``wl`` (each one run of the program)."""
    program = program or generate(cfg, wl)
    instrs = program.instrs
    timing = SequencerTiming(cfg)
    gp = [0] * 16
    # The start's FETCH cycle (the first instruction into the instruction register).
    pc, now, executed = 0, 1, 0
    breakdown = {"vector": 0, "memory": 0, "scalar": 0, "control": 1}
    while True:
        ins = instrs[pc]
        op = ins.op
        g1, g2 = gp[ins.rs1], gp[ins.rs2]
        taken = op in (Op.BNE, Op.BEQ) and (g1 != g2) == (op == Op.BNE)
        cost = timing.cost(ins, g1, g2, now, taken)
        next_pc = pc + ins.imm if taken else pc + 1
        if op == Op.ADDI:
            gp[ins.rd] = g1 + ins.imm
        elif op == Op.ADD:
            gp[ins.rd] = g1 + g2
        elif op == Op.SUB:
            gp[ins.rd] = g1 - g2
        elif op == Op.S_LD_INT:
            gp[ins.rd] = 0   # loads k, which never steers control flow
        gp[0] = 0
        breakdown[_category(op)] += cost
        now += cost
        executed += 1
        if op == Op.HALT:
            break
        pc = next_pc
    beats_total = timing.beats
    return CycleEstimate(cycles=now * steps, bound_cycles=bound_cycles(cfg, wl) * steps,
                         hbm_bytes=hbm_bytes(wl) * steps,
                         streamed_bytes=beats_total * cfg.hbm_bytes_per_cycle * steps,
                         breakdown={k: v * steps for k, v in breakdown.items()},
                         v_chunk=wl.v_chunk, instructions=executed * steps)
