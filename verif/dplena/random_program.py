"""Random d-PLENA programs: every instruction of the ISA, with random registers and operands,
for the instruction-level test of the core (``tests/dplena/test_sim_isa.py``).

A program is a random body and a fixed epilogue that makes the body's effects visible on the
output FIFO: reductions of the rows the body and the background prefetches may write, every GP
register, the INT SRAM data areas, the FP SRAM, every FP register (its BF16 half, then its
FP32 -> BF16 rounding, which depends on the low half, rounded twice so that what the FP unit's
own path writes into the low half shows) and lanes ``0..L-1`` of every body row. The body is
built from snippets, each setting its address and count registers with ``ADDI`` (random
registers, so the register file's every port is used) before its instruction, so addresses stay
in their areas whatever the random arithmetic between snippets left in the registers.

The body keeps the rules the interpreter (:mod:`memwall.golden.dplena.interpreter`) and the
ISA's documented behaviour need: a prefetch is waited for (``H_WAIT``) before anything touches
its rows, at once or, for a background prefetch into the other half of the Vector SRAM, after a
few snippets that stay in the body's half (so the prefetch engine and the program overlap
without a write collision, and the cycles stay exact); vector counts are
``>= 1``; an elementwise instruction writes in place or to rows it does not read; a FIRST-only
reduction covers whole rows; ``V_SELECT_INT`` writes an area it does not read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memwall.families.dplena.config import DplenaConfig
from memwall.golden.common.formats import fp32_bits
from memwall.golden.dplena.interpreter import Prefetch, stream_beats
from memwall.golden.dplena.isa import PREFETCH_BF16, RED_FIRST, RED_LAST, Instr, Op, encode
from memwall.golden.dplena.mxfp8 import quantize
from memwall.verif.dplena.stimulus import SPECIALS, bf16_vector

__all__ = ["RandomProgram", "random_program", "state_dump", "register_fill", "lane_readback",
           "readback_values"]

#: Rows the body uses (its vector operands and results); the epilogue's staging row is the
#: last row of the Vector SRAM.
BODY_ROWS = 16
#: Rows from the middle of the Vector SRAM on that background prefetches write.
BACKGROUND_ROWS = 8
#: INT SRAM: [0, 64) data the host writes and the body reads and writes, [64, 128) where
#: V_SELECT_INT writes, and the GP register dump at the top.
INT_DATA, INT_SELECT, INT_AREAS = 64, 64, 128
_KINDS = ("random", "wide", "ties", "specials", "nan", "denormal", "zeros", "all_negative")


@dataclass
class RandomProgram:
    """A program (``instrs``), the INT SRAM words the host writes first, and the data of each
    prefetch (``prefetches``; ``beats``: their HBM beat stream, in order)."""

    instrs: list[Instr]
    int_image: dict[int, int]
    prefetches: list[Prefetch]
    beats: np.ndarray

    @property
    def words(self) -> list[int]:
        return [encode(i) for i in self.instrs]


class _Builder:
    def __init__(self, cfg: DplenaConfig, rng: np.random.Generator):
        self.cfg, self.rng = cfg, rng
        self.L = cfg.block_len
        self.instrs: list[Instr] = []
        self.prefetches: list[Prefetch] = []
        self.half = cfg.vector_sram_rows // 2     # the first row of the other half
        self.waits_after = 0                      # snippets left before a background H_WAIT

    def emit(self, op: Op, **fields) -> None:
        self.instrs.append(Instr(op, **fields))

    def regs(self, n: int) -> list[int]:
        """``n`` distinct registers g1..g15."""
        return [int(r) for r in self.rng.choice(np.arange(1, 16), n, replace=False)]

    def load(self, values: list[int]) -> list[int]:
        """Registers holding ``values`` (ADDI from g0)."""
        regs = self.regs(len(values))
        for reg, value in zip(regs, values, strict=True):
            self.emit(Op.ADDI, rd=reg, imm=int(value))
        return regs

    def r(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def any_reg(self) -> int:
        return self.r(0, 15)

    def fp32_pattern(self) -> int:
        kind = self.r(0, 3)
        if kind == 0:       # a BF16 value, with random low bits
            return (int(bf16_vector(self.rng, 1, _KINDS[self.r(0, 5)])[0]) << 16) \
                | self.r(0, 0xFFFF)
        if kind == 1:
            return int(self.rng.choice(SPECIALS)) << 16 | self.r(0, 1) * self.r(0, 0xFFFF)
        if kind == 2:
            return int(fp32_bits(np.float32(self.rng.normal(0, 8)))) & 0xFFFFFFFF
        return self.r(0, 0xFFFFFFFF)

    def row_span(self, rows: int) -> int:
        return self.r(0, BODY_ROWS - rows)

    def stage_fp_sram(self, words: int) -> None:
        """FP SRAM words 0..words-1 to the FIFO, L at a time through the staging row (in g2;
        g1 and g3 are overwritten)."""
        L = self.L
        words = -(-words // L) * L
        self.emit(Op.ADDI, rd=1, imm=0)
        self.emit(Op.ADDI, rd=3, imm=words)
        self.emit(Op.S_MAP_V_FP, rd=2, rs1=1, imm=L)
        self.emit(Op.H_STORE_V, rs1=2, imm=L)
        self.emit(Op.ADDI, rd=1, rs1=1, imm=L)
        self.emit(Op.BNE, rs1=1, rs2=3, imm=-3)

    # -- snippets ---------------------------------------------------------------------------------
    def alu(self) -> None:
        op = (Op.ADDI, Op.ADD, Op.SUB)[self.r(0, 2)]
        if op == Op.ADDI:
            self.emit(op, rd=self.any_reg(), rs1=self.any_reg(),
                      imm=self.r(-(1 << 31), (1 << 31) - 1))
        else:
            self.emit(op, rd=self.any_reg(), rs1=self.any_reg(), rs2=self.any_reg())

    def branch(self) -> None:
        op = (Op.BEQ, Op.BNE)[self.r(0, 1)]
        a = self.any_reg()
        b = a if self.r(0, 2) == 0 else self.any_reg()
        skip = self.r(0, 2)                # 0: branch to the next instruction
        self.emit(op, rs1=a, rs2=b, imm=skip + 1)
        for _ in range(skip):
            self.alu()

    def loop(self) -> None:
        counter = self.load([self.r(1, 3)])[0]
        rd = self.any_reg()
        while rd == counter:
            rd = self.any_reg()
        self.emit(Op.ADD, rd=rd, rs1=rd, rs2=counter)
        self.emit(Op.ADDI, rd=counter, rs1=counter, imm=-1)
        self.emit(Op.BNE, rs1=counter, rs2=0, imm=-2)

    def int_memory(self) -> None:
        base = self.load([self.r(0, INT_DATA - 8)])[0]
        if self.r(0, 1):
            self.emit(Op.S_LD_INT, rd=self.any_reg(), rs1=base, imm=self.r(0, 7))
        else:
            self.emit(Op.S_ST_INT, rd=self.any_reg(), rs1=base, imm=self.r(0, 7))

    def fp_store(self) -> None:
        base = self.load([self.r(0, self.cfg.fp_sram_words - 8)])[0]
        self.emit(Op.S_ST_FP, rd=self.r(0, 15), rs1=base, imm=self.r(0, 7))

    def fp_load_imm(self) -> None:
        self.emit(Op.S_LI_F, rd=self.r(0, 15), imm=self.fp32_pattern())

    def fp_op(self) -> None:
        op = (Op.S_MOV_F, Op.S_ADD_F, Op.S_MUL_F, Op.S_SUB_BF, Op.S_EXP_BF, Op.S_RECIP_BF,
              Op.S_CVT_BF, Op.S_MAX_IDX_F)[self.r(0, 7)]
        self.emit(op, rd=self.r(0, 15), rs1=self.r(0, 15), rs2=self.r(0, 15), rs3=self.any_reg())

    def prefetch(self, rows: int | None = None, bf16: bool | None = None,
                 background: bool = False) -> None:
        """A prefetch into the body's rows, waited for; or (``background``) into the other
        half of the Vector SRAM, waited for only after the snippets that follow it, which
        write the body's half meanwhile (no collision, so no stall: the cycles stay exact)."""
        vlen, rng = self.cfg.vlen, self.rng
        rows = self.r(0, 3) if rows is None else rows
        bf16 = bool(self.r(0, 1)) if bf16 is None else bf16
        count = rows * vlen
        first = self.half + self.r(0, BACKGROUND_ROWS - max(rows, 1)) if background \
            else self.row_span(max(rows, 1))
        row, n = self.load([first, count])
        self.emit(Op.H_PREFETCH_V, rd=row, rs1=n, imm=PREFETCH_BF16 if bf16 else 0)
        if background:
            self.waits_after = self.r(0, 2)
        else:
            self.emit(Op.H_WAIT)
        if not count:
            return
        if bf16:
            bits = bf16_vector(rng, count, _KINDS[self.r(0, len(_KINDS) - 1)])
            self.prefetches.append(Prefetch(bits=bits))
        else:
            values = rng.normal(0, 4, count) * 2.0 ** rng.integers(-12, 12, count // 32).repeat(32)
            elements, scales = quantize(values.astype(np.float32))
            self.prefetches.append(Prefetch(elements=elements, scales=scales))

    def background_prefetch(self) -> None:
        """A long background prefetch, then at once a write to the body's half (elementwise,
        or a row of the stage), so the engine's writes and the program's share the write port
        in the same cycles; the ``H_WAIT`` comes at once or after up to two more snippets."""
        if self.waits_after:
            return
        self.prefetch(rows=self.r(BACKGROUND_ROWS // 2, BACKGROUND_ROWS), background=True)
        (self.elementwise, self.l_element)[self.r(0, 1)]()
        if not self.waits_after:
            self.emit(Op.H_WAIT)

    def reduce(self) -> None:
        op = (Op.V_RED_MAX, Op.V_RED_SUM, Op.V_RED_MAX_IDX)[self.r(0, 2)]
        vlen = self.cfg.vlen
        if self.r(0, 2) == 0:           # FIRST over whole rows, then LAST
            first_rows = self.r(1, 2)
            row, n = self.load([self.row_span(first_rows), first_rows * vlen])
            self.emit(op, rd=self.r(0, 15), rs1=row, rs2=n, rs3=self.any_reg(), imm=RED_FIRST)
            flags = RED_LAST
        else:
            flags = RED_FIRST | RED_LAST
        count = self.r(1, 3 * vlen)
        row, n = self.load([self.row_span(-(-count // vlen)), count])
        self.emit(op, rd=self.r(0, 15), rs1=row, rs2=n, rs3=self.any_reg(), imm=flags)

    def elementwise(self) -> None:
        vlen = self.cfg.vlen
        count = self.r(1, 2 * vlen)
        rows = -(-count // vlen)
        src = self.row_span(rows)
        dst = src
        if self.r(0, 1):                # rows it does not read
            while abs(dst - src) < rows:
                dst = self.row_span(rows)
        s, d, n = self.load([src, dst, count])
        if self.r(0, 1):
            self.emit(Op.V_SUB_VF, rd=d, rs1=s, rs2=n, rs3=self.r(0, 15))
        else:
            self.emit(Op.V_EXP_V, rd=d, rs1=s, rs2=n)

    def l_element(self) -> None:
        L, kind = self.L, self.r(0, 3)
        count = self.r(1, L)
        if kind == 0:
            d, a = self.load([self.row_span(1), self.r(0, self.cfg.fp_sram_words - L)])
            self.emit(Op.S_MAP_V_FP, rd=d, rs1=a, imm=count)
        elif kind == 1:
            d, a, v = self.load([self.row_span(1), self.r(0, INT_DATA - L), self.r(0, 3)])
            self.emit(Op.V_CMP_EQ_INT, rd=d, rs1=a, rs2=v, imm=count)
        elif kind == 2:
            k = (self.r(0, L + 2), self.r(1 << 16, (1 << 31) - 1))[self.r(0, 4) == 0]
            d, c, v, kr = self.load([self.row_span(1), self.row_span(1), self.row_span(1), k])
            self.emit(Op.V_TOPK_MASK, rd=d, rs1=c, rs2=v, rs3=kr, imm=count)
        else:
            d, a, b, m = self.load([INT_DATA + self.r(0, INT_SELECT - L),
                                    self.r(0, INT_DATA - L), self.r(0, INT_DATA - L),
                                    self.row_span(1)])
            self.emit(Op.V_SELECT_INT, rd=d, rs1=a, rs2=b, rs3=m, imm=count)

    def host_store(self) -> None:
        if self.r(0, 1):
            a = self.load([self.r(0, INT_AREAS - 8)])[0]
            self.emit(Op.H_STORE_INT, rs1=a, imm=self.r(1, 8))
        else:
            row = self.load([self.row_span(1)])[0]
            self.emit(Op.H_STORE_V, rs1=row, imm=self.r(1, self.L))

    def idle(self) -> None:
        self.emit((Op.NOP, Op.H_WAIT)[self.r(0, 1)])

    # -- the epilogue -----------------------------------------------------------------------------
    def epilogue(self) -> None:
        """Make the body's state visible; g1..g3 are its working registers (after the GP dump)."""
        cfg, L, vlen = self.cfg, self.L, self.cfg.vlen
        stage_row, dump = cfg.vector_sram_rows - 1, cfg.int_sram_words - 24
        for reg in range(1, 16):
            self.emit(Op.S_ST_INT, rd=reg, imm=dump + reg)
        self.emit(Op.ADDI, rd=2, imm=stage_row)
        self.stage_fp_sram(cfg.fp_sram_words)
        # Every FP register: its BF16 half, then its FP32 -> BF16 rounding, twice (the second
        # rounds what the FP unit's own path wrote into the low half: +0 unless that path is
        # broken, as a BF16 result is exact).
        for reg in range(16):
            self.emit(Op.S_ST_FP, rd=reg, imm=reg)
        for reg in range(16):
            self.emit(Op.S_CVT_BF, rd=reg, rs1=reg)
            self.emit(Op.S_CVT_BF, rd=reg, rs1=reg)
            self.emit(Op.S_ST_FP, rd=reg, imm=16 + reg)
        self.stage_fp_sram(32)
        # Every lane of the body's rows and of the background prefetches' rows, four rows at a
        # time: the sum (its BF16 half and its rounding), the maximum and its index (g4, ..).
        groups = [4 * g for g in range(BODY_ROWS // 4)] \
            + [self.half + 4 * g for g in range(BACKGROUND_ROWS // 4)]
        self.emit(Op.ADDI, rd=1, imm=4 * vlen)
        for n, row in enumerate(groups):
            self.emit(Op.ADDI, rd=2, imm=row)
            self.emit(Op.V_RED_SUM, rd=0, rs1=2, rs2=1, imm=RED_FIRST | RED_LAST)
            self.emit(Op.V_RED_MAX_IDX, rd=1, rs1=2, rs2=1, rs3=4 + n, imm=RED_FIRST | RED_LAST)
            self.emit(Op.S_ST_FP, rd=0, imm=3 * n)
            self.emit(Op.S_ST_FP, rd=1, imm=3 * n + 1)
            self.emit(Op.S_CVT_BF, rd=0, rs1=0)
            self.emit(Op.S_ST_FP, rd=0, imm=3 * n + 2)
        self.emit(Op.ADDI, rd=2, imm=stage_row)
        self.stage_fp_sram(3 * len(groups))
        for n in range(len(groups)):
            self.emit(Op.S_ST_INT, rd=4 + n, imm=dump + 16 + n)
        self.emit(Op.ADDI, rd=1, imm=dump + 1)
        self.emit(Op.H_STORE_INT, rs1=1, imm=15 + len(groups))
        self.emit(Op.ADDI, rd=1, imm=0)
        self.emit(Op.H_STORE_INT, rs1=1, imm=INT_AREAS)
        # Lanes 0..L-1 of every body row.
        self.emit(Op.ADDI, rd=3, imm=BODY_ROWS)
        self.emit(Op.H_STORE_V, rs1=1, imm=L)
        self.emit(Op.ADDI, rd=1, rs1=1, imm=1)
        self.emit(Op.BNE, rs1=1, rs2=3, imm=-2)
        self.emit(Op.HALT)


_SNIPPETS = (("alu", 3), ("branch", 1.5), ("loop", 0.5), ("int_memory", 1.5),
             ("fp_store", 1.5), ("fp_load_imm", 2), ("fp_op", 4), ("prefetch", 1),
             ("background_prefetch", 2),
             ("reduce", 2), ("elementwise", 1.5), ("l_element", 3), ("host_store", 1),
             ("idle", 0.3))


def random_program(cfg: DplenaConfig, seed: int) -> RandomProgram:
    """A random program for ``cfg``'s core that fills its instruction memory."""
    if cfg.int_sram_words < INT_AREAS + 20 or cfg.vector_sram_rows <= BODY_ROWS \
            or cfg.fp_sram_words < 32 or cfg.block_len > 16:
        raise ValueError("the random programs need INT SRAM >= 148 words, more than "
                         f"{BODY_ROWS} Vector SRAM rows, FP SRAM >= 32 words and L <= 16")
    rng = np.random.default_rng(seed)
    b = _Builder(cfg, rng)
    # Data in the body's rows first: one prefetch of each format.
    b.prefetch(rows=3, bf16=True)
    b.prefetch(rows=3, bf16=False)
    names = [name for name, _ in _SNIPPETS]
    weights = np.array([w for _, w in _SNIPPETS], dtype=float)
    epilogue = state_dump(cfg)
    room = cfg.imem_words - len(epilogue)
    while True:
        mark = (len(b.instrs), len(b.prefetches))
        waiting = b.waits_after     # a background prefetch runs
        getattr(b, names[rng.choice(len(names), p=weights / weights.sum())])()
        if waiting:
            b.waits_after -= 1
            if not b.waits_after:
                b.emit(Op.H_WAIT)
        if len(b.instrs) > room - 1:     # room for a background prefetch's H_WAIT
            del b.instrs[mark[0]:], b.prefetches[mark[1]:]
            b.emit(Op.H_WAIT)
            break
    # INT SRAM data: a few small values (so V_CMP_EQ_INT matches) and random words.
    image = {a: int(rng.integers(0, 4)) if rng.random() < 0.5 else int(rng.integers(0, 1 << 32))
             for a in range(INT_DATA)}
    return RandomProgram(b.instrs + epilogue, image, b.prefetches,
                         stream_beats(b.prefetches, cfg.hbm_bytes_per_cycle))


def state_dump(cfg: DplenaConfig) -> list[Instr]:
    """The epilogue alone: a program that puts the state the last one left on the FIFO."""
    b = _Builder(cfg, np.random.default_rng(0))
    b.epilogue()
    return b.instrs


def register_fill(cfg: DplenaConfig, seed: int) -> list[Instr]:
    """A program that sets every GP and FP register to a random value (then HALT)."""
    b = _Builder(cfg, np.random.default_rng(seed))
    for reg in range(1, 16):
        b.emit(Op.ADDI, rd=reg, imm=b.r(1, 0x7FFFFFFF))
    for reg in range(16):
        b.emit(Op.S_LI_F, rd=reg, imm=b.fp32_pattern())
    b.emit(Op.HALT)
    return b.instrs


#: Elements ``lane_readback``'s prefetch streams before its rows: bit 15 of its count is set.
READBACK_LEAD = 1 << 15


def lane_readback(cfg: DplenaConfig, seed: int) -> RandomProgram:
    """Every lane of every Vector SRAM row read back bit for bit. One BF16 prefetch fills each
    row with +0 but lane ``row % VLEN``: a random finite normal value in the rows of even
    ``row // VLEN``, the complement of its 16 bits (finite and normal too) in the others, so
    each bit of each lane is read as 0 and as 1. Each row's ``V_RED_SUM`` is that value exactly
    (x + 0 = x); the sums go to the FP SRAM and out through the FIFO, a batch of FP SRAM words
    at a time, the batch holding the staging row first (staging overwrites it). Before the
    rows the prefetch streams :data:`READBACK_LEAD` random elements (the rows wrap), so that a
    count past 2^15 runs too (:func:`readback_values`: the words it must output)."""
    rows, vlen, batch = cfg.vector_sram_rows, cfg.vlen, cfg.fp_sram_words
    if rows % batch or batch % cfg.block_len or cfg.block_len > cfg.vlen:
        raise ValueError("lane_readback needs FP SRAM words dividing the Vector SRAM rows and "
                         "a multiple of L")
    rng = np.random.default_rng(seed)
    b = _Builder(cfg, rng)
    value = ((rng.integers(0, 2, vlen) << 15) | (rng.integers(1, 255, vlen) << 7)
             | rng.integers(0, 128, vlen)).astype(np.uint16)
    lanes = np.zeros((rows, vlen), dtype=np.uint16)
    for row in range(rows):
        lane = row % vlen
        lanes[row, lane] = value[lane] ^ (0xFFFF if row // vlen % 2 else 0)
    lead = bf16_vector(rng, READBACK_LEAD, "random")
    b.prefetches.append(Prefetch(bits=np.concatenate([lead, lanes.reshape(-1)])))
    b.emit(Op.ADDI, rd=1, imm=0)
    b.emit(Op.ADDI, rd=2, imm=READBACK_LEAD + rows * vlen)
    b.emit(Op.H_PREFETCH_V, rd=1, rs1=2, imm=PREFETCH_BF16)
    b.emit(Op.H_WAIT)
    b.emit(Op.ADDI, rd=5, imm=vlen)
    for first in range(rows - batch, -1, -batch):
        b.emit(Op.ADDI, rd=1, imm=first)
        b.emit(Op.ADDI, rd=3, imm=first + batch)
        b.emit(Op.ADDI, rd=4, imm=0)
        b.emit(Op.V_RED_SUM, rd=0, rs1=1, rs2=5, imm=RED_FIRST | RED_LAST)
        b.emit(Op.S_ST_FP, rd=0, rs1=4, imm=0)
        b.emit(Op.ADDI, rd=1, rs1=1, imm=1)
        b.emit(Op.ADDI, rd=4, rs1=4, imm=1)
        b.emit(Op.BNE, rs1=1, rs2=3, imm=-4)
        b.emit(Op.ADDI, rd=2, imm=rows - 1)
        b.stage_fp_sram(batch)
    b.emit(Op.HALT)
    return RandomProgram(b.instrs, {}, b.prefetches,
                         stream_beats(b.prefetches, cfg.hbm_bytes_per_cycle))


def readback_values(program: RandomProgram, cfg: DplenaConfig) -> list[int]:
    """The words ``lane_readback``'s program must put on the FIFO: each row's one value, in
    its batches' order."""
    rows, vlen, batch = cfg.vector_sram_rows, cfg.vlen, cfg.fp_sram_words
    lanes = program.prefetches[0].bits[READBACK_LEAD:].reshape(rows, vlen)
    return [int(lanes[row, row % vlen])
            for first in range(rows - batch, -1, -batch) for row in range(first, first + batch)]
