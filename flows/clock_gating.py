"""Clock gating of the registers whose enables the RTL has: which registers hold, how often,
and what an integrated clock gate on their enables would save.

The clock tree it changes (what the per-module OpenSTA runs' ideal clock leaves out) and the
Liberty energies it costs with are :mod:`memwall.flows.clock_tree`'s; the enable registers, their
hold fractions and enable groups are :mod:`memwall.flows.enable_registers`'s
(:func:`~memwall.flows.enable_registers.scan_registers`).

**Gated power** (:func:`clock_gating`): enable groups of at least ``min_group`` flops
(:data:`MIN_GATED_GROUP`; a group whose hold is never true in the simulation has none:
:meth:`~memwall.flows.enable_registers.ModuleRegisters.observe`) get one ICG
(:data:`ICG_CELL`) per ``max_fanout`` flops (the tree's leaf cluster size,
:data:`memwall.flows.clock_tree.REGISTER_FANOUT` by default). The tree is not rebuilt: each ICG
stands in for its flops' leaf buffer, driving their leaf net (wire and clock pins), and its clock
pin is one more load on the tree (the leaf buffer's own input pin stays: conservative). Per
gated flop and cycle, of its leaf cluster's cost (:class:`~memwall.flows.clock_tree.ClockTree`):

- its share of the leaf buffer's internal energy (``flop_leaf_buffer_j``) is no longer charged:
  the ICG's output internal energy, in enabled cycles at the cluster's load, replaces it;
- its clock-pin internal energy and its share of the leaf net, wire plus its own clock pin
  C V^2 (``flop_leaf_net_j``), are charged only in cycles it loads (1 - hold).

Saved per gated flop: ``flop_leaf_buffer_j + hold x (clock-pin internal + flop_leaf_net_j)``;
a group that always holds saves all of it and pays only its ICGs. Each ICG costs every cycle
its clock pin's internal energy (by the enable state), its output's internal energy in enabled
cycles, its clock pin's C V^2 on the tree and its leakage (:func:`icg_energy`). The hold
multiplexers an ICG makes redundant are not removed (their power stays: conservative). Without
an activity run there are no hold fractions: the record then gives the tree and the counts,
groups from the hold reduced to nets other registers' holds share, and no gated total.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .clock_tree import (
    MACRO_FANOUT,
    REGISTER_FANOUT,
    ClockTree,
    clock_pin_energy,
    clock_tree,
    clock_wire_cap,
    cycle_energy,
    hold_clock_pin_energy,
)
from .enable_registers import ENABLE_DEPTH, ENABLE_LEAVES, ModuleRegisters
from .liberty import CellLibrary
from .opensta2019 import state_leakage
from .pdk import Pdk, pdk_cell_library
from .sta import nominal_slew
from .wire_load import CLOCK_RC

__all__ = ["ICG_CELL", "MIN_GATED_GROUP", "icg_energy", "clock_gating"]


@dataclass(frozen=True)
class Icg:
    """An integrated clock-gating cell and how ORFS wires it."""
    cell: str
    clock: str
    enable: str
    out: str
    tied: tuple[tuple[str, float], ...] = ()


#: PDK -> the ICG ORFS maps ``OPENROAD_CLKGATE`` to (``flow/platforms/asap7/yoSys/
#: cells_clkgate_R.v``, ``nangate45/cells_clkgate.v``, ``sky130hd/cells_clkgate_hd.v``, ORFS
#: commit 8c009b0b); ASAP7's scan enable SE tied low as there. ORFS lists ``ICG*`` as
#: dont-use for ASAP7 synthesis (no flow inserts them); here they are only costed.
ICG_CELL = {
    "asap7": Icg("ICGx1_ASAP7_75t_R", "CLK", "ENA", "GCLK", (("SE", 0.0),)),
    "nangate45": Icg("CLKGATE_X1", "CK", "E", "GCK"),
    "sky130hd": Icg("sky130_fd_sc_hd__dlclkp_1", "CLK", "GATE", "GCLK"),
}

#: Fewest flops one ICG is inserted for: OpenROAD's clock gating (``src/cgt/README.md``, commit
#: 5c9e487) gates a condition with at least 10 registers by default. Sensitivity: 1, 3, 32.
MIN_GATED_GROUP = 10


# --------------------------------------------------------------------------------------------
# Gated and ungated power.

def _icg_states(pdk: Pdk, enabled: bool) -> dict[str, float]:
    icg = ICG_CELL[pdk.name]
    return {icg.enable: 1.0 if enabled else 0.0, icg.out: 0.0, **dict(icg.tied)}


def _leakage_w(cells: CellLibrary, cell: str) -> float:
    """A cell's leakage (W) as the flow's OpenSTA runs charge it: ``cell_leakage_power``, else
    what the OpenSTA-2019 view states for it (:func:`memwall.flows.opensta2019.state_leakage`)."""
    liberty = cells.liberty_of(cell)
    group = liberty.cell(cell)
    total = group.attr("cell_leakage_power")
    if total is None:
        total = state_leakage(group)
    return float(total or 0.0) * liberty.leakage_w


def icg_energy(pdk: Pdk, hold: float, load_f: float, clock_period_ns: float, *,
               slew_s: float | None = None) -> float:
    """Energy (J) per clock cycle of one ICG whose enable is off a ``hold`` share of cycles,
    driving ``load_f``: its clock pin's internal energy in each enable state, its output's in
    enabled cycles, its clock pin's C V^2 on the tree, and its leakage."""
    cells = pdk_cell_library(pdk)
    icg = ICG_CELL[pdk.name]
    slew = nominal_slew(pdk) if slew_s is None else slew_s
    voltage = cells.libs[0].voltage
    on, off = _icg_states(pdk, True), _icg_states(pdk, False)
    clock_on = cycle_energy(cells, icg.cell, icg.clock, slew_s=slew, duties=on)
    clock_off = cycle_energy(cells, icg.cell, icg.clock, slew_s=slew, duties=off)
    out_on = cycle_energy(cells, icg.cell, icg.out, slew_s=slew, load_f=load_f,
                          related=icg.clock, duties=on)
    pin = cells.info(icg.cell).inputs[icg.clock]
    return ((1.0 - hold) * (clock_on + out_on) + hold * clock_off + pin * voltage ** 2
            + _leakage_w(cells, icg.cell) * clock_period_ns * 1e-9)


def _flop_pin_cap(cells: CellLibrary, flops: dict[str, int]) -> float:
    return sum(n * sum(cells.info(t).inputs[p] for p in cells.info(t).clock_pins)
               for t, n in flops.items())


def _macro_sinks(macros: list[dict], instances: dict[str, int],
                 cells: CellLibrary) -> tuple[int, float]:
    """(clock pins, their total capacitance in F) of the memories' macros."""
    count, cap = 0, 0.0
    for entry in macros:
        if entry.get("status") != "mapped" or entry.get("macro") not in cells:
            continue
        info = cells.info(entry["macro"])
        n = int(entry.get("macro_count", 0)) * \
            int(instances.get(entry.get("module"), entry.get("instances", 1)))
        count += n * len(info.clock_pins)
        cap += n * sum(info.inputs[p] for p in info.clock_pins)
    return count, cap


#: How the record's figures are computed, as metrics.json states it.
METHOD = ("clock tree: buffer tree of the PDK's CTS buffer over every flop and macro clock pin "
          "(internal energy from Liberty at its transitions and loads, wire from the wire-load "
          "model at the clock wire C, buffer inputs and sink pins C V^2; OpenSTA's ideal clock "
          "charges none of these); enable registers: flops whose next state is a hold "
          f"multiplexer on their own state within a {ENABLE_DEPTH}-level cone of D (positive "
          "unate in the state); hold: share of the activity simulation's cycles the hold "
          "condition is true; gated: one ICG per leaf cluster of a group of flops sharing an "
          "enable that holds in some cycle, standing in for their leaf buffer (its internal "
          "energy replaced by the ICG's output energy in enabled cycles), their clock-pin "
          "internal energy, leaf wire and clock pins charged only when loading "
          "(memwall.flows.clock_gating)")


def _gating(registers: dict[str, ModuleRegisters], instances: dict[str, int], pdk: Pdk,
            tree: ClockTree, clock_period_ns: float, min_group: int, max_fanout: int,
            slew_s: float) -> dict:
    """Per-cycle savings of gating every enable group of ``min_group`` flops or more, one ICG
    per ``max_fanout`` of its flops."""
    cells = pdk_cell_library(pdk)
    saved = icg_j = 0.0
    gated = icgs = groups_gated = losing = 0
    hold_sum = unchanged_sum = 0.0
    unchanged_n = 0
    by_module = {}
    for module, regs in registers.items():
        count = instances.get(module, 0)
        if not count:
            continue
        m_saved = m_icg = 0.0
        m_gated = m_icgs = 0
        for members in regs.groups().values():
            if len(members) < min_group or members[0].hold is None:
                continue
            hold = members[0].hold
            n_icg = math.ceil(len(members) / max_fanout)
            per = len(members) / n_icg
            pin = _flop_pin_cap(cells, {f.type: 1 for f in members[:1]})
            load = per * pin + clock_wire_cap(pdk, cells, per)
            e_icg = n_icg * icg_energy(pdk, hold, load, clock_period_ns, slew_s=slew_s)
            # The ICG replaces the leaf buffer (its output energy is in e_icg); the flops'
            # clock pins and leaf net switch only in loading cycles.
            e_saved = sum(tree.flop_leaf_buffer_j
                          + hold * (hold_clock_pin_energy(cells, f.type, slew_s, f.state_duty)
                                    + tree.flop_leaf_net_j)
                          for f in members)
            losing += count * (e_saved < e_icg)
            m_saved += e_saved
            m_icg += e_icg
            m_gated += len(members)
            m_icgs += n_icg
            hold_sum += count * hold * len(members)
            for f in members:
                if f.unchanged is not None:
                    unchanged_sum += count * f.unchanged
                    unchanged_n += count
            groups_gated += count
        saved += count * m_saved
        icg_j += count * m_icg
        gated += count * m_gated
        icgs += count * m_icgs
        if regs.flops:
            holds = [f.hold for f in regs.holds if f.hold is not None]
            by_module[module] = {
                "instances": count, "flops": sum(regs.flops.values()),
                "enable_flops": len(regs.holds),
                "yosys_enable_flops": (regs.yosys or {}).get("enable"),
                "yosys_flops": (regs.yosys or {}).get("all"),
                "binate_feedback_flops": regs.binate, "unclassified_flops": regs.unclassified,
                "enable_groups": len(regs.groups()),
                "gated_flops": m_gated, "icgs": m_icgs,
                "hold_fraction": sum(holds) / len(holds) if holds else None,
                "saving_mw": count * (m_saved - m_icg) / (clock_period_ns * 1e-9) * 1e3}
    mw = 1e3 / (clock_period_ns * 1e-9)
    return {"saved_mw": saved * mw, "icg_mw": icg_j * mw, "saving_mw": (saved - icg_j) * mw,
            "gated_flops": gated, "icgs": icgs, "groups_gated": groups_gated,
            "groups_losing": losing,
            "hold_fraction": hold_sum / gated if gated else None,
            "unchanged_fraction": unchanged_sum / unchanged_n if unchanged_n else None,
            "by_module": by_module}


def clock_gating(registers: dict[str, ModuleRegisters], manifest: dict, macros: list[dict],
                 pdk: Pdk, clock_period_ns: float, ungated_without_tree_mw: float, *,
                 max_fanout: int = REGISTER_FANOUT, macro_fanout: int = MACRO_FANOUT,
                 min_group: int = MIN_GATED_GROUP) -> dict:
    """The clock tree and clock gating of a design, as ``metrics.json``'s ``clock_gating``.

    ``registers``: :func:`scan_registers` of every module (observed by the activity simulation,
    else no hold shares: the gated total is then None). ``ungated_without_tree_mw``: the flow's
    power total before the tree (OpenSTA and memories); ``ungated_total_mw`` adds the tree.
    """
    cells = pdk_cell_library(pdk)
    instances = manifest["instances"]
    slew = nominal_slew(pdk)
    flop_pins = sum(instances.get(m, 0) * r.clock_pins for m, r in registers.items())
    flop_cap = sum(instances.get(m, 0) * _flop_pin_cap(cells, r.flops)
                   for m, r in registers.items())
    macro_pins, macro_cap = _macro_sinks(macros, instances, cells)
    mean_flop = flop_cap / flop_pins if flop_pins else 0.0
    mean_macro = macro_cap / macro_pins if macro_pins else 0.0

    def tree_at(fanout: int) -> ClockTree:
        return clock_tree(pdk, flop_pins, mean_flop, macro_pins, mean_macro,
                          max_fanout=fanout, macro_fanout=macro_fanout)

    tree = tree_at(max_fanout)
    tree_mw = tree.power_mw(clock_period_ns)
    ungated = ungated_without_tree_mw + tree_mw
    flop_clock_mw = sum(instances.get(m, 0) * n * clock_pin_energy(cells, t, slew)
                        for m, r in registers.items() for t, n in r.flops.items()
                        if cells.info(t).clock_pins) / (clock_period_ns * 1e-9) * 1e3
    flops = sum(instances.get(m, 0) * sum(r.flops.values()) for m, r in registers.items())
    enables = sum(instances.get(m, 0) * len(r.holds) for m, r in registers.items())
    observed = any(r.observed for r in registers.values())
    gating = _gating(registers, instances, pdk, tree, clock_period_ns, min_group, max_fanout,
                     slew)
    gated = ungated - gating["saving_mw"] if observed else None
    icg = ICG_CELL[pdk.name]
    record = {
        "method": METHOD,
        "clock_tree_mw": tree_mw,
        "clock_tree": tree.as_dict(clock_period_ns),
        "flop_clock_pins_mw": flop_clock_mw,
        "flops": flops,
        "enable_flops": enables,
        "enable_fraction": enables / flops if flops else None,
        "yosys_cross_check": _yosys_totals(registers, instances),
        "binate_feedback_flops": sum(instances.get(m, 0) * r.binate
                                     for m, r in registers.items()),
        "unclassified_flops": sum(instances.get(m, 0) * r.unclassified
                                  for m, r in registers.items()),
        "enable_groups": sum(instances.get(m, 0) * len(r.groups()) for m, r in registers.items()),
        "gated_flops": gating["gated_flops"],
        "icgs": gating["icgs"],
        "groups_gated": gating["groups_gated"],
        "groups_losing": gating["groups_losing"],
        "hold_fraction": gating["hold_fraction"],
        "unchanged_fraction": gating["unchanged_fraction"],
        "ungated_total_mw": ungated,
        "gated_total_mw": gated,
        "saving_mw": gating["saving_mw"] if observed else None,
        "saving_fraction": gating["saving_mw"] / ungated if observed and ungated else None,
        "saved_clock_mw": gating["saved_mw"] if observed else None,
        "icg_mw": gating["icg_mw"] if observed else None,
        "parameters": {
            "cts_buffer": tree.buffer, "max_fanout": max_fanout, "macro_fanout": macro_fanout,
            "icg_cell": icg.cell, "icg_max_flops": max_fanout, "min_group": min_group,
            "enable_cone_levels": ENABLE_DEPTH, "enable_cone_leaves": ENABLE_LEAVES,
            "clock_slew_ps": round(slew * 1e12, 3),
            "clock_wire_ff_per_um": CLOCK_RC[pdk.name][1] if pdk.name in CLOCK_RC else None},
        "sources": {
            "cts_buffer": "ORFS flow/platforms/<pdk>/config.mk CTS_BUF_CELL (commit a5e3b0218)",
            "max_fanout": "OpenROAD src/cts/README.md: register sink clusters capped at 30",
            "macro_fanout": "OpenROAD src/cts/README.md: -macro_clustering_size default 4",
            "min_group": "OpenROAD src/cgt/README.md: a condition gates >= 10 registers",
            "icg_cell": "ORFS flow/platforms/<pdk> cells_clkgate (OPENROAD_CLKGATE)",
            "clock_wire": CLOCK_RC[pdk.name][2] if pdk.name in CLOCK_RC else
            "the Liberty's default wire-load model"},
        "sensitivity": {
            "clock_tree_mw_at_max_fanout": {str(f): tree_at(f).power_mw(clock_period_ns)
                                            for f in sorted({8, 16, max_fanout})},
            "gated_total_mw_at_min_group": {
                str(g): ungated - _gating(registers, instances, pdk, tree, clock_period_ns, g,
                                          max_fanout, slew)["saving_mw"] if observed else None
                for g in sorted({1, 3, min_group, 32})}},
        "by_module": gating["by_module"],
        "notes": [
            "power_mw['clock_tree'] is this tree and is included in power_mw['total']; the "
            "flops' clock-pin internal energy (flop_clock_pins_mw) is already in OpenSTA's "
            "internal power, at the same clock transition.",
            "ungated_total_mw = power_mw['total']; gated_total_mw = ungated_total_mw - "
            "saving_mw, saving_mw = saved_clock_mw - icg_mw (None without an activity run).",
            "hold_fraction: share of simulated cycles an enable group's hold condition is true "
            "(weighted by gated flops); unchanged_fraction: share with D == Q, the bound for "
            "data-driven gating, not used.",
            "Each ICG stands in for its flops' leaf buffer: their leaf-buffer share is replaced "
            "by the ICG's output energy in enabled cycles; their clock-pin internal energy, leaf "
            "wire and clock pins are charged only in loading cycles; ICG clock pins added to the "
            "tree; groups never holding get no ICG; hold multiplexers kept (conservative)."],
    }
    return record


def _yosys_totals(registers: dict[str, ModuleRegisters], instances: dict[str, int]) -> dict:
    """Yosys's pre-mapping enable flip-flops beside the detector's, over the modules both
    counted, weighted by instances."""
    both = {m: r for m, r in registers.items() if r.yosys is not None and instances.get(m)}
    return {
        "modules": len(both), "modules_without": len(registers) - len(both),
        "yosys_enable_flops": sum(instances[m] * r.yosys.get("enable", 0) for m, r in both.items()),
        "yosys_flops": sum(instances[m] * r.yosys.get("all", 0) for m, r in both.items()),
        "detector_enable_flops": sum(instances[m] * len(r.holds) for m, r in both.items()),
        "mapped_flops": sum(instances[m] * sum(r.flops.values()) for m, r in both.items()),
        "note": "Yosys: $dffe/$sdffe/$adffe/... bits after synth -run :fine (before mapping); "
                "opt_dff misses an enable it cannot see as one hold multiplexer, and a ROM's "
                "output registers are not flip-flops yet there; the detector reads the mapped "
                "netlist (per module under by_module)"}
