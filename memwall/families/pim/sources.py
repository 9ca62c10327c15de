"""Where each energy and retention constant of the PIM model comes from, and how far the headline
moves when each moves over its plausible range.

:data:`SOURCES` lists every constant the energy model charges (``pim_paper``'s defaults), each
with its status: **measured** (this project's synthesis), **cited** (a published figure, by
paper), **derived** (a formula on other constants) or **unsourced** (no published figure we
could check; said so), and the range the sensitivity figure moves it over: a cited range where
the literature gives one, else x0.5 to x2. :func:`sensitivity` recomputes the proposed
scheme's ratio to each baseline with one constant at each end of its range, the rest at their
defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from memwall.golden.pim.logic import logic_terms

__all__ = ["Source", "SOURCES", "scaled", "sensitivity", "RETENTION_US"]

#: Published gain-cell eDRAM retention times (µs), the ends of the retention range.
RETENTION_US = {
    "SHIELD T_std (3T gain-cell eDRAM; shield-segmented-edram-refresh.txt §IV-B, citing its "
    "[11], which our copy does not list)": 45.0,
    "64-kB 65-nm 3T-1C GC-eDRAM macro, 99.99 % bit yield (Harel et al., IEEE SSC-L 2022, "
    "'64-kB 65-nm GC-eDRAM With Half-Select Support and Parallel Refresh Technique')": 16.0,
    "1-Mbit 3T GC-eDRAM in 16-nm FinFET, measured at 600 mV (IEEE SSC-L, 'A 1-Mbit Fully "
    "Logic-Compatible 3T Gain-Cell Embedded DRAM in 16-nm FinFET')": 77.0,
}


@dataclass(frozen=True)
class Source:
    """One constant: its name in the config, what it is, its status and source, and the
    multipliers ``(low, high)`` of its plausible range."""
    name: str
    what: str
    status: str
    source: str
    low: float
    high: float
    baseline_only: bool = False     # moves only the SRAM baseline


def _table_scaled(cfg, keys: tuple[str, ...], factor: float):
    table = [dict(level) for level in cfg.macro_table]
    for level in table:
        for key in keys:
            level[key] = level[key] * factor
    return dataclasses.replace(cfg, macro_table=table)


def _fields_scaled(cfg, names: tuple[str, ...], factor: float):
    return dataclasses.replace(cfg, **{n: getattr(cfg, n) * factor for n in names})


def _logic_scaled(cfg, factor: float):
    return dataclasses.replace(cfg, logic_energy={k: v * factor for k, v in logic_terms(cfg).items()
                                                  if k not in ("source", "measured")})


_BUFFER = ("buffer_e_read_pj", "buffer_e_write_pj", "buffer_e_refresh_pj")
_SRAM = ("sram_e_access_pj", "sram_e_sense_pj", "sram_e_write_pj")
_UNSOURCED = "unsourced: no published figure we could check; x0.5 to x2"

SOURCES: list[Source] = [
    Source("macro_table.retention_us", "eDRAM retention at each VPD level", "cited",
           "45 µs at VPD = VSS: SHIELD's standard refresh interval T_std for a 3T gain-cell "
           "eDRAM (SHIELD does not state a bit-error rate at it); other levels in proportion to "
           "the RBL swing (derived). Range: 16 to 77 µs, two published GC-eDRAM macros",
           min(RETENTION_US.values()) / 45.0, max(RETENTION_US.values()) / 45.0),
    Source("macro_table.e_access_pj", "row activation of one subarray", "derived",
           "C_RBL x VDD x swing, C_RBL = 10 fF per column over 64 columns at VDD = 0.8 V; "
           "C_RBL is unsourced", 0.5, 2.0),
    Source("macro_table.e_sense_pj", "one sense amp enabled for one activation", "unsourced",
           "2 fJ at a 400 mV margin, inversely proportional to the swing; " + _UNSOURCED,
           0.5, 2.0),
    Source("e_write_pj", "row write of one subarray", "unsourced", _UNSOURCED, 0.5, 2.0),
    Source("buffer", "unified buffer read, write and refresh", "unsourced", _UNSOURCED,
           0.5, 2.0),
    Source("dram_e_bit_pj", "DRAM read per weight bit fetched", "cited",
           "Horowitz, 'Computing's energy problem', ISSCC 2014 (45 nm): 1.3-2.6 nJ per 64-bit "
           "DRAM access; the default is the low end (20 pJ/bit)", 1.0, 2.0),
    Source("logic_energy", "controller and PU", "measured",
           "fitted from this project's synthesis and activity runs "
           "(python -m memwall.families.pim.calibrate); range: x0.5 to x2 around the fit",
           0.5, 2.0),
    Source("sram", "SRAM baseline's access, sense and write", "unsourced", _UNSOURCED,
           0.5, 2.0, baseline_only=True),
]

_SCALERS: dict[str, Callable] = {
    "macro_table.retention_us": lambda cfg, f: _table_scaled(cfg, ("retention_us",), f),
    "macro_table.e_access_pj": lambda cfg, f: _table_scaled(cfg, ("e_access_pj",), f),
    "macro_table.e_sense_pj": lambda cfg, f: _table_scaled(cfg, ("e_sense_pj",), f),
    "e_write_pj": lambda cfg, f: _fields_scaled(cfg, ("e_write_pj",), f),
    "buffer": lambda cfg, f: _fields_scaled(cfg, _BUFFER, f),
    "dram_e_bit_pj": lambda cfg, f: _fields_scaled(cfg, ("dram_e_bit_pj",), f),
    "logic_energy": _logic_scaled,
    "sram": lambda cfg, f: _fields_scaled(cfg, _SRAM, f),
}


def scaled(cfg, source: Source, factor: float):
    """``cfg`` with ``source``'s constant multiplied by ``factor``."""
    return _SCALERS[source.name](cfg, factor)


def sensitivity(cfg, shapes, compare) -> list[dict]:
    """Per constant of :data:`SOURCES`: the proposed scheme's ratio to each baseline (``vs_edram``,
    its on-chip part ``vs_edram_on_chip``, ``vs_neural_cache``, and the on-macro
    ``macro_saving_vs_edram``) over ``shapes`` (``(M, K, N)``), with the constant at the low
    (``low_values``) and the high end (``high_values``) of its range. ``compare(cfg, M, K, N)``
    is :func:`memwall.golden.pim.schedule.compare`."""
    rows = []
    for source in SOURCES:
        ends = {}
        for end, factor in (("low_values", source.low), ("high_values", source.high)):
            moved = scaled(cfg, source, factor)
            results = [compare(moved, *shape) for shape in shapes]
            ends[end] = {key: [None if r[key] is None else float(r[key]) for r in results]
                         for key in ("vs_edram", "vs_edram_on_chip", "vs_neural_cache",
                                     "macro_saving_vs_edram")}
        rows.append({"constant": source.name, "status": source.status, "low": source.low,
                     "high": source.high, **ends})
    return rows
