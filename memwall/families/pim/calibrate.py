"""Logic energy of the PIM controller and PU, fitted from the project's own synthesis.

``python -m memwall.families.pim.calibrate [CONFIG ...]`` (default: the synthesised PIM
configs) re-uses ``memwall synth <config> --pdk asap7``'s netlist and powers it under
:func:`calibration_workloads`: scheduled GEMMs chosen to vary, one at a time, what the logic
does per cycle: random operands under the best schedule; the same with all-zero inputs (every
sense amp gated, the PU adds zeros) and all-one inputs (every product formed); a schedule that
reloads every weight tile for each input row; a GEMV of another shape, kept out of the fit as
a check. Each run's energy is OpenSTA's power (internal, switching, clock tree, memories)
over its simulated cycles at the config's clock; its counters are the golden model's
(:func:`memwall.golden.pim.closed_form.counts`, equal to the RTL's). The fit, by least squares
over the fitted runs, is

    E_dynamic = e_cycle * cycles + e_one * input_ones + e_toggle * input_toggles
                + e_write * writes                                                (pJ)

with leakage kept apart as a power (``leakage_mw``, the runs' mean), so a slower schedule pays
for its time. The data terms: ``input_ones = activations * p`` (``p`` the inputs' density of 1
bits: the activations whose broadcast bit is 1, each forming its row's products) and
``input_toggles = activations * 2 p (1 - p)`` (the expected toggles of the broadcast bit from one
activation to the next when the bits are independent). Both are needed: all-one inputs cost
more than all-zero ones, and random ones (half the 1 bits, but toggling) more than either.
Four runs fit the four terms; the ``check_`` runs (a GEMV of another shape, and int8 inputs
drawn from a Laplace distribution, as a transformer's activations are: mostly small, so
density well away from 0.5) are held out and show how well the fit predicts.
The fit, each run's measured and fitted energy and the held-out run's error are written to
``golden/pim/logic_calibration.json`` with the RTL's and flow's versions, which a test checks
against the current RTL (a stale fit fails it). :mod:`memwall.golden.pim.logic` reads it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from memwall import paths
from memwall.config import load_config
from memwall.family import PowerWorkload
from memwall.files import dumps_json
from memwall.golden.pim.logic import logic_key

__all__ = ["calibration_workloads", "fit", "calibrate", "main", "CONFIGS", "PDK", "TERMS"]

CONFIGS = ("pim_small", "pim_small_bitserial", "pim_paper", "pim_paper_bitserial")
#: The configs whose fit is committed (golden/pim/logic_calibration.json); the others'
#: logic is scaled from the nearest fit until `make calibrate` has run on them.
CALIBRATED = ("pim_small", "pim_small_bitserial")
PDK = "asap7"
#: Fitted per-event energies (pJ), in the order of the fit's columns.
TERMS = ("e_cycle_pj", "e_one_pj", "e_toggle_pj", "e_write_pj")
#: Runs kept out of the fit, to check it, are named with this prefix.
HELD_OUT = "check_"
#: Scale of the Laplace-distributed inputs of the ``check_laplace`` run (in input LSBs).
LAPLACE_SCALE = 6.0
SEED = 2026


def _gemms(cfg):
    """Named GEMMs ``(name, description, a, b, schedule)`` of the calibration."""
    from memwall.families.pim.workloads import power_gemm
    from memwall.golden.pim.macro import Schedule

    _a, b = power_gemm(cfg)
    b = b[:max(2, cfg.rows // cfg.planes)]        # one k-tile of a full macro's rows
    k, n = b.shape
    m = 2
    rng = np.random.default_rng(SEED)
    lo = -(1 << (cfg.input_bits - 1)) if cfg.input_signed else 0
    hi = (1 << (cfg.input_bits - 1)) if cfg.input_signed else 1 << cfg.input_bits
    a = rng.integers(lo, hi, size=(m, k), dtype=np.int64)
    ones_in = -1 if cfg.input_signed else (1 << cfg.input_bits) - 1
    # Fixed schedules (not the search's, which depends on this fit): the whole k range in one
    # tile, the widest n tile the rows hold. Each weight tile written once and kept while the
    # two rows stream past it (m innermost), against m outermost with one row per tile:
    # every tile rewritten per row (at least two n tiles, so consecutive steps differ: a
    # dot-product PU's two outputs may fit one tile).
    tn = cfg.fields if cfg.row_wise else max(1, cfg.rows // (cfg.planes * -(-k // cfg.fields)))
    resident = _fitting(cfg, Schedule(m, k, n, m, k, tn, "knm", 0))
    reload = _fitting(cfg, Schedule(m, k, n, 1, k, tn if n > tn else max(1, n // 2), "mkn", 0))
    n1 = cfg.fields if cfg.row_wise else 1
    a1 = rng.integers(lo, hi, size=(1, k), dtype=np.int64)
    check = _fitting(cfg, Schedule(1, k, n1, 1, k, min(tn, n1), "mkn", 0))
    shape = f"GEMM {m}x{k}x{n}"
    return [("random", f"{shape}, seeded random operands, schedule {resident}", a, b,
             resident),
            ("zeros", "the same with all-zero inputs", np.zeros_like(a), b, resident),
            ("ones", f"the same with every input bit 1 (inputs {ones_in})",
             np.full_like(a, ones_in), b, resident),
            ("reload", f"{shape}, the random inputs, schedule {reload}: every weight tile "
             "rewritten for each input row", a, b, reload),
            ("check_gemv", f"GEMV 1x{k}x{n1}, random inputs, schedule {check} (held out of "
             "the fit)", a1, b[:, :n1], check),
            ("check_laplace", f"{shape}, inputs Laplace(0, {LAPLACE_SCALE:g}) rounded and "
             f"clipped to the input range, schedule {resident} (held out of the fit)",
             laplace_inputs(cfg, rng, (m, k)), b, resident)]


def _fitting(cfg, schedule):
    from memwall.golden.pim.mapping import fit_problems

    problems = fit_problems(cfg, schedule)
    if problems:
        raise ValueError(f"calibration schedule {schedule} does not fit {cfg.name}: "
                         f"{problems[0]}")
    return schedule


def laplace_inputs(cfg, rng, shape) -> np.ndarray:
    """Integer inputs drawn from Laplace(0, :data:`LAPLACE_SCALE`), rounded and clipped to the
    config's input range (unsigned inputs: their magnitudes)."""
    x = np.rint(rng.laplace(0.0, LAPLACE_SCALE, size=shape)).astype(np.int64)
    if not cfg.input_signed:
        return np.clip(np.abs(x), 0, (1 << cfg.input_bits) - 1)
    return np.clip(x, -(1 << (cfg.input_bits - 1)), (1 << (cfg.input_bits - 1)) - 1)


def calibration_workloads(cfg) -> tuple[dict[str, PowerWorkload], list[dict]]:
    """The runs as power workloads of the synthesised top, and each run's golden counters."""
    from memwall.golden.pim.closed_form import counts
    from memwall.golden.pim.macro import input_ones
    from memwall.hdl.pim.core import TOP_NAME, PimCore
    from memwall.verif.pim.run import TB, gemm_params

    workloads, counters = {}, []
    for name, description, a, b, schedule in _gemms(cfg):
        workloads[name] = (PowerWorkload(TOP_NAME, PimCore(cfg), TB,
                                       gemm_params(cfg, [(a, b, schedule)]), "gemm",
                                       description=description))
        c = counts(cfg, schedule, ones=input_ones(cfg, a))
        bits = a.size * cfg.input_bits
        density = input_ones(cfg, a) / bits
        counters.append({"name": name, "input_density": density,
                         "input_ones": c["activations"] * density,
                         "input_toggles": c["activations"] * 2 * density * (1 - density),
                         **{k: int(v) for k, v in c.items()}})
    return workloads, counters


def _columns(run: dict) -> list[float]:
    return [run["cycles"], run["input_ones"], run["input_toggles"], run["writes"]]


#: The fits: the flow's total power as synthesised, and with its enable registers
#: clock-gated (the ICGs an ORFS/OpenROAD hand-off inserts; memwall.flows.clock_gating).
VARIANTS = {"ungated": "total", "clock_gated": "clock_gated_total"}


def fit(runs: list[dict], total: str = "total") -> dict:
    """Least-squares per-event energies from runs with ``cycles`` (simulated), the golden
    counters and ``energy_pj`` (the flow's power over the run; ``total``: which total).
    Leakage is a power, the runs' mean. Returns the terms, ``leakage_mw`` and per run its
    measured and fitted dynamic energy and the relative error."""
    def dynamic(r):
        return r["energy_pj"][total] - r["energy_pj"]["leakage"]

    fitted = [r for r in runs if not r["name"].startswith(HELD_OUT)]
    x = np.array([_columns(r) for r in fitted], dtype=float)
    if np.linalg.matrix_rank(x) < len(TERMS):
        raise ValueError("the calibration runs do not separate " + ", ".join(TERMS)
                         + " : their columns (cycles, input ones, input toggles, writes) are "
                         + str(x.tolist()))
    coef, *_ = np.linalg.lstsq(x, np.array([dynamic(r) for r in fitted]), rcond=None)
    per_run = []
    for r in runs:
        model = float(np.dot(_columns(r), coef))
        per_run.append({"name": r["name"], "measured_dynamic_pj": dynamic(r),
                        "fitted_dynamic_pj": model, "error": model / dynamic(r) - 1,
                        "held_out": r["name"].startswith(HELD_OUT)})
    leakage = float(np.mean([r["power_mw"]["leakage"] for r in runs]))
    return {**{t: float(c) for t, c in zip(TERMS, coef, strict=True)}, "leakage_mw": leakage,
            "runs": per_run}


def _run_record(r: dict) -> dict:
    keys = ("name", "description", "cycles", "golden_cycles", "activations", "input_density",
            "input_ones", "input_toggles", "writes", "power_mw", "wns_ns")
    return {k: r[k] for k in keys}


def calibrate(config: str, build_root: Path = paths.REPO / "build") -> dict:
    """Power the synthesised ``config`` under the calibration runs and fit them."""
    from memwall.flows.provenance import flow_version, rtl_sha256
    from memwall.workload_power import power_under

    cfg = load_config(config)
    workloads, counters = calibration_workloads(cfg)
    measured = power_under(cfg.name, PDK, workloads, build_root=build_root,
                           label="logic_calibration")
    runs = []
    for m, c in zip(measured, counters, strict=True):
        c = {k: v for k, v in c.items() if k != "cycles"}   # the simulated cycles count
        runs.append({**c, **m, "golden_cycles": int(counters[len(runs)]["cycles"])})
    gen = build_root / cfg.name
    return {"config": cfg.name, "pdk": PDK, "clock_mhz": cfg.clock_mhz,
            "key": logic_key(cfg), "rtl_sha256": rtl_sha256(gen),
            "flow_version": flow_version(), "worst_slack_ns": min(r["wns_ns"] for r in measured),
            **{variant: fit(runs, total) for variant, total in VARIANTS.items()},
            "runs": [_run_record(r) for r in runs]}


def main(argv: list[str] | None = None) -> int:
    from memwall.golden.pim.logic import CALIBRATION_FILE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--build-root", type=Path, default=paths.REPO / "build")
    args = parser.parse_args(argv)
    for name in args.configs:
        entry = calibrate(name, args.build_root)
        (args.build_root / name / "logic_calibration" / PDK / "fit.json").write_text(
            dumps_json(entry, indent=1) + "\n")
        table = dict(json.loads(CALIBRATION_FILE.read_text())) \
            if CALIBRATION_FILE.is_file() else {}          # read now: another run may have written
        table[entry["config"]] = entry
        for variant in VARIANTS:
            result = entry[variant]
            for r in result["runs"]:
                print(f"{name} {variant} {r['name']:>13}: measured "
                      f"{r['measured_dynamic_pj'] / 1e3:.2f} nJ, fitted "
                      f"{r['fitted_dynamic_pj'] / 1e3:.2f} nJ ({100 * r['error']:+.1f} %)"
                      + (" held out" if r["held_out"] else ""), flush=True)
            print(f"{name} {variant}: " + ", ".join(f"{t} {result[t]:.4g}" for t in TERMS)
                  + f", leakage {result['leakage_mw']:.4g} mW", flush=True)
        CALIBRATION_FILE.write_text(dumps_json(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
