"""Rewrite ``flows/gates.json`` from the metrics in build/ (after an intended change)."""

from __future__ import annotations

import json
from pathlib import Path

from .flow import metrics_path

GATES = Path(__file__).resolve().parent / "gates.json"


def main() -> None:
    data = json.loads(GATES.read_text())
    for key in data["gates"]:
        config, pdk = key.split("/")
        m = json.loads(metrics_path(config, pdk).read_text())
        data["gates"][key] = {"area_um2": round(m["area_um2"], 3),
                              "power_mw": round(m["power_mw"]["total"], 6),
                              "wns_ns": round(m["wns_ns"], 4)}
    GATES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"updated {GATES}")


if __name__ == "__main__":
    main()
