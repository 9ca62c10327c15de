"""Threefry-2x32-20: the sampling noise's counter-based random number generator, pipelined.

Bit-exact with :func:`memwall.golden.dplena.rng.threefry2x32` (Random123's
``threefry2x32_R(20, ...)``, JAX's default generator). **Why Threefry** (the golden module has the
full argument): it is counter-based, so every lane computes its numbers from its own (key,
counter) with no state to carry or share, and its rounds are 32-bit adds, constant rotations
(wiring) and XORs, with no multiplier (Philox needs two 32 x 32 multiplies a round).

**Datapath.** Key ``(k0, k1)``, ``k2 = k0 ^ k1 ^ 0x1BD11BDA``; ``x = ctr + (k0, k1)``; 20 rounds
``x0 += x1; x1 = rotl(x1, R[r % 8]) ^ x0`` (``R = 13 15 26 6 17 29 16 24``), and after every
fourth round the key injection ``x0 += ks[s % 3]; x1 += ks[(s + 1) % 3] + s`` (``s = 1 .. 5``).
The rotation constants and the key schedule parity come from the golden module: one definition.

**Pipeline.** ``rounds_per_stage`` rounds (a 32-bit add and an XOR each, plus any key injection
that follows the stage's last round) between registers, so there are
``stages = 20 // rounds_per_stage`` register stages; the initial add ``x = ctr + key`` is folded
into the first stage (it costs no cycle). Fully pipelined: one new input every cycle, no stall.

**Latency** = ``20 // rounds_per_stage`` cycles (1, 2, 4, 5, 10, 20 for 20, 10, 5, 4, 2, 1 rounds
a stage): inputs presented in cycle ``c`` (sampled at the clock edge that ends it) appear on
``o_valid``/``w0``/``w1`` in cycle ``c + latency``. The outputs are registers.

**Keys travel with the data.** Every stage but the last registers ``k0, k1`` beside ``x0, x1``
(64 flip-flops a stage, ``64 * (stages - 1)`` in all, that a shared key register would save), so
each input may carry its own key: the noise's key is ``(seed, step)``, and back-to-back inputs
may mix seeds or sampling steps with no flush and no key-load protocol. ``k2`` is recomputed
(32 XORs) in each stage that injects, not registered.

**Registers.** ``valid`` shifts down a chain of reset registers (``rst`` empties the pipeline);
the data registers are reset-less and, as in :mod:`memwall.hdl.common.pipeline`, load only when
valid data enters their stage, so an idle pipeline does not toggle; ``w0``/``w1`` hold their last
value while ``o_valid`` is low.

**Ports.** In: ``valid`` (1), ``key0``, ``key1``, ``ctr0``, ``ctr1`` (32 each). Out: ``o_valid``
(1), ``w0``, ``w1`` (32 each). Implicit ``clk`` and synchronous active-high ``rst``.
"""

# No `from __future__ import annotations`: wiring reads the port annotations as objects.
from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall.golden.dplena.rng import KS_PARITY, ROTATIONS
from memwall.hdl.common.pipeline import Stages

__all__ = ["Threefry2x32", "ROUNDS", "ROUNDS_PER_STAGE_ALLOWED"]

#: Rounds of Threefry-2x32-20.
ROUNDS = 20
#: The divisors of :data:`ROUNDS`: the allowed ``rounds_per_stage``.
ROUNDS_PER_STAGE_ALLOWED = tuple(d for d in range(1, ROUNDS + 1) if ROUNDS % d == 0)


def _checked(rounds_per_stage) -> int:
    if isinstance(rounds_per_stage, bool) or not isinstance(rounds_per_stage, int):
        raise TypeError(f"rounds_per_stage must be an int, one of {ROUNDS_PER_STAGE_ALLOWED}, "
                        f"got {rounds_per_stage!r}")
    if rounds_per_stage not in ROUNDS_PER_STAGE_ALLOWED:
        raise ValueError(f"rounds_per_stage must divide {ROUNDS}: one of "
                         f"{ROUNDS_PER_STAGE_ALLOWED}, got {rounds_per_stage}")
    return rounds_per_stage


def _add(a, b) -> Value:
    """32-bit wrap-around sum."""
    return (a + b)[:32]


class Threefry2x32(wiring.Component):
    """Fully pipelined Threefry-2x32-20: ``(w0, w1) = threefry2x32((key0, key1), (ctr0, ctr1))``.

    Parameters
    ----------
    rounds_per_stage : int
        Rounds between pipeline registers, a divisor of 20: 1, 2, 4, 5, 10 or 20. The default 2
        puts at most three 32-bit adds and two XORs on a path between registers (two rounds,
        plus the first stage's initial key add or a key injection; ``ks + s`` is off that
        path). That it meets 1 GHz on ASAP7 is an estimate, not yet a synthesis result.

    Attributes
    ----------
    valid : In(1)
        An input is presented this cycle.
    key0, key1 : In(32)
        The key words (the noise uses ``(seed, step)``); per input, they travel with the data.
    ctr0, ctr1 : In(32)
        The counter words.
    o_valid : Out(1)
        ``w0``/``w1`` hold the result of the input presented :attr:`latency` cycles ago.
    w0, w1 : Out(32)
        The two output words.
    params : dict
        ``{"rounds_per_stage": rounds_per_stage}``.
    """

    module_name = "threefry2x32"

    valid: In(1)
    key0: In(32)
    key1: In(32)
    ctr0: In(32)
    ctr1: In(32)
    o_valid: Out(1)
    w0: Out(32)
    w1: Out(32)

    def __init__(self, rounds_per_stage: int = 2):
        try:
            self.rounds_per_stage = _checked(rounds_per_stage)
        except (TypeError, ValueError):
            self._MustUse__silence = True   # rejected, never elaborated: no "never used" warning
            raise
        self.params = {"rounds_per_stage": rounds_per_stage}
        super().__init__()

    @property
    def stages(self) -> int:
        """Register stages: ``20 // rounds_per_stage``."""
        return ROUNDS // self.rounds_per_stage

    @property
    def latency(self) -> int:
        """Cycles from an input to its output: :attr:`stages` (the initial key add is in the
        first stage)."""
        return self.stages

    def elaborate(self, platform):
        m = Module()
        n = self.stages

        # valid of stage j (1..n): reset registers, so rst empties the pipeline.
        stage_valid = [Signal(name=f"p{j + 1}_valid") for j in range(n)]
        m.d.sync += stage_valid[0].eq(self.valid)
        m.d.sync += [stage_valid[j].eq(stage_valid[j - 1]) for j in range(1, n)]

        # A cut after every round; every rounds_per_stage-th one is registered. Stage j's data
        # registers load when valid data enters it.
        points = tuple(f"round{r + 1}" for r in range(ROUNDS))
        stages = Stages(m, points, points[self.rounds_per_stage - 1::self.rounds_per_stage],
                        load=Cat(self.valid, *stage_valid[:-1]))

        k0, k1 = self.key0, self.key1
        x0, x1 = _add(self.ctr0, k0), _add(self.ctr1, k1)   # folded into the first stage
        for r in range(ROUNDS):
            # Each round's words are named signals: a round reads x0 twice, so plain
            # expressions would grow as 2**rounds in the simulator (and be unreadable in waves).
            y0, y1 = Signal(32, name=f"r{r + 1}_x0"), Signal(32, name=f"r{r + 1}_x1")
            m.d.comb += y0.eq(_add(x0, x1))
            m.d.comb += y1.eq(x1.rotate_left(ROTATIONS[r % 8]) ^ y0)
            x0, x1 = y0, y1
            if r % 4 == 3:   # key injection s after rounds 4, 8, ..., 20
                s = r // 4 + 1
                ks = (k0, k1, k0 ^ k1 ^ KS_PARITY)
                y0, y1 = Signal(32, name=f"i{s}_x0"), Signal(32, name=f"i{s}_x1")
                m.d.comb += [y0.eq(_add(x0, ks[s % 3])), y1.eq(_add(x1, ks[(s + 1) % 3] + s))]
                x0, x1 = y0, y1
            if r < ROUNDS - 1:
                x0, x1, k0, k1 = stages.cut(points[r], x0=x0, x1=x1, k0=k0, k1=k1)
            else:   # the key is not needed past the last round
                x0, x1 = stages.cut(points[r], x0=x0, x1=x1)
        stages.done()

        # The last cut (round 20) is always active: the outputs are its registers.
        m.d.comb += [self.o_valid.eq(stage_valid[-1]), self.w0.eq(x0), self.w1.eq(x1)]
        return m
