"""SHIELD golden models: Eq. 4-9, row energies, the refresh schedule vs a per-cycle simulation,
retention, Algorithm 1 fault injection and the Fig. 5 scenarios."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memwall.config import load_config
from memwall.families.shield.config import DEFAULT_RETENTION, ShieldConfig
from memwall.golden.common.formats import BF16, round_to_bf16
from memwall.golden.shield import refresh as s
from memwall.golden.shield.trace import Step, Trace, load_trace

CFG_2MB = load_config("shield_2mb")


# --- power model ---------------------------------------------------------------------------------

@pytest.mark.parametrize("f", [0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
def test_eq9_closed_form_is_refresh_only_ratio(f):
    cfg = s.PowerParams(p_leak_mw=0.0, e_ref_cycle_nj=65.0)
    closed = 1 - (9 / 16 + 7 / 16 * f * 45 / 1216)
    assert s.eta_eq9(cfg, f) == pytest.approx(closed, rel=1e-12)
    assert 1 - s.p_shield(cfg, f) / s.p_base(cfg) == pytest.approx(closed, rel=1e-12)
    # With leakage, eta = eta_eq9 / (1 + P_leak / P_ref,std).
    x = CFG_2MB.p_leak_mw / (CFG_2MB.e_ref_cycle_nj / CFG_2MB.t_std_us)
    assert s.eta(CFG_2MB, f) == pytest.approx(s.eta_eq9(CFG_2MB, f) / (1 + x), rel=1e-12)


def test_eq9_bounds_and_format_split():
    assert s.eta_eq9(CFG_2MB, 0.0) == pytest.approx(0.4375)
    assert s.eta_eq9(CFG_2MB, 1.0) == pytest.approx(7 / 16 * (1 - 45 / 1216))
    fp8 = s.PowerParams(hi_bits=5, lo_bits=3)  # fp8_e4m3: 5/8 at T_std, 3/8 relaxed or none
    assert s.eta_eq9(fp8, 0.0) == pytest.approx(3 / 8)
    np.testing.assert_allclose(s.p_shield(CFG_2MB, np.array([0.0, 1.0])),
                               [s.p_shield(CFG_2MB, 0.0), s.p_shield(CFG_2MB, 1.0)])
    with pytest.raises(ValueError, match="kv_fraction"):
        s.p_shield(CFG_2MB, 1.5)


def test_kv_only_policy():
    assert s.kelle_interval_us(CFG_2MB) == pytest.approx(3250.0)  # 2e-3 BER, default table
    assert s.p_kv_only(CFG_2MB, 0.0) == pytest.approx(s.p_base(CFG_2MB))
    assert s.p_kv_only(CFG_2MB, 1.0, 45.0) == pytest.approx(s.p_base(CFG_2MB))
    p1 = s.p_kv_only(CFG_2MB, 1.0)
    assert p1 == pytest.approx(CFG_2MB.p_leak_mw + CFG_2MB.e_ref_cycle_nj / 3250.0)


# The paper's own numbers (SHIELD Sec. III-B, IV-A/B), typed here and not read from a config,
# so the checks below are independent of configs/shield_2mb.yaml and of golden/shield/refresh.py.
PAPER_HI, PAPER_LO = 9, 7            # BF16: sign + 8 exponent bits | 7 mantissa bits (Eq. 6-8)
PAPER_T_STD, PAPER_T_REL = 45.0, 1216.0   # µs (Eq. 4, Eq. 7)
PAPER_P_LEAK = 0.95                  # mW, 2 MB eDRAM array (DESTINY, Sec. IV-A)
PAPER_GAIN, PAPER_ETA = 1.35, 0.35   # Fig. 5a P_base/P_SHIELD; abstract/Fig. 5b eta


def paper_eq4_to_8(e_ref, f, p_leak):
    """P_base and P_SHIELD (mW) term by term as the paper writes them."""
    p_base = p_leak + e_ref / PAPER_T_STD                                # Eq. 4
    p_exp = PAPER_HI / 16 * e_ref / PAPER_T_STD                          # Eq. 6
    p_kv = PAPER_LO / 16 * f * e_ref / PAPER_T_REL                       # Eq. 7
    p_qo = 0.0                                                           # Eq. 8
    return p_base, p_leak + p_exp + p_kv + p_qo                          # Eq. 5


def _solve_e_ref(target, f, p_leak=PAPER_P_LEAK):
    """E_ref_cycle (nJ) at which Eq. 4-8 give ``target(p_base, p_shield) == 0``, by bisection
    (the golden model uses a closed form)."""
    lo, hi = 1e-3, 1e6
    g_lo = target(*paper_eq4_to_8(lo, f, p_leak))
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        g = target(*paper_eq4_to_8(mid, f, p_leak))
        if (g > 0) == (g_lo > 0):
            lo, g_lo = mid, g
        else:
            hi = mid
    return math.sqrt(lo * hi)


def test_eq9_recomputed_from_the_papers_numbers():
    """A check, not a pin: eta of Eq. 9 and P_base/P_SHIELD of Eq. 4-8 from the paper's stated
    numbers, against the golden model with shield_2mb's format and intervals. Wrong fractions,
    intervals or a mis-wired term in the model fail here whatever E_ref_cycle is."""
    assert (CFG_2MB.hi_bits, CFG_2MB.lo_bits) == (PAPER_HI, PAPER_LO)
    assert (CFG_2MB.t_std_us, CFG_2MB.t_rel_us) == (PAPER_T_STD, PAPER_T_REL)
    assert CFG_2MB.p_leak_mw == PAPER_P_LEAK
    # Eq. 9 at the paper's numbers: 7/16 (f = 0) down to 7/16 (1 - 45/1216) (f = 1).
    assert s.eta_eq9(CFG_2MB, 0.0) == pytest.approx(0.4375, rel=1e-12)
    assert s.eta_eq9(CFG_2MB, 0.5) == pytest.approx(0.429404810855, rel=1e-11)
    assert s.eta_eq9(CFG_2MB, 1.0) == pytest.approx(0.421309621711, rel=1e-11)
    for f in (0.0, 0.2, 0.5, 0.8, 1.0):
        for e_ref in (1.0, CFG_2MB.e_ref_cycle_nj, 188.0):
            for p_leak in (0.0, PAPER_P_LEAK):
                cfg = s.PowerParams.from_config(CFG_2MB, e_ref_cycle_nj=e_ref, p_leak_mw=p_leak)
                base, shield = paper_eq4_to_8(e_ref, f, p_leak)
                assert s.p_base(cfg) == pytest.approx(base, rel=1e-12)
                assert s.p_shield(cfg, f) == pytest.approx(shield, rel=1e-12)
                assert s.eta(cfg, f) == pytest.approx(1 - shield / base, rel=1e-12)
                if p_leak == 0.0:   # Eq. 9 is the refresh-only ratio
                    assert s.eta_eq9(cfg, f) == pytest.approx(1 - shield / base, rel=1e-12)


def test_paper_figures_need_what_paper_calibration_says():
    """A check of :func:`paper_calibration` by root-finding on the paper's Eq. 4-8: the E_ref_cycle
    that gives Fig. 5a's 1.35x, and the one that gives eta = 35 % with leakage, at f = 0 and 1."""
    rows = {r["figure"]: r for r in s.paper_calibration(CFG_2MB)}
    gain = _solve_e_ref(lambda b, p: b / p - PAPER_GAIN, 0.0), \
        _solve_e_ref(lambda b, p: b / p - PAPER_GAIN, 1.0)
    eta35 = _solve_e_ref(lambda b, p: 1 - p / b - PAPER_ETA, 0.0), \
        _solve_e_ref(lambda b, p: 1 - p / b - PAPER_ETA, 1.0)
    assert rows["Fig. 5a"]["e_ref_cycle_nj"] == pytest.approx(sorted(gain), rel=1e-9)
    assert rows["Fig. 5b / abstract"]["e_ref_cycle_nj"] == pytest.approx(sorted(eta35), rel=1e-9)
    # The golden docstring's and reports/shield's "62 ... 68" and "171 ... 210" nJ.
    assert [round(e) for e in sorted(gain)] == [62, 68]
    assert [round(e) for e in sorted(eta35)] == [171, 210]
    # Refresh-only, 35 % is outside Eq. 9's range for every footprint: 1 - 0.35/(7/16) = 0.2.
    assert "impossible" in rows["Eq. 9"]["note"] and "= 0.200" in rows["Eq. 9"]["note"]
    assert "T_rel = 225 µs" in rows["Eq. 9"]["note"]


def test_pin_shield_2mb_configs_to_their_calibration():
    """A pin, not a check: configs/shield_2mb.yaml's E_ref_cycle (65 nJ, not in the paper) was
    fitted so that Eq. 4-8 give Fig. 5a's 1.35x at f = 0.5, and shield_2mb_eta35's (188 nJ) so
    that they give eta = 35 %. This only keeps a config edit from silently losing the fit; it
    cannot show the model right (the config was chosen to pass it). The checks beside it:
    test_eq9_recomputed_from_the_papers_numbers and
    test_paper_figures_need_what_paper_calibration_says."""
    rows = {r["figure"]: r for r in s.paper_calibration(CFG_2MB)}
    lo, hi = rows["Fig. 5a"]["e_ref_cycle_nj"]
    assert lo < CFG_2MB.e_ref_cycle_nj < hi
    assert s.p_base(CFG_2MB) / s.p_shield(CFG_2MB, 0.5) == pytest.approx(1.35, abs=0.002)
    eta35 = load_config("shield_2mb_eta35")
    lo, hi = rows["Fig. 5b / abstract"]["e_ref_cycle_nj"]
    assert lo < eta35.e_ref_cycle_nj < hi
    assert s.eta(eta35, 0.5) == pytest.approx(0.35, abs=0.002)


# --- row energies ------------------------------------------------------------------------------

@pytest.mark.parametrize(("fmt", "kv", "qo", "row"), [("bf16", 64, 64, 8), ("bf16", 512, 256, 32),
                                                      ("fp16", 96, 32, 16),
                                                      ("fp8_e5m2", 40, 0, 8)])
def test_row_energies_sum_to_baseline(fmt, kv, qo, row):
    cfg = ShieldConfig(format=fmt, kv_words=kv, qo_words=qo, row_words=row, clock_mhz=1,
                       e_ref_cycle_nj=7.5)
    rows = cfg.bank_rows
    once = sum(rows[b] * s.row_refresh_energy_nj(cfg, b) for b in s.BANKS)
    assert once == pytest.approx(cfg.e_ref_cycle_nj, rel=1e-12)
    # All banks at T_std for T_std reproduces Eq. 4's refresh term.
    assert once / cfg.t_std_us == pytest.approx(s.p_base(cfg) - cfg.p_leak_mw, rel=1e-12)


def test_full_array_trace_matches_eq4_to_eq8():
    """Everything written at once, then a long idle: Eq. 4-8 hold to the edge effects."""
    cfg = CFG_2MB
    trace = Trace((Step("write", "kv", 0, cfg.kv_words), Step("write", "qo", 0, cfg.qo_words),
                   Step("idle", us=200 * cfg.t_rel_us)))
    r = s.model_trace(cfg, trace)
    assert r["p_base"] == pytest.approx(s.p_base(cfg), rel=1e-3)
    assert r["p_shield"] == pytest.approx(s.p_shield(cfg, 0.5), rel=2e-3)
    assert r["kv_fraction"] == pytest.approx(0.5, abs=1e-3)
    assert r["refresh_counts"]["refreshless"] == 0
    assert "eta" in s.format_report(r)


# --- refresh schedule vs a per-cycle simulation -------------------------------------------------

def brute_force(cfg, trace):
    """Cycle by cycle, word by word: the schedule as the module doc states it."""
    w, kv, qo = cfg.row_words, cfg.kv_words, cfg.qo_words
    r_std, r_rel = cfg.bank_rows["standard"], cfg.bank_rows["relaxed"]
    t_std, t_rel = cfg.t_std_cycles, cfg.t_rel_cycles
    live = {"kv": np.zeros(kv, bool), "qo": np.zeros(qo, bool)}
    counts = {"standard": 0, "relaxed": 0}
    live_words = {"kv": 0, "qo": 0}
    cycle = 0

    b, qo_base = cfg.live_block_rows, kv // w

    def block_live(cls, r):
        """Any live word of class ``cls`` in standard row ``r``'s liveness block."""
        first, end = (0, r_rel) if cls == "kv" else (qo_base, r_std)
        if not first <= r < end:
            return False
        start = first + (r - first) // b * b
        base = 0 if cls == "kv" else kv        # the class's first standard-bank address
        lo, hi = max(start * w - base, 0), max(min(start + b, end) * w - base, 0)
        return bool(live[cls][lo:hi].any())

    def tick():
        nonlocal cycle
        t = cycle
        for c in ("kv", "qo"):
            live_words[c] += int(live[c].sum())
        if t >= 1:
            for r in range(r_std):
                if t % t_std == (r * t_std) // r_std and (block_live("kv", r)
                                                          or block_live("qo", r)):
                    counts["standard"] += 1
            for r in range(r_rel):
                if t % t_rel == (r * t_rel) // r_rel and block_live("kv", r):
                    counts["relaxed"] += 1
        cycle += 1

    for st in trace.steps:
        if st.op == "write":
            for i in range(st.words):
                tick()                            # the write takes this cycle ...
                live[st.cls][st.addr + i] = True  # ... and the word is live from the next
        elif st.op == "read":
            for _ in range(st.words):
                tick()
        elif st.op == "idle":
            for _ in range(int(round(st.us * cfg.clock_mhz))):
                tick()
        elif st.op == "release":
            live[st.cls][:] = False
    return counts, live_words, cycle


def random_trace(cfg, rng, n_steps):
    steps = []
    for _ in range(n_steps):
        op = rng.choice(["write", "write", "read", "idle", "release"])
        cls = "qo" if cfg.qo_words and rng.random() < 0.5 else "kv"
        size = cfg.kv_words if cls == "kv" else cfg.qo_words
        if op in ("write", "read"):
            addr = int(rng.integers(0, size))
            steps.append(Step(op, cls, addr, int(rng.integers(1, size - addr + 1))))
        elif op == "idle":
            steps.append(Step("idle", us=float(rng.choice([0.0, 0.4, 3.0, 17.6, 60.0, 140.0]))))
        else:
            steps.append(Step("release", cls))
    return Trace(tuple(steps))


SMALL_CONFIGS = [
    dict(kv_words=23, qo_words=17, row_words=4, t_std_us=13, t_rel_us=37),   # a mixed row
    dict(kv_words=24, qo_words=16, row_words=4, t_std_us=11, t_rel_us=29),   # T_std = rows + 1
    dict(kv_words=9, qo_words=0, row_words=2, t_std_us=7, t_rel_us=7),
    dict(kv_words=11, qo_words=6, row_words=1, t_std_us=18, t_rel_us=45),
    dict(kv_words=5, qo_words=3, row_words=16, t_std_us=3, t_rel_us=8),      # one row only
    dict(kv_words=30, qo_words=10, row_words=3, t_std_us=9.5, t_rel_us=31, clock_mhz=2),
    # liveness blocks of several rows: a mixed row, a last block cut short, one block per class
    dict(kv_words=23, qo_words=17, row_words=4, t_std_us=13, t_rel_us=37, live_block_rows=2),
    dict(kv_words=30, qo_words=21, row_words=3, t_std_us=40, t_rel_us=90, live_block_rows=4),
    dict(kv_words=11, qo_words=6, row_words=1, t_std_us=18, t_rel_us=45, live_block_rows=16),
]


@pytest.mark.parametrize("params", SMALL_CONFIGS)
def test_refresh_counts_match_per_cycle_simulation(params):
    cfg = ShieldConfig(**{"clock_mhz": 1, **params})
    rng = np.random.default_rng(1000 * params["kv_words"] + params["qo_words"])
    seen = 0
    for _ in range(40):
        trace = random_trace(cfg, rng, int(rng.integers(1, 30)))
        counts, live_words, cycles = brute_force(cfg, trace)
        seen += counts["standard"] + counts["relaxed"]
        assert s.expected_refresh_counts(cfg, trace) == {**counts, "refreshless": 0}
        r = s.model_trace(cfg, trace)
        assert r["cycles"] == cycles == trace.cycles(cfg.clock_mhz)
        assert r["live_word_us"]["kv"] * cfg.clock_mhz == pytest.approx(live_words["kv"])
        assert r["live_word_us"]["qo"] * cfg.clock_mhz == pytest.approx(live_words["qo"])
    assert seen > 500  # the traces do exercise the schedule


def test_refresh_counts_on_the_example_trace():
    cfg = load_config("shield_small")
    trace = load_trace("configs/traces/shield_small.yaml", cfg)
    counts, _, _ = brute_force(cfg, trace)
    assert s.expected_refresh_counts(cfg, trace) == {**counts, "refreshless": 0}


def test_long_idle_is_cheap_and_exact():
    cfg = CFG_2MB
    trace = Trace((Step("write", "kv", 0, 1000), Step("idle", us=1e7)))
    c = s.expected_refresh_counts(cfg, trace)
    # Rows 0..3 hold the 1000 words; their liveness block (64 rows) is live for ~1e10 cycles:
    # ~ cycles / T refreshes of each of its rows.
    rows = max(4, cfg.live_block_rows)
    assert cfg.live_block_rows == 64
    cycles = trace.cycles(cfg.clock_mhz)
    assert c["standard"] == pytest.approx(rows * cycles / cfg.t_std_cycles, abs=rows)
    assert c["relaxed"] == pytest.approx(rows * cycles / cfg.t_rel_cycles, abs=rows)


def test_empty_and_release_only_traces():
    cfg = ShieldConfig(kv_words=8, qo_words=8, row_words=4, clock_mhz=1)
    r = s.model_trace(cfg, Trace((Step("release", "qo"),)))
    assert r["refresh_counts"] == {"standard": 0, "relaxed": 0, "refreshless": 0}
    assert math.isnan(r["p_shield"]) and math.isnan(r["kv_fraction"])
    r = s.model_trace(cfg, Trace((Step("idle", us=100.0),)))
    assert r["refresh_energy_nj"]["total"] == 0 and r["p_shield"] == cfg.p_leak_mw
    assert "no word is ever live" in s.format_report(r)


# --- retention -----------------------------------------------------------------------------------

def test_retention_defaults_meet_the_paper_points():
    cfg = ShieldConfig()
    assert cfg.retention == DEFAULT_RETENTION
    assert s.ber(cfg, "relaxed", 1216.0) <= 1e-4           # KV mantissa at T_rel
    assert s.ber(cfg, "refreshless", cfg.qo_life_us) <= 4e-4  # QO mantissa over its life
    assert s.ber(cfg, "standard", cfg.t_std_us) == 0.0
    t = np.linspace(0, 8000, 4001)
    b = s.ber(cfg, "relaxed", t)
    assert np.all(np.diff(b) >= 0) and b[0] == 0 and b[-1] == 1e-2  # monotone, clamped
    assert s.ber(cfg, "relaxed", 3250.0) == pytest.approx(2e-3)     # log-linear midpoint
    assert s.retention_time_us(cfg, "relaxed", 1e-4) == pytest.approx(1216.0)
    assert s.retention_time_us(cfg, "relaxed", 0.5) == math.inf
    assert s.retention_time_us(cfg, "standard", 0.0) == pytest.approx(45.0)


# --- Algorithm 1 ----------------------------------------------------------------------------------

def test_fault_injection_statistics():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1 << 16, size=400_000, dtype=np.uint16)
    assert np.array_equal(s.inject_faults(x, 0.0, s.MASK_ALL, rng), x)
    for ber, mask in [(0.01, s.MASK_MANTISSA), (0.05, s.MASK_ALL), (1.0, 0x0101)]:
        y = s.inject_faults(x, ber, mask, rng)
        diff = x ^ y
        assert not np.any(diff & np.uint16(~mask & 0xFFFF))       # only masked bits flip
        k = bin(mask).count("1")
        changed = np.count_nonzero(diff) / x.size
        expect = ber * (1 - 2.0 ** -k)                         # per-element hit, random bits
        assert changed == pytest.approx(expect, rel=0.05)
        bit0 = int(np.flatnonzero([(mask >> i) & 1 for i in range(16)])[0])
        assert np.mean((diff >> bit0) & 1) == pytest.approx(ber / 2, rel=0.06)
    with pytest.raises(ValueError, match="uint16"):
        s.inject_faults(x.astype(np.int32), 0.1, 1, rng)


def test_mantissa_faults_hurt_far_less_than_uniform():
    bers = [1e-3, 1e-2]
    err = s.fault_sweep(bers, {"uniform": s.MASK_ALL, "mantissa": s.MASK_MANTISSA},
                        seeds=[0, 1, 2], n_tokens=32, d_model=64, n_heads=2)
    med_u, med_m = np.median(err["uniform"], axis=1), np.median(err["mantissa"], axis=1)
    assert np.all(np.isfinite(med_m)) and np.all(med_m < 0.1)
    assert np.all(med_m * 10 < med_u)
    # No faults: the hook only rounds to BF16, so the error is exactly zero.
    err0 = s.fault_sweep([0.0], {"uniform": s.MASK_ALL}, seeds=[0], n_tokens=8, d_model=16,
                         n_heads=2)
    assert err0["uniform"][0, 0] == 0.0


def test_fault_hook_classes():
    hook = s.FaultHook(p_kv=0.3, p_qo=0.0, bit_mask=s.MASK_MANTISSA,
                       rng=np.random.default_rng(0))
    assert [hook.probability(n) for n in "qkvo"] == [0.0, 0.3, 0.3, 0.0]
    y = np.linspace(-3, 3, 1000, dtype=np.float32)
    assert np.array_equal(hook("q", y), round_to_bf16(y).astype(np.float32))
    noisy = hook("k", y)
    same_hi = (BF16.to_bits(round_to_bf16(y)) >> 7) == (BF16.to_bits(noisy) >> 7)
    assert same_hi.all() and not np.array_equal(noisy, hook("q", y))


def test_torch_hook_when_torch_is_installed():
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(self, n, torch.nn.Linear(16, 16, bias=False))

        def forward(self, x):
            return self.o_proj(self.q_proj(x) + self.k_proj(x) + self.v_proj(x))

    torch.manual_seed(0)
    torch.set_grad_enabled(False)  # .numpy() below needs tensors without grad
    block = Block().to(torch.bfloat16)
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    ref = block.k_proj(x)
    handles = s.attach_torch_fault_hooks(block, 1.0, 0.0, s.MASK_MANTISSA,
                                         np.random.default_rng(0))
    assert len(handles) == 2
    noisy = block.k_proj(x)
    a = ref.view(torch.int16).numpy().view(np.uint16)
    b = noisy.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(a >> 7, b >> 7) and not np.array_equal(a, b)
    assert torch.equal(block.q_proj(x), block.q_proj(x))
    for h in handles:
        h.remove()
    torch.set_grad_enabled(True)


# --- scenarios (Fig. 5) ---------------------------------------------------------------------------

def test_footprint_model():
    fp = s.footprint(s.LIFECYCLE)
    assert s.QWEN3_8B.qo_words_per_token == 8192 and s.QWEN3_8B.kv_words_per_token == 2048
    assert fp["kv_fraction"][0] == pytest.approx(0.2)            # prefill: 2048 / (2048 + 8192)
    assert fp["kv_fraction"][-1] == pytest.approx(384 / 896)      # after 256 decode steps
    assert 2048 * s.QWEN3_8B.qo_words_per_token * 2 == 32 * 2**20  # the paper's "32 MB" QO


def test_scenario_gains_in_documented_ranges():
    res = {sc.name: s.scenario_power(CFG_2MB, sc) for sc in s.SCENARIOS}
    for r in res.values():
        # Pins to shield_2mb's calibration (E_ref_cycle fitted to 1.35x at f = 0.5): they hold
        # because of the fit, and guard only the flatness over footprints.
        assert 1.34 < r["gain_shield"] < 1.36                    # Fig. 5a: ~1.35x, flat
        assert 0.25 < r["eta"] < 0.27
        # Checks: Eq. 9 at the paper's intervals; Kelle below SHIELD on these short contexts.
        assert s.eta_eq9(s.PowerParams(), 1.0) < r["eta_eq9"] < s.eta_eq9(s.PowerParams(), 0.0)
        assert 1.12 < r["gain_kv_only"] < r["gain_shield"]        # Fig. 5a: 1.15 .. 1.32x
    kv_only = [res[n]["gain_kv_only"] for n in ("Summary", "Translation", "Storytelling")]
    assert kv_only == sorted(kv_only)
    life = s.scenario_power(CFG_2MB, s.LIFECYCLE)
    gap = life["eta_t"] - life["eta_kv_only_t"]
    assert np.all(gap > 0) and np.all(np.diff(gap) < 0)          # Fig. 5b: the gap narrows
    # Past f ~ 0.44 a KV-only policy at the 2e-3-BER interval beats SHIELD (README).
    long = s.scenario_power(CFG_2MB, s.STORYTELLING_LONG)
    assert long["gain_kv_only"] > long["gain_shield"]
