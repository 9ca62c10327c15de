"""``reports/pim/synthesis.{md,json}``: the PIM controller and PU through the flow on ASAP7
(``python -m memwall.families.pim.synthesis``, or ``python -m memwall.families.pim.report
--synthesis``, after ``memwall synth <config> --pdk asap7`` for each of :data:`SYNTH_CONFIGS`).

Per config: area of the controller and PU beside the macro's area model, the logic's power over
the config's power workload (a scheduled GEMM) ungated and with its enable registers clock-gated
(the flow's estimate), the logic's energy over that GEMM against what the model charges from the
calibration's fit, and the logic's share of area and energy beside the paper's scheduling
overhead; per module, where the power goes. ``--before DIR`` records, from a build folder of an
earlier RTL (``memwall synth`` run in a checkout of that commit), the same figures as "before",
so the logic cuts are reported before and after; without it the recorded ones are kept.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from memwall import paths
from memwall.config import load_config
from memwall.families.pim.report import PAPER
from memwall.flows.report import synth_metrics, write_synthesis_report
from memwall.golden.pim import schedule as pim_schedule
from memwall.golden.pim.macro import input_ones

__all__ = ["SYNTH_CONFIGS", "SYNTH_PDK", "collect", "render", "main"]

ROOT = paths.REPO
OUT = ROOT / "reports" / "pim"
SYNTH_CONFIGS = ("pim_small", "pim_small_bitserial", "pim_paper", "pim_paper_bitserial")
SYNTH_PDK = "asap7"


def _config_row(name: str, m: dict) -> dict:
    from memwall.families.pim.area import macro_area
    from memwall.families.pim.workloads import power_gemm, power_schedule

    cfg = load_config(name)
    area = {k: v["own_um2"] for k, v in m["area_by_module"].items()}
    pu = sum(v for k, v in area.items() if k.startswith("pim_pu"))
    macro = macro_area(cfg, SYNTH_PDK)
    a, b = power_gemm(cfg)
    schedule = power_schedule(cfg, a, b)
    ones = input_ones(cfg, a)
    model = pim_schedule.evaluate(cfg, schedule, ones=ones)
    ungated = pim_schedule.evaluate(dataclasses.replace(cfg, logic_clock_gating=False),
                                    schedule, ones=ones)
    cycles = m["activity_runs"][0]["cycles"]

    def logic_nj(run):
        return (run["energy"]["logic_dynamic"] + run["energy"]["logic_leakage"]) / 1e3

    return {
        "clock_mhz": cfg.clock_mhz, "wns_ns": m["wns_ns"], "met": m["wns_ns"] >= 0,
        "controller_um2": area["pim_core"], "pu_um2": pu,
        "macro_um2": [macro["low"]["total_um2"], macro["high"]["total_um2"]],
        "power_mw": m["power_mw"]["total"], "memories_mw": m["power_mw"]["memories"],
        "gated_mw": m["clock_gating"]["gated_total_mw"],
        "gemm": [int(a.shape[0]), int(a.shape[1]), int(b.shape[1])], "cycles": cycles,
        "activations": int(model["counters"]["activations"]),
        # What the netlist spends over the GEMM (its power, the restore queue's memory
        # included, times the GEMM's time), beside what the model charges for it.
        "logic_nj": {"ungated": m["power_mw"]["total"] * cycles / cfg.clock_mhz,
                     "clock_gated": m["clock_gating"]["gated_total_mw"] * cycles
                     / cfg.clock_mhz},
        "model_logic_nj": {"ungated": logic_nj(ungated), "clock_gated": logic_nj(model)},
        "model_macro_buffer_nj": (model["energy"]["total"] - model["energy"]["weight_fetch"])
        / 1e3 - logic_nj(model),
        "commit": m["provenance"]["commit"], "dirty": m["provenance"]["dirty"],
        "rtl_sha256": m["provenance"]["rtl_sha256"],
        "modules": [{"module": module, "um2": m["area_by_module"][module]["own_um2"],
                     **{k: power["per_instance_mw"][k]
                        for k in ("internal", "switching", "leakage")},
                     **{k: m["clock_gating"]["by_module"].get(module, {}).get(k, 0)
                        for k in ("flops", "gated_flops", "saving_mw")}}
                    for module, power in sorted(m["power_by_module"].items())]}


def _rows(build_root: Path) -> dict:
    rows = {}
    for name in SYNTH_CONFIGS:
        loaded = synth_metrics(build_root, name, SYNTH_PDK)
        rows[name] = None if loaded is None else _config_row(name, loaded[0])
    return rows


def collect(build_root: Path = ROOT / "build", before_root: Path | None = None,
            recorded: dict | None = None) -> dict:
    """The figures of :data:`SYNTH_CONFIGS` from ``build_root``; "before" from
    ``before_root``'s metrics, else ``recorded`` (the previous ``synthesis.json``)."""
    from memwall.families.pim.area import GAIN_CELL_VS_6T, macro_area

    if before_root is not None:
        before = {k: v for k, v in _rows(Path(before_root)).items() if v is not None}
    else:
        before = (recorded or {}).get("before", {})
    sram = macro_area(load_config("pim_paper"), SYNTH_PDK)["sram"]
    return {"pdk": SYNTH_PDK, "order": list(SYNTH_CONFIGS), "configs": _rows(Path(build_root)),
            "before": before,
            "paper": {k: PAPER[k] for k in ("area_overhead", "energy_overhead")},
            "sram": sram,
            "gain_cell": {end: list(GAIN_CELL_VS_6T[end]) for end in ("low", "high")}}


def _energy_cells(r: dict) -> list[str]:
    logic_nj, gated_nj = r["logic_nj"]["ungated"], r["logic_nj"]["clock_gated"]
    share = gated_nj / (gated_nj + r["model_macro_buffer_nj"])
    return [f"{logic_nj:.2f} ({gated_nj:.2f})",
            f"{r['model_logic_nj']['ungated']:.2f} ({r['model_logic_nj']['clock_gated']:.2f})",
            f"{1e3 * gated_nj / r['activations']:.2f}", f"{r['model_macro_buffer_nj']:.2f}",
            f"{100 * share:.1f} %" if r["met"] else "timing missed: not compared"]


def render(data: dict) -> str:
    pdk, paper = data["pdk"], data["paper"]
    lines = ["# eDRAM PIM: synthesis of the controller and PU", "",
             "Generated by `python -m memwall.families.pim.synthesis` from `memwall synth "
             f"<config> --pdk {pdk}` (the macro and the buffer are outside the synthesised "
             "top; their energy is the model's). Power is that of the config's power workload: "
             "a scheduled GEMM of seeded random operands, simulated on Verilator; clock-gated "
             "is the flow's estimate with the enable registers clock-gated (one ICG per group "
             "of 10 or more flops sharing an enable, `memwall.flows.clock_gating`). A row is "
             "compared with the paper only where timing is met (WNS >= 0 at the config's "
             "clock). The logic mW column leaves out the controller's memory (the restore "
             "queue, its own column); the nJ columns include it, as the calibration's fit "
             "does.", "",
             "| config | clock MHz | WNS ns | controller µm² | PU µm² | macro µm² (model) | "
             "logic share of area | logic mW, ungated (clock-gated) | memories mW | GEMM | "
             "GEMM cycles | logic nJ, ungated (clock-gated) | the model's logic nJ, ungated "
             "(clock-gated) | logic pJ per activation, clock-gated | macro + buffer nJ "
             "(model) | logic share of energy, clock-gated |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    configs = [(name, data["configs"][name]) for name in data["order"]]
    for name, r in configs:
        if r is None:
            lines.append(f"| {name} | not synthesised: run `memwall synth {name} --pdk {pdk}`"
                         " |" + " |" * 14)
            continue
        logic = r["controller_um2"] + r["pu_um2"]
        low, high = (logic / (logic + macro) for macro in r["macro_um2"])
        lines.append("| " + " | ".join([
            name, f"{r['clock_mhz']:g}", f"{r['wns_ns']:.3f}", f"{r['controller_um2']:.1f}",
            f"{r['pu_um2']:.1f}", f"{r['macro_um2'][0]:.0f} to {r['macro_um2'][1]:.0f}",
            f"{100 * high:.1f} to {100 * low:.1f} %",
            f"{r['power_mw'] - r['memories_mw']:.4g} ({r['gated_mw'] - r['memories_mw']:.4g})",
            f"{r['memories_mw']:.3g}", "x".join(map(str, r["gemm"])), f"{r['cycles']:,}",
            *_energy_cells(r)]) + " |")
    lines += ["", "Where the logic's power goes, per module (ungated power at the config's "
              "clock over its power workload; flip-flops, those an ICG gates, and what that "
              "saves):", "",
              "| config | module | µm² | flops | gated flops | internal mW | switching mW | "
              "leakage mW | clock-gating saving mW |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in configs:
        for mod in (r or {}).get("modules", []):
            lines.append(f"| {name} | `{mod['module']}` | {mod['um2']:.1f} | {mod['flops']:,} | "
                         f"{mod['gated_flops']:,} | {mod['internal']:.4g} | "
                         f"{mod['switching']:.4g} | {mod['leakage']:.4g} | "
                         f"{mod['saving_mw']:.4g} |")
    lines += _cuts(data)
    sram, gain = data["sram"], data["gain_cell"]
    lines += ["", "The macro's area is a model (`memwall/families/pim/area.py`): rows x width "
              f"bit cells at {sram['per_bit_um2']:.4f} µm² per 6T SRAM bit times a gain cell's "
              f"share of it ({gain['low'][0]:g}: {gain['low'][1]}; {gain['high'][0]:g}: "
              f"{gain['high'][1]}), plus {sram['per_column_um2']:.2f} µm² of periphery per "
              f"column, both from {sram['source']}.", "",
              f"The paper reports its scheduling overhead as {100 * paper['area_overhead']:.1f}"
              f" % of area and {100 * paper['energy_overhead']:.2f} % of energy. Our energy "
              "share is that of the whole controller and PU (restore queue, row walker, input "
              "registers, accumulators) over a GEMM, not of the scheduling alone, and so is our "
              "area share (logic / (logic + macro)). The GEMMs are the power workloads' small "
              "ones. The model charges the logic from the calibration's fit (`python -m "
              "memwall.families.pim.calibrate`, fitted on other runs of the same netlist); "
              "its column is the fit's prediction for this run, the check that the model "
              "charges what the synthesis measures (a config without its own fit takes the "
              "nearest one scaled by fields: an estimate). The macro + buffer column leaves out "
              "the weights' DRAM fetch.", ""]
    return "\n".join(lines)


def _cuts(data: dict) -> list[str]:
    pairs = [(name, data["before"][name], data["configs"][name]) for name in data["order"]
             if data["configs"][name] is not None and name in data["before"]]
    if not pairs:
        return []
    lines = ["", "## The logic cuts, before and after", "",
             "What a PIM designer cuts, measured on the same power workload: the partial-sum "
             "register (a word per field) loaded only on a group's first activation, not on "
             "every one; an accumulator loaded only where its term can be non-zero (a lane "
             "whose sense amps are all gated adds 0, so its register holds and its ICG stops "
             "the clock). Each RTL is named by its hash (`metrics.json` provenance) and the "
             "commit it was synthesised at (+: with changes not yet committed); before was "
             "recorded with `--before`.", "",
             "| config | RTL | logic mW, ungated | logic mW, clock-gated | gated flops | "
             "controller + PU µm² | WNS ns |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, old, new in pairs:
        for label, r in (("before", old), ("after", new)):
            gated = sum(mod["gated_flops"] for mod in r["modules"])
            flops = sum(mod["flops"] for mod in r["modules"])
            at = r["commit"][:7] + ("+" if r.get("dirty") else "")
            lines.append(f"| {name} | {label}: {r['rtl_sha256'][:8]} ({at}) | "
                         f"{r['power_mw'] - r['memories_mw']:.4g} | "
                         f"{r['gated_mw'] - r['memories_mw']:.4g} | {gated:,} of {flops:,} | "
                         f"{r['controller_um2'] + r['pu_um2']:.1f} | {r['wns_ns']:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--build-root", type=Path, default=ROOT / "build")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="a build folder of an earlier RTL whose figures to record as "
                             "'before' (default: keep the recorded ones)")
    args = parser.parse_args(argv)
    previous = args.out / "synthesis.json"
    recorded = json.loads(previous.read_text()) if previous.is_file() else None
    path = write_synthesis_report(
        args.out, lambda: collect(args.build_root, args.before, recorded), render)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
