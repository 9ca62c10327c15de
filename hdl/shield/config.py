"""SHIELD configuration (paper: SHIELD, segmented eDRAM refresh for BF16 activations).

The activation workspace holds ``kv_words + qo_words`` words of ``format``. Each word is split
into its sign+exponent field (Standard Refresh Bank, every word) and its mantissa field (Relaxed
Refresh Bank for KV words, Refresh-less Bank for QO words). Banks are organised in rows of
``row_words`` fields; refresh works on whole rows.
"""

from __future__ import annotations

import math
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
)

__all__ = ["ShieldConfig", "FORMATS", "DEFAULT_RETENTION"]

#: number format -> (sign + exponent bits, mantissa bits)
FORMATS = {"bf16": (9, 7), "fp16": (6, 10), "fp8_e4m3": (5, 3), "fp8_e5m2": (6, 2)}

#: Bit-error rate of a cell vs time since it was last restored (µs), per bank. Defaults are
#: consistent with the paper: the KV mantissa reaches BER 1e-4 at T_rel = 1216 µs and the QO
#: mantissa stays at or below 0.04 % over its 1.5 ms life; the sign/exponent cells are refreshed
#: at T_std = 45 µs and see no errors within it. Linear interpolation in log(BER) between points.
DEFAULT_RETENTION = {
    "standard": [[0, 0.0], [45, 0.0], [100, 1e-9], [1216, 1e-4], [1500, 4e-4], [5000, 1e-2]],
    "relaxed": [[0, 0.0], [45, 0.0], [100, 1e-9], [1216, 1e-4], [1500, 4e-4], [5000, 1e-2]],
    "refreshless": [[0, 0.0], [45, 0.0], [100, 1e-9], [1216, 1e-4], [1500, 4e-4], [5000, 1e-2]],
}


def _retention_check(value):
    if not isinstance(value, dict) or set(value) != set(DEFAULT_RETENTION):
        return "must map each bank (standard, relaxed, refreshless) to [[time_us, ber], ...]"
    for bank, points in value.items():
        if not isinstance(points, list) or len(points) < 2:
            return f"{bank}: needs at least two [time_us, ber] points"
        last_t, last_b = -1.0, -1.0
        for point in points:
            if (not isinstance(point, list) or len(point) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                               and math.isfinite(v) for v in point)):
                return f"{bank}: each point must be [time_us, ber] numbers, got {point!r}"
            t, b = point
            if t <= last_t or not 0 <= b <= 1 or b < last_b:
                return (f"{bank}: times must increase and BER must be in [0, 1] and not "
                        f"decrease; got {point!r} after [{last_t}, {last_b}]")
            last_t, last_b = t, b
    return None


@dataclass(frozen=True)
class ShieldConfig(UnitConfig):
    unit_name: ClassVar[str] = "shield"
    name: str = "shield"
    format: str = field("bf16", one_of(*FORMATS), "number format of the stored words")
    kv_words: int = field(1 << 20, int_range(1, 1 << 30), "B_KV: KV-cache words")
    qo_words: int = field(1 << 20, int_range(0, 1 << 30), "B_QO: Q/O activation words")
    row_words: int = field(256, int_range(1, 1 << 16), "fields per eDRAM row (all banks)")
    t_std_us: float = field(45.0, number_range(0, 1e6), "T_std: standard refresh interval, µs")
    t_rel_us: float = field(1216.0, number_range(0, 1e6), "T_rel: relaxed refresh interval, µs")
    qo_life_us: float = field(1500.0, number_range(0, 1e6), "longest QO lifetime, µs")
    clock_mhz: float = field(1000, number_range(0, 10000), "controller clock, MHz")
    e_ref_cycle_nj: float = field(1.0, number_range(0, 1e9),
                                  "E_ref_cycle: energy to refresh the whole array once, nJ")
    p_leak_mw: float = field(0.95, number_range(0, 1e6), "P_leak: array leakage power, mW")
    retention: dict = field(DEFAULT_RETENTION, _retention_check,
                            "BER vs µs since restore, per bank")

    def __post_init__(self):
        if self.t_rel_us < self.t_std_us:
            raise ConfigError(f"t_rel_us: {self.t_rel_us} — t_rel_us must be at least t_std_us "
                              f"({self.t_std_us})")
        for key in ("t_std_us", "t_rel_us"):
            # More cycles than rows: a fully live bank must leave some cycles for accesses.
            if self.interval_cycles(getattr(self, key)) <= self.rows(self.total_words):
                raise ConfigError(
                    f"{key}: {getattr(self, key)} µs at {self.clock_mhz} MHz is "
                    f"{self.interval_cycles(getattr(self, key))} cycles; it must be more than "
                    f"the {self.rows(self.total_words)} rows it refreshes one per cycle")

    # -- derived values --------------------------------------------------------------------------
    @property
    def hi_bits(self) -> int:
        """Sign + exponent bits (Standard Refresh Bank)."""
        return FORMATS[self.format][0]

    @property
    def lo_bits(self) -> int:
        """Mantissa bits (Relaxed / Refresh-less banks)."""
        return FORMATS[self.format][1]

    @property
    def word_bits(self) -> int:
        return self.hi_bits + self.lo_bits

    @property
    def total_words(self) -> int:
        """B_total."""
        return self.kv_words + self.qo_words

    def rows(self, words: int) -> int:
        return -(-words // self.row_words)

    @property
    def bank_rows(self) -> dict[str, int]:
        return {"standard": self.rows(self.total_words), "relaxed": self.rows(self.kv_words),
                "refreshless": self.rows(self.qo_words)}

    def interval_cycles(self, t_us: float) -> int:
        return int(round(t_us * self.clock_mhz))

    @property
    def t_std_cycles(self) -> int:
        return self.interval_cycles(self.t_std_us)

    @property
    def t_rel_cycles(self) -> int:
        return self.interval_cycles(self.t_rel_us)

    @property
    def addr_width(self) -> int:
        return max(1, ceil_log2(self.total_words))
