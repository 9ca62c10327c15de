"""SRAM access energy, leakage, area and access time for any depth x width, on nangate45 and asap7.

Why: ORFS's ASAP7 macros (``fakeram7_*.lib``) all state one clock energy (1.345 pJ per edge:
1 pF x 1 V units), one leakage (128.9 uW) and one clk->q whatever their shape, and an area of
bits x ~0.042 um^2: memory power built on them is an artefact. The 26 nangate45 macros
(``fakeram45_*.lib``) come from bsg_fakeram, which runs CACTI per shape
(github.com/bespoke-silicon-group/bsg_fakeram ``README.md``: "depends on lightly modified
version of Cacti for area, power, and timing modeling"; ``scripts/utils/class_memory.py`` reads
CACTI's access time, dynamic energy, standby leakage and area, ``scripts/utils/generate_lib.py``
writes them as clk->q, clk ``internal_power``, ``cell_leakage_power``, ``area``). This module
fits a CACTI-shaped closed form to those points and carries it to ASAP7 by measured ratios.

- **Points** (:func:`reference_macros`): each fakeram45 file in the units it states (ns,
  fF x V^2 = fJ, nW). Access energy: the clk pin's rise + fall internal energy, one access per
  edge pair, as :func:`.memory_power.macro_model` reads it; clk->q: ``rd_out``'s mean of
  ``cell_rise``/``cell_fall``. (bsg_fakeram's HEAD writes pJ under a 1 pF unit; the ORFS files
  state 1 fF, and fJ is CACTI's order: 6.9 pJ per edge for 2048 x 39.)
- **Width** (:func:`cacti_width`): bsg_fakeram sizes CACTI in whole bytes (``class_memory.py``,
  ``width_in_bytes = ceil(width_in_bits / 8)``: 64x25, 64x28 and 64x32 carry identical figures),
  so the fit and every estimate use 8 x ceil(w / 8) bits.
- **Form** (:data:`TERMS`): a non-negative sum of CACTI's scaling terms in ``d`` words, ``w``
  bits: ``fixed`` (control), ``width`` (sense amps, drivers), ``edge`` = sqrt(w d) (decoder and
  wordline drivers along a side of a square array; wire delay across it), ``cells`` = w d (bit
  cells: area, leakage, bitline load), ``routing`` = w sqrt(w d) (w bits carried across the
  array: CACTI's H-tree), ``decode`` = log2 d. Least squares on relative error (the points span
  two decades): every subset of terms that holds ``fixed`` is solved and any with a coefficient
  <= 0 dropped (the exact non-negative optimum); kept is the fewest terms within
  :data:`PARSIMONY` RMS of the best subset. ``fixed`` is always kept (decision): every macro
  pays its own control, clocking and sense timing whatever its size, and a form without it
  (energy RMS 0.135 rather than 0.167) makes any split into more, smaller macros look cheaper,
  so macro choice by energy would always split. Errors over the points are in each
  :class:`Fit` and :func:`model_summary`; for area and energy they are large (RMS ~0.15-0.19,
  worst ~0.3-0.45) because bsg_fakeram asks CACTI
  for the best cycle time (``cacti_config.py``: objective 0:0:0:100:0), whose organisation jumps
  between shapes (64x256 and 128x256 have the same area; 128x64 has 13 % more than 64x64 for
  twice the bits), which no smooth monotone form follows.
- **nangate45**: a shipped shape gives its Liberty figures exactly, any other shape the fit.
- **asap7**: the fit times one ratio per quantity, asap7 over nangate45, measured on a reference
  cell (:data:`REFERENCE_CELLS`, role :data:`SCALING_CELL`): energy by its driving pin's
  C_in x VDD^2 (charging gates is what bitlines and wordlines do), area by its area (INV x1 is
  a track height times the fewest poly pitches: the pitch product a bit cell is drawn in),
  access time by FO4 (load 4 x the inverter's C_in at the slew it makes there; a flop's clk->Q
  under the same), leakage by its leakage. ASAP7 TT RVT and Nangate typical: both 25 C.
  :func:`model_summary` adds the flop's factors (sensitivity to the cell) and model / fakeram7
  area and energy per macro (a cross-check, not a target: fakeram7 has no periphery).
"""

from __future__ import annotations

import gzip
import itertools
import math
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np

from .errors import PdkError
from .liberty import Liberty, LibertyGroup, pins, table_lookup
from .memory_power import MacroModel, macro_model
from .pdk import PLATFORMS
from .pdk import pdk_root as default_pdk_root

__all__ = ["SramEstimate", "Fit", "TERMS", "PARSIMONY", "QUANTITIES", "REFERENCE_CELLS",
           "SCALING_CELL", "cacti_width", "reference_macros", "fitted_model", "scale_factors",
           "sram_estimate", "model_summary", "estimated", "macro_estimate", "with_estimate"]

#: Scaling terms of a CACTI array of ``d`` words of ``w`` (CACTI) bits.
TERMS = {
    "fixed": lambda d, w: np.ones_like(d, dtype=float),
    "width": lambda d, w: w,
    "edge": lambda d, w: np.sqrt(w * d),
    "cells": lambda d, w: w * d,
    "routing": lambda d, w: w * np.sqrt(w * d),
    "decode": lambda d, w: np.log2(d),
}
#: A form with fewer terms is kept while its RMS relative error is within this of the best's.
PARSIMONY = 0.02
QUANTITIES = ("access_energy_j", "leakage_w", "area_um2", "access_time_ns")

#: Per PDK, role -> (Liberty glob under <root>/<pdk>, cell): typical corner, RVT, drive 1.
REFERENCE_CELLS = {
    "nangate45": {"inverter": ("lib/NangateOpenCellLibrary_typical.lib*", "INV_X1"),
                  "flop": ("lib/NangateOpenCellLibrary_typical.lib*", "DFF_X1")},
    "asap7": {"inverter": ("lib/NLDM/asap7sc7p5t_INVBUF_RVT_TT_nldm_*.lib*", "INVx1_ASAP7_75t_R"),
              "flop": ("lib/NLDM/asap7sc7p5t_SEQ_RVT_TT_nldm_*.lib*", "DFFHQNx1_ASAP7_75t_R")},
}
#: The role whose ratios scale the fit; the other roles are reported as a sensitivity.
SCALING_CELL = "inverter"
_REFERENCE_PDK = "nangate45"


@dataclass(frozen=True)
class SramEstimate:
    """A ``depth`` words x ``width`` bits SRAM with one read/write port; ``source`` says whence."""
    depth: int
    width: int
    access_energy_j: float      # per access (clock rise + fall)
    leakage_w: float
    area_um2: float
    access_time_ns: float       # clk -> q
    source: str


@dataclass(frozen=True)
class Fit:
    """One quantity as ``sum(coefficients[t] x TERMS[t])``, with its relative errors
    (fit / Liberty - 1) over the reference macros and the macro it misses most."""
    quantity: str
    coefficients: dict[str, float]
    rms_error: float
    max_error: float
    worst: str

    def __call__(self, depth: int, width: int) -> float:
        d, w = np.float64(depth), np.float64(cacti_width(width))
        return float(sum(c * TERMS[t](d, w) for t, c in self.coefficients.items()))


def cacti_width(width: int) -> int:
    """The width CACTI modelled for a bsg_fakeram macro: whole bytes."""
    return 8 * math.ceil(width / 8)


def _root(pdk_root: Path | None) -> Path:
    return Path(pdk_root) if pdk_root is not None else default_pdk_root()


def _check_pdk(pdk_name: str) -> None:
    if pdk_name not in REFERENCE_CELLS:
        raise ValueError(f"no SRAM model for PDK {pdk_name!r}; supported: "
                         f"{', '.join(sorted(REFERENCE_CELLS))}")


@cache
def _liberty(path: Path) -> Liberty:
    """A Liberty file, zipped or not (the reader keeps the text, so the unzipped copy can go)."""
    if not path.name.endswith(".gz"):
        return Liberty(path)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / path.name[:-3]
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        return Liberty(plain)


def _one_file(root: Path, pdk: str, pattern: str) -> Path:
    found = sorted((root / pdk).glob(pattern))
    if not found:
        raise PdkError(f"PDK {pdk}: no file matching {pattern} under {root / pdk}")
    return found[0]


def _shape(path: Path) -> tuple[str, int, int]:
    """(cell name, depth, width) of a ``fakeram<node>_<depth>x<width>.lib`` file."""
    name = path.name.split(".")[0]
    depth, width = name.rsplit("_", 1)[1].split("x")
    return name, int(depth), int(width)


def _arc_s(lib: Liberty, outputs: list[LibertyGroup], pin: str, slew_s: float, load_f: float,
           kind: tuple[str, str] = ("cell_rise", "cell_fall")) -> float:
    """Mean of the ``kind`` tables of the arcs from ``pin`` to ``outputs``, in seconds."""
    values = [table_lookup(table, lib.library, slew=slew_s / lib.time_s, load=load_f / lib.cap_f)
              for out in outputs for arc in out.find("timing")
              if arc.attr("related_pin") == pin for k in kind for table in arc.find(k)]
    if not values:
        raise PdkError(f"{lib.path}: no {'/'.join(kind)} arc from pin {pin}")
    return sum(values) / len(values) * lib.time_s


def _pins(lib: Liberty, cell: LibertyGroup, direction: str) -> dict[str, LibertyGroup]:
    return {n: p for n, p in pins(cell, lib.library) if p.attr("direction") == direction}


@cache
def _cell_figures(root: Path, pdk: str, role: str) -> dict:
    """A reference cell's switching energy, area, FO4-condition delay and leakage (J, um^2,
    ns, W), with its file, name and driving pin."""
    pattern, name = REFERENCE_CELLS[pdk][role]
    path = _one_file(root, pdk, pattern)
    lib, cell = _liberty(path), _liberty(path).cell(name)
    inputs = _pins(lib, cell, "input")
    clocks = [n for n, p in inputs.items() if str(p.attr("clock", "false")) == "true"]
    pin = clocks[0] if clocks else next(iter(inputs))     # a flop's clock, a gate's input
    # FO4: the inverter into 4 copies of itself, at the slew it makes there (a fixed point).
    inv_pattern, inv_name = REFERENCE_CELLS[pdk]["inverter"]
    inv = _liberty(_one_file(root, pdk, inv_pattern))
    inv_cell = inv.cell(inv_name)
    inv_pin, inv_a = next(iter(_pins(inv, inv_cell, "input").items()))
    load, slew = 4 * float(inv_a.attr("capacitance")) * inv.cap_f, 0.0
    for _ in range(30):
        slew = _arc_s(inv, list(_pins(inv, inv_cell, "output").values()), inv_pin, slew, load,
                      ("rise_transition", "fall_transition"))
    # Nangate states cell_leakage_power; ASAP7 per-state groups and, without ``when``, their mean.
    plain = [float(g.attr("value")) for g in cell.find("leakage_power") if g.attr("when") is None]
    leakage = cell.attr("cell_leakage_power", sum(plain) if plain else None)
    if leakage is None:
        raise PdkError(f"{lib.path}: cell {name} states no unconditional leakage")
    delay = _arc_s(lib, list(_pins(lib, cell, "output").values()), pin, slew, load)
    return {"file": path.name, "cell": name, "pin": pin,
            "access_energy_j": float(inputs[pin].attr("capacitance")) * lib.cap_f
            * lib.voltage ** 2,
            "area_um2": lib.cell_area(name), "access_time_ns": delay * 1e9,
            "leakage_w": float(leakage) * lib.leakage_w}


@cache
def _reference_macros(root: Path) -> tuple[SramEstimate, ...]:
    macros = []
    for path in sorted((root / _REFERENCE_PDK).glob(PLATFORMS[_REFERENCE_PDK][1])):
        name, depth, width = _shape(path)
        model, lib = macro_model(name, depth, width, path), _liberty(path)
        tcq = _arc_s(lib, lib.cell(name).find("bus", "rd_out"), "clk", 0.0, 0.0)
        macros.append(SramEstimate(depth, width, model.clock_j, model.leakage_w,
                                   lib.cell_area(name), tcq * 1e9, f"{path.name} (Liberty)"))
    if not macros:
        raise PdkError(f"no {PLATFORMS[_REFERENCE_PDK][1]} under {root / _REFERENCE_PDK}")
    return tuple(macros)


def reference_macros(pdk_root: Path | None = None) -> tuple[SramEstimate, ...]:
    """Every fakeram45 macro's Liberty figures (J, W, um^2, ns); ``source`` names its file."""
    return _reference_macros(_root(pdk_root))


def _fit(quantity: str, macros: tuple[SramEstimate, ...]) -> Fit:
    d = np.array([m.depth for m in macros], float)
    w = np.array([cacti_width(m.width) for m in macros], float)
    y = np.array([getattr(m, quantity) for m in macros])
    basis = np.column_stack([f(d, w) for f in TERMS.values()]) / y[:, None]   # relative rows
    candidates = []
    for k in range(1, len(TERMS) + 1):
        for subset in itertools.combinations(range(len(TERMS)), k):
            if 0 not in subset:   # every form keeps "fixed": see TERMS
                continue
            coef, *_ = np.linalg.lstsq(basis[:, subset], np.ones_like(y), rcond=None)
            if (coef > 0).all():
                error = basis[:, subset] @ coef - 1
                candidates.append((float(np.sqrt(np.mean(error ** 2))), k, subset, coef, error))
    best = min(c[0] for c in candidates)
    rms, _, subset, coef, error = min((c for c in candidates if c[0] <= best + PARSIMONY),
                                      key=lambda c: (c[1], c[0]))
    names, worst = list(TERMS), int(np.argmax(np.abs(error)))
    return Fit(quantity, {names[i]: float(c) for i, c in zip(subset, coef, strict=True)},
               rms, float(np.abs(error).max()), macros[worst].source.split(" ")[0])


@cache
def _fitted_model(root: Path) -> dict[str, Fit]:
    macros = _reference_macros(root)
    return {q: _fit(q, macros) for q in QUANTITIES}


def fitted_model(pdk_root: Path | None = None) -> dict[str, Fit]:
    """quantity -> :class:`Fit` over the fakeram45 macros (nangate45: J, W, um^2, ns)."""
    return _fitted_model(_root(pdk_root))


def scale_factors(pdk_name: str, pdk_root: Path | None = None,
                  role: str = SCALING_CELL) -> dict[str, dict]:
    """quantity -> {"factor": ``pdk_name`` over nangate45, and each PDK's cell figure, cell,
    pin and file}, measured on reference cell ``role``."""
    _check_pdk(pdk_name)
    root = _root(pdk_root)
    cells = {p: _cell_figures(root, p, role) for p in (pdk_name, _REFERENCE_PDK)}
    return {q: {"factor": cells[pdk_name][q] / cells[_REFERENCE_PDK][q],
                **{p: {k: c[k] for k in ("file", "cell", "pin", q)} for p, c in cells.items()}}
            for q in QUANTITIES}


def sram_estimate(pdk_name: str, depth: int, width: int,
                  pdk_root: Path | None = None) -> SramEstimate:
    """Access energy, leakage, area and clk->q of a ``depth`` x ``width`` 1RW SRAM: on
    "nangate45" a shipped fakeram45 shape's Liberty figures, else the fit; on "asap7" the fit
    times :func:`scale_factors`. Raises ValueError for another PDK or a non-positive shape."""
    _check_pdk(pdk_name)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (depth, width)):
        raise ValueError(f"SRAM shape {depth!r} x {width!r}: depth (words) and width (bits) "
                         f"must be positive integers")
    root = _root(pdk_root)
    macros = _reference_macros(root)
    source = f"fit to {len(macros)} fakeram45 macros"
    if pdk_name == _REFERENCE_PDK:
        scale = dict.fromkeys(QUANTITIES, 1.0)
        for macro in macros:
            if (macro.depth, macro.width) == (depth, width):
                return macro
    else:
        scale = {q: s["factor"] for q, s in scale_factors(pdk_name, root).items()}
        source += f" x {pdk_name}/{_REFERENCE_PDK} {SCALING_CELL} ratios"
    fits = _fitted_model(root)
    return SramEstimate(depth, width, *(fits[q](depth, width) * scale[q] for q in QUANTITIES),
                        source)


def model_summary(pdk_name: str, pdk_root: Path | None = None) -> dict:
    """What :func:`sram_estimate` on ``pdk_name`` rests on, for a report: the fit (terms,
    coefficients, errors); off nangate45 also the scale factors with their cells and files,
    the factors on the other reference cells (sensitivity), and model / Liberty area and
    energy for each of the PDK's own macros."""
    _check_pdk(pdk_name)
    root = _root(pdk_root)
    summary = {
        "pdk": pdk_name,
        "reference": f"{len(_reference_macros(root))} fakeram45 macros (bsg_fakeram: CACTI) "
                     f"under {root / _REFERENCE_PDK}",
        "width_rule": "CACTI width: 8 x ceil(width / 8) bits",
        "fit": {q: {"terms": dict(f.coefficients), "rms_rel_error": f.rms_error,
                    "max_rel_error": f.max_error, "worst_macro": f.worst}
                for q, f in _fitted_model(root).items()},
    }
    if pdk_name == _REFERENCE_PDK:
        return summary
    summary["scale"] = {"role": SCALING_CELL, **scale_factors(pdk_name, root)}
    summary["sensitivity"] = {role: {q: s["factor"] for q, s in
                                     scale_factors(pdk_name, root, role).items()}
                              for role in REFERENCE_CELLS[pdk_name] if role != SCALING_CELL}
    checks = []
    for path in sorted((root / pdk_name).glob(PLATFORMS[pdk_name][1])):
        name, depth, width = _shape(path)
        liberty_j = macro_model(name, depth, width, path).clock_j
        liberty_um2 = _liberty(path).cell_area(name)
        model = sram_estimate(pdk_name, depth, width, root)
        checks.append({"macro": name, "liberty_area_um2": liberty_um2,
                       "model_area_um2": model.area_um2,
                       "area_ratio": model.area_um2 / liberty_um2,
                       "liberty_energy_j": liberty_j, "model_energy_j": model.access_energy_j,
                       "energy_ratio": model.access_energy_j / liberty_j})
    summary["macro_cross_check"] = checks
    return summary


def estimated(pdk_name: str) -> bool:
    """Whether :func:`sram_estimate` covers ``pdk_name``'s macros."""
    return pdk_name in REFERENCE_CELLS


def macro_estimate(pdk, macro) -> SramEstimate | None:
    """The estimate of one of ``pdk``'s macros (a :class:`memwall.flows.pdk.Macro`), or None
    where the PDK has none (its Liberty figures stand)."""
    if not estimated(pdk.name):
        return None
    return sram_estimate(pdk.name, macro.depth, macro.width, Path(pdk.root).parent)


def with_estimate(pdk, macro, model: MacroModel) -> MacroModel:
    """``model`` (the macro's Liberty power) with the estimate's access energy and leakage in
    place of the Liberty's: the figures memory power is charged from. Pin energies stay."""
    estimate = macro_estimate(pdk, macro)
    if estimate is None:
        return model
    return replace(model, clock_j=estimate.access_energy_j, leakage_w=estimate.leakage_w)
