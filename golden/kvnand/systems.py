"""KVNAND design space: hardware parameters, the four systems, model shapes, formats and the
paper's cost arithmetic. The latency/energy equations are in :mod:`memwall.golden.kvnand.model`.

Parameters (:class:`Params`) default to the paper's Table I and text; a field the paper does not
give is a *decision*, marked as such beside it. Units: seconds, joules, bytes, bytes/s.
:meth:`Params.from_config` reads the PE, page, buffers, flash die, ECC rate and channels from a
KVNAND config (``configs/kvnand_paper.yaml`` gives these defaults); a page smaller than one
BCH(9088,8192) codeword is one shortened codeword (:attr:`Params.sector_bytes`).

Systems (:class:`System`, one frozen object per configuration):

* ``base1``: Lincoln-like weight-only IFC. 8 LPDDR channels, each with one IFC die (weights,
  QKV/O/FFN GEMVs in flash) and one LPDDR5X device (KV cache, 8 GB/s, 7 pJ/bit); attention on
  the NPU.
* ``base2``: Base-1 with each DRAM replaced by a plain 128 Gb ONFI NAND die holding the KV cache
  (read through the flash interface into the NPU).
* ``kvnand_d`` (G1+G2): G1 IFC dies hold the weights, G2 IFC dies hold the KV cache and run
  Logit/Attend; new K/V wait in the 5 MiB SoC buffer and are then programmed into G2.
* ``kvnand_c`` (x): weights and KV cache on the same x IFC dies; 8 KB KV buffer per plane.

Two paper inconsistencies are parameters, each with its two readings named:

* :data:`DRAM_READINGS` (``dram_capacity``). Table I gives "LPDDR5X, 16Gb" and one DRAM on
  each of 8 channels: 8 x 16 Gb = 16 GiB. The OOM statements (§V-B: Base-1 OOMs at 100K for all
  models; "even the three GQA models ... exhaust the DRAM capacity at context lengths of 50K")
  need less than the BF16 KV cache of LLaMA3.1-8B at 50K (6.55 GB), while Fig. 12's 10K points
  (OPT-30B: 13.8 GB) and Fig. 16's 30K energy point (LLaMA2-7B: 15.7 GB) need at least 15.7 GB.
  No capacity satisfies both. ``table_per_channel`` = 16 GiB; ``oom_statements`` = 2 GiB (the
  table's 16 Gb read as the whole DRAM), which satisfies every OOM statement.
* :data:`BUFFER_READINGS` (``c_open_streams``/``d_open_streams``). Under the page-level mapping a
  KVNAND-C plane receives one K (or V) stream per layer, each needing an open page (4 KB) until
  it fills, but the plane's buffer is 8 KB: two open pages. ``paper_sufficient`` (None): every
  stream is buffered, as the paper assumes. ``buffer_limited``: ``8 KB // 4 KB = 2`` streams per
  plane (C) and ``5 MiB // 4 KiB = 1280`` streams (D's SoC buffer; D has ``2 L H_kv`` streams)
  are buffered; the rest are flushed every token with a partial-page program of one ECC sector
  (a BCH(9088, 8192) codeword, 1 KiB, 4 per page), costed in the model. Both readings for
  other buffers and pages: :func:`buffer_readings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = ["GiB", "Params", "System", "Model", "Format", "MODELS", "FORMATS", "DRAM_READINGS",
           "BUFFER_READINGS", "MOE_LAYOUTS", "HG_MODES", "G2_SCHEDULES", "ENERGY_SCOPES",
           "SYSTEM_GRAMMAR", "MAX_DIES", "base1", "base2", "kvnand_d", "kvnand_c",
           "buffer_readings", "BUFFER_KIB_GRAMMAR", "buffer_kib_readings", "parse_system", "cost"]

GiB = 2 ** 30

#: How a routed expert's shard sits inside a die (the paper: "TP, which shards the expert weights
#: across the IFC dies"; silent inside the die). ``striped``: every expert's rows over all planes,
#: so only the active experts' pages are read, at the full plane rate. ``expert_planes``: each
#: plane holds one expert's shard, so an active expert reads at 1/E of the planes' rate
#: (the time of reading all E experts). CALIBRATED default, see :class:`Params`.
MOE_LAYOUTS = ("striped", "expert_planes")

#: KVNAND-D's QKV/attention dataflow. ``pipelined``: head groups overlap G1's QKV generation
#: with G2's attention (§IV-C). ``serial``: the same per-HG attention after the whole QKV GEMV
#: (only the overlap removed). ``batched``: QKV, then one attention over all heads at once (no
#: head-group partitioning at all).
HG_MODES = ("pipelined", "serial", "batched")

#: How KVNAND-D's G2 takes the head groups in turn (``pipelined`` and ``serial``; the paper
#: does not say, §IV-C). ``chained`` (the model's reading, default): one group at a time
#: over all G2 planes, its K page stream, the scores' exchange, the NPU's softmax, the
#: probabilities' exchange, its V page stream and the outputs' exchange in series, so every
#: group pays its streams' pipeline fill and drain (t_ecc + t_mac each), its three exchanges
#: and its transfers. ``streamed`` (a counterfactual): G2's page pipeline runs on from one
#: group's pages to the next, so a group holds G2 only for its page reads (K and V pages per
#: plane x the stream period) and the rest of its chain overlaps the next group's reads.
G2_SCHEDULES = ("chained", "streamed")

#: What ``energy_J`` counts. ``paper_access`` (the paper's Fig. 16 reading, default): access
#: energy only (flash read and program, ONFI, DRAM, NPU); the logic die's power is reported
#: (``energy["logic"]``) but left out. ``with_logic``: the logic die's power
#: (``logic_power_per_plane`` for tR a page read) counted as well.
ENERGY_SCOPES = ("paper_access", "with_logic")


@dataclass(frozen=True)
class Params:
    """Hardware parameters. Table I unless marked *decision*; :meth:`from_config` takes them
    from a KVNAND config (the paper's values in ``configs/kvnand_paper.yaml``)."""
    # Flash array (SLC, Table I): 4 KB + 448 B pages, 768 pages/block, 177 blocks/plane.
    page_bytes: int = 4096
    spare_bytes: int = 448
    pages_per_block: int = 768
    blocks_per_plane: int = 177
    planes_per_die: int = 32
    t_read: float = 4e-6
    t_prog: float = 75e-6
    e_read_bit: float = 3e-12            # per physical bit sensed (data + spare; decision)
    e_prog_bit: float = 7.5e-12          # per physical bit programmed
    # On-die ECC: BCH(9088, 8192, t=64) decoder at 14.6 Gb/s per plane (a smaller page: one
    # shortened codeword, see ``sector_bytes``).
    ecc_n: int = 9088
    ecc_k: int = 8192
    ecc_rate: float = 14.6e9
    # Logic die: 16 FMACs per plane at 400 MHz (also on Base-1/2's IFC dies: decision, the
    # paper's "same flash configuration ... comparable compute"); 6.98 mW logic + 5.24 mW ECC
    # decoder per plane; KVNAND-C's 8 KB KV buffer per plane.
    fmacs_per_plane: int = 16
    f_mac: float = 400e6
    pe_mul_stages: int = 1               # the PE's FP32 multiplier depth (kvnand_pe.latency)
    pe_max_heads: int = 8                # most query heads of one PE command (config max_heads;
    #                                      at most fmacs_per_plane are used)
    logic_power_per_plane: float = 6.98e-3 + 5.24e-3
    c_kv_buffer: int = 8 * 1024
    # SoC: NPU 32 TOPS at 4.60 W; KVNAND-D's 5 MB SRAM KV buffer (read as MiB: decision).
    npu_ops: float = 32e12
    npu_power: float = 4.60
    d_kv_buffer: int = 5 * 2 ** 20
    # Interfaces: 8 channels; ONFI 6.0 4.8 GB/s and 4.9 pJ/bit per channel; LPDDR5X 8 GB/s
    # and 7.0 pJ/bit per channel.
    channels: int = 8
    onfi_bw: float = 4.8e9
    e_onfi_bit: float = 4.9e-12
    dram_bw: float = 8e9
    e_dram_bit: float = 7.0e-12
    dram_capacity: float = 16 * GiB      # Base-1, all channels: see DRAM_READINGS
    nand_die_bytes: int = 16 * GiB       # Base-2's plain NAND die: 128 Gb (Table I)
    # Decisions (the paper is silent):
    t_exchange: float = 1e-6             # fixed cost of one IFC <-> NPU exchange (command,
    #                                      status poll, NPU launch)
    npu_elem_ops: int = 5                # NPU ops per element of a vector op (norm, softmax...)
    c_open_streams: int | None = None    # see BUFFER_READINGS
    d_open_streams: int | None = None
    moe_layout: str = "expert_planes"    # CALIBRATED: see MOE_LAYOUTS and kvnand_model's notes
    hg_mode: str = "pipelined"           # KVNAND-D attention: see HG_MODES (Fig. 14 ablation)
    scale_group: int = 128               # integer pages' BF16 scale per 128 elements, stored
    #                                      in a companion region (memwall.golden.kvnand.pe)
    kv_mapping: str = "page"             # "page" (Fig. 11(c)) or "naive" (generation order)
    energy_scope: str = "paper_access"   # see ENERGY_SCOPES: the default is Fig. 16's reading
    g2_schedule: str = "chained"         # see G2_SCHEDULES (``streamed``: a counterfactual)

    def __post_init__(self):
        if self.moe_layout not in MOE_LAYOUTS:
            raise ValueError(f"moe_layout={self.moe_layout!r}: allowed {MOE_LAYOUTS}")
        if self.hg_mode not in HG_MODES:
            raise ValueError(f"hg_mode={self.hg_mode!r}: allowed {HG_MODES}")
        if self.energy_scope not in ENERGY_SCOPES:
            raise ValueError(f"energy_scope={self.energy_scope!r}: allowed {ENERGY_SCOPES}")
        if self.g2_schedule not in G2_SCHEDULES:
            raise ValueError(f"g2_schedule={self.g2_schedule!r}: allowed {G2_SCHEDULES}")
        if self.scale_group < 1:
            raise ValueError(f"scale_group={self.scale_group}: must be >= 1")
        if self.kv_mapping not in ("page", "naive"):
            raise ValueError(f"kv_mapping={self.kv_mapping!r}: allowed 'page', 'naive'")
        if self.page_bytes < 1 or self.page_bytes % self.sector_bytes:
            raise ValueError(f"page_bytes={self.page_bytes}: a whole number of "
                             f"{self.ecc_k // 8}-byte ECC codewords, or less than one")
        if 8 * self.spare_bytes < self.sectors_per_page * (self.ecc_n - self.ecc_k):
            raise ValueError(f"spare_bytes={self.spare_bytes}: at least the page's ECC parity "
                             f"({self.sectors_per_page * (self.ecc_n - self.ecc_k) // 8} bytes)")
        n, g = self.fmacs_per_plane, self.pe_max_heads
        if n < 1 or n & (n - 1) or g < 1 or g & (g - 1):
            raise ValueError(f"fmacs_per_plane={n}, pe_max_heads={g}: powers of two")
        for name in ("c_open_streams", "d_open_streams"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"{name}={v}: must be None (unbounded) or >= 0")

    @classmethod
    def from_config(cls, cfg, **changes) -> Params:
        """The parameters of a :class:`~memwall.families.kvnand.config.KvnandConfig`: its PE
        (``n_fmac``, ``mul_stages``, ``max_heads``, ``clock_mhz``, ``group``), page, KV
        buffers, flash die, ECC rate and channels; the rest (energies, NPU, DRAM, decisions)
        are the defaults above, ``changes`` override any field. The spare area holds the
        page's ECC parity (Table I's 448 B at 4 KB). The config's ``fmt`` is not a parameter:
        the model takes a format per query (the CLI's default is the config's)."""
        parity_bytes = (cls.ecc_n - cls.ecc_k) // 8
        codewords = max(1, cfg.page_bytes // (cls.ecc_k // 8))
        return cls(**{
            "page_bytes": cfg.page_bytes, "spare_bytes": codewords * parity_bytes,
            "pages_per_block": cfg.pages_per_block, "blocks_per_plane": cfg.blocks_per_plane,
            "planes_per_die": cfg.planes_per_die, "t_read": cfg.t_read_us / 1e6,
            "t_prog": cfg.t_prog_us / 1e6, "ecc_rate": cfg.ecc_gbps * 1e9,
            "fmacs_per_plane": cfg.n_fmac, "f_mac": cfg.clock_mhz * 1e6,
            "pe_mul_stages": cfg.mul_stages, "pe_max_heads": cfg.max_heads,
            "c_kv_buffer": cfg.kv_buffer_bytes, "d_kv_buffer": cfg.soc_kv_buffer_kib * 1024,
            "channels": cfg.channels, "onfi_bw": cfg.onfi_gbps * 1e9,
            "scale_group": cfg.group, **changes})

    @property
    def count_logic_energy(self) -> bool:
        """The former boolean's meaning (``energy_scope == "with_logic"``), kept for callers."""
        return self.energy_scope == "with_logic"

    @property
    def plane_bytes(self) -> int:          # 4.1484 Gib (Table I)
        return self.page_bytes * self.pages_per_block * self.blocks_per_plane

    @property
    def die_bytes(self) -> int:            # 132.75 Gib (Table I)
        return self.plane_bytes * self.planes_per_die

    @property
    def page_bits(self) -> int:            # physical page, data + spare
        return (self.page_bytes + self.spare_bytes) * 8

    @property
    def sector_bytes(self) -> int:
        """Data bytes of one ECC codeword, the unit of a partial-page program: BCH(9088,
        8192)'s 1 KiB. *Decision* for a page smaller than that (kvnand_small's 256 B): the page
        is one codeword of the same code shortened to it (as BCH(9088,8192) is shortened from
        BCH(16383,15487)): the same 896 parity bits, so the same t = 64, a decode of
        ``8 page + 896`` bits, and no partial-page program (the sector is the page)."""
        return min(self.ecc_k // 8, self.page_bytes)

    @property
    def codeword_bits(self) -> int:        # one codeword: a sector's data and the parity
        return 8 * self.sector_bytes + self.ecc_n - self.ecc_k

    @property
    def sectors_per_page(self) -> int:
        return self.page_bytes // self.sector_bytes

    @property
    def t_ecc(self) -> float:              # decode one page's codewords
        return self.sectors_per_page * self.codeword_bits / self.ecc_rate

    def stored(self, element_bytes: float) -> float:
        """Bytes stored per element: integer formats add their group scales' share."""
        return element_bytes + (2 / self.scale_group if element_bytes < 2 else 0)

    def _pe_command(self, fmt: str, mode: str, heads: int) -> tuple[int, int, int, bool]:
        """(elements of a whole page, heads of one PE command, commands on the page, the
        PE has dequantisers)."""
        from memwall.families.kvnand.config import KINDS, MODES, page_kind

        kind = page_kind(fmt, mode)
        if heads < 1 or (mode == "gemv" and heads != 1):
            raise ValueError(f"heads={heads}: 1 for gemv, >= 1 for logit and attend")
        pe_heads = 1 << (heads - 1).bit_length()           # the PE's G: a power of two
        per = min(pe_heads, self.pe_max_heads, self.fmacs_per_plane)   # a lane column a head
        scaled = any(page_kind(fmt, m) != "bf16" for m in MODES)
        return 8 * self.page_bytes // KINDS[kind], per, pe_heads // per, scaled

    def mac_cycles(self, fmt: str, mode: str, heads: int = 1) -> int:
        """The plane PE's cycles for one whole page of ``fmt``'s ``mode`` kind, ``heads`` query
        heads sharing it (LOGIT, ATTEND; rounded up to a power of two):
        :func:`memwall.golden.kvnand.pe.page_cycles` with its ``latency``, the RTL's count
        (``tests/kvnand/test_sim_kvnand_model_cost.py``). The PE is the config's built for
        ``fmt`` (its dequantisers in the pipeline when a page kind of ``fmt`` is an integer).
        An ATTEND page here does not emit (see :meth:`emit_cycles`). *Decision*: more heads
        than one command takes (``pe_max_heads``, at most ``fmacs_per_plane``) run as several
        commands on the page held in the page register, as many heads each (an ATTEND stream
        then needs that many times the RTL's accumulators)."""
        from memwall.golden.kvnand import pe as kvnand_pe

        elements, per, commands, scaled = self._pe_command(fmt, mode, heads)
        latency = kvnand_pe.latency(self.fmacs_per_plane, self.pe_mul_stages, scaled, mode,
                                    per)
        return commands * kvnand_pe.page_cycles(mode, 1, elements, per,
                                                self.fmacs_per_plane, latency)

    def t_mac(self, fmt: str, mode: str, heads: int = 1) -> float:
        """MAC time of one page (:meth:`mac_cycles` at ``f_mac``)."""
        return self.mac_cycles(fmt, mode, heads) / self.f_mac

    def emit_cycles(self, fmt: str, heads: int, width: int) -> int:
        """What an ATTEND command with ``emit`` takes beyond the same one without: its
        ``heads x width`` sums streamed out and the emit's turnaround. The PE keeps a head
        group's sums across the pages of its V stream and emits once, after the stream's
        last page (``hdl/kvnand/pe.py``); the model charges it so, once per stream a plane
        reads."""
        from memwall.golden.kvnand import pe as kvnand_pe

        _, per, commands, scaled = self._pe_command(fmt, "attend", heads)
        n, stages = self.fmacs_per_plane, self.pe_mul_stages
        turnaround = (kvnand_pe.latency(n, stages, scaled, "attend", per, emit=True)
                      - kvnand_pe.latency(n, stages, scaled, "attend", per))
        return commands * (per * width + turnaround)

    def t_emit(self, fmt: str, heads: int, width: int) -> float:
        return self.emit_cycles(fmt, heads, width) / self.f_mac


@dataclass(frozen=True)
class System:
    """``kind`` in base1/base2/kvnand_d/kvnand_c. ``g1``: IFC dies holding weights (C: all x
    dies). ``g2``: D's KV dies; Base-2's plain NAND dies; 0 otherwise."""
    kind: str
    g1: int
    g2: int = 0
    params: Params = Params()

    def __post_init__(self):
        if self.kind not in ("base1", "base2", "kvnand_d", "kvnand_c"):
            raise ValueError(f"kind={self.kind!r}: allowed base1, base2, kvnand_d, kvnand_c")
        if self.g1 < 1 or (self.kind in ("base2", "kvnand_d") and self.g2 < 1):
            raise ValueError(f"{self.kind}: g1={self.g1}, g2={self.g2}: need >= 1 die each")

    @property
    def name(self) -> str:
        return {"base1": "Base-1", "base2": "Base-2", "kvnand_d": f"KVNAND-D-({self.g1}+{self.g2})",
                "kvnand_c": f"KVNAND-C-{self.g1}"}[self.kind]

    @property
    def spec(self) -> str:
        """The name :func:`parse_system` reads."""
        return {"kvnand_d": f"kvnand_d:{self.g1}+{self.g2}",
                "kvnand_c": f"kvnand_c:{self.g1}"}.get(self.kind, self.kind)

    def with_params(self, **changes) -> System:
        return replace(self, params=replace(self.params, **changes))


#: Most dies of a system given by name (the model's cost does not grow with them; the sweep's
#: jobs do, one decode step per system).
MAX_DIES = 1024
#: How a system is named on the command line (``memwall model kvnand --system``, ``--systems``).
SYSTEM_GRAMMAR = ("base1, base2, kvnand_c:X (KVNAND-C-X: X dies) or kvnand_d:G1+G2 "
                  "(KVNAND-D-(G1+G2): G1 weight dies + G2 KV-cache dies), each count 1.."
                  f"{MAX_DIES}")


def _whole(text: str) -> bool:
    """A whole number in ASCII digits (``int`` takes others as well)."""
    return text.isascii() and text.isdigit()


def parse_system(spec: str, params: Params = Params()) -> System:
    """The system ``spec`` names (:data:`SYSTEM_GRAMMAR`); a ValueError names the spec and
    what is allowed."""
    kind, colon, dies = str(spec).strip().partition(":")
    counts = dies.split("+")
    ok = all(_whole(c) and 1 <= int(c) <= MAX_DIES for c in counts)
    if kind in ("base1", "base2") and not colon:
        return (base1 if kind == "base1" else base2)(params)
    if kind == "kvnand_c" and ok and len(counts) == 1:
        return kvnand_c(int(counts[0]), params)
    if kind == "kvnand_d" and ok and len(counts) == 2:
        return kvnand_d(int(counts[0]), int(counts[1]), params)
    raise ValueError(f"system {spec!r}: allowed {SYSTEM_GRAMMAR}")


def base1(params: Params = Params()) -> System:
    return System("base1", params.channels, 0, params)


def base2(params: Params = Params()) -> System:
    return System("base2", params.channels, params.channels, params)


def kvnand_d(g1: int, g2: int, params: Params = Params()) -> System:
    return System("kvnand_d", g1, g2, params)


def kvnand_c(x: int, params: Params = Params()) -> System:
    return System("kvnand_c", x, 0, params)


@dataclass(frozen=True)
class Format:
    """Bytes per weight, per KV element and per activation."""
    weight: float
    kv: float
    act: float


#: W4A16: 4-bit weights, 16-bit activations and KV cache (§V-B).
FORMATS = {"bf16": Format(2, 2, 2), "w8a8": Format(1, 1, 1), "w4a16": Format(0.5, 2, 2)}


@dataclass(frozen=True)
class Model:
    """Decoder shape (Hugging Face config.json of each model). ``ffn_mats``: 2 for OPT's
    fc1/fc2, 3 for SwiGLU's gate/up/down. Biases and norm weights are not counted (< 0.1 %)."""
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    ffn_mats: int = 3
    experts: int = 1
    active_experts: int = 1
    tied_embeddings: bool = False
    positions: int = 0            # learned position embeddings (OPT: 2048 + 2)

    @property
    def group(self) -> int:       # Q heads per KV head: one head group (HG)
        return self.heads // self.kv_heads

    @property
    def qkv_rows(self) -> int:
        return (self.heads + 2 * self.kv_heads) * self.head_dim

    @property
    def expert_params(self) -> int:
        return self.ffn_mats * self.hidden * self.ffn

    def layer_params(self, active: bool) -> int:
        n = self.active_experts if active else self.experts
        attn = self.hidden * self.qkv_rows + self.heads * self.head_dim * self.hidden
        router = self.hidden * self.experts if self.experts > 1 else 0
        return attn + n * self.expert_params + router

    @property
    def params(self) -> int:      # stored
        emb = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_params(False) + emb + self.positions * self.hidden

    @property
    def active_params(self) -> int:   # read per decode token (layers + lm_head)
        return self.layers * self.layer_params(True) + self.vocab * self.hidden

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bytes


#: The paper's five models (§V-A), public shapes.
MODELS = {m.name: m for m in (
    #      name           L    hidden H   Hkv dh   ffn    vocab
    Model("OPT-30B", 48, 7168, 56, 56, 128, 28672, 50272, ffn_mats=2, tied_embeddings=True,
          positions=2050),
    Model("LLaMA2-7B", 32, 4096, 32, 32, 128, 11008, 32000),
    Model("LLaMA3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256),
    Model("LLaMA3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256),
    Model("Mixtral-8x7B", 32, 4096, 32, 8, 128, 14336, 32000, experts=8, active_experts=2),
)}

#: Base-1 DRAM capacity, both readings (module docstring).
DRAM_READINGS = {"table_per_channel": 16 * GiB, "oom_statements": 2 * GiB}

def buffer_readings(params: Params = Params()) -> dict[str, dict]:
    """Open KV streams of both readings (KVNAND-C per plane, KVNAND-D in the SoC buffer;
    None = unbounded) for ``params``' buffers and page."""
    return {"paper_sufficient": {"c_open_streams": None, "d_open_streams": None},
            "buffer_limited": {"c_open_streams": params.c_kv_buffer // params.page_bytes,
                               "d_open_streams": params.d_kv_buffer // params.page_bytes}}


#: Both readings at Table I's buffers and page (:func:`buffer_readings`).
BUFFER_READINGS = buffer_readings()

#: How ``--buffer-kib`` names a KV buffer size.
BUFFER_KIB_GRAMMAR = ("C/D: KVNAND-C's KV buffer per plane / KVNAND-D's SoC KV buffer, in KiB "
                      "(whole numbers >= 0, or 'all': every stream buffered), e.g. 8/5120")


def buffer_kib_readings(values: Sequence[str], p: Params = Params()) -> dict[str, dict]:
    """``--buffer-kib`` values (:data:`BUFFER_KIB_GRAMMAR`) -> buffer readings: the open KV
    streams each buffer holds at ``p``'s page (a stream keeps one page open)."""
    out = {}
    for value in values:
        parts = str(value).strip().split("/")
        if len(parts) != 2 or not all(x == "all" or (_whole(x) and int(x) <= 1 << 30)
                                      for x in parts):
            raise ValueError(f"buffer size {value!r}: allowed {BUFFER_KIB_GRAMMAR}")
        c, d = (None if x == "all" else int(x) * 1024 // p.page_bytes for x in parts)
        out["/".join(parts)] = {"c_open_streams": c, "d_open_streams": d}
    if not out:
        raise ValueError(f"buffer sizes: give at least one ({BUFFER_KIB_GRAMMAR})")
    return out


def cost(capacity_gb: float = 128.0) -> dict:
    """§V-C. SLC price = TLC $0.11/GB x (8.5 / 1.8 Gb/mm^2) = $0.519/GB ("$0.52"); with the
    yield dropping from 80 % to 58 %: x 0.80/0.58 = $0.716/GB, which the paper rounds to $0.72.
    (The 1.22x area is folded into that yield, not applied again: applying it as well would
    give $0.875/GB.) KVNAND-D-(4+4): 8 dies x 16 GB = 128 GB x $0.72 = $92.16. The LPDDR5 $/GB
    is missing from the text; $295.68 / 128 GB = $2.31/GB is implied, a 3.21x cost, 69 % saved."""
    slc = 0.11 * 8.5 / 1.8
    exact = slc * 0.80 / 0.58
    paper_rate, dram_rate = round(exact, 2), 2.31
    flash, dram = capacity_gb * paper_rate, capacity_gb * dram_rate
    return {"capacity_gb": capacity_gb, "slc_per_gb": slc, "flash_per_gb_exact": exact,
            "flash_per_gb": paper_rate, "flash_per_gb_with_area_too": exact * 1.22,
            "dram_per_gb_implied": dram_rate, "flash_cost": round(flash, 2),
            "dram_cost": round(dram, 2), "dram_over_flash": dram / flash,
            "saving": 1 - flash / dram, "paper": {"flash_cost": 92.16, "dram_cost": 295.68,
                                                  "saving": 0.69}}
