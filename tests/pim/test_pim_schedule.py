"""The PIM scheduler (:mod:`memwall.golden.pim.schedule`): its closed-form counts equal the event
simulator's counter for counter; its search, the baselines and its work bound. That the search
is the minimum over the whole space is checked in test_pim_search.py."""

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
            assert pim.cycles_of(sim["counters"]) == sim["cycles"], (s, mode)   # the logic's
            refreshed += sim["refreshes"] > 0
        assert ps.peak_psum_closed_form(s) == pim.peak_psum_words(s)
    assert refreshed >= 6, "too few schedules refresh: the check would not test the bursts"


def test_peak_psum_closed_form_every_order():
    for order, tm, tk, tn in itertools.product(ORDERS, (1, 2, 3), (1, 2, 5), (1, 3, 4)):
        s = Schedule(3, 7, 8, tm, tk, tn, order)
        assert ps.peak_psum_closed_form(s) == pim.peak_psum_words(s), s


def test_search_prunes_and_is_deterministic():
    cfg = CONFIGS[0]
    first, second = ps.search(cfg, 4, 30, 24), ps.search(cfg, 4, 30, 24)
    assert first["schedule"] == second["schedule"]
    assert first["walked"] <= first["evaluated"] < first["classes"] < first["searched"]


@pytest.mark.parametrize("index", [0, 1, 3])
def test_ablation_never_increases_and_baselines(index):
    cfg = CONFIGS[index]
    result = ps.compare(cfg, 3, 24, 20)
    energies = [e["energy"]["total"] for _, e in result["ablation"]]
    assert energies == sorted(energies, reverse=True)
    base = result["edram_baseline"]
    assert base["schedule"].vpd == 0 and base["refresh"] == "all" and not base["gating"]
    assert base["counters"]["sa_on"] == cfg.width * base["counters"]["activations"]
    cache = result["neural_cache"]
    assert cache is None or result["vs_neural_cache"] == pytest.approx(
        cache["energy"]["total"] / energies[-1])
    assert result["vs_edram"] == pytest.approx(energies[0] / energies[-1])
    text = ps.format_report(result)
    assert f"tm={result['proposed']['schedule'].tm}" in text
    assert ps.as_json(result)["ratios"]["vs_edram"] == result["vs_edram"]


def test_no_fitting_schedule_is_an_error():
    # One partial sum, and no room for a tile of inputs beside it.
    cfg = config(buffer_kib=config().acc_bits / 8192)
    with pytest.raises(ps.NoSchedule, match="no schedule"):
        ps.search(cfg, 4, 30, 24)


def test_the_search_bound_refuses_before_the_work_it_bounds():
    cfg = CONFIGS[0]
    with pytest.raises(ps.SearchTooLarge, match=r"walks 7,272 classes .* of its up to "
                                                r"[0-9,]+ candidates, past its bound of 10 "):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(candidates=10))
    with pytest.raises(ps.SearchTooLarge, match="steps, past its bound of 5 for one"):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(eval_steps=5))
    with pytest.raises(ps.SearchTooLarge, match=r"passed its bound of 2,000 steps after 3 "):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(search_steps=2000))
    # Listing and bounding members is charged too: a class whose members are all dropped by
    # their own bound still spends the budget.
    with pytest.raises(ps.SearchTooLarge, match=r"passed its bound of 30 steps after 0 "):
        ps.search(cfg, 4, 30, 24, bound=ps.SearchBound(search_steps=30))
