"""memwall.workload_power: powering a synthesised config under other workloads."""

import json

import pytest

from memwall.flows.provenance import current_design, flow_version
from memwall.workload_power import NotSynthesised, power_under


def _synthesis(tmp_path, config: str, provenance: dict):
    synth = tmp_path / config / "synth" / "asap7"
    synth.mkdir(parents=True)
    (synth / "metrics.json").write_text(json.dumps({"provenance": provenance}))


def test_no_synthesis_is_refused(tmp_path):
    with pytest.raises(NotSynthesised, match="run `memwall synth shield_small --pdk asap7`"):
        power_under("shield_small", "asap7", {}, build_root=tmp_path)


@pytest.mark.parametrize("change, why", [({"flow_version": "cd" * 32}, "flow cdcdcdcdcd"),
                                         ({"rtl_sha256": "ab" * 32}, "RTL abababab")])
def test_a_stale_synthesis_is_refused(tmp_path, change, why):
    """The runs re-use the synthesis's netlists: one of another flow (a calibration fitted to
    a flow no longer run) or RTL is refused before anything is simulated."""
    current = current_design("shield_small")
    _synthesis(tmp_path, "shield_small", {**current, "flow_version": flow_version(), **change})
    with pytest.raises(NotSynthesised, match="stale") as exc:
        power_under("shield_small", "asap7", {}, build_root=tmp_path)
    assert why in str(exc.value)
    assert not (tmp_path / "shield_small" / "workload_power").exists()
