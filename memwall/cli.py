"""The ``memwall`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from memwall.config import ConfigError, available_configs, load_config

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
    result = golden.sample_step_hw(logits, inputs["x"], inputs["mask_id"], inputs["k"], cfg.vlen)
    golden.save_sampling_outputs(args.out, result)
    print(f"memwall: wrote {args.out} (B={inputs['x'].shape[0]}, L={inputs['x'].shape[1]}, "
          f"V={inputs['logits'].shape[2]}, logits {logits_format}, "
          f"{int(result['transfer'].sum())} tokens transferred)")


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
    golden.add_argument("--logits-format", choices=["bf16", "mxfp8"], default=None,
                        help="how logits are held in HBM before dequantisation "
                             "(default: the config's logits_format)")
    golden.set_defaults(func=cmd_golden)
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
