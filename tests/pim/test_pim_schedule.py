"""The PIM scheduler (:mod:`memwall.golden.pim.schedule`): its closed-form counts equal the event
simulator's counter for counter, and its pruned search equals an exhaustive search over the
event simulator on small spaces (the proof of optimality the issue asks for)."""

import itertools

import numpy as np
import pytest
from test_golden_pim import PAIRS, config, operand

from memwall.families.pim.config import ORDERS
from memwall.golden.pim import macro as pim
from memwall.golden.pim import schedule as ps
from memwall.golden.pim.macro import Schedule


def random_schedule(cfg, rng, M, K, N):
    for _ in range(200):
        s = Schedule(M, K, N, *(int(rng.integers(1, d + 1)) for d in (M, K, N)),
                     ORDERS[int(rng.integers(len(ORDERS)))], int(rng.integers(cfg.levels)))
        if not pim.fit_problems(cfg, s, buffer=False):
            return s
    raise AssertionError("no fitting schedule")


#: Tight intervals (refresh interval just above the rows), so races in the final sweep occur.
def tight(processing, operation, rows, margin, ib):
    table = [{"name": "a", "vpd_mv": 0, "rbl_swing_mv": 400, "vref_mv": 600,
              "retention_us": (rows + margin + 3) / 2, "e_access_pj": 1.0, "e_sense_pj": 0.01}]
    return config(rows=rows, cols=16, subarrays=1, processing=processing, operation=operation,
                  weight_bits=3, input_bits=ib, refresh_margin_cycles=margin, buffer_row_words=4,
                  buffer_retention_us=10, macro_table=table)


CONFIGS = [config(processing=p, operation=o, weight_bits=wb, input_bits=ib)
           for (p, o), (wb, ib) in zip(PAIRS, [(8, 8), (3, 5), (4, 2), (2, 7)], strict=True)] \
    + [tight("bit_parallel", "row_wise", 16, 0, 2), tight("bit_serial", "dot_product", 12, 5, 3),
       tight("bit_parallel", "dot_product", 30, 1, 8), tight("bit_serial", "row_wise", 40, 3, 2)]


@pytest.mark.parametrize("index", range(len(CONFIGS)))
def test_closed_form_counts_equal_the_event_simulator(index):
    """Every counter and the cycle count, in all three refresh modes, for random schedules."""
    cfg = CONFIGS[index]
    rng = np.random.default_rng(index)
    refreshed = 0
    for _ in range(12):
        M, K, N = int(rng.integers(1, 7)), int(rng.integers(1, 30)), int(rng.integers(1, 30))
        s = random_schedule(cfg, rng, M, K, N)
        a = operand(rng, (M, K), cfg.input_bits, cfg.input_signed)
        b = operand(rng, (K, N), cfg.weight_bits, cfg.weight_signed)
        for mode in pim.REFRESH_MODES:
            sim = pim.simulate(cfg, a, b, s, refresh=mode)
            got = ps.counts(cfg, s, ones=pim.input_ones(cfg, a), refresh=mode)
            for key, value in sim["counters"].items():
                assert got[key] == value, (s, mode, key)
            assert got["cycles"] == sim["cycles"], (s, mode)
            refreshed += sim["refreshes"] > 0
        assert ps.peak_psum_closed_form(s) == pim.peak_psum_words(s)
    assert refreshed >= 6, "too few schedules refresh: the check would not test the bursts"


def test_peak_psum_closed_form_every_order():
    for order, tm, tk, tn in itertools.product(ORDERS, (1, 2, 3), (1, 2, 5), (1, 3, 4)):
        s = Schedule(3, 7, 8, tm, tk, tn, order)
        assert ps.peak_psum_closed_form(s) == pim.peak_psum_words(s), s


def exhaustive_by_simulation(cfg, a, b):
    """Minimum (energy, cycles, order, tm, tk, tn, vpd) over every schedule of the space that
    fits (pim.fits, the mapping's rules), each simulated event by event. No pruning."""
    M, K, N = a.shape[0], a.shape[1], b.shape[1]
    best = None
    for order, tm, tk, tn, vpd in itertools.product(
            ORDERS, ps.tile_sizes(M), ps.tile_sizes(K, None if cfg.row_wise else cfg.fields),
            ps.tile_sizes(N, cfg.fields if cfg.row_wise else None), range(cfg.levels)):
        s = Schedule(M, K, N, tm, tk, tn, order, vpd)
        if not pim.fits(cfg, s):
            continue
        run = pim.simulate(cfg, a, b, s)
        key = (pim.energy(cfg, run)["total"], run["cycles"], s.order_code, tm, tk, tn, vpd)
        best = key if best is None or key < best else best
    return best


PROOF_CASES = [(0, (2, 8, 10)), (1, (2, 8, 5)), (2, (4, 6, 7)), (3, (2, 11, 6)),
               (4, (3, 10, 12)), (5, (2, 7, 9))]


@pytest.mark.parametrize("index,shape", PROOF_CASES)
def test_search_is_optimal_against_exhaustive_simulation(index, shape):
    cfg = CONFIGS[index]
    rng = np.random.default_rng(100 + index)
    M, K, N = shape
    a = operand(rng, (M, K), cfg.input_bits, cfg.input_signed)
    b = operand(rng, (K, N), cfg.weight_bits, cfg.weight_signed)
    found = ps.search(cfg, M, K, N, ones=pim.input_ones(cfg, a))
    s = found["schedule"]
    key = (found["energy"]["total"], found["cycles"], s.order_code, s.tm, s.tk, s.tn, s.vpd)
    assert key == exhaustive_by_simulation(cfg, a, b)
    assert found["evaluated"] <= found["searched"]


def test_search_prunes_and_is_deterministic():
    cfg = CONFIGS[0]
    first, second = ps.search(cfg, 4, 30, 24), ps.search(cfg, 4, 30, 24)
    assert first["schedule"] == second["schedule"]
    assert first["evaluated"] < first["searched"]


@pytest.mark.parametrize("index", [0, 1, 3])
def test_ablation_never_increases_and_baselines(index):
    cfg = CONFIGS[index]
    result = ps.compare(cfg, 3, 24, 20)
    energies = [e["energy"]["total"] for _, e in result["ablation"]]
    assert energies == sorted(energies, reverse=True)
    base = result["edram_baseline"]
    assert base["schedule"].vpd == 0 and base["refresh"] == "all" and not base["gating"]
    assert base["counters"]["sa_on"] == cfg.width * base["counters"]["activations"]
    assert result["sram_energy"]["pim_refresh"] == 0 == result["sram_energy"]["buffer_refresh"]
    assert result["vs_edram"] == pytest.approx(energies[0] / energies[-1])
    text = ps.format_report(result)
    assert f"tm={result['proposed']['schedule'].tm}" in text
    assert ps.as_json(result)["ratios"]["vs_edram"] == result["vs_edram"]


def test_no_fitting_schedule_is_an_error():
    # One partial sum, and no room for a tile of inputs beside it.
    cfg = config(buffer_kib=config().acc_bits / 8192)
    with pytest.raises(ps.NoSchedule, match="no schedule"):
        ps.search(cfg, 4, 30, 24)


def test_the_search_walks_pools_to_the_same_optimum(monkeypatch):
    """The search keeps about CHUNK candidates at a time; pools of 7 (dozens of passes) find
    the schedule, the candidates and the evaluations of one pool holding them all."""
    cfg = CONFIGS[0]
    whole = ps.search(cfg, 4, 30, 24)
    monkeypatch.setattr(ps, "CHUNK", 7)
    pooled = ps.search(cfg, 4, 30, 24)
    assert ps.run_json(pooled) == ps.run_json(whole)
    assert (pooled["searched"], pooled["evaluated"]) == (whole["searched"], whole["evaluated"])


def test_the_search_bound_refuses_before_the_work_it_bounds():
    cfg = CONFIGS[0]
    with pytest.raises(ps.SearchTooLarge, match="candidates, past its bound of 10"):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(candidates=10))
    with pytest.raises(ps.SearchTooLarge, match="steps, past its bound of 5 for one"):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(eval_steps=5))
    with pytest.raises(ps.SearchTooLarge, match=r"passed its bound of 2,000 steps after 3 "):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(search_steps=2000))
