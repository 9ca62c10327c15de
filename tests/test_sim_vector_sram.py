"""A Vector SRAM bank of dplena32 through the Verilog flow, against a model of its rows
(``verif/dplena/tb_vector_sram.py``). In the core the stage row fills only the lanes of the
block length, and a bank's writes are seen only through programs; this drives every port bit."""

import pytest
from memwall.hdl.dplena.core import VectorSramBank
from memwall.verif.common.runner import simulate

from memwall.config import load_config

pytestmark = pytest.mark.sim


def test_vector_sram_bank_at_regression_config():
    cfg = load_config("dplena32")
    simulate(VectorSramBank(cfg.bank_lanes, cfg.vector_sram_rows), "vector_sram_bank",
             "memwall.verif.dplena.tb_vector_sram",
             {"lanes": cfg.bank_lanes, "rows": cfg.vector_sram_rows})
