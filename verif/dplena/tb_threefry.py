"""cocotb testbench: the pipelined Threefry-2x32-20 against golden ``threefry2x32``.

Every cycle is checked, not only the transfers: a monitor models the pipeline as ``latency``
slots (an input enters the first at the edge that samples it, ``rst`` empties them all) and
compares ``o_valid`` with the last slot in every cycle, and ``w0``/``w1`` with the golden words
of the input in it when it is valid. So each output must appear exactly ``latency`` cycles
after its input was presented, no earlier, no later, never twice, and no valid output may
appear from an idle or reset slot. Inputs are driven and outputs read at the falling edge,
half a cycle from the sampling edge, in either simulator.

Params (:func:`memwall.verif.common.runner.tb_params`): ``latency`` (cycles; the pytest side
gives ``20 // rounds_per_stage``), ``inputs`` (random inputs, default 3000), ``idle_prob``
(chance of a gap cycle before each random input, default 0.3).
"""

from __future__ import annotations

import random
from collections import deque

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from memwall.golden.dplena.rng import KS_PARITY, threefry2x32
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import start

#: Random123's kat_vectors for threefry2x32_20: (key, ctr, (w0, w1)), as in
#: tests/dplena/test_rng.py (tests are not importable from verif).
KAT = [((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
       ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
       ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
WORD = (1 << 32) - 1


def golden(inputs: list[tuple[int, int, int, int]]) -> list[tuple[int, int]]:
    """``(w0, w1)`` of every ``(key0, key1, ctr0, ctr1)``, by the golden model."""
    k0, k1, c0, c1 = (np.array(col, dtype=np.uint64) for col in zip(*inputs, strict=True))
    w0, w1 = threefry2x32((k0, k1), (c0, c1))
    return list(zip(w0.tolist(), w1.tolist(), strict=True))


class Testbench:
    """Drives ``valid, key0, key1, ctr0, ctr1`` once a cycle and checks the outputs every cycle
    against a model of the ``latency`` pipeline slots."""

    def __init__(self, dut, latency: int, rng: random.Random):
        self.dut, self.latency, self.rng = dut, latency, rng
        self.slots: deque = deque([None] * latency, maxlen=latency)   # slots[-1] is the output
        self.cycle = 0
        self.count = 0                   # inputs numbered over every run()
        self.presented: dict[int, int] = {}   # input number -> cycle presented (not lost)
        self.emerged: dict[int, int] = {}     # input number -> cycle its output appeared
        self.errors: list[str] = []

    def _check(self) -> None:
        dut, item = self.dut, self.slots[-1]
        o_valid = int(dut.o_valid.value)
        if o_valid != (item is not None):
            self.errors.append(f"cycle {self.cycle}: o_valid = {o_valid}, expected "
                               f"{int(item is not None)}")
        elif item is not None:
            n, inp, want = item
            self.emerged[n] = self.cycle
            got = (dut.w0.value.to_unsigned(), dut.w1.value.to_unsigned())
            if got != want:
                self.errors.append(f"input {n} key=({inp[0]:#010x}, {inp[1]:#010x}) "
                                   f"ctr=({inp[2]:#010x}, {inp[3]:#010x}): expected "
                                   f"({want[0]:#010x}, {want[1]:#010x}), got "
                                   f"({got[0]:#010x}, {got[1]:#010x})")
        if len(self.errors) > 20:
            raise AssertionError("more than 20 errors; first:\n  " + "\n  ".join(self.errors))

    async def cycle_with(self, item=None, reset: bool = False) -> None:
        """One cycle: check the outputs, present ``item`` (``(n, inputs, want)``, or None for
        a gap with random data and ``valid = 0``), with ``rst`` high if ``reset``."""
        dut = self.dut
        await FallingEdge(dut.clk)
        self._check()
        words = item[1] if item is not None else [self.rng.getrandbits(32) for _ in range(4)]
        dut.valid.value = int(item is not None)
        dut.key0.value, dut.key1.value, dut.ctr0.value, dut.ctr1.value = words
        dut.rst.value = int(reset)
        # The next rising edge: stage 1 takes this cycle's input, rst empties every stage
        # (this cycle's input is lost too).
        if reset:
            for lost in list(self.slots)[:-1]:   # slots[-1] is on the outputs already
                if lost is not None:
                    del self.presented[lost[0]]
            self.slots.extend([None] * self.latency)
        else:
            if item is not None:
                self.presented[item[0]] = self.cycle
            self.slots.appendleft(item)
        self.cycle += 1

    async def run(self, inputs, idle_prob: float = 0.0, reset_at: frozenset = frozenset()):
        """Present ``inputs`` in order with random gaps, with ``rst`` high in the cycle that
        presents each index of ``reset_at`` (so that input is lost), then drain the pipeline."""
        want = golden(inputs)
        first, self.count = self.count, self.count + len(inputs)
        for n, (inp, w) in enumerate(zip(inputs, want, strict=True), start=first):
            while idle_prob and self.rng.random() < idle_prob:
                await self.cycle_with()
            await self.cycle_with((n, inp, w), reset=n - first in reset_at)
        for _ in range(self.latency + 2):
            await self.cycle_with()

    def result(self, expected_outputs: int) -> None:
        dut = self.dut
        assert not self.errors, f"{len(self.errors)} errors; first:\n  " + \
            "\n  ".join(self.errors[:20])
        assert len(self.emerged) == expected_outputs == len(self.presented), \
            f"{len(self.presented)} inputs, {len(self.emerged)} outputs, " \
            f"{expected_outputs} expected"
        assert list(self.emerged) == list(self.presented), "outputs out of input order"
        delays = {self.emerged[n] - self.presented[n] for n in self.presented}
        assert delays == {self.latency}, f"input-to-output delays {sorted(delays)}, " \
            f"expected {self.latency}"
        dut._log.info("%d outputs match the golden model bit for bit, each %d cycles after its "
                      "input (%d cycles)", expected_outputs, self.latency, self.cycle)


async def _setup(dut) -> Testbench:
    p = tb_params()
    dut.valid.value = 0
    await start(dut)
    return Testbench(dut, int(p["latency"]), random.Random(cocotb.RANDOM_SEED))


@cocotb.test()
async def known_answer_vectors(dut):
    """Random123's vectors, back to back, then one at a time; and the golden model agrees."""
    tb = await _setup(dut)
    inputs = [(*key, *ctr) for key, ctr, _ in KAT]
    assert golden(inputs) == [want for _, _, want in KAT], "golden model disagrees with the KAT"
    await tb.run(inputs)           # back to back: the pipeline full of different keys
    await tb.run(inputs, idle_prob=0.9)
    tb.result(2 * len(KAT))


@cocotb.test()
async def random_keys_and_counters(dut):
    """Random (key, ctr) with random gaps, plus carry and key schedule corner cases."""
    p = tb_params()
    tb = await _setup(dut)
    gen = random.Random(cocotb.RANDOM_SEED + 1)
    corners = [
        (0, 0, WORD, WORD),                              # ctr + key with no carry out
        (1, 1, WORD, WORD),                              # ctr + key wraps in both words
        (KS_PARITY, 0, 0, 0),                            # k2 = 0
        (0x80000000, 0x80000000, 0x80000000, 0x7FFFFFFF),
        (0x12345678, 0x12345678, 0, 1),                  # equal key words: k2 = parity
    ]
    corners += [(k0, k1, c, c) for k0, k1 in ((0, 0), (WORD, 0)) for c in range(4)]
    inputs = corners + [tuple(gen.getrandbits(32) for _ in range(4))
                        for _ in range(int(p.get("inputs", 3000)))]
    # The noise's pattern: one key, consecutive counters, back to back.
    inputs += [(7, 3, c >> 1, c & 0xF) for c in range(64)]
    await tb.run(inputs, idle_prob=float(p.get("idle_prob", 0.3)))
    tb.result(len(inputs))


@cocotb.test()
async def reset_empties_the_pipeline(dut):
    """A reset cycle mid-stream drops the inputs in flight (and the one it coincides with);
    nothing valid comes out of the emptied stages, and inputs after it run normally."""
    tb = await _setup(dut)
    gen = random.Random(cocotb.RANDOM_SEED + 2)
    inputs = [tuple(gen.getrandbits(32) for _ in range(4)) for _ in range(12 * tb.latency + 40)]
    resets = {tb.latency + 3, 5 * tb.latency + 7, 5 * tb.latency + 8}
    await tb.run(inputs, idle_prob=0.2, reset_at=frozenset(resets))
    # Every input neither presented in a reset cycle nor in flight at one comes out.
    lost = len(inputs) - len(tb.presented)
    assert lost >= len(resets), f"only {lost} inputs lost to {len(resets)} resets"
    dut._log.info("%d of %d inputs lost to %d reset cycles", lost, len(inputs), len(resets))
    tb.result(len(tb.presented))
