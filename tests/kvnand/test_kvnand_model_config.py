"""The KVNAND design-space model reads its config: ``Params.from_config`` (kvnand_paper gives
Table I's defaults, kvnand_small a 256-byte page as one shortened BCH codeword), configs that
differ answer differently where they should, the system and buffer-size grammars."""

from __future__ import annotations

import dataclasses

import pytest

from memwall.config import ConfigError, config_from_dict, load_config
from memwall.families.kvnand.commands import model_result
from memwall.golden.kvnand import model as km
from memwall.golden.kvnand.pages import stream_pages, stream_time
from memwall.golden.kvnand.systems import (
    BUFFER_READINGS,
    Params,
    base1,
    base2,
    buffer_kib_readings,
    buffer_readings,
    kvnand_c,
    kvnand_d,
    parse_system,
)


def test_paper_config_gives_table_i_defaults():
    assert Params.from_config(load_config("kvnand_paper")) == Params()
    assert buffer_readings(Params()) == BUFFER_READINGS


def test_small_config_params_and_its_ecc_geometry():
    """256-byte pages: each page one BCH(9088,8192) codeword shortened to 2048 data bits, the
    same 896 parity bits (112 spare bytes); a plane keeps Table I's 4.1484 Gib."""
    cfg = load_config("kvnand_small")
    p = Params.from_config(cfg)
    assert (p.page_bytes, p.fmacs_per_plane, p.pe_max_heads, p.scale_group) == (256, 4, 4, 16)
    assert (p.sector_bytes, p.sectors_per_page, p.codeword_bits, p.spare_bytes) == (
        256, 1, 2048 + 896, 112)
    assert p.t_ecc == (2048 + 896) / 14.6e9
    assert p.plane_bytes == Params().plane_bytes
    assert buffer_readings(p)["buffer_limited"] == {"c_open_streams": 2,
                                                    "d_open_streams": 5 * 2 ** 20 // 256}
    # A flushed stream programs the whole (one-sector) page: a token's 16-byte slice a page.
    assert km.flushed_pages(100, 16, p) == 100
    # Whole codewords at and above 1 KiB; a page between is refused.
    assert Params(page_bytes=1024, spare_bytes=112).t_ecc == 9088 / 14.6e9
    with pytest.raises(ValueError, match="page_bytes=1536"):
        Params(page_bytes=1536)


def test_config_fields_reach_the_params():
    raw = {"unit": "kvnand", "t_read_us": 8, "t_prog_us": 150, "channels": 4,
           "planes_per_die": 16, "blocks_per_plane": 100, "pages_per_block": 512,
           "ecc_gbps": 7.3, "onfi_gbps": 2.4, "soc_kv_buffer_kib": 1024, "clock_mhz": 800,
           "mul_stages": 2, "n_fmac": 32, "max_heads": 16, "max_d": 128}
    p = Params.from_config(config_from_dict(raw, "x.yaml", "x"))
    assert (p.t_read, p.t_prog, p.channels, p.planes_per_die) == (8e-6, 150e-6, 4, 16)
    assert (p.blocks_per_plane, p.pages_per_block, p.ecc_rate, p.onfi_bw) == (
        100, 512, 7.3e9, 2.4e9)
    assert (p.d_kv_buffer, p.f_mac, p.pe_mul_stages, p.fmacs_per_plane, p.pe_max_heads) == (
        1024 * 1024, 800e6, 2, 32, 16)
    assert base1(p).g1 == 4 and base2(p).g2 == 4


@pytest.mark.parametrize("key, value, allowed", [
    ("t_read_us", 0, "a number in (0, 10000]"), ("t_prog_us", float("nan"), "a number"),
    ("channels", 0, "a whole number from 1 to 64"), ("channels", 8.0, "a whole number"),
    ("planes_per_die", True, "a whole number"), ("ecc_gbps", -1, "a number"),
    ("soc_kv_buffer_kib", -1, "a whole number from 0"), ("onfi_gbps", "fast", "a number")])
def test_bad_model_fields_are_refused(key, value, allowed):
    with pytest.raises(ConfigError, match=key) as info:
        config_from_dict({"unit": "kvnand", key: value}, "x.yaml", "x")
    assert allowed in str(info.value)


def _w8a8_paper():
    return dataclasses.replace(load_config("kvnand_paper"), name="kvnand_w8a8", fmt="w8a8",
                               group=128)


def test_configs_that_differ_answer_differently():
    paper, small, w8 = load_config("kvnand_paper"), load_config("kvnand_small"), _w8a8_paper()
    r_paper, r_small, r_w8 = (model_result(c) for c in (paper, small, w8))
    # The paper's study (formats fixed by the paper) moves with the hardware, not the format.
    assert r_small["headline"] != r_paper["headline"]
    assert r_small["dse"] != r_paper["dse"]
    assert r_w8["headline"] == r_paper["headline"] and r_w8["dse"] == r_paper["dse"]
    # The figures in the config's own format move with it.
    assert r_w8["config"] == {"name": "kvnand_w8a8", "format": "w8a8"}
    assert r_w8["geomean_speedup_vs_base1"] != r_paper["geomean_speedup_vs_base1"]
    assert r_w8["d_over_base2_100k"] != r_paper["d_over_base2_100k"]
    assert r_paper["geomean_speedup_vs_base1"] == km.geomean_speedup_vs_base1()
    # One point: the small plane's 256-byte pages read 16x as many pages in the same tR.
    s = kvnand_d(8, 8)
    ps, pp = Params.from_config(small), Params.from_config(paper)
    a = km.decode_step(dataclasses.replace(s, params=pp), "LLaMA3.1-8B", 10_000, "w4a16")
    b = km.decode_step(dataclasses.replace(s, params=ps), "LLaMA3.1-8B", 10_000, "w4a16")
    assert b["latency"]["ffn"] > 10 * a["latency"]["ffn"]


def test_t_read_moves_a_read_bound_gemv():
    slow = Params.from_config(dataclasses.replace(load_config("kvnand_paper"), t_read_us=8.0))
    a = km.decode_step(kvnand_c(16), "LLaMA2-7B", 128)["latency"]["ffn"]
    b = km.decode_step(kvnand_c(16, slow), "LLaMA2-7B", 128)["latency"]["ffn"]
    assert 1.9 < b / a < 2.0      # read-bound: each page's tR doubles, the drain does not


def test_attend_w8a8_is_compute_bound():
    """The ATTEND fix: a W8A8 Attend page of a GQA head group (G = 8) costs 8x a GEMV page's
    MACs on 16 FMACs, 5.1 us > tR; the model's attention read time is the RTL's."""
    p = Params()
    assert p.t_mac("w8a8", "attend", 8) > p.t_read > p.t_mac("w8a8", "gemv")
    r = km.decode_step(kvnand_d(5, 3), "LLaMA3.1-70B", 100_000, "w8a8")
    pages = stream_pages(p, 100_000, 130, 2 * 80 * 8, None)
    pp = -(-pages // (3 * 32))
    per_hg = (stream_time(p, pp, p.t_mac("w8a8", "logit", 8))
              + stream_time(p, pp, p.t_mac("w8a8", "attend", 8), p.t_emit("w8a8", 8, 128)))
    assert r["attention_read_s"] == pytest.approx(80 * 8 * per_hg)


@pytest.mark.parametrize("spec, name", [
    ("base1", "Base-1"), ("base2", "Base-2"), ("kvnand_c:16", "KVNAND-C-16"),
    ("kvnand_d:4+12", "KVNAND-D-(4+12)"), (" kvnand_d:10+6 ", "KVNAND-D-(10+6)")])
def test_system_grammar(spec, name):
    s = parse_system(spec)
    assert s.name == name and parse_system(s.spec) == s


@pytest.mark.parametrize("spec", ["base3", "base1:8", "kvnand_c", "kvnand_c:0", "kvnand_c:4+4",
                                  "kvnand_d:4", "kvnand_d:4+0", "kvnand_d:+4", "kvnand_c:2000",
                                  "kvnand_c:١٦", ""])
def test_bad_system_names_the_spec(spec):
    with pytest.raises(ValueError, match="allowed base1, base2, kvnand_c:X") as info:
        parse_system(spec)
    assert repr(spec) in str(info.value)


def test_buffer_sizes_in_kib():
    got = buffer_kib_readings(["8/5120", "all/all", "0/64"])
    assert got["8/5120"] == BUFFER_READINGS["buffer_limited"]
    assert got["all/all"] == BUFFER_READINGS["paper_sufficient"]
    assert got["0/64"] == {"c_open_streams": 0, "d_open_streams": 16}
    small = Params.from_config(load_config("kvnand_small"))
    assert buffer_kib_readings(["1/1"], small)["1/1"] == {"c_open_streams": 4,
                                                          "d_open_streams": 4}
    for bad in ("8", "8/", "a/b", "-1/4", "8/5120/1"):
        with pytest.raises(ValueError, match="C/D"):
            buffer_kib_readings([bad])
