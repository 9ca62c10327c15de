"""``memwall golden|run|model kvnand``: BCH codewords and the plane PE on users' data through the
golden models and the generated RTL (equal, bit for bit), the design-space model's JSON at the
config's parameters, one point and the sweep's axes from the command line, and bad inputs
(exit 2, a message naming what is wrong, no output)."""

from __future__ import annotations

import dataclasses
import json

import ml_dtypes
import numpy as np
import pytest

from memwall import paths
from memwall.cli import main
from memwall.config import load_config
from memwall.files import dumps_json
from memwall.golden.kvnand import bch, pe
from memwall.golden.kvnand import model as km
from memwall.golden.kvnand.systems import Params, kvnand_d, parse_system

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


# --- the design-space model reads its config; one point; the sweep's axes ----------------------

def _w8a8_copy(tmp_path):
    """kvnand_paper with W8A8 pages (and its PE's dequantisers)."""
    text = (paths.CONFIGS / "kvnand_paper.yaml").read_text()
    assert "\nfmt: bf16\n" in text
    path = tmp_path / "kvnand_w8a8.yaml"
    path.write_text(text.replace("\nfmt: bf16\n", "\nfmt: w8a8\n"))
    return path


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_model_kvnand_reads_its_config(tmp_path, capsys):
    paper, small, w8 = (_json(capsys, ["model", "kvnand", "--config", c, "--json"])
                        for c in ("kvnand_paper", SMALL, str(_w8a8_copy(tmp_path))))
    assert paper["params"] == dataclasses.asdict(Params())
    assert small["params"] == dataclasses.asdict(Params.from_config(load_config(SMALL)))
    assert (small["config"], w8["config"]) == ({"name": SMALL, "format": "w4a16"},
                                               {"name": "kvnand_w8a8", "format": "w8a8"})
    # Different hardware: every figure moves; the same hardware in another format: the figures
    # in the config's format move, the paper's study (its formats fixed) does not.
    assert small["headline"] != paper["headline"] and small["dse"] != paper["dse"]
    assert w8["headline"] == paper["headline"]
    for key in ("geomean_speedup_vs_base1", "d_over_base2_100k"):
        assert len({json.dumps(r[key], sort_keys=True) for r in (paper, small, w8)}) == 3, key
    assert main(["model", "kvnand", "--config", str(_w8a8_copy(tmp_path))]) == 0
    assert "at 128 tokens, w8a8" in capsys.readouterr().out


def test_model_kvnand_one_point(tmp_path, capsys):
    point = ["--model", "LLaMA3.1-70B", "--context", "50000", "--system", "kvnand_d:5+3"]
    got = _json(capsys, ["model", "kvnand", "--config", "kvnand_paper", *point, "--json"])
    want = km.decode_step(kvnand_d(5, 3), "LLaMA3.1-70B", 50_000, "bf16")
    assert got == json.loads(dumps_json({"config": "kvnand_paper",
                                         "system_spec": "kvnand_d:5+3", **want}))
    # The format defaults to the config's; --format overrides it.
    w8 = _json(capsys, ["model", "kvnand", "--config", str(_w8a8_copy(tmp_path)), *point,
                        "--json"])
    assert w8["format"] == "w8a8" and w8["latency_s"] == km.decode_step(
        kvnand_d(5, 3), "LLaMA3.1-70B", 50_000, "w8a8")["latency_s"] < got["latency_s"]
    small = _json(capsys, ["model", "kvnand", "--config", SMALL, *point, "--format", "bf16",
                           "--json"])
    p = Params.from_config(load_config(SMALL))
    assert small["latency_s"] == km.decode_step(kvnand_d(5, 3, p), "LLaMA3.1-70B", 50_000,
                                                "bf16")["latency_s"]
    for system, name in (("base1", "Base-1"), ("base2", "Base-2"), ("kvnand_c:16", "KVNAND-C-16")):
        r = _json(capsys, ["model", "kvnand", "--config", "kvnand_paper", "--model", "OPT-30B",
                           "--context", "128", "--system", system, "--json"])
        assert r["system"] == name and r["context"] == 128
    assert main(["model", "kvnand", "--config", "kvnand_paper", *point]) == 0
    assert "KVNAND-D-(5+3), LLaMA3.1-70B, 50,000 tokens, bf16" in capsys.readouterr().out


def test_model_kvnand_sweep_axes(capsys):
    """The sweep's axes from the command line, at kvnand_small's parameters: the cells are
    the model's, each buffer size in KiB a reading."""
    r = _json(capsys, ["model", "kvnand", "--config", SMALL, "--sweep", "--workers", "1",
                       "--models", "LLaMA3.1-8B", "OPT-30B", "--contexts", "1000,100000",
                       "--formats", "w8a8", "--systems", "base1", "kvnand_c:16",
                       "kvnand_d:4+12", "--buffer-kib", "8/5120", "all/all", "--json"])
    p = Params.from_config(load_config(SMALL))
    assert r["config"] == SMALL
    assert r["grid"] == {
        "models": ["LLaMA3.1-8B", "OPT-30B"], "contexts": [1000, 100000], "formats": ["w8a8"],
        "systems": ["base1", "kvnand_c:16", "kvnand_d:4+12"],
        "buffer_readings": {"8/5120": {"c_open_streams": 8192 // 256,
                                       "d_open_streams": 5 * 2 ** 20 // 256},
                            "all/all": {"c_open_streams": None, "d_open_streams": None}}}
    for reading, kw in r["grid"]["buffer_readings"].items():
        q = dataclasses.replace(p, **kw)
        for model in r["grid"]["models"]:
            for ctx in r["grid"]["contexts"]:
                row = r["dse"][reading][f"{model} w8a8"][str(ctx)]
                assert list(row["cells"]) == ["Base-1", "C-16", "D-(4+12)"]
                for spec, label in zip(r["grid"]["systems"], row["cells"], strict=True):
                    res = km.decode_step(parse_system(spec, q), model, ctx, "w8a8")
                    assert row["cells"][label] == (None if res["oom"] else
                                                   round(res["latency_s"] * 1e3, 4))
    # The buffer axis matters: 8 KiB per plane holds 32 of KVNAND-C's streams, not all.
    c16 = {k: r["dse"][k]["OPT-30B w8a8"]["100000"]["cells"]["C-16"] for k in ("8/5120",
                                                                               "all/all")}
    assert c16["8/5120"] > c16["all/all"]


@pytest.mark.parametrize("extra, message", [
    (["--model", "GPT-5", "--context", "128", "--system", "base1"],
     "--model 'GPT-5': allowed OPT-30B, LLaMA2-7B"),
    (["--model", "OPT-30B", "--context", "1K", "--system", "base1"],
     "--context '1K': allowed a whole number of tokens, 1..1,000,000"),
    (["--model", "OPT-30B", "--context", "0", "--system", "base1"], "--context '0'"),
    (["--model", "OPT-30B", "--context", "2000000", "--system", "base1"], "1..1,000,000"),
    (["--model", "OPT-30B", "--context", "128", "--system", "base1", "--format", "fp8"],
     "--format 'fp8': allowed bf16, w8a8, w4a16"),
    (["--model", "OPT-30B", "--context", "128", "--system", "kvnand_d:4"],
     "--system: system 'kvnand_d:4': allowed base1, base2, kvnand_c:X"),
    (["--model", "OPT-30B", "--context", "128", "--system", "kvnand_c:2"],
     "KVNAND-C-2: 64 planes < OPT-30B's 168 heads"),
    (["--model", "OPT-30B", "--context", "128"], "missing --system"),
    (["--model", "OPT-30B", "--context", "128", "--system", "base1", "--sweep"],
     "do not go with --sweep"),
    (["--models", "OPT-30B"], "--models: these go with --sweep"),
    (["--workers", "2"], "--workers: these go with --sweep"),
    (["--sweep", "--models", "OPT-30B,GPT-5"], "--models 'GPT-5': allowed"),
    (["--sweep", "--contexts", "128", "-5"], "--contexts '-5'"),
    (["--sweep", "--formats", "int4"], "--formats 'int4': allowed bf16, w8a8, w4a16"),
    (["--sweep", "--systems", "base1", "kvnand_x:3"], "system 'kvnand_x:3': allowed"),
    (["--sweep", "--systems", "kvnand_c:4"], "systems: kvnand_c:4 has 128 planes"),
    (["--sweep", "--buffer-kib", "8"], "--buffer-kib: buffer size '8': allowed C/D"),
    (["--sweep", "--buffer-kib", "8/x"], "buffer size '8/x'"),
    (["--sweep", "--models", ","], "--models: give at least one value"),
])
def test_bad_model_options_exit_2(capsys, extra, message):
    assert main(["model", "kvnand", "--config", "kvnand_paper", *extra]) == 2
    out, err = capsys.readouterr()
    assert not out and err.startswith("memwall: error: ") and message in err, err


def test_bad_model_config_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("unit: kvnand\nchannels: 0\n")
    assert main(["model", "kvnand", "--config", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert not out and "channels: 0" in err and "a whole number from 1 to 64" in err


# --- the KV write-combine buffer on a user's trace; W8A8 ATTEND's probability scale ------------

def _trace(path, seed=38):
    """Streams 5 and 9 alternate for 20 tokens (kvnand_small's 2 slots hold both: a full page
    each), then stream 3 cuts in and alternates with 5 (evictions), then the flush."""
    rng = np.random.default_rng(seed)
    ids = [5, 9] * 20 + [3, 5] * 3
    data = rng.integers(0, 256, (len(ids), 16), dtype=np.uint8)
    np.savez(path, stream=np.array(ids, np.int16), data=data)
    return ids, data


@pytest.mark.sim
def test_kvbuf_golden_and_run_are_equal(tmp_path):
    from memwall.golden.kvnand import kvbuf as kb

    ids, data = _trace(tmp_path / "trace.npz")
    assert _run(tmp_path, "golden", "kvbuf", tmp_path / "trace.npz")[0] == 0
    assert _run(tmp_path, "run", "kvbuf", tmp_path / "trace.npz")[0] == 0
    want = kb.simulate(list(zip(ids, data, strict=True)), 2, 256, 16, "page", "fullest")
    with np.load(tmp_path / "golden-kvbuf.npz") as g, np.load(tmp_path / "run-kvbuf.npz") as r:
        assert set(r.files) == set(g.files) | {"cycles"} and int(r["cycles"]) > 0
        for key in g.files:
            assert np.array_equal(g[key], r[key]), key
        assert int(g["programs"]) == len(want["programs"]) == len(g["stream"])
        assert [kb.CAUSES[c] for c in g["cause"]] == [p["cause"] for p in want["programs"]]
        assert set(g["cause"].tolist()) == {0, 1, 2}             # full, evict and flush
        assert np.array_equal(g["early"], g["valid"] < 256)
        assert np.array_equal(g["data"], np.stack([p["data"] for p in want["programs"]]))
        assert g["stream"].tolist() == [p["stream"] for p in want["programs"]]
        assert g["page"].tolist() == [p["page"] for p in want["programs"]]


_SLICE = np.zeros((2, 16), np.uint8)


@pytest.mark.parametrize("arrays, message", [
    ({"stream": np.array([0, 64]), "data": _SLICE},
     "stream[1] = 64; stream ids 0..63 are allowed (kv_stream_bits 6"),
    ({"stream": np.array([-1, 0]), "data": _SLICE}, "stream[0] = -1; stream ids 0..63"),
    ({"stream": np.array([0.0, 1.0]), "data": _SLICE},
     "array 'stream' has dtype float64; expected (N,) integer stream ids 0..63"),
    ({"stream": np.array([0, 1]), "data": np.zeros((2, 8), np.uint8)},
     "(N, 16) uint8 slice bytes (kv_slice_bytes 16)"),
    ({"stream": np.array([0, 1]), "data": np.zeros((2, 16), np.int16)},
     "array 'data' has dtype int16"),
    ({"stream": np.array([0, 1, 2]), "data": _SLICE},
     "stream has 3 rows and data 2; one stream id per slice"),
    ({"stream": np.array([0, 1])}, "missing array 'data'"),
    ({"stream": np.zeros(0, np.int64), "data": np.zeros((0, 16), np.uint8)},
     "array 'stream' has shape (0,); axis 0 must have at least 1 element"),
    ({"stream": np.array([0, 1]), "data": np.zeros((2, 16), object)},
     "array 'data' holds Python objects (dtype object); only plain numeric arrays are read"),
    ({"stream": np.zeros(40_000, np.int64), "data": np.zeros((40_000, 16), np.uint8)},
     "N at most 32768"),
])
@pytest.mark.parametrize("verb", ["golden", "run"])
def test_bad_kvbuf_traces_exit_2(tmp_path, capsys, arrays, message, verb):
    np.savez(tmp_path / "trace.npz", **arrays)
    code, out = _run(tmp_path, verb, "kvbuf", tmp_path / "trace.npz")
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert err.startswith("memwall: error: ") and message in err, err


def _w8a8_small(tmp_path):
    """kvnand_small with W8A8 pages (INT8 V pages with group scales of 16, INT8 inputs)."""
    text = (paths.CONFIGS / "kvnand_small.yaml").read_text()
    assert "\nfmt: w4a16\n" in text
    path = tmp_path / "kvnand_small_w8a8.yaml"
    path.write_text(text.replace("\nfmt: w4a16\n", "\nfmt: w8a8\n"))
    return path


def _attend_inputs(path, p_exp=-7, seed=38, scales=None):
    """A W8A8 V page of 16 tokens x 16 and softmax probabilities of 4 heads as INT8 codes in
    units of 2**p_exp, saved; the float64 sums (heads, d) and the sums of their terms'
    magnitudes."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-128, 128, (16, 16))
    scales = rng.uniform(0.01, 0.1, 16) if scales is None else scales
    logits = rng.standard_normal((16, 4))
    prob = np.exp(logits) / np.exp(logits).sum(0)
    codes = np.clip(np.rint(prob / 2.0 ** p_exp), 0, 127).astype(np.int8)
    np.savez(path, page=pe.pack_page(v, "int8", 256), p=codes, scales=scales,
             p_exp=np.int64(p_exp))
    s = scales.astype(ml_dtypes.bfloat16).astype(np.float64)
    dequant = v * np.repeat(s, 16).reshape(16, 16)
    p = codes * 2.0 ** p_exp
    return (p.T @ dequant, p.T @ np.abs(dequant))             # (heads, d), p >= 0


@pytest.mark.sim
def test_w8a8_attend_takes_probabilities_with_their_scale(tmp_path):
    """``p`` INT8 codes and ``p_exp``: the output is sum_t V[t] * c * 2**p_exp, within the
    FP32 summation bound of float64 (16 tokens); golden and RTL equal bit for bit."""
    config = str(_w8a8_small(tmp_path))
    want, magnitude = _attend_inputs(tmp_path / "attend.npz")
    args = ("--mode", "attend", "--width", "16")
    for verb in ("golden", "run"):
        assert _run(tmp_path, verb, "pe", tmp_path / "attend.npz", *args, config=config)[0] == 0
    with np.load(tmp_path / "golden-pe.npz") as g, np.load(tmp_path / "run-pe.npz") as r:
        assert np.array_equal(g["y_bits"], r["y_bits"])
        y = g["y"].astype(np.float64)                     # (heads, d)
    gamma = 16 * 2.0 ** -24 / (1 - 16 * 2.0 ** -24)     # golden/kvnand/pe.py's bound, T = 16
    assert np.all(np.abs(y - want) <= gamma * magnitude)


@pytest.mark.parametrize("change, message", [
    ({"p_exp": None}, "missing array 'p_exp' (expected a scalar integer in -127..127"),
    ({"p_exp": np.int64(200)}, "p_exp = 200; an integer in -127..127 is allowed"),
    ({"p_exp": np.float64(-7)}, "array 'p_exp' has dtype float64"),
    ({"p_exp": np.int64(127), "scales": np.full(16, 1e30)},
     "scale 0 (1.00026e+30) times 2**127"),
])
def test_bad_w8a8_attend_scale_exits_2(tmp_path, capsys, change, message):
    config = str(_w8a8_small(tmp_path))
    _attend_inputs(tmp_path / "attend.npz")
    with np.load(tmp_path / "attend.npz") as f:
        arrays = {k: f[k] for k in f.files}
    for key, value in change.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    np.savez(tmp_path / "attend.npz", **arrays)
    code, out = _run(tmp_path, "golden", "pe", tmp_path / "attend.npz", "--mode", "attend",
                     "--width", "16", config=config)
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert err.startswith("memwall: error: ") and message in err, err
