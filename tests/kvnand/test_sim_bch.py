"""The KVNAND BCH encoder on its generated Verilog (cocotb, Icarus): codeword streams against
:func:`memwall.golden.kvnand.bch.encode` at p = 8, 32 and 64 bits a cycle, without stalls (one
word per cycle) and with random stalls on both streams (:mod:`memwall.verif.kvnand.tb_bch`)."""

from __future__ import annotations

import pytest

from memwall.hdl.kvnand.bch import BchEncoder
from memwall.verif.common.runner import simulate

TB = "memwall.verif.kvnand.tb_bch"


@pytest.mark.sim
@pytest.mark.parametrize("p", [8, 32, 64])
def test_bch_encoder(p):
    enc = BchEncoder(p)
    simulate(enc, f"kvnand_bch_p{p}", TB, {**enc.params})


@pytest.mark.sim
def test_bch_encoder_bit_serial():
    """p = 1: 9088 cycles a codeword, so two codewords (a random one, a single 1) and no
    stalls (the stall handling is the same logic as for p = 8 and 64)."""
    enc = BchEncoder(1)
    simulate(enc, "kvnand_bch_p1", TB, {**enc.params, "messages": ["random", "single"]},
             testcase="streaming")


@pytest.mark.parametrize("p", [0, 3, 96, 256, 8.0])
def test_bch_encoder_rejects_word_widths(p):
    with pytest.raises(ValueError, match=r"p must divide both 8192 and 896"):
        BchEncoder(p)
