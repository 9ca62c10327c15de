"""The Neural Cache baseline: bit-serial arithmetic on transposed operands in SRAM arrays
(Eckert et al., "Neural Cache: Bit-Serial In-Cache Acceleration of Deep Neural Networks",
ISCA 2018), on an array of the PIM macro's geometry.

Array and cycle. ``R = cfg.rows`` rows by ``W = cfg.width`` columns of 6T SRAM (the eDRAM
macro's geometry, every subarray in lockstep). Each column is a *lane*: its operands are stored
*transposed*, one bit per row, LSB first. A **compute cycle** activates two word lines at once;
each column's sense amps give the AND and the NOR of its two bits, hence their XOR; a carry
latch and a tag latch per column hold state between cycles; the result bit is written back to
a third row in the same cycle. A **write cycle** writes one row (every column's own bit), a
**tag cycle** reads one row into the tag latches. Neural Cache's algorithm is that: add and
multiply bit-serially, all lanes at once. Our cycle counts are those of the algorithm as written
out here and simulated bit by bit (:func:`simulate`); the multiply is shift-and-add on two's
complement operands:

* ``zero``: clear the ``wb + ib`` product rows (write cycles).
* ``multiply`` (weight ``w``, ``wb`` bits, times input ``a``, ``ib`` bits): for each input bit
  ``i``, a tag cycle (tag = ``a_i``) and ``wb + ib - i`` compute cycles adding the weight,
  sign-extended, into product bits ``i .. wb+ib-1`` where the tag is set (carry latch cleared
  first); the input's sign bit (signed inputs) adds the weight's two's complement instead
  (its inverted bits with a carry-in of 1: the same cycles).
* ``accumulate``: ``acc_bits`` compute cycles adding the product, sign-extended, into the
  lane's accumulator.

Mapping of ``C = A @ B`` (M x K x N). A lane keeps ``Kc`` weights of one column ``n`` of B
(``Kc = (R - ib - (wb+ib) - acc_bits) // wb``: its rows less the scratch rows), so output
``(m, n)`` is summed by ``L = ceil(K / Kc)`` adjacent lanes; ``W // L`` outputs at a time (a
*wave*). Per wave: the weights are written once (``Kc * wb`` write cycles), then per
input row ``m``: per weight slot, the input written (``ib`` write cycles), ``zero``,
``multiply``, ``accumulate``; the accumulators cleared first (``acc_bits`` write cycles); then
the ``L`` partial sums of an output reduced across lanes in ``ceil(log2 L)`` steps, each a move
of the accumulator to the neighbouring lane (``acc_bits`` compute cycles through the sense
amps) and an add (``acc_bits``); the result read out (``acc_bits`` read cycles).

Energy per cycle, from the config's SRAM constants (``S`` subarrays): a compute cycle activates
a row pair and writes a row, ``S * (sram_e_access + sram_e_write) + W * sram_e_sense``; a tag
or read cycle ``S * sram_e_access + W * sram_e_sense``; a write cycle ``S * sram_e_write``.
Every column switches in every cycle, used or not (a partial wave's idle lanes too). The
weights' fetch from DRAM is charged as the PIM scheme charges it (every weight written into
the array), and the lanes' latches and control logic are not charged (a lower bound: the PIM
scheme's logic is charged from synthesis).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["plan", "cycles", "energy", "simulate", "NoNeuralCacheMapping"]


class NoNeuralCacheMapping(ValueError):
    """The array's rows cannot hold a weight beside the scratch rows."""


def _scratch(cfg) -> int:
    return cfg.input_bits + cfg.weight_bits + cfg.input_bits + cfg.acc_bits


def multiply_cycles(cfg) -> tuple[int, int]:
    """(tag cycles, compute cycles) of one multiply."""
    ib, wb = cfg.input_bits, cfg.weight_bits
    return ib, sum(wb + ib - i for i in range(ib))


def plan(cfg, M: int, K: int, N: int) -> dict:
    """The mapping: weight slots per lane ``kc``, lanes per output ``lanes``, ``waves`` and
    the reduction ``steps``."""
    kc = (cfg.rows - _scratch(cfg)) // cfg.weight_bits
    if kc < 1:
        raise NoNeuralCacheMapping(
            f"{cfg.name}: {cfg.rows} rows hold no {cfg.weight_bits}-bit weight beside the "
            f"{_scratch(cfg)} scratch rows of the Neural Cache baseline")
    kc = min(kc, K)
    lanes = -(-K // kc)
    if lanes > cfg.width:
        raise NoNeuralCacheMapping(
            f"{cfg.name}: K = {K} needs {lanes} lanes of {kc} weights per output, more than "
            f"the array's {cfg.width} columns")
    per_wave = cfg.width // lanes                     # whole outputs per wave
    return {"kc": kc, "lanes": lanes, "outputs_per_wave": per_wave,
            "waves": -(-N // per_wave), "steps": math.ceil(math.log2(lanes)) if lanes > 1 else 0}


def cycles(cfg, M: int, K: int, N: int) -> dict:
    """Cycles of each kind (``compute``, ``write``, ``read`` incl. tag cycles) and ``total``."""
    p = plan(cfg, M, K, N)
    ib, wb, acc = cfg.input_bits, cfg.weight_bits, cfg.acc_bits
    tags, mult = multiply_cycles(cfg)
    per_slot = {"write": ib + wb + ib, "read": tags, "compute": mult + acc}
    per_row = {"write": acc + p["kc"] * per_slot["write"],
               "read": p["kc"] * per_slot["read"] + acc,
               "compute": p["kc"] * per_slot["compute"] + 2 * acc * p["steps"]}
    out = {k: p["waves"] * M * v for k, v in per_row.items()}
    out["write"] += p["waves"] * p["kc"] * wb
    out["total"] = sum(out.values())
    return out


def energy(cfg, M: int, K: int, N: int, *, weight_words: int | None = None) -> dict:
    """Energy (pJ) of the GEMM on the Neural Cache baseline: the array's cycles and the weights'
    DRAM fetch (``weight_words``: default every weight once, K x N)."""
    c = cycles(cfg, M, K, N)
    S, W = cfg.subarray_count, cfg.width
    read = S * cfg.sram_e_access_pj + W * cfg.sram_e_sense_pj
    parts = {"array_compute": c["compute"] * (read + S * cfg.sram_e_write_pj),
             "array_read": c["read"] * read,
             "array_write": c["write"] * S * cfg.sram_e_write_pj,
             "weight_fetch": (K * N if weight_words is None else weight_words)
             * cfg.weight_bits * cfg.dram_e_bit_pj}
    parts["total"] = sum(parts.values())
    return parts


# --- bit-level simulation of the algorithm ----------------------------------------------------

class _Lanes:
    """Rows of bits per lane (columns), and the cycle counters."""

    def __init__(self, lanes: int):
        self.rows: dict[tuple, np.ndarray] = {}
        self.count = {"compute": 0, "write": 0, "read": 0}
        self.zero = np.zeros(lanes, dtype=bool)

    def write(self, row: tuple, bits: np.ndarray) -> None:
        self.rows[row] = np.asarray(bits, dtype=bool).copy()
        self.count["write"] += 1

    def read(self, row: tuple) -> np.ndarray:
        self.count["read"] += 1
        return self.rows.get(row, self.zero).copy()

    def add_into(self, dest: str, width: int, src: str, src_bits: int, shift: int = 0,
                 tag: np.ndarray | None = None, invert: bool = False) -> None:
        """``dest[shift:width] += src`` (sign-extended, inverted with carry-in 1 if ``invert``)
        where ``tag``; one compute cycle per destination bit."""
        carry = np.full_like(self.zero, invert)
        for j in range(shift, width):
            a = self.rows.get((dest, j), self.zero)
            b = self.rows.get((src, min(j - shift, src_bits - 1)), self.zero) ^ invert
            total = a ^ b ^ carry
            carry = (a & b) | (carry & (a ^ b))
            self.rows[(dest, j)] = np.where(tag, total, a) if tag is not None else total
            self.count["compute"] += 1


def _bits(values: np.ndarray, width: int) -> list[np.ndarray]:
    v = np.asarray(values, dtype=np.int64) & ((1 << width) - 1)
    return [((v >> j) & 1).astype(bool) for j in range(width)]


def _value(lanes: _Lanes, name: str, width: int) -> np.ndarray:
    out = sum(lanes.rows.get((name, j), lanes.zero).astype(np.int64) << j for j in range(width))
    return np.where(out >> (width - 1) & 1, out - (1 << width), out)


def _slot_ks(mine: list, slot: int, kc: int) -> list[int]:
    """Per lane, the k its weight slot ``slot`` holds (-1: an idle lane)."""
    return [job[1] * kc + slot if job else -1 for job in mine]


def simulate(cfg, a, b) -> dict:
    """``C = A @ B`` by the algorithm of the module docstring, bit by bit on every lane; returns
    ``{"c", "cycles"}`` (cycles counted as the algorithm spends them). Signed operands as the
    config declares (unsigned: no two's-complement step)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    M, K = a.shape
    N = b.shape[1]
    p = plan(cfg, M, K, N)
    ib, wb, acc, kc, W = cfg.input_bits, cfg.weight_bits, cfg.acc_bits, p["kc"], cfg.width
    per = p["outputs_per_wave"]
    c = np.zeros((M, N), dtype=np.int64)
    total = {"compute": 0, "write": 0, "read": 0}
    for wave in range(p["waves"]):
        # lane -> (n, its k chunk), or None for an idle lane
        mine = [(n, lane) for n in range(wave * per, min(N, (wave + 1) * per))
                for lane in range(p["lanes"])]
        mine += [None] * (W - len(mine))
        lanes = _Lanes(W)
        for slot in range(kc):
            ks = _slot_ks(mine, slot, kc)
            w = np.array([b[k, job[0]] if job and k < K else 0
                          for job, k in zip(mine, ks, strict=True)])
            for j, bits in enumerate(_bits(w, wb)):
                lanes.write((f"w{slot}", j), bits)
        for m in range(M):
            for j in range(acc):
                lanes.write(("acc", j), lanes.zero)
            for slot in range(kc):
                ks = _slot_ks(mine, slot, kc)
                x = np.array([a[m, k] if job and k < K else 0
                              for job, k in zip(mine, ks, strict=True)])
                for j, bits in enumerate(_bits(x, ib)):
                    lanes.write(("x", j), bits)
                for j in range(wb + ib):
                    lanes.write(("p", j), lanes.zero)
                for i in range(ib):
                    tag = lanes.read(("x", i))
                    negative = cfg.input_signed and i == ib - 1
                    src_bits = wb if cfg.weight_signed else wb + 1   # unsigned: zero-extend
                    lanes.add_into("p", wb + ib, f"w{slot}", src_bits, shift=i, tag=tag,
                                   invert=negative)
                product_bits = wb + ib + (not (cfg.weight_signed or cfg.input_signed))
                lanes.add_into("acc", acc, "p", product_bits)
            # Reduction across the L lanes of an output: move (acc cycles) and add (acc).
            sums = _value(lanes, "acc", acc)
            for step in range(p["steps"]):
                lanes.count["compute"] += 2 * acc
                stride = 1 << step
                for i, job in enumerate(mine):
                    if job and job[1] % (2 * stride) == 0 and job[1] + stride < p["lanes"]:
                        sums[i] += sums[i + stride]
            for j in range(acc):
                lanes.read(("acc", j))
            for i, job in enumerate(mine):
                if job and job[1] == 0:
                    c[m, job[0]] = sums[i]
        for k in total:
            total[k] += lanes.count[k]
    total["total"] = sum(total.values())
    acc_mask = (1 << acc) - 1
    c = c & acc_mask
    c = np.where(c >> (acc - 1) & 1, c - (1 << acc), c)
    return {"c": c, "cycles": total}
