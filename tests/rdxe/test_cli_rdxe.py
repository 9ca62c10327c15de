"""``memwall golden|run|model rdxe``: users' float data through the INT8 golden datapath and the
generated tile group (equal, bit for bit), the cycle and ring models, and bad inputs (exit 2,
a message naming what is wrong, no output)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from memwall.cli import main
from memwall.config import load_config
from memwall.golden.rdxe import datapath as rdxe
from memwall.golden.rdxe import model as rdxe_model
from memwall.golden.rdxe.cycles import NR_LATENCY
from memwall.hdl.common.fixed import NewtonRaphson


def _rms_inputs(path, d=16, n=10, seed=1):
    rng = np.random.default_rng(seed)
    np.savez(path, x=rng.standard_normal(d).astype(np.float32),
             gamma=1 + 0.1 * rng.standard_normal(d), w=rng.standard_normal((n, d)) / 4)
    return path


def _attention_inputs(path, heads=4, kv_heads=2, t=9, dh=16, seed=2):
    rng = np.random.default_rng(seed)
    np.savez(path, q=rng.standard_normal((heads, dh)), k=rng.standard_normal((t, kv_heads, dh)),
             v=rng.standard_normal((t, kv_heads, dh)))
    return path


def _run(tmp_path, verb, op, inputs, *extra):
    out = tmp_path / f"{verb}-{op}.npz"
    code = main([verb, "rdxe", "--config", "rdxe_small", "--op", op, "--inputs", str(inputs),
                 "--out", str(out), *extra])
    return code, out


def test_golden_rmsnorm_gemv_is_the_float_op_within_quantisation(tmp_path):
    inputs = _rms_inputs(tmp_path / "in.npz", d=64, n=32)
    code, out = _run(tmp_path, "golden", "rmsnorm_gemv", inputs)
    assert code == 0
    with np.load(inputs) as i, np.load(out) as o:
        want = rdxe.rmsnorm_gemv_reference(i["x"], i["gamma"], i["w"], 1e-5)
        scale = np.abs(want).max() / 127
        assert o["y_q"].dtype == np.int8 and o["acc"].dtype == np.int32
        assert np.abs(o["y"] - want).max() < 4 * scale            # INT8 weights and output
        q = rdxe.quantise_rmsnorm_gemv(i["x"], i["gamma"], i["w"], 1e-5)
        assert np.array_equal(o["acc"], rdxe.gemv_acc(q.w_merged, q.x))


@pytest.mark.sim
@pytest.mark.parametrize("op, inputs, extra, sim", [
    ("rmsnorm_gemv", _rms_inputs, ["--mode", "sequential"], "icarus"),
    ("attention", _attention_inputs, ["--layout", "baseline"], "verilator"),   # the family's
])                                                                              # Verilator run
def test_run_equals_golden(tmp_path, op, inputs, extra, sim):
    path = inputs(tmp_path / "in.npz")
    code, golden_out = _run(tmp_path, "golden", op, path, *extra)
    assert code == 0
    code, run_out = _run(tmp_path, "run", op, path, *extra, "--sim", sim)
    assert code == 0
    with np.load(golden_out) as g, np.load(run_out) as r:
        key = "y_q" if op == "rmsnorm_gemv" else "o_q"
        assert np.array_equal(g[key], r[key]) and np.array_equal(g["acc"], r["acc"])
        assert int(r["cycles"]) > 0 and "cycles" not in g


@pytest.mark.parametrize("arrays, message", [
    ({"q": np.zeros((3, 16)), "k": np.zeros((5, 2, 16)), "v": np.zeros((5, 2, 16))},
     "multiple of kv_heads"),
    ({"q": np.zeros((2, 16)), "k": np.zeros((5, 2, 16)), "v": np.zeros((5, 2, 8))},
     "(t, kv_heads, dh)"),
    ({"q": np.full((2, 16), np.nan), "k": np.zeros((5, 2, 16)), "v": np.zeros((5, 2, 16))},
     "NaN"),
    ({"q": np.zeros((2, 16), np.int32), "k": np.zeros((5, 2, 16)), "v": np.zeros((5, 2, 16))},
     "float"),
])
def test_bad_attention_inputs(tmp_path, capsys, arrays, message):
    np.savez(tmp_path / "in.npz", **arrays)
    code, out = _run(tmp_path, "golden", "attention", tmp_path / "in.npz")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and message in err


def test_run_rejects_what_the_config_cannot_hold(tmp_path, capsys):
    cfg = load_config("rdxe_small")
    path = _attention_inputs(tmp_path / "in.npz", t=cfg.max_tokens + 1)
    code, out = _run(tmp_path, "run", "attention", path)
    assert code == 2 and not out.exists()
    assert "max_tokens" in capsys.readouterr().err
    path = _attention_inputs(tmp_path / "in2.npz", dh=6)
    code, out = _run(tmp_path, "run", "attention", path)
    assert code == 2 and "head dimension 6" in capsys.readouterr().err


@pytest.mark.parametrize("change, extra, message", [
    (lambda a: {**a, "x": np.where(np.arange(16) == 3, 1e300, a["x"].astype(np.float64))}, (),
     "x[3] = 1e+300: values must be finite with magnitude at most 2**400"),
    (lambda a: {**a, "x": np.full(16, 5e-324)}, (), "x: largest magnitude 4.94066e-324"),
    (lambda a: a, ("--eps", "1e308"), "eps 1e+308: d * eps is"),
    (lambda a: a, ("--eps", "1e6"), "past the 32-bit epsilon register"),
])
def test_rmsnorm_inputs_the_datapath_cannot_hold(tmp_path, capsys, change, extra, message):
    """Finite values whose scaling would overflow or underflow float64, an epsilon past its
    register: one line, exit 2, no output, no warning."""
    with np.load(_rms_inputs(tmp_path / "ok.npz")) as f:
        arrays = change(dict(f))
    np.savez(tmp_path / "in.npz", **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out = _run(tmp_path, "golden", "rmsnorm_gemv", tmp_path / "in.npz", *extra)
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert err.startswith("memwall: error: ") and message in err and len(err.splitlines()) == 1


def test_attention_scores_past_the_rc_range(tmp_path, capsys):
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "in.npz", q=rng.standard_normal((2, 16)) * 1e100,
             k=rng.standard_normal((5, 2, 16)) * 1e100, v=rng.standard_normal((5, 2, 16)))
    code, out = _run(tmp_path, "golden", "attention", tmp_path / "in.npz")
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "the score factor" in err and "set by the scales of q and k" in err


def test_bad_eps(tmp_path, capsys):
    code, out = _run(tmp_path, "golden", "rmsnorm_gemv", _rms_inputs(tmp_path / "in.npz"),
                     "--eps", "0")
    assert code == 2 and "--eps" in capsys.readouterr().err and not out.exists()


def test_model_rdxe(capsys):
    assert main(["model", "rdxe", "--config", "rdxe_paper", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["peak_tops"] == pytest.approx(0.8192)
    for row in report["vrc"]:
        assert row["fused_nonlinear"] < row["sequential_nonlinear"]
        assert row["fused_layer"] < row["sequential_layer"]
    for row in report["iwur"]:
        assert row["iwur_attention"] < row["baseline_attention"]
    assert [g["reduction"] for g in report["gqa"]][-1] == pytest.approx(5 / 6)
    ring = report["ring"]
    assert 0 < ring["padded_16"] <= ring["padded_8"] < ring["utilisation"] <= 1
    assert main(["model", "rdxe", "--config", "rdxe_small"]) == 0
    assert "Ring:" in capsys.readouterr().out


def test_peak_of_the_paper_config():
    assert load_config("rdxe_paper").peak_tops == pytest.approx(0.8192)


def test_cycle_model_constants_follow_the_rtl():
    assert NR_LATENCY == {op: NewtonRaphson.latency(op) for op in (0, 1)}


def test_ring_and_padding_on_hand_cases():
    # One request, one DXE: every step is busy.
    r = rdxe_model.ring(lambda t: 10, 1, [(0, 3, 2)])
    assert r["utilisation"] == 1.0 and r["cycles"] == 5 * 10
    # Decode tokens wait for the ring: one request on 4 DXEs fills a quarter after its prompt.
    r = rdxe_model.ring(lambda t: 10, 4, [(0, 1, 3)])
    assert r["cycles"] == 4 * 4 * 10 and r["utilisation"] == pytest.approx(4 / 16)
    assert rdxe_model.padded_utilisation([(0, 2, 2), (0, 4, 4)], 2) == pytest.approx(12 / 16)
