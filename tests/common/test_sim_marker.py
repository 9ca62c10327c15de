"""The ``sim`` and ``tool`` marker checks of ``tests/conftest.py`` fail an unmarked test that
simulates (or runs a tool), and only that one."""

from __future__ import annotations

from memwall import paths

pytest_plugins = ("pytester",)

CONFTEST = paths.TESTS / "conftest.py"


def test_unmarked_simulation_fails(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    sim: runs a cocotb simulation\n")
    pytester.makepyfile(test_x="""
        import pytest
        from cocotb_tools.runner import Runner, get_runner

        def test_unmarked(tmp_path):
            get_runner("icarus").build(sources=[], hdl_toplevel="top", build_dir=tmp_path)

        @pytest.mark.sim
        def test_marked():
            assert Runner.build.__module__ == "cocotb_tools.runner"   # cocotb's own

        def test_unrelated():
            assert Runner.build.__module__ != "cocotb_tools.runner"   # the check's
        """)
    # A subprocess: in this process the check already wraps Runner for this (unmarked) test.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_x.py::test_unmarked runs a cocotb simulation "
                                 "(Runner.build) without the `sim` marker*"])


def test_unmarked_tool_run_fails(pytester):
    """The ``tool`` marker: an unmarked test that starts OpenSTA (here a stand-in named
    ``sta``) fails before the program runs; a marked one runs it; other programs run."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\nmarkers =\n    sim: s\n    tool: t\n")
    pytester.makepyfile(test_t="""
        import os, stat, subprocess, pytest

        def stand_in(tmp_path):
            sta = tmp_path / "sta"
            sta.write_text("#!/bin/sh\\nexit 0\\n")
            sta.chmod(sta.stat().st_mode | stat.S_IXUSR)
            return str(sta)

        def test_unmarked(tmp_path):
            subprocess.run([stand_in(tmp_path), "-exit"])

        @pytest.mark.tool
        def test_marked(tmp_path):
            assert subprocess.run([stand_in(tmp_path), "-exit"]).returncode == 0

        def test_unrelated():
            assert subprocess.run(["true"]).returncode == 0
        """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_t.py::test_unmarked runs sta without the `tool` "
                                 "marker*"])
