"""Named configs: loading, the paper's values, and error messages that name file, key and rule."""

from __future__ import annotations

import dataclasses

import pytest

from memwall.config import CONFIG_DIR, ConfigError, available_configs, load_config, unit_names

PAPER_VLENS = {"dplena512": 512, "dplena1024": 1024, "dplena2048": 2048}
DPLENA_KEYS = ["vlen", "block_len", "k_max", "clock_mhz", "compute_format", "logits_format",
               "int_width"]


def _write(tmp_path, text: str, name: str = "bad.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _error(path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    return str(info.value)


# --- the shipped configs ---------------------------------------------------------------------

def test_shipped_configs_are_listed():
    names = available_configs()
    assert set(PAPER_VLENS) | {"dplena32", "dplena64"} <= set(names)
    assert names == sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))


@pytest.mark.parametrize("name", available_configs())
def test_every_named_config_loads(name):
    cfg = load_config(name)
    assert cfg.name == name
    assert cfg.unit_name in unit_names()
    if cfg.unit_name == "dplena":
        assert cfg.k_max <= cfg.block_len


@pytest.mark.parametrize(("name", "vlen"), sorted(PAPER_VLENS.items()))
def test_paper_configs(name, vlen):
    cfg = load_config(name)
    assert cfg.unit_name == "dplena"
    assert cfg.vlen == vlen
    assert cfg.compute_format == "bf16"
    assert cfg.logits_format == "mxfp8_e4m3"
    assert cfg.clock_mhz == 1000
    assert cfg.clock_period_ns == pytest.approx(1.0)
    assert cfg.lane_index_width == vlen.bit_length() - 1


def test_config_is_frozen():
    cfg = load_config("dplena32")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.vlen = 32
    assert load_config("dplena32").vlen == 32
    assert hash(cfg) == hash(load_config("dplena32"))  # usable as a cache key


# --- configs given as a path -------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_config_path(tmp_path, suffix):
    path = _write(tmp_path, "unit: dplena\nvlen: 32\nblock_len: 16\nk_max: 4\nclock_mhz: 800\n"
                  "hbm_bytes_per_cycle: 32\n", "my_npu" + suffix)
    cfg = load_config(str(path))
    assert cfg.name == "my_npu"
    assert (cfg.vlen, cfg.block_len, cfg.k_max, cfg.clock_mhz) == (32, 16, 4, 800)
    assert cfg.clock_period_ns == pytest.approx(1.25)
    # Keys left out take the unit's defaults.
    assert (cfg.compute_format, cfg.logits_format, cfg.int_width) == ("bf16", "mxfp8_e4m3", 32)


def test_config_path_missing(tmp_path):
    path = tmp_path / "nowhere.yaml"
    message = _error(path)
    assert str(path) in message and "does not exist" in message


def test_config_dir_argument(tmp_path):
    _write(tmp_path, "unit: dplena\nvlen: 32\nblock_len: 4\nk_max: 2\nhbm_bytes_per_cycle: 32\n",
           "tiny.yaml")
    assert available_configs(tmp_path) == ["tiny"]
    assert load_config("tiny", config_dir=tmp_path).vlen == 32
    with pytest.raises(ConfigError, match="available configs: tiny"):
        load_config("dplena32", config_dir=tmp_path)


def test_unknown_config_name_lists_available():
    with pytest.raises(ConfigError) as info:
        load_config("dplena3000")
    message = str(info.value)
    assert "'dplena3000'" in message and "available configs" in message
    for name in available_configs():
        assert name in message


# --- bad files: the message names the file, the key and what is allowed -------------------------

BAD = {
    "vlen_not_pow2": ("unit: dplena\nvlen: 1000\n",
                      ["vlen: 1000", "vlen must be a power of two in [32, 4096]"]),
    "vlen_too_big": ("unit: dplena\nvlen: 8192\n", ["vlen must be a power of two in [32, 4096]"]),
    "vlen_string": ("unit: dplena\nvlen: '512'\n",
                    ["vlen: '512'", "vlen must be a power of two in [32, 4096]"]),
    "vlen_bool": ("unit: dplena\nvlen: true\n", ["vlen must be a power of two in [32, 4096]"]),
    "vlen_float": ("unit: dplena\nvlen: 512.0\n", ["vlen must be a power of two in [32, 4096]"]),
    "vlen_empty": ("unit: dplena\nvlen:\n", ["vlen must be a power of two"]),
    "clock_negative": ("unit: dplena\nclock_mhz: -1\n",
                       ["clock_mhz: -1", "clock_mhz must be a number in (0.001, 10000]"]),
    "clock_zero": ("unit: dplena\nclock_mhz: 0\n",
                   ["clock_mhz must be a number in (0.001, 10000]"]),
    "clock_nan": ("unit: dplena\nclock_mhz: .nan\n", ["clock_mhz must be a number"]),
    "clock_string": ("unit: dplena\nclock_mhz: 1GHz\n", ["clock_mhz must be a number"]),
    "block_len_range": ("unit: dplena\nblock_len: 1\nk_max: 1\n",
                        ["block_len must be an integer in [2, 256]"]),
    "format": ("unit: dplena\nlogits_format: fp4\n",
               ["logits_format must be one of 'mxfp8_e4m3', 'mxfp8_e5m2', 'mxfp6_e3m2', "
                "'mxfp6_e2m3', 'mxfp4_e2m1', 'bf16'"]),
    # A 4-bit write is twice the port's bytes in lanes: more than a 32-lane row.
    "format_too_wide": ("unit: dplena\nvlen: 32\nblock_len: 8\nk_max: 8\n"
                        "hbm_bytes_per_cycle: 32\nlogits_format: mxfp4_e2m1\n",
                        ["a mxfp4_e2m1 write of 64 elements", "at most vlen (32)",
                         "hbm_bytes_per_cycle at most 16"]),
    "k_max_gt_block_len": ("unit: dplena\nblock_len: 8\nk_max: 9\n",
                           ["k_max: 9", "k_max must be at most block_len (8)"]),
    "unknown_key": ("unit: dplena\nvlen: 16\nvlen_max: 32\n",
                    ["unknown key(s) vlen_max", "allowed keys: unit, " + ", ".join(DPLENA_KEYS)]),
    "missing_unit": ("vlen: 16\n", ["'unit'", "allowed units: dplena"]),
    "unknown_unit": ("unit: gpu\nvlen: 16\n", ["'unit'", "'gpu'", "allowed units: dplena"]),
    "yaml_syntax": ("unit: dplena\nvlen: [16\n", ["not valid YAML", "line 2"]),
    "not_a_mapping": ("- unit\n- dplena\n", ["expected a mapping", "list"]),
    "empty_file": ("", ["expected a mapping"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_config_message(tmp_path, case):
    text, expected = BAD[case]
    path = _write(tmp_path, text)
    message = _error(path)
    assert message.count(str(path)) == 1   # the file, named once
    for phrase in expected:
        assert phrase in message


def test_every_problem_of_a_kind_is_named(tmp_path):
    message = _error(_write(tmp_path, "unit: dplena\nspeed: 1\nlanes: 16\n"))
    assert "unknown key(s) lanes, speed" in message


def test_named_config_error_names_its_file(tmp_path):
    _write(tmp_path, "unit: dplena\nvlen: 12\n", "odd.yaml")
    with pytest.raises(ConfigError) as info:
        load_config("odd", config_dir=tmp_path)
    assert str(tmp_path / "odd.yaml") in str(info.value)
    assert "vlen must be a power of two" in str(info.value)


# --- malformed YAML and keys ------------------------------------------------------------

def test_duplicate_key_rejected(tmp_path):
    message = _error(_write(tmp_path, "unit: dplena\nvlen: 16\nvlen: 2048\n"))
    assert "vlen" in message


def test_name_key_rejected(tmp_path):
    # The CONFIG name is the file name; a `name:` inside the file would contradict it.
    message = _error(_write(tmp_path, "unit: dplena\nname: other\n", "mine.yaml"))
    assert "unknown key(s) name" in message


def test_int_width_float_rejected(tmp_path):
    message = _error(_write(tmp_path, "unit: dplena\nint_width: 32.0\n"))
    assert "int_width" in message


@pytest.mark.parametrize("text", ["unit: dplena\n1: 2\n", "unit: dplena\n1: 2\nspeed: 3\n",
                                  "unit: [dplena]\n"], ids=["int_key", "mixed_keys", "unit_list"])
def test_odd_yaml_types_give_config_error(tmp_path, text):
    _error(_write(tmp_path, text))


# --- SHIELD ------------------------------------------------------------------------------

def test_shield_small_derived_values():
    cfg = load_config("shield_small")
    assert (cfg.hi_bits, cfg.lo_bits) == (9, 7)                   # BF16: sign+exp | mantissa
    assert cfg.bank_rows == {"standard": 16, "relaxed": 8, "refreshless": 8}
    assert (cfg.t_std_cycles, cfg.t_rel_cycles) == (45, 1216)      # 1 MHz clock


@pytest.mark.parametrize("fmt, split", [("fp16", (6, 10)), ("fp8_e4m3", (5, 3)),
                                        ("fp8_e5m2", (6, 2))])
def test_shield_formats(tmp_path, fmt, split):
    path = tmp_path / "s.yaml"
    path.write_text(f"unit: shield\nformat: {fmt}\nkv_words: 64\nqo_words: 64\nrow_words: 8\n"
                    "clock_mhz: 1\n")
    cfg = load_config(str(path))
    assert (cfg.hi_bits, cfg.lo_bits) == split


@pytest.mark.parametrize("text, words", [
    ("clock_mhz: 1\nt_rel_us: 10\n", ["t_rel_us", "at least t_std_us"]),
    ("clock_mhz: 0.1\n", ["t_std_us", "more than the 16 rows"]),
    ("clock_mhz: 1\nretention: {standard: [[0, 0]]}\n",
     ["retention", "standard, relaxed, refreshless"]),
    ("clock_mhz: 1\nformat: bf8\n", ["format", "'bf16', 'fp16'"]),
])
def test_shield_bad_values(tmp_path, text, words):
    path = tmp_path / "s.yaml"
    path.write_text("unit: shield\nkv_words: 64\nqo_words: 64\nrow_words: 8\n" + text)
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    for word in words:
        assert word in str(info.value), (word, str(info.value))
