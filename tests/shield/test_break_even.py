"""SHIELD break-even sweep (memwall.families.shield.break_even): its workspaces, its crossing
rule and the committed report (the sweep itself synthesises, behind make shield-break-even)."""

import json
import math

import pytest

from memwall import paths
from memwall.config import load_config
from memwall.families.shield import break_even as be

REPORT = paths.REPO / "reports" / "shield"


def test_the_2mib_workspace_is_shield_2mb():
    for cal in be.CALIBRATIONS:
        ref = load_config(cal)
        cfg = be.workspace(2048, 1000, 0.5, cal)
        assert cfg.hardware == ref.hardware
        assert (cfg.e_ref_cycle_nj, cfg.p_leak_mw) == pytest.approx(
            (ref.e_ref_cycle_nj, ref.p_leak_mw))


def test_workspaces_scale_by_capacity_and_keep_their_rows():
    small, big = be.workspace(128, 1000, 0.25, "shield_2mb"), \
        be.workspace(16384, 1000, 0.75, "shield_2mb")
    assert small.e_ref_cycle_nj == pytest.approx(load_config("shield_2mb").e_ref_cycle_nj / 16)
    assert big.p_leak_mw == pytest.approx(load_config("shield_2mb").p_leak_mw * 8)
    assert small.kv_words == small.total_words // 4 and big.kv_words == 3 * big.total_words // 4
    for cfg in (small, big):
        assert cfg.live_block_rows * cfg.row_words == be.BLOCK_WORDS
    assert big.row_words == 512                  # 16 MiB in 256-word rows: 32768 rows
    # 250 MHz: T_std = 11,250 cycles, fewer than 16 MiB's 16,384 rows
    assert be.workspace(16384, 250, 0.5, "shield_2mb") is None


def test_break_even_crossing():
    got = be.break_even_size([128, 256, 512], [-1.0, -0.5, 0.5])
    assert got["between_kib"] == [256, 512]
    assert got["kib"] == pytest.approx(math.sqrt(256 * 512))   # halfway in log(size)
    assert be.break_even_size([1, 2], [0.1, 0.2])["kib"] is None
    assert "every size" in be.break_even_size([1, 2], [0.1, 0.2])["why"]
    assert "any size" in be.break_even_size([1, 2], [-0.1, 0.0])["why"]
    assert "largest" in be.break_even_size([1, 2, 4], [-0.1, 0.1, -0.1])["why"]


def test_committed_report_is_what_its_renderer_writes():
    res = json.loads((REPORT / "break_even.json").read_text())
    assert (REPORT / "break_even.md").read_text() == be.render(res)
    sizes = {(c["size_kib"], c["clock_mhz"]) for c in res["controllers"]}
    assert sizes == {(s, c) for c in be.CLOCKS_MHZ for s in be.SIZES_KIB
                     if be.workspace(s, c, be.SYNTH_FRACTION, be.CALIBRATIONS[0])}
    for r in res["rows"]:
        assert r["net_mw"] == pytest.approx(r["saved_mw"] - r["controller_mw"])
