"""reports/dplena/agreement.{md,json}: the per-format decision agreement, as its generator writes
it; one trial recomputed, the page re-rendered from the json."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from memwall import paths
from memwall.families.dplena import agreement

FOLDER = paths.REPORTS / "dplena"


@pytest.fixture(scope="module")
def stored():
    return json.loads((FOLDER / "agreement.json").read_text())


def test_the_page_is_rendered_from_the_json(stored):
    assert (FOLDER / "agreement.md").read_text() == agreement.render(stored)


def test_a_trial_recomputes(stored):
    got = agreement.trial(0)
    want = stored["trials"][0]
    assert got["formats"] == want["formats"]
    assert np.allclose(got["entropy_nats"], want["entropy_nats"], rtol=0, atol=1e-6)


def test_the_summary_is_the_trials(stored):
    trials, length = stored["workload"]["trials"], stored["workload"]["block_len"]
    assert len(stored["trials"]) == trials
    for fmt, s in stored["summary"].items():
        x0 = sum(sum(t["formats"][fmt]["x0_agree"]) for t in stored["trials"])
        steps = sum(t["formats"][fmt]["step_agree"] for t in stored["trials"])
        assert s["x0_agree"] == x0 / (trials * length)
        assert s["step_agree"] == steps / trials
        assert s["x0_interval"][0] <= s["x0_agree"] <= s["x0_interval"][1]


def test_the_distribution_spans_confident_and_unsure_positions(stored):
    q = stored["entropy_nats_quantiles"]
    assert q["0.1"] < agreement.CONFIDENT_NATS < q["0.5"] < q["0.9"] < math.log(126464)
    z = agreement.logits(3)
    assert z.shape == (1, 32, 126464) and z.dtype == np.float32
    assert np.array_equal(z, agreement.logits(3))        # seeded


def test_wilson_interval():
    lo, hi = agreement._wilson(8, 10)
    assert lo == pytest.approx(0.4901624, abs=1e-6) and hi == pytest.approx(0.9433178, abs=1e-6)
    assert agreement._wilson(0, 5)[0] == pytest.approx(0.0, abs=1e-12)


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert agreement.main(["--trials", "0", "--out", str(tmp_path)]) == 2
    assert "--trials" in capsys.readouterr().err and not list(tmp_path.iterdir())
