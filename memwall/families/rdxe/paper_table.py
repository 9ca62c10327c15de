"""rDXE's table in ``reports/paper_vs_ours.md``: the rDXE report's side-by-side table (cycle
model, baselines both as the paper reads them and as our RTL builds them), from
``reports/rdxe/results.json``."""

from __future__ import annotations

from pathlib import Path

from memwall.families.rdxe.report import side_by_side
from memwall.paper_vs_ours import load_report_json

__all__ = ["paper_table"]


def paper_table(reports: Path) -> str:
    res = load_report_json(reports, "rdxe/results.json", "python -m memwall.families.rdxe.report")
    return ("The cycle model the regression checks against the RTL, one decoder layer on one "
            "DXE; each baseline as the paper reads it and as our RTL builds it. Definitions, "
            "constants and why the figures differ: [rdxe/README.md](rdxe/README.md).\n\n"
            + "\n".join(side_by_side(res)))
