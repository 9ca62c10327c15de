"""G = -ln(-ln u) (golden/dplena/gumbel.py): its fixed-point arithmetic against float64 over all
2**23 inputs, and the shape of its distribution."""

from __future__ import annotations

import numpy as np
import pytest

from memwall.golden.dplena import gumbel
from memwall.golden.dplena.rng import UNIFORM_BITS


@pytest.fixture(scope="module")
def every_g():
    """G of every uniform cell, in order of u."""
    return gumbel.gumbel_fp32(np.arange(1 << UNIFORM_BITS, dtype=np.uint32))


def test_error_over_every_input_is_within_the_stated_bound(every_g):
    want = gumbel.gumbel_reference(np.arange(1 << UNIFORM_BITS))
    err = np.abs(every_g.astype(np.float64) - want)
    assert err.max() <= gumbel.MAX_ABS_ERROR
    assert err.max() > gumbel.MAX_ABS_ERROR / 4                  # the bound is not loose
    assert round(want.min(), 2) == -2.81 and round(want.max(), 2) == 16.64   # the docstring's
    part = np.arange(0, 1 << UNIFORM_BITS, 4099)
    assert gumbel.measure(part)["max_abs_error"] == err[part].max()   # what measure() reports


def test_monotone_in_u(every_g):
    assert np.all(np.diff(every_g) >= 0)


def test_the_variates_are_standard_gumbel(every_g):
    g = every_g.astype(np.float64)          # every cell of u once: the discretised law
    assert abs(g.mean() - np.euler_gamma) < 1e-4
    assert abs(g.var() - np.pi ** 2 / 6) < 1e-3


def test_out_of_range_mantissa_is_refused():
    with pytest.raises(ValueError, match="23-bit"):
        gumbel.gumbel_fp32(np.array([1 << 23]))
