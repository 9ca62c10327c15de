"""The sampling noise's argmax on the logit stream: ``x0 = argmax(z + T * G)``, one write a cycle.

Bit-exact with :func:`memwall.golden.dplena.noise.noisy_argmax_hw` (its docstring has the
arithmetic and the order). It sits on the dequantiser's write stream, not on the Vector SRAM's
read side: a write carries ``lanes`` logits (``G`` of the core, 64 to 256), where a row is
VLEN wide, so the noise costs ``lanes`` Gumbel units, not VLEN, and keeps the port's pace (the
step stays at its HBM bound; one pass over the logits, as the issue asks).

**Datapath, per write** (``lanes`` BF16 logits of tokens ``token .. token + lanes - 1`` of row
``row``, the first ``count`` of them present):

1. ``lanes / 2`` :class:`~memwall.hdl.dplena.threefry.Threefry2x32`: key ``(seed, step)``,
   counter ``(token / 2 + i, row)``; word 0 is lane ``2i``'s, word 1 lane ``2i + 1``'s
   (:func:`memwall.golden.dplena.rng.noise_words`; so ``token`` must be even).
2. ``lanes`` :class:`~memwall.hdl.dplena.gumbel.GumbelUnit` on each word's top 23 bits.
3. ``lanes`` FP32 multiplies ``T * G`` and FP32 adds ``fp32(z) + T * G`` (RNE,
   :class:`~memwall.hdl.common.fp.FpMul`, :class:`~memwall.hdl.common.fp.FpAdd`): the keys.
4. A pairwise argmax tree over the lanes, one register level per tree level; the right (higher)
   lane wins only if present and strictly greater (:func:`~memwall.hdl.common.fp.fp32_greater`),
   so the first of equal keys wins. The winner carries its clean logit and its lane.
5. The running result across writes: a write with ``first`` set starts a row; a later write
   replaces the result only with a strictly greater key (earlier tokens win ties).

Each write's logits, ``count``, ``token``, ``first`` and ``T`` wait beside the noise pipeline in
reset-less registers that load only when valid data enters their stage
(:func:`memwall.hdl.common.pipeline.delay`), so ``T`` and ``(seed, step, row)`` may change between
writes with no flush.

**Latency** :attr:`NoisyArgmax.latency` = Threefry + Gumbel + multiply + add + tree levels + 1
(the result register): a write presented in cycle ``c`` is in ``found``/``index``/``value``/
``key`` from cycle ``c + latency``. ``idle`` is high when no write is in flight, so the result
is final. One write a cycle, no stall; ``rst`` empties the pipeline and clears ``found``.

**Ports.** In: ``valid``, ``first`` (1), ``z`` (``lanes`` x 16, BF16), ``count`` (1 ..
``lanes``), ``token``, ``row``, ``seed``, ``step`` (32 each), ``temperature`` (32, FP32). Out:
``idle``, ``found`` (1), ``index`` (32, the winner's token), ``value`` (16, its clean logit),
``key`` (32, its noisy key).
"""

# No `from __future__ import annotations`: wiring reads the port annotations as objects.
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from memwall.golden.dplena.rng import UNIFORM_BITS
from memwall.hdl.common.fp import FpAdd, FpMul, fp32_greater
from memwall.hdl.common.pipeline import delay
from memwall.hdl.dplena.gumbel import DEFAULT_STAGES as GUMBEL_STAGES
from memwall.hdl.dplena.gumbel import GumbelUnit
from memwall.hdl.dplena.threefry import Threefry2x32

__all__ = ["NoisyArgmax"]


class NoisyArgmax(wiring.Component):
    """The running noisy argmax of a logit stream (see the module docstring).

    Parameters
    ----------
    lanes : int
        Logits a write, a power of two >= 2 (the core's ``bank_lanes``).
    threefry_rounds : int
        :class:`~memwall.hdl.dplena.threefry.Threefry2x32`'s ``rounds_per_stage`` (default 2).
    gumbel_stages : int
        :class:`~memwall.hdl.dplena.gumbel.GumbelUnit`'s ``stages`` (default its own).
    mul_stages, add_stages : int
        The FP32 multiply's and add's pipeline depths (defaults: the core's ``mul_fp32`` and
        ``add_fp32``, 3 each).

    Attributes
    ----------
    latency : int
        Cycles from a write to its effect on the result.
    params : dict
    """

    module_name = "noisy_argmax"

    def __init__(self, lanes: int, threefry_rounds: int = 2, gumbel_stages: int = GUMBEL_STAGES,
                 mul_stages: int = 3, add_stages: int = 3):
        for key, v in (("lanes", lanes), ("threefry_rounds", threefry_rounds),
                       ("gumbel_stages", gumbel_stages), ("mul_stages", mul_stages),
                       ("add_stages", add_stages)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"NoisyArgmax: {key} must be an int, got {v!r}")
        if lanes < 2 or lanes & (lanes - 1):
            raise ValueError(f"NoisyArgmax: lanes must be a power of two >= 2, got {lanes}")
        self.lanes = lanes
        # Built once here, so a bad depth fails at construction with the block's own message.
        self._threefry = [Threefry2x32(threefry_rounds) for _ in range(lanes // 2)]
        self._gumbel = [GumbelUnit(gumbel_stages) for _ in range(lanes)]
        self._mul = [FpMul("fp32", stages=mul_stages) for _ in range(lanes)]
        self._add = [FpAdd("fp32", stages=add_stages) for _ in range(lanes)]
        self.mul_stages, self.add_stages = mul_stages, add_stages
        self.levels = exact_log2(lanes)
        self.params = {"lanes": lanes, "threefry_rounds": threefry_rounds,
                       "gumbel_stages": gumbel_stages, "mul_stages": mul_stages,
                       "add_stages": add_stages}
        super().__init__({
            "valid": In(1), "first": In(1), "z": In(data.ArrayLayout(16, lanes)),
            "count": In(range(lanes + 1)), "token": In(32), "row": In(32), "seed": In(32),
            "step": In(32), "temperature": In(32),
            "idle": Out(1), "found": Out(1), "index": Out(32), "value": Out(16), "key": Out(32),
        })

    @property
    def _t_gumbel(self) -> int:
        """Cycle (after the write's) at which the Gumbel variates are out."""
        return self._threefry[0].latency + self._gumbel[0].latency

    @property
    def _t_keys(self) -> int:
        return self._t_gumbel + self.mul_stages + self.add_stages

    @property
    def latency(self) -> int:
        """Threefry + Gumbel + multiply + add + tree levels + the result register."""
        return self._t_keys + self.levels + 1

    def elaborate(self, platform):
        m = Module()
        last = self._t_keys + self.levels    # the cycle at which the result register loads
        # valid[j]: a write entered j cycles ago (reset registers: rst empties the pipeline).
        valid = [self.valid, *(Signal(name=f"p{j}_valid") for j in range(1, last + 1))]
        m.d.sync += [valid[j + 1].eq(valid[j]) for j in range(last)]

        def later(value, start: int, end: int, name: str):
            """``value`` of cycle ``start`` (after the write's) as it is at cycle ``end``."""
            return delay(m, value, valid[start:end], name)

        t_g, t_mul = self._t_gumbel, self._t_gumbel + self.mul_stages
        temperature = later(self.temperature, 0, t_g, "temperature")
        z = later(self.z.as_value(), 0, t_mul, "z")     # lanes x 16 bits, lane 0 lowest
        keys = []
        for i in range(self.lanes // 2):                     # 1. one Threefry call, two lanes
            tf = self._threefry[i]
            m.submodules[f"threefry{i}"] = tf
            m.d.comb += [tf.valid.eq(self.valid), tf.key0.eq(self.seed), tf.key1.eq(self.step),
                         tf.ctr0.eq(self.token[1:] + i), tf.ctr1.eq(self.row)]
            for lane, word in ((2 * i, tf.w0), (2 * i + 1, tf.w1)):
                gumbel, mul, add = self._gumbel[lane], self._mul[lane], self._add[lane]
                m.submodules[f"gumbel{lane}"] = gumbel           # 2. G
                m.submodules[f"mul{lane}"] = mul                 # 3. T * G, then z + T * G
                m.submodules[f"add{lane}"] = add
                m.d.comb += [gumbel.valid.eq(valid[tf.latency]),
                             gumbel.mantissa.eq(word[32 - UNIFORM_BITS:]),
                             mul.a.eq(temperature), mul.b.eq(gumbel.g),
                             add.a.eq(Cat(Const(0, 16), z[16 * lane:16 * lane + 16])),
                             add.b.eq(mul.y),
                             add.sub.eq(0)]
                if self.mul_stages:
                    m.d.comb += mul.load.eq(Cat(*valid[t_g:t_mul]))
                if self.add_stages:
                    m.d.comb += add.load.eq(Cat(*valid[t_mul:self._t_keys]))
                keys.append(add.y)

        # 4. the argmax tree: (present, key, clean logit, lane) per node, a register a level.
        t = self._t_keys
        count = later(self.count, 0, t, "count")
        z_keys = later(z, t_mul, t, "z_keys")
        nodes = [(lane < count, keys[lane], z_keys[16 * lane:16 * lane + 16], None)
                 for lane in range(self.lanes)]
        fields = ("valid", "key", "z", "lane")
        for level in range(self.levels):
            merged = []
            for j in range(0, len(nodes), 2):
                (lv, lk, lz, li), (rv, rk, rz, ri) = nodes[j], nodes[j + 1]
                right = rv & (~lv | fp32_greater(rk, lk))
                lane = right if level == 0 else Cat(Mux(right, ri, li), right)   # lane bits
                node = (lv | rv, Mux(right, rk, lk), Mux(right, rz, lz), lane)
                merged.append(tuple(later(v, t + level, t + level + 1, f"l{level}_n{j // 2}_{f}")
                                    for v, f in zip(node, fields, strict=True)))
            nodes = merged
        present, key, value, lane = nodes[0]

        # 5. the running result
        token = later(self.token, 0, last, "token")
        first = later(self.first, 0, last, "first")
        index = token + lane
        take = present & (first | ~self.found | fp32_greater(key, self.key))
        with m.If(valid[last]):
            with m.If(first):
                m.d.sync += self.found.eq(present)
            with m.If(take):
                m.d.sync += [self.found.eq(1), self.index.eq(index), self.value.eq(value),
                             self.key.eq(key)]
        m.d.comb += self.idle.eq(~Cat(*valid).any())
        return m
