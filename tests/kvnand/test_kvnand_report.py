"""The KVNAND report (reports/kvnand/) is what its generator writes from a fresh model run, and
the design-space sweep through the sweep runner gives the model's own cells."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import pytest

from memwall import paths
from memwall.families.kvnand import report as kvnand_report
from memwall.golden.kvnand import dse as kvnand_dse
from memwall.golden.kvnand import model as kvnand_model
from memwall.golden.kvnand.systems import BUFFER_READINGS, Params, kvnand_c, kvnand_d
from memwall.sweep import LocalProcesses

ROOT = paths.REPO
FOLDER = ROOT / "reports" / "kvnand"
PNG = b"\x89PNG\r\n\x1a\n"


def test_kvnand_report_is_current_and_what_its_generator_writes():
    stored = kvnand_report.load_results(FOLDER)
    assert stored == json.loads(json.dumps(kvnand_model.evaluate()))   # the model, re-run
    assert (FOLDER / "README.md").read_text() == kvnand_report.readme(stored)
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", kvnand_report.readme(stored)):
        assert (FOLDER / image).read_bytes()[:8] == PNG, image


def test_build_report_writes_the_plots(tmp_path):
    res = kvnand_report.build_report(tmp_path)
    assert kvnand_report.load_results(tmp_path) == json.loads(json.dumps(res))
    assert (tmp_path / "README.md").read_text() == kvnand_report.readme(
        kvnand_report.load_results(tmp_path))
    for name in kvnand_report.PLOTS:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == PNG and len(data) > 10_000, name


def _direct(model, fmt, contexts, splits, dies, params):
    """The cells as the model gives them, without the sweep."""
    out = {}
    for ctx in contexts:
        cells = {}
        for s in splits:
            system = kvnand_c(dies, params) if s == "C" else kvnand_d(s, dies - s, params)
            r = kvnand_model.decode_step(system, model, ctx, fmt)
            cells[f"C-{dies}" if s == "C" else f"D-({s}+{dies - s})"] = (
                None if r["oom"] else round(r["latency_s"] * 1e3, 4))
        out[ctx] = cells
    return out


def test_dse_sweep_on_local_processes_equals_the_model():
    grid = {"models": ("OPT-30B", "LLaMA3.1-70B"), "formats": ("w4a16",),
            "contexts": (1_000, 50_000), "splits": (2, 4, 7, "C"),
            "buffer_readings": tuple(BUFFER_READINGS), "dies": 8}
    jobs = kvnand_dse.dse_jobs(**grid)
    assert len(jobs) == 4 and len({j.name for j in jobs}) == 4
    got = kvnand_dse.run_dse(LocalProcesses(workers=2), **grid)
    assert list(got) == list(BUFFER_READINGS)
    full = {}
    for reading, kw in BUFFER_READINGS.items():
        params = Params(**{**asdict(kvnand_model.DEFAULT), **kw})
        full[reading] = kvnand_model.dse(params)
        for model in grid["models"]:
            case = got[reading][f"{model} w4a16"]
            want = _direct(model, "w4a16", grid["contexts"], grid["splits"], 8, params)
            assert {c: row["cells"] for c, row in case.items()} == want
            for c, row in case.items():
                fit = {k: v for k, v in row["cells"].items() if v is not None}
                assert row["best"] == (min(fit, key=fit.get) if fit else None)
                # The same cells as Fig. 15's grid (kvnand_model.dse), where both have them.
                assert all(full[reading][f"{model} w4a16"][c]["cells"][k] == v
                           for k, v in row["cells"].items())
    # The buffer axis matters: the limited buffer slows the long-context cells.
    lim, suf = got["buffer_limited"]["OPT-30B w4a16"], got["paper_sufficient"]["OPT-30B w4a16"]
    assert lim[50_000]["cells"]["D-(2+6)"] > suf[50_000]["cells"]["D-(2+6)"]


def test_dse_default_grid_is_fig15():
    g = kvnand_dse._grid()
    assert [f"{m} {f}" for m in g["models"] for f in g["formats"]] == [
        f"{m} {f}" for m, f in kvnand_model.DSE_CASES]
    assert g["contexts"] == kvnand_model.DSE_CONTEXTS and g["dies"] == 8
    assert g["splits"] == (1, 2, 3, 4, 5, 6, 7, "C")
    # One slice of the default grid, in this process: kvnand_model.dse's rows.
    want = kvnand_model.dse()
    m, f = kvnand_model.DSE_CASES[-1]
    got = kvnand_dse.dse_slice(m, f, g["contexts"], g["splits"], 8, kvnand_model.DEFAULT)
    assert got == want[f"{m} {f}"]


@pytest.mark.parametrize("bad, match", [
    ({"models": ("GPT-5",)}, "models="), ({"formats": ("fp4",)}, "formats="),
    ({"splits": (0, "C")}, "splits="), ({"splits": (8,)}, "splits="),
    ({"buffer_readings": ("huge",)}, "buffer_readings="), ({"dies": 1}, "dies="),
    ({"dies": 2, "splits": ("C",)}, "heads"),
    ({"buffer_readings": {"x": {"d_kv_buffer": 1}}}, "allowed c_open_streams")])
def test_dse_grid_is_checked(bad, match):
    with pytest.raises(ValueError, match=match):
        kvnand_dse.dse_jobs(**bad)


def test_synthesis_md_is_what_its_generator_writes():
    from memwall.families.kvnand.synthesis import render

    folder = paths.REPO / "reports" / "kvnand"
    data = json.loads((folder / "synthesis.json").read_text())
    assert (folder / "synthesis.md").read_text() == render(data)
    paper = next(c for c in data["configs"] if c["config"] == "kvnand_paper")
    assert paper["bch_gbps"] == paper["bch_bits"] * paper["clock_mhz"] / 1e3
