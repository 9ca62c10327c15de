"""The design-space model's page cost is the RTL's: for one whole page in each mode (GEMV,
LOGIT, ATTEND with and without its emit), the plane PE's cycles on the generated Verilog
(``run_pages``, what ``memwall run kvnand --op pe`` runs) equal
``Params.from_config(cfg).mac_cycles`` exactly, and ``t_mac`` is that count at ``f_mac``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from memwall.config import load_config
from memwall.families.kvnand.config import page_kind
from memwall.golden.kvnand.systems import Params
from memwall.verif.kvnand.run import run_pages, whole_pages

pytestmark = pytest.mark.sim


def _config(name: str):
    if name == "w8a8_small":     # INT8 pages in every mode, a deeper multiplier
        return dataclasses.replace(load_config("kvnand_small"), name=name, fmt="w8a8",
                                   mul_stages=2)
    return load_config(name)


@pytest.mark.parametrize("name", ["kvnand_small", "w8a8_small", "kvnand_paper"])
def test_model_page_cost_equals_rtl_cycles(name):
    cfg = _config(name)
    p = Params.from_config(cfg)
    cases = whole_pages(cfg, np.random.default_rng(11))
    runs = run_pages(cfg, [cmd for *_, cmd in cases], seed=1)
    assert {mode for mode, *_ in cases} == {"gemv", "logit", "attend"}
    for (mode, heads, emit, cmd), run in zip(cases, runs, strict=True):
        case = f"{name} {mode} G={heads}{' emit' if emit else ''}"
        c = cmd.command
        assert c["units"] * c["width"] == cfg.page_elements(page_kind(cfg.fmt, mode)), case
        model = p.mac_cycles(cfg.fmt, mode, heads)
        if emit:
            model += p.emit_cycles(cfg.fmt, heads, c["width"])
        assert run["cycles"] == model, case
        print(f"{case}: {run['cycles']} cycles on the RTL and in the model")
        assert p.t_mac(cfg.fmt, mode, heads) == p.mac_cycles(cfg.fmt, mode, heads) / p.f_mac
        if cmd.expect is not None:       # and the page was computed, bit for bit
            assert run["results"] == cmd.expect.astype(np.uint32).tolist(), case
