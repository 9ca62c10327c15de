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
from memwall.golden.rdxe import quantise as qz
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
        q = qz.quantise_rmsnorm_gemv(i["x"], i["gamma"], i["w"], 1e-5)
        assert np.array_equal(o["acc"], rdxe.gemv_acc(q.w_merged, q.x))


@pytest.mark.parametrize("mode", ["fused", "sequential"])
def test_golden_outputs_per_channel_and_per_tensor(tmp_path, capsys, mode):
    """Per-channel weights (the default) write the datapath's INT16 values and the per-row
    scales; per tensor, neither. Either way y and y_q are the float64 answer on the float
    inputs within 3 output LSBs (INT8 x, gamma and weights, an INT8 x_hat sequentially: the
    largest error over both modes and both scales on these inputs is 2.3 LSB)."""
    inputs = _rms_inputs(tmp_path / "in.npz", d=64, n=12)
    with np.load(inputs) as i:
        ref = rdxe.rmsnorm_gemv_reference(i["x"], i["gamma"], i["w"], 1e-5)
    s_y = np.abs(ref).max() / 127                                 # calibrated
    for extra, granularity in (((), "channel"), (("--weight-scale", "tensor"), "tensor")):
        code, out = _run(tmp_path, "golden", "rmsnorm_gemv", inputs, "--mode", mode, *extra)
        assert code == 0
        printed = capsys.readouterr().out
        assert f"weights per {granularity}; output scale" in printed
        assert "(calibrated)" in printed and "0 of 12 outputs saturated at -128/127" in printed
        with np.load(out) as o:
            assert o["s_y"] == s_y and o["saturated"] == 0 and o["y_q"].dtype == np.int8
            assert ("y16" in o and "row_scale" in o) == (granularity == "channel")
            if granularity == "channel":
                assert o["y16"].dtype == np.int16 and o["row_scale"].shape == (12,)
            assert np.abs(o["y"] - ref).max() < 3 * s_y
            assert np.abs(o["y_q"] - ref / s_y).max() < 3


def test_golden_given_output_scale_saturates_and_says_so(tmp_path, capsys):
    inputs = _rms_inputs(tmp_path / "in.npz", d=64, n=12)
    with np.load(inputs) as i:
        ref = rdxe.rmsnorm_gemv_reference(i["x"], i["gamma"], i["w"], 1e-5)
    scale = float(np.abs(ref).max() / 127 / 4)
    code, out = _run(tmp_path, "golden", "rmsnorm_gemv", inputs, "--weight-scale", "tensor",
                     "--out-scale", repr(scale))
    assert code == 0
    past = int(np.count_nonzero(np.abs(ref / scale + 0.5) >= 128))
    assert past > 0 and f"(given); {past} of 12 outputs saturated at -128/127" \
        in capsys.readouterr().out
    with np.load(out) as o:
        assert o["s_y"] == scale and o["saturated"] == past
        assert np.all(o["y_q"][ref / scale > 140] == 127)
        assert np.all(o["y_q"][ref / scale < -140] == -128)


@pytest.mark.parametrize("kv_scale", ["head", "tensor"])
def test_golden_attention_per_head_and_per_tensor(tmp_path, capsys, kv_scale):
    inputs = _attention_inputs(tmp_path / "in.npz")
    code, out = _run(tmp_path, "golden", "attention", inputs, "--kv-scale", kv_scale)
    assert code == 0 and f"k and v per {kv_scale}" in capsys.readouterr().out
    with np.load(inputs) as i, np.load(out) as o:
        quant = qz.quantise_attention(i["q"], i["k"], i["v"], kv_scale)
        assert np.array_equal(o["o_q"], qz.quantised_attention(quant)["values"])
        assert o["s_o"] == quant.s_o and np.array_equal(o["o"], o["o_q"] * o["s_o"])


@pytest.mark.parametrize("op, extra, message", [
    ("rmsnorm_gemv", ["--out-scale", "nan"], "--out-scale nan: must be a finite number > 0"),
    ("rmsnorm_gemv", ["--out-scale", "0"], "--out-scale 0.0: must be a finite number > 0"),
    ("attention", ["--out-scale=-inf"], "--out-scale -inf: must be a finite number > 0"),
    ("attention", ["--weight-scale", "tensor"],
     "--weight-scale applies to --op rmsnorm_gemv, not attention"),
    ("rmsnorm_gemv", ["--kv-scale", "head"], "--kv-scale applies to --op attention"),
    ("rmsnorm_gemv", ["--weight-scale", "row"], "invalid choice: 'row'"),
    ("rmsnorm_gemv", ["--weight-scale", "tensor", "--out-scale", "1e-300"],
     "set by the scales of w, gamma and the output (given), is outside what an RC factor"),
    ("attention", ["--out-scale", "1e300"], "set by the scales of v and the output (given)"),
])
def test_bad_scale_options(tmp_path, capsys, op, extra, message):
    inputs = (_rms_inputs if op == "rmsnorm_gemv" else _attention_inputs)(tmp_path / "in.npz")
    code, out = _run(tmp_path, "golden", op, inputs, *extra)
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert err.startswith("memwall: error: ") and message in err and len(err.splitlines()) == 1


def test_attention_past_the_int32_accumulator(tmp_path, capsys):
    """Flat scores over 4,200 tokens of v = 127 pass INT32 in P.V: exit 2, the operation named,
    nothing written (the hardware would wrap)."""
    np.savez(tmp_path / "in.npz", q=np.zeros((1, 16)), k=np.ones((4200, 1, 16)),
             v=np.ones((4200, 1, 16)))
    code, out = _run(tmp_path, "golden", "attention", tmp_path / "in.npz")
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert "P.V (the sum of e_t v_t over the tokens, e_t up to 2**12) overflows the INT32 " \
        "accumulator" in err and "up to MAX_TOKENS (4,096) tokens always fit" in err


@pytest.mark.sim
@pytest.mark.parametrize("op, inputs, extra, sim", [
    ("rmsnorm_gemv", _rms_inputs, [], "icarus"),                   # INT16 (per channel), fused
    ("rmsnorm_gemv", _rms_inputs, ["--mode", "sequential"], "icarus"),
    ("rmsnorm_gemv", _rms_inputs, ["--weight-scale", "tensor"], "icarus"),
    ("attention", _attention_inputs, ["--layout", "baseline"], "verilator"),   # the family's
])                                                                              # Verilator run
def test_run_equals_golden(tmp_path, op, inputs, extra, sim):
    path = inputs(tmp_path / "in.npz")
    code, golden_out = _run(tmp_path, "golden", op, path, *extra)
    assert code == 0
    code, run_out = _run(tmp_path, "run", op, path, *extra, "--sim", sim)
    assert code == 0
    with np.load(golden_out) as g, np.load(run_out) as r:
        assert sorted(g) == sorted(k for k in r if k != "cycles")
        for key in g:                    # y16 / o_q: the datapath's values, bit for bit
            assert np.array_equal(g[key], r[key]), key
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
    cycles, macs = [0] + [10] * 16, [0] + [1] * 16              # a layer: 10 cycles, 1 MAC
    # One request, one DXE of one layer: 5 tokens back to back, every cycle busy.
    r = rdxe_model.serve(cycles, macs, (1,), 1, [(0, 3, 2)])
    assert (r["cycles"], r["dxe_occupancy"], r["macs"]) == (50, 1.0, 5)
    assert r["mac_utilisation"] == pytest.approx(5 / 50)
    # Decode tokens wait for the ring: one request on 4 DXEs, each token 4 steps of 10 cycles,
    # one DXE in 4 busy.
    r = rdxe_model.serve(cycles, macs, (1, 1, 1, 1), 1, [(0, 1, 3)])
    assert r["cycles"] == 4 * 4 * 10 and r["dxe_occupancy"] == pytest.approx(4 / 16)
    assert r["macs"] == 4 * 4 and r["latency_cycles"] == [160]
    assert rdxe_model.padded_utilisation([(0, 2, 2), (0, 4, 4)], 2) == pytest.approx(12 / 16)
