"""rDXE tile group RTL against the golden model (cocotb): one session of whole operations."""

from __future__ import annotations

import dataclasses
import json

import pytest

from memwall.families.rdxe.config import RdxeConfig
from memwall.hdl.rdxe.core import TOP_NAME, RdxeGroup
from memwall.verif.common.runner import simulate

TB = "memwall.verif.rdxe.tb_group"
#: 4 VACs x 4 lanes per tile, two tiles sharing tile 0's KV caches (GQA).
SMALL = RdxeConfig(dxts=2, vacs=4, lanes=4, wmem_words=64, kv_words=64, abuf_words=32,
                   fbuf_words=16, max_tokens=32, max_head_dim=16, gqa_group=2, dxes=4)


@pytest.mark.sim
@pytest.mark.parametrize("stall", [0.0, 0.3])
def test_group_session(tmp_path, stall):
    cfg = SMALL
    out = tmp_path / "cycles.json"
    simulate(RdxeGroup(cfg), TOP_NAME, TB,
             {"config": dataclasses.asdict(cfg), "seed": 5, "d": 16, "n": 6, "tokens": 13,
              "dh": 16, "stall": stall, "out": str(out)}, testcase="session")
    assert json.loads(out.read_text())["cycles"]


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
