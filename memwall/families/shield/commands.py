"""``memwall model|golden|run shield``: a workload trace through the analytic model, the
golden refresh schedule (counts, cycles and energy, one access a cycle), or the generated
refresh controller in simulation."""

from __future__ import annotations

import argparse

from memwall.command import UsageError, check_sim_cycles, output_path, write_json_output
from memwall.family import Command
from memwall.files import dumps_json

__all__ = ["COMMANDS"]


def _trace(args, cfg):
    from memwall.golden.shield.trace import TraceError, load_trace

    try:
        return load_trace(args.trace, cfg)
    except TraceError as exc:
        raise UsageError(str(exc)) from None


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, help="workload trace (.yaml)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def model_command(args, cfg) -> None:
    from memwall.golden.shield import refresh as shield

    result = shield.model_trace(cfg, _trace(args, cfg))
    print(dumps_json(result) if args.json else shield.format_report(result))


def _golden_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, help="workload trace (.yaml)")
    parser.add_argument("--out", required=True,
                        help="output .json: refresh counts per bank, cycles, energies, P_base, "
                             "P_SHIELD and η (the keys `run shield` writes, less rtl and model)")


def golden_command(args, cfg) -> None:
    from memwall.golden.shield import refresh as shield

    output_path(args.out)
    result = shield.model_trace(cfg, _trace(args, cfg))
    write_json_output(args.out, result)
    print(shield.format_report(result))
    print(f"memwall: wrote {args.out}")


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", required=True, help="workload trace (.yaml)")
    parser.add_argument("--out", required=True,
                        help="output .json: golden's keys with the counts and cycles measured "
                             "on the RTL, plus rtl (what the simulation saw) and model (the "
                             "golden result)")


def run_command(args, cfg) -> None:
    from memwall.golden.shield import refresh as shield
    from memwall.verif.shield.run import run_trace

    output_path(args.out)
    trace = _trace(args, cfg)
    # One word per cycle plus idle time: what the simulation must at least run.
    check_sim_cycles(trace.cycles(cfg.clock_mhz), args.max_cycles,
                     f"trace {args.trace} at {cfg.clock_mhz:g} MHz")
    rtl = run_trace(cfg, args.trace, sim=args.sim)
    result = shield.power_from_counts(cfg, trace, rtl["refresh_counts"], rtl["cycles"])
    result["rtl"] = rtl
    write_json_output(args.out, result)
    print(shield.format_report(result))
    print(f"memwall: wrote {args.out}")


COMMANDS = {
    "model": Command("refresh counts, P_SHIELD and η of a trace (paper Eq. 4-9)",
                     _model_arguments, model_command),
    "golden": Command("a trace through the golden refresh schedule, one access a cycle: refresh "
                      "counts, cycles and their energy (the RTL adds the cycles an access waits "
                      "for a refresh: run's rtl.stall_cycles, with the golden counts on the "
                      "trace as the RTL ran it)", _golden_arguments, golden_command),
    "run": Command("a trace through the generated refresh controller, in simulation",
                   _run_arguments, run_command),
}
