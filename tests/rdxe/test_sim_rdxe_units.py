"""rDXE units on their generated Verilog (cocotb): the VAC and the vector engine against the
golden model, one scenario per test (small: 4 lanes, 64-word memories)."""

from __future__ import annotations

import pytest

from memwall.hdl.rdxe.vac import Vac
from memwall.hdl.rdxe.ve import VectorEngine
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim   # every test here runs a cocotb simulation

TB_VAC = "memwall.verif.rdxe.tb_vac"
TB_VE = "memwall.verif.rdxe.tb_ve"
LANES, WORDS = 4, 64


@pytest.mark.parametrize("testcase", ["gemv_rows", "pv_column", "pv_gather", "rc_wait_and_rows"])
def test_vac(testcase):
    vac = Vac(LANES, WORDS, WORDS)
    simulate(vac, "rdxe_vac", TB_VAC, vac.params, testcase=testcase)


def test_vac_without_kv_cache_reads_vlink():
    vac = Vac(LANES, WORDS, WORDS, kv=False)
    simulate(vac, "rdxe_vac_link", TB_VAC, vac.params, testcase="pv_vlink")


@pytest.mark.parametrize("sequential", [True, False], ids=["sequential", "fused_only"])
def test_vector_engine(sequential):
    ve = VectorEngine(LANES, sequential=sequential)
    simulate(ve, "rdxe_ve" if sequential else "rdxe_ve_fused", TB_VE, ve.params,
             testcase="statistics_and_rc")
