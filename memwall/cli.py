"""The ``memwall`` command line.

Shared verbs (``gen``, ``configs``, ``units``, ``synth``, ``report``) work on any config; the
per-family verbs (``golden``, ``model``, ``run``) come from each family's description
(:mod:`memwall.family`), so ``memwall run <unit> --help`` shows only that unit's options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memwall.boundary import checkpoint, error, exit_status, guarded
from memwall.command import (
    DEFAULT_MAX_SIM_CYCLES,
    UsageError,
    fraction,
    jobs_int,
    margin_ps,
    mutant_count,
    output_folder,
    output_path,
    positive_int,
)
from memwall.config import available_configs, load_config
from memwall.family import COMMAND_VERBS, FamilyError, families, family
from memwall.flows.flow import BUILD_ROOT
from memwall.flows.memory_power import IDLE_ACCESS_FRACTION
from memwall.flows.pdk import PLATFORMS
from memwall.flows.report import REPORTS
from memwall.flows.sta import DEFAULT_SIGNOFF, SignOff
from memwall.progress import Progress
from memwall.sweep import RAY_INSTALL, SweepError

__all__ = ["main"]


_CONFIG_HELP = "config name (configs/<name>.yaml) or path to a .yaml file"


def _add_config(parser: argparse.ArgumentParser) -> None:
    """The config of every command that takes one: positional, or ``--config`` (the older
    spelling, kept as an alias). :func:`_settle_config` checks that exactly one was given."""
    parser.add_argument("config", nargs="?", help=_CONFIG_HELP)
    parser.add_argument("--config", dest="config_option", metavar="CONFIG",
                        help="the same as the positional config (an alias)")


def _settle_config(args) -> None:
    """``args.config`` from the positional or ``--config``; a usage error without one, or
    with two that differ."""
    if not hasattr(args, "config_option"):
        return
    given, option = args.config, args.config_option
    if given is not None and option is not None and given != option:
        raise UsageError(f"config given twice, as {given!r} and --config {option!r}; give it "
                         "once (positional, or --config)")
    args.config = given if given is not None else option
    if args.config is None:
        command = " ".join(filter(None, (args.command, getattr(args, "unit", None))))
        raise UsageError(f"{args.command}: no config given; name one ({_CONFIG_HELP}), e.g. "
                         f"'memwall {command} <config>'; 'memwall configs' lists the named "
                         "configs")


def _dispatch(args) -> None:
    _settle_config(args)
    args.func(args)


def _load(name: str, unit: str | None = None):
    cfg = load_config(name)
    if unit is not None and cfg.unit_name != unit:
        raise UsageError(f"config {name!r} is for unit {cfg.unit_name!r}, not {unit!r}")
    return cfg


def cmd_gen(args) -> None:
    from memwall import generate

    cfg = _load(args.config)
    out_root = output_folder(args.out)
    start = time.perf_counter()
    with Progress(plain=True if args.quiet else None) as progress:
        out = generate(cfg, out_root, progress)
    elapsed = time.perf_counter() - start
    modules = len(list((out / "rtl").glob("*.v")))
    print(f"memwall: wrote {out}/ ({modules} modules) in {elapsed:.2f} s")


def cmd_configs(args) -> None:
    for name in available_configs():
        cfg = load_config(name)
        print(f"{name:20s} unit={cfg.unit_name}")


def cmd_units(args) -> None:
    for name, fam in families().items():
        verbs = ", ".join(fam.commands) or "no commands"
        print(f"{name:10s} {fam.summary} [{verbs}]")


def cmd_family(args) -> None:
    """``memwall <verb> <unit>``: the family's command with its config loaded; ``run``'s
    simulations under ``--build``, their waveforms kept at ``--waves``."""
    fam = family(args.unit)
    cfg = _load(args.config, args.unit)
    if args.verb != "run":
        fam.commands[args.verb].run(args, cfg)
        return
    from memwall.verif.common.runner import WAVE_FORMATS, default_sim, run_options

    waves = None
    if args.waves is not None:
        sim = args.sim or default_sim()
        waves = output_path(args.waves, "--waves").resolve()
        if waves.suffix != WAVE_FORMATS[sim]:
            raise UsageError(f"--waves {args.waves}: {sim} writes {WAVE_FORMATS[sim]} "
                             f"waveforms; name the file *{WAVE_FORMATS[sim]} (or choose the "
                             "simulator with --sim: " + ", ".join(
                                 f"{s} {suffix}" for s, suffix in WAVE_FORMATS.items()) + ")")
    build = output_folder(args.build, "--build").resolve() if args.build is not None else None
    with run_options(build_root=build, waves=waves) as kept:
        fam.commands[args.verb].run(args, cfg)
    for path in kept:
        print(f"memwall: waveform {path}")


def cmd_synth(args) -> None:
    from memwall.flows.flow import run_flow

    _load(args.config)  # a bad config name fails here, before any tool runs
    output_folder(args.build, "--build")
    with Progress(plain=True if args.quiet else None) as progress:   # PdkError: exit 2
        run_flow(args.config, args.pdk, jobs=args.jobs, activity=not args.no_activity,
                 build_root=Path(args.build), progress=progress, flat_sta=args.flat_sta,
                 boundary=args.boundary, memory_idle=args.memory_idle,
                 signoff=SignOff(args.setup_margin_ps, args.hold_margin_ps))


def cmd_prove(args) -> None:
    from memwall.formal import ProofFailed, config_properties, prove

    _load(args.config)
    known = [p.name for p in config_properties(args.config)]
    if not known:
        raise UsageError(f"config {args.config!r}: its family declares no properties")
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        raise UsageError(f"--only {' '.join(unknown)}: not a property of {args.config}; "
                         f"its properties: {', '.join(known)}")
    results = prove(args.config, args.only, workers=args.workers, ray=args.ray)
    bad = []
    for r in results:
        depth = f"k-induction, depth {r['depth']}" if r["mode"] == "prove" else \
            f"BMC, {r['depth']} cycles"
        print(f"{r['status']:>8}  {r['name']}  ({depth}, {r['seconds']:.1f} s)")
        if r["status"] not in ("proved", "bounded"):
            bad.append(r)
            where = f"counterexample {r['trace']}" if r.get("trace") else f"log {r['log']}"
            print(f"          {where}")
    if args.record:
        from memwall.strength import record_proofs

        record_proofs(args.config, results)
    if bad:
        raise ProofFailed(f"{len(bad)} of {len(results)} properties of {args.config} do not "
                          f"hold or were not proved: {', '.join(r['name'] for r in bad)}")


def cmd_mutate(args) -> None:
    from memwall.mutate import mutate

    _load(args.config)
    entries = mutate(args.config, args.module, count=args.max, workers=args.workers,
                     ray=args.ray, recheck_unknown=args.recheck_unknown)
    for e in entries:
        score = f"{100 * e['score']:.1f} %" if e["score"] is not None else "-"
        print(f"{score:>8}  {e['module']}: {e['killed']} killed, {e['equivalent']} equivalent, "
              f"{e['surviving']} surviving of {e['mutants']} ({e['status']})")


def report_matrix(units: list[str] | None = None) -> list[tuple[str, str]]:
    """(config, PDK) pairs that ``memwall report --run`` synthesises: every family's matrix."""
    pairs = []
    for name, fam in families().items():
        if units and name not in units:
            continue
        pairs += [(config, pdk) for pdk, configs in fam.report_matrix.items()
                  for config in configs]
    return pairs


def report_job(config: str, pdk: str, build: str, jobs: int, force: bool) -> dict:
    """One cell of ``memwall report --run``'s matrix, as a sweep job (a worker process or a
    Ray task): generate the config's RTL (dropping results of RTL that has changed since), run
    the flow unless metrics of this design and flow exist (or ``force``; a row of another RTL,
    config or flow version is run again, :func:`memwall.flows.provenance.stale_reasons`), and
    return the metrics.json it wrote.

    ``build`` is absolute: on a Ray cluster it must be the same path on every node (a shared
    filesystem). The flow's progress lines go to the job's log (:attr:`memwall.sweep.Job.log`).
    """
    from memwall.flows.flow import metrics_path, run_flow
    from memwall.flows.provenance import design_digest, flow_version, stale_reasons
    from memwall.gen import generate

    root = Path(build)
    gen_dir = generate(_load(config), root)
    path = metrics_path(config, pdk, root)
    if not force and path.exists():
        force = bool(stale_reasons(json.loads(path.read_text()).get("provenance", {}),
                                   design_digest(gen_dir), flow_version()))
    if force or not path.exists():
        run_flow(config, pdk, jobs=jobs, build_root=root, progress=Progress(plain=True),
                 flat_sta=None)   # flat where it fits: the reference, and the slow corner
    return json.loads(path.read_text())


def report_jobs(matrix: list[tuple[str, str]], build: Path, jobs: int, force: bool) -> list:
    """The sweep jobs of ``matrix``: one per (config, PDK), ``jobs`` CPUs each; the jobs of one
    config run one at a time, since each regenerates ``build/<config>/`` and runs the same
    power simulation (one build folder per design)."""
    from memwall.sweep import Job

    root = build.resolve()
    return [Job(f"{config}/{pdk}", report_job, (config, pdk, str(root), jobs, force),
                cpus=jobs, exclusive=config, log=root / "logs" / "report" / f"{config}.{pdk}.log")
            for config, pdk in matrix]


def cmd_report(args) -> None:
    """``memwall report [--run]``: with ``--run``, first the report matrix through one sweep
    (:mod:`memwall.sweep`: local worker processes, or ``--ray ADDRESS``), then the tables."""
    from memwall.files import write_json_atomic
    from memwall.flows.flow import metrics_path
    from memwall.flows.pdk import find_pdk
    from memwall.flows.report import write_report
    from memwall.sweep import backend, run_sweep

    if not args.run and (args.ray is not None or args.workers is not None):
        raise UsageError("--ray and --workers go with --run")
    build = output_folder(args.build, "--build") if args.run else Path(args.build)
    output_folder(args.out)
    if args.run:
        matrix = report_matrix(args.only)
        # Before hours of work start: Ray installed and reachable, every PDK there.
        with backend(args.ray, args.workers) as runner, \
                Progress(plain=True if args.quiet else None) as progress:
            for pdk in sorted({pdk for _, pdk in matrix}):
                find_pdk(pdk, cache_root=build / "pdk")

            def keep(job, metrics: dict) -> None:
                # On a shared build folder the job's file is already here; otherwise (a Ray
                # node without it) the job's answer is written where the report reads it.
                config, pdk = job.args[:2]
                path = metrics_path(config, pdk, build)
                try:
                    here = json.loads(path.read_text())
                except (OSError, ValueError):
                    here = None
                if here != metrics:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_json_atomic(path, metrics)
                    progress.log(f"{job.name}: wrote {path} from the job's answer (the worker "
                                 f"did not write it in this build folder)")

            run_sweep(report_jobs(matrix, build, args.jobs, args.force), runner,
                      progress=progress, description="report --run: config x PDK",
                      on_result=keep)
    try:
        out = write_report(build, Path(args.out), units=args.only, allow_stale=args.allow_stale)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(f"memwall: wrote {out} and its CSV and plots")
    from memwall.paper_vs_ours import refresh

    print(refresh(Path(args.out)))


def _add_family_commands(sub) -> None:
    """``memwall golden|model|run <unit>``: one sub-parser per family that has the verb, with
    only that family's options."""
    known = families()
    for verb, help_text in COMMAND_VERBS.items():
        owners = {name: fam for name, fam in known.items() if verb in fam.commands}
        verb_parser = sub.add_parser(verb, help=help_text,
                                     description=f"{help_text}; units: {', '.join(owners)}")
        units = verb_parser.add_subparsers(dest="unit", required=True, metavar="unit",
                                           help="unit family: " + ", ".join(owners))
        for name, fam in owners.items():
            command = fam.commands[verb]
            parser = units.add_parser(name, help=command.help, description=command.help)
            _add_config(parser)
            command.add_arguments(parser)
            if verb == "run":
                parser.add_argument("--sim", choices=["icarus", "verilator"], default=None,
                                    help="simulator (default: $SIM or icarus)")
                parser.add_argument("--max-cycles", type=positive_int,
                                    default=DEFAULT_MAX_SIM_CYCLES,
                                    help="refuse a workload that needs more simulated cycles "
                                         f"(default {DEFAULT_MAX_SIM_CYCLES:,})")
                parser.add_argument("--waves", metavar="PATH", default=None,
                                    help="keep the simulation's waveform there (.fst with "
                                         "icarus, .vcd with verilator; a second simulation "
                                         "of the command at PATH's stem + .2, ...)")
                parser.add_argument("--build", metavar="DIR", default=None,
                                    help="simulation build folder (default: "
                                         "$MEMWALL_SIM_BUILD, else build/sim in the checkout)")
            parser.set_defaults(func=cmd_family, verb=verb)


class _Parser(argparse.ArgumentParser):
    """Usage errors in the same form as every other error: ``memwall: error: ...``."""

    def error(self, message: str):
        self.exit(2, f"memwall: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memwall", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("gen", help="generate RTL and flow files for a config")
    _add_config(gen)
    gen.add_argument("--out", default=str(BUILD_ROOT),
                     help="output root (default: build/ in the checkout, where synth looks)")
    gen.add_argument("--quiet", action="store_true",
                     help="plain progress lines, as when stderr is not a terminal")
    gen.set_defaults(func=cmd_gen)

    configs = sub.add_parser("configs", help="list the named configs")
    configs.set_defaults(func=cmd_configs)

    units = sub.add_parser("units", help="list the unit families")
    units.set_defaults(func=cmd_units)

    _add_family_commands(sub)

    synth = sub.add_parser("synth", help="synthesis, timing and power of a config on a PDK")
    _add_config(synth)
    synth.add_argument("--pdk", required=True, choices=sorted(PLATFORMS),
                       help="platform under $MEMWALL_PDK_ROOT (default ../shared/pdk)")
    synth.add_argument("--jobs", type=jobs_int, default=2,
                       help="parallel Yosys runs (default 2)")
    synth.add_argument("--no-activity", action="store_true",
                       help="skip the simulation; power from a default activity")
    synth.add_argument("--flat-sta", action="store_true",
                       help="also time the whole design flat, end to end, in one OpenSTA run "
                            "(small configs), beside the hierarchical WNS")
    synth.add_argument("--boundary", choices=["context", "fixed"], default="context",
                       help="module boundary constraints of the hierarchical timing: from the "
                            "design around each module (default), or a fixed 20%% budget")
    synth.add_argument("--memory-idle", type=fraction, default=IDLE_ACCESS_FRACTION,
                       metavar="F",
                       help="share of an SRAM macro's access energy charged for a clocked "
                            "cycle without an access (default %(default)s; 1 = fakeram's "
                            "Liberty taken literally, every cycle an access)")
    synth.add_argument("--setup-margin-ps", type=margin_ps,
                       default=DEFAULT_SIGNOFF.setup_margin_ps, metavar="PS",
                       help="setup clock uncertainty every path is timed with (default "
                            "%(default)g ps)")
    synth.add_argument("--hold-margin-ps", type=margin_ps,
                       default=DEFAULT_SIGNOFF.hold_margin_ps, metavar="PS",
                       help="hold clock uncertainty (default %(default)g ps)")
    synth.add_argument("--build", default=str(BUILD_ROOT),
                       help="build root (default: build/ in the checkout)")
    synth.add_argument("--quiet", action="store_true",
                       help="plain progress lines, as when stderr is not a terminal")
    synth.set_defaults(func=cmd_synth)

    prove_p = sub.add_parser("prove", help="prove the config's formal properties (SymbiYosys)")
    _add_config(prove_p)
    prove_p.add_argument("--only", nargs="+", metavar="PROPERTY",
                         help="only these properties (default: all the family declares)")
    prove_p.add_argument("--workers", type=jobs_int, default=None,
                         help="proofs at once, each in its own process (default: the CPUs)")
    prove_p.add_argument("--ray", metavar="ADDRESS", default=None,
                         help=f"run the proofs as Ray tasks (local, auto or host:port; "
                              f"{RAY_INSTALL})")
    prove_p.add_argument("--record", action="store_true",
                         help="merge the results into reports/formal.{md,json}")
    prove_p.set_defaults(func=cmd_prove)

    mutate_p = sub.add_parser("mutate", help="mutation score of the family's regression on "
                                             "each module of the config (reports/mutation.md)")
    _add_config(mutate_p)
    mutate_p.add_argument("--module", nargs="+", metavar="M",
                          help="only these modules (default: every module of the config)")
    mutate_p.add_argument("--max", type=mutant_count, default=20, metavar="N",
                          help="mutants sampled per module (default %(default)s)")
    mutate_p.add_argument("--workers", type=jobs_int, default=None,
                          help="runs at once, each in its own process (default: the CPUs)")
    mutate_p.add_argument("--ray", metavar="ADDRESS", default=None,
                          help=f"run as Ray tasks (local, auto or host:port; {RAY_INSTALL})")
    mutate_p.add_argument("--recheck-unknown", action="store_true",
                          help="check again the survivors whose kept equivalence check ended "
                               "unknown (a timeout may pass on an idle machine)")
    mutate_p.set_defaults(func=cmd_mutate)

    report = sub.add_parser("report", help="area/power tables and plots from synthesis runs")
    report.add_argument("--run", action="store_true",
                        help="first synthesise every config x PDK of the report matrix "
                             "that has no metrics yet")
    report.add_argument("--force", action="store_true", help="with --run: redo all of them")
    report.add_argument("--jobs", type=jobs_int, default=2,
                        help="parallel Yosys runs per flow (default 2)")
    report.add_argument("--workers", type=jobs_int, default=None,
                        help="with --run: flows at once, each in its own process (default: "
                             "the CPUs available divided by --jobs, at least 1; on Ray: the "
                             "cluster's CPUs divided by --jobs)")
    report.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="with --run: run the flows as Ray tasks: 'local' (a Ray instance "
                             "on this machine), 'auto' (the cluster this machine is a node of) "
                             "or the head's host:port; the build folder must be on a filesystem "
                             f"every node shares. Needs the ray extra ({RAY_INSTALL})")
    report.add_argument("--only", nargs="+", metavar="UNIT", choices=sorted(families()),
                        help="only these unit families' configs (default: all)")
    report.add_argument("--build", default=str(BUILD_ROOT),
                        help="build root to read metrics from (default: build/ in the checkout)")
    report.add_argument("--out", default=str(REPORTS),
                        help="report folder (default: reports/ in the checkout)")
    report.add_argument("--allow-stale", action="store_true",
                        help="write rows that are not of this checkout's RTL and flow (or of "
                             "unknown provenance) marked stale, left out of every paper "
                             "comparison and fit (default: refuse them, exit status 2)")
    report.add_argument("--quiet", action="store_true",
                        help="plain progress lines, as when stderr is not a terminal")
    report.set_defaults(func=cmd_report)

    return parser


def _tool_failures() -> tuple[type[Exception], ...]:
    """A flow step or simulation that failed: its message names the step, its log and the
    log's last lines, which is all the terminal needs. A sweep with failed jobs
    (:class:`memwall.sweep.SweepError`) names each job and its error."""
    from memwall.flows.errors import ActivityError, FlowError, LibertyError, NetlistError, StaError
    from memwall.formal import ProofFailed
    from memwall.verif.common.runner import SimulationFailed

    return (ActivityError, FlowError, LibertyError, NetlistError, StaError, SimulationFailed,
            SweepError, ProofFailed)


def main(argv: list[str] | None = None) -> int:
    """``memwall``; the exit statuses are :func:`memwall.boundary.guarded`'s."""

    def command() -> int:
        try:
            parser = build_parser()
        except FamilyError as exc:   # a family that does not import or describe itself
            error(str(exc))
            return 2
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:   # --help (0) or a usage error (2), already printed
            return exc.code if isinstance(exc.code, int) else 2
        checkpoint("start-up")
        return exit_status(_dispatch, args, _tool_failures())

    return guarded(command)


if __name__ == "__main__":
    sys.exit(main())
