"""Switching activity for power: each family's cocotb power workloads on a representative input.

Every :class:`memwall.family.PowerWorkload` of the config's family is simulated with Verilator
(VCD; a workload's ``prepare`` first writes the files its testbench reads, e.g. a program and
its data). Activity is per *module type* (means over the instances in the VCD), so a small run
of a lane module stands for every instance of it in a wide design.

The runs' module types are matched to the design's by **generator class and parameters**
(:func:`module_keys`), not by name: a module of the design takes the activity of the simulated
module of the same class with equal parameters, else with the nearest ones
(:func:`param_distance`; a run of a reduced design, e.g. fewer lanes, stands for the real one).
Such a record says where it came from (``"from"``, shown per module in ``annotated`` of
:func:`memwall.flows.hierarchical.run_sta`), and its signal bits the smaller module lacks take
the mean of that signal's bits (:func:`memwall.flows.activity.widen_signals`). Module types no
run covers keep the default activity (:data:`memwall.flows.gate_activity.DEFAULT_ACTIVITY`),
listed in ``annotated["modules_without_vcd"]``.

``python -m memwall.flows.workload CONFIG`` runs a config's workloads alone and prints what
they cost (simulation and VCD-reading time, peak RSS, VCD size).
"""

from __future__ import annotations

import json
import math
import resource
import time
from collections import defaultdict
from pathlib import Path

from memwall import paths
from memwall.hdl.common.netlist import Design, module_key
from memwall.progress import Progress, plain_progress

from .activity import activity_from_vcd

__all__ = ["collect_activity", "unit_workloads", "merge_activity", "module_keys",
           "param_distance", "cover_design", "CATEGORY_DISTANCE"]

#: :func:`param_distance` of two parameter values that are not both numbers and differ (a
#: format, a mode): as far apart as numbers 2^10 times apart.
CATEGORY_DISTANCE = 10.0


def unit_workloads(cfg) -> list:
    """The config's family's power workloads (:class:`memwall.family.PowerWorkload`)."""
    from memwall.family import family

    return list(family(cfg.unit_name).power_workloads(cfg))


# --------------------------------------------------------------------------------------------
# Module types by generator class and parameters.

def module_keys(component, top_name: str) -> tuple[Design, dict[str, tuple[str, str]]]:
    """The design of ``component`` as top ``top_name`` and, per module, its generator key
    (class path, parameters as sorted JSON; :func:`memwall.hdl.common.netlist.module_key`)."""
    design = Design()
    design.add_top(component, top_name)
    keys = design.generator_keys()
    try:
        keys[top_name] = module_key(component)
    except TypeError:   # a top without params: its class alone
        cls = type(component)
        keys[top_name] = (f"{cls.__module__}.{cls.__qualname__}", "null")
    return design, keys


def _leaves(value, path: str = ""):
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _leaves(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _differences(a, b) -> list[tuple[str, object, object]]:
    la, lb = dict(_leaves(a)), dict(_leaves(b))
    return [(k, la.get(k), lb.get(k)) for k in sorted(la.keys() | lb.keys())
            if la.get(k) != lb.get(k) or (k in la) != (k in lb)]


def param_distance(a, b) -> float:
    """How far two parameter sets of one generator class are apart: over their leaf values,
    |log2((|x|+1)/(|y|+1))| for two numbers, :data:`CATEGORY_DISTANCE` for any other
    difference (a value only one side has included); 0 when equal."""
    total = 0.0
    for _k, x, y in _differences(a, b):
        if _number(x) and _number(y):
            total += abs(math.log2((abs(x) + 1) / (abs(y) + 1)))
        else:
            total += CATEGORY_DISTANCE
    return total


def _merge_records(records: list[dict]) -> dict:
    """One module's activity from several runs: signal means weighted by instances; the
    per-cycle traces of the first run that has them."""
    if len(records) == 1:
        return dict(records[0])
    signals: dict[str, list[float]] = {}
    n_total = 0
    for record in records:
        n_new = record["instances"]
        for bit, (toggles, duty) in record["signals"].items():
            old = signals.get(bit)
            if old is None or n_total == 0:
                signals[bit] = [toggles, duty]
            else:
                w = n_new / (n_total + n_new)
                signals[bit] = [old[0] * (1 - w) + toggles * w, old[1] * (1 - w) + duty * w]
        n_total += n_new
    traced = next((r for r in records if r.get("traces")), {})
    return {"instances": n_total, "signals": signals, "traces": traced.get("traces", {}),
            "trace_cycles": traced.get("trace_cycles", 0)}


def cover_design(parts: list[dict], design: dict[str, tuple[str, str]]) -> dict[str, dict]:
    """Activity per module of ``design`` (module -> key, :func:`module_keys`) from the runs'
    ``parts`` (each with its own ``keys``): the records of the same class at the smallest
    :func:`param_distance` (equal ones merged); a record not of equal parameters carries
    ``"from"`` (the simulated module, its run and the parameters that differ) and
    ``"widen": True``. Modules of a class no run simulated are left out."""
    by_class: dict[str, list] = defaultdict(list)
    for part in parts:
        for module, record in part["modules"].items():
            cls, params = part["keys"].get(module, (None, None))
            if cls is not None:
                by_class[cls].append((part["name"], module, json.loads(params), record))
    out = {}
    for module, (cls, params_json) in design.items():
        params = json.loads(params_json)
        options = [(param_distance(p, params), run, m, p, record)
                   for run, m, p, record in by_class.get(cls, [])]
        if not options:
            continue
        best = min(o[0] for o in options)
        chosen = [o for o in options if o[0] == best]
        record = _merge_records([o[4] for o in chosen])
        if best > 0:
            _d, run, simulated, p, _r = chosen[0]
            diffs = ", ".join(f"{k} {x} for {y}" for k, x, y in _differences(p, params)[:4])
            record.update({"from": f"{simulated} of the {run} run ({diffs})", "widen": True})
        out[module] = record
    return out


def merge_activity(parts: list[dict], design: dict[str, tuple[str, str]] | None = None) -> dict:
    """One activity record from several runs, per module of ``design`` (:func:`cover_design`;
    without it, per simulated module name). ``source`` names the runs by their
    ``description``, else their names."""
    if design is not None:
        modules = cover_design(parts, design)
    else:
        named: dict[str, list[dict]] = defaultdict(list)
        for part in parts:
            for module, record in part["modules"].items():
                named[module].append(record)
        modules = {m: _merge_records(records) for m, records in named.items()}
    described = [p["description"] for p in parts if p.get("description")]
    plain = [p["name"] for p in parts if not p.get("description")]
    if plain:
        described.append("cocotb power workload (" + ", ".join(plain) + ")")
    return {"source": "; ".join(described) + "; Verilator VCD",
            "cycles": sum(p.get("cycles", 0) for p in parts), "modules": modules,
            "runs": [{"name": p["name"], **p.get("cost", {})} for p in parts]}


def collect_activity(cfg, out_dir: Path, progress: Progress | None = None) -> dict | None:
    """Simulate the config's power workloads and return activity for :func:`hierarchical.run_sta`,
    per module of the config's design (:func:`cover_design`)."""
    from memwall.family import family

    out_dir = Path(out_dir)
    parts = []
    workloads = unit_workloads(cfg)
    progress = progress or plain_progress()
    with progress.task(f"power workloads of {cfg.name}", len(workloads)) as task:
        for workload in workloads:
            parts.append(_activity_of(workload, out_dir))
            task.advance(workload.name)
    if not parts:
        return None
    top_name, top = family(cfg.unit_name).build_top(cfg)
    _design, keys = module_keys(top, top_name)
    return merge_activity(parts, keys)


def _activity_of(workload, out_dir: Path) -> dict:
    """Simulate one power workload (Verilator, VCD) and read its activity."""
    from memwall.verif.common.runner import simulate

    name = workload.name
    folder = out_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    params = dict(workload.params)
    if workload.prepare is not None:
        params.update(workload.prepare(folder))
    design, keys = module_keys(workload.component, name)
    vcd = folder / "waves.vcd"
    start = time.perf_counter()
    simulate(workload.component, name, workload.testbench, params, sim="verilator",
             testcase=workload.testcase, seed=1, keep_waves=vcd)
    simulated = time.perf_counter()
    vcd_mb = vcd.stat().st_size / 1e6
    part = activity_from_vcd(vcd, design.instance_tree(), top_module=name)
    part.update(name=name, description=workload.description, keys=keys)
    part["cost"] = {"cycles": round(part["cycles"]),
                    "simulation_s": round(simulated - start, 1),
                    "vcd_mb": round(vcd_mb, 1),
                    "vcd_reading_s": round(time.perf_counter() - simulated, 1)}
    vcd.unlink()   # large; the activity record is what is kept
    return part


def _peak_rss_mb(who: int) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024.0, 1)


def main(argv: list[str] | None = None) -> None:
    """``python -m memwall.flows.workload CONFIG [--out DIR]``: a config's power workloads
    alone, with their cost (the simulator's peak RSS is that of this process's children)."""
    import argparse

    from memwall.config import load_config

    parser = argparse.ArgumentParser(prog="python -m memwall.flows.workload")
    parser.add_argument("config")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the runs' files (default build/<config>/activity)")
    args = parser.parse_args(argv)
    cfg = load_config(args.config)
    out = args.out or paths.BUILD / cfg.name / "activity"
    start = time.perf_counter()
    activity = collect_activity(cfg, out)
    if activity is None:
        print(f"{cfg.name}: no power workload")
        return
    mapped = {m: r["from"] for m, r in activity["modules"].items() if "from" in r}
    print(json.dumps({"config": cfg.name, "source": activity["source"],
                      "runs": activity["runs"], "modules": len(activity["modules"]),
                      "from_nearest": mapped, "wall_s": round(time.perf_counter() - start, 1),
                      "peak_rss_mb": {"this process (VCD reading)": _peak_rss_mb(
                          resource.RUSAGE_SELF),
                          "children (Verilator build and simulation)": _peak_rss_mb(
                              resource.RUSAGE_CHILDREN)}}, indent=1))


if __name__ == "__main__":
    main()
