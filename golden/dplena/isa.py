"""The d-PLENA sampling core's instruction set: encoding and semantics, in one place.

The sequencer (:mod:`memwall.hdl.dplena.sequencer`) decodes these words (:data:`INSTR_LAYOUT`);
the program generator (:mod:`memwall.golden.dplena.program`) and the cycle model assemble them.
The six custom instructions of the paper's Table I are marked (*); the others are the
PLENA-style base instructions Algorithm 2 needs.

Word (64 bits, LSB first)::

    [5:0]   opcode      [9:6]   rd      [13:10] rs1     [17:14] rs2     [21:18] rs3
    [31:22] reserved (0)                [63:32] imm (two's complement)

Registers: 16 GP registers ``g0..g15`` (32-bit, ``g0`` reads 0) and 16 FP registers
``f0..f15`` (32-bit FP32 patterns; a BF16 value lives in the upper half, its FP32 widening, so
BF16 operands are read from bits ``[31:16]``). Addresses are Vector SRAM *rows* (VLEN BF16
lanes), FP SRAM words (BF16) and INT SRAM words (int32). An element count ``n`` of a vector
instruction covers ``ceil(n / VLEN)`` consecutive rows, the last one partly (``n >= 1``).

==================  ====================  ========================================================
instruction         operands              semantics
==================  ====================  ========================================================
NOP
HALT                                      stop; ``busy`` falls, the cycle counter holds
ADDI                gd, gs1, imm          ``gd = gs1 + imm``
ADD / SUB           gd, gs1, gs2          ``gd = gs1 +/- gs2``
BNE / BEQ           gs1, gs2, imm         if ``gs1 !=/== gs2``: ``pc += imm`` (else ``pc += 1``)
S_LD_INT            gd, gs1, imm          ``gd = INT[gs1 + imm]``
S_ST_INT (*)        gs(rd), gs1, imm      ``INT[gs1 + imm] = gs``
S_ST_FP (*)         fs(rd), gs1, imm      ``FP[gs1 + imm] = fs[31:16]`` (BF16)
S_LI_F              fd, imm               ``fd = imm`` (raw 32 bits)
S_MOV_F             fd, fs1               ``fd = fs1`` (bits)
S_ADD_F / S_MUL_F   fd, fs1, fs2          FP32 add / multiply, RNE
S_SUB_BF            fd, fs1, fs2          BF16 ``fs1 - fs2``, RNE, widened
S_EXP_BF            fd, fs1               BF16 ``e^fs1`` (the FP unit's exp), widened
S_RECIP_BF          fd, fs1               BF16 ``1/fs1`` (the FP unit's reciprocal), widened
S_CVT_BF            fd, fs1               FP32 -> BF16 RNE, widened
S_MAX_IDX_F         fd, fs1, gs2, gd(rs3) if ``key(fs1) > key(fd)`` (BF16 order, strict):
                                          ``fd = fs1``, ``gd = gs2`` (earlier chunk wins ties)
H_PREFETCH_V        gd(row), gs1(n), imm  stream ``n`` logits from the HBM port through the
                                          dequantiser into rows ``gd..``; ``imm`` bit 0: 1 = BF16
                                          beats, 0 = the MX format the dequantiser is built
                                          for (the config's ``logits_format``). Asynchronous:
                                          waits only while an earlier prefetch is still
                                          running. ``n = 0``: nothing.
H_WAIT                                    wait until no prefetch is running
H_STORE_INT         gs1, imm              push ``INT[gs1 + i]``, ``i < imm``, to the output FIFO
H_STORE_V           gs1(row), imm         push lanes ``0..imm-1`` of row ``gs1`` (BF16,
                                          zero-extended) to the output FIFO (``imm <= L``)
V_RED_MAX           fd, gs1(row), gs2(n)  reduction of ``n`` elements; ``imm`` bit 0 FIRST
V_RED_SUM           fd, gs1(row), gs2(n)  (restart the unit's accumulation), bit 1 LAST (write
V_RED_MAX_IDX (*)   fd, gs1, gs2, gd(rs3) the result: ``fd`` = BF16 max or FP32 sum, ``gd`` = the
                                          first max's index counted from the FIRST element)
V_SUB_VF            gd(row), gs1(row),    rows ``gd..`` = rows ``gs1..`` - ``fs3`` (BF16, RNE),
                    gs2(n), fs3           ``n`` elements
V_EXP_V             gd(row), gs1(row),    rows ``gd..`` = ``e^`` rows ``gs1..`` (BF16)
                    gs2(n)
S_MAP_V_FP (*)      gd(row), gs1, imm     row ``gd`` lanes ``i < imm`` = ``FP[gs1 + i]``, other
                                          lanes +0 (``imm <= L``)
V_CMP_EQ_INT        gd(row), gs1, gs2,    row ``gd`` lane ``i`` = 1.0 if ``INT[gs1 + i] == gs2``
                    imm                   else +0, ``i < imm`` (the valid/masked positions)
V_TOPK_MASK (*)     gd(row), gs1(row),    row ``gd`` lane ``i`` = 1.0 if position ``i`` of the
                    gs2(row), gs3(k), imm confidence row ``gs1`` is among the top ``min(gs3,
                                          k_max)`` of lanes ``i < imm``, else +0; lanes of the
                                          valid row ``gs2`` holding +0 rank as -inf
V_SELECT_INT (*)    gd, gs1, gs2,         ``INT[gd + i] = mask ? INT[gs1 + i] : INT[gs2 + i]``,
                    gs3(row), imm         mask = lane ``i`` of row ``gs3`` is not +0, ``i < imm``
==================  ====================  ========================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data, enum

__all__ = ["Op", "Instr", "encode", "decode", "INSTR_LAYOUT", "FIELDS", "RED_FIRST", "RED_LAST",
           "PREFETCH_BF16", "NUM_GP", "NUM_FP", "WORD_BITS"]

WORD_BITS = 64
NUM_GP = 16
NUM_FP = 16

RED_FIRST = 1
RED_LAST = 2
PREFETCH_BF16 = 1


class Op(enum.IntEnum, shape=6):
    NOP = 0
    HALT = 1
    ADDI = 2
    ADD = 3
    SUB = 4
    BNE = 5
    BEQ = 6
    S_LD_INT = 7
    S_ST_INT = 8
    S_ST_FP = 9
    S_LI_F = 10
    S_MOV_F = 11
    S_ADD_F = 12
    S_MUL_F = 13
    S_SUB_BF = 14
    S_EXP_BF = 15
    S_RECIP_BF = 16
    S_CVT_BF = 17
    S_MAX_IDX_F = 18
    H_PREFETCH_V = 20
    H_WAIT = 21
    H_STORE_INT = 22
    H_STORE_V = 23
    V_RED_MAX = 24
    V_RED_SUM = 25
    V_RED_MAX_IDX = 26
    V_SUB_VF = 27
    V_EXP_V = 28
    S_MAP_V_FP = 29
    V_CMP_EQ_INT = 30
    V_TOPK_MASK = 31
    V_SELECT_INT = 32


#: The instruction word, LSB first. ``imm`` is stored as 32 raw bits: the sequencer adds it
#: modulo 2**32 and reads it as two's complement only for branch offsets.
INSTR_LAYOUT = data.StructLayout({
    "opcode": Op, "rd": 4, "rs1": 4, "rs2": 4, "rs3": 4, "reserved": 10, "imm": 32})
assert INSTR_LAYOUT.size == WORD_BITS

#: (offset, width) of each field of an instruction word, from :data:`INSTR_LAYOUT`.
FIELDS = {name: (field.offset, field.width) for name, field in INSTR_LAYOUT
          if name != "reserved"}


@dataclass(frozen=True)
class Instr:
    op: Op
    rd: int = 0
    rs1: int = 0
    rs2: int = 0
    rs3: int = 0
    imm: int = 0

    def __post_init__(self):
        for name in ("rd", "rs1", "rs2", "rs3"):
            value = getattr(self, name)
            if not 0 <= value < 16:
                raise ValueError(f"{self.op.name}: {name} = {value} is not a register 0..15")
        if not -(1 << 31) <= self.imm < (1 << 32):
            raise ValueError(f"{self.op.name}: imm = {self.imm} does not fit 32 bits")

    def __str__(self) -> str:
        return (f"{self.op.name:<14} rd={self.rd} rs1={self.rs1} rs2={self.rs2} "
                f"rs3={self.rs3} imm={self.imm}")


def encode(instr: Instr) -> int:
    """The 64-bit word of ``instr``."""
    word = 0
    for name, (offset, width) in FIELDS.items():
        value = int(instr.op) if name == "opcode" else getattr(instr, name)
        word |= (value & ((1 << width) - 1)) << offset
    return word


def decode(word: int) -> Instr:
    """The instruction of a 64-bit word (``imm`` sign-extended)."""
    fields = {name: (word >> offset) & ((1 << width) - 1)
              for name, (offset, width) in FIELDS.items()}
    imm = fields.pop("imm")
    imm -= (imm >> 31) << 32
    return Instr(Op(fields.pop("opcode")), imm=imm, **fields)
