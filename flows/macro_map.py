"""Memories as SRAM macros: what each macro type costs, which arrangement covers a memory.

Synthesis (:mod:`memwall.flows.synth`) leaves every memory with a write port as a black-box
``memwall_ram`` cell and reads its shape from Yosys' RTLIL dump (:func:`memories`);
:func:`map_memory` then picks the arrangement of one macro type that covers it
(:func:`choose_macro`: ``rows x cols`` copies, an access clocking one row) from every macro's
area and access energy (:func:`macro_costs`: the SRAM model's, :mod:`memwall.flows.sram_model`,
where it covers the PDK, else the macro's Liberty), or lists it as unmapped with the reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .constants import MEMORY_CELL
from .errors import FlowError, LibertyError
from .liberty import Liberty
from .memory_power import macro_model
from .pdk import Pdk
from .sram_model import macro_estimate

__all__ = ["MACRO_OBJECTIVES", "AREA_SLACK", "MacroCost", "macro_costs", "choose_macro",
           "liberty_area", "memories", "map_memory"]


def liberty_area(path: Path) -> float:
    """The ``area`` of the (first) cell in a macro's Liberty file."""
    try:
        return Liberty(path).cell_area()
    except (LibertyError, IndexError) as exc:
        raise FlowError(f"{path}: no cell area in this Liberty file ({exc})") from None


#: How synthesis picks a memory's macro arrangement: "energy" (least energy per access among
#: the arrangements within :data:`AREA_SLACK` of the least area, then least area), or "area"
#: (least area, then least energy). Decision: energy within the area slack. An access costs the
#: ``cols`` macros of one row, so by access energy alone a deep memory always splits into ever
#: more, ever shallower macros: the model charges each macro's bitlines but not the row
#: multiplexing and wiring between macros, which grow with their number. Area (the SRAM model's,
#: with each macro's fixed periphery) bounds the split.
MACRO_OBJECTIVES = ("energy", "area")
#: How much more area than the least an arrangement chosen by energy may take. Decision: 10 %.
AREA_SLACK = 0.10


@dataclass(frozen=True)
class MacroCost:
    """One macro type as synthesis prices it."""
    area_um2: float
    access_energy_j: float
    source: str


def macro_costs(pdk: Pdk) -> dict[str, MacroCost]:
    """Area and access energy of every macro of ``pdk``: the SRAM model's
    (:mod:`memwall.flows.sram_model`) where it covers the PDK, else the Liberty's."""
    costs = {}
    for macro in pdk.macros:
        estimate = macro_estimate(pdk, macro)
        if estimate is not None:
            costs[macro.name] = MacroCost(estimate.area_um2, estimate.access_energy_j,
                                          estimate.source)
        else:
            model = macro_model(macro.name, macro.depth, macro.width, Path(macro.liberty))
            costs[macro.name] = MacroCost(liberty_area(macro.liberty), model.clock_j,
                                          f"{Path(macro.liberty).name} (Liberty)")
    return costs


def choose_macro(depth: int, width: int, macros, costs: dict[str, MacroCost],
                 objective: str = "energy"):
    """The best macro arrangement covering ``depth`` x ``width`` bits.

    Every macro type is tried as ``rows = ceil(depth / macro.depth)`` by ``cols =
    ceil(width / macro.width)`` copies; an access clocks one row (``cols`` macros). The
    ``objective`` (:data:`MACRO_OBJECTIVES`) ranks them: least energy per access among those
    within :data:`AREA_SLACK` of the least area, or least area then least energy; the name
    breaks ties.

    Returns
    -------
    tuple[Macro, int, float, float] or None
        The macro, how many copies, their total area, the energy of one access (J); None
        when there are no macros.
    """
    if objective not in MACRO_OBJECTIVES:
        raise ValueError(f"macro objective {objective!r}: one of {', '.join(MACRO_OBJECTIVES)}")
    options = []
    for macro in macros:
        cols = math.ceil(width / macro.width)
        count = cols * math.ceil(depth / macro.depth)
        options.append((macro, count, count * costs[macro.name].area_um2,
                        cols * costs[macro.name].access_energy_j))
    if not options:
        return None
    least_area = min(area for _, _, area, _ in options)
    if objective == "energy":
        options = [o for o in options if o[2] <= least_area * (1 + AREA_SLACK)]
        return min(options, key=lambda o: (o[3], o[2], o[0].name))
    return min(options, key=lambda o: (o[2], o[3], o[0].name))


def _param(value: str):
    """An RTLIL parameter value: decimal, ``N'bits`` or a string."""
    value = value.strip()
    if value.startswith('"'):
        return value[1:-1].replace("\\\\", "\\")
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    match = re.fullmatch(r"(\d+)'([01xz]*)", value)
    if match:
        return match.group(2)   # bit string, MSB first
    return value


def memories(dump: str) -> list[dict]:
    """The ``memwall_ram`` cells of an RTLIL ``dump``, as parameter dicts."""
    memories = []
    for block in re.split(rf"^\s*cell \\{MEMORY_CELL} ", dump, flags=re.M)[1:]:
        name = block.split("\n", 1)[0].strip()
        params = {m.group(1): _param(m.group(2))
                  for m in re.finditer(r"^\s*parameter \\(\w+) (.*)$", block, re.M)}
        memories.append({"cell": name, **params})
    return memories


def map_memory(module: str, mem: dict, instances: int, pdk: Pdk,
                costs: dict[str, MacroCost], objective: str) -> dict:
    width, depth = int(mem["WIDTH"]), int(mem["SIZE"])
    rd_ports, wr_ports = int(mem["RD_PORTS"]), int(mem["WR_PORTS"])
    rd_clocked = str(mem.get("RD_CLK_ENABLE", ""))
    entry = {"module": module, "memory": str(mem.get("MEMID", mem["cell"])).lstrip("\\"),
             "cell": mem["cell"], "depth": depth, "width": width, "bits": depth * width,
             "read_ports": rd_ports, "write_ports": wr_ports, "instances": instances}
    reason = None
    if not pdk.macros:
        reason = f"PDK {pdk.name} has no SRAM macros"
    elif rd_ports > 1 or wr_ports > 1:
        reason = (f"{rd_ports} read / {wr_ports} write ports; the fakeram macros have one "
                  f"read/write port")
    elif rd_ports and "0" in rd_clocked:
        reason = "asynchronous read port; SRAM macros read synchronously"
    if reason is None:
        macro, count, area, energy = choose_macro(depth, width, pdk.macros, costs, objective)
        note = "1r1w memory on a 1rw macro: area estimate" if rd_ports and wr_ports else None
        entry.update(status="mapped", macro=macro.name, macro_count=count,
                     area_um2=area, total_um2=area * instances, note=note,
                     access_energy_pj=energy * 1e12, chosen_by=objective,
                     cost_source=costs[macro.name].source)
    else:
        entry.update(status="unmapped", reason=reason, area_um2=0.0, total_um2=0.0)
    return entry


# -- Runs ---------------------------------------------------------------------------------------
