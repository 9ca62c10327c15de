"""cocotb testbench: reduction unit (MAX, SUM, MAX_IDX across chunks) against the golden model."""

from __future__ import annotations

import random

import cocotb
import numpy as np

from memwall.golden.common.formats import BF16
from memwall.golden.common.fparith import reduce_max_idx, reduce_sum
from memwall.hdl.dplena.reduction import ReduceOp, reduce_cmd_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import (
    Scoreboard,
    StreamSink,
    StreamSource,
    pack_lanes,
    pack_struct,
    start,
)
from memwall.verif.dplena.stimulus import bf16_vector

OPS = ("MAX", "SUM", "MAX_IDX")
KINDS = ("ties", "near_ties", "all_negative", "masked", "zeros", "specials", "nan", "denormal",
         "random", "wide")


def expected(op: str, x: np.ndarray, vlen: int, partials: int = 1) -> tuple[int, int]:
    if op == "SUM":
        return int(reduce_sum(x, vlen, partials)), 0
    value, index = reduce_max_idx(x, vlen)
    return int(value) << 16, int(index) if op == "MAX_IDX" else 0


def order_sensitive(vlen: int) -> np.ndarray:
    """12 chunks whose sums cycle through 2^24, 1, 1, -2^24: their FP32 total depends on the
    order of the cross-chunk adds (in chunk order 2^24 + 1 rounds back to 2^24), so it tells
    the accumulator's partial sums apart."""
    x = np.zeros(12 * vlen, dtype=np.uint16)
    x[::vlen] = np.array([0x4B80, 0x3F80, 0x3F80, 0xCB80] * 3, dtype=np.uint16)
    return x


def monotone_chunks(rng: np.random.Generator, vlen: int, chunks: int, kind: str,
                    falling: bool) -> np.ndarray:
    """``chunks`` chunks of ``kind`` values sorted so that each chunk's maximum is above
    (``falling``: below) every value of the chunk before, each chunk shuffled within."""
    x = bf16_vector(rng, chunks * vlen, kind)
    order = np.argsort(BF16.from_bits(x), kind="stable")
    parts = x[order].reshape(chunks, vlen)
    if falling:
        parts = parts[::-1]
    return np.concatenate([rng.permutation(part) for part in parts])


@cocotb.test()
async def random_and_directed(dut):
    vlen = tb_params()["vlen"]
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    clk = await start(dut)
    source = StreamSource(dut, "i", clk, idle_prob=0.2, rng=random.Random(cocotb.RANDOM_SEED))
    sink = StreamSink(dut, "o", clk, ready_prob=0.5, rng=random.Random(cocotb.RANDOM_SEED + 1))
    cocotb.start_soon(sink.run())

    vectors = []
    if tb_params().get("representative"):
        # Power workload: logits-like vectors (as Algorithm 2 streams them), no corner cases.
        for n in range(tb_params().get("random_vectors", 30)):
            vectors.append((OPS[n % 3], bf16_vector(rng, 4 * vlen, "random")))
    else:
        # chunk boundaries, and enough chunks to wrap the interleaved partial sums twice
        lengths = [1, vlen - 1, vlen, vlen + 1, 3 * vlen, 2 * vlen + 3, 11 * vlen + 3]
        for kind in KINDS:
            for op in OPS:
                vectors.append((op, bf16_vector(rng, int(rng.choice(lengths)), kind)))
                # Several chunks: each chunk's maximum meets the running one in the
                # accumulator's compare, with this kind's signs and spacing. Masked logits,
                # the sampler's usual input, get more: sub-trees of -inf meet real values.
                for _ in range(5 if kind == "masked" else 2):
                    vectors.append((op, bf16_vector(rng, int(rng.integers(2 * vlen, 6 * vlen)),
                                                    kind)))
        vectors.append(("SUM", order_sensitive(vlen)))
        # Chunk maxima that rise (each chunk must replace the running maximum) and fall
        # (none may), over negative and mixed values: the accumulator's compare on every
        # kind of running value, not only where random chunks happen to meet.
        for kind in ("all_negative", "random"):
            for op in ("MAX", "MAX_IDX"):
                for falling in (False, True):
                    vectors.append((op, monotone_chunks(rng, vlen, 8, kind, falling)))
        for _ in range(tb_params().get("random_vectors", 30)):
            kind = rng.choice(["random", "ties", "near_ties", "all_negative", "masked",
                               "specials", "denormal", "wide"])
            vectors.append((str(rng.choice(OPS)),
                            bf16_vector(rng, int(rng.integers(1, 4 * vlen)), str(kind))))

    async def drive():
        for op, x in vectors:
            chunks = range(0, len(x), vlen)
            for start_lane in chunks:
                part = x[start_lane:start_lane + vlen]
                # Lanes past the chunk's count carry garbage that must be ignored.
                lanes = np.concatenate([part, rng.integers(0, 1 << 16, vlen - len(part),
                                                           dtype=np.uint16)])
                cmd = pack_struct(reduce_cmd_layout(vlen), op=ReduceOp[op], count=len(part),
                                  first=start_lane == 0, last=start_lane + vlen >= len(x))
                await source.send(cmd, data=pack_lanes(lanes, 16))

    cocotb.start_soon(drive())
    observed = await sink.wait_for(len(vectors))
    board = Scoreboard("reduction", dut._log)
    for n, ((op, x), item) in enumerate(zip(vectors, observed, strict=True)):
        value, index = expected(op, x, vlen, tb_params().get("partials", 1))
        word = item["payload"]
        board.compare(f"vector {n} {op} len {len(x)} value", value, word & 0xFFFFFFFF)
        board.compare(f"vector {n} {op} len {len(x)} index", index, word >> 32)
    board.result()
