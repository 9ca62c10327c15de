"""Provenance of metrics.json rows: the RTL hash, the flow version, the commit, and what
``memwall report`` does with a row that is not of this checkout's design and flow."""

import csv
import hashlib
import json
import shutil

import pytest

from memwall import paths
from memwall.cli import main
from memwall.config import load_config
from memwall.flows import provenance as prov
from memwall.flows import sta
from memwall.flows.errors import StaleRowsError
from memwall.flows.report import write_report
from memwall.gen import generate
from memwall.inputs import InputError


@pytest.fixture(autouse=True)
def _no_opensta(request, monkeypatch):
    """OpenSTA's version is asked of the tool, which only `tool` tests may start."""
    if request.node.get_closest_marker("tool") is None:
        monkeypatch.setattr(prov, "opensta_version", lambda: "OpenSTA (not asked)")


def _gen_folder(root, files):
    rtl = root / "rtl"
    rtl.mkdir(parents=True)
    for name, data in files.items():
        (rtl / name).write_bytes(data)
    return root


def _current(config):
    return {key: hashlib.sha256(f"{key} {config}".encode()).hexdigest()
            for key in ("rtl_sha256", "config_sha256")}


def _metrics(config, pdk="asap7", vlen=512, record=True, **changes):
    """A dplena row by hand, of this checkout's design and flow but for ``changes`` to its
    provenance (``record=None``: a row written before the flow recorded provenance)."""
    row = {
        "config": config, "unit": "dplena", "pdk": pdk, "clock_mhz": 1000,
        "parameters": {"vlen": vlen}, "area_um2": 1400.0 * vlen + 700, "cells": 10 * vlen,
        "wns_ns": 0.05, "tns_ns": 0.0,
        "area_by_unit": {f"elementwise_unit_vlen{vlen}": {"area_um2": 1400.0 * vlen},
                         "scalar_fp_unit_lanes1": {"area_um2": 700.0}},
        "power_mw": {"internal": 0.4 * vlen, "switching": 0.3 * vlen, "leakage": 0.01,
                     "total": 0.7 * vlen + 0.01},
        "power_by_unit": {f"elementwise_unit_vlen{vlen}": {"power_mw": 0.5 * vlen}},
        "activity_source": "vcd", "command": f"make synth CONFIG={config} PDK={pdk}",
    }
    if record is not None:
        row["provenance"] = {"commit": "1234567" + "0" * 33, "dirty": False, **_current(config),
                             "flow_version": prov.flow_version(), **changes}
    return row


def _build(tmp_path, rows):
    for row in rows:
        out = tmp_path / "build" / row["config"] / "synth" / row["pdk"]
        out.mkdir(parents=True)
        (out / "metrics.json").write_text(json.dumps(row))
    return tmp_path / "build"


def _csv_rows(out):
    return {(r["config"], r["pdk"]): r for r in csv.DictReader((out / "area_power.csv").open())}


def test_rtl_hash_is_deterministic_and_sees_one_byte(tmp_path):
    files = {"top.v": b"module top; endmodule\n", "adder.v": b"module adder; endmodule\n"}
    a = prov.provenance(_gen_folder(tmp_path / "a", files))
    b = prov.provenance(_gen_folder(tmp_path / "b", dict(reversed(files.items()))))
    assert {k: v for k, v in a.items() if k != "generated_utc"} == \
        {k: v for k, v in b.items() if k != "generated_utc"}
    # sha256sum's listing of the files by name, hashed: `sha256sum -- * | sha256sum` in rtl/
    listing = "".join(f"{hashlib.sha256(files[n]).hexdigest()}  {n}\n" for n in sorted(files))
    assert a["rtl_sha256"] == hashlib.sha256(listing.encode()).hexdigest()

    (tmp_path / "b" / "rtl" / "adder.v").write_bytes(b"module adder; endmodulE\n")
    assert prov.rtl_sha256(tmp_path / "b") != a["rtl_sha256"]
    (tmp_path / "b" / "rtl" / "adder.v").rename(tmp_path / "b" / "rtl" / "adder2.v")
    (tmp_path / "b" / "rtl" / "adder2.v").write_bytes(files["adder.v"])
    assert prov.rtl_sha256(tmp_path / "b") != a["rtl_sha256"], "a file's name is hashed too"


def test_provenance_record(tmp_path):
    record = prov.provenance(_gen_folder(tmp_path, {"top.v": b"x"}), yosys_version="Yosys 0.58")
    assert record["flow_version"] == prov.flow_version()
    assert record["tools"]["yosys"] == "Yosys 0.58"
    assert record["tools"]["opensta"] == "OpenSTA (not asked)"
    assert record["config_sha256"] is None          # no manifest.json in this folder
    assert record["generated_utc"].endswith("Z")
    assert (record["commit"] is None) == (record["dirty"] is None)
    if record["commit"] is None:
        assert record["commit_note"]
    else:
        assert len(record["commit"]) == 40 and isinstance(record["dirty"], bool)


@pytest.mark.tool
def test_opensta_version(monkeypatch):
    if shutil.which(sta.STA_BINARY) is None:
        pytest.skip(f"no {sta.STA_BINARY} on PATH")
    assert prov.opensta_version()[:1].isdigit()
    monkeypatch.setattr(sta, "STA_BINARY", "/nonexistent/sta")
    assert prov.opensta_version() is None


def test_flow_version_is_the_flow_sources_but_the_report(tmp_path):
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "synth.py").write_text("A = 1\n")
    (flows / "report.py").write_text("B = 1\n")
    before = prov.flow_version(flows)
    (flows / "report.py").write_text("B = 2\n")
    assert prov.flow_version(flows) == before
    (flows / "synth.py").write_text("A = 2\n")
    assert prov.flow_version(flows) != before
    assert len(prov.flow_version()) == 64


def test_commit_without_git(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "REPO", tmp_path)          # not a checkout
    state = prov.git_state()
    assert state["commit"] is None and state["dirty"] is None and state["commit_note"]
    monkeypatch.setenv("PATH", str(tmp_path))              # no git at all
    assert prov.git_state() == {"commit": None, "dirty": None, "commit_note": "git not found"}


def test_current_rows_carry_their_provenance(tmp_path):
    build = _build(tmp_path, [_metrics("dplena512", vlen=512), _metrics("dplena1024", vlen=1024)])
    md = write_report(build, tmp_path / "reports", current=_current).read_text()
    rtl, flow = _current("dplena512")["rtl_sha256"][:10], prov.flow_version()[:10]
    assert f"| 1234567, RTL {rtl}, flow {flow} | `make synth CONFIG=dplena512 PDK=asap7` |" \
        in md
    assert "stale" not in md.split("## ")[0].split("| config |")[1]   # header aside, no stale
    assert "| 512 | 1000 | 0.717 |" in md                           # in Table IV
    row = _csv_rows(tmp_path / "reports")["dplena512", "asap7"]
    assert (row["provenance"], row["commit"], row["rtl_sha256"], row["flow_version"]) == \
        ("current", "1234567" + "0" * 33, _current("dplena512")["rtl_sha256"],
         prov.flow_version())


@pytest.mark.parametrize("change, why", [
    ({"rtl_sha256": "ab" * 32}, "RTL abababab"),
    ({"flow_version": "cd" * 32}, "flow cdcdcdcdcd"),
    ({"config_sha256": "ef" * 32}, "the config has changed"),
])
def test_a_stale_row_is_refused(tmp_path, change, why):
    build = _build(tmp_path, [_metrics("dplena512", vlen=512),
                              _metrics("dplena1024", vlen=1024, **change)])
    with pytest.raises(StaleRowsError) as exc:
        write_report(build, tmp_path / "reports", current=_current)
    message = str(exc.value)
    assert isinstance(exc.value, InputError)            # memwall: exit status 2
    assert "1 of 2 rows" in message and f"dplena1024/asap7 ({why}" in message
    assert "`make synth CONFIG=dplena1024 PDK=asap7`" in message and "--allow-stale" in message
    assert "dplena512/" not in message
    assert not (tmp_path / "reports").exists(), "nothing written"


def test_a_stale_row_is_marked_and_left_out_with_allow_stale(tmp_path):
    build = _build(tmp_path, [_metrics("dplena512", vlen=512),
                              _metrics("dplena1024", vlen=1024, rtl_sha256="ab" * 32)])
    out = tmp_path / "reports"
    md = write_report(build, out, current=_current, allow_stale=True).read_text()
    assert "| **stale**: 1234567, RTL abababab" in md
    assert "| 512 | 1000 | 0.717 |" in md and "| 1024 | 1000 |" not in md   # not in Table IV
    left_out = md.split("## Rows left out of every comparison and fit")[1].split("\n## ")[0]
    assert "| dplena1024 | asap7 | stale | RTL abababab" in left_out
    assert "dplena512" not in left_out
    rows = _csv_rows(out)
    assert rows["dplena1024", "asap7"]["provenance"] == "stale"
    assert rows["dplena1024", "asap7"]["stale_reasons"].startswith("RTL abababab")
    assert rows["dplena512", "asap7"]["provenance"] == "current"


def test_one_config_from_two_rtls_is_never_side_by_side(tmp_path):
    """One config on two PDKs, one of them synthesised from an older RTL: refused; with
    --allow-stale only the row of the checkout's RTL is compared."""
    build = _build(tmp_path, [_metrics("dplena512", "asap7"),
                              _metrics("dplena512", "sky130hd", rtl_sha256="ab" * 32)])
    with pytest.raises(StaleRowsError, match=r"dplena512/sky130hd \(RTL abababab"):
        write_report(build, tmp_path / "reports", current=_current)
    md = write_report(build, tmp_path / "reports", current=_current, allow_stale=True).read_text()
    assert "| dplena512 | sky130hd | stale |" in md


def test_a_row_without_provenance_is_unknown(tmp_path):
    build = _build(tmp_path, [_metrics("dplena512", vlen=512),
                              _metrics("dplena1024", vlen=1024, record=None)])
    asked = []

    def current(config):
        asked.append(config)
        return _current(config)

    with pytest.raises(StaleRowsError, match=r"dplena1024/asap7 \(unknown provenance"):
        write_report(build, tmp_path / "reports", current=current)
    out = tmp_path / "reports"
    md = write_report(build, out, current=current, allow_stale=True).read_text()
    assert "| unknown provenance | `make synth CONFIG=dplena1024 PDK=asap7` |" in md
    assert "| dplena1024 | asap7 | unknown provenance |" in md
    assert "| 1024 | 1000 |" not in md
    assert _csv_rows(out)["dplena1024", "asap7"]["provenance"] == "unknown provenance"
    assert set(asked) == {"dplena512"}, "a row without a record needs no generation"


def test_cli_refuses_with_status_2(tmp_path, capsys):
    build = _build(tmp_path, [_metrics("dplena512", vlen=512, record=None)])
    out = tmp_path / "reports"
    assert main(["report", "--build", str(build), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "memwall: error:" in err and "dplena512/asap7 (unknown provenance" in err
    assert not (out / "area_power.md").exists()
    assert main(["report", "--build", str(build), "--out", str(out), "--allow-stale"]) == 0
    assert "unknown provenance" in (out / "area_power.md").read_text()


def test_the_checkouts_design_is_generated_aside(tmp_path):
    """current_design generates the real config in a temporary folder: the hash the flow
    records for the same config, and the build folder is left alone."""
    gen_dir = generate(load_config("shield_small"), tmp_path / "build")
    record = prov.provenance(gen_dir)
    before = sorted(p.name for p in (tmp_path / "build").iterdir())
    now = prov.current_design("shield_small")
    assert now == {"rtl_sha256": record["rtl_sha256"], "config_sha256": record["config_sha256"]}
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == before
    flow = prov.flow_version()
    assert prov.stale_reasons(record, now, flow) == []
    gone = prov.current_design("no_such_config")
    assert gone["rtl_sha256"] is None and "unknown config" in gone["error"]
    assert prov.stale_reasons(record, gone, flow)[0].startswith("the checkout cannot generate")
