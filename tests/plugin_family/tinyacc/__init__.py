"""A tiny unit family that exists only in the test suite
(``MEMWALL_FAMILY_PATH=tests/plugin_family``): a stream accumulator. It proves that a family's own
files make it appear in every shared verb (units, configs, gen, golden, model, run, synth, report)
with no shared module touched."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.command import UsageError, check_sim_cycles, output_path, write_json_output
from memwall.config import UnitConfig, field, int_range, number_range
from memwall.family import Command, Family, PowerWorkload

TOP_NAME = "tiny_accumulator"


@dataclass(frozen=True)
class TinyAccConfig(UnitConfig):
    unit_name: ClassVar[str] = "tinyacc"
    name: str = "tinyacc"
    width: int = field(8, int_range(2, 32), "accumulator width in bits")
    clock_mhz: float = field(500, number_range(0.001, 10000),
                             "target clock frequency in MHz, above 1 kHz and at most 10 GHz")


class TinyAccumulator(wiring.Component):
    """Adds every value accepted on ``i`` into ``total`` (modulo 2**width)."""

    def __init__(self, width: int):
        self.width = width
        self.params = {"width": width}
        super().__init__({"i": In(stream.Signature(width)), "total": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.i.ready.eq(1)
        with m.If(self.i.valid):
            m.d.sync += self.total.eq(self.total + self.i.payload)
        return m


def accumulate(values, width: int) -> np.ndarray:
    """Golden model: the running total after each value."""
    return np.cumsum(np.asarray(values, dtype=np.uint64)) % np.uint64(1 << width)


def _values(args, cfg) -> list[int]:
    try:
        values = [int(v) for v in args.values.split(",")]
    except ValueError:
        raise UsageError(f"--values {args.values!r}: expected integers separated by commas") \
            from None
    if any(not 0 <= v < 1 << cfg.width for v in values):
        raise UsageError(f"--values: each value must be in [0, {(1 << cfg.width) - 1}]")
    return values


def _golden_args(parser):
    parser.add_argument("--values", required=True, help="integers, comma-separated")


def _golden(args, cfg):
    print(json.dumps([int(v) for v in accumulate(_values(args, cfg), cfg.width)]))


def _model(args, cfg):
    print(json.dumps({"cycles": len(_values(args, cfg))}))


def _run_args(parser):
    _golden_args(parser)
    parser.add_argument("--out", required=True, help="output .json")


def _run(args, cfg):
    from memwall.verif.common.runner import simulate

    out = output_path(args.out)
    values = _values(args, cfg)
    check_sim_cycles(len(values), args.max_cycles, f"--values ({len(values)} values)")
    result = out.with_name(out.name + ".sim")
    simulate(TinyAccumulator(cfg.width), TOP_NAME, "memwall.families.tinyacc.tb",
             {"width": cfg.width, "values": values, "out": str(result.resolve())},
             sim=args.sim, testcase="replay")
    totals = json.loads(result.read_text())
    result.unlink()
    write_json_output(args.out, {"totals": totals})


def _power_workloads(cfg):
    return [PowerWorkload("accumulator", TinyAccumulator(cfg.width),
                          "memwall.families.tinyacc.tb", {"width": cfg.width, "count": 64},
                          "random_values")]


def _report_section(rows, out):
    return ("\n## tinyacc\n\n" + "".join(f"- {r['config']} on {r['pdk']}: "
                                         f"{r['area_um2']:.1f} µm²\n" for r in rows)), []


FAMILY = Family(
    name="tinyacc",
    summary="test-only stream accumulator",
    config_class=TinyAccConfig,
    build_top=lambda cfg: (TOP_NAME, TinyAccumulator(cfg.width)),
    golden={"accumulate": accumulate},
    power_workloads=_power_workloads,
    commands={"golden": Command("running totals", _golden_args, _golden),
              "model": Command("cycles", _golden_args, _model),
              "run": Command("running totals from the RTL", _run_args, _run)},
    report_groups={"tiny_accumulator": "datapath"},
    report_matrix={"asap7": ["tinyacc8"]},
    regression_configs=("tinyacc8",),
    report_sections=_report_section,
)
