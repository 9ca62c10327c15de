"""d-PLENA's table in ``reports/paper_vs_ours.md``: Table II's step latency (the cycle model
the RTL matches, ``reports/dplena/cycles.json``) and Table IV's area and power (the sign-off,
``reports/dplena/signoff.json``, at met timing only)."""

from __future__ import annotations

from pathlib import Path

from memwall.paper_vs_ours import Claim, claims_table, load_report_json, verdict

__all__ = ["paper_table", "claims"]

#: The variant of the Table II rows that the shipped dplena<VLEN> configs run.
SHIPPED = "fused"


def _unmet(record: dict) -> str:
    wns = [w for w in (record["wns_ns"], record.get("flat_wns_ns")) if w is not None]
    return (f"not compared: misses {record['clock_mhz']:g} MHz (WNS {min(wns):.3f} ns)"
            if wns else "not compared: no timed path")


def claims(reports: Path) -> list[Claim]:
    cycles = load_report_json(reports, "dplena/cycles.json",
                              "python -m memwall.families.dplena.report")
    out = []
    for row in (r for r in cycles["table_ii"] if r["variant"] == SHIPPED):
        out.append(Claim(
            f"Table II step latency, VLEN {row['vlen']} (T=1, B=16, L=32, V=126,464, MXFP8 "
            f"logits; paper: 1 GHz, 67.7 GB/s HBM; ours: {row['config']}'s cycles at 1 GHz, "
            f"{row['hbm_bytes_per_cycle']} B/cycle)",
            f"{row['paper_ms']:g} ms", f"{row['latency_ms']:.3f} ms",
            verdict(row["latency_ms"], row["paper_ms"], higher="slower than", lower="faster than"),
            "dplena/README.md"))
    signoff = load_report_json(reports, "dplena/signoff.json", "make report")
    for record in signoff["table_iv"]:
        vlen, met = record["vlen"], record["timing_met"]
        where = "area_power.md"
        out.append(Claim(
            f"Table IV vector area, VLEN {vlen} (ASAP7, 1 GHz; the reduction and elementwise "
            "units' logic; paper: Synopsys DC, ours: Yosys + OpenSTA, pre-layout)",
            f"{record['paper_vector_mm2']:.3f} mm²",
            f"{record['vector_mm2']:.3f} mm²" if met else "—",
            verdict(record["vector_mm2"], record["paper_vector_mm2"], higher="larger than",
                    lower="smaller than") if met else _unmet(record), where))
        out.append(Claim(
            f"Table IV total power, VLEN {vlen} (ASAP7, 1 GHz; paper: DC's, workload not "
            "stated; ours: logic, SRAM macros and clock tree at the core workload's activity)",
            f"{record['paper_total_mw']:.1f} mW",
            f"{record['total_mw']:.1f} mW" if met else "—",
            verdict(record["total_mw"], record["paper_total_mw"]) if met else _unmet(record),
            where))
    return out


def paper_table(reports: Path) -> str:
    return claims_table(claims(reports))
