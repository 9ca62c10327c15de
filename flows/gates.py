"""Rewrite ``flows/gates.json`` from the metrics in build/ (after an intended change).

``python -m memwall.flows.gates [--build-root DIR]`` records, per ``<config>/<pdk>`` gate, the
area and power the flow measured, as expected values. WNS is an expected value only when timing
is met (WNS >= 0): a failing slack is never pinned. Until then it is kept as
``measured_wns_ns``, information that ``tests/flows/test_flow_gates.py`` does not assert.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .flow import BUILD_ROOT, metrics_path

GATES = Path(__file__).resolve().parent / "gates.json"


def gate_entry(metrics: dict) -> dict:
    """The committed figures of one gate from its ``metrics.json``."""
    entry = {"area_um2": round(metrics["area_um2"], 3),
             "power_mw": round(metrics["power_mw"]["total"], 6)}
    wns = metrics["wns_ns"]
    if wns is not None and wns >= 0:
        entry["wns_ns"] = round(wns, 4)
    else:   # timing not met (or nothing timed): information, not an expected value
        entry["measured_wns_ns"] = None if wns is None else round(wns, 4)
    return entry


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-root", type=Path, default=BUILD_ROOT,
                        help="where the flow wrote <config>/synth/<pdk>/metrics.json")
    args = parser.parse_args(argv)
    data = json.loads(GATES.read_text())
    for key in data["gates"]:
        config, pdk = key.split("/")
        metrics = json.loads(metrics_path(config, pdk, args.build_root).read_text())
        data["gates"][key] = gate_entry(metrics)
    GATES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"updated {GATES}")


if __name__ == "__main__":
    main()
