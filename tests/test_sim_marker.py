"""The ``sim`` marker check of ``tests/conftest.py`` fails an unmarked simulating test, and only
that one."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ("pytester",)

CONFTEST = Path(__file__).with_name("conftest.py")


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
