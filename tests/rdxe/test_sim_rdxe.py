"""rDXE tile group RTL against the golden model (cocotb): one session of whole operations."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from memwall.families.rdxe.config import RdxeConfig
from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup
from memwall.verif.common.runner import simulate

TB = "memwall.verif.rdxe.tb_group"
#: 4 VACs x 4 lanes per tile, two tiles sharing tile 0's KV caches (GQA).
SMALL = RdxeConfig(dxts=2, vacs=4, lanes=4, wmem_words=64, kv_words=64, abuf_words=32,
                   fbuf_words=16, max_tokens=32, max_head_dim=16, gqa_group=2, dxes=4)


@pytest.mark.sim
@pytest.mark.parametrize("stall, n", [(0.0, 10), (0.3, 6)])
def test_group_session(tmp_path, stall, n):
    """``n`` rows per GEMV: 10 makes three groups of 4 VACs, the last one partial, after an odd
    number of beats held (a corrupted rows-left count once went unseen with two groups)."""
    cfg = SMALL
    out = tmp_path / "cycles.json"
    simulate(RdxeGroup(cfg), TOP_NAME, TB,
             {"config": dataclasses.asdict(cfg), "seed": 5, "d": 16, "n": n, "tokens": 13,
              "dh": 16, "stall": stall, "out": str(out)}, testcase="session")
    assert json.loads(out.read_text())["cycles"]


#: The saturating session's output gain: every normalised command's INT8 outputs reach both
#: limits (RMSNorm-GEMV and P.V, fused and sequential), with values between them too.
SATURATING_GAIN = 512.0


def test_saturating_session_reaches_both_limits():
    """The session :func:`test_saturating_session` runs does drive every fused and sequential
    RMSNorm-GEMV and P.V's INT8 outputs to +127 and to -128 (else it tests nothing)."""
    from memwall.verif.rdxe.tb_group import build_session

    prog, expect, _ = build_session(SMALL, 5, 16, 6, 13, 16, out_gain=SATURATING_GAIN)
    tiles = SMALL.gqa_group
    normalised = [(c, np.ravel(e[:tiles])) for c, e in zip(prog.commands, expect, strict=True)
                  if e is not None and (c["fused"] or c["sequential"])]
    kinds = {(c["fused"], c["exp"]) for c, _ in normalised}
    assert kinds == {(1, 0), (0, 0), (1, 1), (0, 1)}, kinds
    for c, outs in normalised:
        assert c["narrow"] and outs.max() == 127 and outs.min() == -128, (c, outs)


@pytest.mark.sim
def test_saturating_session(tmp_path):
    """Outputs past both INT8 limits, fused and sequential, bit for bit (the fused VRC once
    saturated at 16 bits: its factor entered the chain without the command's width)."""
    simulate(RdxeGroup(SMALL), TOP_NAME, TB,
             {"config": dataclasses.asdict(SMALL), "seed": 5, "d": 16, "n": 6, "tokens": 13,
              "dh": 16, "out_gain": SATURATING_GAIN}, testcase="session")


def test_gqa_group_stores_one_kv_cache():
    """Only tile 0's VACs have KV memories; the others read them over VLINK, so a group of g
    query heads holds 1/g of the KV bytes that g tiles of multi-head attention would."""
    from memwall.golden.rdxe.layout import kv_bytes_used
    from memwall.hdl.common.netlist import Design

    design = Design()
    design.add_top(RdxeGroup(SMALL), TOP_NAME)
    owners = [n for n in design.module_names if n.startswith("vac_kv1")]
    readers = [n for n in design.module_names if n.startswith("vac_kv0")]
    assert len(owners) == len(readers) == 1
    assert "kvmem" in design.module_text(owners[0])
    assert "kvmem" not in design.module_text(readers[0])
    assert kv_bytes_used(32, 16, kv_heads=1) * SMALL.gqa_group == \
        kv_bytes_used(32, 16, kv_heads=SMALL.gqa_group)


def test_programs_carry_the_output_width_and_per_head_factors():
    """The host program generator, without simulation: ``out_bits`` sets the RMSNorm-GEMV
    command's output width; per-KV-head factors reach each head's commands in order."""
    from memwall.hdl.rdxe.program import ShapeError, plan_attention, plan_rmsnorm_gemv

    x, w = np.ones(16, np.int64), np.ones((6, 16), np.int64)
    for bits, narrow in ((8, 1), (16, 0)):
        prog, _ = plan_rmsnorm_gemv(SMALL, x, w, 1, (3, 4), out_bits=bits)
        assert prog.commands[-1]["narrow"] == narrow
    with pytest.raises(ValueError, match="out_bits must be 8 or 16"):
        plan_rmsnorm_gemv(SMALL, x, w, 1, (3, 4), out_bits=4)
    q, kv = np.ones((4, 16), np.int64), np.ones((3, 2, 16), np.int64)
    prog, _ = plan_attention(SMALL, q, kv, kv, [(5, 1), (7, 2)], [(9, 3), (11, 4)])
    qk = [c for c in prog.commands if c["kv"] and not c["exp"]]
    pv = [c for c in prog.commands if c["exp"]]
    assert [(c["rc_mant"], c["rc_shift"]) for c in qk] == [(5, 1), (7, 2)]
    assert [(c["op_fields"]["smant"], c["op_fields"]["sshift"]) for c in pv] == \
        [(9, 3), (11, 4)]
    shared, _ = plan_attention(SMALL, q, kv, kv, (5, 1), (9, 3))
    assert [c["rc_mant"] for c in shared.commands if c["kv"] and not c["exp"]] == [5, 5]
    with pytest.raises(ShapeError, match="3 factors for 2 KV heads"):
        plan_attention(SMALL, q, kv, kv, [(5, 1)] * 3, (9, 3))
