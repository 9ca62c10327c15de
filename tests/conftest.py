"""Every test that runs a cocotb simulation carries the ``sim`` marker (``-m "not sim"`` then
skips every simulation, and nothing else). The longest tests are collected first
(:data:`LONGEST_FIRST`), so ``make test``'s workers start them at once and share out the rest
(``--dist worksteal``) instead of finishing on one long tail.

Checked where simulations start: cocotb's ``Runner.build``/``Runner.test`` (what
``memwall.verif.common.runner.simulate`` and everything above it, ``run_core``, ``run_trace``,
the power workloads, call). An unmarked test fails there, before anything is compiled.
"""

from __future__ import annotations

import pytest

SIM_MARKER = "sim"

#: Node-id prefixes of the longest tests (minutes each; `pytest --durations=15`), longest first.
LONGEST_FIRST = (
    "tests/test_flow_gates.py",
    "tests/test_sim_core.py",
    "tests/test_flow_synth.py",
    "tests/test_families.py::test_tiny_family_synth_and_report",
    "tests/test_flow_sta_boundary.py",
)


def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        for n, prefix in enumerate(LONGEST_FIRST):
            if item.nodeid.startswith(prefix):
                return n
        return len(LONGEST_FIRST)

    items.sort(key=rank)   # stable: the rest keep their order


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
