"""The ``memwall`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from memwall.config import ConfigError, available_configs, load_config
from memwall.flows.pdk import PLATFORMS

__all__ = ["main"]


class UsageError(Exception):
    """Bad command-line input; printed as ``memwall: error: ...`` with exit status 2."""


def _load(name: str, unit: str | None = None):
    cfg = load_config(name)
    if unit is not None and cfg.unit_name != unit:
        raise UsageError(f"config {name!r} is for unit {cfg.unit_name!r}, not {unit!r}")
    return cfg


def cmd_gen(args) -> None:
    from memwall.gen import generate

    cfg = _load(args.config)
    start = time.perf_counter()
    out = generate(cfg, Path(args.out))
    elapsed = time.perf_counter() - start
    modules = len(list((out / "rtl").glob("*.v")))
    print(f"memwall: wrote {out}/ ({modules} modules) in {elapsed:.2f} s")


def cmd_configs(args) -> None:
    for name in available_configs():
        cfg = load_config(name)
        print(f"{name:20s} unit={cfg.unit_name}")


def cmd_golden(args) -> None:
    from memwall.golden import dplena as golden

    cfg = _load(args.config, args.unit)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    logits_format = args.logits_format or cfg.logits_format
    try:
        inputs = golden.load_sampling_inputs(args.inputs, cfg.block_len, cfg.k_max)
    except golden.SamplingInputError as exc:
        raise UsageError(f"{args.inputs}: {exc}") from None
    logits = golden.prepare_logits(inputs["logits"], logits_format)
    v_chunk = _v_chunk(cfg, args, inputs["logits"].shape[2])
    result = golden.sample_step_hw(logits, inputs["x"], inputs["mask_id"], inputs["k"], cfg.vlen,
                                   stable_max=cfg.stable_max, v_chunk=v_chunk)
    golden.save_sampling_outputs(args.out, result)
    print(f"memwall: wrote {args.out} (B={inputs['x'].shape[0]}, L={inputs['x'].shape[1]}, "
          f"V={inputs['logits'].shape[2]}, logits {logits_format}, "
          f"{int(result['transfer'].sum())} tokens transferred)")


def _v_chunk(cfg, args, vocab: int) -> int:
    """``--v-chunk`` or the cycle model's default for the config; checked against the core."""
    from memwall.families.dplena.model import default_v_chunk
    from memwall.hdl.dplena.program import WorkloadError

    try:
        v_chunk = args.v_chunk or default_v_chunk(cfg, vocab)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    if v_chunk < vocab and v_chunk % cfg.vlen:
        raise UsageError(f"--v-chunk {v_chunk}: must be a multiple of vlen ({cfg.vlen}) or at "
                         f"least V ({vocab})")
    return v_chunk


def _dplena_workload(cfg, args, shape, k, mask_id):
    from memwall.hdl.dplena.program import Workload, WorkloadError, generate

    fmt = args.logits_format or cfg.logits_format
    fmt = "mxfp8" if fmt.startswith("mxfp8") else fmt
    batch, block_len, vocab = shape
    wl = Workload(batch, block_len, vocab, _v_chunk(cfg, args, vocab),
                  tuple(int(v) for v in k), mask_id=int(mask_id), logits_format=fmt)
    try:
        generate(cfg, wl)   # every limit of the core, before anything runs
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    return wl


def cmd_model_dplena(args) -> None:
    import json

    from memwall.families.dplena.model import estimate

    cfg = _load(args.config, "dplena")
    if not args.workload:
        raise UsageError("model dplena needs --workload B,L,V,T")
    try:
        batch, block_len, vocab, steps = (int(v) for v in args.workload.split(","))
    except ValueError:
        raise UsageError(f"--workload {args.workload!r}: expected four integers B,L,V,T") \
            from None
    if min(batch, block_len, vocab, steps) < 1:
        raise UsageError(f"--workload {args.workload!r}: B, L, V and T must be >= 1")
    # k only sizes the top-k work, a few cycles per row: the most the core allows.
    k = (min(block_len, cfg.k_max),) * batch
    wl = _dplena_workload(cfg, args, (batch, block_len, vocab), k, 0)
    result = {"config": cfg.name, "stable_max": cfg.stable_max, "vlen": cfg.vlen,
              "hbm_bytes_per_cycle": cfg.hbm_bytes_per_cycle, "clock_mhz": cfg.clock_mhz,
              "workload": {"B": batch, "L": block_len, "V": vocab, "T": steps,
                           "logits_format": wl.logits_format},
              **estimate(cfg, wl, steps).as_dict()}
    result["latency_ms"] = result["cycles"] / (cfg.clock_mhz * 1e3)
    bl = batch * block_len
    # Paper Eq. 2-4 (edge mode) next to what this core holds for the workload.
    result["sram_bytes"] = {
        "paper_eq2_int": 2 * bl * 4, "paper_eq3_fp": max(block_len, cfg.vlen) * 2,
        "paper_eq4_vector": (3 * bl + min(wl.v_chunk, vocab)) * 2,
        "int_used": (2 * bl + batch) * 4, "fp_used": block_len * 2,
        "vector_used": (2 * -(-min(wl.v_chunk, vocab) // cfg.vlen) + 3) * cfg.vlen * 2,
        "int_config": cfg.int_sram_words * 4, "fp_config": cfg.fp_sram_words * 2,
        "vector_config": cfg.vector_sram_kib * 1024}
    if args.json:
        print(json.dumps(result, sort_keys=True))
        return
    print(f"{cfg.name} ({cfg.stable_max}, VLEN {cfg.vlen}, {cfg.hbm_bytes_per_cycle} B/cycle): "
          f"B={batch} L={block_len} V={vocab} T={steps}, V_chunk={wl.v_chunk}")
    print(f"  cycles {result['cycles']:,} ({result['latency_ms']:.3f} ms at {cfg.clock_mhz:g} "
          f"MHz), bound {result['bound_cycles']:,.0f}, ratio {result['ratio_to_bound']:.3f}")


def cmd_run_dplena(args) -> None:
    from memwall.golden import dplena as golden
    from memwall.verif.dplena.core_run import run_core

    cfg = _load(args.config, "dplena")
    if not args.inputs:
        raise UsageError("run dplena needs --inputs in.npz")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    try:
        inputs = golden.load_sampling_inputs(args.inputs, cfg.block_len, cfg.k_max)
    except golden.SamplingInputError as exc:
        raise UsageError(f"{args.inputs}: {exc}") from None
    wl = _dplena_workload(cfg, args, inputs["logits"].shape, inputs["k"], inputs["mask_id"])
    result = run_core(cfg, wl, inputs["logits"], inputs["x"], sim=args.sim)
    golden.save_sampling_outputs(out, result)
    print(f"memwall: wrote {out} (B={wl.batch}, L={wl.block_len}, V={wl.vocab}, "
          f"V_chunk={wl.v_chunk}, logits {wl.logits_format}, {result['cycles']} cycles)")


def _shield_inputs(args):
    from memwall.golden.shield_trace import TraceError, load_trace

    cfg = _load(args.config, "shield")
    try:
        trace = load_trace(args.trace, cfg)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    return cfg, trace


def _write_json(path: str, result: dict) -> None:
    from memwall.files import write_json_atomic

    out = Path(path)
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    write_json_atomic(out, result)


def cmd_model_shield(args) -> None:
    import json

    from memwall.golden import shield

    if not args.trace:
        raise UsageError("model shield needs --trace")
    cfg, trace = _shield_inputs(args)
    result = shield.model_trace(cfg, trace)
    print(json.dumps(result, sort_keys=True) if args.json else shield.format_report(result))


def cmd_run_shield(args) -> None:
    from memwall.golden import shield
    from memwall.verif.shield.run import run_trace

    if not args.trace:
        raise UsageError("run shield needs --trace")
    cfg, trace = _shield_inputs(args)
    rtl = run_trace(cfg, args.trace, sim=args.sim)
    result = shield.power_from_counts(cfg, trace, rtl["refresh_counts"], rtl["cycles"])
    result["rtl"] = rtl
    _write_json(args.out, result)
    print(shield.format_report(result))
    print(f"memwall: wrote {args.out}")


def cmd_synth(args) -> None:
    from memwall.flows.flow import run_flow
    from memwall.flows.pdk import PdkError

    _load(args.config)  # a bad config name fails here, before any tool runs
    try:
        run_flow(args.config, args.pdk, jobs=args.jobs, activity=not args.no_activity)
    except PdkError as exc:
        raise UsageError(str(exc)) from None


#: What `memwall report --run` synthesises before writing the tables: config x PDK.
REPORT_MATRIX = {
    "asap7": ["dplena64", "dplena512", "dplena1024", "dplena2048", "shield_small"],
    "sky130hd": ["dplena64", "dplena512", "shield_small"],
    "nangate45": ["dplena64", "dplena512", "shield_small"],
}


def cmd_report(args) -> None:
    from memwall.flows.flow import BUILD_ROOT, metrics_path, run_flow
    from memwall.flows.report import write_report
    from memwall.gen import generate

    if args.run:
        for pdk, configs in REPORT_MATRIX.items():
            for config in configs:
                # Regenerating drops the results of a config whose RTL has changed since.
                generate(_load(config), BUILD_ROOT)
                if args.force or not metrics_path(config, pdk).exists():
                    run_flow(config, pdk, jobs=args.jobs)
    try:
        out = write_report()
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(f"memwall: wrote {out} and its CSV and plots")


MODEL_COMMANDS = {"shield": cmd_model_shield, "dplena": cmd_model_dplena}
RUN_COMMANDS = {"shield": cmd_run_shield, "dplena": cmd_run_dplena}


def _add_dplena_stream_options(parser: argparse.ArgumentParser) -> None:
    """How d-PLENA logits reach the core: the same two options on golden, model and run."""
    parser.add_argument("--logits-format", choices=["bf16", "mxfp8"], default=None,
                        help="dplena: how logits are held in HBM before dequantisation "
                             "(default: the config's logits_format)")
    parser.add_argument("--v-chunk", type=int, default=None,
                        help="dplena: logits per prefetch chunk (default: the largest that fits "
                             "the config's Vector SRAM, evened out)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memwall", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("gen", help="generate RTL and flow files for a config")
    gen.add_argument("config", help="config name (configs/<name>.yaml) or path to a .yaml file")
    gen.add_argument("--out", default="build", help="output root (default: build)")
    gen.set_defaults(func=cmd_gen)

    configs = sub.add_parser("configs", help="list the named configs")
    configs.set_defaults(func=cmd_configs)

    golden = sub.add_parser("golden", help="run a golden model on your own data")
    golden.add_argument("unit", choices=["dplena"], help="unit family")
    golden.add_argument("--config", required=True, help="config name or .yaml path")
    golden.add_argument("--inputs", required=True, help="input .npz (logits, x, mask_id, k)")
    golden.add_argument("--out", required=True, help="output .npz (x, x0, confidence, transfer)")
    _add_dplena_stream_options(golden)
    golden.set_defaults(func=cmd_golden)

    synth = sub.add_parser("synth", help="synthesis, timing and power of a config on a PDK")
    synth.add_argument("config", help="config name or .yaml path")
    synth.add_argument("--pdk", required=True, choices=sorted(PLATFORMS),
                       help="platform under $MEMWALL_PDK_ROOT (default ../shared/pdk)")
    synth.add_argument("--jobs", type=int, default=2, help="parallel Yosys runs (default 2)")
    synth.add_argument("--no-activity", action="store_true",
                       help="skip the simulation; power from a default activity")
    synth.set_defaults(func=cmd_synth)

    report = sub.add_parser("report", help="area/power tables and plots from synthesis runs")
    report.add_argument("--run", action="store_true",
                        help="first synthesise every config x PDK of the report matrix "
                             "that has no metrics yet")
    report.add_argument("--force", action="store_true", help="with --run: redo all of them")
    report.add_argument("--jobs", type=int, default=2, help="parallel Yosys runs (default 2)")
    report.set_defaults(func=cmd_report)

    model = sub.add_parser("model", help="analytic/cycle model of a unit on a workload")
    model.add_argument("unit", choices=sorted(MODEL_COMMANDS), help="unit family")
    model.add_argument("--config", required=True, help="config name or .yaml path")
    model.add_argument("--trace", help="shield: workload trace (.yaml)")
    model.add_argument("--workload", help="dplena: B,L,V,T (batch, block length, vocabulary, "
                                          "diffusion steps)")
    _add_dplena_stream_options(model)
    model.add_argument("--json", action="store_true", help="print one JSON object")
    model.set_defaults(func=lambda args: MODEL_COMMANDS[args.unit](args))

    run = sub.add_parser("run", help="run the generated RTL on a workload (cocotb simulation)")
    run.add_argument("unit", choices=sorted(RUN_COMMANDS), help="unit family")
    run.add_argument("--config", required=True, help="config name or .yaml path")
    run.add_argument("--trace", help="shield: workload trace (.yaml)")
    run.add_argument("--inputs", help="dplena: input .npz (logits, x, mask_id, k), as for "
                                      "memwall golden")
    run.add_argument("--out", required=True,
                     help="output: .json (shield); .npz (dplena: x, x0, confidence, transfer, "
                          "cycles)")
    _add_dplena_stream_options(run)
    run.add_argument("--sim", choices=["icarus", "verilator"], default=None,
                     help="simulator (default: $SIM or icarus)")
    run.set_defaults(func=lambda args: RUN_COMMANDS[args.unit](args))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ConfigError, UsageError) as exc:
        print(f"memwall: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
