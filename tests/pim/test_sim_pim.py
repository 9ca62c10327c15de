"""eDRAM PIM: cocotb regression of pim_core with the behavioural 2T eDRAM macro, against the
golden event simulator (:mod:`memwall.golden.pim.macro`).

Seven hardware variants cover every weight and input precision from 2 to 8 bits, the four
signedness pairs and the four processing x operation pairs; each runs GEMMs with edge tiles
in every loop order, and the edge operands (all zeros, all ones, the most negative value)."""

import numpy as np
import pytest

from memwall.config import config_from_dict, load_config
from memwall.families.pim.config import ORDERS
from memwall.golden.pim.macro import Schedule, fits
from memwall.hdl.pim.core import TOP_NAME, PimCore
from memwall.verif.common.runner import simulate
from memwall.verif.pim.run import TB, gemm_params

pytestmark = pytest.mark.sim

#: (weight_bits, input_bits, weight_signed, input_signed, processing, operation)
VARIANTS = [
    (8, 8, True, True, "bit_parallel", "row_wise"),
    (2, 3, False, True, "bit_serial", "dot_product"),
    (4, 2, True, False, "bit_serial", "row_wise"),
    (5, 7, True, True, "bit_parallel", "dot_product"),
    (6, 4, False, False, "bit_parallel", "row_wise"),
    (3, 6, True, True, "bit_serial", "dot_product"),
    (7, 5, False, True, "bit_parallel", "dot_product"),
]


def variant_config(wb, ib, ws, is_, processing, operation):
    raw = dict(unit="pim", rows=16, cols=16, subarrays=2, banks=1, processing=processing,
               operation=operation, weight_bits=wb, input_bits=ib, weight_signed=ws,
               input_signed=is_, max_dim=4096, buffer_kib=4, buffer_row_words=16,
               clock_mhz=2, refresh_margin_cycles=2)
    return config_from_dict(raw, "test variant", f"pim_w{wb}i{ib}")


def operand(rng, shape, bits, signed, kind="random"):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if kind == "zeros":
        return np.zeros(shape, dtype=np.int64)
    if kind == "ones":     # every bit set: -1 signed, the largest value unsigned
        return np.full(shape, -1 if signed else hi, dtype=np.int64)
    if kind == "lowest":
        return np.full(shape, lo, dtype=np.int64)
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


def fitting_schedule(cfg, m, k, n, order, vpd, rng):
    """A schedule with short edge tiles that fits the config (largest tiles tried first)."""
    for _ in range(200):
        tm, tk, tn = (int(rng.integers(1, d + 1)) for d in (m, k, n))
        s = Schedule(M=m, K=k, N=n, tm=tm, tk=tk, tn=tn, order=order, vpd=vpd)
        if fits(cfg, s):
            return s
    raise AssertionError(f"no fitting schedule found for {m}x{k}x{n}")


def cases(cfg, rng, shapes):
    gemms = []
    for n, (m, k, nn) in enumerate(shapes):
        order = ORDERS[n % len(ORDERS)]
        s = fitting_schedule(cfg, m, k, nn, order, n % cfg.levels, rng)
        kinds = ("random", "zeros", "ones", "lowest")
        kind_a, kind_b = kinds[n % 4], kinds[(n // 4 + n) % 4] if n >= 4 else "random"
        a = operand(rng, (m, k), cfg.input_bits, cfg.input_signed, kind_a)
        b = operand(rng, (k, nn), cfg.weight_bits, cfg.weight_signed, kind_b)
        gemms.append((a, b, s))
    return gemms


SHAPES = [(3, 10, 9), (2, 7, 13), (4, 5, 6), (1, 12, 5), (3, 9, 11), (2, 6, 8)]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "w{}i{}{}{}-{}-{}".format(
    v[0], v[1], "s" if v[2] else "u", "s" if v[3] else "u", v[4], v[5]))
def test_pim_gemms_bit_exact(variant):
    """Results, macro counters and cycle counts equal golden; no retention or VREF violation."""
    cfg = variant_config(*variant)
    rng = np.random.default_rng(sum(variant[:2]))
    simulate(PimCore(cfg), TOP_NAME, TB, gemm_params(cfg, cases(cfg, rng, SHAPES)),
             testcase="gemm")


def test_pim_random_stalls():
    """Every stream stalls at random: the results stay exact."""
    cfg = load_config("pim_small")
    rng = np.random.default_rng(7)
    simulate(PimCore(cfg), TOP_NAME, TB,
             gemm_params(cfg, cases(cfg, rng, SHAPES[:3]), stall=0.3), testcase="gemm")


@pytest.mark.parametrize("negative", ["refresh_off", "short_retention", "wrong_vref"])
def test_pim_negative_controls_are_caught(negative):
    cfg = load_config("pim_small")
    rng = np.random.default_rng(11)
    # A GEMM long enough for every row to outlive the shortest interval several times.
    gemms = cases(cfg, rng, [(6, 16, 16)])
    simulate(PimCore(cfg), TOP_NAME, TB, gemm_params(cfg, gemms, negative=negative),
             testcase="gemm")


def test_pim_run_cli_on_verilator_equals_golden(tmp_path):
    """``memwall run pim`` (the scheduler's choice, on Verilator) writes what ``memwall golden
    pim`` writes: C, the cycle count and every counter (the buffer's from the model)."""
    from memwall.cli import main

    cfg = load_config("pim_small")
    rng = np.random.default_rng(3)
    a = operand(rng, (4, 24), cfg.input_bits, cfg.input_signed)
    b = operand(rng, (24, 12), cfg.weight_bits, cfg.weight_signed)
    np.savez(tmp_path / "in.npz", a=a, b=b)
    for verb, extra in (("golden", []), ("run", ["--sim", "verilator"])):
        assert main([verb, "pim", "--config", "pim_small", "--inputs", str(tmp_path / "in.npz"),
                     "--out", str(tmp_path / f"{verb}.npz"), *extra]) == 0
    with np.load(tmp_path / "golden.npz") as want, np.load(tmp_path / "run.npz") as got:
        assert np.array_equal(got["c"], a @ b)
        assert sorted(got.files) == sorted(want.files)
        for name in want.files:
            assert np.array_equal(got[name], want[name]), name
