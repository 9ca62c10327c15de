"""A Vector SRAM bank of dplena32 and its write arbiter through the Verilog flow
(``verif/dplena/tb_vector_sram.py``): the bank against a model of its rows, the arbiter against
its rule. In the core the stage row fills only the lanes of the block length, and a bank's
writes and the arbiter's stalls are seen only through programs; this drives every port bit."""

import pytest

from memwall.config import load_config
from memwall.hdl.dplena.core import VectorSramBank, VectorSramWriteArbiter
from memwall.verif.common.runner import simulate

pytestmark = pytest.mark.sim


def test_vector_sram_bank_at_regression_config():
    cfg = load_config("dplena32")
    simulate(VectorSramBank(cfg.bank_lanes, cfg.vector_sram_rows), "vector_sram_bank",
             "memwall.verif.dplena.tb_vector_sram",
             {"lanes": cfg.bank_lanes, "rows": cfg.vector_sram_rows},
             testcase="rows_match_the_model")


def test_vector_sram_arbiter_at_regression_config():
    cfg = load_config("dplena32")
    row_bits = cfg.vector_sram_rows.bit_length() - 1
    simulate(VectorSramWriteArbiter(cfg.banks, row_bits), "vector_sram_bank_arbiter",
             "memwall.verif.dplena.tb_vector_sram", {"banks": cfg.banks, "row_bits": row_bits},
             testcase="arbiter_rule")
