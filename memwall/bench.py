"""Generation-time benchmark: ``make bench`` (records figures; it is not a pass/fail test).

Runs ``memwall gen`` for the paper's configs in fresh processes, as a user would, and writes the
wall-clock seconds (median of several runs, Python start-up included) to
``benchmarks/gen_time.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = ("dplena512", "dplena1024", "dplena2048")
OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "gen_time.json"


def time_gen(config: str, runs: int) -> list[float]:
    times = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "memwall.cli", "gen", config, "--out", out],
                           check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return times


def main(runs: int = 3) -> dict:
    figures = {}
    for config in CONFIGS:
        times = time_gen(config, runs)
        figures[config] = {"median_s": round(statistics.median(times), 3),
                           "runs_s": [round(t, 3) for t in times]}
        print(f"memwall gen {config}: median {figures[config]['median_s']:.2f} s over {runs} runs")
    ratio = figures["dplena2048"]["median_s"] / figures["dplena512"]["median_s"]
    print(f"dplena2048 / dplena512 = {ratio:.2f}")
    record = {"command": "make bench", "machine": {"cpus": os.cpu_count(),
              "python": platform.python_version(), "platform": platform.platform()},
              "gen_time": figures, "ratio_2048_over_512": round(ratio, 3)}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {OUT}")
    return record


if __name__ == "__main__":
    main()
