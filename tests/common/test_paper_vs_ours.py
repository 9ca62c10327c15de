"""reports/paper_vs_ours.md: one table per family, generated from the committed reports."""

from __future__ import annotations

import json
import shutil

import pytest

from memwall import paper_vs_ours, paths
from memwall.family import families


def test_the_committed_page_is_what_the_reports_give():
    assert (paths.REPORTS / "paper_vs_ours.md").read_text() == \
        paper_vs_ours.render(paths.REPORTS)


def test_every_family_has_a_table_with_a_verdict_per_row():
    text = paper_vs_ours.render(paths.REPORTS)
    for name, fam in families().items():
        assert fam.paper_table is not None, name
        section = text.split(f"## {name}: ", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.splitlines()
                if line.startswith("| ") and not line.startswith("| figure")]
        assert rows, name
        assert all(line.count("|") >= 5 for line in rows), name


def test_verdict_is_computed_from_both_figures():
    assert paper_vs_ours.verdict(1.05, 1.0) == "within 10% of the paper's (+5.0%)"
    assert paper_vs_ours.verdict(0.5, 1.0, lower="faster than") == \
        "faster than the paper's (-50.0%)"
    assert paper_vs_ours.verdict(2.0, 1.0).startswith("above")
    with pytest.raises(ValueError):
        paper_vs_ours.verdict(1.0, 0.0)


def _reports_copy(tmp_path):
    folder = tmp_path / "reports"
    shutil.copytree(paths.REPORTS, folder)
    return folder


def test_a_missing_report_names_its_command_and_writes_nothing(tmp_path, capsys):
    folder = _reports_copy(tmp_path)
    (folder / "paper_vs_ours.md").unlink()
    (folder / "shield" / "signoff.json").unlink()
    assert paper_vs_ours.main(["--reports", str(folder)]) == 2
    assert "shield/signoff.json is missing: write it with `make report`" in \
        capsys.readouterr().err
    assert not (folder / "paper_vs_ours.md").exists()


def test_area_and_power_only_at_met_timing(tmp_path):
    from memwall.families.dplena.paper_table import claims

    folder = _reports_copy(tmp_path)
    path = folder / "dplena" / "signoff.json"
    signoff = json.loads(path.read_text())
    record = signoff["table_iv"][0]
    record.update(timing_met=False, wns_ns=-0.2, flat_wns_ns=-0.25)
    record.pop("vector_mm2", None)
    record.pop("total_mw", None)
    path.write_text(json.dumps(signoff))
    unmet = [c for c in claims(folder) if f"VLEN {record['vlen']} (ASAP7" in c.figure]
    assert len(unmet) == 2
    assert all(c.ours == "—" and c.verdict == "not compared: misses 1000 MHz (WNS -0.250 ns)"
               for c in unmet)
    # at met timing the figures stand beside the paper's, with a computed verdict
    record.update(timing_met=True, wns_ns=0.01, flat_wns_ns=0.02,
                  vector_mm2=1.05 * record["paper_vector_mm2"],
                  total_mw=2 * record["paper_total_mw"])
    path.write_text(json.dumps(signoff))
    area, power = [c for c in claims(folder) if f"VLEN {record['vlen']} (ASAP7" in c.figure]
    assert area.verdict == "within 10% of the paper's (+5.0%)"
    assert power.verdict == "above the paper's (+100.0%)"
