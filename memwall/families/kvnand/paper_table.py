"""KVNAND's table in ``reports/paper_vs_ours.md``: the figures that discriminate (the same die
counts, or one mechanism on and off), from ``reports/kvnand/results.json``, as the KVNAND report
gives them with their computed verdicts."""

from __future__ import annotations

from pathlib import Path

from memwall.families.kvnand.report_figures import discriminating_table
from memwall.paper_vs_ours import load_report_json

__all__ = ["paper_table"]


def paper_table(reports: Path) -> str:
    res = load_report_json(reports, "kvnand/results.json",
                           "python -m memwall.families.kvnand.report")
    return ("The design-space model at the paper's systems, BF16 unless stated; each "
            "figure's definition and die counts: [kvnand/README.md](kvnand/README.md), "
            "section *Figures that discriminate*.\n\n" + "\n".join(discriminating_table(res)))
