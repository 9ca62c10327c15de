"""The logic energy the PIM model charges: the committed fits are of today's RTL, the fit
recovers known energies, and a config resolves to its fit, a scaled estimate or its override."""

import dataclasses

import numpy as np
import pytest

from memwall.config import ConfigError, config_from_dict, load_config
from memwall.families.pim import calibrate
from memwall.flows.provenance import rtl_sha256
from memwall.gen import generate
from memwall.golden.pim.logic import LOGIC_TERMS, load_calibration, logic_key, logic_terms


def test_every_committed_fit_is_declared():
    assert set(load_calibration()) == set(calibrate.CALIBRATED) <= set(calibrate.CONFIGS)


@pytest.mark.parametrize("name", calibrate.CALIBRATED)
def test_the_committed_fit_is_of_todays_rtl(name, tmp_path):
    """A changed controller or PU must be re-synthesised and re-calibrated (the command is in
    golden/pim/logic.py)."""
    entry = load_calibration().get(name)
    assert entry is not None, f"no fit for {name}: run python -m memwall.families.pim.calibrate"
    cfg = load_config(name)
    assert rtl_sha256(generate(cfg, tmp_path)) == entry["rtl_sha256"], (
        f"{name}'s RTL changed since its fit: memwall synth {name} --pdk asap7, then "
        f"python -m memwall.families.pim.calibrate {name}")
    assert entry["key"] == logic_key(cfg)
    for variant in calibrate.VARIANTS:
        fit = entry[variant]
        assert all(np.isfinite(fit[t]) for t in LOGIC_TERMS)
        assert fit["e_cycle_pj"] > 0 and fit["leakage_mw"] > 0
        held = [r for r in fit["runs"] if r["held_out"]]
        assert len(held) == 2 and all(abs(r["error"]) < 0.15 for r in held), held
    assert entry["clock_gated"]["e_cycle_pj"] < entry["ungated"]["e_cycle_pj"]


def _runs(terms: dict, leakage: float = 0.5) -> list[dict]:
    """Synthetic runs whose energies follow ``terms`` exactly."""
    shapes = [(1000, 800, 400, 100), (1000, 0, 0, 100), (1000, 800, 0, 100),
              (1300, 800, 400, 400), (200, 100, 50, 10), (1000, 700, 390, 100)]
    runs = []
    for n, (cycles, ones, toggles, writes) in enumerate(shapes):
        dynamic = (terms["e_cycle_pj"] * cycles + terms["e_one_pj"] * ones
                   + terms["e_toggle_pj"] * toggles + terms["e_write_pj"] * writes)
        runs.append({"name": ("check_" if n >= 4 else "run") + str(n), "cycles": cycles,
                     "input_ones": ones, "input_toggles": toggles, "writes": writes,
                     "power_mw": {"leakage": leakage},
                     "energy_pj": {"total": dynamic + 7.0, "leakage": 7.0}})
    return runs


def test_the_fit_recovers_known_energies():
    terms = {"e_cycle_pj": 70.0, "e_one_pj": 3.0, "e_toggle_pj": 5.0, "e_write_pj": 11.0}
    got = calibrate.fit(_runs(terms))
    for t, v in terms.items():
        assert got[t] == pytest.approx(v)
    assert got["leakage_mw"] == 0.5
    assert [r["held_out"] for r in got["runs"]] == [False] * 4 + [True] * 2
    assert all(abs(r["error"]) < 1e-9 for r in got["runs"])


def test_runs_that_do_not_separate_the_terms_are_refused():
    runs = _runs({"e_cycle_pj": 1.0, "e_one_pj": 1.0, "e_toggle_pj": 1.0, "e_write_pj": 1.0})
    for r in runs:
        r["writes"] = r["cycles"] / 10            # writes proportional to cycles
    with pytest.raises(ValueError, match="do not separate"):
        calibrate.fit(runs)


def test_a_config_resolves_to_its_fit_an_estimate_or_its_override():
    exact = load_config("pim_small")
    terms = logic_terms(exact)
    assert terms["measured"] and "fitted from pim_small" in terms["source"]
    entry = load_calibration()["pim_small"]
    assert logic_terms(exact)["e_cycle_pj"] == entry["clock_gated"]["e_cycle_pj"]
    ungated = dataclasses.replace(exact, logic_clock_gating=False)
    assert logic_terms(ungated)["e_cycle_pj"] == entry["ungated"]["e_cycle_pj"]
    wider = dataclasses.replace(exact, cols=2 * exact.cols)
    assert not logic_terms(wider)["measured"] and "scaled from" in logic_terms(wider)["source"]
    override = dataclasses.replace(exact, logic_energy=dict.fromkeys(LOGIC_TERMS, 1.0))
    assert logic_terms(override)["source"].startswith("config override")
    assert logic_terms(override)["e_toggle_pj"] == 1.0


@pytest.mark.parametrize("value, match", [
    ("measured", "must be \"calibrated\" or a mapping"),
    ({"e_cycle_pj": 1.0}, "must be \"calibrated\" or a mapping"),
    (dict.fromkeys(LOGIC_TERMS, -1.0), "e_cycle_pj -1.0"),
])
def test_a_bad_logic_energy_is_refused(value, match):
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"unit": "pim", "logic_energy": value}, "t.yaml", "t")
