"""d-PLENA configuration (paper: d-PLENA, Sec. III-IV; VLEN 512/1024/2048, BF16, MXFP8 E4M3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from amaranth.utils import ceil_log2

from memwall.config import (
    ConfigError,
    UnitConfig,
    field,
    int_range,
    number_range,
    one_of,
    power_of_two,
)

__all__ = ["DplenaConfig"]


@dataclass(frozen=True)
class DplenaConfig(UnitConfig):
    unit_name: ClassVar[str] = "dplena"
    name: str = "dplena"
    vlen: int = field(512, power_of_two(8, 4096), "vector lanes (elements per vector op)")
    block_len: int = field(32, int_range(2, 1024), "L: tokens per diffusion block")
    k_max: int = field(32, int_range(1, 1024), "most tokens transferred per step (top-k slots)")
    clock_mhz: float = field(1000, number_range(0, 10000), "target clock frequency in MHz")
    compute_format: str = field("bf16", one_of("bf16"), "vector/scalar FP format")
    logits_format: str = field("mxfp8_e4m3", one_of("mxfp8_e4m3", "bf16"),
                               "format of logits in HBM")
    int_width: int = field(32, one_of(32), "INT SRAM / token-ID width in bits")
    stable_max: str = field("fused", one_of("fused", "two_pass"),
                            "softmax structure of the generated program: one streaming pass with "
                            "a rescaled running sum, or the paper's max pass then exp/sum pass")
    hbm_bytes_per_cycle: int = field(64, power_of_two(32, 4096),
                                     "HBM logits port width in bytes per cycle (64 = 64 GB/s at "
                                     "1 GHz, about the paper's 67.7 GB/s)")
    vector_sram_kib: int = field(64, power_of_two(1, 65536),
                                 "Vector SRAM capacity in KiB (rows of VLEN BF16 elements)")
    fp_sram_words: int = field(512, power_of_two(2, 1 << 20), "FP SRAM depth in BF16 words")
    int_sram_words: int = field(4096, power_of_two(2, 1 << 24),
                                "INT SRAM depth in int_width words")
    imem_words: int = field(512, power_of_two(16, 1 << 16), "instruction memory depth (64-bit)")
    out_fifo_depth: int = field(16, power_of_two(2, 1024), "token-ID output FIFO depth")

    def __post_init__(self):
        if self.k_max > self.block_len:
            raise ConfigError(f"k_max: {self.k_max} — k_max must be at most block_len "
                              f"({self.block_len})")
        if self.block_len > self.vlen:
            raise ConfigError(f"block_len: {self.block_len} — an L-element vector must fit one "
                              f"Vector SRAM row, so block_len must be at most vlen ({self.vlen})")
        if self.hbm_bytes_per_cycle > self.vlen:
            raise ConfigError(f"hbm_bytes_per_cycle: {self.hbm_bytes_per_cycle} — a beat fills "
                              f"one bank of a Vector SRAM row, so it must be at most vlen "
                              f"({self.vlen})")
        if self.vector_sram_rows < 8:
            raise ConfigError(f"vector_sram_kib: {self.vector_sram_kib} — holds "
                              f"{self.vector_sram_rows} rows of {self.vlen} BF16 elements; "
                              f"at least 8 are needed")
        if self.fp_sram_words < self.block_len:
            raise ConfigError(f"fp_sram_words: {self.fp_sram_words} — must hold block_len "
                              f"({self.block_len}) confidences (paper Eq. 3)")

    @property
    def vector_sram_rows(self) -> int:
        return self.vector_sram_kib * 1024 // (2 * self.vlen)

    @property
    def bank_lanes(self) -> int:
        """Lanes per Vector SRAM bank: one HBM beat of MXFP8 elements fills one bank."""
        return self.hbm_bytes_per_cycle

    @property
    def banks(self) -> int:
        return self.vlen // self.bank_lanes

    @property
    def lane_index_width(self) -> int:
        return ceil_log2(self.vlen)

    @property
    def block_index_width(self) -> int:
        return ceil_log2(self.block_len)
