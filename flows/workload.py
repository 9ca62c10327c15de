"""Switching activity for power: each family's cocotb power workloads on a representative input.

Every :class:`memwall.family.PowerWorkload` of the config's family is simulated with Verilator
(VCD). Activity is per *module type* (means over the instances in the VCD), so a small run of
a lane module stands for every instance of it in a wide design. Module types the runs do not
contain fall back to the default activity (:data:`memwall.flows.sta.DEFAULT_ACTIVITY`), which
the ``annotated`` summary of :func:`memwall.flows.sta.run_sta` reports.
"""

from __future__ import annotations

from pathlib import Path

from memwall.hdl.common.netlist import Design

from memwall.progress import Progress, plain_progress

from .activity import activity_from_vcd

__all__ = ["collect_activity", "unit_workloads", "merge_activity"]


def unit_workloads(cfg) -> list:
    """The config's family's power workloads (:class:`memwall.family.PowerWorkload`)."""
    from memwall.family import family

    return list(family(cfg.unit_name).power_workloads(cfg))


def merge_activity(parts: list[dict]) -> dict:
    """One activity record from several runs: per module, means weighted by instances."""
    modules: dict[str, dict] = {}
    for part in parts:
        for module, record in part["modules"].items():
            into = modules.setdefault(module, {"instances": 0, "signals": {}})
            n_old, n_new = into["instances"], record["instances"]
            for bit, (toggles, duty) in record["signals"].items():
                old = into["signals"].get(bit)
                if old is None or n_old == 0:
                    into["signals"][bit] = [toggles, duty]
                else:
                    w = n_new / (n_old + n_new)
                    into["signals"][bit] = [old[0] * (1 - w) + toggles * w,
                                            old[1] * (1 - w) + duty * w]
            into["instances"] = n_old + n_new
    return {"source": "cocotb power workload ("
                      + ", ".join(p["name"] for p in parts) + "; Verilator VCD)",
            "cycles": sum(p.get("cycles", 0) for p in parts), "modules": modules}


def collect_activity(cfg, out_dir: Path, progress: Progress | None = None) -> dict | None:
    """Simulate the config's power workloads and return activity for :func:`sta.run_sta`."""
    out_dir = Path(out_dir)
    parts = []
    workloads = unit_workloads(cfg)
    progress = progress or plain_progress()
    with progress.task(f"power workloads of {cfg.name}", len(workloads)) as task:
        for workload in workloads:
            parts.append(_activity_of(workload, out_dir))
            task.advance(workload.name)
    return merge_activity(parts) if parts else None


def _activity_of(workload, out_dir: Path) -> dict:
    """Simulate one power workload (Verilator, VCD) and read its activity."""
    from memwall.verif.common.runner import simulate

    name = workload.name
    design = Design()
    design.add_top(workload.component, name)
    vcd = out_dir / name / "waves.vcd"
    simulate(workload.component, name, workload.testbench, dict(workload.params),
             sim="verilator", testcase=workload.testcase, seed=1, keep_waves=vcd)
    part = activity_from_vcd(vcd, design.instance_tree(), top_module=name)
    part["name"] = name
    vcd.unlink()   # large; the activity record is what is kept
    return part
