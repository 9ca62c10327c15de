"""KVNAND design space: hardware parameters, the four systems, model shapes, formats and the
paper's cost arithmetic. The latency/energy equations are in :mod:`memwall.golden.kvnand.model`.

Parameters (:class:`Params`) default to the paper's Table I and text; a field the paper does not
give is a *decision*, marked as such beside it. Units: seconds, joules, bytes, bytes/s.

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
  (a BCH(9088, 8192) codeword, 1 KiB, 4 per page), costed in the model.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["GiB", "Params", "System", "Model", "Format", "MODELS", "FORMATS", "DRAM_READINGS",
           "BUFFER_READINGS", "MOE_LAYOUTS", "HG_MODES", "base1", "base2", "kvnand_d",
           "kvnand_c", "cost"]

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


@dataclass(frozen=True)
class Params:
    """Hardware parameters. Table I unless marked *decision*."""
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
    # On-die ECC: BCH(9088, 8192, t=64) decoder at 14.6 Gb/s per plane.
    ecc_n: int = 9088
    ecc_k: int = 8192
    ecc_rate: float = 14.6e9
    # Logic die: 16 FMACs per plane at 400 MHz (also on Base-1/2's IFC dies: decision, the
    # paper's "same flash configuration ... comparable compute"); 6.98 mW logic + 5.24 mW ECC
    # decoder per plane; KVNAND-C's 8 KB KV buffer per plane.
    fmacs_per_plane: int = 16
    f_mac: float = 400e6
    pe_mul_stages: int = 1               # the PE's FP32 multiplier depth (kvnand_pe.latency)
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
    count_logic_energy: bool = False     # CALIBRATED: Fig. 16 counts access energy only

    def __post_init__(self):
        if self.moe_layout not in MOE_LAYOUTS:
            raise ValueError(f"moe_layout={self.moe_layout!r}: allowed {MOE_LAYOUTS}")
        if self.hg_mode not in HG_MODES:
            raise ValueError(f"hg_mode={self.hg_mode!r}: allowed {HG_MODES}")
        if self.scale_group < 1:
            raise ValueError(f"scale_group={self.scale_group}: must be >= 1")
        if self.kv_mapping not in ("page", "naive"):
            raise ValueError(f"kv_mapping={self.kv_mapping!r}: allowed 'page', 'naive'")
        if self.page_bytes * 8 % self.ecc_k:
            raise ValueError("page_bytes must hold a whole number of ECC codewords")
        for name in ("c_open_streams", "d_open_streams"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise ValueError(f"{name}={v}: must be None (unbounded) or >= 0")

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
    def sector_bytes(self) -> int:         # one ECC codeword's data: a partial program's unit
        return self.ecc_k // 8

    @property
    def sectors_per_page(self) -> int:
        return self.page_bytes // self.sector_bytes

    @property
    def t_ecc(self) -> float:              # decode one page's codewords
        return self.sectors_per_page * self.ecc_n / self.ecc_rate

    def stored(self, element_bytes: float) -> float:
        """Bytes stored per element: integer formats add their group scales' share."""
        return element_bytes + (2 / self.scale_group if element_bytes < 2 else 0)

    def t_mac(self, operand_bytes: float, reuse: int = 1) -> float:
        """MAC time of one page: ``page / operand_bytes`` elements, each used ``reuse`` times
        (the Q heads sharing a KV head), on ``fmacs_per_plane`` FMACs: the plane PE's cycles
        for the page (:func:`memwall.golden.kvnand.pe.page_cycles`, MACs / FMACs plus its
        pipeline latency; the RTL's count, checked by ``tests/kvnand/test_sim_kvnand_pe.py``)."""
        from memwall.golden.kvnand import pe as kvnand_pe

        elements = int(self.page_bytes / operand_bytes)
        heads = 1 << max(0, (reuse - 1).bit_length())      # the PE's G: a power of two
        mode = "gemv" if reuse == 1 else "logit"
        latency = kvnand_pe.latency(self.fmacs_per_plane, self.pe_mul_stages,
                                    operand_bytes < 2, mode, heads)
        cycles = kvnand_pe.page_cycles(mode, 1, elements, reuse, self.fmacs_per_plane,
                                       latency)
        return cycles / self.f_mac


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

    def with_params(self, **changes) -> System:
        return replace(self, params=replace(self.params, **changes))


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

#: Open KV streams: (KVNAND-C per plane, KVNAND-D in the SoC buffer); None = unbounded.
BUFFER_READINGS = {
    "paper_sufficient": {"c_open_streams": None, "d_open_streams": None},
    "buffer_limited": {"c_open_streams": Params().c_kv_buffer // Params().page_bytes,
                       "d_open_streams": Params().d_kv_buffer // Params().page_bytes},
}


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
