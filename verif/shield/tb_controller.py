"""cocotb testbench: SHIELD controller + behavioural eDRAM banks against the golden model.

Each cycle one monitor coroutine (:meth:`ShieldTestbench.clock_loop`) lets the three
:class:`~memwall.verif.common.edram.EdramBank` models act on the controller's bank ports, checks
the refresh strobes of that cycle against the schedule of :mod:`memwall.golden.shield.refresh`
(computed from the commands accepted so far), and records the command the controller accepted. The
stimulus coroutines only drive ``req`` through the shared :class:`StreamSource`; read data comes
back through a :class:`StreamSink` and is checked against what was written.

Checks (labels as they appear in failures):

* ``<bank> refresh schedule``: the (cycle, row) refreshes equal, exactly, the golden schedule:
  row ``r`` at every ``t`` with ``t mod T == (r*T)//R`` while the row is live (nominal ``T``;
  a row is live while any row of its class's ``live_block_rows`` block holds a live word).
* ``<bank> retention``: no live cell of a refreshed bank went longer than its interval between
  restores (writes or row refreshes), read from the eDRAM model's per-cell bookkeeping.
* ``sign+exponent``, ``KV mantissa``: bit-exact after any time in the eDRAM.
* ``QO mantissa BER``: bit errors of the refresh-less field, counted once per QO word life (its
  last read, at most ``qo_life_us`` after the write), stay within a binomial bound on the
  paper's 0.04 % (see :func:`ber_limit`).
* ``protocol``: a bank never gets a refresh together with an access, or an address out of range.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import deque
from pathlib import Path

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, RisingEdge

from memwall.boundary import checkpoint
from memwall.families.shield.config import ShieldConfig
from memwall.golden.shield import refresh as golden
from memwall.golden.shield.trace import Step, Trace, load_trace
from memwall.hdl.shield.controller import BANKS, REFRESHED_BANKS, Cls, Op, request_layout
from memwall.verif.common.edram import EdramBank
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, pack_struct, start

#: chance that a run with a correct controller fails the BER check by bad luck
BER_FALSE_ALARM = 1e-6


def slot_phase(row: int, rows: int, interval: int) -> int:
    """The schedule's definition (golden.shield module doc), written out here rather than taken
    from the RTL: row ``row`` is refreshed in cycles ``t`` with ``t mod interval`` equal to this."""
    return (row * interval) // rows


def config_from_params(p: dict) -> ShieldConfig:
    return ShieldConfig(**p["config"])


def config_params(cfg: ShieldConfig) -> dict:
    """The config as ``simulate`` params (JSON); :func:`config_from_params` rebuilds it."""
    return dataclasses.asdict(cfg)


def ber_limit(bits: int, p: float, false_alarm: float = BER_FALSE_ALARM) -> int:
    """Smallest ``k`` with ``P(Binomial(bits, p) > k) <= false_alarm``.

    Each counted mantissa bit is one independent cell observed once, at an age of at most the QO
    life, so it reads wrong with probability at most ``p = ber(refreshless, qo_life_us)``
    (``ber`` is non-decreasing in age). The number of wrong bits is then stochastically
    dominated by ``Binomial(bits, p)``; a correct design exceeds ``k`` with probability at most
    ``false_alarm``.
    """
    k, cdf = 0, 0.0
    pmf = (1.0 - p) ** bits
    while True:
        cdf += pmf
        if 1.0 - cdf <= false_alarm or k >= bits:
            return k
        pmf *= (bits - k) / (k + 1) * p / (1.0 - p)
        k += 1


class ShieldScoreboard(Scoreboard):
    """The shared scoreboard plus bound checks and first-difference reports of event lists."""

    def bound(self, label: str, value, limit) -> None:
        self.checked += 1
        if not value <= limit:
            self._fail(f"{self.name} {label}: {value} exceeds the bound {limit}")

    def events(self, label: str, expected: list, observed: list) -> None:
        self.checked += 1
        if expected != observed:
            first = next((i for i, (e, o) in enumerate(zip(expected, observed, strict=False))
                          if e != o), min(len(expected), len(observed)))
            exp = expected[first] if first < len(expected) else "nothing"
            obs = observed[first] if first < len(observed) else "nothing"
            self._fail(f"{self.name} {label}: {len(expected)} expected, {len(observed)} seen; "
                       f"first difference at event {first}: expected {exp}, seen {obs}")

    def _fail(self, msg: str) -> None:
        self.failures.append(msg)
        if self.log:
            self.log.error(msg)

    def labels(self) -> str:
        return "\n".join(self.failures)


@dataclasses.dataclass
class Read:
    cycle: int          # accepted
    cls: str
    addr: int
    expected: int | None  # None: the word is not live (not checked)
    age: int            # cycles since the word was written
    measure: bool       # counts towards the QO mantissa BER (last read of a word life)
    out_of_range: bool = False  # addr outside its class: the whole word must read 0


class ShieldTestbench:
    """Drivers, eDRAM models, golden schedule and checks around one ShieldController."""

    def __init__(self, dut, clk, cfg: ShieldConfig, seed: int, *, resp_ready: float = 1.0,
                 idle_prob: float = 0.0):
        self.dut, self.clk, self.cfg = dut, clk, cfg
        self.rng = random.Random(seed)
        self.layout = request_layout(cfg)
        self.lo_bits, self.word_bits = cfg.lo_bits, cfg.word_bits
        self.size = {"kv": cfg.kv_words, "qo": cfg.qo_words}
        self.banks = {bank: EdramBank(dut, bank, cfg, self._ber, random.Random(seed * 3 + k))
                      for k, bank in enumerate(BANKS)}
        self.source = StreamSource(dut, "req", clk, idle_prob=idle_prob,
                                   rng=random.Random(seed + 1))
        self.sink = StreamSink(dut, "resp", clk, ready_prob=resp_ready,
                               rng=random.Random(seed + 2))
        # Golden schedule (nominal intervals): phase -> row.
        self.interval = {"standard": cfg.t_std_cycles, "relaxed": cfg.t_rel_cycles}
        self.slot_row = {b: {slot_phase(r, cfg.bank_rows[b], self.interval[b]): r
                             for r in range(cfg.bank_rows[b])} for b in REFRESHED_BANKS}
        self.expected_refresh = {b: [] for b in REFRESHED_BANKS}
        self.observed_refresh = {b: [] for b in REFRESHED_BANKS}
        # Shadow of the accepted commands (updated in the cycle they are accepted).
        self.mem: dict[str, dict[int, tuple[int, int]]] = {"kv": {}, "qo": {}}
        self.kv_rows: set[int] = set()       # relaxed row r == standard row r
        self.qo_std_rows: set[int] = set()   # standard rows holding live QO words
        self.reads: list[Read] = []
        self.measure_flags: deque[bool] = deque()
        self.accepted = 0
        self.last_accept = 0
        self.stalls = 0                      # cycles a presented command was not accepted
        self.log: list[tuple[int, str, str, int]] = []   # accepted (cycle, op, cls, addr)
        self.now = 0
        self.probe_wanted = False
        self.probe: tuple[int, dict[str, int]] | None = None

    def _ber(self, bank: str, elapsed_us: float) -> float:
        return golden.ber(self.cfg, bank, elapsed_us)

    # -- the per-cycle monitor ------------------------------------------------------------------
    async def clock_loop(self) -> None:
        valid, ready, payload = self.dut.req__valid, self.dut.req__ready, self.dut.req__payload
        banks = self.banks
        while True:
            await RisingEdge(self.clk)
            self.now = t = self.now + 1
            for bank in REFRESHED_BANKS:
                row = banks[bank].tick(t)
                if row is not None:
                    self.observed_refresh[bank].append((t, row))
                slot = self.slot_row[bank].get(t % self.interval[bank])
                if slot is not None and self._row_live(bank, slot):
                    self.expected_refresh[bank].append((t, slot))
            banks["refreshless"].tick(t)
            if self.probe_wanted:
                self.probe_wanted = False
                self.probe = (t, {b: banks[b].refreshes(before=t) for b in REFRESHED_BANKS})
            if valid.value:
                if ready.value:
                    self._accept(t, int(payload.value))
                else:
                    self.stalls += 1

    def _row_live(self, bank: str, row: int) -> bool:
        return row in self.kv_rows or (bank == "standard" and row in self.qo_std_rows)

    def _block(self, cls: str, row: int) -> range:
        """The standard rows of ``row``'s liveness block in class ``cls``."""
        cfg, b = self.cfg, self.cfg.live_block_rows
        first, end = (0, cfg.bank_rows["relaxed"]) if cls == "kv" else \
            (cfg.kv_words // cfg.row_words, cfg.bank_rows["standard"])
        start = first + (row - first) // b * b
        return range(start, min(start + b, end))

    def _field(self, word: int, name: str) -> int:
        f = self.layout[name]
        return word >> f.offset & ((1 << f.width) - 1)

    def _accept(self, t: int, word: int) -> None:
        self.accepted += 1
        self.last_accept = t
        op, cls = self._field(word, "op"), ("kv", "qo")[self._field(word, "cls")]
        addr, data = self._field(word, "addr"), self._field(word, "data")
        cfg = self.cfg
        std_addr = addr if cls == "kv" else cfg.kv_words + addr
        self.log.append((t, Op(op).name.lower() if op in (0, 1, 2) else "?", cls, addr))
        if op == Op.WRITE.value and addr < self.size[cls]:
            self.mem[cls][addr] = (data, t)
            if cls == "kv":
                self.kv_rows.update(self._block(cls, addr // cfg.row_words))
            else:
                self.qo_std_rows.update(self._block(cls, std_addr // cfg.row_words))
        elif op == Op.READ.value:
            entry = self.mem[cls].get(addr)
            if addr >= self.size[cls]:    # a protocol error: documented to return 0
                self.reads.append(Read(t, cls, addr, 0, 0, self.measure_flags.popleft(),
                                       out_of_range=True))
            else:
                self.reads.append(Read(t, cls, addr, entry and entry[0],
                                       t - entry[1] if entry else 0,
                                       self.measure_flags.popleft()))
        elif op == Op.RELEASE.value:
            self.mem[cls].clear()
            if cls == "kv":
                self.kv_rows.clear()
                self.banks["standard"].kill(range(cfg.kv_words), t)
                self.banks["relaxed"].kill(range(cfg.kv_words), t)
            else:
                self.qo_std_rows.clear()
                self.banks["standard"].kill(range(cfg.kv_words, cfg.total_words), t)
                self.banks["refreshless"].kill(range(cfg.qo_words), t)

    # -- stimulus -------------------------------------------------------------------------------
    def _payload(self, op: Op, cls: str, addr: int = 0, data: int = 0) -> int:
        return pack_struct(self.layout, op=op, cls=Cls.KV if cls == "kv" else Cls.QO,
                           addr=addr, data=data)

    async def write(self, cls: str, addr: int, data: int | None = None) -> None:
        if data is None:
            data = self.rng.getrandbits(self.word_bits)
        await self.source.send(self._payload(Op.WRITE, cls, addr, data))

    async def read(self, cls: str, addr: int, measure: bool = False) -> None:
        self.measure_flags.append(measure)
        await self.source.send(self._payload(Op.READ, cls, addr))

    async def release(self, cls: str) -> None:
        await self.source.send(self._payload(Op.RELEASE, cls))

    async def protocol_error(self, rng: random.Random) -> None:
        """One command the controller must shrug off (its docstring): a WRITE or READ with an
        address outside its class (dropped; reads 0), or the undefined op code 3 (ignored)."""
        cls = rng.choice(("kv", "qo"))
        addr = rng.randrange(self.size[cls], 1 << self.cfg.addr_width)
        kind = rng.random()
        if kind < 0.4:
            await self.write(cls, addr)
        elif kind < 0.8:
            await self.read(cls, addr)
        else:
            word = self._payload(Op.READ, cls, rng.randrange(1 << self.cfg.addr_width),
                                 rng.getrandbits(self.word_bits))
            op = self.layout["op"]
            await self.source.send(word | ((1 << op.width) - 1) << op.offset)

    async def idle(self, cycles: int) -> None:
        if cycles > 0:
            await ClockCycles(self.clk, cycles)

    async def counters(self) -> tuple[int, dict[str, int]]:
        """(t, counts): the refreshes the banks saw in the cycles before ``t`` (the next
        cycle's start)."""
        self.probe, self.probe_wanted = None, True
        while self.probe is None:
            await RisingEdge(self.clk)
        return self.probe

    async def drain(self) -> None:
        """Wait until every read sent has been answered and the monitor has caught up."""
        await RisingEdge(self.clk)
        await RisingEdge(self.clk)
        await self.sink.wait_for(len(self.reads))

    # -- checks ---------------------------------------------------------------------------------
    def check_reads(self, board: ShieldScoreboard) -> dict:
        """Compare every response with the word written; returns error statistics."""
        items = self.sink.items
        board.compare("responses received (one per READ accepted, none for other commands)",
                      len(self.reads), len(items))
        stray = [(r.cls, r.addr, item["payload"]) for r, item in zip(self.reads, items,
                                                                     strict=False)
                 if r.out_of_range and item["payload"] != 0]
        board.events("reads outside their class that did not return 0 (cls, addr, word)", [],
                     stray)
        lo_mask = (1 << self.lo_bits) - 1
        exp = {"hi": [], "kv": []}
        obs = {"hi": [], "kv": []}
        stats = {"reads": 0, "bit_errors": {"hi": 0, "kv_mantissa": 0, "qo_mantissa": 0},
                 "qo_bits_measured": 0, "qo_errors_measured": 0, "qo_expected_errors": 0.0,
                 "qo_max_age": 0}
        qo_ber = self.banks["refreshless"].ber_at
        for read, item in zip(self.reads, items, strict=False):
            if read.expected is None or read.out_of_range:
                continue
            got = item["payload"]
            stats["reads"] += 1
            exp["hi"].append(read.expected >> self.lo_bits)
            obs["hi"].append(got >> self.lo_bits)
            stats["bit_errors"]["hi"] += bin((read.expected ^ got) >> self.lo_bits).count("1")
            flips = bin((read.expected ^ got) & lo_mask).count("1")
            if read.cls == "kv":
                exp["kv"].append(read.expected & lo_mask)
                obs["kv"].append(got & lo_mask)
                stats["bit_errors"]["kv_mantissa"] += flips
            else:
                stats["bit_errors"]["qo_mantissa"] += flips
                if read.measure:
                    stats["qo_bits_measured"] += self.lo_bits
                    stats["qo_errors_measured"] += flips
                    stats["qo_expected_errors"] += self.lo_bits * qo_ber(read.age)
                    stats["qo_max_age"] = max(stats["qo_max_age"], read.age)
        board.compare("sign+exponent fields", np.array(exp["hi"]), np.array(obs["hi"]))
        if exp["kv"]:
            board.compare("KV mantissa fields", np.array(exp["kv"]), np.array(obs["kv"]))
        return stats

    def check_qo_ber(self, board: ShieldScoreboard, stats: dict) -> None:
        cfg = self.cfg
        life = cfg.interval_cycles(cfg.qo_life_us)
        board.bound("QO word age at its measured read (cycles; stimulus stays within the QO "
                    "life)", stats["qo_max_age"], life)
        p = golden.ber(cfg, "refreshless", cfg.qo_life_us)
        n = stats["qo_bits_measured"]
        limit = ber_limit(n, p)
        stats.update(qo_ber_bound=p, qo_error_limit=limit,
                     qo_ber_measured=stats["qo_errors_measured"] / n if n else 0.0)
        board.bound(f"QO mantissa BER: bit errors in {n} measured bits (bound ber("
                    f"{cfg.qo_life_us} us) = {p:.3g}, false-alarm {BER_FALSE_ALARM:g})",
                    stats["qo_errors_measured"], limit)

    def check_refresh(self, board: ShieldScoreboard) -> None:
        """Schedule, retention bound and protocol; call after :meth:`drain`."""
        for bank in REFRESHED_BANKS:
            board.events(f"{bank} refresh schedule (cycle, row)", self.expected_refresh[bank],
                         self.observed_refresh[bank])
            model = self.banks[bank]
            model.finish(self.now)
            board.bound(f"{bank} retention: longest time a live cell went without a restore "
                        f"(cycles; worst (age, address, cycle) {model.worst})",
                        model.max_age, self.interval[bank])
        for bank in BANKS:
            board.events(f"{bank} protocol", [], self.banks[bank].protocol)

# --- workloads -----------------------------------------------------------------------------------

async def layered_workload(tb: ShieldTestbench, layers: int, rng: random.Random,
                           protocol_errors: float = 0.0) -> None:
    """Decoder-like traffic: a growing KV cache and per-layer QO buffers that die at layer end.

    Per layer: write the QO words (random order), interleave random KV/QO reads, KV appends and
    short idle gaps, idle like an FFN, then read every QO word once more (the measured read,
    at an age up to close to the QO life), sweep the KV cache and release QO. Halfway the KV
    cache is released and refilled. Covers many standard intervals and several relaxed ones.
    With ``protocol_errors`` > 0, that share of the random commands are ones the controller
    must ignore (:meth:`ShieldTestbench.protocol_error`).
    """
    cfg = tb.cfg
    kv_words, qo_words = cfg.kv_words, cfg.qo_words
    life = cfg.interval_cycles(cfg.qo_life_us)
    kv_n = 0

    async def prefill():
        nonlocal kv_n
        kv_n = rng.randint(kv_words // 2, max(kv_words // 2, 3 * kv_words // 4))
        for a in range(kv_n):
            await tb.write("kv", a)

    await prefill()
    for layer in range(layers):
        if layer == layers // 2:
            await tb.release("kv")
            await tb.idle(rng.randint(0, 50))
            await prefill()
        t0 = tb.now
        qo_n = qo_words if rng.random() < 0.7 else rng.randint(max(1, qo_words // 2), qo_words)
        qo_addrs = rng.sample(range(qo_words), qo_n)
        for a in qo_addrs:
            await tb.write("qo", a)
        # The measured read starts at `deadline`; writing and reading the QO words take about
        # the same time (stalls included), so the oldest word is read at about `target` old.
        # The check of the ages read keeps the stimulus honest (<= the QO life).
        target = rng.randint(life * 6 // 10, life - 60)
        deadline = t0 + target - 3 * qo_n
        while tb.now < deadline - 200:
            if rng.random() < protocol_errors:
                await tb.protocol_error(rng)
                continue
            r = rng.random()
            if r < 0.35:
                await tb.read("kv", rng.randrange(kv_n))
            elif r < 0.65:
                await tb.read("qo", rng.choice(qo_addrs))
            elif r < 0.75 and kv_n < kv_words:
                await tb.write("kv", kv_n)
                kv_n += 1
            elif r < 0.8:
                await tb.write("kv", rng.randrange(kv_n))  # overwrite: restores one cell
            else:
                await tb.idle(rng.randint(1, 60))
        await tb.idle(deadline - tb.now)                    # FFN: QO sits idle
        for a in rng.sample(qo_addrs, len(qo_addrs)):
            await tb.read("qo", a, measure=True)
        for a in range(kv_n):
            await tb.read("kv", a)
        await tb.release("qo")
        await tb.idle(rng.randint(0, 200))


async def _setup(dut, resp_ready=1.0, idle_prob=0.0):
    p = tb_params()
    cfg = config_from_params(p)
    clk = await start(dut)
    tb = ShieldTestbench(dut, clk, cfg, cocotb.RANDOM_SEED, resp_ready=resp_ready,
                         idle_prob=idle_prob)
    cocotb.start_soon(tb.clock_loop())
    cocotb.start_soon(tb.sink.run())
    return p, cfg, tb


@cocotb.test()
async def random_workload(dut):
    """(a) Interleaved KV/QO traffic over many refresh intervals: data, BER, schedule, bounds."""
    p, cfg, tb = await _setup(dut, resp_ready=0.7, idle_prob=0.1)
    await layered_workload(tb, p.get("layers", 7), random.Random(cocotb.RANDOM_SEED + 5),
                           p.get("protocol_errors", 0.0))
    await tb.drain()
    board = ShieldScoreboard("shield", dut._log)
    stats = tb.check_reads(board)
    tb.check_qo_ber(board, stats)
    tb.check_refresh(board)
    dut._log.info("cycles %d, commands %d, reads %d; refreshes %s; bit errors %s; QO BER "
                  "%d/%d bits = %.3g (expected %.2f errors, limit %d; max age %d cycles); "
                  "longest live-cell gaps %s", tb.now, tb.accepted, stats["reads"],
                  {b: tb.banks[b].refreshes() for b in REFRESHED_BANKS}, stats["bit_errors"],
                  stats["qo_errors_measured"], stats["qo_bits_measured"],
                  stats["qo_ber_measured"], stats["qo_expected_errors"],
                  stats["qo_error_limit"], stats["qo_max_age"],
                  {b: tb.banks[b].max_age for b in REFRESHED_BANKS})
    board.result()


@cocotb.test()
async def broken_schedule_detected(dut):
    """(b) With ``interval_scale > 1`` the same checks must catch the late refreshes."""
    p, cfg, tb = await _setup(dut, resp_ready=0.7, idle_prob=0.1)
    assert p.get("interval_scale", 1) > 1, "run this test on a controller with interval_scale > 1"
    await layered_workload(tb, p.get("layers", 7), random.Random(cocotb.RANDOM_SEED + 5))
    await retention_stress(tb, p.get("stress_epochs", 3))
    await tb.drain()
    board = ShieldScoreboard("shield", dut._log)
    stats = tb.check_reads(board)
    tb.check_refresh(board)
    report = board.labels()
    relaxed = tb.banks["relaxed"]
    p_miss = math.exp(relaxed.log_clean_reads)
    dut._log.info("broken schedule: %d failures; bit errors %s; chance that the KV mantissa "
                  "reads would all have come back clean: %.3g\n%s", len(board.failures),
                  stats["bit_errors"], p_miss, report)
    # The stimulus must make corruption near-certain, or a pass would prove little.
    assert p_miss <= 1e-6, f"stimulus too weak: KV corruption missed with probability {p_miss}"
    for bank in REFRESHED_BANKS:
        assert f"{bank} refresh schedule" in report, f"{bank}: wrong schedule not detected"
        assert f"{bank} retention" in report, f"{bank}: retention violation not detected"
    assert "KV mantissa fields" in report, "no corrupted KV mantissa was detected"


async def retention_stress(tb: ShieldTestbench, epochs: int) -> None:
    """Fresh KV data left alone for longer than T_rel, then read: under a broken schedule
    (``interval_scale`` >= 4) some of its rows are not refreshed in time and corrupt."""
    cfg = tb.cfg
    for _ in range(epochs):
        await tb.release("kv")
        for a in range(cfg.kv_words):
            await tb.write("kv", a)
        await tb.idle(4 * cfg.t_rel_cycles)
        for a in range(cfg.kv_words):
            await tb.read("kv", a)


@cocotb.test()
async def refresh_power(dut):
    """(c) Every row live for >= 100 relaxed intervals: refreshes x row energy = P_SHIELD."""
    p, cfg, tb = await _setup(dut)
    for a in range(cfg.kv_words):
        await tb.write("kv", a)
    for a in range(cfg.qo_words):
        await tb.write("qo", a)
    await tb.drain()
    t0, c0 = await tb.counters()
    await tb.idle(p.get("relaxed_intervals", 100) * cfg.t_rel_cycles)
    t1, c1 = await tb.counters()     # counts of the window [t0, t1), all rows live throughout
    window = t1 - t0
    board = ShieldScoreboard("shield power", dut._log)
    counts = {b: c1[b] - c0[b] for b in REFRESHED_BANKS}
    # Exact: every row refreshed once per slot in [t0, t1).
    for bank in REFRESHED_BANKS:
        rows, T = cfg.bank_rows[bank], tb.interval[bank]
        slots = sum(len(range(t0 + (slot_phase(r, rows, T) - t0) % T, t1, T))
                    for r in range(rows))
        board.compare(f"{bank} refreshes in [{t0}, {t1})", slots, counts[bank])
    duration_us = window / cfg.clock_mhz
    energy = sum(counts[b] * golden.row_refresh_energy_nj(cfg, b) for b in REFRESHED_BANKS)
    p_rtl = cfg.p_leak_mw + energy / duration_us
    f = cfg.kv_words / cfg.total_words
    p_gold = golden.p_shield(cfg, f)
    eta_rtl = 1 - p_rtl / golden.p_base(cfg)
    eta_gold = golden.eta(cfg, f)
    eta9_rtl = 1 - (energy / duration_us) / golden.p_ref_std(cfg)
    eta9_gold = golden.eta_eq9(cfg, f)
    board.bound("P_SHIELD relative error", abs(p_rtl / p_gold - 1), 0.01)
    board.bound("eta relative error", abs(eta_rtl / eta_gold - 1), 0.01)
    board.bound("eta (Eq. 9, refresh only) relative error", abs(eta9_rtl / eta9_gold - 1), 0.01)
    tb.check_refresh(board)
    result = {"window_cycles": window, "refreshes": counts, "p_shield_rtl_mw": p_rtl,
              "p_shield_golden_mw": p_gold, "eta_rtl": eta_rtl, "eta_golden": eta_gold,
              "eta_eq9_rtl": eta9_rtl, "eta_eq9_golden": eta9_gold, "kv_fraction": f}
    dut._log.info("refresh power: %s", json.dumps(result))
    if p.get("out"):
        Path(p["out"]).write_text(json.dumps(result, indent=2) + "\n")
    board.result()


def executed_trace(log: list[tuple[int, str, str, int]], last: int, clock_mhz: float) -> Trace:
    """The commands accepted in cycles ``1 .. last``, as a golden trace on the same timeline.

    Golden cycle ``c`` is RTL cycle ``c``: a word written in cycle ``a`` is live from ``a + 1``
    in both; an RTL release in cycle ``a`` kills from ``a + 1``, a golden release at cursor
    ``a + 1``; the golden trace spans cycles ``0 .. last`` (cycle 0 idle), so it counts
    refreshes in cycles ``1 .. last`` as the testbench counts the RTL's.
    """
    steps, cursor = [], 0

    def idle_to(cycle: int) -> None:
        nonlocal cursor
        if cycle > cursor:
            steps.append(Step("idle", us=(cycle - cursor) / clock_mhz))
            cursor = cycle

    for t, op, cls, addr in log:
        if op in ("write", "read"):
            idle_to(t)
            steps.append(Step(op, cls, addr, 1))
            cursor += 1
        elif op == "release":
            idle_to(t + 1)
            steps.append(Step("release", cls))
    idle_to(last + 1)
    return Trace(tuple(steps))


@cocotb.test()
async def run_trace(dut):
    """(d) Drive a ``golden.shield_trace`` trace; write refresh counts, cycles, data errors."""
    p, cfg, tb = await _setup(dut)
    checkpoint("simulation")   # inside the simulator: where a test of Ctrl-C stops the run
    trace = load_trace(p["trace"], cfg)
    data = random.Random(trace.seed)
    trailing = 0                  # idle cycles since the last command
    for step in trace.steps:
        if step.op in ("write", "read"):
            for a in range(step.addr, step.addr + step.words):
                if step.op == "write":
                    await tb.write(step.cls, a, data.getrandbits(cfg.word_bits))
                else:
                    await tb.read(step.cls, a)
            trailing = 0
        elif step.op == "release":
            await tb.release(step.cls)
            trailing = 0
        elif step.op == "idle":
            n = int(round(step.us * cfg.clock_mhz))
            await tb.idle(n)
            trailing += n
    await tb.drain()
    # The trace's last cycle: its last command's (cycle 1 is the first after reset, where the
    # first command is presented), plus the idle time after it.
    last = tb.last_accept + trailing
    board = ShieldScoreboard("shield trace", dut._log)
    t, counts = await tb.counters()
    refreshes = {b: counts[b] - tb.banks[b].refreshes(before=t, after=last)
                 for b in REFRESHED_BANKS}
    # The golden schedule on the trace as the RTL ran it (with its stall cycles) must give
    # exactly the RTL's counts; on the nominal trace (one access per cycle) the golden counts
    # miss the refreshes of the cycles the accesses waited for refresh.
    as_run = golden.expected_refresh_counts(cfg, executed_trace(tb.log, last, cfg.clock_mhz))
    for bank in REFRESHED_BANKS:
        board.compare(f"{bank} refreshes vs golden on the trace as run", as_run[bank],
                      refreshes[bank])
    nominal = golden.expected_refresh_counts(cfg, trace)
    stats = tb.check_reads(ShieldScoreboard("shield trace data", dut._log))
    tb.check_refresh(board)
    result = {"refresh_counts": {**refreshes, "refreshless": 0}, "cycles": last,
              "data_errors": sum(stats["bit_errors"].values()),
              "data_errors_by_field": stats["bit_errors"], "reads": stats["reads"],
              "stall_cycles": tb.stalls, "trace_cycles": trace.cycles(cfg.clock_mhz),
              "golden_refresh_counts": nominal, "golden_refresh_counts_as_run": as_run}
    dut._log.info("trace %s: %s", p["trace"], json.dumps(result))
    Path(p["out"]).write_text(json.dumps(result, indent=2) + "\n")
    board.result()
