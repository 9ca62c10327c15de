# amaranth: UnusedElaboratable=no
"""Dequantiser (MXFP8/BF16 -> Vector SRAM writes) simulated through the shared cocotb runner."""

import pytest
from amaranth.utils import exact_log2

from memwall.config import load_config
from memwall.hdl.dplena.dequant import DequantControl, Dequantiser
from memwall.verif.common.runner import simulate

TB = "memwall.verif.dplena.tb_dequant"
TOP = "mx_dequantiser"


def _params(vlen, beat_bytes, row_bits, **extra):
    return {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits, **extra}


@pytest.mark.sim
def test_exhaustive_lanes():
    # W = 64 lanes: all 2**16 (element, scale) pairs are 1024 writes.
    simulate(Dequantiser(128, 64, 6), TOP, TB, _params(128, 64, 6), testcase="exhaustive_lanes")


@pytest.mark.sim
@pytest.mark.parametrize("vlen, beat_bytes, row_bits", [(128, 64, 6), (64, 64, 3),
                                                        (256, 32, 4)])
def test_random_stream(vlen, beat_bytes, row_bits):
    simulate(Dequantiser(vlen, beat_bytes, row_bits), TOP, TB,
             _params(vlen, beat_bytes, row_bits), testcase="random_stream")


@pytest.mark.sim
def test_random_stream_at_regression_config():
    """The dequantiser as dplena32 builds it: the modules the mutation run scores, checked in
    seconds instead of through a whole core step."""
    cfg = load_config("dplena32")
    row_bits = exact_log2(cfg.vector_sram_rows)
    simulate(Dequantiser(cfg.vlen, cfg.hbm_bytes_per_cycle, row_bits), TOP, TB,
             _params(cfg.vlen, cfg.hbm_bytes_per_cycle, row_bits), testcase="random_stream")


@pytest.mark.sim
def test_random_stream_verilator():
    simulate(Dequantiser(128, 32, 5), TOP, TB, _params(128, 32, 5, prefetches=24),
             testcase="random_stream", sim="verilator")


@pytest.mark.parametrize("cls", [Dequantiser, DequantControl])
@pytest.mark.parametrize("vlen, beat_bytes, row_bits, error", [
    (128, 48, 4, ValueError),     # W not a power of two
    (128, 16, 4, ValueError),     # W < 32
    (32, 64, 4, ValueError),      # W > vlen
    (96, 64, 4, ValueError),      # vlen not a multiple of W
    (128, 64, 0, ValueError),     # no row address
    (128.0, 64, 4, TypeError),
])
def test_bad_parameters(cls, vlen, beat_bytes, row_bits, error):
    with pytest.raises(error):
        cls(vlen, beat_bytes, row_bits)


def test_ports():
    unit = Dequantiser(256, 64, 7)
    assert unit.params == {"vlen": 256, "beat_bytes": 64, "row_bits": 7}
    assert len(unit.wr_data.as_value()) == 64 * 16
    assert len(unit.wr_bank) == 2 and len(unit.wr_row) == 7
    assert len(unit.beat.payload) == 64 * 8
    assert len(DequantControl(64, 64, 3).wr_bank) == 1
