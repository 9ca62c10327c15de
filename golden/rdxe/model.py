"""rDXE analytic models on top of the exact command cycles (:mod:`memwall.golden.rdxe.cycles`).

* :mod:`memwall.golden.rdxe.layer`: one decoder layer on one DXE, fused or sequential, iWuR or
  baseline KV layout, each baseline a named option (the paper's reading, a MODEL from
  :mod:`memwall.golden.rdxe.baselines`, or our RTL's mode), and each operation's MAC
  efficiency.
* :mod:`memwall.golden.rdxe.serving`: the ring of DXEs (token-level pipelining) and padded
  batching, in MAC utilisation under arrival gaps.
* :mod:`memwall.golden.rdxe.comparison`: every figure of ``reports/rdxe`` beside the paper's
  (:func:`evaluate`, :func:`format_report`; ``memwall model rdxe``).

This module gathers their public names (``memwall model rdxe`` and the report import it).
"""

from __future__ import annotations

from memwall.golden.rdxe.comparison import evaluate, format_report
from memwall.golden.rdxe.layer import (
    GQA_MODEL,
    MODELS,
    MODES,
    LayerShape,
    layer_cycles,
    layer_macs,
    peak_macs_per_cycle,
)
from memwall.golden.rdxe.serving import (
    layer_balance,
    layer_split,
    padded_utilisation,
    requests,
    serve,
)

__all__ = ["LayerShape", "MODELS", "GQA_MODEL", "MODES", "layer_cycles", "layer_macs",
           "peak_macs_per_cycle", "layer_split", "layer_balance", "serve", "padded_utilisation",
           "requests", "evaluate", "format_report"]
