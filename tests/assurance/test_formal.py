"""``memwall prove``: the SymbiYosys runner (memwall/formal.py) proves a property that holds,
finds the counterexample of one that does not (its VCD kept), runs the families' fast proofs,
and the CLI refuses a property the config does not have."""

from __future__ import annotations

from pathlib import Path

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import Out

from memwall.cli import main
from memwall.formal import run_property, stream_protocol
from memwall.hdl.kvnand.kvbuf import KvWriteBuffer


class DropsValid(wiring.Component):
    """A source that lowers ``valid`` on its own, whatever ``ready``: breaks the protocol."""

    def __init__(self):
        super().__init__({"o": Out(stream.Signature(4))})

    def elaborate(self, platform):
        m = Module()
        toggle = Signal()
        m.d.sync += toggle.eq(~toggle)
        m.d.comb += [self.o.valid.eq(toggle), self.o.payload.eq(3)]
        return m


@pytest.mark.tool
def test_protocol_violation_gives_a_counterexample(tmp_path):
    r = run_property(stream_protocol("drops_valid", DropsValid, "negative control", depth=5),
                     tmp_path / "neg")
    assert r["status"] == "fail" and Path(r["trace"]).suffix == ".vcd"
    assert Path(r["trace"]).is_file()


@pytest.mark.tool
def test_kv_buffer_streams_proved_by_induction(tmp_path):
    r = run_property(stream_protocol(
        "kvbuf_small", lambda: KvWriteBuffer(2, 64, 16, 4, 4), "2 slots of 64 B", depth=8),
        tmp_path / "kvbuf")
    assert r["status"] == "proved", r


def test_cli_refuses_unknown_properties(capsys):
    assert main(["prove", "kvnand_small", "--only", "no_such_property"]) == 2
    err = capsys.readouterr().err
    assert "no_such_property" in err and "kvnand_pe_streams" in err


def test_fast_family_proofs(capsys):
    """The families' fast proofs through ``memwall prove`` (k-induction, seconds each); the
    long ones (the top-k mask, the rDXE group) are ``make prove``'s, SHIELD's are in
    tests/shield/test_formal_shield.py."""
    assert main(["prove", "dplena32", "--only", "dplena_topk_streams", "--workers", "1"]) == 0
    assert main(["prove", "pim_small", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("proved") == 2
