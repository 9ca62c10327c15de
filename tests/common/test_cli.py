"""The ``memwall`` command line: ``gen`` and ``golden dplena``, exit codes and messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memwall import paths
from memwall.cli import main
from memwall.config import available_configs, load_config
from memwall.golden.dplena import sampling as golden

MASK_ID = 126336          # LLaDA's mask token, outside the vocabulary used here
B, L, V = 2, 8, 50        # L = block_len of dplena32
OUTPUT_DTYPES = {"x": np.int64, "x0": np.int64, "confidence": np.float32, "transfer": np.bool_}


def _workload(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, V, (B, L)).astype(np.int64)
    x[0, [1, 3, 4, 6]] = MASK_ID
    x[1, [0, 2, 5, 6, 7]] = MASK_ID
    return {"logits": rng.normal(0.0, 3.0, (B, L, V)).astype(np.float32), "x": x,
            "mask_id": np.array(MASK_ID, dtype=np.int64), "k": np.array([2, 3], dtype=np.int64)}


def _golden(tmp_path, arrays, *extra: str) -> tuple[int, Path]:
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **arrays)
    code = main(["golden", "dplena", "--config", "dplena32", "--inputs", str(inputs),
                 "--out", str(out), *extra])
    return code, out


# --- gen ---------------------------------------------------------------------------------------

def test_gen_writes_config(tmp_path, capsys):
    assert main(["gen", "dplena32", "--out", str(tmp_path)]) == 0
    out = tmp_path / "dplena32"
    modules = len(list((out / "rtl").glob("*.v")))
    assert modules > 0 and (out / "manifest.json").is_file()
    assert f"({modules} modules)" in capsys.readouterr().out


def test_gen_unknown_config(tmp_path, capsys):
    assert main(["gen", "dplena3000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ")
    assert "dplena3000" in err and "available configs" in err
    for name in available_configs():
        assert name in err
    assert list(tmp_path.iterdir()) == []


def test_gen_bad_yaml(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("unit: dplena\nvlen: 1000\n")
    out = tmp_path / "build"
    assert main(["gen", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "vlen must be a power of two in [32, 4096]" in err
    assert not out.exists()


def test_gen_unknown_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("unit: dplena\nlanes: 16\n")
    assert main(["gen", str(bad), "--out", str(tmp_path / "build")]) == 2
    err = capsys.readouterr().err
    assert "lanes" in err and "allowed keys" in err


def test_console_script_exit_status(tmp_path):
    script = Path(sys.executable).with_name("memwall")
    if not script.is_file():
        pytest.skip("memwall console script not installed next to this interpreter")
    run = subprocess.run([str(script), "gen", "dplena3000", "--out", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "available configs" in run.stderr and "Traceback" not in run.stderr


# --- golden dplena -----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bf16", "mxfp8", "mxfp6_e2m3", "mxfp4_e2m1"])
def test_golden_dplena(tmp_path, capsys, fmt):
    arrays = _workload()
    code, out = _golden(tmp_path, arrays, "--logits-format", fmt)
    assert code == 0, capsys.readouterr().err
    assert str(out) in capsys.readouterr().out
    with np.load(out) as f:
        got = {key: f[key] for key in f.files}
    assert set(got) == set(OUTPUT_DTYPES)
    for key, dtype in OUTPUT_DTYPES.items():
        assert got[key].dtype == dtype and got[key].shape == (B, L), key

    cfg = load_config("dplena32")
    want = golden.sample_step_hw(golden.prepare_logits(arrays["logits"], fmt), arrays["x"],
                                 MASK_ID, arrays["k"], cfg.vlen,
                                 sum_partials=cfg.stages.sum_partials)
    for key in OUTPUT_DTYPES:
        assert np.array_equal(got[key], want[key], equal_nan=key == "confidence"), key

    # What a sampling step must do, whatever the golden model says.
    masked = arrays["x"] == MASK_ID
    assert np.array_equal(got["transfer"].sum(axis=1), arrays["k"])
    assert not np.any(got["transfer"] & ~masked)      # enough masked positions in each row
    assert np.array_equal(got["x"], np.where(got["transfer"], got["x0"], arrays["x"]))
    assert np.all(got["x"][got["transfer"]] < V)
    assert np.all(np.isneginf(got["confidence"][~masked]))
    assert np.all((got["confidence"][masked] > 0) & (got["confidence"][masked] <= 1))


def test_golden_logits_format_is_used(tmp_path):
    results = {}
    for fmt in ("bf16", "mxfp8", None):
        run_dir = tmp_path / str(fmt)
        run_dir.mkdir()
        code, out = _golden(run_dir, _workload(), *(["--logits-format", fmt] if fmt else []))
        assert code == 0
        with np.load(out) as f:
            results[fmt] = f["confidence"]
    # MXFP8 has 3 mantissa bits against BF16's 7: the confidences must differ somewhere.
    assert not np.array_equal(results["bf16"], results["mxfp8"])
    # Without the flag, the config's logits_format (dplena32: mxfp8_e4m3) applies.
    assert load_config("dplena32").logits_format == "mxfp8_e4m3"
    assert np.array_equal(results[None], results["mxfp8"])


def test_golden_accepts_narrow_dtypes(tmp_path):
    arrays = _workload()
    narrow = {"logits": arrays["logits"].astype(np.float16), "x": arrays["x"].astype(np.int32),
              "mask_id": arrays["mask_id"].astype(np.int32), "k": arrays["k"].astype(np.int32)}
    code, out = _golden(tmp_path, narrow)
    assert code == 0
    with np.load(out) as f:
        assert f["x"].dtype == np.int64 and f["x"].shape == (B, L)


def _drop(key):
    return lambda a: {k: v for k, v in a.items() if k != key}


def _set(key, value):
    return lambda a: {**a, key: value(a) if callable(value) else value}


BAD_INPUTS = {
    "missing_k": (_drop("k"), "'k'"),
    "missing_logits": (_drop("logits"), "'logits'"),
    "x_wrong_shape": (_set("x", lambda a: np.zeros((B, L + 1), np.int64)), "'x'"),
    "x_wrong_ndim": (_set("x", lambda a: a["x"].reshape(-1)), "'x'"),
    "logits_float64": (_set("logits", lambda a: a["logits"].astype(np.float64)), "'logits'"),
    "x_float": (_set("x", lambda a: a["x"].astype(np.float32)), "'x'"),
    "k_gt_k_max": (_set("k", np.array([9, 1], np.int64)), "'k'"),
    "k_negative": (_set("k", np.array([-1, 1], np.int64)), "'k'"),
    "k_wrong_shape": (_set("k", np.array([1, 1, 1], np.int64)), "'k'"),
    "mask_id_vector": (_set("mask_id", np.array([MASK_ID], np.int64)), "'mask_id'"),
    "L_gt_block_len": (lambda a: {**a, "logits": np.zeros((B, L + 1, V), np.float32),
                                  "x": np.zeros((B, L + 1), np.int64)}, "'logits'"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_golden_bad_inputs(tmp_path, capsys, case):
    change, key = BAD_INPUTS[case]
    code, out = _golden(tmp_path, change(_workload()))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and key in err
    assert str(tmp_path / "in.npz") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz"]  # no output, no temp file


def test_golden_missing_inputs_file(tmp_path, capsys):
    out = tmp_path / "out.npz"
    code = main(["golden", "dplena", "--config", "dplena32", "--inputs",
                 str(tmp_path / "absent.npz"), "--out", str(out)])
    assert code == 2
    assert "absent.npz" in capsys.readouterr().err
    assert not out.exists()


def test_golden_unknown_config(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", **_workload())
    code = main(["golden", "dplena", "--config", "nope", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(tmp_path / "other.npz")])
    assert code == 2
    assert "available configs" in capsys.readouterr().err
    assert not (tmp_path / "other.npz").exists()


def test_golden_out_folder_missing(tmp_path, capsys):
    out = tmp_path / "no" / "out.npz"
    np.savez(tmp_path / "in.npz", **_workload())
    code = main(["golden", "dplena", "--config", "dplena32", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(out)])
    assert code == 2
    assert str(out) in capsys.readouterr().err


# --- model / run shield ------------------------------------------------------------------------

SHIELD_TRACE = "configs/traces/shield_small.yaml"


def test_model_shield_json(capsys):
    assert main(["model", "shield", "--config", "shield_small", "--trace", SHIELD_TRACE,
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("refresh_counts", "p_base", "p_shield", "eta"):
        assert key in result
    assert result["refresh_counts"]["refreshless"] == 0
    assert 0 < result["eta"] < 1


def test_golden_shield_writes_the_models_figures(tmp_path, capsys):
    out = tmp_path / "golden.json"
    assert main(["golden", "shield", "shield_small", "--trace", SHIELD_TRACE,
                 "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["model", "shield", "shield_small", "--trace", SHIELD_TRACE, "--json"]) == 0
    assert json.loads(out.read_text()) == json.loads(capsys.readouterr().out)


@pytest.mark.sim
def test_run_shield_matches_model(tmp_path, capsys):
    out, waves, build = tmp_path / "run.json", tmp_path / "w.fst", tmp_path / "sim"
    assert main(["run", "shield", "shield_small", "--trace", SHIELD_TRACE, "--out", str(out),
                 "--sim", "icarus", "--waves", str(waves), "--build", str(build)]) == 0
    rtl = json.loads(out.read_text())
    assert rtl["rtl"]["data_errors"] == 0
    # Refresh stalls lengthen the RTL run a little; power (counts / time) agrees within 1 %.
    assert abs(rtl["p_shield"] / rtl["model"]["p_shield"] - 1) < 0.01
    assert abs(rtl["eta"] - rtl["model"]["eta"]) < 0.01
    # run writes every key golden writes, measured, and what the simulation saw beside them.
    golden = tmp_path / "golden.json"
    assert main(["golden", "shield", "shield_small", "--trace", SHIELD_TRACE,
                 "--out", str(golden)]) == 0
    assert set(json.loads(golden.read_text())) | {"rtl", "model"} == set(rtl)
    # The waveform is kept where asked, the build is under --build, and the deleted run log
    # is never named.
    captured = capsys.readouterr()
    assert waves.is_file() and waves.read_bytes()[:1] != b"$"   # FST, not VCD text
    assert f"memwall: waveform {waves.resolve()}" in captured.out
    assert [p.name for p in build.iterdir() if p.name.startswith("shield_controller-")]
    assert "sim.log" not in captured.err


@pytest.mark.parametrize("argv, words", [
    (["model", "shield", "shield_small", "--config", "shield_2mb"], ["config given twice"]),
    (["model", "shield"], ["no config given", "memwall model shield <config>"]),
    (["synth", "--pdk", "asap7"], ["no config given"]),
])
def test_the_config_is_given_once(argv, words, capsys):
    assert main([*argv, "--trace", SHIELD_TRACE] if argv[0] == "model" else argv) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err


@pytest.mark.parametrize("command", [
    ["gen"], ["synth", "--pdk", "asap7"], ["prove"], ["mutate"],
    ["model", "shield", "--trace", "t.yaml"], ["golden", "pim", "--inputs", "a", "--out", "b"],
    ["run", "shield", "--trace", "t.yaml", "--out", "b"]])
def test_every_command_takes_the_config_positional_or_as_option(command):
    from memwall.cli import _settle_config, build_parser

    parser = build_parser()
    for argv in ([*command, "shield_small"], [*command, "--config", "shield_small"],
                 [*command, "shield_small", "--config", "shield_small"]):
        args = parser.parse_args(argv)
        _settle_config(args)
        assert args.config == "shield_small", argv


def test_gen_and_synth_share_the_default_build_root():
    from memwall.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["gen", "dplena32"]).out == \
        parser.parse_args(["synth", "dplena32", "--pdk", "asap7"]).build == str(paths.BUILD)


def test_gen_shows_its_modules_as_they_are_built(tmp_path, capsys):
    assert main(["gen", "shield_small", "--out", str(tmp_path), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "gen shield_small: elaborate: shield_controller" in err
    assert "writing their Verilog (one Yosys run)" in err


def test_run_refuses_a_waveform_name_of_the_other_format(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", "shield", "shield_small", "--trace", SHIELD_TRACE, "--out", str(out),
                 "--sim", "verilator", "--waves", str(tmp_path / "w.fst")]) == 2
    assert "verilator writes .vcd waveforms" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("trace, words", [
    ("steps: [{op: fly}]\n", ["op", "write, read"]),
    ("steps: [{op: read, class: qo, addr: 0, words: 1}]\n", ["reads qo words", "written"]),
    ("seed: 1\n", ["missing key(s) steps"]),
])
def test_shield_bad_trace(tmp_path, capsys, trace, words):
    path = tmp_path / "t.yaml"
    path.write_text(trace)
    out = tmp_path / "run.json"
    for argv in (["model", "shield", "--config", "shield_small", "--trace", str(path)],
                 ["run", "shield", "--config", "shield_small", "--trace", str(path),
                  "--out", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err
    assert not out.exists()


def test_model_shield_wrong_unit(capsys):
    assert main(["model", "shield", "--config", "dplena32", "--trace", SHIELD_TRACE]) == 2
    assert "is for unit 'dplena', not 'shield'" in capsys.readouterr().err


# --- model / run dplena --------------------------------------------------------------------------

def test_model_dplena_json(capsys):
    assert main(["model", "dplena", "--config", "dplena2048_hbm256", "--workload",
                 "16,32,126464,1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # The CLI prints the row reports/dplena/cycles.json records for this config and workload.
    report = json.loads((paths.REPORTS / "dplena" / "cycles.json").read_text())
    (row,) = [r for r in report["table_ii"] if r["variant"] == "fused, 256 B/cycle"]
    assert result["cycles"] == row["cycles"] and result["bound_cycles"] == row["bound_cycles"]
    assert result["bound_cycles"] == pytest.approx(260_832)
    assert result["cycles"] >= result["bound_cycles"]
    assert set(result["breakdown"]) == {"vector", "memory", "scalar", "control"}
    # T steps cost T times one step.
    assert main(["model", "dplena", "--config", "dplena2048_hbm256", "--workload",
                 "16,32,126464,3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cycles"] == 3 * result["cycles"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["--workload", "16,32,126464"], "4 positive integers B,L,V,T"),
    (["--workload", "16,0,100,1"], "L = 0 must be in [1, 32]"),
    (["--workload", "16,64,100,1"], "L = 64 must be in [1, 32]"),
    (["--workload", "16,32,126464,1", "--v-chunk", "1000"], "multiple of vlen"),
    ([], "required: --workload"),
    # dplena512's dequantiser decodes MXFP8 E4M3: a 4-bit stream is another core's.
    (["--workload", "1,32,1000,1", "--logits-format", "mxfp4_e2m1"],
     "this core's dequantiser decodes mxfp8_e4m3 (its config's), or takes bf16"),
    (["--workload", "1,32,1000,1", "--logits-format", "fp4"], "invalid choice: 'fp4'"),
])
def test_model_dplena_bad_input(argv, needle, capsys):
    assert main(["model", "dplena", "--config", "dplena512", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and needle in err


def test_model_dplena_per_format(tmp_path, capsys):
    """A core built for MXFP4 (its config's logits_format) streams MXFP4 or BF16: the CLI's
    cycles are the report's row, and the bound is the 4.25-bit logits' port time."""
    cfg = tmp_path / "dplena2048_mxfp4.yaml"
    cfg.write_text((paths.CONFIGS / "dplena2048.yaml").read_text()
                   .replace("logits_format: mxfp8_e4m3", "logits_format: mxfp4_e2m1"))
    assert main(["model", "dplena", "--config", str(cfg), "--workload", "16,32,126464,1",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["workload"]["logits_format"] == "mxfp4_e2m1"
    report = json.loads((paths.REPORTS / "dplena" / "cycles.json").read_text())
    (row,) = [r for r in report["formats"]
              if (r["vlen"], r["logits_format"]) == (2048, "mxfp4_e2m1")]
    assert (result["cycles"], result["bound_cycles"]) == (row["cycles"], row["bound_cycles"])
    # 16 x 32 rows of 126464 logits: 4 bits each plus a scale byte per 32, over 64 B a cycle.
    assert result["bound_cycles"] == 16 * 32 * (126464 // 2 + 126464 // 32) / 64
    assert main(["model", "dplena", "--config", str(cfg), "--workload", "16,32,126464,1",
                 "--logits-format", "bf16", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bound_cycles"] == 16 * 32 * 126464 * 2 / 64


def test_model_dplena_workload_too_big_for_sram(capsys):
    # Two buffers of 64 rows do not fit dplena512's 64 rows of Vector SRAM.
    assert main(["model", "dplena", "--config", "dplena512", "--workload", "1,32,100000,1",
                 "--v-chunk", str(64 * 512)]) == 2
    assert "Vector SRAM has 64" in capsys.readouterr().err


@pytest.mark.sim
def test_run_dplena_matches_golden_cli(tmp_path, capsys):
    arrays = _workload(seed=4)
    code, golden_out = _golden(tmp_path, arrays)
    assert code == 0
    rtl_out = tmp_path / "rtl.npz"
    assert main(["run", "dplena", "--config", "dplena32", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(rtl_out)]) == 0
    assert "cycles" in capsys.readouterr().out
    with np.load(golden_out) as want, np.load(rtl_out) as got:
        for key in OUTPUT_DTYPES:
            assert np.array_equal(got[key], want[key]), key
        assert int(got["cycles"]) > 0


def test_run_dplena_bad_inputs_write_nothing(tmp_path, capsys):
    arrays = _workload()
    arrays["k"] = np.array([2, 99], dtype=np.int64)       # above k_max
    inputs, out = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, **arrays)
    assert main(["run", "dplena", "--config", "dplena32", "--inputs", str(inputs),
                 "--out", str(out)]) == 2
    assert "k" in capsys.readouterr().err and not out.exists()
    assert main(["run", "dplena", "--config", "dplena32", "--out", str(out)]) == 2
    assert "required: --inputs" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "half"])
def test_synth_memory_idle_must_be_a_fraction(value, tmp_path, capsys):
    build = tmp_path / "build"
    assert main(["synth", "dplena32", "--pdk", "asap7", "--memory-idle", value,
                 "--build", str(build)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and "--memory-idle" in err and value in err
    assert not build.exists()
