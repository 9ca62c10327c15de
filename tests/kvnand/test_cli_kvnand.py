"""``memwall golden|run|model kvnand``: BCH codewords and the plane PE on users' data through the
golden models and the generated RTL (equal, bit for bit), the design-space model's JSON, and
bad inputs (exit 2, a message naming what is wrong, no output)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from memwall.cli import main
from memwall.config import load_config
from memwall.golden.kvnand import bch, pe

SMALL = "kvnand_small"


def _run(tmp_path, verb, op, inputs, *extra, config=SMALL):
    out = tmp_path / f"{verb}-{op}.npz"
    code = main([verb, "kvnand", "--config", config, "--op", op, "--inputs", str(inputs),
                 "--out", str(out), *extra])
    return code, out


def _messages(path, n=2, seed=1):
    rng = np.random.default_rng(seed)
    msg = rng.integers(0, 2, (n, bch.K)).astype(np.uint8)
    msg[1:] = 0
    msg[1, 17] = 1
    np.savez(path, message=msg)
    return msg


def _bf16_page(rng, elements, page_bytes):
    values = rng.standard_normal(elements).astype(ml_dtypes.bfloat16)
    return values, pe.pack_page(values.view(np.uint16), "bf16", page_bytes)


def test_golden_bch_is_message_then_parity(tmp_path):
    msg = _messages(tmp_path / "in.npz")
    code, out = _run(tmp_path, "golden", "bch", tmp_path / "in.npz")
    assert code == 0
    with np.load(out) as got:
        cw = got["codeword"]
    assert cw.shape == (2, bch.N) and np.array_equal(cw[:, :bch.K], msg)
    assert not bch.syndromes(cw).any()


@pytest.mark.sim
def test_run_bch_on_verilator_equals_golden(tmp_path):
    """The family's Verilator run: ``memwall run kvnand --op bch`` writes golden's codewords."""
    _messages(tmp_path / "in.npz")
    assert _run(tmp_path, "golden", "bch", tmp_path / "in.npz")[0] == 0
    code, out = _run(tmp_path, "run", "bch", tmp_path / "in.npz", "--sim", "verilator")
    assert code == 0
    with np.load(tmp_path / "golden-bch.npz") as want, np.load(out) as got:
        assert np.array_equal(got["codeword"], want["codeword"])
        cfg = load_config(SMALL)
        assert int(got["cycles"]) >= 2 * bch.N // cfg.bch_bits


@pytest.mark.sim
def test_run_pe_equals_golden(tmp_path):
    """A BF16 K page of 4 tokens against 4 query heads (LOGIT) and a W4A16 weight page (GEMV,
    INT4 codes with group scales), golden and RTL equal; golden is the float dot product
    within FP32 rounding."""
    cfg = load_config(SMALL)
    rng = np.random.default_rng(5)
    k, page = _bf16_page(rng, 4 * 16, cfg.page_bytes)
    q = rng.standard_normal((4, 16))
    np.savez(tmp_path / "logit.npz", page=page, q=q)
    args = ("--mode", "logit", "--width", "16", "--units", "4")
    assert _run(tmp_path, "golden", "pe", tmp_path / "logit.npz", *args)[0] == 0
    assert _run(tmp_path, "run", "pe", tmp_path / "logit.npz", *args)[0] == 0
    with np.load(tmp_path / "golden-pe.npz") as g, np.load(tmp_path / "run-pe.npz") as r:
        assert np.array_equal(g["y_bits"], r["y_bits"]) and int(r["cycles"]) > 0
        qb = q.astype(ml_dtypes.bfloat16).astype(np.float64)
        ref = k.astype(np.float64).reshape(4, 16) @ qb.T
        assert np.allclose(g["y"], ref, rtol=1e-5, atol=1e-5)
    w = rng.integers(-8, 8, 2 * 64)
    np.savez(tmp_path / "gemv.npz", page=pe.pack_page(w, "int4", cfg.page_bytes),
             x=rng.standard_normal(64), scales=rng.uniform(0.01, 0.1, 8))
    args = ("--mode", "gemv", "--width", "64", "--units", "2")
    assert _run(tmp_path, "golden", "pe", tmp_path / "gemv.npz", *args)[0] == 0
    assert _run(tmp_path, "run", "pe", tmp_path / "gemv.npz", *args)[0] == 0
    with np.load(tmp_path / "golden-pe.npz") as g, np.load(tmp_path / "run-pe.npz") as r:
        assert np.array_equal(g["y_bits"], r["y_bits"]) and g["y"].shape == (2,)


@pytest.mark.parametrize("arrays, extra, message", [
    ({"message": np.full((1, bch.K), 2, np.uint8)}, (), "bits must be 0 or 1"),
    ({"message": np.zeros((1, 100), np.uint8)}, (), f"(N, {bch.K})"),
    ({"message": np.zeros((1, bch.K), np.float32)}, (), "uint8"),
])
def test_bad_bch_inputs(tmp_path, capsys, arrays, extra, message):
    np.savez(tmp_path / "in.npz", **arrays)
    code, out = _run(tmp_path, "golden", "bch", tmp_path / "in.npz", *extra)
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and message in err


@pytest.mark.parametrize("arrays, extra, message", [
    ({"page": np.zeros(100, np.uint8), "q": np.zeros((2, 16))},
     ("--mode", "logit", "--width", "16"), "(256,) bytes"),
    ({"page": np.zeros(256, np.uint8), "q": np.zeros((2, 16))},
     ("--mode", "logit"), "--width: required"),
    ({"page": np.zeros(256, np.uint8), "q": np.zeros((3, 16))},
     ("--mode", "logit", "--width", "16"), "heads 3"),
    ({"page": np.zeros(256, np.uint8), "q": np.full((2, 16), np.nan)},
     ("--mode", "logit", "--width", "16"), "q[0, 0] = nan is not a finite BF16 number"),
    ({"page": np.zeros(256, np.uint8), "q": np.pad(np.full((1, 1), 1e300), ((1, 0), (2, 13)))},
     ("--mode", "logit", "--width", "16"), "q[1, 2] = 1e+300 is not a finite BF16 number"),
    ({"page": np.zeros(256, np.uint8), "x": np.zeros(6), "scales": np.ones(8)},
     ("--mode", "gemv", "--width", "6"), "multiple of n_fmac"),
    ({"page": np.zeros(256, np.uint8), "x": np.zeros(64)},
     ("--mode", "gemv", "--width", "64"), "scales"),
    ({"page": np.zeros(256, np.uint8), "q": np.zeros((2, 16))},
     ("--mode", "logit", "--width", "16", "--units", "99"), "--units 99"),
])
def test_bad_pe_inputs(tmp_path, capsys, arrays, extra, message):
    np.savez(tmp_path / "in.npz", **arrays)
    code, out = _run(tmp_path, "golden", "pe", tmp_path / "in.npz", *extra)
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and message in err


def test_bad_mode_is_a_usage_error(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", page=np.zeros(256, np.uint8))
    code, out = _run(tmp_path, "golden", "pe", tmp_path / "in.npz", "--mode", "softmax")
    assert code == 2 and not out.exists() and "--mode" in capsys.readouterr().err


def test_model_kvnand_json(capsys):
    assert main(["model", "kvnand", "--config", "kvnand_paper", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    geo = report["geomean_speedup_vs_base1"]
    assert set(geo) == {"128", "1024", "10240"} and all(v > 1 for v in geo.values())
    assert main(["model", "kvnand", "--config", "kvnand_paper"]) == 0
    assert "geomean speedup" in capsys.readouterr().out


def test_model_kvnand_sweep(capsys):
    """The design-space sweep through the sweep runner (local processes)."""
    assert main(["model", "kvnand", "--config", "kvnand_paper", "--sweep", "--workers", "2",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["backend"] and set(result["best"]) == set(result["grid"]["buffer_readings"])
    assert main(["model", "kvnand", "--config", "kvnand_paper", "--ray", "local"]) == 2
    assert "--sweep" in capsys.readouterr().err
