"""The paper's baselines that the RTL does not build: MODELS, not measured.

The rDXE paper (rdxe-edge-slm-decoder-vrc-iwur) compares its VRC and its iWuR KV cache with
baselines it describes only in words. The RTL builds its own baselines (a sequential VRC mode
and a row-by-row V layout, both exact in :mod:`memwall.golden.rdxe.cycles`); they differ from
the paper's descriptions, so :mod:`memwall.golden.rdxe.model` offers each baseline as a named
option: ``"paper"`` (these models, the default) and ``"rtl"`` (the hardware's own mode).

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

**KV cache without iWuR, the paper's reading** (:class:`KvBaseline`). Sec. III-C: "iWuR
improves utilisation by up to 25 % over baseline" (KV cache read bandwidth: "mitigates
underutilization of KV$ bandwidth"). iWuR's own read efficiency is 1 (every KV read is a full
word of useful bytes: K row by row, V column by column, :mod:`memwall.golden.rdxe.layout`), so
the baseline's is ``u`` with ``u * 1.25 = 1``: ``read_efficiency = 0.8``
(:data:`BASELINE_READ_EFFICIENCY`). (Read as 25 percentage points instead it is 0.75; the
report shows both.) A KV-reading MAC command then needs ``ceil(beats / 0.8)`` beats per group
where iWuR needs ``beats``; applied to QK's K and P.V's V reads alike. Its write side: each VAC
keeps the K and V outputs it computed, one word per VAC per vector (``ceil(dh / (vacs *
lanes))`` cycles, all VACs at once: VAC ``j``'s share of a token fits one word, as the config
checks), where iWuR broadcasts each K output over the GBUS to its owner VAC with byte writes
(Sec. III-C). iWuR's side is the RTL's: the K/V write-back command,
:func:`~memwall.golden.rdxe.cycles.kv_write_cycles`, for K and for V.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memwall.golden.rdxe.cycles import NR_LATENCY

__all__ = ["PAPER_NONLINEAR_SPEEDUP", "PAPER_LAYER_SPEEDUP", "implied_nonlinear_share",
           "GBUS_BYTES", "INT8_BYTES", "SCORE_BYTES", "UnfusedVrc", "PAPER_VRC",
           "PAPER_IWUR_SPEEDUP", "IWUR_UTILISATION_GAIN", "BASELINE_READ_EFFICIENCY",
           "BASELINE_READ_EFFICIENCY_POINTS",
           "KvBaseline", "PAPER_KV", "BASELINE_OPTIONS"]

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

#: The named options of every baseline in :mod:`memwall.golden.rdxe.model`.
BASELINE_OPTIONS = ("paper", "rtl")


def implied_nonlinear_share(layer: float = PAPER_LAYER_SPEEDUP,
                            nonlinear: float = PAPER_NONLINEAR_SPEEDUP) -> float:
    """Share ``f`` of the unfused layer that is non-linear, if fusing speeds the non-linear part
    up by ``nonlinear`` and the layer by ``layer``: ``1 / (1 - f + f / nonlinear) = layer``
    (0.301 for the paper's 1.31x and 4.66x)."""
    return (1 - 1 / layer) / (1 - 1 / nonlinear)


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


@dataclass(frozen=True)
class KvBaseline:
    """The paper's reading of a KV cache without iWuR: KV reads at ``read_efficiency`` of
    iWuR's, each VAC writing its own outputs as whole words (see the module docstring)."""

    read_efficiency: float = BASELINE_READ_EFFICIENCY

    def __post_init__(self):
        if not 0 < self.read_efficiency <= 1:
            raise ValueError(f"read_efficiency must be in (0, 1], got {self.read_efficiency}")

    def read_beats(self, beats: int) -> int:
        """Beats a KV-reading group needs where iWuR needs ``beats``."""
        return math.ceil(beats / self.read_efficiency - 1e-9)

    @staticmethod
    def write_cycles(dh: int, vacs: int, lanes: int) -> int:
        """Cycles to write one token's K (or V) of one head: a word per VAC, in parallel."""
        return math.ceil(dh / (vacs * lanes))


PAPER_VRC = UnfusedVrc()
PAPER_KV = KvBaseline()
