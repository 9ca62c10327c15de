"""cocotb testbench of one rDXE VAC (:class:`memwall.hdl.rdxe.vac.Vac`) on its generated Verilog,
bit-exact with :mod:`memwall.golden.rdxe.datapath` and :mod:`memwall.golden.common.fixedpoint`.

``params`` are the VAC's own ``params``. One test per scenario:

* ``gemv_rows``: GEMV rows from the weight memory, with INT8 (``narrow``) and INT16 outputs;
* ``pv_column``: a softmax-weighted P.V column from the KV cache, 7-bit-float numerators with
  their product shifts (the maximum token ``64 << 6`` included);
* ``pv_gather``: the same in the baseline layout: token-major rows written with one byte
  enabled, one byte (``gsel``) of a row gathered per beat into lane ``glane`` (lanes in random
  order), the MAC on the gathered word only;
* ``pv_vlink``: a VAC built with ``kv=False`` (no KV ports in its Verilog) taking the owner's KV
  read data from ``kv_link``;
* ``rc_wait_and_rows``: a finished sum waits while the RC is stale and fires the cycle after it
  loads; a VAC whose ``index`` is not below the beat's ``rows`` gives no result.

Checked on every cycle: each result and its accumulator, in order, exactly ``RESULT_LATENCY``
cycles after its ``last`` MAC beat, and no other ``result_valid``; ``hout`` and ``rc_out`` one
cycle behind ``hin`` and ``rc_in``; ``kv_rdata`` the word at the previous cycle's address (byte
enables modelled). Between beats, random bubbles: invalid beats whose other fields are random,
or half the time the control bits of the beat before (a stalled ``last`` or gather) with a random
payload; on the RC chain, a random factor with neither ``load`` nor ``clear``.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe import datapath as rdxe
from memwall.hdl.rdxe.vac import RC_LAYOUT, RESULT_LATENCY, SRC_KV, SRC_WMEM, Vac, beat_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, pack_lanes, pack_struct, start

#: Built without a KV cache: the tests that write one are skipped, ``pv_vlink`` runs.
_LINK = cocotb.top is not None and not hasattr(cocotb.top, "kv_be")


class Bench:
    """Drives one cycle at a time and checks what the VAC gives back on each.

    Inputs are driven after a rising edge; outputs are read after the next one, where cocotb
    sees the values of the cycle that just ended. So a register loaded by the edge of step ``k``
    is read in step ``k + 1``.
    """

    def __init__(self, dut):
        self.dut = dut
        self.vac = Vac(**tb_params())
        self.lanes = self.vac.lanes
        self.layout = beat_layout(self.lanes, self.vac.addr_bits)
        self.rng = np.random.default_rng(cocotb.RANDOM_SEED)
        self.board = Scoreboard(dut._name, dut._log)
        self.step_no = 0
        self.results: list[tuple[int, int, int]] = []    # (step, result, acc)
        # Without a KV cache: the owner's words behind kv_link, random until a test sets them.
        self.kv_mem = [self.bits(8 * self.lanes) for _ in range(self.vac.kv_words)]
        self.prev_hin = self.prev_rc = self.kv_read = 0
        self.prev_beat: dict = {}

    @classmethod
    async def create(cls, dut) -> Bench:
        tb = cls(dut)
        ports = ["wmem_we", "wmem_addr", "wmem_data", "index", "hin", "rc_in"]
        ports += ["kv_be", "kv_addr", "kv_data"] if tb.vac.kv else ["kv_link"]
        for name in ports:          # nothing floats (X) through reset
            getattr(dut, name).value = 0
        tb.clk = await start(dut)
        if tb.vac.kv:
            # As an earlier test of this run left them (reset keeps memories); the read
            # register has followed hin.addr (0) through reset.
            tb.kv_mem = [int(dut.kvmem[i].value) for i in range(tb.vac.kv_words)]
            tb.kv_read = tb.kv_mem[0]
        return tb

    def bits(self, n: int) -> int:
        return int.from_bytes(self.rng.bytes((n + 7) // 8), "little") & ((1 << n) - 1)

    def pack(self, values, width: int = 8) -> int:
        return pack_lanes(np.asarray(values), width)

    def bubble(self, like: dict | None = None) -> dict:
        """An invalid beat the VAC must ignore: every field random or, half the time, the
        control of beat ``like`` (gather, mac, last, ...) with a random payload."""
        beat = {name: self.bits(field.width) for name, field in self.layout}
        if like and self.rng.random() < 0.5:
            beat |= {name: like.get(name, 0) for name in ("src", "first", "last", "mac",
                                                          "gather")}
        return beat | {"valid": 0}

    async def step(self, beat: dict | None = None, rc: dict | None = None, **ports) -> int:
        """One cycle: ``beat`` on ``hin`` (else a bubble), ``rc`` on ``rc_in`` (else a random,
        inert factor), ``ports`` (write enables 0 unless given); the step's number."""
        dut, vac = self.dut, self.vac
        beat = beat if beat is not None else self.bubble()
        hin = pack_struct(self.layout, **beat)
        rc_word = pack_struct(RC_LAYOUT, **(rc or {"mant": self.bits(fx.RC_MANT_BITS),
                                                  "shift": self.bits(6),
                                                  "narrow": self.bits(1)}))
        dut.hin.value = hin
        dut.rc_in.value = rc_word
        dut.wmem_we.value = 0
        if vac.kv:
            dut.kv_be.value = 0
        else:
            # The owner's synchronous read of the previous beat's address; for a beat that
            # reads no KV word, random data the VAC must not use.
            prev = self.prev_beat
            if prev.get("valid") and prev.get("src") == SRC_KV:
                dut.kv_link.value = self.kv_mem[prev["addr"] % vac.kv_words]
            else:
                dut.kv_link.value = self.bits(8 * self.lanes)
        for name, value in ports.items():
            getattr(dut, name).value = value
        await RisingEdge(self.clk)
        self.step_no += 1
        n = self.step_no
        self.board.compare(f"step {n} hout", self.prev_hin, int(dut.hout.value))
        self.board.compare(f"step {n} rc_out", self.prev_rc, int(dut.rc_out.value))
        if vac.kv:
            self.board.compare(f"step {n} kv_rdata", self.kv_read, int(dut.kv_rdata.value))
            # This edge reads the word at the beat's address before this step's write lands.
            self.kv_read = self.kv_mem[beat["addr"] % vac.kv_words]
            be = ports.get("kv_be", 0)
            if be:
                old = self.kv_mem[ports["kv_addr"]]
                mask = sum(0xFF << (8 * i) for i in range(self.lanes) if be >> i & 1)
                self.kv_mem[ports["kv_addr"]] = old & ~mask | ports["kv_data"] & mask
        if int(dut.result_valid.value):
            self.results.append((n, dut.result.value.to_signed(),
                                 dut.result_acc.value.to_signed()))
        self.prev_hin, self.prev_rc, self.prev_beat = hin, rc_word, beat
        return n

    async def load_rc(self, rc, narrow: int) -> int:
        return await self.step(rc={"load": 1, "mant": int(rc[0]), "shift": int(rc[1]),
                                   "narrow": narrow})

    async def write_wmem(self, words: dict) -> None:
        for addr, word in words.items():
            await self.step(wmem_we=1, wmem_addr=addr, wmem_data=word)

    async def write_kv(self, words: dict) -> None:
        """``{addr: (word, byte enables)}``."""
        for addr, (word, be) in words.items():
            await self.step(kv_be=be, kv_addr=addr, kv_data=word)

    async def run(self, beats: list[dict], want: list[tuple[int, int]]) -> None:
        """``beats`` with random bubbles between them, then idle cycles; the results of the run
        must be ``want`` (result, acc) in order, each ``RESULT_LATENCY`` steps after its last
        MAC beat (the RC is current)."""
        first = len(self.results)
        due = []
        for beat in beats:
            n = await self.step(beat)
            if beat["valid"] and beat.get("last") and beat.get("mac"):
                due.append(n + RESULT_LATENCY)
            while self.rng.random() < 0.3:
                await self.step(self.bubble(beat))
        for _ in range(RESULT_LATENCY + 2):
            await self.step()
        self.check(self.results[first:], [(s, int(y), int(a)) for s, (y, a)
                                          in zip(due, want, strict=True)])

    def check(self, got: list, want: list) -> None:
        self.board.compare("number of results", len(want), len(got))
        for n, (w, g) in enumerate(zip(want, got, strict=False)):
            self.board.compare(f"result {n} (step, value, acc)", w, g)

    def mac_beat(self, x, sh=0, **fields) -> dict:
        # rows: any count above this VAC's index 0
        return {"valid": 1, "x": self.pack(x), "sh": self.pack(sh, 3) if np.ndim(sh) else 0,
                "mac": 1, "rows": int(self.rng.integers(1, 256)), **fields}


def _pv_case(rng, t: int):
    """Values ``v``, softmax numerators ``m << s`` and the column's accumulator."""
    v = rng.integers(-128, 128, t)
    m, s = fx.exp2_float(-rng.integers(0, 4000, t))
    m[0], s[0] = 64, fx.EXP_SHIFT_MAX                          # the maximum token
    return v, m, s, int((fx.exp2_value(m, s) * v).sum())


@cocotb.test()
async def gemv_rows(dut):
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    n, d = 5, 4 * lanes
    w, x = rng.integers(-128, 128, (n, d)), rng.integers(-128, 128, d)
    w[0], x[0] = -128, -128                                   # the corner product 2**14
    c = d // lanes
    await tb.write_wmem({r * c + k: tb.pack(w[r, k * lanes:(k + 1) * lanes])
                         for r in range(n) for k in range(c)})
    beats = [tb.mac_beat(x[k * lanes:(k + 1) * lanes], src=SRC_WMEM, addr=r * c + k,
                         first=int(k == 0), last=int(k == c - 1))
             for r in range(n) for k in range(c)]
    acc = rdxe.gemv_acc(w, x)
    rc = fx.rc_from_float(0.013)                              # saturates some INT8 outputs
    for narrow, bits in ((1, 8), (0, 16)):
        await tb.load_rc(rc, narrow)
        await tb.run(beats, list(zip(rdxe.vac_out(acc, rc, bits).tolist(), acc.tolist(),
                                     strict=True)))
    tb.board.result()


@cocotb.skipif(_LINK, reason="the VAC has no KV cache")
@cocotb.test()
async def pv_column(dut):
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    t = 3 * lanes
    v, m, s, want_acc = _pv_case(rng, t)
    rc = fx.rc_from_float(1.0 / 7000)
    base = int(rng.integers(0, tb.vac.kv_words - t // lanes))
    await tb.write_kv({base + k: (tb.pack(v[k * lanes:(k + 1) * lanes]), (1 << lanes) - 1)
                       for k in range(t // lanes)})
    beats = [tb.mac_beat(m[k * lanes:(k + 1) * lanes], s[k * lanes:(k + 1) * lanes],
                         src=SRC_KV, addr=base + k, first=int(k == 0),
                         last=int(k == t // lanes - 1))
             for k in range(t // lanes)]
    await tb.load_rc(rc, 1)
    await tb.run(beats, [(int(rdxe.vac_out(want_acc, rc)), want_acc)])
    tb.board.result()


@cocotb.skipif(_LINK, reason="the VAC has no KV cache")
@cocotb.test()
async def pv_gather(dut):
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    t = 8 * lanes                    # enough bubbles to catch a gather on an invalid beat
    v, m, s, want_acc = _pv_case(rng, t)
    rc = fx.rc_from_float(1.0 / 7000)
    # Baseline layout: token-major rows (row = token), byte gsel of a row holds this VAC's
    # dimension. Rows start random; the value is then written with only its byte enabled, the
    # other bytes of the data word random (they must not land).
    gsel = rng.integers(0, lanes, t)
    await tb.write_kv({tok: (tb.bits(8 * lanes), (1 << lanes) - 1) for tok in range(t)})
    await tb.write_kv({tok: (tb.bits(8 * lanes) & ~(0xFF << (8 * int(gsel[tok])))
                             | (int(v[tok]) & 0xFF) << (8 * int(gsel[tok])),
                             1 << int(gsel[tok])) for tok in range(t)})
    beats = []
    for k in range(t // lanes):
        order = rng.permutation(lanes)
        for j, lane in enumerate(order.tolist()):
            tok = k * lanes + lane
            mac = j == lanes - 1
            # Gather-only beats carry random operands: only the MAC beat's x and sh count.
            x = m[k * lanes:(k + 1) * lanes] if mac else rng.integers(-128, 128, lanes)
            sh = s[k * lanes:(k + 1) * lanes] if mac else rng.integers(0, 8, lanes)
            beats.append(tb.mac_beat(x, sh, src=SRC_KV, addr=tok, first=int(k == 0),
                                     last=int(k == t // lanes - 1), mac=int(mac), gather=1,
                                     gsel=int(gsel[tok]), glane=lane))
    await tb.load_rc(rc, 1)
    await tb.run(beats, [(int(rdxe.vac_out(want_acc, rc)), want_acc)])
    tb.board.result()


@cocotb.skipif(not _LINK, reason="the VAC owns a KV cache")
@cocotb.test()
async def pv_vlink(dut):
    """A VAC without a KV cache: its KV words come over kv_link, one cycle after the address
    (the owner's synchronous read), from the same position in the owning VAC."""
    for port in ("kv_be", "kv_addr", "kv_data", "kv_rdata"):
        assert not hasattr(dut, port), f"a VAC built with kv=False has a {port} port"
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    t = 3 * lanes
    v, m, s, want_acc = _pv_case(rng, t)
    rc = fx.rc_from_float(1.0 / 5000)
    base = int(rng.integers(0, tb.vac.kv_words - t // lanes))
    for k in range(t // lanes):
        tb.kv_mem[base + k] = tb.pack(v[k * lanes:(k + 1) * lanes])
    beats = [tb.mac_beat(m[k * lanes:(k + 1) * lanes], s[k * lanes:(k + 1) * lanes],
                         src=SRC_KV, addr=base + k, first=int(k == 0),
                         last=int(k == t // lanes - 1))
             for k in range(t // lanes)]
    await tb.load_rc(rc, 1)
    await tb.run(beats, [(int(rdxe.vac_out(want_acc, rc)), want_acc)])
    tb.board.result()


@cocotb.test()
async def rc_wait_and_rows(dut):
    """One-beat sums under a stale RC: each fires the cycle after both it is finished and the
    RC has loaded, and only where ``index < rows`` (8-bit, unsigned)."""
    tb = await Bench.create(dut)
    rng, lanes = tb.rng, tb.lanes
    w = rng.integers(-128, 128, lanes)
    await tb.write_wmem({3: tb.pack(w)})
    # (index, rows, wait): the RC loads ``wait`` cycles too late for the result to be on time
    # (None: before the beat; -1: early enough; 0: just in time).
    episodes = [(1, 2, 6), (2, 2, 0), (0, 1, None), (0, 1, -1), (0, 1, 0), (3, 4, 1),
                (200, 201, 3), (201, 200, 2)]
    episodes += [(int(rng.integers(0, 256)), int(rng.integers(0, 256)),
                  [None, *range(-1, 5)][int(rng.integers(0, 7))]) for _ in range(4)]
    rc = fx.rc_from_float(0.02)
    got_from, want = len(tb.results), []
    for index, rows, wait in episodes:
        dut.index.value = index
        x = rng.integers(-128, 128, lanes)
        acc = int(rdxe.gemv_acc(w[None, :], x)[0])
        await tb.step(rc={"clear": 1})                       # the RC is stale from here
        load = await tb.load_rc(rc, 1) if wait is None else None
        beat = await tb.step(tb.mac_beat(x, src=SRC_WMEM, addr=3, first=1, last=1, rows=rows))
        for _ in range(RESULT_LATENCY - 3 + (wait or 0)):
            await tb.step()
        if wait is not None:
            load = await tb.load_rc(rc, 1)
        for _ in range(4):
            await tb.step()
        if index < rows:
            due = max(beat + RESULT_LATENCY, load + 2)
            want.append((due, int(rdxe.vac_out(acc, rc)), acc))
    tb.check(tb.results[got_from:], want)
    tb.board.result()
