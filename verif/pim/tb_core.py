"""cocotb testbench of ``pim_core``: scheduled GEMMs against :mod:`memwall.golden.pim.macro`.

The testbench plays the unified buffer and the weight DMA: it streams the weight tiles' row
images and the input beats in the order the schedule consumes them, keeps every partial sum
the core emits and returns it on ``psum`` when the next k-tile of that output starts. The
eDRAM macro is :class:`~memwall.verif.common.edram.PimMacro` (retention of the VPD in force at
read time, VREF check, stored bit AND input bit, counters per VPD level).

``params["gemms"]`` is a list of ``{"a", "b", "schedule"}`` run one after the other on one
core. Checked per GEMM: every emitted group bit for bit against the golden emissions, C
against ``A @ B``, the macro's counters against the golden event simulator and against the
scheduler's closed form (:func:`memwall.golden.pim.schedule.counts`), the refreshes only when
no stream stalls (``params["stall"] == 0``: a stall keeps rows alive longer), and, without
stalls, the cycle count; over the run, no retention or VREF violation and no port misuse.
Negative controls (``params["negative"]``): ``refresh_off`` (the core's ``refresh_enable``
held low), ``short_retention`` (the macro's cells keep data for half the refresh interval the
core uses), ``wrong_vref`` (the macro expects another VREF for
the VPD in force): the test then passes only if the macro reports violations.
"""

from __future__ import annotations

import json
import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.families.pim.config import PimConfig
from memwall.golden.pim import macro as golden
from memwall.golden.pim import schedule as pim_schedule
from memwall.hdl.pim.core import descriptor_layout, result_layout
from memwall.hdl.pim.pu import result_words
from memwall.verif.common.edram import PimMacro
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import StreamSink, StreamSource, pack_struct, start

NEGATIVE_CONTROLS = ("refresh_off", "short_retention", "wrong_vref")
COUNTERS = ("activations", "sa_on", "sa_gated", "writes", "refreshes")


def config_from_params(params: dict) -> PimConfig:
    return PimConfig(**params["config"])


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


class Testbench:
    def __init__(self, dut, params: dict):
        self.dut, self.params = dut, params
        self.cfg = config_from_params(params)
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.stall = float(params.get("stall", 0.0))
        self.negative = params.get("negative")
        if self.negative is not None and self.negative not in NEGATIVE_CONTROLS:
            raise ValueError(f"negative control {self.negative!r}; known: {NEGATIVE_CONTROLS}")
        self.words = result_words(self.cfg)
        self.fields = {name: (f.offset, f.width) for name, f in result_layout(self.cfg)}
        self.decoded: list[dict] = []     # the sink's beats, decoded once each
        self.cycle = 0
        self.desc_cycles: list[int] = []
        self.result_cycles: list[int] = []

    def _macro(self, levels_used: set[int]) -> PimMacro:
        cfg = self.cfg
        retention = [cfg.retention_cycles(v) for v in range(cfg.levels)]
        vref = list(range(cfg.levels))
        for level in levels_used:
            if self.negative == "short_retention":
                retention[level] = cfg.refresh_interval(level) // 2
            if self.negative == "wrong_vref":
                vref[level] = (level + 1) % max(2, cfg.levels)
        return PimMacro(self.dut, cfg, retention_cycles=retention, vref_table=vref)

    async def _clock(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            self.macro.tick(self.cycle)
            if int(dut.desc__valid.value) and int(dut.desc__ready.value):
                self.desc_cycles.append(self.cycle)
            if int(dut.result__valid.value) and int(dut.result__ready.value):
                self.result_cycles.append(self.cycle)

    def _decode(self, item: dict) -> dict:
        """A ``result`` beat as {m, n0, last, sums (signed words), raw (the sums' bits)}."""
        value = {name: item["payload"] >> off & ((1 << width) - 1)
                 for name, (off, width) in self.fields.items()}
        acc = self.cfg.acc_bits
        words = [_signed(value["sums"] >> (w * acc) & ((1 << acc) - 1), acc)
                 for w in range(self.words)]
        return {"m": value["m"], "n0": value["n0"], "last": value["last"], "sums": words,
                "raw": value["sums"]}

    async def _psum_driver(self, source: StreamSource, sink: StreamSink, emissions: list,
                           offset: int):
        """Return each group's previous partial sums, as the unified buffer would."""
        seen: dict[tuple, int] = {}
        needs = []
        for e in emissions:
            key = (e["m"], e["n0"])
            if not e["first"]:
                needs.append((key, seen[key]))
            seen[key] = seen.get(key, 0) + 1
        emitted: dict[tuple, list] = {}   # this GEMM's groups so far, by (m, n0)
        for key, prior in needs:
            while len(emitted.get(key, ())) < prior:
                while len(self.decoded) < len(sink.items):
                    self.decoded.append(self._decode(sink.items[len(self.decoded)]))
                    if len(self.decoded) > offset:
                        g = self.decoded[-1]
                        emitted.setdefault((g["m"], g["n0"]), []).append(g)
                if len(emitted.get(key, ())) < prior:
                    await RisingEdge(self.dut.clk)
            await source.send(emitted[key][prior - 1]["raw"])

    def assemble(self, schedule, emissions: list[dict]) -> np.ndarray:
        """C from the final (last k-tile) emissions."""
        c = np.zeros((schedule.M, schedule.N), dtype=np.int64)
        for g in emissions:
            if g["last"]:
                width = min(self.words, schedule.N - g["n0"])
                c[g["m"], g["n0"]:g["n0"] + width] = g["sums"][:width]
        return c

    async def run(self) -> list[dict]:
        dut, cfg = self.dut, self.cfg
        cases = [(np.array(g["a"], dtype=np.int64), np.array(g["b"], dtype=np.int64),
                  golden.Schedule(**g["schedule"])) for g in self.params["gemms"]]
        dut.refresh_enable.value = 0 if self.negative == "refresh_off" else 1
        dut.macro_rdata.value = 0
        idle = self.stall
        clk = dut.clk
        # Every stream's valid and ready are driven (low) before reset ends.
        desc = StreamSource(dut, "desc", clk)
        weights = StreamSource(dut, "weights", clk, idle_prob=idle, rng=self.rng)
        inputs = StreamSource(dut, "inputs", clk, idle_prob=idle, rng=self.rng)
        psum = StreamSource(dut, "psum", clk, idle_prob=idle, rng=self.rng)
        sink = StreamSink(dut, "result", clk, ready_prob=1.0 - idle, rng=self.rng)
        await start(dut)
        self.macro = self._macro({s.vpd for _, _, s in cases})
        cocotb.start_soon(self._clock())
        cocotb.start_soon(sink.run())

        async def feed(source, beats):
            for beat in beats:
                await source.send(int(beat))

        outcomes = []
        for a, b, s in cases:
            expected = golden.simulate(cfg, a, b, s)
            before = {k: v for k, v in self.macro.counters[s.vpd].items()}
            offset = len(sink.items)
            feeders = [cocotb.start_soon(feed(weights, golden.weight_row_images(cfg, b, s))),
                       cocotb.start_soon(feed(inputs, golden.input_beats(cfg, a, s))),
                       cocotb.start_soon(self._psum_driver(psum, sink, expected["emissions"],
                                                           offset))]
            await desc.send(pack_struct(descriptor_layout(cfg), M=s.M, K=s.K, N=s.N, tm=s.tm,
                                        tk=s.tk, tn=s.tn, order=s.order_code, vpd=s.vpd))
            count = len(expected["emissions"])
            await sink.wait_for(offset + count, timeout_cycles=20 * expected["cycles"] + 1000)
            for feeder in feeders:
                await feeder
            got = [self._decode(i) for i in sink.items[offset:offset + count]]
            counts = {k: self.macro.counters[s.vpd][k] - before.get(k, 0) for k in COUNTERS}
            outcomes.append({
                "schedule": s, "a": a, "b": b, "expected": expected, "emissions": got,
                "c": self.assemble(s, got), "counters": counts,
                "cycles": self.result_cycles[offset + count - 1] - self.desc_cycles[-1]})
            while int(dut.busy.value):
                await RisingEdge(dut.clk)
        for _ in range(4):
            await RisingEdge(dut.clk)
        self.macro.finish(self.cycle)
        return outcomes

    def check(self, outcome: dict) -> list[str]:
        """Every mismatch of one GEMM with golden, as messages (empty: all match)."""
        exp, s = outcome["expected"], outcome["schedule"]
        where = f"{s}"
        problems = []
        for n, (e, g) in enumerate(zip(exp["emissions"], outcome["emissions"], strict=True)):
            if (e["m"], e["n0"], int(e["last"])) != (g["m"], g["n0"], g["last"]) \
                    or [int(v) for v in e["values"]] != g["sums"]:
                problems.append(f"{where} emission {n}: expected m={e['m']} n0={e['n0']} last="
                                f"{int(e['last'])} {list(e['values'])}, got m={g['m']} n0="
                                f"{g['n0']} last={g['last']} {g['sums']}")
                if len(problems) > 5:
                    break
        ref = outcome["a"] @ outcome["b"]
        if not np.array_equal(outcome["c"], ref):
            problems.append(f"{where}: C differs from A @ B in "
                            f"{int((outcome['c'] != ref).sum())} elements")
        for key in COUNTERS:
            if key == "refreshes" and self.stall:
                continue       # a stalled stream keeps rows alive longer: more refreshes
            if outcome["counters"][key] != exp["counters"][key]:
                problems.append(f"{where}: macro {key} {outcome['counters'][key]}, golden "
                                f"{exp['counters'][key]}")
        # The scheduler's closed form (what it optimises) against the macro as well.
        model = pim_schedule.counts(self.cfg, s, ones=golden.input_ones(self.cfg, outcome["a"]))
        for key in COUNTERS:
            if (key != "refreshes" or not self.stall) and outcome["counters"][key] != model[key]:
                problems.append(f"{where}: macro {key} {outcome['counters'][key]}, scheduler "
                                f"{model[key]}")
        if self.stall == 0 and outcome["cycles"] != exp["cycles"]:
            problems.append(f"{where}: cycles RTL {outcome['cycles']}, golden {exp['cycles']}")
        return problems

    def violations(self) -> list:
        return list(self.macro.retention_violations) + list(self.macro.vref_violations)


@cocotb.test()
async def gemm(dut):
    """GEMMs: bit-exact, counts, cycles, no violations (or, for a negative control, the
    violations it must cause)."""
    params = tb_params()
    tb = Testbench(dut, params)
    outcomes = await tb.run()
    violations = tb.violations()
    if tb.negative:
        caught = tb.macro.vref_violations if tb.negative == "wrong_vref" \
            else tb.macro.retention_violations
        assert caught, f"negative control {tb.negative}: the macro saw no such violation"
        dut._log.info("negative control %s: %d violations, first %s", tb.negative,
                      len(violations), violations[0])
    else:
        problems = [p for o in outcomes for p in tb.check(o)]
        problems += [f"macro protocol: {p}" for p in tb.macro.protocol[:5]]
        assert not violations, f"{len(violations)} violations; first {violations[0]}"
        assert not problems, "; ".join(problems[:6])
        dut._log.info("%d GEMMs match golden bit for bit (results, counters%s)", len(outcomes),
                      ", cycles" if tb.stall == 0 else "")
    if params.get("out"):
        with open(params["out"], "w") as f:
            json.dump([{"c": o["c"].tolist(), "cycles": o["cycles"],
                        "counters": {k: int(v) for k, v in o["counters"].items()}}
                       for o in outcomes], f)
