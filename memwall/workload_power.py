"""Power of an already synthesised config under workloads of the caller's choosing.

``memwall synth`` powers a design under its family's power workloads, one figure per config. A
model calibrated from synthesis (the PIM family's logic energy per cycle and per event) needs
the same netlist powered under several workloads that vary what it does. :func:`power_under`
re-uses the synthesis of ``build/<config>/synth/<pdk>`` (its netlists, area and wire-load
model), simulates each :class:`memwall.family.PowerWorkload` on Verilator, and times and powers
the design under that run's activity exactly as the flow does
(:func:`memwall.flows.hierarchical.run_sta`). Each run works in its own folder,
``build/<config>/<label>/<pdk>/<workload>``, so the config's own row is left untouched, and
keeps its result there (``power.json``): a run of the same RTL, flow and workload is reused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from memwall.config import load_config
from memwall.progress import Progress, plain_progress

__all__ = ["power_under", "NotSynthesised"]

#: What a run folder shares with the synthesis (read-only): the netlists and the RTL they came
#: from, the area (memory macros) and the wire-load model.
SHARED = ("netlist", "work", "area.json", "wire_load.lib")


class NotSynthesised(RuntimeError):
    """The config has no synthesis on that PDK to re-use."""


def power_under(config: str, pdk_name: str, workloads: dict, *, build_root: Path,
                label: str = "workload_power", progress: Progress | None = None) -> list[dict]:
    """Per workload of ``workloads`` (run name -> :class:`memwall.family.PowerWorkload`):
    ``{"name", "description", "cycles", "power_mw", "energy_pj", "wns_ns"}``. ``power_mw``
    has OpenSTA's components (internal, switching, leakage), the clock tree, memories, the
    total, and ``clock_gated_total`` (the total with the enable registers clock-gated,
    :func:`memwall.flows.clock_gating.clock_gating`); ``energy_pj`` is each over the run's
    simulated cycles at the config's clock."""
    from memwall.family import family
    from memwall.flows import hierarchical
    from memwall.flows.flow import with_wire_load
    from memwall.flows.pdk import find_pdk
    from memwall.flows.provenance import current_design, flow_version, stale_reasons
    from memwall.flows.workload import _activity_of, merge_activity, module_keys

    cfg = load_config(config)
    build_root = Path(build_root).resolve()      # the STA runs elsewhere: paths absolute
    gen_dir = build_root / cfg.name
    synth_dir = gen_dir / "synth" / pdk_name
    if not (synth_dir / "metrics.json").is_file():
        raise NotSynthesised(f"{cfg.name} has no synthesis on {pdk_name} under {build_root}: "
                             f"run `memwall synth {cfg.name} --pdk {pdk_name}` first")
    # The runs re-use its netlists: a synthesis of another RTL, config or flow would power
    # (and calibrate) a design or a flow this checkout no longer makes.
    reasons = stale_reasons(json.loads((synth_dir / "metrics.json").read_text())
                            .get("provenance", {}), current_design(config), flow_version())
    if reasons:
        raise NotSynthesised(f"the synthesis of {cfg.name} on {pdk_name} under {build_root} is "
                             f"stale ({'; '.join(reasons)}): run `memwall synth {cfg.name} "
                             f"--pdk {pdk_name}` again first")
    manifest = json.loads((gen_dir / "manifest.json").read_text())
    pdk = find_pdk(pdk_name, cache_root=build_root / "pdk")
    period_ns = cfg.clock_period_ns_on(pdk.name)
    top_name, top = family(cfg.unit_name).build_top(cfg)
    _design, keys = module_keys(top, top_name)
    progress = progress or plain_progress()
    out = []
    for run_name, workload in workloads.items():
        run_dir = gen_dir / label / pdk.name / run_name
        key = _run_key(gen_dir, workload)
        done = run_dir / "power.json"
        if done.is_file():
            record = json.loads(done.read_text())
            if record.get("key") == key:       # the same netlist, flow and workload: reuse
                out.append(record["result"])
                continue
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        for name in SHARED:
            if (synth_dir / name).exists():
                (run_dir / name).symlink_to((synth_dir / name).resolve())
        area = json.loads((synth_dir / "area.json").read_text())
        run_pdk = _with_wire_load(pdk, area, run_dir, with_wire_load)
        part = _activity_of(workload, run_dir / "activity")
        switching = merge_activity([part], keys)
        timing = hierarchical.run_sta(run_dir, manifest, run_pdk, period_ns, switching,
                                      progress=progress)
        cycles = part["cost"]["cycles"]
        power = {k: float(v) for k, v in timing["power_mw"].items()}
        power["clock_gated_total"] = float(timing["clock_gating"]["gated_total_mw"])
        out.append({"name": run_name, "description": workload.description,
                    "cycles": cycles, "power_mw": power,
                    "energy_pj": {k: v * period_ns * cycles for k, v in power.items()},
                    "wns_ns": timing["wns_ns"]})
        done.write_text(json.dumps({"key": key, "result": out[-1]}, indent=1) + "\n")
    return out


def _run_key(gen_dir: Path, workload) -> dict:
    """What a run's power depends on: the RTL, the flow's version and the workload (its
    testbench parameters, which hold the operands and the schedule)."""
    import hashlib

    from memwall.flows.provenance import flow_version, rtl_sha256

    params = json.dumps(workload.params, sort_keys=True, default=str).encode()
    return {"rtl_sha256": rtl_sha256(gen_dir), "flow_version": flow_version(),
            "testbench": workload.testbench, "testcase": workload.testcase,
            "params_sha256": hashlib.sha256(params).hexdigest()}


def _with_wire_load(pdk, area: dict, run_dir: Path, with_wire_load):
    """The synthesis's wire-load model, written afresh into the run's own folder (the shared
    one is a link to the row's file, which must not be rewritten)."""
    link = run_dir / "wire_load.lib"
    if link.is_symlink():
        link.unlink()
    return with_wire_load(pdk, area, run_dir)
