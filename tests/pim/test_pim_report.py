"""The PIM report's own arithmetic (its figures are checked against the generator in
tests/common/test_docs_figures.py)."""

import pytest

from memwall.config import load_config
from memwall.families.pim import report
from memwall.golden.pim.closed_form import evaluate
from memwall.golden.pim.mapping import Schedule


@pytest.mark.parametrize("gating", [True, False])
@pytest.mark.parametrize("n", [3, 8])        # 3: fields past the tile's n are padding
def test_energy_at_another_density_equals_the_run_evaluated_there(gating, n):
    cfg = load_config("pim_small")
    s = Schedule(2, 8, n, 2, 8, n, "mkn", 1)
    bits = 2 * 8 * cfg.input_bits
    measured = evaluate(cfg, s, ones=0.2 * bits, gating=gating)
    at_half = evaluate(cfg, s, ones=0.5 * bits, gating=gating)
    assert report._at_density(cfg, measured, 0.5) == pytest.approx(
        float(at_half["energy"]["total"]), rel=1e-12)
