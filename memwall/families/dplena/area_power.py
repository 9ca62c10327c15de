"""d-PLENA's part of ``reports/area_power.md``: the paper's Table IV side by side, scaling with
VLEN, and the plots (area/power vs VLEN per PDK, area by unit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memwall.files import write_json_atomic
from memwall.flows.report import (
    achieved_mhz,
    group_areas,
    group_powers,
    linear_fit,
    markdown_table,
    timing_met,
    top_module,
    unit_group,
)

__all__ = ["report_section", "PAPER_TABLE_IV", "PAPER_SCALAR_UM2", "REPORT_GROUPS",
           "LANE_BLOCKS", "lane_blocks"]

#: d-PLENA Table IV (Synopsys DC, ASAP7, 1 GHz): VLEN -> (vector area mm^2, total power mW).
#: The paper's scalar area is a constant 661 um^2.
PAPER_TABLE_IV = {512: (0.731, 381.72), 1024: (1.464, 762.65), 2048: (2.931, 1524.53)}
PAPER_SCALAR_UM2 = 661.0

#: Module-name prefixes of the core's units: the VLEN-wide compute (the paper's "vector"), the
#: sequencer with its scalar units and small memories ("scalar"), the Vector SRAM banks and the
#: MXFP8 dequantiser.
REPORT_GROUPS = {"reduction_unit": "vector", "elementwise_unit": "vector", "sequencer": "scalar",
                 "vector_sram_bank": "vector SRAM", "mx_dequantiser": "dequantiser"}


def _plots(rows: list[dict], out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    pdks = sorted({r["pdk"] for r in rows})
    for quantity, label, getter in (
            ("area", "area (mm$^2$)", lambda r: r["area_um2"] / 1e6),
            ("power", "total power (mW)", lambda r: r["power_mw"]["total"])):
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for pdk in pdks:
            pts = sorted((r["parameters"]["vlen"], getter(r)) for r in rows if r["pdk"] == pdk)
            if len(pts) < 2:
                continue
            x, y = zip(*pts, strict=True)
            ax.plot(x, y, "o", label=f"{pdk}")
            if len(pts) >= 3:   # a line through two points says nothing about linearity
                a, b, r2 = linear_fit(x, y)
                grid = np.linspace(min(x), max(x), 50)
                ax.plot(grid, a * grid + b, "--",
                        label=f"{pdk} fit: {a:.3g}/lane, R$^2$={r2:.4f}")
        if quantity == "area":
            ax.plot(list(PAPER_TABLE_IV), [v[0] for v in PAPER_TABLE_IV.values()], "k^",
                    label="paper Table IV (vector, DC ASAP7)")
        else:
            ax.plot(list(PAPER_TABLE_IV), [v[1] for v in PAPER_TABLE_IV.values()], "k^",
                    label="paper Table IV (DC ASAP7)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")   # the PDKs differ by 30x
        ax.set_xlabel("VLEN", fontsize=11)
        ax.set_ylabel(label, fontsize=11)
        ax.set_title(f"d-PLENA datapath {quantity} vs VLEN", fontsize=12)
        ax.tick_params(labelsize=10)
        ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        fig.tight_layout()
        name = f"{quantity}_vs_vlen.png"
        fig.savefig(out / name, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(name)

    asap7 = sorted((r for r in rows if r["pdk"] == "asap7" and r.get("area_by_unit")),
                   key=lambda r: r["parameters"].get("vlen", 0))
    if asap7:
        # One bar segment per report group (vector, vector SRAM, scalar, ...), not per module:
        # module names carry their parameters, so every config would add its own entries.
        by_group = [group_areas(r) for r in asap7]
        groups = sorted({g for areas in by_group for g in areas},
                        key=lambda g: -max(areas.get(g, 0.0) for areas in by_group))
        fig, ax = plt.subplots(figsize=(8, 4.5))
        bottom = np.zeros(len(asap7))
        names = [r["config"] for r in asap7]
        for group in groups:
            vals = np.array([areas.get(group, 0.0) / 1e6 for areas in by_group])
            ax.bar(names, vals, bottom=bottom, label=group)
            bottom += vals
        ax.set_ylabel("area (mm$^2$)", fontsize=11)
        ax.set_title("d-PLENA area by unit group (ASAP7)", fontsize=12)
        ax.tick_params(labelsize=10)
        ax.legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        fig.tight_layout()
        fig.savefig(out / "area_by_unit.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append("area_by_unit.png")
    return written


def _table_iv(rows: list[dict]) -> str:
    paper_rows, failing = [], []
    for r in rows:
        vlen = r["parameters"].get("vlen")
        if r["pdk"] != "asap7" or vlen not in PAPER_TABLE_IV:
            continue
        if not timing_met(r):   # like with like: the paper's figures are at 1 GHz, met
            failing.append(f"{r['config']} ({_miss(r)} at {r['clock_mhz']:g} MHz)")
            continue
        areas, powers = group_areas(r), group_powers(r)
        paper_area, paper_power = PAPER_TABLE_IV[vlen]
        vector_um2, vector_mw = areas.get("vector", float("nan")), powers.get("vector", 0.0)
        macro_um2 = sum(m.get("total_um2", 0.0) for m in r.get("macros", []))
        memories_mw = r["power_mw"].get("memories")
        paper_rows.append([
            vlen, f"{r['clock_mhz']:g}", f"{vector_um2 / 1e6:.3f}", f"{paper_area:.3f}",
            f"{vector_um2 / 1e6 / paper_area:.2f}", f"{vector_um2 / vlen:.0f}",
            f"{paper_area * 1e6 / vlen:.0f}", f"{vector_mw:.1f}", f"{vector_mw / vlen:.3f}",
            f"{paper_power:.1f}", f"{paper_power / vlen:.3f}",
            f"{areas.get('scalar', float('nan')) - _scalar_macros(r):.0f}",
            f"{PAPER_SCALAR_UM2:.0f}", f"{macro_um2 / 1e6:.3f}",
            "not modelled" if memories_mw is None else f"{memories_mw:.1f}",
            f"{r['power_mw']['total']:.1f}"])
    missed = ("" if not failing else
              "\nNot compared with the paper, because they miss their clock (area and power "
              "stand beside a paper's only at met timing): " + ", ".join(failing) + ".\n")
    if not paper_rows:
        return "\n## d-PLENA Table IV, side by side (ASAP7, 1 GHz)\n" + missed if failing else ""
    return (missed + "\n## d-PLENA Table IV, side by side (ASAP7, at met timing)\n\n"
            "Ours: open flow (Yosys + ABC, OpenSTA) on memwall's sampling core at the clock "
            "shown, WNS ≥ 0; paper: Synopsys DC, ASAP7, 1 GHz. What each column holds:\n\n"
            "- **vector**: the reduction and elementwise units (every lane, the reduction "
            "tree and accumulator, their pipeline registers and controls): logic only. "
            "Power is those modules' own cells at the core workload's activity.\n"
            "- **paper power** is the paper's *total* power (its Table IV gives no split); "
            "ours is split: vector logic, memories, and the total of everything.\n"
            "- **scalar**: the sequencer (decoder, register files, scalar FP unit and FP "
            "blocks, top-k, INT select lane, FSM) *without* its memory macros, as the "
            "paper's 661 µm² can only be logic.\n"
            "- **memories**: every SRAM macro (Vector SRAM banks, instruction memory, "
            "FP and INT SRAMs, FIFO where mapped): area, access energy and leakage from the "
            "flow's SRAM model (a CACTI-shaped fit carried to ASAP7 by measured cell "
            "ratios, `memwall.flows.sram_model`) at the simulated accesses; kept apart from "
            "the logic columns, since the paper's power split is unknown.\n"
            "- **total power**: logic + memories, the whole core.\n\n"
            + markdown_table(["VLEN", "clock MHz", "vector mm² (ours)", "vector mm² (paper)",
                              "ratio", "vector µm²/lane (ours)", "vector µm²/lane (paper)",
                              "vector mW (ours)", "vector mW/lane (ours)",
                              "total mW (paper)", "total mW/lane (paper)",
                              "scalar logic µm² (ours)", "scalar µm² (paper)",
                              "memories mm² (ours)", "memories mW (ours)",
                              "total mW (ours)"], paper_rows)
            + _gap_note())


#: The blocks of a lane, by module-name prefix, as Table IV per block lists them; a module
#: matching none is "other logic". Each block's figure is its modules' own cells (children are
#: their own blocks), so the blocks add up to the vector units.
LANE_BLOCKS = (("FP32 add", ("fp_add_fmtfp32",)), ("BF16 add", ("fp_add_fmtbf16",)),
               ("FP mul", ("fp_mul_",)), ("exp", ("bf16_exp",)),
               ("tree node (compare-select, registers)", ("reduction_node", "reduction_leaf")))


def _vector_instances(row: dict) -> dict[str, int]:
    """Instances of each module under the vector units (the paper's 'vector'), from the
    row's hierarchy: the same module elsewhere (the scalar FP unit's exp) is not counted."""
    hierarchy, counts = row["hierarchy"], {}
    top = top_module(hierarchy)

    def visit(module: str, times: int) -> None:
        counts[module] = counts.get(module, 0) + times
        for child, n in hierarchy.get(module, {}).items():
            visit(child, times * n)

    for child, n in hierarchy.get(top, {}).items():
        if unit_group(child, row["unit"]) == "vector":
            visit(child, n)
    return counts


def lane_blocks(row: dict) -> dict[str, dict[str, float]]:
    """Per lane of the vector units: area (µm²) and logic power (mW) of each block of
    :data:`LANE_BLOCKS`, other logic, and the flip-flops among all of them (``flops``)."""
    vlen = row["parameters"]["vlen"]
    blocks = {name: {"area_um2": 0.0, "power_mw": 0.0} for name, _ in LANE_BLOCKS}
    blocks["other logic"] = {"area_um2": 0.0, "power_mw": 0.0}
    flops = 0.0
    for module, n in _vector_instances(row).items():
        area = row["area_by_module"].get(module, {})
        power = row.get("power_by_module", {}).get(module, {}).get("per_instance_mw", {})
        name = next((b for b, prefixes in LANE_BLOCKS if module.startswith(prefixes)),
                    "other logic")
        blocks[name]["area_um2"] += n * (area.get("own_um2", 0.0) - area.get("macro_um2", 0.0))
        blocks[name]["power_mw"] += n * power.get("total", 0.0)
        flops += n * area.get("sequential_um2", 0.0)
    out = {b: {k: v / vlen for k, v in f.items()} for b, f in blocks.items()}
    out["flops (within the above)"] = {"area_um2": flops / vlen, "power_mw": float("nan")}
    return out


def _miss(row: dict) -> str:
    """What keeps a row from meeting its clock: the failing WNS, flat where that is the one."""
    if row["wns_ns"] is None:
        return "no timed path"
    if row["wns_ns"] >= 0 and row.get("flat_wns_ns") is not None:
        return f"flat WNS {row['flat_wns_ns']:.3f} ns"
    return f"WNS {row['wns_ns']:.3f} ns"


def _table_iv_blocks(rows: list[dict]) -> str:
    """Table IV per block: our lane's blocks beside the paper's whole lane (area and power per
    lane), the paper's figure only beside rows that meet its clock."""
    lines = []
    for r in rows:
        vlen = r["parameters"].get("vlen")
        if r["pdk"] != "asap7" or vlen not in PAPER_TABLE_IV or "hierarchy" not in r \
                or not r.get("power_by_module"):
            continue
        paper_area, paper_power = PAPER_TABLE_IV[vlen]
        met = timing_met(r)
        paper = (f"{paper_area * 1e6 / vlen:.0f} µm², {paper_power / vlen:.3f} mW" if met else
                 f"not compared: {_miss(r)} at {r['clock_mhz']:g} MHz")
        for block, figures in lane_blocks(r).items():
            mw = figures["power_mw"]
            lines.append([r["config"], block, f"{figures['area_um2']:.1f}",
                          "—" if mw != mw else f"{mw * 1e3:.1f}", paper])
            paper = ""
    if not lines:
        return ""
    return ("\n## d-PLENA Table IV per block (ASAP7, per lane)\n\n"
            "Ours: each block's own standard cells (memories excluded) over the vector "
            "units (reduction and elementwise: every lane, the tree and accumulator), divided "
            "by VLEN; "
            "power at the core workload's activity, logic only, no clock tree. The flops row "
            "is the flip-flop area inside all the blocks above (not added again). Paper: its "
            "Table IV whole vector area and *total* power divided by VLEN (the lane's contents "
            "unpublished; its power includes everything), shown only beside a config that "
            "meets the paper's 1 GHz with the sign-off margin.\n\n"
            + markdown_table(["config", "block", "µm²/lane (ours)", "µW/lane (ours)",
                              "paper per lane (whole lane)"], lines))


def _scalar_macros(row: dict) -> float:
    """Area of the memory macros inside the sequencer (the 'scalar' group)."""
    return sum(m.get("total_um2", 0.0) for m in row.get("macros", [])
               if unit_group(m.get("module", ""), row["unit"]) == "scalar")


def _gap_note() -> str:
    return ("\nWhere the remaining gap to Design Compiler comes from: DC maps to the full "
            "ASAP7 library with timing-driven sizing, buffering and retiming over the whole "
            "design, while this flow runs ABC per module with boundary budgets and "
            "no retiming, so its pipeline registers sit where the generator put them; DC's "
            "datapath synthesis (DesignWare adders and multipliers) against ABC's generic "
            "mapping; and the paper's RTL is not ours (its lane holds whatever its FP units "
            "need: we pipeline add, multiply and exp to meet 1 GHz, each pipeline register "
            "counted in the vector area).\n")


def table_ii_at_clock(rows: list[dict]) -> str:
    """The Table II workload's latency in µs at each row's achieved clock, and the HBM port
    in GB/s at that clock."""
    from memwall.config import load_config
    from memwall.families.dplena.report import PAPER_MS, TABLE_II, _run

    lines = []
    for r in rows:
        clock = achieved_mhz(r)
        if clock is None or r["parameters"].get("vlen") not in PAPER_MS:
            continue   # the paper's workload on the paper's VLENs
        cfg = load_config(r["config"])
        w = TABLE_II
        result = _run(cfg, w["B"], w["L"], w["V"], w["T"])
        vlen = cfg.vlen
        lines.append([r["config"], r["pdk"], f"{clock:.0f}",
                      "met" if timing_met(r) else "fmax", f"{result['cycles']:,}",
                      f"{result['cycles'] / clock:,.0f}",
                      f"{PAPER_MS[vlen] * 1e3:,.0f}" if vlen in PAPER_MS else "—",
                      f"{cfg.hbm_bytes_per_cycle * clock / 1e3:.1f}"])
    if not lines:
        return ""
    w = TABLE_II
    return ("\n## Table II at the achieved clock\n\n"
            f"One sampling step of the Table II workload (B={w['B']}, L={w['L']}, "
            f"V={w['V']}, T={w['T']}, MXFP8 logits) from the cycle model (equal to the RTL's "
            "cycle count on the regression workloads), at each row's achieved clock: its "
            "own clock where timing is met ('met'), else fmax. The HBM port is the config's "
            "bytes per cycle at that clock.\n\n"
            + markdown_table(["config", "pdk", "clock MHz", "clock is", "cycles", "µs",
                              "paper µs (1 GHz, DC)", "HBM port GB/s"], lines))


def _fits(rows: list[dict]) -> str:
    fits = []
    for pdk in sorted({r["pdk"] for r in rows}):
        pts = [(r["parameters"]["vlen"], r["area_um2"] / 1e6, r["power_mw"]["total"])
               for r in rows if r["pdk"] == pdk]
        if len(pts) >= 3:
            x, area, power = zip(*sorted(pts), strict=True)
            a, b, r2 = linear_fit(x, area)
            pa, pb, pr2 = linear_fit(x, power)
            fits.append([pdk, f"{a * 1e6:.1f} µm²/lane + {b:.4f} mm²", f"{r2:.5f}",
                         f"{pa:.4f} mW/lane + {pb:.2f} mW", f"{pr2:.5f}"])
    if not fits:
        return ""
    return ("\n## Scaling with VLEN (least squares over the d-PLENA configs)\n\n"
            + markdown_table(["pdk", "area fit", "R²", "power fit", "R²"], fits))


def table_iv_records(rows: list[dict]) -> list[dict]:
    """Per ASAP7 row of a Table IV VLEN: its clock and timing, and (at met timing only) the
    figures Table IV gives beside the paper's: vector logic area, total power."""
    records = []
    for r in sorted(rows, key=lambda r: r["parameters"].get("vlen", 0)):
        vlen = r["parameters"].get("vlen")
        if r["pdk"] != "asap7" or vlen not in PAPER_TABLE_IV:
            continue
        met = timing_met(r)
        record = {"config": r["config"], "vlen": vlen, "clock_mhz": r["clock_mhz"],
                  "timing_met": met, "wns_ns": r["wns_ns"], "flat_wns_ns": r.get("flat_wns_ns"),
                  "paper_vector_mm2": PAPER_TABLE_IV[vlen][0],
                  "paper_total_mw": PAPER_TABLE_IV[vlen][1]}
        if met:
            record.update(vector_mm2=group_areas(r).get("vector", 0.0) / 1e6,
                          total_mw=r["power_mw"]["total"])
        records.append(record)
    return records


def report_section(rows: list[dict], out: Path) -> tuple[str, list[str]]:
    """Markdown and plot files for the d-PLENA rows of the area/power report; writes
    ``signoff.json`` (:func:`table_iv_records`) for ``reports/paper_vs_ours.md``."""
    write_json_atomic(out / "signoff.json", {
        "command": "make report", "table_iv": table_iv_records(rows)})
    return (_table_iv(rows) + _table_iv_blocks(rows) + table_ii_at_clock(rows) + _fits(rows),
            _plots(rows, out))
