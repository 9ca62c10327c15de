"""eDRAM PIM configuration (paper: RED-style retention-aware eDRAM PIM framework).

The macro is ``banks x subarrays`` subarrays of ``rows x cols`` 2T gain cells. Decision (the
paper is silent): every subarray activates the same row index in lockstep, so the macro is one
logical array of ``rows`` rows by ``width = cols * subarrays * banks`` columns; a row
activation, write or refresh acts on all of them. ``macro_table`` has one entry per
pull-down-voltage (VPD) level: index 0 is VPD at VSS (largest read-bitline swing, longest
retention, highest access energy). The contract between the scheduler, the RTL and the
testbench is the docstring of :mod:`memwall.golden.pim.macro`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from memwall.config import ConfigError, UnitConfig, field, int_range, number_range, one_of

__all__ = ["PimConfig", "LOGIC_TERMS", "DEFAULT_MACRO_TABLE", "DEFAULT_TABLE_SOURCE",
           "MACRO_TABLE_KEYS", "ORDERS", "PROCESSING", "OPERATIONS", "MAX_LEVELS",
           "MAX_INPUT_REGISTER_BITS"]

PROCESSING = ("bit_serial", "bit_parallel")
OPERATIONS = ("row_wise", "dot_product")
#: Loop orders, outer to inner; the index is the descriptor's ``order`` code.
ORDERS = ("mkn", "mnk", "kmn", "knm", "nmk", "nkm")
#: Most VPD levels (the level index is a 3-bit port).
MAX_LEVELS = 8
#: Most bits of the controller's input register file (``input_beats`` beats of a row's fields
#: of ``input_bits``): generation memory grows with them, about 1.1 KiB a bit (measured here:
#: 1,835,008 bits, 2,152 MiB and 77 s; 5,505,024 bits, 5,956 MiB and 232 s). ``make ranges``
#: generates the corners at this bound (reports/config_ranges.md).
MAX_INPUT_REGISTER_BITS = 1 << 21

#: The logic-energy terms (golden/pim/logic.py): the fit's per-event energies (pJ) and the
#: leakage (mW); an override of ``logic_energy`` gives exactly these.
LOGIC_TERMS = ("e_cycle_pj", "e_one_pj", "e_toggle_pj", "e_write_pj", "leakage_mw")
#: Keys of one macro-table entry (one VPD level).
MACRO_TABLE_KEYS = ("name", "vpd_mv", "rbl_swing_mv", "vref_mv", "retention_us", "e_access_pj",
                    "e_sense_pj")

DEFAULT_TABLE_SOURCE = (
    "memwall first-order 2T gain-cell model, not silicon data (the paper's HSPICE tables are "
    "unpublished). Retention at VPD = VSS: 45 us, SHIELD's standard refresh interval T_std for "
    "a 3T gain-cell eDRAM (../shared/papers/shield-segmented-edram-refresh.txt, section IV-B; "
    "SHIELD states no bit-error rate at it); published GC-eDRAM macros retain 16 to 77 us "
    "(memwall.families.pim.sources). Other levels in proportion to the read-bitline swing "
    "(the storage node may leak until the sensing margin closes). Access energy "
    "C_RBL * VDD * swing with C_RBL = 10 fF per column (unsourced) over 64 columns at VDD = "
    "0.8 V; sense-amp energy 2 fJ at a 400 mV margin (unsourced), inversely proportional to "
    "the swing. VREF is the midpoint of the '1' and '0' RBL levels (RBL precharged to VDD).")


def _level(name: str, vpd: float, swing: float) -> dict:
    vdd = 800.0
    return {"name": name, "vpd_mv": vpd, "rbl_swing_mv": swing, "vref_mv": vdd - swing / 2,
            "retention_us": 45.0 * swing / 400.0,
            "e_access_pj": 64 * 10e-15 * 0.8 * (swing / 1000.0) * 1e12,
            "e_sense_pj": 0.002 * 400.0 / swing}


#: VSS and three raised pull-down voltages; see :data:`DEFAULT_TABLE_SOURCE`.
DEFAULT_MACRO_TABLE = [_level("vss", 0.0, 400.0), _level("vpd100", 100.0, 300.0),
                       _level("vpd200", 200.0, 200.0), _level("vpd300", 300.0, 100.0)]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _table_check(value):
    allowed = (f"must be a list of 1..{MAX_LEVELS} VPD levels, each a mapping with keys "
               f"{', '.join(MACRO_TABLE_KEYS)} (name a string; voltages in mV >= 0; "
               "retention_us and energies in pJ > 0), VPD rising and retention falling level "
               "by level, and vref_mv within the level's swing below VDD")
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_LEVELS:
        return allowed
    last = None
    for n, level in enumerate(value):
        if not isinstance(level, dict) or set(level) != set(MACRO_TABLE_KEYS):
            return f"level {n}: {allowed}"
        if not isinstance(level["name"], str) or not level["name"]:
            return f"level {n}: name must be a non-empty string"
        for key in MACRO_TABLE_KEYS[1:]:
            v = level[key]
            positive = key in ("retention_us", "e_access_pj", "e_sense_pj", "rbl_swing_mv")
            if not _number(v) or v < 0 or (positive and v <= 0) or v > 1e9:
                return f"level {n} ({level['name']}): {key} {v!r} — {key} must be a number " \
                       f"{'> 0' if positive else '>= 0'} and at most 1e9"
        if last is not None and (level["vpd_mv"] <= last["vpd_mv"]
                                 or level["retention_us"] > last["retention_us"]):
            return (f"level {n} ({level['name']}): VPD must rise and retention must not grow "
                    f"from level to level (index 0 is VPD at VSS)")
        last = level
    return None


def _logic_check(value):
    if value == "calibrated":
        return None
    allowed = (f'must be "calibrated" or a mapping of exactly {", ".join(LOGIC_TERMS)} '
               "(energies in pJ, leakage in mW; numbers >= 0 and at most 1e9)")
    if not isinstance(value, dict) or set(value) != set(LOGIC_TERMS):
        return allowed
    for key, v in value.items():
        if not _number(v) or not 0 <= v <= 1e9:
            return f"{key} {v!r}: {allowed}"
    return None


def _bool(value):
    return None if isinstance(value, bool) else "must be true or false"


@dataclass(frozen=True)
class PimConfig(UnitConfig):
    """An eDRAM PIM macro, its controller and processing unit, and the energy tables.

    Every allowed value generates within 4 GiB and 5 minutes (``make ranges``,
    reports/config_ranges.md): the PU holds ``fields`` accumulators of ``acc_bits`` and its
    result port is ``fields * acc_bits`` bits, the core's input ports stay within Amaranth's
    65,536-bit netlist limit (the cross-field checks in ``__post_init__``), and the controller
    keeps a restore timestamp and a live bit per row.
    """

    unit_name: ClassVar[str] = "pim"
    name: str = "pim"
    rows: int = field(64, int_range(4, 1024), "R: rows per subarray")
    cols: int = field(64, int_range(8, 1024), "columns per subarray")
    subarrays: int = field(1, int_range(1, 64), "subarrays per bank (activated in lockstep)")
    banks: int = field(1, int_range(1, 64), "banks (activated in lockstep)")
    processing: str = field("bit_parallel", one_of(*PROCESSING),
                            "bit_parallel: a weight word per field, one input bit broadcast to "
                            "its bits; bit_serial: one weight bit-plane per row, a column per "
                            "weight")
    operation: str = field("row_wise", one_of(*OPERATIONS),
                           "row_wise: a row's fields are outputs n (one accumulator each); "
                           "dot_product: a row's fields are reduction indices k (summed)")
    weight_bits: int = field(8, int_range(2, 8), "wb: weight precision in bits")
    input_bits: int = field(8, int_range(2, 8), "ib: input precision in bits")
    weight_signed: bool = field(True, _bool, "weights are two's complement")
    input_signed: bool = field(True, _bool, "inputs are two's complement")
    input_beats: int = field(4, int_range(1, 256),
                             "depth of the controller's input register file, in beats of "
                             "`fields` words: a tile's k range must fit, ceil(Tk / fields) <= "
                             "input_beats")
    acc_bits: int = field(32, int_range(8, 48), "accumulator and result width")
    max_dim: int = field(1 << 16, int_range(1, 1 << 20), "largest M, K or N a descriptor takes")
    buffer_kib: float = field(256.0, number_range(0.0, 1 << 20), "unified buffer capacity, KiB")
    buffer_row_words: int = field(64, int_range(1, 1 << 16),
                                  "words per buffer row (the buffer's refresh granularity)")
    clock_mhz: float = field(500.0, number_range(0.001, 10000), "clock, MHz")
    refresh_margin_cycles: int = field(4, int_range(0, 1 << 20),
                                       "a row is refreshed at age retention - margin cycles")
    macro_table: list = field(DEFAULT_MACRO_TABLE, _table_check,
                              "one entry per VPD level (index 0 = VSS)")
    table_source: str = field(DEFAULT_TABLE_SOURCE, lambda v: None if isinstance(v, str) and v
                              else "must be a non-empty string", "where macro_table comes from")
    e_write_pj: float = field(0.06, number_range(0.0, 1e9),
                              "one row write of one subarray, pJ (VPD-independent write path)")
    logic_energy: object = field(
        "calibrated", _logic_check,
        "the controller's and PU's energy: \"calibrated\" (fitted from this project's "
        "synthesis, golden/pim/logic.py) or an override mapping of "
        + ", ".join(LOGIC_TERMS))
    dram_e_bit_pj: float = field(
        20.0, number_range(0.0, 1e9),
        "off-macro (DRAM) read energy per weight bit fetched for a macro row write, pJ; "
        "default: 1.3 nJ per 64-bit DRAM access, the low end of Horowitz, 'Computing's energy "
        "problem (and what we can do about it)', ISSCC 2014, 45 nm (its range: 1.3-2.6 nJ)")
    logic_clock_gating: bool = field(
        True, _bool, "charge the calibrated logic energy with the enable registers clock-gated "
        "(the ICGs a place-and-route hand-off inserts; the flow's estimate) or without")
    buffer_e_read_pj: float = field(0.5, number_range(0.0, 1e9), "buffer read, pJ per word")
    buffer_e_write_pj: float = field(0.6, number_range(0.0, 1e9), "buffer write, pJ per word")
    buffer_e_refresh_pj: float = field(4.0, number_range(0.0, 1e9),
                                       "buffer refresh, pJ per buffer row")
    buffer_retention_us: float = field(45.0, number_range(0.0, 1e6),
                                       "buffer refresh interval, µs")
    sram_e_access_pj: float = field(0.3, number_range(0.0, 1e9),
                                    "SRAM baseline: one row activation of one subarray, pJ")
    sram_e_sense_pj: float = field(0.002, number_range(0.0, 1e9),
                                   "SRAM baseline: one sense amp per activation, pJ")
    sram_e_write_pj: float = field(0.08, number_range(0.0, 1e9),
                                   "SRAM baseline: one row write of one subarray, pJ")
    sram_source: str = field(
        "memwall first-order model: a 6T bit-serial array as in Neural Cache (Eckert et al., "
        "ISCA 2018) with full-swing bitlines, C_BL = 10 fF per column over 64 columns at 0.8 V "
        "(C * V^2 / 2 per bitline pair, x1.5 for the differential pair and precharge)",
        lambda v: None if isinstance(v, str) and v else "must be a non-empty string",
        "where the SRAM baseline figures come from")
    input_bit_density: float = field(0.5, number_range(0.0, 1.0),
                                     "fraction of 1 input bits the scheduler assumes without data")

    def __post_init__(self):
        if self.buffer_bits < self.acc_bits:
            raise ConfigError(f"buffer_kib: {self.buffer_kib} — holds {self.buffer_bits} bits; "
                              f"the buffer must hold at least one {self.acc_bits}-bit partial "
                              f"sum ({self.acc_bits / 8192:.6g} KiB)")
        if self.fields < 1:
            raise ConfigError(f"cols: {self.cols} — the row ({self.width} columns) must hold at "
                              f"least one {self.field_bits}-bit field")
        words = self.fields if self.row_wise else 1      # results per beat
        if words * self.acc_bits >= 1 << 15:
            raise ConfigError(f"cols/subarrays/banks: a row-wise row of {self.fields} fields of "
                              f"{self.acc_bits}-bit results is {words * self.acc_bits} "
                              "bits; keep it under 32768 (the result and partial-sum ports)")
        # The core's inputs together (weights and macro read data: a row each; inputs; partial
        # sums; a descriptor and controls, under 256 bits) must stay within Amaranth's netlist.
        ports = 2 * self.width + self.fields * self.input_bits + words * self.acc_bits + 256
        if ports > 1 << 16:
            raise ConfigError(f"cols/subarrays/banks: rows of {self.width} columns (cols x "
                              f"subarrays x banks), {self.fields} fields of inputs and {words} "
                              f"{self.acc_bits}-bit partial sums take {ports} bits of the "
                              "core's input ports; at most 65536 (a module's input ports "
                              "together, in Amaranth's netlist)")
        if self.input_register_bits > MAX_INPUT_REGISTER_BITS:
            beats = MAX_INPUT_REGISTER_BITS // (self.fields * self.input_bits)
            raise ConfigError(f"input_beats: {self.input_beats} — beats of {self.fields} "
                              f"{self.input_bits}-bit inputs are {self.input_register_bits:,} "
                              f"register bits; at most {MAX_INPUT_REGISTER_BITS:,} (2**21), as "
                              f"generation memory grows with them: at most {beats} beats here")
        worst = (1 << (self.input_bits - self.input_signed)) \
            * (1 << (self.weight_bits - self.weight_signed)) * self.max_dim
        if worst >= 1 << (self.acc_bits - 1):
            raise ConfigError(f"acc_bits: {self.acc_bits} — a dot product of max_dim = "
                              f"{self.max_dim} products of {self.input_bits}x{self.weight_bits}"
                              f"-bit operands needs up to {worst.bit_length() + 1} bits; raise "
                              "acc_bits or lower max_dim")
        for n, level in enumerate(self.macro_table):
            interval = self.refresh_interval(n)
            if interval <= self.rows:
                raise ConfigError(
                    f"macro_table: level {n} ({level['name']}): retention "
                    f"{level['retention_us']} µs at {self.clock_mhz} MHz less "
                    f"refresh_margin_cycles {self.refresh_margin_cycles} is {interval} cycles; "
                    f"it must exceed rows ({self.rows}) so a fully live tile can be refreshed")
        if self.buffer_interval < 1:
            raise ConfigError(f"buffer_retention_us: {self.buffer_retention_us} µs is less than "
                              f"one cycle at {self.clock_mhz} MHz")

    # -- derived values --------------------------------------------------------------------------
    @property
    def width(self) -> int:
        """W: columns of the logical macro row (all subarrays in lockstep)."""
        return self.cols * self.subarrays * self.banks

    @property
    def input_register_bits(self) -> int:
        """Bits of the controller's input register file: ``input_beats`` beats of a row's
        fields."""
        return self.input_beats * self.fields * self.input_bits

    @property
    def subarray_count(self) -> int:
        return self.subarrays * self.banks

    @property
    def bit_serial(self) -> bool:
        return self.processing == "bit_serial"

    @property
    def row_wise(self) -> bool:
        return self.operation == "row_wise"

    @property
    def planes(self) -> int:
        """P: rows per weight field position (bit_serial: one per weight bit)."""
        return self.weight_bits if self.bit_serial else 1

    @property
    def field_bits(self) -> int:
        return 1 if self.bit_serial else self.weight_bits

    @property
    def fields(self) -> int:
        """F: fields per row."""
        return self.width // self.field_bits

    @property
    def levels(self) -> int:
        return len(self.macro_table)

    def retention_cycles(self, level: int) -> int:
        return int(math.floor(self.macro_table[level]["retention_us"] * self.clock_mhz))

    def refresh_interval(self, level: int) -> int:
        """I_v: the age (cycles) at which a live row is refreshed at VPD level ``level``."""
        return self.retention_cycles(level) - self.refresh_margin_cycles

    @property
    def buffer_interval(self) -> int:
        """I_B: the buffer's refresh interval in cycles."""
        return int(math.floor(self.buffer_retention_us * self.clock_mhz))

    @property
    def buffer_bits(self) -> int:
        return int(self.buffer_kib * 8192)

    def e_refresh_pj(self, level: int) -> float:
        """One row refresh of one subarray: a read with every sense amp on, and a write-back."""
        entry = self.macro_table[level]
        return entry["e_access_pj"] + self.cols * entry["e_sense_pj"] + self.e_write_pj
