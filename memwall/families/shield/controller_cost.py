"""SHIELD's part of ``reports/area_power.md``: what the refresh controller costs (its synthesis)
beside the refresh power it saves (the golden model), and the net saving.

Every figure comes from a ``metrics.json`` row (area, power, WNS, activity) or from
:mod:`memwall.golden.shield.refresh` (refresh power); none is typed here. Rows whose timing is not
met are not compared (area and power stand beside a saving only at met timing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memwall.config import config_from_dict, load_config
from memwall.families.shield.workloads import LAYER_LOOP, layer_loop_trace
from memwall.files import write_json_atomic
from memwall.golden.shield import refresh as s

__all__ = ["refresh_saving", "net_saving", "calibrations", "cost_rows", "report_section",
           "CALIBRATIONS", "LAYERS", "MODELS"]

#: Configs whose power calibration is compared with a controller of the same hardware
#: (the two calibrations of the SHIELD report, ``reports/shield/README.md``).
CALIBRATIONS = ("shield_2mb", "shield_2mb_eta35")
#: Layers of the workload (the SHIELD report's trace table runs the same loop).
LAYERS = 8
#: How the saved refresh power is computed.
MODELS = {
    "trace": "trace model: exact refresh counts of the controller's schedule (live rows only) "
             "vs every row of the unsegmented array at T_std, over the workload",
    "eq5-8": "Eq. 4 and 5-8 (whole array allocated) at the workload's time-averaged "
             "B_KV/B_total",
}


def refresh_saving(cfg: Any, layers: int = LAYERS) -> dict[str, dict[str, float]]:
    """Baseline and SHIELD refresh power (mW, leakage excluded) on :func:`layer_loop_trace`,
    per model of :data:`MODELS`, and the saving ``baseline - shield``."""
    trace = layer_loop_trace(cfg, layers)
    r = s.model_trace(cfg, trace)
    f = r["kv_fraction"]
    base_trace = r["baseline_refresh_energy_nj"] / r["duration_us"]   # nJ/µs = mW
    shield_trace = r["refresh_energy_nj"]["total"] / r["duration_us"]
    base_eq = s.p_base(cfg) - cfg.p_leak_mw                             # Eq. 4: E/T_std
    shield_eq = s.p_shield(cfg, f) - cfg.p_leak_mw                      # Eq. 5-8 at F
    out = {}
    for model, (base, shield) in (("trace", (base_trace, shield_trace)),
                                  ("eq5-8", (base_eq, shield_eq))):
        out[model] = {"baseline_refresh_mw": base, "shield_refresh_mw": shield,
                      "saved_mw": base - shield, "kv_fraction": f,
                      "duration_us": r["duration_us"]}
    return out


def net_saving(saving: dict[str, float], controller_mw: float) -> dict[str, float]:
    """Net saving = saved refresh power - controller power (mW), and as a share of the
    baseline refresh power."""
    net = saving["saved_mw"] - controller_mw
    return {"net_mw": net, "net_of_baseline": net / saving["baseline_refresh_mw"]}


def _row_config(row: dict):
    """The config a metrics row was synthesised from (its ``parameters``); the named config
    for a row that does not carry them."""
    params = {k: v for k, v in (row.get("parameters") or {}).items() if k != "name"}
    if "unit" not in params:
        return load_config(row["config"])
    return config_from_dict(params, f"metrics of {row['config']}/{row['pdk']}", row["config"])


def calibrations(cfg: Any) -> list:
    """``cfg`` and every config of :data:`CALIBRATIONS` with the same hardware (same RTL and
    clock, :attr:`ShieldConfig.hardware`) but its own power calibration."""
    out = [cfg]
    for name in CALIBRATIONS:
        if name == cfg.name:
            continue
        other = load_config(name)
        if other.hardware == cfg.hardware:
            out.append(other)
    return out


def cost_rows(rows: list[dict], layers: int = LAYERS) -> tuple[list[dict], list[dict]]:
    """(compared, not compared): per metrics row at met timing, per calibration
    (:func:`calibrations`) and model, the controller's figures, the refresh saving and the net
    saving; the rows whose timing is not met, apart."""
    from memwall.flows.report import timing_met

    compared, missed = [], []
    for row in rows:
        if not timing_met(row):
            missed.append(row)
            continue
        cfg = _row_config(row)
        # The sign-off's power: the enable registers clock-gated (the flow's estimate, with
        # its clock tree), as ``reports/area_power.md`` defines it; a row without that estimate
        # is charged its ungated power.
        ungated = row["power_mw"]["total"]
        power = (row.get("clock_gating") or {}).get("gated_total_mw", ungated)
        for cal in calibrations(cfg):
            for model, saving in refresh_saving(cal, layers).items():
                compared.append({
                    "config": row["config"], "pdk": row["pdk"], "calibration": cal.name,
                    "clock_mhz": row["clock_mhz"], "wns_ns": row["wns_ns"],
                    "area_um2": row["area_um2"], "controller_mw": power,
                    "controller_ungated_mw": ungated,
                    "activity": row["activity_source"], "model": model, **saving,
                    **net_saving(saving, power)})
    return compared, missed


def _g(value: float) -> str:
    return f"{value:.4g}"


def report_section(rows: list[dict], out: Path) -> tuple[str, list[str]]:
    """Markdown for the SHIELD rows of the area/power report: controller cost vs refresh saved."""
    from memwall.flows.report import markdown_table

    compared, missed = cost_rows(rows)
    # For reports/paper_vs_ours.md: the same figures, as numbers.
    write_json_atomic(out / "signoff.json", {
        "command": "make report", "layers": LAYERS, "compared": compared,
        "missed": [{"config": r["config"], "pdk": r["pdk"], "clock_mhz": r["clock_mhz"],
                    "wns_ns": r["wns_ns"]} for r in missed]})
    head = "\n## SHIELD: controller cost vs refresh power saved\n\n"
    notes = ""
    if missed:
        notes = ("Not compared, because they miss their clock (a controller's power stands "
                 "beside a saving only at met timing): "
                 + ", ".join(f"{r['config']}/{r['pdk']} (WNS "
                             + ("no timed path" if r["wns_ns"] is None
                                else f"{r['wns_ns']:.3f} ns")
                             + f" at {r['clock_mhz']:g} MHz)" for r in missed) + ".\n\n")
    if not compared:
        return head + notes, []
    activities = sorted({r["activity"] for r in compared})
    short = {a: a.split(":")[0] for a in activities}
    text = (
        head + notes
        + f"Workload: the SHIELD report's layer loop on each config's workspace -- "
        f"{LAYER_LOOP.format(layers=LAYERS)} (`layer_loop_trace` in "
        f"`memwall/families/shield/workloads.py`, the trace table of "
        f"`reports/shield/README.md`). Columns:\n\n"
        "- *controller*: the synthesised `shield_controller` (its `metrics.json`): area "
        "(µm², cells incl. the liveness flip-flops, no eDRAM), total power (mW: internal + "
        "switching + leakage from OpenSTA at the config's clock, with the clock tree), "
        "ungated and with its enable registers clock-gated (the flow's estimate, "
        "`memwall.flows.clock_gating`; the net saving is charged this one), WNS at that "
        "clock;\n"
        "- *calibration*: the config whose E_ref_cycle and P_leak price the refresh (same "
        "controller hardware);\n"
        "- *model*: " + "; ".join(f"`{k}` = {v}" for k, v in MODELS.items()) + ";\n"
        "- *baseline / SHIELD refresh*: refresh power only (mW, leakage excluded); *saved* = "
        "baseline - SHIELD;\n"
        "- *net* = saved - controller power (mW; negative: the controller costs more than it "
        "saves); *net % of baseline* = net / baseline refresh;\n"
        "- *activity*: what set the controller's switching activity for its power; in "
        "full:\n" + "".join(f"  - {short[a]}: {a[len(short[a]) + 1:].strip() or a}\n"
                            for a in activities) + "\n")
    text += markdown_table(
        ["config", "pdk", "clock MHz", "WNS ns", "controller µm²", "controller mW, ungated",
         "controller mW, clock-gated", "activity",
         "calibration", "model", "F (B_KV/B_total)", "baseline refresh mW",
         "SHIELD refresh mW", "saved mW", "net mW", "net % of baseline"],
        [[r["config"], r["pdk"], f"{r['clock_mhz']:g}", f"{r['wns_ns']:.3f}",
          f"{r['area_um2']:.1f}", _g(r["controller_ungated_mw"]), _g(r["controller_mw"]),
          short[r["activity"]],
          r["calibration"], f"`{r['model']}`",
          f"{r['kv_fraction']:.3f}", _g(r["baseline_refresh_mw"]), _g(r["shield_refresh_mw"]),
          _g(r["saved_mw"]), _g(r["net_mw"]), f"{100 * r['net_of_baseline']:.1f} %"]
         for r in compared])
    return text, []
