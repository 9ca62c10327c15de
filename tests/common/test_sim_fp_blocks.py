"""The pipelined FP blocks of dplena32, each as that config builds it, through the Verilog
flow: streamed behind a LockstepControl with gaps and back-pressure, every result equal to the
golden model's.

:mod:`test_fp_pipeline` checks every depth of every block in Amaranth's simulator and with
millions of compiled vectors; this runs the same kind of operands (its vector generators)
through the generated Verilog, the form the mutation run (``memwall mutate``) breaks and the
rest of the d-PLENA regression only reaches through whole units.
"""

from __future__ import annotations

import numpy as np
import pytest

# Block tables, goldens and vector generators of the Amaranth-simulator tests (tests/ is on
# sys.path under pytest's default import mode).
from test_fp_pipeline import BLOCKS, _rng, _vectors  # noqa: I001

from memwall.config import load_config
from memwall.golden.common.formats import BF16, FP32
from memwall.verif.common.fp_harness import StreamedFpBlock
from memwall.verif.common.runner import simulate
from memwall.verif.dplena.stimulus import fp32_sticky_ties

pytestmark = pytest.mark.sim

TB = "memwall.verif.common.tb_fp_block"
#: Each block's depth field in FpStages.
DEPTH_FIELD = {"add_bf16": "add_bf16", "add_fp32": "add_fp32", "mul_bf16": "mul_bf16",
               "mul_fp32": "mul_fp32", "cvt": "to_bf16", "exp": "exp", "recip": "recip"}
#: Operands per block: the Amaranth tests' mix (VECTORS), then each class of EXTRA (SHORT each).
VECTORS, SHORT = 2500, 1500


def _short_mantissas(name: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Operands whose fractions keep only their top few bits: exact products and aligned sums
    with few significant bits, so rounding ties (round bit set, sticky bits clear) are common,
    the case a broken sticky or round-to-even bit gets wrong."""
    fmt = BF16 if name.endswith("bf16") else FP32
    man = fmt.man_bits
    out = {}
    for port in ("a", "b"):
        keep = rng.integers(1, man + 1, n)
        frac = rng.integers(0, 1 << man, n, dtype=np.int64) & ~((1 << (man - keep)) - 1)
        out[port] = frac
    ea = rng.integers(1, fmt.exp_max, n)
    if name.startswith("mul"):
        # exponents summing around the subnormal boundary half the time (shifted ties)
        eb = np.where(rng.random(n) < 0.5, np.clip(fmt.bias - ea + rng.integers(-man - 3, 3, n),
                                                   0, fmt.exp_max - 1),
                      rng.integers(1, fmt.exp_max, n))
    else:
        eb = np.clip(ea + rng.integers(-man - 3, man + 4, n), 0, fmt.exp_max - 1)
    sign = rng.integers(0, 2, (2, n))
    values = {port: ((sign[i] << (fmt.width - 1)) | (e << man) | out[port]).astype(fmt.uint)
              for i, (port, e) in enumerate((("a", ea), ("b", eb)))}
    if name.startswith("add"):
        values["sub"] = rng.integers(0, 2, n)
    return values


def _cancellations(name: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Adds of nearly opposite operands: equal or neighbouring exponents, the fractions
    differing in their low ``k`` bits for every ``k``, so the result has every count of
    leading zeros and the normalising shift and its leading-zero count are all exercised."""
    fmt = BF16 if name.endswith("bf16") else FP32
    man, sign_bit = fmt.man_bits, 1 << (fmt.width - 1)
    a = ((rng.integers(2, fmt.exp_max - 1, n) << man) | rng.integers(0, 1 << man, n))
    low = (1 << (np.arange(n) % (man + 1))) - 1                 # k = 0 .. man low bits
    b = (a & ~low) | (rng.integers(0, 1 << man, n) & low)
    b = b - (rng.random(n) < 0.3).astype(np.int64) * (1 << man)  # the exponent below, a third
    sub = rng.integers(0, 2, n)
    a_sign = rng.integers(0, 2, n) * sign_bit
    b_sign = np.where(sub == 1, a_sign, a_sign ^ sign_bit)      # effective subtraction
    return {"a": (a | a_sign).astype(fmt.uint), "b": (b | b_sign).astype(fmt.uint), "sub": sub}


def _subnormal_factors(name: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Products of a subnormal (each count of leading zeros in turn) and an operand large
    enough to bring the product back to the normal range: the subnormal's normalising
    shift."""
    fmt = BF16 if name.endswith("bf16") else FP32
    man = fmt.man_bits
    lead = np.arange(n) % man                                     # leading zeros of the fraction
    frac = (1 << (man - 1 - lead)) | (rng.integers(0, 1 << man, n) & ((1 << (man - 1 - lead)) - 1))
    big = np.clip(2 * fmt.bias - 1 + rng.integers(-man, man, n), 1, fmt.exp_max - 1)
    sign = rng.integers(0, 2, (2, n)) << (fmt.width - 1)
    a = sign[0] | frac
    b = sign[1] | (big << man) | rng.integers(0, 1 << man, n)
    swap = rng.random(n) < 0.5
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    return {"a": a.astype(fmt.uint), "b": b.astype(fmt.uint)}


def _sticky_ties(name: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """FP32 -> BF16 ties but for one sticky bit, each bit in turn, with even and odd BF16
    results: a sticky bit left out rounds them to even."""
    return {"a": fp32_sticky_ties(rng.integers(0, 1 << 32, n), np.arange(n))}


#: Per block, its extra operand classes beside the Amaranth tests' mix.
EXTRA = {"add_bf16": [_short_mantissas, _cancellations],
         "add_fp32": [_short_mantissas, _cancellations],
         "mul_bf16": [_short_mantissas, _subnormal_factors],
         "mul_fp32": [_short_mantissas, _subnormal_factors],
         "cvt": [_sticky_ties]}


def _inputs(name: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Operands in the golden models' own dtypes."""
    parts = [_vectors(name, VECTORS, rng)]
    parts += [extra(name, SHORT, rng) for extra in EXTRA.get(name, [])]
    return {port: np.concatenate([part[port] for part in parts]) for port in parts[0]}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block_at_regression_config(name):
    stages = getattr(load_config("dplena32").stages, DEPTH_FIELD[name])
    make, golden = BLOCKS[name]
    inputs = _inputs(name, _rng(300 + sorted(BLOCKS).index(name)))
    expected = golden(inputs)
    simulate(StreamedFpBlock(make(stages)), f"streamed_{name}", TB,
             {"inputs": {port: np.asarray(v).astype(np.int64).tolist()
                         for port, v in inputs.items()},
              "expected": np.asarray(expected).astype(np.int64).tolist()})
