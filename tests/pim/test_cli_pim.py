"""``memwall model|golden|run pim``: users' GEMMs through the scheduler, the golden simulator
and the RTL; bad operands get exit status 2, a message naming the array and the allowed range,
and no output."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memwall.cli import main
from memwall.config import load_config
from memwall.golden.pim import macro as pim
from memwall.golden.pim import schedule as pim_schedule


def _operands(cfg, m=3, k=20, n=10, seed=4):
    rng = np.random.default_rng(seed)
    lo, hi = pim.operand_range(cfg.input_bits, cfg.input_signed)
    a = rng.integers(lo, hi + 1, (m, k)).astype(np.int8)
    lo, hi = pim.operand_range(cfg.weight_bits, cfg.weight_signed)
    return a, rng.integers(lo, hi + 1, (k, n)).astype(np.int16)


def test_model_pim_json(capsys):
    assert main(["model", "pim", "--config", "pim_small", "--gemm", "4,24,12", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = pim_schedule.compare(load_config("pim_small"), 4, 24, 12)
    assert report["proposed"]["schedule"] == expected["proposed"]["schedule"].__dict__
    assert report["ratios"]["vs_edram"] == pytest.approx(expected["vs_edram"])
    energies = [step["energy_pj"] for step in report["ablation"]]
    assert energies == sorted(energies, reverse=True)


def test_model_pim_text(capsys):
    assert main(["model", "pim", "--config", "pim_small", "--gemm", "2,16,8"]) == 0
    out = capsys.readouterr().out
    assert "eDRAM base" in out and "Neural Cache" in out and "+ sense-amp gating" in out


@pytest.mark.parametrize("gemm", ["4,24", "0,3,3", "1,2,x", "5000,1,1", "-1,2,3"])
def test_model_pim_bad_gemm(gemm, capsys):
    assert main(["model", "pim", "--config", "pim_small", "--gemm", gemm]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and "--gemm" in err


def test_golden_pim_writes_c_cycles_and_counters(tmp_path):
    cfg = load_config("pim_small")
    a, b = _operands(cfg)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    assert main(["golden", "pim", "--config", "pim_small", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert out["c"].dtype == np.int64
        assert np.array_equal(out["c"], a.astype(np.int64) @ b.astype(np.int64))
        best = pim_schedule.search(cfg, *a.shape, b.shape[1],
                                   ones=pim.input_ones(cfg, a))
        assert int(out["cycles"]) == best["cycles"]
        for name in pim.MACRO_COUNTERS + pim.BUFFER_COUNTERS:
            assert int(out[name]) == best["counters"][name], name
        # The per-VPD split is the event simulator's own (by_level).
        sim = pim.simulate(cfg, a.astype(np.int64), b.astype(np.int64), best["schedule"])
        assert int(out["vpd"]) == sim["vpd"]
        for name in pim.MACRO_COUNTERS:
            assert out[f"per_vpd_{name}"].tolist() == list(sim["by_level"][name]), name


BAD = {
    "a_too_large": (lambda a, b: (a.astype(np.int16) * 0 + 200, b), "a[0, 0] = 200", "[-128, 127]"),
    "b_float": (lambda a, b: (a, b.astype(np.float32)), "'b'", "integer"),
    "k_mismatch": (lambda a, b: (a, b[:-1]), "a's columns", ""),
    "a_3d": (lambda a, b: (a[None], b), "'a'", "2-D"),
    "a_no_rows": (lambda a, b: (a[:0], b), "'a'", "at least 1 element"),
}


def test_golden_pim_takes_fortran_ordered_operands(tmp_path):
    """Fortran order is valid .npy data: read as the same matrix (it crashed a byte view)."""
    cfg = load_config("pim_small")
    a, b = _operands(cfg)
    np.savez(tmp_path / "in.npz", a=np.asfortranarray(a), b=np.asfortranarray(b))
    assert main(["golden", "pim", "--config", "pim_small", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert np.array_equal(out["c"], a.astype(np.int64) @ b.astype(np.int64))


def test_a_buffer_that_holds_nothing_is_a_config_error(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("unit: pim\nbuffer_kib: 1.0e-300\n")
    assert main(["model", "pim", "--config", str(tmp_path / "p.yaml"), "--gemm", "8,8,8"]) == 2
    err = capsys.readouterr().err
    assert "buffer_kib: 1e-300" in err and "at least one 32-bit partial sum" in err


def test_a_gemm_no_schedule_fits_is_bad_input(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("unit: pim\nbuffer_kib: 0.004\n")
    assert main(["model", "pim", "--config", str(tmp_path / "p.yaml"), "--gemm", "64,64,64"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: no schedule of 64x64x64 fits") and "buffer" in err


@pytest.mark.parametrize("verb", ["golden", "run"])
@pytest.mark.parametrize("case", list(BAD))
def test_pim_bad_operands(verb, case, tmp_path, capsys):
    cfg = load_config("pim_small")
    change, needle, allowed = BAD[case]
    a, b = change(*_operands(cfg))
    np.savez(tmp_path / "in.npz", a=a, b=b)
    code = main([verb, "pim", "--config", "pim_small", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(tmp_path / "out.npz")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("memwall: error: ") and needle in err and allowed in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz"]


def test_a_wide_dot_product_row_generates(tmp_path):
    """8192 columns of dot product: the PU sums its 1024 fields as a tree (a chain of them
    passed Python's recursion limit in Amaranth: an internal error)."""
    from memwall.gen import generate

    (tmp_path / "d.yaml").write_text("unit: pim\noperation: dot_product\ncols: 1024\n"
                                     "subarrays: 8\n")
    out = generate(load_config(str(tmp_path / "d.yaml")), tmp_path / "out")
    assert (out / "manifest.json").is_file()


def test_a_row_past_the_netlist_port_limit_is_a_config_error(tmp_path, capsys):
    (tmp_path / "d.yaml").write_text("unit: pim\noperation: dot_product\ncols: 1024\n"
                                     "subarrays: 64\n")
    assert main(["gen", str(tmp_path / "d.yaml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "take 196896 bits of the core's input ports; at most 65536" in err
    assert not (tmp_path / "out").exists()


def test_golden_pim_refuses_a_schedule_past_max_cycles(tmp_path, capsys):
    """The event simulator walks every cycle in Python: bounded like memwall run, from the
    searched schedule's cycles, before it starts."""
    cfg = load_config("pim_small")
    a, b = _operands(cfg, m=4, k=32, n=16)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    cycles = pim_schedule.search(cfg, 4, 32, 16, ones=pim.input_ones(cfg, a))["cycles"]
    args = ["golden", "pim", "--config", "pim_small", "--inputs", str(tmp_path / "in.npz"),
            "--out", str(tmp_path / "out.npz")]
    assert main([*args, "--max-cycles", str(cycles - 1)]) == 2
    err = capsys.readouterr().err
    assert f"needs at least {cycles:,} simulated cycles; --max-cycles is {cycles - 1:,}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz"]
    assert main([*args, "--max-cycles", str(cycles)]) == 0
