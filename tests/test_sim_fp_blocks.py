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
from memwall.golden.formats import BF16, FP32
from memwall.verif.common.fp_harness import StreamedFpBlock
from memwall.verif.common.runner import simulate

# Block tables, goldens and vector generators of the Amaranth-simulator tests (tests/ is on
# sys.path under pytest's default import mode).
from test_fp_pipeline import BLOCKS, _rng, _vectors  # noqa: I001

from memwall.config import load_config

pytestmark = pytest.mark.sim

TB = "memwall.verif.common.tb_fp_block"
#: Each block's depth field in FpStages.
DEPTH_FIELD = {"add_bf16": "add_bf16", "add_fp32": "add_fp32", "mul_bf16": "mul_bf16",
               "mul_fp32": "mul_fp32", "cvt": "to_bf16", "exp": "exp", "recip": "recip"}
#: Operand sets per block: the Amaranth tests' mix, then (two-operand blocks) short mantissas.
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


def _inputs(name: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Operands in the golden models' own dtypes."""
    mixed = _vectors(name, VECTORS, rng)
    if name in ("cvt", "exp", "recip"):
        return mixed
    short = _short_mantissas(name, SHORT, rng)
    return {port: np.concatenate([mixed[port], short[port]]) for port in mixed}


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
