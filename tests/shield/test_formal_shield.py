"""SHIELD's formal properties (memwall/families/shield/properties.py): the refresh guarantee of
each refreshed bank and the stream protocol are proved unbounded at shield_small and at a tiny
config with a row shared by KV and QO words, and broken variants (a bound one cycle tighter
than the schedule, a controller refreshing at twice its interval) fail on the retention assert
with a counterexample trace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memwall.config import load_config
from memwall.families.shield import properties as shield_props
from memwall.families.shield.config import ShieldConfig
from memwall.families.shield.properties import retention_property
from memwall.formal import config_properties, run_property

#: 3 standard rows (row 1 holds KV words 4, 5 and QO words 0, 1), 2 relaxed rows;
#: T_std = 7 cycles (slots 0, 2, 4), T_rel = 9 (slots 0, 4).
TINY = ShieldConfig(name="shield_tiny", kv_words=6, qo_words=4, row_words=4, t_std_us=7,
                    t_rel_us=9, clock_mhz=1)


def _failed_asserts(result: dict) -> list[str]:
    """Source lines of the asserts the counterexample violates."""
    log = Path(result["log"]).read_text()
    lines = []
    for path, line in re.findall(r"failed assertion \S+ at (\S+):(\d+)", log):
        lines.append(Path(path).read_text().splitlines()[int(line) - 1].strip())
    return lines


def test_shield_small_declares_unbounded_proofs():
    props = {p.name: p for p in config_properties("shield_small")}
    assert set(props) == {"shield_controller_streams", "shield_refresh_standard",
                          "shield_refresh_relaxed"}
    assert all(p.mode == "prove" for p in props.values())


@pytest.mark.tool
@pytest.mark.parametrize("bank", ["standard", "relaxed"])
def test_shield_small_refresh_proved(tmp_path, bank):
    r = run_property(retention_property(load_config("shield_small"), bank), tmp_path / bank)
    assert r["status"] == "proved", r


@pytest.mark.tool
def test_shield_small_streams_proved(tmp_path):
    prop = shield_props.properties(load_config("shield_small"))[0]
    assert prop.name == "shield_controller_streams"
    assert run_property(prop, tmp_path / "streams")["status"] == "proved"


@pytest.mark.tool
def test_shared_row_refresh_proved(tmp_path):
    assert TINY.bank_rows == {"standard": 3, "relaxed": 2, "refreshless": 1}
    r = run_property(retention_property(TINY, "standard"), tmp_path / "tiny")
    assert r["status"] == "proved", r


@pytest.mark.tool
def test_bound_is_tight(tmp_path):
    """Claiming one cycle less than the interval fails: a row live throughout is T old at
    each refresh (the proof is not vacuous)."""
    r = run_property(retention_property(TINY, "standard", slack=-1, mode="bmc", depth=10),
                     tmp_path / "tight")
    assert r["status"] == "fail" and Path(r["trace"]).is_file(), r
    assert _failed_asserts(r) and all("# retention" in a for a in _failed_asserts(r))


@pytest.mark.tool
@pytest.mark.parametrize("bank", ["standard", "relaxed"])
def test_late_refresh_fails(tmp_path, bank):
    """A controller refreshing at twice its interval (its interval_scale hook) breaks the
    retention assert alone (no strengthening invariants), within a bounded run."""
    r = run_property(retention_property(TINY, bank, interval_scale=2, invariants=False,
                                        mode="bmc", depth=12), tmp_path / bank)
    assert r["status"] == "fail" and Path(r["trace"]).suffix == ".vcd", r
    assert _failed_asserts(r) and all("# retention" in a for a in _failed_asserts(r))
