"""The d-PLENA datapath top: every d-PLENA unit of a config, side by side (paper Fig. 3)."""

from __future__ import annotations

from memwall.hdl.common.netlist import StructuralTop

from .config import DplenaConfig
from .select import MaskedSelectUnit

__all__ = ["TOP_NAME", "datapath_parts", "build_top"]

TOP_NAME = "dplena_datapath"


def datapath_parts(cfg: DplenaConfig) -> dict:
    """The units of the datapath, by instance name, sized from the config."""
    return {
        "select": MaskedSelectUnit(cfg.vlen, width=cfg.int_width),
    }


def build_top(cfg: DplenaConfig) -> tuple[str, StructuralTop]:
    return TOP_NAME, StructuralTop(datapath_parts(cfg))
