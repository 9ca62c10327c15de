"""d-PLENA's spec (paper: d-PLENA, Sec. III-IV; VLEN 512/1024/2048, BF16, MXFP8 E4M3): the
config, and the pipeline depth it sets (register stages per FP block, and what they cost).

One config knob, ``fp_stages``, sets the register stages inside every FP block of the core; a
block that allows fewer (its ``DEPTHS`` table, :mod:`memwall.hdl.common.pipeline`) gets its own
maximum. Every latency the units, the sequencer and the cycle model use is derived here, so
the RTL and :mod:`memwall.golden.dplena.model` cannot disagree:

* a pipelined block always starts from registers: whatever drives a unit (the sequencer's
  decode, a memory macro's output) has the cycle before to arrive. So a lane of several blocks
  (elementwise: add, mul, exp; scalar FP: exp, 1/x, FP32 -> BF16) registers its operands,
  runs its blocks (the shorter ones padded to the deepest, ``d``) and registers the selected
  result: latency ``d + 2`` (``1`` when combinational);
* a reduction-tree level is one FP32 add plus the node's output register, ``add_fp32 + 1``,
  and the leaves register their masked inputs first;
* the cross-chunk accumulator registers its add's operands too, and keeps one interleaved FP32
  partial sum per cycle of its add (:attr:`FpStages.sum_partials`), so a chunk a cycle never
  waits for the previous chunk's add (:func:`memwall.golden.common.fparith.reduce_sum`);
* the sequencer's S_ADD_F, S_MUL_F and S_SUB_BF register their operands and their result:
  ``stages + 3`` cycles (1 when combinational).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

from memwall.config import (
    ConfigError,
    UnitConfig,
    ceil_log2,
    field,
    frozen_pairs,
    int_range,
    number_range,
    one_of,
    pdk_clocks,
    power_of_two,
)

__all__ = ["DplenaConfig", "FpStages", "MX_ELEMENT_BITS", "LOGITS_FORMATS", "LOGITS_FORMAT_ALIASES",
           "DEFAULT_MX_FORMAT", "write_lanes",
           "BLOCK_MAX_STAGES", "block_max_stages", "max_fp_stages",
           "tree_latency", "sum_fold_cycles"]

#: The OCP MX formats a core's dequantiser may be built for, by element width in bits: the
#: formats of :data:`memwall.golden.dplena.mx.FORMATS`, stated here so that the spec imports no
#: layer; ``tests/dplena/test_mx.py`` checks them against the golden table.
MX_ELEMENT_BITS = {"mxfp8_e4m3": 8, "mxfp8_e5m2": 8, "mxfp6_e3m2": 6, "mxfp6_e2m3": 6,
                   "mxfp4_e2m1": 4}
#: The names a logits format may be given by: BF16 and the MX formats, and the alias ``mxfp8`` (the
#: name the workloads once used) for MXFP8 E4M3.
LOGITS_FORMATS = ("bf16", *MX_ELEMENT_BITS)
LOGITS_FORMAT_ALIASES = {"mxfp8": "mxfp8_e4m3"}
#: The MX format the dequantiser was first built for: the default wherever one is not named
#: (the golden HBM layout, the interpreter's Prefetch and the RTL take it from here).
DEFAULT_MX_FORMAT = "mxfp8_e4m3"


def write_lanes(fmt: str, beat_bytes: int) -> int:
    """Elements per Vector SRAM write of a dequantiser built for ``fmt`` (a name of
    :data:`MX_ELEMENT_BITS`, or ``"bf16"``) on a ``beat_bytes``-byte HBM beat: one beat of 8- and
    16-bit elements, twice as many 6- and 4-bit ones (what a 4-bit beat carries), so a write
    always completes within a beat that exists."""
    return beat_bytes if fmt == "bf16" or MX_ELEMENT_BITS[fmt] == 8 else 2 * beat_bytes


#: The deepest pipeline each FP block of the core allows, by :class:`FpStages` field: the
#: largest depth of each block's ``DEPTHS`` table (:mod:`memwall.hdl.common.fp`,
#: :mod:`memwall.hdl.common.transcendental`), stated here so that the spec imports no hardware;
#: ``tests/common/test_fp_pipeline.py`` checks it against the tables.
BLOCK_MAX_STAGES = {"add_bf16": 4, "mul_bf16": 4, "exp": 3, "recip": 2, "to_bf16": 1,
                    "add_fp32": 4, "mul_fp32": 3}


def block_max_stages() -> dict[str, int]:
    """The deepest pipeline each FP block of the core allows, by :class:`FpStages` field."""
    return dict(BLOCK_MAX_STAGES)


def max_fp_stages() -> int:
    """``fp_stages`` beyond this adds nothing: every block is at its deepest."""
    return max(block_max_stages().values())


@dataclass(frozen=True)
class FpStages:
    """Register stages inside each FP block (0: combinational, the block as it always was)."""

    add_bf16: int = 0
    mul_bf16: int = 0
    exp: int = 0
    recip: int = 0
    to_bf16: int = 0
    add_fp32: int = 0
    mul_fp32: int = 0

    def __post_init__(self):
        top = block_max_stages()
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 0 <= value <= top[name]:
                raise ValueError(f"FpStages.{name}: must be an int in 0..{top[name]}, "
                                 f"got {value!r}")

    @classmethod
    def uniform(cls, depth: int) -> FpStages:
        """``depth`` stages in every block, or the block's own maximum if that is smaller."""
        return cls(**{name: min(depth, top) for name, top in block_max_stages().items()})

    def as_params(self) -> dict:
        """The non-zero depths, for a module's ``params`` (all-zero: empty, so combinational
        modules keep the names they always had)."""
        return {name: value for name, value in asdict(self).items() if value}

    @property
    def elementwise_latency(self) -> int:
        """Cycles from an elementwise command to its result: the result register, plus the
        operand register and the deepest block's stages when the blocks are pipelined."""
        return _lane_latency(max(self.add_bf16, self.mul_bf16, self.exp))

    @property
    def scalar_fp_latency(self) -> int:
        """Cycles from a scalar FP unit command (e^x, 1/x, FP32 -> BF16) to its result."""
        return _lane_latency(max(self.exp, self.recip, self.to_bf16))

    def tree_latency(self, levels: int) -> int:
        """Cycles of a reduction tree of ``levels`` levels (:func:`tree_latency`)."""
        return tree_latency(levels, self.add_fp32)

    @property
    def sum_partials(self) -> int:
        """Interleaved FP32 partial sums of the cross-chunk accumulator: its add takes
        ``add_fp32`` stages, plus an operand register when pipelined, so a chunk's partial
        must be that many chunks old."""
        return _lane_latency(self.add_fp32)

    @staticmethod
    def arith_cycles(stages: int) -> int:
        """Cycles of a sequencer S_ADD_F / S_MUL_F / S_SUB_BF on a block of ``stages``: one
        when combinational; else the operand register, the block, its result register and
        the register-file write."""
        return stages + 3 if stages else 1


def tree_latency(levels: int, stages: int) -> int:
    """Cycles of a reduction tree of ``levels`` levels whose FP32 adders have ``stages``:
    ``stages + 1`` per level, plus the leaves' input register when ``stages > 0``."""
    return levels * (stages + 1) + (1 if stages else 0)


def _lane_latency(depth: int) -> int:
    """A result register behind ``depth`` block stages, and an operand register in front of
    them when ``depth > 0``."""
    return depth + 2 if depth else 1


def sum_fold_cycles(chunks: int, stages: int) -> int:
    """Cycles from a SUM's last chunk entering the accumulator to its result register being
    written (the result is valid the cycle after), for ``chunks`` chunks since its FIRST; 0
    with ``stages = 0``. Mirrors :class:`memwall.hdl.dplena.reduction.ReductionAccumulator`: an add
    is in flight ``stages + 1`` cycles (operand register, adder), and the next add on its partial
    may start the cycle after it lands."""
    if not stages:
        return 0
    step, partials = stages + 2, stages + 2
    start = step if chunks > partials else 1
    return start + (min(chunks, partials) - 1) * step


@dataclass(frozen=True)
class DplenaConfig(UnitConfig):
    """A d-PLENA core: lanes, block, memories, HBM port and clock.

    Every allowed value generates within 4 GiB: each field's range (and the cross-field checks
    in ``__post_init__``) keeps ``memwall gen`` under 4 GiB peak RSS and 5 minutes at every
    corner, measured by ``benchmarks/config_ranges.py`` (``reports/config_ranges.md``). The
    ranges are bounded by generation cost and stay well above every paper config (VLEN
    512-2048, L = 32, at most 1024 KiB Vector SRAM, 2048-word FP/INT SRAMs, 512 instructions,
    256 B/cycle):

    * Memories cost time and memory per bit of one *unique* memory: Amaranth writes an explicit
      all-zero initial value for every memory, one netlist bit (a Python object) per memory
      bit, which Yosys then writes as one Verilog line per word. The old 2^24-word INT SRAM
      was half a gigabit: tens of GiB.
    * The top-k unit decodes ``k_max`` indices of ``block_len`` positions: its cost grows as
      ``block_len * k_max``, and past a few hundred slots its expression nesting exceeds
      Python's recursion limit.
    * A Vector SRAM bank holds ``hbm_bytes_per_cycle`` lanes; its three row-wide write inputs
      (``3 x 16 x lanes`` bits) must stay under Amaranth's 65,536-bit port limit.
    """

    unit_name: ClassVar[str] = "dplena"
    name: str = "dplena"
    vlen: int = field(512, power_of_two(32, 4096),
                      "vector lanes (elements per vector op); at least hbm_bytes_per_cycle")
    block_len: int = field(32, int_range(2, 256),
                           "L: tokens per diffusion block; at most 256 because the top-k unit's "
                           "cost grows as block_len * k_max (paper: 32)")
    k_max: int = field(32, int_range(1, 256),
                       "most tokens transferred per step (top-k slots); at most 256, see "
                       "block_len")
    clock_mhz: float = field(1000, number_range(0.001, 10000),
                             "target clock frequency in MHz, above 1 kHz and at most 10 GHz, so "
                             "the clock period written to the SDC and config.mk is a finite "
                             "0.1 .. 1e6 ns")
    compute_format: str = field("bf16", one_of("bf16"), "vector/scalar FP format")
    logits_format: str = field("mxfp8_e4m3", one_of(*MX_ELEMENT_BITS, "bf16"),
                               "format of logits in HBM: the OCP MX format the dequantiser is "
                               "built for (8-bit elements write hbm_bytes_per_cycle lanes a "
                               "cycle, 6- and 4-bit ones twice as many), or bf16 (a core whose "
                               "dequantiser decodes mxfp8_e4m3); a prefetch may always ask for "
                               "BF16 passthrough instead")
    int_width: int = field(32, one_of(32), "INT SRAM / token-ID width in bits")
    stable_max: str = field("fused", one_of("fused", "two_pass"),
                            "softmax structure of the generated program: one streaming pass with "
                            "a rescaled running sum, or the paper's max pass then exp/sum pass")
    hbm_bytes_per_cycle: int = field(64, power_of_two(32, 1024),
                                     "HBM logits port width in bytes per cycle (64 = 64 GB/s at "
                                     "1 GHz, about the paper's 67.7 GB/s); at most 1024 because "
                                     "a Vector SRAM bank of that many lanes takes three "
                                     "16-bit-per-lane write inputs, which must stay under "
                                     "Amaranth's 65,536-bit port limit")
    vector_sram_kib: int = field(64, power_of_two(1, 2048),
                                 "Vector SRAM capacity in KiB (rows of VLEN BF16 elements); at "
                                 "most 2 MiB, twice the paper's largest (1024 KiB), because "
                                 "generation cost grows with the bits of one bank")
    fp_sram_words: int = field(512, power_of_two(2, 1 << 16),
                               "FP SRAM depth in BF16 words; at most 65536 (paper: max(L, VLEN)), "
                               "as generation cost grows with memory bits")
    int_sram_words: int = field(4096, power_of_two(2, 1 << 16),
                                "INT SRAM depth in int_width words; at most 65536 (256 KiB; "
                                "paper: 8 kB), as generation cost grows with memory bits")
    imem_words: int = field(512, power_of_two(16, 1 << 14),
                            "instruction memory depth (64-bit); at most 16384 (the paper "
                            "configs use 512), as generation cost grows with memory bits")
    out_fifo_depth: int = field(16, power_of_two(2, 1024), "token-ID output FIFO depth")
    pdk_clock_mhz: tuple = field({}, pdk_clocks(0.001, 10000),
                                "clock per PDK where it differs from clock_mhz, e.g. "
                                "{sky130hd: 100}: the hardware does not depend on its clock, so "
                                "each PDK is synthesised and timed at its own")
    # A choice among the blocks' depths, not a size: generation cost barely depends on it.
    fp_stages: int = field(3, one_of(*range(max_fp_stages() + 1)),
                           "pipeline register stages inside every FP block (add, multiply, "
                           "exp, 1/x, FP32->BF16), each block capped at its own deepest "
                           "(memwall/families/dplena/config.py); 0 is combinational. 3, the "
                           "default, is the shallowest at which dplena32 meets 1 GHz on asap7 "
                           "with the sign-off margins, flat and hierarchical; a shallower "
                           "pipeline takes fewer cycles at a lower clock "
                           "(reports/dplena/pipeline_depth.md)")

    def __post_init__(self):
        object.__setattr__(self, "pdk_clock_mhz", frozen_pairs(self.pdk_clock_mhz))
        if self.k_max > self.block_len:
            raise ConfigError(f"k_max: {self.k_max} — k_max must be at most block_len "
                              f"({self.block_len})")
        if self.block_len > self.vlen:
            raise ConfigError(f"block_len: {self.block_len} — an L-element vector must fit one "
                              f"Vector SRAM row, so block_len must be at most vlen ({self.vlen})")
        if self.bank_lanes > self.vlen:
            raise ConfigError(f"hbm_bytes_per_cycle: {self.hbm_bytes_per_cycle} — a "
                              f"{self.mx_format} write of {self.bank_lanes} elements fills one "
                              f"bank of a Vector SRAM row, so it must be at most vlen "
                              f"({self.vlen}): hbm_bytes_per_cycle at most "
                              f"{self.vlen * self.hbm_bytes_per_cycle // self.bank_lanes}")
        if self.vector_sram_rows < 8:
            raise ConfigError(f"vector_sram_kib: {self.vector_sram_kib} — holds "
                              f"{self.vector_sram_rows} rows of {self.vlen} BF16 elements; "
                              f"at least 8 are needed")
        if self.fp_sram_words < self.block_len:
            raise ConfigError(f"fp_sram_words: {self.fp_sram_words} — must hold block_len "
                              f"({self.block_len}) confidences (paper Eq. 3)")

    @property
    def stages(self) -> FpStages:
        """Register stages of each FP block, and the latencies they give."""
        return FpStages.uniform(self.fp_stages)

    @property
    def vector_sram_rows(self) -> int:
        return self.vector_sram_kib * 1024 // (2 * self.vlen)

    @property
    def mx_format(self) -> str:
        """The MX format the dequantiser decodes: ``logits_format``, or MXFP8 E4M3 on a core
        whose logits are BF16 by default."""
        return DEFAULT_MX_FORMAT if self.logits_format == "bf16" else self.logits_format

    @property
    def bank_lanes(self) -> int:
        """Lanes per Vector SRAM bank: one dequantiser write (:func:`write_lanes`: one HBM
        beat of 8-bit elements, two beats' worth of 4-bit ones)."""
        return write_lanes(self.mx_format, self.hbm_bytes_per_cycle)

    @property
    def banks(self) -> int:
        return self.vlen // self.bank_lanes

    @property
    def lane_index_width(self) -> int:
        return ceil_log2(self.vlen)

    @property
    def block_index_width(self) -> int:
        return ceil_log2(self.block_len)
