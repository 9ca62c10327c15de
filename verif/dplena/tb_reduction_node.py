"""cocotb testbench: one reduction tree node (:class:`~memwall.hdl.dplena.reduction.
ReductionNode`) against its rule, with every BF16 value on each side.

``tb_params()``: ``index_width`` and ``stages``. Each cycle loads one pair of sides (``load``
all ones, so a result leaves ``stages + 1`` cycles later): first all 65,536 BF16 patterns on
each side, each against one of the other sign (so a compare that a mutant bends past zero for
one value goes wrong), then ties (``r = l``), near ties (raw bits a few apart) and
random pairs. FP32 sums are random. Expected: the right side wins if valid and the left is not,
or if valid and strictly greater by ``bf16_key``; the index gains the winning side as its top
bit; the sum is the FP32 sum. Inside a tree the valid lanes are a prefix, so a node never sees
an invalid left beside a valid right; here it does, since that is the node's rule too.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.common.formats import FP32
from memwall.golden.common.fparith import bf16_key, fp_add
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, start


def _sides(rng: np.random.Generator, index_width: int) -> dict[str, np.ndarray]:
    """Every value on the left, each against a value of the other sign, the right side
    running through every value too (both valid, indices different, so a compare that goes
    wrong for one value shows); then ties, near ties and random pairs, with random valid bits
    and indices."""
    every = np.arange(1 << 16, dtype=np.int64)
    positive, negative = every[every < 0x8000], every[every >= 0x8000]
    l_all = rng.permutation(every)
    r_all = np.empty_like(l_all)
    for side, others in ((l_all < 0x8000, negative), (l_all >= 0x8000, positive)):
        r_all[side] = rng.permutation(others)
    n_all, n_more = len(every), 4096
    ties = rng.choice(every, n_more)
    near = rng.choice(every, n_more)
    pairs = rng.choice(every, (2, n_more))
    sides = {"l_value": np.concatenate([l_all, ties, near, pairs[0]]),
             "r_value": np.concatenate([r_all, ties,
                                        (near + rng.integers(-3, 4, n_more)) & 0xFFFF, pairs[1]])}
    n = len(sides["l_value"])
    top = 1 << index_width
    for side in "lr":
        sides[f"{side}_valid"] = np.where(np.arange(n) < n_all, 1, rng.random(n) < 0.8)
        sides[f"{side}_sum"] = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    sides["l_index"] = rng.integers(0, top, n)
    sides["r_index"] = np.where(np.arange(n) < n_all,
                                (sides["l_index"] + rng.integers(1, top, n)) % top,
                                rng.integers(0, top, n))
    return sides


def _expected(s: dict[str, np.ndarray], index_width: int) -> dict[str, np.ndarray]:
    right = (s["r_valid"] == 1) & ((s["l_valid"] == 0) |
                                   (bf16_key(s["r_value"]) > bf16_key(s["l_value"])))
    return {
        "max_value": np.where(right, s["r_value"], s["l_value"]).astype(np.int64),
        "max_valid": s["l_valid"] | s["r_valid"],
        "max_index": (right.astype(np.int64) << index_width)
        | np.where(right, s["r_index"], s["l_index"]),
        "sum": fp_add(s["l_sum"], s["r_sum"], FP32).astype(np.int64),
    }


@cocotb.test()
async def every_value_on_each_side(dut):
    p = tb_params()
    index_width, stages = p["index_width"], p["stages"]
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    sides = _sides(rng, index_width)
    expected = _expected(sides, index_width)
    clk = await start(dut)
    dut.load.value = (1 << (stages + 1)) - 1
    latency = stages + 1
    n = len(sides["l_value"])
    seen = {name: np.zeros(n, np.int64) for name in expected}
    for t in range(n + latency):
        for name, values in sides.items():
            getattr(dut, name).value = int(values[t % n])
        await RisingEdge(clk)
        if t >= latency:                        # the result of the pair loaded `latency` ago
            for name in expected:
                seen[name][t - latency] = int(getattr(dut, name).value)
    board = Scoreboard("reduction_node", dut._log)
    for name in expected:
        board.compare(name, expected[name], seen[name])
    board.result()
