# amaranth: UnusedElaboratable=no
"""The rDXE VAC's ports follow its parameters (elaboration only; its behaviour is checked on the
generated Verilog by tests/rdxe/test_sim_rdxe_units.py)."""

from __future__ import annotations

import pytest

from memwall.hdl.rdxe.vac import Vac


@pytest.mark.parametrize("lanes, wmem, kv", [(16, 256, 128), (4, 8, 1024)])
def test_ports_follow_the_parameters(lanes, wmem, kv):
    dut = Vac(lanes, wmem, kv)
    assert len(dut.kv_data) == 8 * lanes and len(dut.kv_addr) == (kv - 1).bit_length()
    assert len(dut.wmem_addr) == (wmem - 1).bit_length()
