"""d-PLENA configuration (paper: d-PLENA, Sec. III-IV; VLEN 512/1024/2048, BF16, MXFP8 E4M3)."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.utils import ceil_log2

from memwall.config import (
    ConfigError,
    UnitConfig,
    field,
    int_range,
    number_range,
    one_of,
    power_of_two,
    register_unit,
)

__all__ = ["DplenaConfig"]


@register_unit("dplena")
@dataclass(frozen=True)
class DplenaConfig(UnitConfig):
    name: str = "dplena"
    vlen: int = field(512, power_of_two(8, 4096), "vector lanes (elements per vector op)")
    block_len: int = field(32, int_range(2, 1024), "L: tokens per diffusion block")
    k_max: int = field(32, int_range(1, 1024), "most tokens transferred per step (top-k slots)")
    clock_mhz: float = field(1000, number_range(0, 10000), "target clock frequency in MHz")
    compute_format: str = field("bf16", one_of("bf16"), "vector/scalar FP format")
    logits_format: str = field("mxfp8_e4m3", one_of("mxfp8_e4m3", "bf16"),
                               "format of logits in HBM")
    int_width: int = field(32, one_of(32), "INT SRAM / token-ID width in bits")

    def __post_init__(self):
        if self.k_max > self.block_len:
            raise ConfigError(f"k_max: {self.k_max} — k_max must be at most block_len "
                              f"({self.block_len})")

    @property
    def lane_index_width(self) -> int:
        return ceil_log2(self.vlen)

    @property
    def block_index_width(self) -> int:
        return ceil_log2(self.block_len)
