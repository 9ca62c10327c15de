"""KVNAND configuration (paper: kvnand-in-flash-kv-cache).

One plane's logic: the PE (``n_fmac`` FMACs on the page register, :mod:`.pe`), the KV
write-combine buffer (:mod:`.kvbuf`) and the BCH encoder that protects KV pages before they are
programmed (:mod:`.bch`). The number formats and
the PE's arithmetic are the contract of :mod:`memwall.golden.kvnand.pe`; the flash and system
parameters the design-space model uses are :mod:`memwall.golden.kvnand.model`'s: it reads the
PE's size, format, page and clock from here, and the flash die, ECC rate, channels and KVNAND-D's
SoC buffer from the fields after ``clock_mhz`` (Table I's values by default; they size no
generated logic: :meth:`memwall.golden.kvnand.systems.Params.from_config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memwall.config import (
    ConfigError,
    UnitConfig,
    field,
    int_range,
    number_range,
    one_of,
    power_of_two,
)

__all__ = ["KvnandConfig", "BCH_WIDTHS", "MAX_KV_SLOTS", "MAX_MEMORY_BITS", "MAX_STREAM_BITS",
           "PAGE_NUMBER_BITS", "FMTS", "MODES", "KINDS", "MAPPINGS", "POLICIES", "page_kind"]

#: Number formats of the plane PE (pages and inputs) and its operations.
FMTS = ("bf16", "w8a8", "w4a16")
MODES = ("gemv", "logit", "attend")
#: Element kinds and their bits.
KINDS = {"bf16": 16, "int8": 8, "int4": 4}
_PAGE = {("bf16", "gemv"): "bf16", ("w8a8", "gemv"): "int8", ("w4a16", "gemv"): "int4",
         ("bf16", "kv"): "bf16", ("w8a8", "kv"): "int8", ("w4a16", "kv"): "bf16"}
#: How KV slices map to flash pages, and which buffer slot is flushed first
#: (:mod:`memwall.golden.kvnand.kvbuf`).
MAPPINGS = ("page", "naive")
POLICIES = ("fullest", "lru")


def _count(lo: int, hi: int):
    """A count only the design-space model uses (channels, planes, blocks, pages): it sizes no
    generated logic, so ``make ranges`` has no generation corner for it (the shared ranges test
    takes integer ``int_range`` fields for generated sizes)."""
    def check(value):
        if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
            return None
        return f"must be a whole number from {lo} to {hi}"
    return check


def page_kind(fmt: str, mode: str) -> str:
    """The element kind of a ``mode`` page under ``fmt`` (``bf16``, ``int8`` or ``int4``)."""
    for name, value, allowed in (("fmt", fmt, FMTS), ("mode", mode, MODES)):
        if value not in allowed:
            raise ValueError(f"{name} {value!r}; allowed: {', '.join(map(str, allowed))}")
    return _PAGE[fmt, "gemv" if mode == "gemv" else "kv"]

#: Bits a cycle the BCH encoder can take (the issue's parallel LFSR widths).
BCH_WIDTHS = (1, 8, 32, 64)
#: Most open page slots of the KV write-combine buffer (kv_buffer_bytes / page_bytes):
#: generation time grows steeply with them (measured here: 16 slots of 1 KiB pages 14 s and
#: 0.3 GB, 16 slots of 4 KiB 17 s and 0.5 GB; 32 slots ran past 120 s, 32 of 4 KiB past 280 s).
MAX_KV_SLOTS = 16
#: Bits of the page number the KV write buffer keeps per stream, in a memory of
#: ``2**kv_stream_bits`` entries (the buffer's ``page_bits``).
PAGE_NUMBER_BITS = 16
#: Widest stream id: its page-number memory (2**19 x 16 bits) is half of MAX_MEMORY_BITS
#: (measured here: 2**18 entries 12 s and 0.6 GB; 2**24 entries passed 6 GB).
MAX_STREAM_BITS = 19
#: Most memory bits of the plane's logic (:attr:`KvnandConfig.memory_bits`): generation time
#: and memory grow with them (measured here: the input-vector memory at 2**24 bits alone, 103 s
#: and 2.2 GB; the accumulators at 2**23 bits, 33 s and 1.2 GB). ``make ranges`` generates
#: corners at this bound (reports/config_ranges.md).
MAX_MEMORY_BITS = 1 << 24


@dataclass(frozen=True)
class KvnandConfig(UnitConfig):
    """One KVNAND plane's logic.

    Every allowed value generates within 4 GiB and 5 minutes: the ranges below and the
    cross-field checks in ``__post_init__`` (among them :data:`MAX_KV_SLOTS` and
    :data:`MAX_MEMORY_BITS`) keep
    ``memwall gen`` within them (``make ranges``, reports/config_ranges.md).
    """

    unit_name: ClassVar[str] = "kvnand"
    name: str = "kvnand"
    n_fmac: int = field(16, power_of_two(1, 64), "FMACs of the plane PE")
    fmt: str = field("bf16", one_of(*FMTS),
                     "number format: bf16, w8a8 (INT8 weights and KV, group scales, INT8 "
                     "activations) or w4a16 (INT4 weights with group scales, BF16 KV and "
                     "activations)")
    page_bytes: int = field(4096, power_of_two(64, 16384), "data bytes of a flash page")
    group: int = field(128, power_of_two(1, 1 << 14),
                       "elements per scale of a scaled (integer) page; at least n_fmac")
    max_heads: int = field(8, power_of_two(1, 64),
                           "most query heads G of a LOGIT or ATTEND command (GQA group)")
    max_d: int = field(128, power_of_two(1, 1 << 12),
                       "largest head slice d of a LOGIT or ATTEND command")
    vec_words: int = field(256, int_range(2, 1 << 14),
                           "input-vector memory words (n_fmac lanes of 16 bits)")
    mul_stages: int = field(1, int_range(0, 3), "pipeline stages of each FP32 multiplier")
    bch_bits: int = field(64, one_of(*BCH_WIDTHS), "BCH encoder bits per cycle")
    kv_buffer_bytes: int = field(8192, power_of_two(64, MAX_KV_SLOTS * 16384),
                                 "KV write-combine buffer bytes (whole pages: open page slots)")
    kv_slice_bytes: int = field(256, power_of_two(1, 1 << 14),
                                "bytes of one token's K or V slice of a stream (a head: 128 "
                                "BF16 values)")
    kv_word_bytes: int = field(16, power_of_two(1, 256), "KV buffer stream bytes a beat")
    kv_stream_bits: int = field(11, int_range(1, MAX_STREAM_BITS),
                                "bits of a KV stream id (layer, head group, K or V)")
    kv_mapping: str = field("page", one_of(*MAPPINGS),
                            "page: one open page per stream (page-level mapping); naive: "
                            "generation order, pages mix streams")
    kv_policy: str = field("fullest", one_of(*POLICIES),
                           "slot to program early when a stream has none: the fullest, or "
                           "the least recently written")
    clock_mhz: float = field(400.0, number_range(0.001, 10000), "clock, MHz")
    # The flash and system around the plane, for the design-space model only (Table I).
    t_read_us: float = field(4.0, number_range(0, 10000),
                             "page read time tR, µs (Table I: 4 µs)")
    t_prog_us: float = field(75.0, number_range(0, 100000),
                             "page program time tPROG, µs (Table I: 75 µs)")
    planes_per_die: int = field(32, _count(1, 1024), "planes of an IFC die (Table I: 32)")
    blocks_per_plane: int = field(177, _count(1, 1 << 16),
                                  "blocks of a plane (Table I: 177)")
    pages_per_block: int = field(768, _count(1, 1 << 16),
                                 "pages of a block (Table I: 768)")
    ecc_gbps: float = field(14.6, number_range(0, 10000),
                            "BCH(9088,8192) decoder rate per plane, Gb/s (Table I: 14.6)")
    channels: int = field(8, _count(1, 64),
                          "flash channels of the SoC; Base-1 and Base-2 have one IFC die on "
                          "each (Table I and §V-A: 8)")
    onfi_gbps: float = field(4.8, number_range(0, 1000),
                             "ONFI bandwidth per channel, GB/s (Table I: ONFI 6.0, 4.8 GB/s)")
    soc_kv_buffer_kib: int = field(5120, _count(0, 1 << 20),
                                   "KVNAND-D's SoC KV buffer, KiB (Table I: 5 MB SRAM, read as "
                                   "MiB)")

    def __post_init__(self):
        if self.max_heads > self.n_fmac:
            raise ConfigError(f"max_heads: {self.max_heads} — at most n_fmac ({self.n_fmac}): "
                              "each head needs a lane column")
        if self.max_d < self.n_fmac:
            raise ConfigError(f"max_d: {self.max_d} — at least n_fmac ({self.n_fmac}): a "
                              "LOGIT token's heads leave the PE one a cycle")
        if self.kv_buffer_bytes < self.page_bytes:
            raise ConfigError(f"kv_buffer_bytes: {self.kv_buffer_bytes} — at least a page "
                              f"({self.page_bytes})")
        if self.kv_slots > MAX_KV_SLOTS:
            raise ConfigError(f"kv_buffer_bytes: {self.kv_buffer_bytes} — {self.kv_slots} open "
                              f"page slots of {self.page_bytes} bytes; at most {MAX_KV_SLOTS} "
                              f"(at most {MAX_KV_SLOTS * self.page_bytes} bytes here), as "
                              "generation time grows steeply with the slots")
        if self.kv_slice_bytes > self.page_bytes or self.kv_word_bytes > self.kv_slice_bytes:
            raise ConfigError(f"kv_slice_bytes: {self.kv_slice_bytes}, kv_word_bytes: "
                              f"{self.kv_word_bytes} — a word within a slice within a page "
                              f"({self.page_bytes})")
        if self.memory_bits > MAX_MEMORY_BITS:
            raise ConfigError(f"vec_words/max_d/max_heads/n_fmac/kv_buffer_bytes/kv_stream_bits: "
                              f"the plane's memories hold {self.memory_bits:,} bits; at most "
                              f"{MAX_MEMORY_BITS:,} (2**24), as generation time and memory "
                              "grow with them")
        if any(page_kind(self.fmt, mode) != "bf16" for mode in MODES):
            if self.group < self.n_fmac:
                raise ConfigError(f"group: {self.group} — at least n_fmac ({self.n_fmac}): "
                                  "the elements of one cycle share a scale")
            if self.group > self.page_elements(self.smallest_kind):
                raise ConfigError(f"group: {self.group} — more elements than a page holds")

    # -- derived values --------------------------------------------------------------------------
    @property
    def kv_slots(self) -> int:
        """Open pages the KV write-combine buffer holds."""
        return self.kv_buffer_bytes // self.page_bytes

    @property
    def memory_bits(self) -> int:
        """Bits of the plane's memories: input vectors, accumulators, scales (a scaled page
        kind only), the KV write-combine buffer and its page number of each stream."""
        scales = 16 * self.scale_words if self.scaled else 0
        return (16 * self.n_fmac * self.vec_words + 32 * self.n_fmac * self.acc_words + scales
                + 8 * self.kv_buffer_bytes + PAGE_NUMBER_BITS * (1 << self.kv_stream_bits))

    @property
    def beat_bits(self) -> int:
        """Bits of a page-stream beat: ``n_fmac`` BF16 elements (more of a narrower kind)."""
        return 16 * self.n_fmac

    @property
    def kinds(self) -> tuple[str, ...]:
        """The page element kinds this config's PE decodes (GEMV's, then KV's if other)."""
        return tuple(dict.fromkeys(page_kind(self.fmt, mode) for mode in MODES))

    @property
    def scaled(self) -> bool:
        """An integer page kind is among them: the PE has its dequantising multipliers."""
        return any(kind != "bf16" for kind in self.kinds)

    @property
    def smallest_kind(self) -> str:
        return min(self.kinds, key=lambda k: KINDS[k])

    def page_elements(self, kind: str) -> int:
        return 8 * self.page_bytes // KINDS[kind]

    @property
    def scale_words(self) -> int:
        """Scale memory entries: one per group of the page with the most elements."""
        return max(1, self.page_elements(self.smallest_kind) // self.group)

    @property
    def acc_words(self) -> int:
        """Accumulator words (``n_fmac`` FP32 lanes): ATTEND's ``d / J`` at the largest d and
        G (``J = n_fmac / G``)."""
        return max(1, self.max_d * self.max_heads // self.n_fmac)
