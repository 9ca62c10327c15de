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

from memwall.config import (
    ConfigError,
    UnitConfig,
    ceil_log2,
    field,
    int_range,
    number_range,
    one_of,
    power_of_two,
)

__all__ = ["ShieldConfig", "FORMATS", "DEFAULT_RETENTION", "MAX_ROWS", "HARDWARE_FIELDS"]

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


#: Fields the RTL and its clock depend on (:attr:`ShieldConfig.hardware`).
HARDWARE_FIELDS = ("format", "kv_words", "qo_words", "row_words", "t_std_us", "t_rel_us",
                   "clock_mhz", "live_block_rows")

#: Most rows of the Standard Refresh Bank (``ceil((kv_words + qo_words) / row_words)``). The
#: controller keeps a liveness flip-flop and a stage flip-flop per block of ``live_block_rows``
#: rows and class (read through a blocks-to-1 multiplexer), so at ``live_block_rows = 1`` the
#: rows, not the words, set its size; generation time grows linearly with them. This bound is
#: the range ``benchmarks/config_ranges.py`` measures (shield_2mb: 4096 rows).
MAX_ROWS = 1 << 14


@dataclass(frozen=True)
class ShieldConfig(UnitConfig):
    """A SHIELD workspace and its controller: sizes, intervals, clock and power figures.

    Every allowed value generates within 4 GiB: the ranges below and the cross-field checks in
    ``__post_init__`` keep ``memwall gen`` under 4 GiB peak RSS and 5 minutes at every corner,
    measured by ``benchmarks/config_ranges.py`` (``reports/config_ranges.md``). The number of
    rows is what bounds generation (:data:`MAX_ROWS`), not the words: the banks are external
    macros. The float fields have positive lower bounds so every derived quantity stays finite
    and non-zero: intervals of ``round(t_us * clock_mhz)`` cycles (at most 1e10, 34-bit
    counters), the refresh power ``e_ref_cycle_nj / t_std_us`` and the leakage ratio
    ``p_leak_mw / (e_ref_cycle_nj / t_std_us)``.
    """

    unit_name: ClassVar[str] = "shield"
    name: str = "shield"
    format: str = field("bf16", one_of(*FORMATS), "number format of the stored words")
    kv_words: int = field(1 << 20, int_range(1, 1 << 29),
                          "B_KV: KV-cache words; at most 2^29 (1 GiB of BF16) so that "
                          "kv_words + qo_words fits MAX_ROWS rows of the widest row_words")
    qo_words: int = field(1 << 20, int_range(0, 1 << 29),
                          "B_QO: Q/O activation words; at most 2^29, see kv_words")
    row_words: int = field(256, int_range(1, 1 << 16),
                           "fields per eDRAM row (all banks); the rows, (kv_words + qo_words) / "
                           "row_words rounded up, must be at most MAX_ROWS (16384)")
    t_std_us: float = field(45.0, number_range(0.001, 1e6),
                            "T_std: standard refresh interval, µs, in (1 ns, 1 s]: with "
                            "clock_mhz at most 1e4 the interval is at most 1e10 cycles "
                            "(34-bit counters); it must also exceed the rows in cycles")
    t_rel_us: float = field(1216.0, number_range(0.001, 1e6),
                            "T_rel: relaxed refresh interval, µs, in (1 ns, 1 s] as t_std_us "
                            "and at least t_std_us")
    qo_life_us: float = field(1500.0, number_range(0.001, 1e6),
                              "longest QO lifetime, µs, in (1 ns, 1 s] as t_std_us")
    clock_mhz: float = field(1000, number_range(0.001, 10000),
                             "controller clock in MHz, above 1 kHz and at most 10 GHz, so the "
                             "clock period (0.1 .. 1e6 ns) and the intervals in cycles are "
                             "finite")
    e_ref_cycle_nj: float = field(1.0, number_range(1e-6, 1e9),
                                  "E_ref_cycle: energy to refresh the whole array once, nJ, "
                                  "above 1 fJ (less than one bit of the smallest array) so "
                                  "E_ref_cycle / T_std cannot round to 0 mW")
    p_leak_mw: float = field(0.95, number_range(1e-9, 1e6),
                             "P_leak: array leakage power, mW, above 1 pW so the leakage "
                             "ratio P_leak / (E_ref_cycle / T_std) stays above 0")
    live_block_rows: int = field(
        1, power_of_two(1, MAX_ROWS),
        "rows per liveness bit: a class's rows are tracked in blocks of this many consecutive "
        "rows, and a block is live (all its rows refreshed) once any word in it is written; 1 "
        "tracks every row. A power of two in [1, 16384]. Decision: a trade of controller state "
        "(one flip-flop per block and class, clocked at the controller clock) for refreshes of "
        "rows of a live block not yet written (none once a block is filled)")
    retention: dict = field(DEFAULT_RETENTION, _retention_check,
                            "BER vs µs since restore, per bank")

    def __post_init__(self):
        if self.t_rel_us < self.t_std_us:
            raise ConfigError(f"t_rel_us: {self.t_rel_us} — t_rel_us must be at least t_std_us "
                              f"({self.t_std_us})")
        rows = self.rows(self.total_words)
        if rows > MAX_ROWS:
            raise ConfigError(
                f"row_words: {self.row_words} — kv_words + qo_words = {self.total_words} words "
                f"make {rows} rows of {self.row_words}; at most {MAX_ROWS} rows are allowed "
                f"(the controller keeps a liveness bit per row), so row_words must be at least "
                f"{-(-self.total_words // MAX_ROWS)}")
        for key in ("t_std_us", "t_rel_us"):
            # More cycles than rows: a fully live bank must leave some cycles for accesses.
            if self.interval_cycles(getattr(self, key)) <= rows:
                raise ConfigError(
                    f"{key}: {getattr(self, key)} µs at {self.clock_mhz} MHz is "
                    f"{self.interval_cycles(getattr(self, key))} cycles; it must be more than "
                    f"the {rows} rows it refreshes one per cycle")

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
    def live_blocks(self) -> dict[str, int]:
        """Liveness bits per class: KV blocks over the relaxed bank's rows (= the first standard
        rows), QO blocks over the standard rows from the first that can hold a QO word
        (``kv_words // row_words``) on; 0 for a class with no words."""
        rows, b = self.bank_rows, self.live_block_rows
        qo_rows = rows["standard"] - self.kv_words // self.row_words if self.qo_words else 0
        return {"kv": -(-rows["relaxed"] // b), "qo": -(-qo_rows // b)}

    @property
    def addr_width(self) -> int:
        return max(1, ceil_log2(self.total_words))

    @property
    def hardware(self) -> dict:
        """The fields that fix the generated controller and the clock it is timed at. Configs
        equal here synthesise to the same netlist, whatever their power figures
        (``e_ref_cycle_nj``, ``p_leak_mw``), ``qo_life_us`` or retention table."""
        return {key: getattr(self, key) for key in HARDWARE_FIELDS}
