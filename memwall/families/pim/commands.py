"""``memwall model|golden|run pim``: the retention-aware scheduler on a GEMM shape, and a GEMM of
your own integers through the golden event simulator or the generated RTL."""

from __future__ import annotations

import argparse
import re

import numpy as np

from memwall.command import (
    DEFAULT_MAX_SIM_CYCLES,
    UsageError,
    check_sim_cycles,
    output_path,
    positive_int,
)
from memwall.family import Command
from memwall.files import dumps_json, write_npz_atomic
from memwall.inputs import ArraySpec, InputError, load_npz, shown

__all__ = ["COMMANDS", "load_operands", "save_gemm_outputs"]

_INT_DTYPES = tuple(np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                           "int64", "uint64"))


def _gemm_option(text: str, cfg) -> tuple[int, int, int]:
    """``--gemm M,K,N``: three integers in [1, max_dim]."""
    parts = text.split(",")
    if len(parts) != 3 or not all(re.fullmatch(r"\s*[0-9]{1,9}\s*", p) for p in parts):
        raise UsageError(f"--gemm {shown(text)}: expected three positive integers M,K,N")
    values = tuple(int(p) for p in parts)
    for name, value in zip("MKN", values, strict=True):
        if not 1 <= value <= cfg.max_dim:
            raise UsageError(f"--gemm {text}: {name} = {value:,} must be in [1, "
                             f"{cfg.max_dim:,}] (the config's max_dim)")
    return values


def _bound_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-search-steps", type=positive_int, default=None, metavar="N",
                        help="the schedule search's work bound in loop-nest steps (default "
                             "30,000,000: under a minute and 2 GiB); a search past it is "
                             "refused before it starts, with its estimate")


def _bound(args):
    from memwall.golden.pim.schedule import DEFAULT_BOUND, SearchBound

    steps = args.max_search_steps
    return DEFAULT_BOUND if steps is None else SearchBound.allowing(steps)


def load_operands(path, cfg) -> tuple[np.ndarray, np.ndarray]:
    """``a`` (M, K) and ``b`` (K, N) integer arrays from an ``.npz``, checked against the
    config's precision (:func:`memwall.golden.pim.macro.check_operands`)."""
    from memwall.golden.pim.macro import OperandError, check_operands

    limit = cfg.max_dim
    expect = "2-D integer array"
    arrays = load_npz(path, {"a": ArraySpec(_INT_DTYPES, (limit, limit), f"(M, K) {expect}"),
                             "b": ArraySpec(_INT_DTYPES, (limit, limit), f"(K, N) {expect}")},
                      what="--inputs")
    a, b = arrays["a"], arrays["b"]
    try:
        check_operands(cfg, a, b)
    except OperandError as exc:
        raise InputError(f"--inputs {path}: {exc}") from None
    return a.astype(np.int64), b.astype(np.int64)


def save_gemm_outputs(path, result: dict, cfg, schedule) -> None:
    """``c`` (M, N) int64, ``cycles`` and every event counter as int64 scalars; ``vpd``, the
    schedule's VPD level, and per macro counter ``per_vpd_<name>``, an int64 array of one entry
    per level of the config's macro table (a GEMM runs at one level, so the whole count is at
    ``vpd``: the split the energy model charges by), atomically."""
    from memwall.golden.pim.macro import MACRO_COUNTERS

    arrays = {"c": np.asarray(result["c"], dtype=np.int64),
              "cycles": np.int64(result["cycles"]), "vpd": np.int64(schedule.vpd)}
    for name, value in result["counters"].items():
        arrays[name] = np.int64(value)
    for name in MACRO_COUNTERS:
        split = np.zeros(cfg.levels, dtype=np.int64)
        split[schedule.vpd] = result["counters"][name]
        arrays[f"per_vpd_{name}"] = split
    write_npz_atomic(path, arrays)


# --- model ----------------------------------------------------------------------------------

def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gemm", required=True, help="M,K,N: C (M,N) = A (M,K) @ B (K,N)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    _bound_argument(parser)


def model_command(args, cfg) -> None:
    from memwall.golden.pim import schedule as pim_schedule

    m, k, n = _gemm_option(args.gemm, cfg)
    result = pim_schedule.compare(cfg, m, k, n, bound=_bound(args))
    print(dumps_json(pim_schedule.as_json(result)) if args.json
          else pim_schedule.format_report(result))


# --- golden and run -------------------------------------------------------------------------

def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", required=True,
                        help="input .npz: a (M, K) and b (K, N) integers in the config's "
                             "precision")
    parser.add_argument("--out", required=True,
                        help="output .npz: c (M, N) int64, cycles, event counters by name "
                        "(run: the macro's from the RTL, the buffer's, the DRAM traffic and "
                        "the inputs' bits from the scheduler's closed form), vpd and the "
                        "macro's counters per VPD level (per_vpd_<name>)")
    _bound_argument(parser)


def _golden_arguments(parser: argparse.ArgumentParser) -> None:
    _data_arguments(parser)
    # The event simulator walks every cycle in Python (about 2 µs and 150 bytes a cycle here),
    # so it is bounded as memwall run is, from the searched schedule's cycles.
    parser.add_argument("--max-cycles", type=positive_int, default=DEFAULT_MAX_SIM_CYCLES,
                        help="refuse a GEMM whose schedule needs more cycles (default "
                             f"{DEFAULT_MAX_SIM_CYCLES:,}: seconds and under 1 GiB)")


def _scheduled(args, cfg):
    from memwall.golden.pim.macro import input_ones
    from memwall.golden.pim.schedule import search

    out = output_path(args.out)
    a, b = load_operands(args.inputs, cfg)
    best = search(cfg, a.shape[0], a.shape[1], b.shape[1], ones=input_ones(cfg, a),
                  bound=_bound(args))
    check_sim_cycles(best["cycles"], args.max_cycles,
                     f"--inputs {args.inputs} (M={a.shape[0]}, K={a.shape[1]}, N={b.shape[1]})")
    return out, a, b, best


def golden_command(args, cfg) -> None:
    from memwall.golden.pim.macro import simulate

    out, a, b, best = _scheduled(args, cfg)
    result = simulate(cfg, a, b, best["schedule"])
    save_gemm_outputs(out, result, cfg, best["schedule"])
    print(f"memwall: wrote {out} (M={a.shape[0]}, K={a.shape[1]}, N={b.shape[1]}, schedule "
          f"{best['schedule']}, {result['cycles']} cycles)")


def run_command(args, cfg) -> None:
    from memwall.golden.pim.closed_form import counts
    from memwall.golden.pim.macro import input_ones
    from memwall.verif.pim.run import run_gemm

    out, a, b, best = _scheduled(args, cfg)
    result = run_gemm(cfg, a, b, best["schedule"], sim=args.sim)
    # The counters the RTL has not (the buffer, a model; the DRAM traffic; the inputs' bits)
    # from the scheduler's closed form, so the file has every counter `golden` writes. The
    # testbench has checked the macro's counters against the same closed form.
    model = counts(cfg, best["schedule"], ones=input_ones(cfg, a))
    result["counters"] = {**{k: model[k] for k in best["counters"]}, **result["counters"]}
    save_gemm_outputs(out, result, cfg, best["schedule"])
    print(f"memwall: wrote {out} (M={a.shape[0]}, K={a.shape[1]}, N={b.shape[1]}, schedule "
          f"{best['schedule']}, {result['cycles']} cycles on the RTL)")


COMMANDS = {
    "model": Command("the retention-aware schedule of a GEMM, its energy, and the eDRAM and "
                     "Neural-Cache baselines", _model_arguments, model_command),
    "golden": Command("a GEMM of your integers through the event-level golden simulator",
                      _golden_arguments, golden_command),
    "run": Command("a GEMM of your integers through the generated pim_core, in simulation",
                   _data_arguments, run_command),
}
