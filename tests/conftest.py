"""Every test that runs a cocotb simulation carries the ``sim`` marker (``-m "not sim"`` then
skips every simulation, and nothing else).

Checked where simulations start: cocotb's ``Runner.build``/``Runner.test`` (what
``memwall.verif.common.runner.simulate`` and everything above it, ``run_core``, ``run_trace``,
the power workloads, call). An unmarked test fails there, before anything is compiled.
"""

from __future__ import annotations

import pytest

SIM_MARKER = "sim"


@pytest.fixture(autouse=True)
def _simulations_need_the_sim_marker(request, monkeypatch):
    if request.node.get_closest_marker(SIM_MARKER) is not None:
        yield
        return
    try:
        from cocotb_tools.runner import Runner
    except ImportError:   # no cocotb: nothing here can simulate
        yield
        return
    for name in ("build", "test"):
        def refuse(self, *args, _name=name, **kwargs):
            pytest.fail(f"{request.node.nodeid} runs a cocotb simulation (Runner.{_name}) "
                        f"without the `{SIM_MARKER}` marker: add @pytest.mark.{SIM_MARKER} "
                        f"(or a module-level pytestmark)", pytrace=False)
        monkeypatch.setattr(Runner, name, refuse)
    yield
