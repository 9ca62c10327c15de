"""Area of the PIM macro (the 2T gain-cell array is behavioural, so synthesis has none): cells
times a bit-cell area, plus each column's periphery (sense amp, precharge, write driver, column
share of the decoders), on the same PDK as the synthesised controller and PU.

The array's figures come from the PDK's own SRAM macro models (ORFS's FakeRAM2.0 ``fakeram7``
Liberty for ASAP7, ``area`` of two macros of 256 columns): the area per bit (the slope between
``256x256`` and ``64x256``) and the periphery per column (the rest, over 256 columns). A gain
cell takes :data:`GAIN_CELL_VS_6T` of a 6T SRAM bit cell, from two published GC-eDRAM macros
(the range is carried through as ``low``/``high``); the periphery is taken as the SRAM's.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["GAIN_CELL_VS_6T", "sram_area_model", "macro_area"]

#: Gain-cell bit-cell area as a fraction of a 6T SRAM cell's in the same technology.
GAIN_CELL_VS_6T = {
    "low": (0.5, "1-Mbit 3T GC-eDRAM, 16-nm FinFET: a 2x smaller bit cell than 6T SRAM with "
                 "similar design rules (IEEE SSC-L, 'A 1-Mbit Fully Logic-Compatible 3T "
                 "Gain-Cell Embedded DRAM in 16-nm FinFET')"),
    "high": (0.6, "64-kB 65-nm 3T-1C GC-eDRAM: 40 % area reduction against a 6T SRAM cell "
                  "(Harel et al., IEEE SSC-L 2022)"),
}
#: The two SRAM macro models the per-bit and per-column figures come from: (rows, columns).
MACROS = {"asap7": ("fakeram7", (256, 256), (64, 256))}


def _area(lib: Path) -> float:
    match = re.search(r"\barea\s*:\s*([0-9.eE+-]+)\s*;", lib.read_text())
    if not match:
        raise ValueError(f"{lib}: no area attribute")
    return float(match.group(1))


def sram_area_model(pdk: str = "asap7") -> dict:
    """``{"per_bit_um2", "per_column_um2", "source"}`` from the PDK's SRAM macro Liberty files
    (``$MEMWALL_PDK_ROOT``)."""
    from memwall.flows.pdk import pdk_root

    if pdk not in MACROS:
        raise ValueError(f"no SRAM macro models for {pdk}; allowed: {', '.join(MACROS)}")
    prefix, big, small = MACROS[pdk]
    folder = pdk_root() / pdk / "lib" / "NLDM"
    (rb, cb), (rs, cs) = big, small
    a_big = _area(folder / f"{prefix}_{rb}x{cb}.lib")
    a_small = _area(folder / f"{prefix}_{rs}x{cs}.lib")
    per_bit = (a_big - a_small) / ((rb - rs) * cb)
    per_column = (a_small - per_bit * rs * cs) / cs
    return {"per_bit_um2": per_bit, "per_column_um2": per_column,
            "source": f"{pdk} {prefix}_{rb}x{cb} ({a_big:g} µm²) and {prefix}_{rs}x{cs} "
                      f"({a_small:g} µm²), FakeRAM2.0 models shipped with ORFS"}


def macro_area(cfg, pdk: str = "asap7") -> dict:
    """The macro's area (µm²) at each end of the gain-cell range: ``cells`` (rows x width bit
    cells) and ``periphery`` (width columns, each subarray its own)."""
    sram = sram_area_model(pdk)
    bits = cfg.rows * cfg.width
    periphery = cfg.width * sram["per_column_um2"]
    out = {"bits": bits, "periphery_um2": periphery, "sram": sram}
    for end, (factor, _source) in GAIN_CELL_VS_6T.items():
        cells = bits * sram["per_bit_um2"] * factor
        out[end] = {"cells_um2": cells, "total_um2": cells + periphery}
    return out
