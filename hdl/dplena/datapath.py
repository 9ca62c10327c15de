"""The d-PLENA datapath top: every d-PLENA unit of a config, side by side (paper Fig. 3)."""

from __future__ import annotations

from memwall.hdl.common.netlist import StructuralTop

from .config import DplenaConfig
from .elementwise import ElementwiseUnit, ScalarFpUnit
from .reduction import ReductionUnit
from .select import MaskedSelectUnit
from .topk import TopkMaskUnit

__all__ = ["TOP_NAME", "datapath_parts", "build_top"]

TOP_NAME = "dplena_datapath"


def datapath_parts(cfg: DplenaConfig) -> dict:
    """The units of the datapath, by instance name, sized from the config."""
    return {
        "reduction": ReductionUnit(cfg.vlen),
        "elementwise": ElementwiseUnit(cfg.vlen),
        "scalar_fp": ScalarFpUnit(),
        "topk": TopkMaskUnit(cfg.block_len, cfg.k_max),
        "select": MaskedSelectUnit(cfg.vlen, width=cfg.int_width),
    }


def build_top(cfg: DplenaConfig) -> tuple[str, StructuralTop]:
    return TOP_NAME, StructuralTop(datapath_parts(cfg))
