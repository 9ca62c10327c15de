"""cocotb testbench: one Vector SRAM bank (:class:`~memwall.hdl.dplena.core.VectorSramBank`)
against a model of its rows, every cycle.

``tb_params()``: ``lanes``, ``rows`` and ``cycles``. Each cycle drives random reads, vector-path
writes (of ``vec_data`` or, with ``stage_sel``, ``stage_data``) and prefetch writes, every data
bit random, both writes in one cycle only to different halves (the parent's rule). The model
gives ``rd_data``: the row read at the last ``rd_en``, as it was before that cycle's writes,
held until the next read (undefined before the first). A write's data, row or enable going
astray shows when its row is read.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge, Timer

from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, start


@cocotb.test()
async def rows_match_the_model(dut):
    p = tb_params()
    lanes, rows = p["lanes"], p["rows"]
    width, half = 16 * lanes, rows // 2
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    ports = ("rd_en", "vec_we", "stage_sel", "dma_we")
    for name in (*ports, "rd_row", "vec_row", "dma_row", "vec_data", "stage_data", "dma_data"):
        getattr(dut, name).value = 0
    clk = await start(dut)
    model = [0] * rows
    shown = None              # the row read last, as read (before the first read: undefined)
    board = Scoreboard("vector_sram_bank", dut._log)

    def word() -> int:
        return int.from_bytes(rng.bytes(width // 8), "little")

    focus = 0
    for cycle in range(p.get("cycles", 3000)):
        # Reads and writes among 8 rows at a time, so written rows are read back soon.
        if cycle % 64 == 0:
            focus = int(rng.integers(0, rows - 7))
        drive = {name: int(rng.random() < 0.5) for name in ports}
        rows_now = {name: focus + int(rng.integers(0, 8))
                    for name in ("rd_row", "vec_row", "dma_row")}
        if drive["vec_we"] and drive["dma_we"] and \
                rows_now["vec_row"] // half == rows_now["dma_row"] // half:
            drive["dma_we"] = 0                    # the arbiter holds the prefetch back
        data = {name: word() for name in ("vec_data", "stage_data", "dma_data")}
        for name, value in {**drive, **rows_now, **data}.items():
            getattr(dut, name).value = value
        await RisingEdge(clk)
        if shown is not None:
            board.compare(f"rd_data in cycle {cycle}", shown, int(dut.rd_data.value))
        if drive["rd_en"]:
            shown = model[rows_now["rd_row"]]
        if drive["vec_we"]:
            model[rows_now["vec_row"]] = data["stage_data" if drive["stage_sel"] else "vec_data"]
        if drive["dma_we"]:
            model[rows_now["dma_row"]] = data["dma_data"]
    await RisingEdge(clk)
    board.compare("rd_data at the end", shown, int(dut.rd_data.value))
    board.result()


@cocotb.test()
async def arbiter_rule(dut):
    """The write arbiter (:class:`~memwall.hdl.dplena.core.VectorSramWriteArbiter`), all
    combinational: every combination of the two write requests, the rows' half bits and the
    bank, each with random low row bits. A prefetch write waits only while the vector path
    writes the same half, and then goes to its bank alone."""
    p = tb_params()
    banks, row_bits = p["banks"], p["row_bits"]
    bank_bits = len(dut.dma_bank)
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    board = Scoreboard("vector_sram_bank_arbiter", dut._log)
    low = 1 << (row_bits - 1)
    for case in range(4 * 4 * (1 << bank_bits) * 8):
        vec_we, dma_valid, vec_half, dma_half = (case >> 0) & 1, (case >> 1) & 1, \
            (case >> 2) & 1, (case >> 3) & 1
        bank = (case >> 4) % (1 << bank_bits)
        vec_row = vec_half * low + int(rng.integers(0, low))
        dma_row = dma_half * low + int(rng.integers(0, low))
        for name, value in {"vec_we": vec_we, "dma_valid": dma_valid, "vec_row": vec_row,
                            "dma_row": dma_row, "dma_bank": bank}.items():
            getattr(dut, name).value = value
        await Timer(1, unit="ns")
        ready = int(not (vec_we and vec_half == dma_half))
        we = sum(1 << b for b in range(banks) if dma_valid and ready and bank == b)
        board.compare(f"dma_ready, case {case}", ready, int(dut.dma_ready.value))
        board.compare(f"dma_we, case {case}", we, int(dut.dma_we.value))
    board.result()
