"""Logic energy of the PIM controller and PU: the synthesis calibration, resolved per config.

``golden/pim/logic_calibration.json`` holds the fits of ``python -m
memwall.families.pim.calibrate`` (its docstring defines them): per synthesised config, the
energy per cycle, per activation with a 1 input bit, per expected input-bit toggle and per
row write, and the leakage power. A config's ``logic_energy`` is either ``"calibrated"`` (the
default) or a mapping of those five values (an override, named as one in every report).

``"calibrated"`` takes the fit of the config whose logic parameters
(:func:`logic_key`) are equal; else the fit of the nearest
calibrated config of the same PU (processing and operation; else any), with the per-event
terms and the leakage scaled by the ratio of PU fields (the PU's adders and accumulators, and
the row-wide input registers, grow with the fields; the controller's per-row state does not,
so this is an estimate, said so in ``source``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from memwall.families.pim.config import LOGIC_TERMS

__all__ = ["CALIBRATION_FILE", "LOGIC_TERMS", "load_calibration", "resolve", "logic_energy",
           "logic_terms", "logic_key"]

CALIBRATION_FILE = Path(__file__).resolve().parent / "logic_calibration.json"
#: resolve() per distinct logic key, override and gating choice (configs are remade often).
_RESOLVED: dict[str, dict] = {}


def logic_key(cfg) -> dict:
    """The parameters that shape the synthesised controller and PU."""
    names = ("rows", "cols", "subarrays", "banks", "processing", "operation", "weight_bits",
             "input_bits", "weight_signed", "input_signed", "acc_bits", "input_beats")
    return {n: getattr(cfg, n) for n in names}


def logic_terms(cfg) -> dict:
    """:func:`resolve`, once per distinct logic key, override and gating choice."""
    key = json.dumps([logic_key(cfg), cfg.logic_energy, cfg.logic_clock_gating],
                     sort_keys=True)
    if key not in _RESOLVED:
        _RESOLVED[key] = resolve(cfg)
    return _RESOLVED[key]


@lru_cache(maxsize=1)
def _table(text: str) -> dict:
    return json.loads(text) if text else {}


def load_calibration() -> dict:
    """The calibration file's entries by config name (empty where none is written)."""
    text = CALIBRATION_FILE.read_text() if CALIBRATION_FILE.is_file() else ""
    return _table(text)


def _fields(key: dict) -> int:
    width = key["cols"] * key["subarrays"] * key["banks"]
    return width // (1 if key["processing"] == "bit_serial" else key["weight_bits"])


def resolve(cfg) -> dict:
    """``{term: value, ..., "source": str, "measured": bool}`` of ``cfg``'s logic energy."""
    if isinstance(cfg.logic_energy, dict):
        return {**{t: float(cfg.logic_energy[t]) for t in LOGIC_TERMS},
                "source": "config override (logic_energy), not this project's measurement",
                "measured": False}
    table = load_calibration()
    if not table:
        raise LookupError(f"no logic calibration in {CALIBRATION_FILE}: run `python -m "
                          "memwall.families.pim.calibrate` (after `memwall synth pim_paper "
                          "--pdk asap7`), or give logic_energy in the config")
    key = logic_key(cfg)
    variant = "clock_gated" if cfg.logic_clock_gating else "ungated"
    gating = ("with its enable registers clock-gated" if cfg.logic_clock_gating
              else "without clock gating")
    for name, entry in sorted(table.items()):
        if entry["key"] == key:
            return {**{t: entry[variant][t] for t in LOGIC_TERMS}, "measured": True,
                    "source": f"fitted from {name}'s synthesis ({entry['pdk']}, "
                              f"{entry['clock_mhz']:g} MHz), {gating}"}
    same = [n for n, e in table.items() if (e["key"]["processing"], e["key"]["operation"])
            == (key["processing"], key["operation"])]
    names = same or sorted(table)
    fields = _fields(key)
    name = min(sorted(names), key=lambda n: abs(_fields(table[n]["key"]) - fields))
    entry = table[name]
    scale = fields / _fields(entry["key"])
    kind = "" if same else (f", a {entry['key']['processing']} {entry['key']['operation']} PU:"
                            " no fit of this PU type")
    return {**{t: entry[variant][t] * scale for t in LOGIC_TERMS}, "measured": False,
            "source": f"scaled from {name}'s fit ({gating}) by fields {fields}/"
                      f"{_fields(entry['key'])}{kind} (an estimate)"}


def logic_energy(cfg, cycles, activations, density, writes) -> dict:
    """``{"logic_dynamic", "logic_leakage"}`` in pJ for these counts (numbers or arrays);
    ``density``: the inputs' fraction of 1 bits."""
    terms = logic_terms(cfg)
    toggles = activations * 2 * density * (1 - density)
    dynamic = (terms["e_cycle_pj"] * cycles + terms["e_one_pj"] * activations * density
               + terms["e_toggle_pj"] * toggles + terms["e_write_pj"] * writes)
    leakage = terms["leakage_mw"] * cycles * 1e3 / cfg.clock_mhz     # mW x ns = pJ
    return {"logic_dynamic": dynamic, "logic_leakage": leakage}
