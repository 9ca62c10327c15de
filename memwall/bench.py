"""``make bench``: figures, not pass/fail tests.

Runs ``memwall gen`` for every family's ``bench_configs`` in fresh processes, as a user would,
and writes the wall-clock seconds (median of several runs, Python start-up included) to
``benchmarks/gen_time.json``; then writes every family's own report (``reports/<family>/``,
:attr:`memwall.family.Family.write_reports`) and, from them, ``reports/paper_vs_ours.md``
(:mod:`memwall.paper_vs_ours`).
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

from memwall import paths

OUT = paths.BENCHMARKS / "gen_time.json"


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
    from memwall.family import families

    figures = {}
    for config in (c for fam in families().values() for c in fam.bench_configs):
        times = time_gen(config, runs)
        figures[config] = {"median_s": round(statistics.median(times), 3),
                           "runs_s": [round(t, 3) for t in times]}
        print(f"memwall gen {config}: median {figures[config]['median_s']:.2f} s over {runs} runs")
    record = {"command": "make bench", "machine": {"cpus": os.cpu_count(),
              "python": platform.python_version(), "platform": platform.platform()},
              "gen_time": figures}
    # Does generation time grow with size? Each family's last bench config over its first.
    for fam in families().values():
        if len(fam.bench_configs) >= 2:
            first, last = fam.bench_configs[0], fam.bench_configs[-1]
            ratio = figures[last]["median_s"] / figures[first]["median_s"]
            record.setdefault("growth", {})[f"{last}/{first}"] = round(ratio, 3)
            print(f"{last} / {first} = {ratio:.2f}")
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {OUT}")
    for name, fam in families().items():
        if fam.write_reports is not None:
            start = time.perf_counter()
            fam.write_reports(paths.REPORTS / name)
            print(f"wrote reports/{name}/ in {time.perf_counter() - start:.1f} s")
    from memwall.paper_vs_ours import refresh

    print(refresh())
    return record


if __name__ == "__main__":
    main()
