"""Golden model of the eDRAM PIM family (:mod:`memwall.golden.pim.macro`): the event simulator's C
against A @ B through the PU arithmetic, its event counts against the contract's identities,
its refresh walk against an independent cycle-by-cycle check, and the mapping against loop
implementations written from the contract's text."""

import subprocess
import sys

import numpy as np
import pytest

from memwall.families.pim.config import ORDERS, PimConfig
from memwall.golden.pim import macro as pim
from memwall.golden.pim.logic import logic_terms
from memwall.golden.pim.macro import PU_LATENCY, OperandError, Schedule

#: configs/pim_small.yaml's values (load_config needs every family importable; this does not).
SMALL = dict(rows=16, cols=16, subarrays=2, banks=1, processing="bit_parallel",
             operation="row_wise", weight_bits=8, input_bits=8, weight_signed=True,
             input_signed=True, acc_bits=32, max_dim=4096, buffer_kib=4, buffer_row_words=16,
             clock_mhz=2, refresh_margin_cycles=2, buffer_retention_us=45)
PAIRS = [(p, o) for p in ("bit_parallel", "bit_serial") for o in ("row_wise", "dot_product")]
#: (weight_bits, input_bits, weight_signed, input_signed)
PRECISIONS = [(8, 8, True, True), (2, 3, False, True), (5, 7, True, False), (3, 2, False, False),
              (4, 6, True, True)]
SHAPES = [(3, 10, 9), (2, 7, 13), (4, 5, 6), (1, 12, 5), (3, 9, 11), (2, 6, 8)]


def config(**overrides) -> PimConfig:
    return PimConfig(name="t", **{**SMALL, **overrides})


def variant(processing, operation, wb, ib, ws, is_) -> PimConfig:
    return config(processing=processing, operation=operation, weight_bits=wb, input_bits=ib,
                  weight_signed=ws, input_signed=is_)


def operand(rng, shape, bits, signed, kind="random"):
    lo, hi = pim.operand_range(bits, signed)
    if kind == "zeros":
        return np.zeros(shape, np.int64)
    if kind == "ones":     # every bit set
        return np.full(shape, -1 if signed else hi, np.int64)
    if kind == "lowest":
        return np.full(shape, lo, np.int64)
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


def fitting(cfg, m, k, n, order, vpd, rng) -> Schedule:
    """A fitting schedule with (usually) short edge tiles."""
    for _ in range(500):
        tm, tk, tn = (int(rng.integers(1, d + 1)) for d in (m, k, n))
        s = Schedule(M=m, K=k, N=n, tm=tm, tk=tk, tn=tn, order=order, vpd=vpd)
        if pim.fits(cfg, s):
            return s
    raise AssertionError(f"no fitting schedule for {m}x{k}x{n}")


def popcount(x, bits) -> int:
    return int(sum(((np.asarray(x) & ((1 << bits) - 1)) >> j & 1).sum() for j in range(bits)))


def check_run(cfg, a, b, s, r):
    """Everything one result must satisfy, whatever the operands and schedule."""
    assert r["c"].dtype == np.int64
    assert np.array_equal(r["c"], a @ b)
    k = r["counters"]
    acts = k["activations"]
    assert k["sa_on"] + k["sa_gated"] == cfg.width * acts
    assert k["sa_on"] == s.N * cfg.weight_bits * popcount(a, cfg.input_bits)
    assert k["pu_ops"] == acts
    assert r["cycles"] == k["writes"] + k["input_beats"] + acts + k["refreshes"] + PU_LATENCY
    assert r["cycles"] == int(r["read_events"][-1, 0]) + 1 + PU_LATENCY
    assert r["peak_psum_words"] == pim.peak_psum_words(s)
    for key in pim.MACRO_COUNTERS:
        assert r["by_level"][key][s.vpd] == k[key] == r[key]
        assert sum(r["by_level"][key]) == k[key]
    # Every emission is the partial sum over the k-tiles so far (0 past the tile's n).
    seen: dict = {}
    words = cfg.fields if cfg.row_wise else 1
    for e in r["emissions"]:
        ik = seen.get((e["m"], e["n0"]), -1) + 1
        seen[(e["m"], e["n0"])] = ik
        assert e["first"] == (ik == 0) and e["last"] == (ik == s.tile_count("k") - 1)
        k_end = s.tile_range("k", ik).stop
        n_end = min(s.tile_range("n", e["n0"] // s.tn).stop, e["n0"] + words)
        expect = np.zeros(words, np.int64)
        expect[:n_end - e["n0"]] = a[e["m"], :k_end] @ b[:k_end, e["n0"]:n_end]
        assert list(e["values"]) == expect.tolist()


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("prec", PRECISIONS, ids=lambda p: "w{}i{}{}{}".format(
    p[0], p[1], "s" if p[2] else "u", "s" if p[3] else "u"))
def test_c_is_a_at_b_every_order(pair, prec):
    cfg = variant(*pair, *prec)
    rng = np.random.default_rng(sum(prec[:2]) + 10 * PAIRS.index(pair))
    for n, (m, k, nn) in enumerate(SHAPES):
        s = fitting(cfg, m, k, nn, ORDERS[n], n % cfg.levels, rng)
        a = operand(rng, (m, k), cfg.input_bits, cfg.input_signed)
        b = operand(rng, (k, nn), cfg.weight_bits, cfg.weight_signed)
        check_run(cfg, a, b, s, pim.simulate(cfg, a, b, s))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_edge_operands(pair):
    """All zeros, every bit set, the most negative (lowest) value, on both operands."""
    rng = np.random.default_rng(5)
    for prec in ((8, 8, True, True), (3, 5, False, True), (6, 2, True, False)):
        cfg = variant(*pair, *prec)
        s = fitting(cfg, 3, 9, 7, "kmn", 0, rng)
        for kind_a in ("zeros", "ones", "lowest"):
            for kind_b in ("zeros", "ones", "lowest", "random"):
                a = operand(rng, (3, 9), cfg.input_bits, cfg.input_signed, kind_a)
                b = operand(rng, (9, 7), cfg.weight_bits, cfg.weight_signed, kind_b)
                check_run(cfg, a, b, s, pim.simulate(cfg, a, b, s))


# --- mapping against the contract's text, written as loops ---------------------------------------

def ref_tile(cfg, b, s, ik, in_):
    """Row images of weight tile (ik, in), as lists of W bits (contract, section 2)."""
    F, P, fw, wb = cfg.fields, cfg.planes, cfg.field_bits, cfg.weight_bits
    ks, ns = s.tile_range("k", ik), s.tile_range("n", in_)
    groups = -(-len(ns) // F) if cfg.row_wise else len(ns)
    middle = len(ks) if cfg.row_wise else -(-len(ks) // F)
    rows = []
    for g in range(groups):
        for mid in range(middle):
            for p in range(P):
                bits = [0] * cfg.width
                for f in range(F):
                    k, n = (mid, g * F + f) if cfg.row_wise else (mid * F + f, g)
                    if k >= len(ks) or n >= len(ns):
                        continue
                    word = int(b[ks[k], ns[n]]) & ((1 << wb) - 1)
                    if cfg.bit_serial:
                        bits[f] = word >> p & 1
                    else:
                        bits[f * fw:(f + 1) * fw] = [word >> i & 1 for i in range(wb)]
                rows.append(bits)
    return rows


def ref_inbits(cfg, a, s, m, ik, in_, row, j):
    F, P, fw = cfg.fields, cfg.planes, cfg.field_bits
    ks, ns = s.tile_range("k", ik), s.tile_range("n", in_)
    middle = len(ks) if cfg.row_wise else -(-len(ks) // F)
    g, mid = row // P // middle, row // P % middle
    bits = [0] * cfg.width
    for f in range(F):
        k, n = (mid, g * F + f) if cfg.row_wise else (mid * F + f, g)
        if k < len(ks) and n < len(ns):
            bits[f * fw:(f + 1) * fw] = [int(a[m, ks[k]]) >> j & 1] * fw
    return bits


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_mapping_matches_the_contract(pair):
    cfg = variant(*pair, 5, 3, True, True)
    rng = np.random.default_rng(2)
    m, k, n = 3, 11, 9
    s = fitting(cfg, m, k, n, "nkm", 1, rng)
    a = operand(rng, (m, k), cfg.input_bits, cfg.input_signed)
    b = operand(rng, (k, n), cfg.weight_bits, cfg.weight_signed)
    images, previous = [], None
    for _, ik, in_ in s.steps():
        if (ik, in_) != previous:
            images += ref_tile(cfg, b, s, ik, in_)
        previous = (ik, in_)
    as_ints = [sum(bit << c for c, bit in enumerate(row)) for row in images]
    assert pim.weight_row_images(cfg, b, s) == as_ints
    assert pim.weight_row_images(cfg, b, s, bits=True).tolist() == images
    r = pim.simulate(cfg, a, b, s)
    assert r["writes"] == len(images)

    beats = pim.input_beats(cfg, a, s)
    assert len(beats) == r["input_beats"]
    F, ib = cfg.fields, cfg.input_bits
    zeros, it = 0, iter(beats)
    for im, ik, in_ in s.steps():
        ks = s.tile_range("k", ik)
        for mm in s.tile_range("m", im):
            for q in range(-(-len(ks) // F)):
                beat = next(it)
                for f in range(F):
                    word = beat >> (f * ib) & ((1 << ib) - 1)
                    kk = q * F + f
                    want = int(a[mm, ks[kk]]) & ((1 << ib) - 1) if kk < len(ks) else 0
                    assert word == want
            rows = pim.tile_rows(cfg, len(ks), len(s.tile_range("n", in_)))
            for row in range(rows):
                for j in range(ib):
                    got = pim.input_bits_for(cfg, a, s, mm, ik, in_, row, j)
                    want = ref_inbits(cfg, a, s, mm, ik, in_, row, j)
                    assert got.tolist() == want
                    zeros += cfg.width - sum(want)
    assert r["sa_gated"] == zeros


# --- refresh -----------------------------------------------------------------------------------

def check_refresh_timeline(r, interval, mode):
    """Replay the event logs cycle by cycle: every refresh is of a row due (age == I_v, live
    for ``mode``) that cycle, every due row is refreshed, and no read sees age >= I_v."""
    reads = [tuple(map(int, e)) for e in r["read_events"]]
    last = reads[-1][0]
    events: dict[int, tuple[str, int]] = {}
    for kind, log in (("w", r["write_events"]), ("f", r["refresh_events"]), ("r", reads)):
        for t, row in log:
            assert t not in events, f"two actions in cycle {t}"
            events[t] = (kind, row)
    assert len(events) + r["input_beats"] == last + 1
    # Skip mode: a row is live from its write to its last read before it is written again.
    final: dict[int, int] = {}
    residency = {}
    for t in sorted(events):
        kind, row = events[t]
        if kind == "w":
            residency[row] = t
        elif kind == "r":
            final[(row, residency[row])] = t
    restore, since = {}, {}
    for t in range(last + 1):
        kind, row = events.get(t, ("beat", -1))
        due = [x for x, at in restore.items() if t - at == interval
               and (mode == "all" or t <= final[(x, since[x])])]
        assert all(t - at <= interval or (mode == "skip" and t > final[(x, since[x])])
                   for x, at in restore.items())
        if due:
            assert (kind, row) == ("f", due[0]), f"cycle {t}: row {due[0]} due, got {kind}"
        else:
            assert kind != "f", f"cycle {t}: refresh of row {row} that is not due"
        if kind == "r":
            assert t - restore[row] < interval
        if kind in "wf":
            restore[row] = t
            if kind == "w":
                since[row] = t


@pytest.mark.parametrize("mode", ["skip", "all"])
@pytest.mark.parametrize("order", ORDERS)
def test_refresh_walk_replays(mode, order):
    cfg = config()
    rng = np.random.default_rng(9)
    a = operand(rng, (4, 24), 8, True)
    b = operand(rng, (24, 12), 8, True)
    for vpd, (tm, tk, tn) in enumerate([(2, 4, 12), (3, 5, 7), (4, 3, 9), (1, 16, 4)]):
        s = Schedule(4, 24, 12, tm, tk, tn, order, vpd)
        r = pim.simulate(cfg, a, b, s, refresh=mode)
        assert np.array_equal(r["c"], a @ b)
        assert r["refreshes"] > 0 and r["max_read_age"] < cfg.refresh_interval(vpd)
        check_refresh_timeline(r, cfg.refresh_interval(vpd), mode)


def test_refresh_off_reads_old_rows():
    cfg = config()
    rng = np.random.default_rng(4)
    a, b = operand(rng, (4, 24), 8, True), operand(rng, (24, 12), 8, True)
    s = Schedule(4, 24, 12, 4, 4, 12, "mkn", 3)
    r = pim.simulate(cfg, a, b, s, refresh="off")
    assert np.array_equal(r["c"], a @ b)
    assert r["refreshes"] == 0 and r["buffer_refreshes"] == 0 and not r["refresh_events"]
    assert r["max_read_age"] > cfg.refresh_interval(3)
    assert (r["last_read_age"] > cfg.refresh_interval(3)).any()
    with pytest.raises(ValueError, match="refresh"):
        pim.simulate(cfg, a, b, s, refresh=True)


def test_refresh_all_costs_at_least_skip():
    cfg = config()
    rng = np.random.default_rng(6)
    a, b = operand(rng, (4, 20), 8, True), operand(rng, (20, 12), 8, True)
    strictly = False
    for order in ORDERS:
        s = Schedule(4, 20, 12, 4, 6, 8, order, 2)     # short edge tiles in k and n
        skip, every = (pim.simulate(cfg, a, b, s, refresh=m) for m in ("skip", "all"))
        assert np.array_equal(every["c"], skip["c"])
        assert every["refreshes"] >= skip["refreshes"]
        assert every["buffer_refreshes"] >= skip["buffer_refreshes"]
        assert every["cycles"] - skip["cycles"] == every["refreshes"] - skip["refreshes"]
        strictly |= every["refreshes"] > skip["refreshes"] \
            and every["buffer_refreshes"] > skip["buffer_refreshes"]
    assert strictly


# --- buffer ------------------------------------------------------------------------------------

def test_buffer_counters_and_blocks():
    cfg = config()
    rng = np.random.default_rng(8)
    M, K, N = 4, 20, 12
    a, b = operand(rng, (M, K), 8, True), operand(rng, (K, N), 8, True)
    TK, TN = 4, 2
    for order, fills in (("mkn", M * K), ("mnk", M * K * TN), ("kmn", M * K)):
        s = Schedule(M, K, N, 2, 5, 6, order, 0)
        r = pim.simulate(cfg, a, b, s)
        assert r["buffer_input_fills"] == fills
        assert r["buffer_input_reads"] == TN * M * K
        assert r["buffer_psum_reads"] == r["buffer_psum_writes"] == (TK - 1) * M * N
    # Two k-tiles, one step each: input blocks live over their step; the psum block is read by
    # the very next step (L = 0) — or, in "all", resides over the reading step.
    s = Schedule(2, 32, 4, 2, 16, 4, "mkn", 0)
    a, b = operand(rng, (2, 32), 8, True), operand(rng, (32, 4), 8, True)
    IB = cfg.buffer_interval
    inputs, psums = 2, 1         # 32 input words, 8 psum words, in 16-word rows
    spans = pim.simulate(cfg, a, b, s)["steps"]
    lengths = [last - first + 1 for *_, first, last in spans]
    skip = sum((L - 1) // IB * inputs for L in lengths)
    for mode, expect in (("skip", skip), ("all", skip + (lengths[1] - 1) // IB * psums)):
        assert pim.simulate(cfg, a, b, s, refresh=mode)["buffer_refreshes"] == expect
    assert lengths[1] > IB       # the "all" term is not trivially 0


def test_peak_psum_words():
    M, K, N, tm, tk, tn = 6, 9, 10, 2, 3, 4
    expect = {"mnk": tm * tn, "nmk": tm * tn, "mkn": tm * N, "nkm": tn * M, "kmn": M * N,
              "knm": M * N}
    for order, words in expect.items():
        assert pim.peak_psum_words(Schedule(M, K, N, tm, tk, tn, order)) == words
    assert pim.peak_psum_words(Schedule(M, K, N, tm, K, tn, "kmn")) == 0   # one k-tile


# --- schedule, fit, operands, energy -------------------------------------------------------------

def test_schedule_checks_and_codes():
    s = Schedule(4, 24, 12, 2, 5, 7, "nkm", 1)
    assert s.order_code == ORDERS.index("nkm") == 5
    assert Schedule.from_code(4, 24, 12, 2, 5, 7, 5, 1) == s
    assert Schedule(*map(np.int64, (4, 24, 12, 2, 5, 7)), "nkm", np.int8(1)) == s
    assert type(Schedule(np.int64(4), 24, 12, 2, 5, 7).M) is int
    assert [len(s.tile_range("k", i)) for i in range(s.tile_count("k"))] == [5] * 4 + [4]
    assert s.steps()[:3] == [(0, 0, 0), (1, 0, 0), (0, 1, 0)]    # n outer, m inner
    assert len(set(s.steps())) == len(s.steps()) == 2 * 5 * 2
    for kwargs, message in (({"tm": 0}, r"tm: 0 — must be an integer in 1\.\.M \(= 4\)"),
                            ({"tk": 25}, r"tk: 25 .*1\.\.K \(= 24\)"),
                            ({"order": "mkk"}, r"order: 'mkk' — must be one of mkn, mnk"),
                            ({"vpd": 8}, r"vpd: 8 .*0\.\.7"), ({"N": 0}, r"N: 0")):
        with pytest.raises(ValueError, match=message):
            Schedule(**{**dict(M=4, K=24, N=12, tm=2, tk=5, tn=7, order="mkn"), **kwargs})
    with pytest.raises(ValueError, match=r"order: code 6 .*0\.\.5"):
        Schedule.from_code(4, 24, 12, 2, 5, 7, 6)


def test_fits():
    cfg = config()      # F = 4 fields, 16 rows, 4 input beats, 32768 buffer bits
    assert pim.tile_rows(cfg, 16, 4) == 16 and pim.tile_rows(cfg, 8, 5) == 16
    assert pim.fits(cfg, Schedule(4, 32, 8, 4, 16, 4, "mnk"))
    assert not pim.fits(cfg, Schedule(4, 32, 8, 4, 17, 4, "mnk"))         # 17 rows
    assert any("input beats" in p for p in pim.fit_problems(
        config(rows=32, clock_mhz=4), Schedule(4, 32, 8, 4, 17, 4, "mnk")))
    assert not pim.fits(cfg, Schedule(4, 32, 8, 4, 16, 4, "mnk", vpd=4))   # 4 levels
    # kmn keeps all M*N partial sums: 64*64*32 bits alone exceed 4 KiB.
    big = Schedule(64, 32, 64, 1, 8, 2, "kmn")
    assert any("buffer" in p for p in pim.fit_problems(cfg, big))
    assert pim.fits(cfg, Schedule(64, 32, 64, 1, 8, 2, "mnk"))
    with pytest.raises(ValueError, match="rows"):
        a, b = np.zeros((4, 32), np.int64), np.zeros((32, 8), np.int64)
        pim.simulate(cfg, a, b, Schedule(4, 32, 8, 4, 17, 4, "mnk"))


def test_operand_errors():
    cfg = variant("bit_parallel", "row_wise", 4, 3, True, False)
    ok_a, ok_b = np.zeros((2, 3), np.int64), np.zeros((3, 2), np.int64)
    pim.check_operands(cfg, ok_a, ok_b)
    bad_a = ok_a.copy()
    bad_a[1, 2] = 8
    with pytest.raises(OperandError, match=r"a\[1, 2\] = 8 .*\[0, 7\] \(3-bit unsigned\)"):
        pim.check_operands(cfg, bad_a, ok_b)
    bad_b = ok_b.copy()
    bad_b[0, 1] = -9
    with pytest.raises(OperandError, match=r"b\[0, 1\] = -9 .*\[-8, 7\] \(4-bit signed\)"):
        pim.check_operands(cfg, ok_a, bad_b)
    with pytest.raises(OperandError, match=r"a: shape \(2, 3\), b: shape \(2, 2\)"):
        pim.check_operands(cfg, ok_a, ok_b[:2])
    with pytest.raises(OperandError, match="b: shape .* 2-D"):
        pim.check_operands(cfg, ok_a, np.zeros(3, np.int64))
    with pytest.raises(OperandError, match="a: dtype float64"):
        pim.check_operands(cfg, ok_a.astype(float), ok_b)
    with pytest.raises(OperandError, match=r"a: shape \(0, 3\).*1\.\.4096"):
        pim.check_operands(cfg, np.zeros((0, 3), np.int64), ok_b)
    assert issubclass(OperandError, ValueError)


def test_energy_breakdown():
    cfg = config(subarrays=2, banks=2)
    counts = {"activations": 10, "sa_on": 100, "writes": 3, "refreshes": 2, "input_beats": 4,
              "input_ones": 6, "input_bits": 24, "weight_words": 19,
              "buffer_input_fills": 5, "buffer_input_reads": 7, "buffer_psum_reads": 11,
              "buffer_psum_writes": 13, "buffer_refreshes": 17}
    level = cfg.macro_table[1]
    e = pim.energy(cfg, counts, vpd=1)
    assert e["pim_access"] == pytest.approx(4 * 10 * level["e_access_pj"])
    assert e["pim_sense"] == pytest.approx(100 * level["e_sense_pj"])
    assert e["pim_write"] == pytest.approx(4 * 3 * cfg.e_write_pj)
    assert e["pim_refresh"] == pytest.approx(
        4 * 2 * (level["e_access_pj"] + cfg.cols * level["e_sense_pj"] + cfg.e_write_pj))
    # The logic: 3 + 4 + 10 + 2 cycles and the PU's latency; density 6/24 = 0.25.
    logic, cycles = logic_terms(cfg), 3 + 4 + 10 + 2 + pim.PU_LATENCY
    assert e["logic_dynamic"] == pytest.approx(
        cycles * logic["e_cycle_pj"] + 10 * 0.25 * logic["e_one_pj"]
        + 10 * 2 * 0.25 * 0.75 * logic["e_toggle_pj"] + 3 * logic["e_write_pj"])
    assert e["logic_leakage"] == pytest.approx(logic["leakage_mw"] * cycles * 1e3
                                               / cfg.clock_mhz)
    assert e["buffer_access"] == pytest.approx(18 * cfg.buffer_e_write_pj
                                               + 18 * cfg.buffer_e_read_pj)
    assert e["buffer_refresh"] == pytest.approx(17 * cfg.buffer_e_refresh_pj)
    assert e["weight_fetch"] == pytest.approx(19 * cfg.weight_bits * cfg.dram_e_bit_pj)
    assert e["total"] == pytest.approx(sum(v for k, v in e.items() if k != "total"))
    ungated = pim.energy(cfg, counts, vpd=1, gating=False)
    assert ungated["pim_sense"] == pytest.approx(cfg.width * 10 * level["e_sense_pj"])
    # A simulate result carries its level.
    rng = np.random.default_rng(1)
    a, b = operand(rng, (2, 8), 8, True), operand(rng, (8, 4), 8, True)
    r = pim.simulate(config(), a, b, Schedule(2, 8, 4, 2, 8, 4, "mkn", 2))
    assert pim.energy(config(), r) == pim.energy(config(), r["counters"], vpd=2)


def test_imports_without_amaranth_or_cocotb():
    code = ("import sys, memwall.golden.pim.macro; "
            "assert not {'amaranth', 'cocotb'} & {m.split('.')[0] for m in sys.modules}")
    subprocess.run([sys.executable, "-c", code], check=True)
