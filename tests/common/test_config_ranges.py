"""Config ranges that generate what they promise (issue 10): finite, sane clocks; sizes bounded
by what ``memwall gen`` can do within its budget; the range corners that
``benchmarks/config_ranges.py`` generates are exactly the fields' maxima. Fast: nothing here
generates RTL (the corners are measured by the benchmark, reports/config_ranges.md)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
from pathlib import Path

import pytest

from memwall import paths
from memwall.config import ConfigError, available_configs, config_from_dict, load_config
from memwall.families.dplena.config import DplenaConfig
from memwall.families.kvnand.config import KvnandConfig
from memwall.families.pim.config import PimConfig
from memwall.families.rdxe.config import RdxeConfig
from memwall.families.shield.config import MAX_ROWS, ShieldConfig

TESTS = paths.TESTS
ROOT = paths.REPO


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module      # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


BENCH = _module("config_ranges_bench", ROOT / "benchmarks" / "config_ranges.py")
TINYACC = _module("tinyacc_family", TESTS / "plugin_family" / "tinyacc" / "__init__.py")
FAMILY_CONFIGS = {"dplena": DplenaConfig, "shield": ShieldConfig, "pim": PimConfig,
                  "rdxe": RdxeConfig, "kvnand": KvnandConfig}
CONFIG_CLASSES = {**FAMILY_CONFIGS, "tinyacc": TINYACC.TinyAccConfig}


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if "check" in f.metadata}


def _error(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw, "x.yaml", "x")
    return str(info.value)


# --- clocks --------------------------------------------------------------------------------------

BAD_CLOCKS = [0, 0.0, 1e-320, 5e-324, 0.001, math.inf, -math.inf, math.nan, -1, 1e9, 10000.5]


@pytest.mark.parametrize("unit", ["dplena", "shield"])
@pytest.mark.parametrize("value", BAD_CLOCKS, ids=repr)
def test_clock_refused(unit, value):
    message = _error({"unit": unit, "clock_mhz": value})
    assert "x.yaml: clock_mhz:" in message
    assert "clock_mhz must be a number in (0.001, 10000]" in message


@pytest.mark.parametrize("unit", sorted(CONFIG_CLASSES))
def test_every_clock_field_is_finite_and_sane(unit):
    clocks = {name: f for name, f in _fields(CONFIG_CLASSES[unit]).items()
              if name.endswith("_mhz")}
    assert clocks, f"{unit}: no clock field"
    for name, f in clocks.items():
        check = f.metadata["check"]
        # A per-PDK clock field (pdk_clock_mhz) holds the same clocks in a mapping.
        mapping = f.default is dataclasses.MISSING and isinstance(f.default_factory(), dict)
        wrap = (lambda v: {"sky130hd": v}) if mapping else (lambda v: v)
        for value in BAD_CLOCKS:
            assert check(wrap(value)) is not None, f"{unit}.{name} accepts {value!r}"
        for value in (0.0011, 1, 1000, 10000):
            assert check(wrap(value)) is None, f"{unit}.{name} refuses {value!r}"
            assert math.isfinite(1000.0 / value)


def test_clock_from_yaml(tmp_path):
    """The reported case: a clock written in YAML that used to give CLOCK_PERIOD_NS = inf."""
    for text in ("1.0e-320", ".inf", ".nan", "0"):
        path = tmp_path / "c.yaml"
        path.write_text(f"unit: dplena\nclock_mhz: {text}\n")
        with pytest.raises(ConfigError, match=r"clock_mhz must be a number in \(0\.001, 10000\]"):
            load_config(str(path))


def test_allowed_clocks_give_finite_periods():
    for clock in (0.0011, 10000):
        for unit in ("dplena", "shield"):
            raw = {"unit": unit, "clock_mhz": clock}
            if unit == "shield":   # a slow clock needs long intervals to exceed the rows
                raw.update(kv_words=64, qo_words=64, row_words=8)
                if clock < 1:
                    raw.update(t_std_us=1e6, t_rel_us=1e6)
            cfg = config_from_dict(raw, "x.yaml", "x")
            assert 0.1 <= cfg.clock_period_ns <= 1e6


# --- sizes just past the maxima ------------------------------------------------------------------

TOO_BIG = [
    ("dplena", {"block_len": 257}, "block_len must be an integer in [2, 256]"),
    ("dplena", {"k_max": 257}, "k_max must be an integer in [1, 256]"),
    ("dplena", {"vlen": 8192}, "vlen must be a power of two in [32, 4096]"),
    ("dplena", {"hbm_bytes_per_cycle": 2048}, "must be a power of two in [32, 1024]"),
    ("dplena", {"vector_sram_kib": 4096}, "vector_sram_kib must be a power of two in [1, 2048]"),
    ("dplena", {"vector_sram_kib": 65536}, "vector_sram_kib must be a power of two in [1, 2048]"),
    ("dplena", {"fp_sram_words": 1 << 17}, "fp_sram_words must be a power of two in [2, 65536]"),
    ("dplena", {"int_sram_words": 1 << 17}, "int_sram_words must be a power of two in [2, 65536]"),
    ("dplena", {"int_sram_words": 1 << 24}, "int_sram_words must be a power of two in [2, 65536]"),
    ("dplena", {"imem_words": 1 << 15}, "imem_words must be a power of two in [16, 16384]"),
    ("dplena", {"out_fifo_depth": 2048}, "out_fifo_depth must be a power of two in [2, 1024]"),
    ("kvnand", {"kv_stream_bits": 20}, "kv_stream_bits must be an integer in [1, 19]"),
    ("shield", {"kv_words": (1 << 29) + 1}, "kv_words must be an integer in [1, 536870912]"),
    ("shield", {"qo_words": (1 << 29) + 1}, "qo_words must be an integer in [0, 536870912]"),
    ("shield", {"row_words": (1 << 16) + 1}, "row_words must be an integer in [1, 65536]"),
    ("shield", {"t_std_us": 1.5e6}, "t_std_us must be a number in (0.001, 1000000.0]"),
    ("shield", {"t_rel_us": 1.5e6}, "t_rel_us must be a number in (0.001, 1000000.0]"),
    ("shield", {"qo_life_us": 1.5e6}, "qo_life_us must be a number in (0.001, 1000000.0]"),
    ("shield", {"t_std_us": 1e-320}, "t_std_us must be a number in (0.001, 1000000.0]"),
    ("shield", {"e_ref_cycle_nj": 5e-324}, "e_ref_cycle_nj must be a number in (1e-06, "),
    ("shield", {"p_leak_mw": 5e-324}, "p_leak_mw must be a number in (1e-09, "),
]


@pytest.mark.parametrize(("unit", "keys", "allowed"), TOO_BIG,
                         ids=[f"{u}-{next(iter(k))}={next(iter(k.values()))}"
                              for u, k, _ in TOO_BIG])
def test_size_past_the_maximum_refused(unit, keys, allowed):
    message = _error({"unit": unit, **keys})
    key = next(iter(keys))
    assert f"x.yaml: {key}: " in message and allowed in message


#: Cross-field bounds on what generates within the budget (or at all), each in range alone.
PAST_THE_BUDGET = [
    ("rdxe", {"wmem_words": 65536, "kv_words": 65536, "vacs": 64, "lanes": 64},
     "the tile group holds 4,295,131,136 memory bits; at most 536,870,912 (2**29)"),
    ("kvnand", {"kv_buffer_bytes": 1 << 17}, "32 open page slots of 4096 bytes; at most 16"),
    ("kvnand", {"n_fmac": 64, "vec_words": 1 << 14},
     "the plane's memories hold 16,908,288 bits; at most 16,777,216 (2**24)"),
    ("kvnand", {"kv_stream_bits": 19, "n_fmac": 64, "vec_words": 8192},
     "the plane's memories hold 16,875,520 bits; at most 16,777,216 (2**24)"),
    ("kvnand", {"page_bytes": 64, "kv_buffer_bytes": 4096, "kv_slice_bytes": 64,
                "kv_word_bytes": 16}, "64 open page slots of 64 bytes; at most 16"),
    ("pim", {"operation": "dot_product", "cols": 1024, "subarrays": 64},
     "take 196896 bits of the core's input ports; at most 65536"),
    ("pim", {"buffer_kib": 1e-300}, "the buffer must hold at least one 32-bit partial sum"),
    ("pim", {"operation": "dot_product", "cols": 1024, "subarrays": 21, "input_beats": 256},
     "are 5,505,024 register bits; at most 2,097,152 (2**21), as generation memory grows with "
     "them: at most 97 beats here"),
]


@pytest.mark.parametrize(("unit", "keys", "allowed"), PAST_THE_BUDGET,
                         ids=[f"{u}-{'-'.join(k)}" for u, k, _ in PAST_THE_BUDGET])
def test_cross_field_bound_refused(unit, keys, allowed):
    assert allowed in _error({"unit": unit, **keys})


def test_shield_rows_bounded():
    """Every word count is in range, but too many rows for the controller's liveness bits."""
    message = _error({"unit": "shield", "kv_words": 1 << 29, "qo_words": 1 << 29,
                      "row_words": 1 << 15})
    assert "row_words: 32768" in message and f"at most {MAX_ROWS} rows" in message
    assert "row_words must be at least 65536" in message
    cfg = config_from_dict({"unit": "shield", "kv_words": 1 << 29, "qo_words": 1 << 29,
                            "row_words": 1 << 16}, "x.yaml", "x")
    assert cfg.bank_rows["standard"] == MAX_ROWS


def test_shield_intervals_stay_narrow():
    """The longest intervals at the fastest clock: counters of at most 34 bits."""
    cfg = config_from_dict({"unit": "shield", "t_std_us": 1e6, "t_rel_us": 1e6,
                            "clock_mhz": 10000}, "x.yaml", "x")
    assert cfg.t_std_cycles == cfg.t_rel_cycles == 10 ** 10
    assert cfg.t_std_cycles.bit_length() == 34


def test_shield_power_ratio_finite_at_the_bounds():
    """x = P_leak / (E_ref_cycle / T_std), which the SHIELD report divides by, stays in
    (0, inf) at every corner of the float ranges."""
    for e in (1.0000001e-6, 1e9):
        for t in (0.0010001, 1e6):
            for p in (1.0000001e-9, 1e6):
                ratio = p / (e / t)
                assert 0 < ratio < math.inf and 0 < e / t < math.inf


# --- the benchmark's corners are the ranges' corners ---------------------------------------------

@pytest.mark.parametrize("unit", sorted(FAMILY_CONFIGS))
def test_corner_values_are_the_field_maxima(unit):
    fields = _fields(CONFIG_CLASSES[unit])
    corners = [c for c in BENCH.CORNERS if c.unit == unit]
    maxima = {}
    for corner in corners:
        for key, value in corner.keys.items():
            if isinstance(value, int) and key in fields:
                maxima[key] = max(maxima.get(key, value), value)
    # Size fields: integers whose check is a range ("... in [lo, hi]").
    sizes = [name for name, f in fields.items() if isinstance(f.default, int)
             and "in [" in (f.metadata["check"](f.default * 2 ** 40) or "")]
    missing = sorted(set(sizes) - set(maxima))
    assert not missing, f"{unit}: no benchmark corner reaches the maximum of {missing}"
    for key in sizes:
        check = fields[key].metadata["check"]
        assert check(maxima[key]) is None, f"{key}={maxima[key]} is not allowed"
        assert check(maxima[key] + 1) and check(2 * maxima[key]), \
            f"{key}={maxima[key]} is not the maximum of its range"


@pytest.mark.parametrize("corner", BENCH.CORNERS, ids=lambda c: c.label)
def test_corner_is_a_valid_config(corner):
    cfg = config_from_dict({"unit": corner.unit, **corner.keys}, "x.yaml", corner.name)
    for key, value in corner.keys.items():
        assert getattr(cfg, key) == value


def test_benchmark_budget_is_the_promised_one():
    assert (BENCH.BUDGET_MIB, BENCH.BUDGET_S) == (4096, 300)
    for cls in FAMILY_CONFIGS.values():
        assert "every allowed value generates within 4 GiB" in " ".join(cls.__doc__.split()) \
            .replace("Every", "every")


# --- the shipped configs still load --------------------------------------------------------------

@pytest.mark.parametrize("name", available_configs())
def test_shipped_config_loads(name):
    assert load_config(name).name == name


def test_test_family_config_loads():
    import yaml

    for path in (TESTS / "plugin_family" / "configs").glob("*.yaml"):
        raw = yaml.safe_load(path.read_text())
        raw.pop("unit")
        cfg = TINYACC.TinyAccConfig(name=path.stem, **raw)
        for name, f in _fields(TINYACC.TinyAccConfig).items():
            assert f.metadata["check"](getattr(cfg, name)) is None


def test_readme_states_the_benchmarks_budget():
    """README's "(4 GiB, 5 min)" is the budget benchmarks/config_ranges.py measures against."""
    readme = (ROOT / "README.md").read_text()
    budget = f"({BENCH.BUDGET_MIB // 1024} GiB, {BENCH.BUDGET_S // 60} min)"
    assert f"budget stated in each config class {budget}" in " ".join(readme.split())
