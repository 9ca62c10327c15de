"""The paper's baselines that the RTL does not build: MODELS, not measured.

The rDXE paper (rdxe-edge-slm-decoder-vrc-iwur) compares its VRC and its iWuR KV cache with
baselines it describes only in words. The RTL builds its own baselines (a sequential VRC mode
and a row-by-row V layout, both exact in :mod:`memwall.golden.rdxe.cycles`); they differ from
the paper's descriptions, so :func:`memwall.golden.rdxe.layer.layer_cycles` takes each baseline
as a named option (:data:`BASELINE_OPTIONS`): ``"paper"`` (these models, the default), ``"rtl"``
(the hardware's own mode) and, for the KV cache, ``"word"`` (the second reading below).

**Unfused VRC, the paper's reading** (:class:`UnfusedVrc`). Sec. III-B: "conventional
accelerators execute nonlinear operations sequentially with linear MAC processing", and VRC
works by "eliminating large on-chip buffers for feature storage". So the non-linear operations
run on a vector unit beside the MACs, one after the other, each pass streaming its vector out
of and back into a feature buffer; the GEMV that consumes the result waits for it and reads it
back. Per pass over ``n`` elements reading ``i`` and writing ``o`` bytes each:
``max(ceil(n / ve_lanes), ceil(n * (i + o) / fbuf_bytes_per_cycle))`` cycles.

* RMSNorm (OPT's LayerNorm folds its mean into the same pass): sum of squares (read x),
  the statistics-to-RC latency, normalise (read x, write x_hat), read x_hat back.
* Softmax over ``t`` scores: maximum (read s), exponentials and their sum (read s, write e),
  the statistics-to-RC latency, normalise (read e, write p), read p back. The VRC finds the
  maximum while QK writes its scores back (Sec. III-B); the conventional baseline takes a pass.
* One such unit per DXT (Fig. 2 puts a VE in each DXT): heads' softmaxes go ``dxts`` at a time,
  like their MACs; a RMSNorm is one vector's passes (every tile needs the whole x_hat).

Constants (:data:`PAPER_VRC`): ``fbuf_bytes_per_cycle = 4``, the tile's 32-bit GBUS (Sec. III:
"16 VACs connected through a 32-bit global bus"; the RTL's ``GBUS_BYTES``), the path between the
MACs and the VE in the tile; ``ve_lanes = 4``, an ASSUMPTION (the paper gives no VE width):
matched to the 4-byte port, so the passes are port-bound and a wider VE changes nothing (a
narrower one is slower: ``reports/rdxe`` shows the sensitivity). Element widths: INT8 for x,
x_hat and p (the chip's precision, Fig. 6); 2 bytes for scores and exponentials (the RTL's
``SCORE_BITS`` and ``NORM_BITS``, 16). The statistics-to-RC latency is the RTL's:
``4 + NR_LATENCY`` (:mod:`memwall.golden.rdxe.cycles`).

**KV cache without iWuR, two readings** (:class:`KvBaseline`). Sec. III-C: "iWuR improves
utilisation by up to 25 % over baseline" (KV cache read bandwidth: "mitigates underutilization of
KV$ bandwidth"). iWuR's own read efficiency is 1 (every KV read is a full word of useful bytes:
K row by row, V column by column, :mod:`memwall.golden.rdxe.layout`). A baseline's read
efficiency and its write cost follow from one layout, so each reading names both:

* ``"paper"`` (:data:`PAPER_KV`, ``layout="packed"``): '+25 % utilisation' taken as the read
  efficiency ``u`` with ``u * 1.25 = 1``, ``read_efficiency = 0.8``
  (:data:`BASELINE_READ_EFFICIENCY`; read as 25 percentage points it is 0.75, the report shows
  both). A word of one token from one VAC holds only its ``ceil(dh / vacs)`` bytes, so words
  80 % useful gather bytes of several tokens or VACs: byte writes, as iWuR's are. The
  layout is charged iWuR's own K/V write-back command (the RTL's,
  :func:`~memwall.golden.rdxe.cycles.kv_write_cycles`, for K and for V) and differs from
  iWuR only in its reads. A KV-reading MAC command needs
  ``ceil(beats / 0.8)`` beats per group where iWuR needs ``beats``, for QK's K and P.V's V reads
  alike; the layer can then gain at most ``1 / 0.8`` from iWuR.
* ``"word"`` (:data:`WORD_KV`, ``layout="word"``): each VAC keeps the K and V outputs it computed,
  its ``ceil(dh / vacs)`` bytes of a token as whole words (``ceil(ceil(dh / vacs) / lanes)``
  write cycles, all VACs at once: the cheap write iWuR replaces; for V it is the RTL's baseline
  V layout). A read then holds ``ceil(dh / vacs)`` useful bytes of ``lanes``
  (:func:`word_read_efficiency`: 4 / 16 = 0.25 for heads of 64 on 16 VACs of 16 lanes), and a
  MAC command uses every one of them (the RTL's baseline P.V uses one).

iWuR's side is the RTL's: the K/V write-back command for K and for V, and whole-word reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memwall.golden.rdxe.cycles import NR_LATENCY, kv_write_cycles

__all__ = ["PAPER_NONLINEAR_SPEEDUP", "PAPER_LAYER_SPEEDUP", "implied_nonlinear_share",
           "exposed_nonlinear_share", "GBUS_BYTES", "INT8_BYTES", "SCORE_BYTES", "UnfusedVrc",
           "PAPER_VRC", "PAPER_IWUR_SPEEDUP", "IWUR_UTILISATION_GAIN",
           "BASELINE_READ_EFFICIENCY", "BASELINE_READ_EFFICIENCY_POINTS", "KV_LAYOUTS",
           "word_read_efficiency", "KvBaseline", "PAPER_KV", "WORD_KV", "BASELINE_OPTIONS"]

#: Sec. III-B and the abstract: "up to 4.66x latency reduction for the non-linear operations
#: alone" and "up to 1.31x" end-to-end on one OPT-350M layer.
PAPER_NONLINEAR_SPEEDUP = 4.66
PAPER_LAYER_SPEEDUP = 1.31

#: Bytes a cycle on a tile's 32-bit GBUS (Sec. III; ``hdl.rdxe.dxt.GBUS_BYTES``).
GBUS_BYTES = 4
#: x, x_hat and p are INT8 (Fig. 6: INT8 precision).
INT8_BYTES = 1
#: Scores and exponentials: 16 bits (the RTL's ``SCORE_BITS`` and ``NORM_BITS``).
SCORE_BYTES = 2

#: Sec. III-C: iWuR "yields 1.36x-1.54x latency reduction across workloads" (MT5-small).
PAPER_IWUR_SPEEDUP = (1.36, 1.54)
#: Sec. III-C: "iWuR improves utilisation by up to 25 % over baseline".
IWUR_UTILISATION_GAIN = 1.25
#: Derived: iWuR reads at efficiency 1, so the baseline reads at ``1 / 1.25``.
BASELINE_READ_EFFICIENCY = 1 / IWUR_UTILISATION_GAIN
#: The other reading of "+25 %", as percentage points below iWuR's 1 (the sensitivity).
BASELINE_READ_EFFICIENCY_POINTS = 1 - (IWUR_UTILISATION_GAIN - 1)
#: Layouts of a KV baseline (:class:`KvBaseline`): bytes packed into words by byte writes, or
#: each VAC's outputs written as whole words.
KV_LAYOUTS = ("packed", "word")


def implied_nonlinear_share(layer: float = PAPER_LAYER_SPEEDUP,
                            nonlinear: float = PAPER_NONLINEAR_SPEEDUP) -> float:
    """Share ``f`` of the unfused layer that is non-linear, if fusing speeds the non-linear part
    up by ``nonlinear`` and the layer by ``layer``: ``1 / (1 - f + f / nonlinear) = layer``
    (0.301 for the paper's 1.31x and 4.66x)."""
    return (1 - 1 / layer) / (1 - 1 / nonlinear)


def exposed_nonlinear_share(layer: float = PAPER_LAYER_SPEEDUP,
                            nonlinear: float = PAPER_NONLINEAR_SPEEDUP) -> float:
    """Share of the fused layer that is non-linear, on the same premise:
    ``f / nonlinear / (1 - f + f / nonlinear)`` (0.085 for the paper's figures)."""
    f = implied_nonlinear_share(layer, nonlinear)
    return f / nonlinear / (1 - f + f / nonlinear)


@dataclass(frozen=True)
class UnfusedVrc:
    """The paper's reading of a conventional (unfused) non-linear path: a vector unit of
    ``ve_lanes`` elements a cycle per DXT, fed through a feature buffer of
    ``fbuf_bytes_per_cycle`` bytes a cycle (see the module docstring)."""

    ve_lanes: int = 4
    fbuf_bytes_per_cycle: int = GBUS_BYTES

    def __post_init__(self):
        if self.ve_lanes < 1 or self.fbuf_bytes_per_cycle < 1:
            raise ValueError(f"ve_lanes and fbuf_bytes_per_cycle must be >= 1, got "
                             f"{self.ve_lanes} and {self.fbuf_bytes_per_cycle}")

    def _pass(self, n: int, read: int, write: int) -> int:
        return max(math.ceil(n / self.ve_lanes),
                   math.ceil(n * (read + write) / self.fbuf_bytes_per_cycle))

    def _read_back(self, n: int, size: int) -> int:
        return math.ceil(n * size / self.fbuf_bytes_per_cycle)

    def rmsnorm_cycles(self, d: int) -> int:
        """Cycles of one RMSNorm of ``d`` elements before its GEMV may start."""
        return (self._pass(d, INT8_BYTES, 0) + 4 + NR_LATENCY[1]
                + self._pass(d, INT8_BYTES, INT8_BYTES) + self._read_back(d, INT8_BYTES))

    def softmax_cycles(self, t: int) -> int:
        """Cycles of one head's softmax over ``t`` scores before its P.V may start."""
        return (self._pass(t, SCORE_BYTES, 0) + self._pass(t, SCORE_BYTES, SCORE_BYTES)
                + 4 + NR_LATENCY[0] + self._pass(t, SCORE_BYTES, INT8_BYTES)
                + self._read_back(t, INT8_BYTES))


def word_read_efficiency(dh: int, vacs: int, lanes: int) -> float:
    """Useful bytes of a KV read when each VAC keeps its own ``ceil(dh / vacs)`` bytes of a token
    as whole words of ``lanes`` bytes: those bytes over the words' bytes."""
    share = math.ceil(dh / vacs)
    return share / (math.ceil(share / lanes) * lanes)


@dataclass(frozen=True)
class KvBaseline:
    """A KV cache without iWuR (see the module docstring). ``layout="packed"``: reads at
    ``read_efficiency`` of iWuR's, writes with iWuR's K/V write-back command; ``layout="word"``:
    each VAC writes its own outputs as whole words and reads at the efficiency that gives
    (``read_efficiency`` None: it follows from the layout)."""

    read_efficiency: float | None = BASELINE_READ_EFFICIENCY
    layout: str = "packed"

    def __post_init__(self):
        if self.layout not in KV_LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(KV_LAYOUTS)}, got {self.layout!r}")
        if self.layout == "word":
            if self.read_efficiency is not None:
                raise ValueError("read_efficiency must be None with layout 'word': it follows "
                                 "from the layout (word_read_efficiency)")
        elif self.read_efficiency is None or not 0 < self.read_efficiency <= 1:
            raise ValueError(f"read_efficiency must be in (0, 1], got {self.read_efficiency}")

    def efficiency(self, dh: int, vacs: int, lanes: int) -> float:
        """Useful bytes per KV read, over iWuR's (1), for heads of ``dh``."""
        if self.layout == "word":
            return word_read_efficiency(dh, vacs, lanes)
        return self.read_efficiency

    def read_beats(self, beats: int, dh: int, vacs: int, lanes: int) -> int:
        """Beats a KV-reading group needs where iWuR needs ``beats``."""
        return math.ceil(beats / self.efficiency(dh, vacs, lanes) - 1e-9)

    def write_cycles(self, dh: int, vacs: int, lanes: int) -> int:
        """Cycles to write one token's K (or V) of one head."""
        if self.layout == "word":                 # a word per VAC share, all VACs at once
            return math.ceil(math.ceil(dh / vacs) / lanes)
        return kv_write_cycles(dh)                # byte writes: iWuR's own command


PAPER_VRC = UnfusedVrc()
PAPER_KV = KvBaseline()
WORD_KV = KvBaseline(None, "word")
#: The named options of each baseline of :func:`memwall.golden.rdxe.layer.layer_cycles`
#: (``vrc_baseline``, ``kv_baseline``): the model, or None for the RTL's own commands.
BASELINE_OPTIONS = {"vrc_baseline": {"paper": PAPER_VRC, "rtl": None},
                    "kv_baseline": {"paper": PAPER_KV, "word": WORD_KV, "rtl": None}}
