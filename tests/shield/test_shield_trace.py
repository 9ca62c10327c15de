"""SHIELD trace format: the example trace loads; bad traces give errors naming step and key."""

import pytest

from memwall.config import load_config
from memwall.golden.shield.trace import CLASSES, TraceError, load_trace, parse_trace

CFG = load_config("shield_small")
TRACE = "configs/traces/shield_small.yaml"


def test_example_trace_loads():
    trace = load_trace(TRACE, CFG)
    ops = [s.op for s in trace.steps]
    assert ops.count("release") == 4               # four layers, each releasing QO
    assert trace.seed == 1
    # accesses at one word per cycle plus idle time at clock_mhz cycles per µs
    words = sum(s.words for s in trace.steps if s.op in ("read", "write"))
    idle = sum(round(s.us * CFG.clock_mhz) for s in trace.steps if s.op == "idle")
    assert trace.cycles(CFG.clock_mhz) == words + idle


def test_repeat_expands_in_order():
    raw = {"steps": [{"op": "repeat", "times": 2, "steps": [
        {"op": "write", "class": "qo", "addr": 0, "words": 2},
        {"op": "release", "class": "qo"}]}]}
    steps = parse_trace(raw, "t", CFG).steps
    assert [(s.op, s.cls) for s in steps] == [("write", "qo"), ("release", "qo")] * 2


@pytest.mark.parametrize("raw, words", [
    ({"steps": [{"op": "jump"}]}, ["steps[0]", "op", "write, read, idle, release, repeat"]),
    ({"steps": [{"op": "write", "class": "kv", "addr": 0}]}, ["steps[0]", "missing key(s) words"]),
    ({"steps": [{"op": "write", "class": "kv", "addr": 0, "words": 1, "x": 1}]},
     ["unknown key(s) x"]),
    ({"steps": [{"op": "write", "class": "xy", "addr": 0, "words": 1}]},
     ["class", "kv or qo"]),
    ({"steps": [{"op": "write", "class": "kv", "addr": 60, "words": 10}]},
     ["words", "[1, 4]"]),                               # kv_words = 64: 60 + 10 overflows
    ({"steps": [{"op": "write", "class": "kv", "addr": -1, "words": 1}]}, ["addr", "[0, 63]"]),
    ({"steps": [{"op": "idle", "us": -5}]}, ["us", "[0, 1e7]"]),
    ({"steps": [{"op": "read", "class": "qo", "addr": 0, "words": 1}]},
     ["reads qo words 0..0", "written"]),
    ({"steps": [{"op": "write", "class": "qo", "addr": 0, "words": 1},
                {"op": "release", "class": "qo"},
                {"op": "read", "class": "qo", "addr": 0, "words": 1}]}, ["steps[2]", "release"]),
    ({"steps": [], "extra": 1}, ["unknown key(s) extra", "steps, seed"]),
    ({"seed": 1}, ["missing key(s) steps"]),
    ([1, 2], ["expected a mapping"]),
    ({"steps": [{"op": "repeat", "times": 1.5, "steps": []}]}, ["times", "integer"]),
])
def test_bad_traces_name_step_and_key(raw, words):
    with pytest.raises(TraceError) as info:
        parse_trace(raw, "bad.yaml", CFG)
    message = str(info.value)
    assert message.startswith("bad.yaml")
    for word in words:
        assert word in message, (word, message)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(TraceError, match="does not exist"):
        load_trace(tmp_path / "none.yaml", CFG)
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [\n")
    with pytest.raises(TraceError, match="not valid YAML"):
        load_trace(bad, CFG)


def test_classes():
    assert CLASSES == ("kv", "qo")
