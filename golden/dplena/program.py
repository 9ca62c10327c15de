"""Program generator for the d-PLENA sampling core: config + workload -> program image.

One diffusion sampling step (Algorithm 2, phases 1-4) over a block of ``B`` rows of ``L``
positions with vocabulary ``V``, streamed in chunks of ``V_chunk`` logits, as the config's
``stable_max`` says:

* ``fused`` -- one pass: per chunk ``V_RED_MAX_IDX``, the running max and index
  (``S_MAX_IDX_F``), the rescale of the running FP32 sum by ``e^(m_old - m)``, then
  ``V_SUB_VF``, ``V_EXP_V``, ``V_RED_SUM`` on the chunk (golden:
  :func:`memwall.golden.dplena.sampling.online_confidence_hw`). Every logit is read from HBM once.
* ``two_pass`` -- the paper's Method 2: a max pass, then a subtract/exp/sum pass with the final
  max (golden: :func:`memwall.golden.dplena.sampling.method2_confidence_hw`). If a row fits one
  chunk (``V <= V_chunk``) it is fetched once and both passes run on the Vector SRAM copy; otherwise
  each chunk is fetched twice.

Prefetch is double-buffered: buffer A sits in the lower half of the Vector SRAM rows, buffer B
and the three L-element rows (confidence, valid, transfer) in the upper half, so the prefetch of
the next chunk never collides with the in-place writes on the current one. The chunk sequence
is the same for every row, so the generator emits it once per row, with loops over runs of
identical chunks, inside the ``l`` and ``b`` loops.

INT SRAM layout (paper Eq. 2 plus the k table): ``x`` at ``[0, BL)`` (written by the host),
``x0`` at ``[BL, 2BL)``, ``k[b]`` at ``2BL + b``. The output FIFO carries, per batch row,
``x_new[0:L]``, ``x0[0:L]``, ``confidence[0:L]`` (BF16 bits) and ``transfer[0:L]`` (BF16 1.0/0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memwall.families.dplena.config import DplenaConfig
from memwall.golden.dplena.hbm import canonical_format
from memwall.golden.dplena.isa import PREFETCH_BF16, RED_FIRST, RED_LAST, Instr, Op, encode

__all__ = ["Workload", "WorkloadError", "Program", "Prefetch", "generate", "stream_format",
           "NEXT_ROW", "OUTPUT_FIELDS"]

RED_BOTH = RED_FIRST | RED_LAST
BF16_NEG_INF_WIDE = 0xFF800000
NEXT_ROW = "next_row"
OUTPUT_FIELDS = ("x", "x0", "confidence", "transfer")

# Register allocation (g0 is zero).
G_CUR, G_OTHER, G_CUR_N, G_NEXT_N, G_BASE, G_IC, G_IDX = 1, 2, 3, 4, 5, 6, 7
G_POS, G_BATCH, G_ROWS_LEFT, G_ROW_FIRST_N, G_LOOP, G_KPTR, G_L, G_BL = (
    8, 9, 10, 11, 12, 13, 14, 15)
F_ZERO, F_MAX, F_SUM, F_CMAX, F_CSUM, F_TMP, F_CONF = 0, 1, 2, 3, 4, 5, 6


class WorkloadError(ValueError):
    """A workload the config's core cannot run; the message says which limit and by how much."""


@dataclass(frozen=True)
class Workload:
    """One sampling step: ``batch`` rows of ``block_len`` positions over ``vocab`` logits.

    ``k`` is the number of tokens to transfer per row; ``v_chunk`` the logits per prefetch;
    ``logits_format`` how they sit in HBM: ``bf16`` or the core's MX format
    (:attr:`DplenaConfig.mx_format`; ``mxfp8`` names ``mxfp8_e4m3``).
    """

    batch: int
    block_len: int
    vocab: int
    v_chunk: int
    k: tuple
    mask_id: int = 126336
    logits_format: str = "mxfp8"

    def chunks(self) -> list[tuple[int, int]]:
        """``(start, count)`` of the chunks of one row."""
        step = min(self.v_chunk, self.vocab)
        return [(s, min(step, self.vocab - s)) for s in range(0, self.vocab, step)]


@dataclass(frozen=True)
class Prefetch:
    """One ``H_PREFETCH_V`` in stream order: logits ``[start, start+count)`` of row (b, l)."""

    b: int
    l: int  # noqa: E741 -- the paper's name
    start: int
    count: int


@dataclass
class Program:
    cfg: DplenaConfig
    workload: Workload
    instrs: list = field(default_factory=list)
    prefetches: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)

    @property
    def words(self) -> list[int]:
        return [encode(i) for i in self.instrs]

    def int_image(self, x) -> dict[int, int]:
        """INT SRAM words the host writes before ``start``: ``x`` row-major at 0."""
        flat = np.asarray(x, dtype=np.int64).reshape(-1)
        return {n: int(v) & 0xFFFFFFFF for n, v in enumerate(flat)}

    def output_words(self) -> int:
        return 4 * self.workload.batch * self.workload.block_len

    def decode_outputs(self, words) -> dict[str, np.ndarray]:
        """Split the output FIFO words into ``x``, ``x0`` (int64), ``confidence`` (uint16 BF16
        bits as stored, every position) and ``transfer`` (bool)."""
        B, L = self.workload.batch, self.workload.block_len
        w = np.asarray(words, dtype=np.uint64)
        if w.shape != (4 * B * L,):
            raise ValueError(f"expected {4 * B * L} output words, got {w.shape[0]}")
        w = w.reshape(B, 4, L)
        as_int = w.astype(np.uint32).view(np.int32).astype(np.int64)
        return {"x": as_int[:, 0], "x0": as_int[:, 1],
                "confidence": w[:, 2].astype(np.uint16),
                "transfer": w[:, 3].astype(np.uint16) != 0}


class _Asm:
    """Instructions with labels; branch immediates resolved at the end."""

    def __init__(self):
        self.items: list = []
        self.labels: dict[str, int] = {}
        self._n = 0

    def label(self, name: str | None = None) -> str:
        name = name or f"L{self._n}"
        self._n += 1
        self.labels[name] = len(self.items)
        return name

    def __call__(self, op: Op, rd=0, rs1=0, rs2=0, rs3=0, imm=0):
        self.items.append((op, rd, rs1, rs2, rs3, imm))

    def li(self, reg: int, value: int):
        self(Op.ADDI, reg, 0, imm=value)

    def instrs(self) -> list[Instr]:
        out = []
        for pc, (op, rd, rs1, rs2, rs3, imm) in enumerate(self.items):
            if isinstance(imm, str):
                imm = self.labels[imm] - pc
            out.append(Instr(op, rd, rs1, rs2, rs3, imm))
        return out


def _check(cfg: DplenaConfig, wl: Workload) -> None:
    def fail(msg):
        raise WorkloadError(f"workload B={wl.batch} L={wl.block_len} V={wl.vocab} "
                            f"V_chunk={wl.v_chunk} on {cfg.name}: {msg}")

    if wl.batch < 1 or wl.vocab < 1 or wl.v_chunk < 1:
        fail("B, V and V_chunk must be >= 1")
    if not 1 <= wl.block_len <= cfg.block_len:
        fail(f"L must be in [1, block_len = {cfg.block_len}]")
    if len(wl.k) != wl.batch or any(not 0 <= int(k) <= cfg.k_max for k in wl.k):
        fail(f"k needs {wl.batch} values in [0, k_max = {cfg.k_max}], got {list(wl.k)}")
    if wl.v_chunk < wl.vocab and wl.v_chunk % cfg.vlen:
        fail(f"V_chunk must be a multiple of VLEN ({cfg.vlen}) when it is smaller than V")
    if stream_format(cfg, wl) is None:
        fail(f"logits_format {wl.logits_format!r}; this core's dequantiser decodes "
             f"{cfg.mx_format} (its config's), or takes bf16")
    if not -(1 << 31) <= wl.mask_id < (1 << 31):
        fail("mask_id must fit int32")
    buffer_rows = -(-min(wl.v_chunk, wl.vocab) // cfg.vlen)
    half = cfg.vector_sram_rows // 2
    if buffer_rows + 3 > half:
        need = 2 * (buffer_rows + 3) * cfg.vlen * 2 / 1024
        fail(f"a chunk takes {buffer_rows} rows of {cfg.vlen} lanes; two buffers plus three "
             f"L-rows need {2 * (buffer_rows + 3)} rows ({need:g} KiB rounded to halves), the "
             f"Vector SRAM has {cfg.vector_sram_rows} ({cfg.vector_sram_kib} KiB)")
    bl = wl.batch * wl.block_len
    if 2 * bl + wl.batch > cfg.int_sram_words:
        fail(f"INT SRAM needs 2*B*L + B = {2 * bl + wl.batch} words, has {cfg.int_sram_words}")
    if bl >= 1 << 31 or wl.vocab >= 1 << 31:
        fail("sizes must fit int32")


def stream_format(cfg: DplenaConfig, wl: Workload) -> str | None:
    """``wl``'s logits format by its canonical name if ``cfg``'s core can stream it (``bf16``
    or the dequantiser's MX format), else None."""
    try:
        fmt = canonical_format(wl.logits_format)
    except (ValueError, TypeError):
        return None
    return fmt if fmt in ("bf16", cfg.mx_format) else None


def _row_steps(wl: Workload, stable_max: str) -> list[tuple]:
    """Per-row chunk steps ``(cur_count, next_count, kind, red_flags)``; ``next_count`` is an
    int or NEXT_ROW (the next row's first chunk, none after the last row)."""
    counts = [c for _, c in wl.chunks()]
    n = len(counts)
    if stable_max == "fused":
        return [(counts[j], counts[j + 1] if j + 1 < n else NEXT_ROW, "fused", RED_BOTH)
                for j in range(n)]
    if n == 1:
        return [(counts[0], NEXT_ROW, "whole", RED_BOTH)]

    def flags(j):
        return (RED_FIRST if j == 0 else 0) | (RED_LAST if j == n - 1 else 0)

    max_pass = [(counts[j], counts[j + 1] if j + 1 < n else counts[0], "max", flags(j))
                for j in range(n)]
    exp_pass = [(counts[j], counts[j + 1] if j + 1 < n else NEXT_ROW, "expsum", flags(j))
                for j in range(n)]
    return max_pass + exp_pass


def _prefetch_order(wl: Workload, stable_max: str) -> list[Prefetch]:
    chunks = wl.chunks()
    passes = 2 if stable_max == "two_pass" and len(chunks) > 1 else 1
    return [Prefetch(b, pos, s, c) for b in range(wl.batch) for pos in range(wl.block_len)
            for _ in range(passes) for s, c in chunks]


def _chunk_body(asm: _Asm, kind: str, flags: int, fmt_bits: int) -> None:
    asm(Op.H_WAIT)
    asm(Op.H_PREFETCH_V, G_OTHER, G_NEXT_N, imm=fmt_bits)
    if kind == "fused":
        asm(Op.V_RED_MAX_IDX, F_CMAX, G_CUR, G_CUR_N, G_IC, imm=flags)
        asm(Op.ADD, G_IC, G_IC, G_BASE)
        asm(Op.S_MOV_F, F_TMP, F_MAX)
        asm(Op.S_MAX_IDX_F, F_MAX, F_CMAX, G_IC, G_IDX)
        asm(Op.S_SUB_BF, F_TMP, F_TMP, F_MAX)
        asm(Op.S_EXP_BF, F_TMP, F_TMP)
        asm(Op.S_MUL_F, F_SUM, F_SUM, F_TMP)
        asm(Op.V_SUB_VF, G_CUR, G_CUR, G_CUR_N, F_MAX)
        asm(Op.V_EXP_V, G_CUR, G_CUR, G_CUR_N)
        asm(Op.V_RED_SUM, F_CSUM, G_CUR, G_CUR_N, imm=flags)
        asm(Op.S_ADD_F, F_SUM, F_SUM, F_CSUM)
        asm(Op.ADD, G_BASE, G_BASE, G_CUR_N)
    else:
        if kind in ("max", "whole"):
            asm(Op.V_RED_MAX_IDX, F_MAX, G_CUR, G_CUR_N, G_IDX, imm=flags)
        if kind in ("expsum", "whole"):
            asm(Op.V_SUB_VF, G_CUR, G_CUR, G_CUR_N, F_MAX)
            asm(Op.V_EXP_V, G_CUR, G_CUR, G_CUR_N)
            asm(Op.V_RED_SUM, F_SUM, G_CUR, G_CUR_N, imm=flags)
    # Swap the buffers (g6, the chunk's index, is dead here).
    asm(Op.ADD, G_IC, G_CUR, 0)
    asm(Op.ADD, G_CUR, G_OTHER, 0)
    asm(Op.ADD, G_OTHER, G_IC, 0)


def generate(cfg: DplenaConfig, wl: Workload) -> Program:
    """The program image of one sampling step of ``wl`` on a core built from ``cfg``."""
    _check(cfg, wl)
    B, L = wl.batch, wl.block_len
    bl = B * L
    half = cfg.vector_sram_rows // 2
    buffer_rows = -(-min(wl.v_chunk, wl.vocab) // cfg.vlen)
    rows = {"buffer_a": 0, "buffer_b": half, "confidence": half + buffer_rows,
            "valid": half + buffer_rows + 1, "transfer": half + buffer_rows + 2}
    x0_base, k_base = bl, 2 * bl
    fmt_bits = PREFETCH_BF16 if stream_format(cfg, wl) == "bf16" else 0
    steps = _row_steps(wl, cfg.stable_max)
    first_count = steps[0][0]

    asm = _Asm()
    # Prologue: constants, the k table, the first prefetch.
    asm.li(G_CUR, rows["buffer_a"])
    asm.li(G_OTHER, rows["buffer_b"])
    asm.li(G_L, L)
    asm.li(G_BL, bl)
    asm.li(G_ROWS_LEFT, bl)
    asm.li(G_ROW_FIRST_N, first_count)
    asm.li(G_KPTR, k_base)
    asm.li(G_BATCH, 0)
    for b, k in enumerate(wl.k):
        asm.li(G_LOOP, int(k))
        asm(Op.S_ST_INT, G_LOOP, 0, imm=k_base + b)
    asm.li(G_CUR_N, first_count)
    asm(Op.H_PREFETCH_V, G_CUR, G_CUR_N, imm=fmt_bits)

    batch_top = asm.label("batch")
    asm.li(G_POS, 0)
    row_top = asm.label("row")
    # Phase 1: the last row's last chunk prefetches nothing.
    asm(Op.ADDI, G_ROWS_LEFT, G_ROWS_LEFT, imm=-1)
    asm(Op.BNE, 0, G_ROWS_LEFT, 0, imm=2)
    asm.li(G_ROW_FIRST_N, 0)
    asm(Op.S_LI_F, F_MAX, imm=BF16_NEG_INF_WIDE)
    asm(Op.S_LI_F, F_SUM, imm=0)
    asm.li(G_IDX, 0)
    asm.li(G_BASE, 0)
    n = 0
    while n < len(steps):
        run = 1
        while n + run < len(steps) and steps[n + run] == steps[n]:
            run += 1
        cur, nxt, kind, flags = steps[n]
        asm.li(G_CUR_N, cur)
        if nxt == NEXT_ROW:
            asm(Op.ADD, G_NEXT_N, G_ROW_FIRST_N, 0)
        else:
            asm.li(G_NEXT_N, nxt)
        if run > 1:
            asm.li(G_LOOP, run)
            top = asm.label()
            _chunk_body(asm, kind, flags, fmt_bits)
            asm(Op.ADDI, G_LOOP, G_LOOP, imm=-1)
            asm(Op.BNE, 0, G_LOOP, 0, imm=top)
        else:
            _chunk_body(asm, kind, flags, fmt_bits)
        n += run
    # Phase 2: confidence to FP SRAM[l], argmax to INT SRAM x0[b*L + l].
    asm(Op.S_CVT_BF, F_CONF, F_SUM)
    asm(Op.S_RECIP_BF, F_CONF, F_CONF)
    asm(Op.S_ST_FP, F_CONF, G_POS, imm=0)
    asm(Op.ADD, G_LOOP, G_BATCH, G_POS)
    asm(Op.S_ST_INT, G_IDX, G_LOOP, imm=x0_base)
    asm(Op.ADDI, G_POS, G_POS, imm=1)
    asm(Op.BNE, 0, G_POS, G_L, imm=row_top)

    # Phase 3: confidences to a vector, valid mask, top-k transfer mask.
    g_conf, g_valid, g_xfer, g_mask_id, g_k, g_x0 = 3, 4, 5, 6, 7, 12
    asm.li(g_conf, rows["confidence"])
    asm.li(g_valid, rows["valid"])
    asm.li(g_xfer, rows["transfer"])
    asm.li(g_mask_id, wl.mask_id)
    asm(Op.S_MAP_V_FP, g_conf, 0, imm=L)
    asm(Op.V_CMP_EQ_INT, g_valid, G_BATCH, g_mask_id, imm=L)
    asm(Op.S_LD_INT, g_k, G_KPTR, imm=0)
    asm(Op.V_TOPK_MASK, g_xfer, g_conf, g_valid, g_k, imm=L)
    # Phase 4: x0 = where(valid, x0, x); x = where(transfer, x0, x).
    asm(Op.ADD, g_x0, G_BATCH, G_BL)
    asm(Op.V_SELECT_INT, g_x0, g_x0, G_BATCH, g_valid, imm=L)
    asm(Op.V_SELECT_INT, G_BATCH, g_x0, G_BATCH, g_xfer, imm=L)
    asm(Op.H_STORE_INT, 0, G_BATCH, imm=L)
    asm(Op.H_STORE_INT, 0, g_x0, imm=L)
    asm(Op.H_STORE_V, 0, g_conf, imm=L)
    asm(Op.H_STORE_V, 0, g_xfer, imm=L)
    asm(Op.ADDI, G_KPTR, G_KPTR, imm=1)
    asm(Op.ADDI, G_BATCH, G_BATCH, imm=L)
    asm(Op.BNE, 0, G_BATCH, G_BL, imm=batch_top)
    asm(Op.HALT)

    instrs = asm.instrs()
    if len(instrs) > cfg.imem_words:
        raise WorkloadError(f"the program has {len(instrs)} instructions; the instruction "
                            f"memory of {cfg.name} holds {cfg.imem_words}")
    return Program(cfg, wl, instrs, _prefetch_order(wl, cfg.stable_max), rows)
