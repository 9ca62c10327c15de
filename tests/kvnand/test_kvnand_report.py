"""The KVNAND report (reports/kvnand/) is what its generator writes from a fresh model run, and
the design-space sweep through the sweep runner gives the model's own cells."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, replace

import pytest

from memwall import paths
from memwall.families.kvnand import report as kvnand_report
from memwall.families.kvnand import report_figures as rf
from memwall.golden.kvnand import dse as kvnand_dse
from memwall.golden.kvnand import model as kvnand_model
from memwall.golden.kvnand.systems import BUFFER_READINGS, Params, kvnand_c, kvnand_d
from memwall.sweep import LocalProcesses

ROOT = paths.REPO
FOLDER = ROOT / "reports" / "kvnand"
PNG = b"\x89PNG\r\n\x1a\n"


def test_kvnand_report_is_current_and_what_its_generator_writes():
    stored = kvnand_report.load_results(FOLDER)
    # the model, re-run, with the discriminating figures and the energy readings
    assert stored == json.loads(json.dumps(kvnand_report.results()))
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


# --- the figures that discriminate and the energy readings (report_figures) -------------------

def _table_rows(text: str, first_cell: str) -> list[list[str]]:
    """The cells of every README table row whose first cell is ``first_cell``."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            rows.append(cells)
    return rows


@pytest.fixture(scope="module")
def stored():
    return kvnand_report.load_results(FOLDER)


def test_discriminating_verdicts_follow_the_figures(stored):
    """Each verdict is the figure against the paper's at the stated tolerance, in results.json
    and on both README tables (first and counterfactual), for ours and every counterfactual."""
    dis = stored["discriminating"]
    tol = dis["tolerance"]
    assert tol == rf.TOLERANCE
    readme = (FOLDER / "README.md").read_text()
    paper = kvnand_model.PAPER
    want_paper = {"c_over_d_128": paper["c_over_d_128"],
                  "d_over_base1_128": paper["geomean_vs_base1"][128] / paper["c_over_d_128"],
                  "hg_ablation_10k": paper["hg_ablation_10k"],
                  "crossover": rf.PAPER_DSE["70b_w4a16_d_beats_c_beyond"],
                  "llama31_8b_100k_tokens_per_s": paper["llama31_8b_100k_tokens_per_s"],
                  "same_ifc_dies_128": rf.PAPER_SAME_IFC}
    assert set(dis["rows"]) == set(rf.ROWS) == set(want_paper)
    for name in rf.ROWS:
        row = dis["rows"][name]
        assert row["paper"] == pytest.approx(want_paper[name])
        for run in ("ours", *rf.COUNTERFACTUALS):
            assert row[run] == rf._values(dis["runs"][run])[name]
            assert row["verdict"][run] == (abs(row[run] / row["paper"] - 1) <= tol), (name, run)
        label = rf._label(name, stored)
        first, gaps = _table_rows(readme, label)
        text = {True: "reproduced", False: "not reproduced"}
        # | figure | paper | where | ours | ours vs paper | verdict |
        assert first[3] == rf._fmt(name, row["ours"])
        assert first[4] == rf._rel(row["ours"], row["paper"])
        assert first[5] == text[row["verdict"]["ours"]], (name, first)
        # | figure | paper | ours | counterfactuals... | streamed vs paper | verdict streamed |
        assert gaps[2] == rf._fmt(name, row["ours"])
        assert gaps[3:3 + len(rf.COUNTERFACTUALS)] == [rf._fmt(name, row[k])
                                                       for k in rf.COUNTERFACTUALS]
        assert gaps[-1] == text[row["verdict"]["g2_streamed"]], (name, gaps)
    assert dis["read_floor_verdict"] == (
        abs(dis["read_floor"]["tokens_per_s"] / want_paper["llama31_8b_100k_tokens_per_s"] - 1)
        <= tol)
    assert f"verdict (±{100 * tol:.0f} %)" in readme


def test_discriminating_figures_are_computed():
    """The figures are the model's, and the counterfactuals change what they name."""
    p = kvnand_model.DEFAULT
    f = rf.figures(p)
    h = kvnand_model.headline(p, contexts=(128, 100_000))
    assert f["c_over_d_128"] == h["c_over_d_128"]
    assert f["d_over_base1_128"] == h["geomean_vs_base1"][128]["kvnand_d"]
    assert f["llama31_8b_100k_tokens_per_s"] == h["llama31_8b_100k_tokens_per_s"]
    hg = kvnand_model.ablations(p)["hg_min_at_10k"]["serial"]
    assert f["hg_ablation_10k"] == pytest.approx(hg)
    # The crossover is what it says: D ahead from it, C-8 still ahead a token before.
    cr = f["crossover"]
    assert rf._d_ahead(p, cr["ahead_from"]) and not rf._d_ahead(p, cr["ahead_from"] - 1)
    assert rf._d_ahead(p, cr["first"]) and not rf._d_ahead(p, cr["first"] - 1)
    assert all(rf._d_ahead(p, c) for c in range(cr["ahead_from"], cr["ahead_from"] + 200, 7))
    # Each counterfactual moves the figures it names (the chain removed: D faster at 128).
    s = rf.figures(replace(p, g2_schedule="streamed"))
    x = rf.figures(replace(p, t_exchange=0.0))
    assert s["c_over_d_128"] < x["c_over_d_128"] < f["c_over_d_128"]
    assert s["crossover"]["ahead_from"] < f["crossover"]["ahead_from"]
    assert s["llama31_8b_100k_tokens_per_s"] > f["llama31_8b_100k_tokens_per_s"]
    # The read floor bounds every schedule from above.
    assert rf.read_floor_tokens_per_s(p)["tokens_per_s"] >= s["llama31_8b_100k_tokens_per_s"]


def test_energy_readings_come_from_synthesis_json(stored, tmp_path):
    synth = json.loads((FOLDER / "synthesis.json").read_text())
    cfg = next(c for c in synth["configs"] if c["config"] == "kvnand_paper")
    units = {u["unit"]: u for u in cfg["units"]}
    plane_mw = sum(units[u][k] for u in ("pe", "kv buffer") for k in ("logic_mw", "memories_mw"))
    er = stored["energy_readings"]
    assert er["plane"]["plane_mw"] == pytest.approx(plane_mw)
    assert er["plane"]["timing_met"] == cfg["timing_met"] and er["plane"]["wns_ns"] == cfg["wns_ns"]
    # The paper's plane is the model's default logic power: Table I's PE + buffer and decoder.
    paper_w = (synth["paper"]["pe_buffer_mw"] + synth["paper"]["decoder_mw"]) / 1e3
    assert Params().logic_power_per_plane == pytest.approx(paper_w)
    rd = er["readings"]
    assert rd["paper_access"]["plane_w"] is None
    assert rd["logic_paper_power"]["plane_w"] == pytest.approx(paper_w)
    assert rd["logic_synthesised"]["plane_w"] == pytest.approx(
        (plane_mw + synth["paper"]["decoder_mw"]) / 1e3)
    # (a) is the model's default energy; (b) the model with the logic counted.
    for m in ("LLaMA2-7B", "LLaMA3.1-70B"):
        for c, v in stored["energy"][m].items():
            assert rd["paper_access"]["ratio"][m][c] == v["ratio"]
    b = kvnand_model.energy(Params(energy_scope="with_logic"))
    assert rd["logic_paper_power"]["geomean_gain_vs_base1"]["10000"] == pytest.approx(
        b["geomean_gain_vs_base1"][10_000])
    # More logic power, less gain: (a) > (b) > (c) while our plane draws more than the paper's.
    for c in ("10000", "30000"):
        gains = [rd[k]["geomean_gain_vs_base1"][c]
                 for k in ("paper_access", "logic_paper_power", "logic_synthesised")]
        assert gains[0] > gains[1] > gains[2]
    # The README's table carries the three readings.
    readme = (FOLDER / "README.md").read_text()
    for row in _table_rows(readme, "LLaMA2-7B"):
        if len(row) == 10 and row[1] == "10K":
            assert row[-3:] == [f"{rd[k]['ratio']['LLaMA2-7B']['10000']:.3f}"
                                for k in ("paper_access", "logic_paper_power",
                                          "logic_synthesised")]
            break
    else:
        pytest.fail("no LLaMA2-7B 10K energy row with three readings")
    assert f"Ours is {plane_mw / synth['paper']['pe_buffer_mw']:.1f}x the paper's" in readme
    # Read from the file, not typed: another file, another reading (c).
    synth["configs"] = [dict(c, units=[dict(u, memories_mw=0.0) for u in c["units"]])
                        for c in synth["configs"]]
    (tmp_path / "synthesis.json").write_text(json.dumps(synth))
    other = rf.energy_readings(path=tmp_path / "synthesis.json")
    assert other["plane"]["plane_mw"] == pytest.approx(er["plane"]["logic_mw"])
    assert other["readings"]["logic_synthesised"]["plane_w"] < rd["logic_synthesised"]["plane_w"]
    missing = rf.energy_readings(path=tmp_path / "absent.json")
    assert missing["readings"]["logic_synthesised"] is None
    assert not missing["plane"]["available"]
