"""rDXE configuration (paper: rdxe-edge-slm-decoder-vrc-iwur).

A DXE has ``dxts`` tiles; a tile (DXT) has ``vacs`` VACs of ``lanes`` INT8 multipliers, each
with a weight memory and a KV cache of words of ``lanes`` bytes, a vector engine and the
tile's buffers. The generated top is one GQA group: ``gqa_group`` tiles in lockstep, the first
owning the KV caches and the others reading them over VLINK (1: a lone tile). The ring model
(``memwall model rdxe``) scales a DXE's tile figures to ``dxes`` DXEs.

KV cache layouts (K row by row; V column by column for iWuR, row by row for the baseline):
:mod:`memwall.golden.rdxe.layout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memwall.config import ConfigError, UnitConfig, field, int_range, number_range, power_of_two

__all__ = ["RdxeConfig", "MAX_TOKENS", "LAYOUTS", "WEIGHT_SCALES", "KV_SCALES",
           "peak_ops_per_cycle", "v_base", "kv_words_needed"]

#: Most tokens of one attention: INT32 holds P.V's ``sum e_t v_t`` over ``t`` tokens, which lies in
#: ``-2**12 * 128 * t .. 2**12 * 127 * t`` (``e_t <= 2**12``, ``v_t`` any INT8), for ``t <= 4096``
#: (the lower end is then ``-2**31``, INT32's least value).
MAX_TOKENS = 4096
#: KV cache layouts (:mod:`memwall.golden.rdxe.layout`).
LAYOUTS = ("iwur", "baseline")
#: Host-side INT8 scale granularities (:mod:`memwall.golden.rdxe.quantise`), the per-slice one
#: first (the default): RMSNorm-GEMV's weights, attention's k and v.
WEIGHT_SCALES = ("channel", "tensor")
KV_SCALES = ("head", "tensor")


def peak_ops_per_cycle(dxts: int, vacs: int, lanes: int) -> int:
    """Multiply-accumulates count as 2 ops."""
    return 2 * dxts * vacs * lanes


def v_base(vacs: int, lanes: int, max_tokens: int, max_head_dim: int) -> int:
    """First word of the V region: after a K region of ``max_tokens`` x ``max_head_dim``."""
    return -(-max_tokens // vacs) * (max_head_dim // lanes)


def kv_words_needed(vacs: int, lanes: int, max_tokens: int, max_head_dim: int,
                    layout: str) -> int:
    """KV cache words per VAC for one head of ``max_tokens`` tokens."""
    v_words = (max_head_dim // vacs) * (max_tokens // lanes) if layout == "iwur" \
        else max_tokens
    return v_base(vacs, lanes, max_tokens, max_head_dim) + v_words


#: Most memory bits a tile group may hold (weight memories of every tile, the first tile's KV
#: caches, every tile's buffers): generation time and memory grow with them (measured: 2**28
#: bits, 16 VACs of 16 lanes with 65,536 weight and KV words, 66 s and 1.1 GB peak RSS; every
#: field at its maximum, 1.9e10 bits, past 600 s and 4.4 GB). ``make ranges`` generates the
#: corner at this bound (reports/config_ranges.md).
MAX_MEMORY_BITS = 1 << 29


@dataclass(frozen=True)
class RdxeConfig(UnitConfig):
    """One rDXE tile group and the DXE it belongs to.

    Every allowed value generates within 4 GiB and 5 minutes: the ranges below and the
    cross-field checks in ``__post_init__`` (among them :data:`MAX_MEMORY_BITS`) keep
    ``memwall gen`` within them (``make ranges``, ``reports/config_ranges.md``).
    """

    unit_name: ClassVar[str] = "rdxe"
    name: str = "rdxe"
    dxts: int = field(8, int_range(1, 64), "DXTs per DXE (the peak and the cycle model)")
    vacs: int = field(16, power_of_two(4, 64),
                      "VACs per DXT (on one GBUS and HLINK chain; at least the GBUS's 4 bytes)")
    lanes: int = field(16, power_of_two(4, 64), "INT8 multipliers per VAC (bytes per word)")
    wmem_words: int = field(1024, int_range(2, 1 << 16), "weight memory words per VAC")
    kv_words: int = field(1024, int_range(2, 1 << 16), "KV cache words per VAC")
    abuf_words: int = field(64, int_range(2, 1 << 12),
                            "activation-reuse buffer words per DXT (operand vectors)")
    fbuf_words: int = field(256, int_range(2, 1 << 12),
                            "feature buffer words per DXT (the sequential mode's normalised "
                            "vector; unused by the fused mode)")
    max_tokens: int = field(256, int_range(2, MAX_TOKENS),
                            "most tokens of one attention (score buffer entries)")
    max_head_dim: int = field(64, int_range(2, 1 << 10), "largest head dimension dh")
    gqa_group: int = field(1, int_range(1, 8),
                           "DXTs of the generated top that share one KV cache over VLINK")
    sequential_baseline: bool = field(
        True, lambda v: None if isinstance(v, bool) else "must be true or false",
        "build the unfused VRC baseline (feature buffer and normalisation lanes), so that the "
        "sequential mode runs; false leaves only the fused VRC (compare their area)")
    clock_mhz: float = field(200.0, number_range(0.001, 10000), "clock, MHz")
    dxes: int = field(7, int_range(1, 64), "DXEs in the ring (the ring model)")

    def __post_init__(self):
        if self.max_tokens % self.lanes:
            raise ConfigError(f"max_tokens: {self.max_tokens} — must be a multiple of lanes "
                              f"({self.lanes}): V is stored lanes tokens to a word")
        if self.max_head_dim % self.lanes or self.max_head_dim % self.vacs:
            raise ConfigError(f"max_head_dim: {self.max_head_dim} — must be a multiple of lanes "
                              f"({self.lanes}) and of vacs ({self.vacs})")
        if self.max_head_dim > self.vacs * self.lanes:
            raise ConfigError(f"max_head_dim: {self.max_head_dim} — at most vacs * lanes "
                              f"({self.vacs * self.lanes}): the baseline V layout keeps a VAC's "
                              "share of a token in one word")
        need = max(kv_words_needed(self.vacs, self.lanes, self.max_tokens, self.max_head_dim,
                                   layout) for layout in LAYOUTS)
        if self.kv_words < need:
            raise ConfigError(f"kv_words: {self.kv_words} — one head of max_tokens "
                              f"({self.max_tokens}) x max_head_dim ({self.max_head_dim}) needs "
                              f"{need} words per VAC in the larger of the two layouts")
        if self.max_head_dim > self.abuf_words * self.lanes:
            raise ConfigError(f"abuf_words: {self.abuf_words} — must hold a query head "
                              f"(max_head_dim {self.max_head_dim} / lanes {self.lanes} words)")
        if self.memory_bits > MAX_MEMORY_BITS:
            raise ConfigError(f"wmem_words/kv_words/vacs/lanes/gqa_group: the tile group holds "
                              f"{self.memory_bits:,} memory bits; at most {MAX_MEMORY_BITS:,} "
                              "(2**29), as generation time and memory grow with them")

    @property
    def memory_bits(self) -> int:
        """Bits of every memory of the tile group: each tile's weight memories and buffers, the
        first tile's KV caches (the others read them over VLINK)."""
        word = self.lanes * 8
        return word * (self.vacs * (self.gqa_group * self.wmem_words + self.kv_words)
                       + self.gqa_group * (self.abuf_words + self.fbuf_words))

    # -- derived values --------------------------------------------------------------------------
    @property
    def peak_tops(self) -> float:
        """Peak INT8 throughput of a DXE, tera-operations per second (a MAC is 2 ops)."""
        return peak_ops_per_cycle(self.dxts, self.vacs, self.lanes) * self.clock_mhz * 1e6 / 1e12

    @property
    def score_bits(self) -> int:
        return 16
