"""Metric gates (like ORFS rules-base.json): the flow on small configs must not regress.

``flows/gates.json`` holds, per ``<config>/<pdk>``, the committed area and power, and WNS where
timing is met, with a tolerance each. Area and power may not grow beyond their tolerance, WNS
may not get worse (and met timing must stay met); a change that improves a figure by more than
the tolerance also fails, so the committed values are updated with it (``python -m
memwall.flows.gates`` rewrites them from build/). A failing slack is never an expected value: a
gate whose timing was not met records ``measured_wns_ns`` as information only, and this test
does not assert it.
"""

import json
import math
from pathlib import Path

import pytest

from memwall import paths
from memwall.flows.errors import PdkError
from memwall.flows.flow import run_flow
from memwall.flows.pdk import find_pdk

pytestmark = pytest.mark.tool   # every test here runs Yosys, OpenSTA or SymbiYosys

GATES = json.loads((paths.REPO / "flows" / "gates.json").read_text())
#: Share of a gate's registers allowed to miss their VCD signal (none of dplena32's 4,794 or
#: shield_small's 141 on any PDK; before synthesis recorded register names, 3,878 of
#: dplena32's on ASAP7)
MAX_DEFAULTED_REGISTERS = 0.01


#: Gates whose whole flow ``make test`` leaves to ``make test-slow`` (pytest marker ``slow``):
#: dplena32 on sky130hd is a 5-minute flow, and ``make test`` keeps sky130hd's flow gated on
#: shield_small/sky130hd and its synthesis of dplena32 in tests/flows/test_flow_synth.py.
SLOW_GATES = {"dplena32/sky130hd"}


@pytest.mark.sim
@pytest.mark.parametrize("key", [pytest.param(key, marks=pytest.mark.slow) if key in SLOW_GATES
                                 else key for key in sorted(GATES["gates"])])
def test_flow_metrics_within_gates(tmp_path, key):
    """One test per gate, so that the gates run on separate workers (each runs its own
    power-workload simulation; the simulator builds are shared through build/sim)."""
    try:
        find_pdk(key.split("/")[1], cache_root=tmp_path / "pdk")
    except PdkError as exc:   # no ../shared/pdk beside this checkout
        pytest.skip(str(exc))
    _check_gate(key, tmp_path)


#: Gates whose flow also times the design flat: tests/flows/test_flow_sta_boundary.py's check
#: that hierarchical timing agrees with flat runs on this flow's metrics instead of a second
#: flow of the same config (one synthesis, power simulation and STA of dplena32 fewer).
FLAT_GATES = {"dplena32/asap7"}


def _check_gate(key: str, build_root: Path) -> None:
    config, pdk = key.split("/")
    gate = GATES["gates"][key]
    tol = GATES["tolerance"]
    metrics = run_flow(config, pdk, build_root=build_root, flat_sta=key in FLAT_GATES)
    if key in FLAT_GATES:
        from test_flow_sta_boundary import assert_hierarchical_agrees_with_flat

        assert_hierarchical_agrees_with_flat(metrics)

    area, power, wns = metrics["area_um2"], metrics["power_mw"]["total"], metrics["wns_ns"]
    assert area <= gate["area_um2"] * (1 + tol["area"]), f"{key}: area grew to {area:.1f} um2"
    assert area >= gate["area_um2"] * (1 - tol["area"]), \
        f"{key}: area fell to {area:.1f} um2: update flows/gates.json"
    assert power <= gate["power_mw"] * (1 + tol["power"]), f"{key}: power grew to {power:.3f}"
    assert power >= gate["power_mw"] * (1 - tol["power"]), \
        f"{key}: power fell to {power:.3f} mW: update flows/gates.json"
    if "wns_ns" in gate:   # timing met when recorded: the slack may not shrink
        assert gate["wns_ns"] >= 0, f"{key}: a negative WNS is pinned as expected value"
        assert wns is not None and wns >= gate["wns_ns"] - tol["wns_ns"], \
            f"{key}: WNS worsened to {wns} ns"
        assert wns >= 0, f"{key}: timing was met and no longer is (WNS {wns} ns)"
        assert wns <= gate["wns_ns"] + tol["wns_ns"], \
            f"{key}: WNS improved to {wns:.3f} ns: update flows/gates.json"
    else:   # not met yet: the real signed slack is reported, but not gated
        assert "measured_wns_ns" in gate, f"{key}: neither wns_ns nor measured_wns_ns"
        assert wns is None or math.isfinite(wns)
    # Registers take their activity from the VCD by name, on every PDK (ASAP7's QN-only
    # flip-flops lose their names in mapping; synthesis records them before it): at most
    # MAX_DEFAULTED_REGISTERS of them miss.
    counts = [m.get("annotated", {}) for m in metrics["power_by_module"].values()]
    annotated = sum(c.get("registers annotated", 0) for c in counts)
    defaulted = sum(c.get("registers defaulted", 0) for c in counts)
    assert defaulted <= MAX_DEFAULTED_REGISTERS * (annotated + defaulted), \
        f"{key}: {defaulted} of {annotated + defaulted} registers not matched to the VCD"
    # Power from the family's simulated workload (d-PLENA: the core itself), never the default.
    assert metrics["activity_source"].endswith("in OpenSTA") and \
        "Verilator VCD" in metrics["activity_source"], metrics["activity_source"]
