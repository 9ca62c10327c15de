"""cocotb testbench of ``rdxe_group``: whole operations against :mod:`memwall.golden.rdxe.datapath`.

One seeded session on one tile group, every tile with its own operands and weights, tile 0's KV
cache shared over VLINK (GQA): GEMVs (rows not a multiple of the VACs, operands shorter than
the VAC count), GEMV with RMSNorm fused and sequential, K/V write-back of ``tokens`` tokens, a
GEMV whose INT8 results go back into the activation buffer (``DEST_ABUF``) as the next GEMV's
operand, QK with max-on-writeback, P.V fused and sequential, in the iWuR layout and again in
the baseline layout (``params["modes"]``: the VRC modes, default both; ``params["out_gain"]``
scales their output factors). Checked: every result and accumulator bit for bit; the KV cache
images against :func:`memwall.golden.rdxe.layout.kv_image`; in iWuR every KV read beat reads a
whole word (no gathers), in the baseline ``lanes`` one-byte gathers per word. With
``params["stall"]`` the streams stall at random (idle sources, back-pressure on results);
without, every MAC and write-back command takes exactly the cycles of
:func:`memwall.golden.rdxe.cycles.command_cycles`. Each command's cycles go to
``params["out"]``.
"""

from __future__ import annotations

import json
import random

import cocotb
import numpy as np
from cocotb.triggers import RisingEdge

from memwall.families.rdxe.config import RdxeConfig
from memwall.golden.common import fixedpoint as fx
from memwall.golden.rdxe import datapath as golden
from memwall.golden.rdxe.cycles import command_cycles
from memwall.golden.rdxe.layout import kv_image
from memwall.hdl.rdxe.core import result_layout
from memwall.hdl.rdxe.dxt import DEST_ABUF, addr_bits
from memwall.hdl.rdxe.program import Program
from memwall.hdl.rdxe.sequencer import command_layout
from memwall.hdl.rdxe.vac import SRC_KV, beat_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import Scoreboard, StreamSink, StreamSource, pack_struct, start


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def build_session(cfg: RdxeConfig, seed: int, d: int, n: int, tokens: int, dh: int,
                  modes=golden.MODES, out_gain: float = 1.0):
    """The session's program and, per command, the expected results ``(values, accs)`` per
    tile (None for commands without results), plus the KV images after each layout. The
    normalisations run in each of ``modes`` (the same operands whatever the modes).
    ``out_gain`` multiplies their static output factors: large, it drives the INT8 outputs
    past both saturation limits."""
    rng = np.random.default_rng(seed)
    tiles, lanes = cfg.gqa_group, cfg.lanes
    prog = Program(cfg)
    expect: list = []

    def note(results):
        while len(expect) < len(prog.commands) - 1:
            expect.append(None)
        expect.append(results)

    x = rng.integers(-128, 128, (tiles, d))
    x[:, 0] = -128
    gain = rng.integers(-128, 128, (tiles, d))
    w = rng.integers(-128, 128, (tiles, n, d))
    w_short = rng.integers(-128, 128, (tiles, n, lanes))
    # Its own generator, so the session's other operands stay what they were.
    w_chain = np.random.default_rng([seed, 1]).integers(-128, 128, (tiles, n, n))
    wc = -(-d // lanes)
    a_x, a_g, a_q, a_kv, a_chain = 0, wc, 2 * wc, 3 * wc, 4 * wc
    for t in range(tiles):
        prog.load_a(t, a_x, x[t])
        prog.load_a(t, a_g, gain[t])
        base = prog.load_w(t, 0, w[t])
        chain_base = base + prog.load_w(t, base, w_short[t])
        prog.load_w(t, chain_base, w_chain[t])
    rc = fx.rc_from_float(float(rng.uniform(0.002, 0.02)))
    prog.gemv(n, d, a_x, 0, rc)
    note([golden.vac_out(golden.gemv_acc(w[t], x[t]), rc) for t in range(tiles)]
         + [golden.gemv_acc(w[t], x[t]) for t in range(tiles)])
    # Chained on the hardware: the same GEMV's INT8 results written back into the activation
    # buffer (DEST_ABUF, byte by byte from a_chain), then the operand of the next GEMV.
    y = [golden.vac_out(golden.gemv_acc(w[t], x[t]), rc) for t in range(tiles)]
    prog.gemv(n, d, a_x, 0, rc, dest=DEST_ABUF, res_base=a_chain * lanes)
    note(y + [golden.gemv_acc(w[t], x[t]) for t in range(tiles)])
    prog.gemv(n, n, a_chain, chain_base, rc)
    note([golden.vac_out(golden.gemv_acc(w_chain[t], y[t]), rc) for t in range(tiles)]
         + [golden.gemv_acc(w_chain[t], y[t]) for t in range(tiles)])
    prog.gemv(n, lanes, a_x, base, rc, narrow=0)           # one beat per group: idle pitch
    note([golden.vac_out(golden.gemv_acc(w_short[t], x[t, :lanes]), rc, 16) for t in range(tiles)]
         + [golden.gemv_acc(w_short[t], x[t, :lanes]) for t in range(tiles)])
    eps_sum = int(rng.integers(0, 1 << 12))
    out_static = golden.static_factor(out_gain * float(rng.uniform(0.05, 0.5)))
    norm_static = golden.static_factor(float(rng.uniform(0.05, 0.5)))
    for mode in modes:
        prog.rmsnorm_gemv(n, d, a_x, 0, eps_sum, out_static, mode, a_g, norm_static)
        res = [golden.rmsnorm_gemv(x[t], w[t], eps_sum, out_static, mode, gain[t], norm_static)
               for t in range(tiles)]
        note([r["y"] for r in res] + [r["acc"] for r in res])

    k = rng.integers(-128, 128, (tokens, dh))
    v = rng.integers(-128, 128, (tokens, dh))
    q = rng.integers(-128, 128, (tiles, dh))
    score_rc = fx.rc_from_float(float(rng.uniform(0.005, 0.05)))   # scores of a few octaves
    out_static = golden.static_factor(out_gain * float(rng.uniform(0.002, 0.01)))
    images, image = {}, None
    for t in range(tiles):
        prog.load_a(t, a_q, q[t])
    for layout in ("iwur", "baseline"):
        for tok in range(tokens):
            if layout == "iwur":
                prog.load_a(0, a_kv, k[tok])
                prog.kv_write(tok, dh, a_kv, value=False)
            prog.load_a(0, a_kv, v[tok])
            prog.kv_write(tok, dh, a_kv, value=True, layout=layout)
        image = kv_image(k if layout == "iwur" else None, v, cfg.vacs, lanes, cfg.max_tokens,
                         cfg.max_head_dim, layout, into=image)
        images[len(prog.commands)] = (layout, image)
        prog.qk(tokens, dh, a_q, score_rc)
        sc = [golden.qk_scores(q[t], k, score_rc) for t in range(tiles)]
        note([s["z"] for s in sc] + [s["acc"] for s in sc])
        for mode in modes:
            static = out_static if mode == "fused" else golden.static_factor(
                float(out_static[0]) * 2.0 ** -out_static[1] / 127)
            prog.pv(tokens, dh, static, mode, layout)
            res = [golden.softmax_pv(sc[t]["z"], sc[t]["z_max"], v, static, mode)
                   for t in range(tiles)]
            note([r["o"] for r in res] + [r["acc"] for r in res])
    while len(expect) < len(prog.commands):
        expect.append(None)
    return prog, expect, images


class Testbench:
    def __init__(self, dut, params: dict):
        self.dut, self.params = dut, params
        self.cfg = RdxeConfig(**params["config"])
        self.rng = random.Random(cocotb.RANDOM_SEED)
        self.stall = float(params.get("stall", 0.0))
        self.cycle = 0
        #: KV beats seen by :meth:`_watch_kv_reads`: [tile][vac] = [words, gathers].
        self.kv_beats = [[[0, 0] for _ in range(self.cfg.vacs)]
                         for _ in range(self.cfg.gqa_group)]

    async def _clock(self):
        while True:
            await RisingEdge(self.dut.clk)
            self.cycle += 1

    async def _watch_kv_reads(self):
        """Every cycle, every VAC of every tile: a KV beat on its chain input (``hin``) reads
        a whole word, or one byte (a baseline gather), counted per VAC in ``kv_beats``: the
        group's own counters watch VAC 0 only."""
        layout = beat_layout(self.cfg.lanes, addr_bits(self.cfg))
        fields = {name: (layout[name].offset, layout[name].width)
                  for name in ("valid", "src", "gather")}

        def field(bits: int, name: str) -> int:
            offset, width = fields[name]
            return bits >> offset & ((1 << width) - 1)

        chains = [[getattr(getattr(self.dut, f"tile{t}"), f"vac{j}").hin
                   for j in range(self.cfg.vacs)] for t in range(self.cfg.gqa_group)]
        while True:
            await RisingEdge(self.dut.clk)
            for t, row in enumerate(chains):
                for j, hin in enumerate(row):
                    bits = int(hin.value)
                    if field(bits, "valid") and field(bits, "src") == SRC_KV:
                        self.kv_beats[t][j][field(bits, "gather")] += 1

    def _kv_words(self, vac: int, words: int) -> np.ndarray:
        mem = getattr(self.dut.tile0, f"vac{vac}").kvmem
        lanes = self.cfg.lanes
        out = np.zeros((words, lanes), dtype=np.uint8)
        for i in range(words):
            out[i] = np.frombuffer(int(mem[i].value).to_bytes(lanes, "little"), np.uint8)
        return out

    async def _start(self, words: list[int]):
        """Clock, reset, the command source, ``words`` fed on ``data_in``, the result sink."""
        dut = self.dut
        clk = await start(dut)
        cocotb.start_soon(self._clock())
        cocotb.start_soon(self._watch_kv_reads())
        cmd = StreamSource(dut, "cmd", clk)
        data = StreamSource(dut, "data_in", clk, idle_prob=self.stall, rng=self.rng)
        sink = StreamSink(dut, "result", clk, ready_prob=1.0 - self.stall, rng=self.rng)
        cocotb.start_soon(sink.run())

        async def feed():
            for word in words:
                await data.send(word)
        cocotb.start_soon(feed())
        return clk, cmd, sink

    async def _issue(self, clk, cmd, command: dict, n: int) -> int:
        """Send one command and wait until the group is idle; its cycles."""
        dut = self.dut
        began = self.cycle
        await cmd.send(pack_struct(command_layout(self.cfg), **command))
        await RisingEdge(clk)
        while int(dut.busy.value) or int(dut.cmd__ready.value) == 0:
            await RisingEdge(clk)
            assert self.cycle - began < 100_000, f"command {n} ({command['op']}) hangs"
        return self.cycle - began

    async def _results(self, sink, seen: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Results and accumulators ``(tiles, rows)`` of the next ``rows`` result beats."""
        layout, tiles = result_layout(self.cfg), self.cfg.gqa_group
        items = await sink.wait_for(seen + rows)
        values = np.zeros((tiles, rows), np.int64)
        accs = np.zeros((tiles, rows), np.int64)
        for r, item in enumerate(items[-rows:]):
            beat = layout.from_bits(item["payload"])
            for t in range(tiles):
                values[t, r] = _signed(int(beat[t].value), 16)
                accs[t, r] = _signed(int(beat[t].acc), 32)
        return values, accs

    async def run(self):
        dut, cfg = self.dut, self.cfg
        p = self.params
        prog, expect, images = build_session(cfg, p["seed"], p["d"], p["n"], p["tokens"],
                                             p["dh"], p.get("modes", golden.MODES),
                                             p.get("out_gain", 1.0))
        clk, cmd, sink = await self._start(prog.data)
        board = Scoreboard("rdxe_group", dut._log)
        tiles = cfg.gqa_group
        cycles, seen = [], 0
        for n, command in enumerate(prog.commands):
            if n in images:
                for _ in range(2):          # the last write-back's bytes land
                    await RisingEdge(clk)
                name, image = images[n]
                for j in range(cfg.vacs):
                    got = self._kv_words(j, image.shape[1])
                    board.compare(f"KV image ({name}) VAC {j}", image[j], got)
            before = (int(dut.kv_reads.value), int(dut.kv_gathers.value))
            beats_before = [[list(c) for c in row] for row in self.kv_beats]
            took = await self._issue(clk, cmd, command, n)
            counts = (int(dut.kv_reads.value) - before[0], int(dut.kv_gathers.value) - before[1])
            for _ in range(self.cfg.vacs):       # the last beat reaches the chain's end
                await RisingEdge(clk)
            per_vac = {(t, j): (self.kv_beats[t][j][0] - beats_before[t][j][0],
                                self.kv_beats[t][j][1] - beats_before[t][j][1])
                       for t in range(tiles) for j in range(cfg.vacs)}
            cycles.append({"command": n, "cycles": took})
            model = command_cycles(cfg.vacs, cfg.lanes, command)
            if not self.stall and model is not None:
                board.compare(f"command {n} cycles (golden.rdxe_cycles)", model, took)
            want = expect[n]
            if want is None:
                continue
            rows = len(want[0])
            values, accs = await self._results(sink, seen, rows)
            seen += rows
            for t in range(tiles):
                board.compare(f"command {n} tile {t} results", want[t], values[t])
                board.compare(f"command {n} tile {t} accumulators", want[tiles + t], accs[t])
            # KV beats per command: QK reads K rows, P.V reads V (whole words in iWuR, one byte
            # per beat gathered in the baseline); nothing else touches the KV caches.
            want_beats = (0, 0)
            if command["kv"]:
                words = command["groups"] * command["beats"]
                want_beats = (0, words * cfg.lanes) if command["gather"] else (words, 0)
            if command["kv"] and command["exp"]:
                board.compare(f"command {n} KV reads/gathers", want_beats, counts)
            for (t, j), got in per_vac.items():
                board.compare(f"command {n} tile {t} VAC {j} KV words/gathers", want_beats, got)
        # No command answered for more rows than it has: a result beat past the last expected
        # one (a VAC of a partial group answering for its zero padding) would otherwise go
        # unseen, as the host keeps only the first rows of each command.
        for _ in range(4 * cfg.vacs + 16):
            await RisingEdge(clk)
        board.compare("result beats of the session", seen, len(sink.items))
        board.result()
        if p.get("out"):
            with open(p["out"], "w") as f:
                json.dump({"cycles": cycles, "commands": prog.commands}, f)


@cocotb.test()
async def session(dut):
    await Testbench(dut, tb_params()).run()


@cocotb.test()
async def program(dut):
    """Run ``params["commands"]`` with ``params["data"]`` and write every MAC command's results
    and each command's cycles to ``params["out"]`` (``memwall run rdxe``)."""
    p = tb_params()
    tb = Testbench(dut, p)
    clk, cmd, sink = await tb._start(p["data"])
    out, seen = [], 0
    for n, command in enumerate(p["commands"]):
        entry = {"cycles": await tb._issue(clk, cmd, command, n), "values": [], "accs": []}
        rows = command["rows"] if command["op"] == 3 else 0
        if rows:
            values, accs = await tb._results(sink, seen, rows)
            seen += rows
            entry["values"], entry["accs"] = values.tolist(), accs.tolist()
        out.append(entry)
    with open(p["out"], "w") as f:
        json.dump(out, f)
