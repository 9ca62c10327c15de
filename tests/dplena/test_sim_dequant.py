# amaranth: UnusedElaboratable=no
"""Dequantiser (MX/BF16 -> Vector SRAM writes) simulated through the shared cocotb runner, built
for every MX format."""

import pytest
from amaranth.utils import exact_log2

from memwall.config import load_config
from memwall.golden.dplena.mx import FORMATS
from memwall.hdl.dplena.dequant import DequantControl, Dequantiser, DequantLane
from memwall.verif.common.runner import simulate

TB = "memwall.verif.dplena.tb_dequant"
TOP = "mx_dequantiser"


def _params(vlen, beat_bytes, row_bits, **extra):
    return {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits, **extra}


@pytest.mark.sim
@pytest.mark.parametrize("fmt", FORMATS)
def test_exhaustive_lanes(fmt):
    # W = 64: all 2**(bits + 8) (element, scale) pairs, 1024 writes of 64 lanes for MXFP8.
    simulate(Dequantiser(128, 64, 6, fmt), TOP, TB, _params(128, 64, 6, fmt=fmt),
             testcase="exhaustive_lanes")


@pytest.mark.sim
@pytest.mark.parametrize("fmt, vlen, beat_bytes, row_bits", [
    ("mxfp8_e5m2", 64, 32, 4), ("mxfp6_e3m2", 128, 32, 5), ("mxfp6_e2m3", 256, 64, 4),
    ("mxfp4_e2m1", 64, 32, 3), ("mxfp4_e2m1", 256, 64, 5)])
def test_random_stream_formats(fmt, vlen, beat_bytes, row_bits):
    """Each format with BF16 prefetches between, idle beats and backpressure; one bank
    (vlen = G) and several."""
    simulate(Dequantiser(vlen, beat_bytes, row_bits, fmt), TOP, TB,
             _params(vlen, beat_bytes, row_bits, fmt=fmt), testcase="random_stream")


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


@pytest.mark.parametrize("cls", [Dequantiser, DequantControl])
def test_bad_format(cls):
    with pytest.raises(ValueError, match="fmt must be one of mxfp8_e4m3"):
        cls(128, 64, 4, "mxfp8")
    with pytest.raises(ValueError, match="128 lanes a mxfp4_e2m1 write"):
        cls(64, 64, 4, "mxfp4_e2m1")     # a 4-bit write is 2 W lanes
    with pytest.raises(ValueError, match="fmt must be one of"):
        DequantLane("bf16")


def test_ports():
    unit = Dequantiser(256, 64, 7)
    assert unit.params == {"vlen": 256, "beat_bytes": 64, "row_bits": 7}
    assert len(unit.wr_data.as_value()) == 64 * 16
    assert len(unit.wr_bank) == 2 and len(unit.wr_row) == 7
    assert len(unit.beat.payload) == 64 * 8
    assert len(DequantControl(64, 64, 3).wr_bank) == 1
    # 4- and 6-bit elements: 2 W lanes a write; the format in the module's name.
    unit = Dequantiser(256, 64, 7, "mxfp4_e2m1")
    assert unit.params == {"vlen": 256, "beat_bytes": 64, "row_bits": 7, "fmt": "mxfp4_e2m1"}
    assert len(unit.wr_data.as_value()) == 128 * 16 and len(unit.wr_bank) == 1
    assert len(DequantControl(256, 64, 7, "mxfp6_e2m3").lane_elem) == 128 * 6
    assert len(DequantLane("mxfp6_e3m2").elem) == 6 and DequantLane().params == {}
