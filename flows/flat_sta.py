"""Flat end-to-end timing: every module's gate netlist linked under the top in one OpenSTA run.

The hierarchical flow (:mod:`memwall.flows.hierarchical`) times each unique module on its own,
with boundary constraints (:mod:`memwall.flows.budget`). For a small config the whole design fits
in one OpenSTA session, which times every path end to end, across any number of module
boundaries: the reference the hierarchical figure is checked against (``memwall synth CONFIG
--flat-sta``; ``flat_wns_ns`` in ``metrics.json``). At VLEN 2048 (~10^7 gates) it does not fit,
which is why the hierarchical method has to agree with it where both run.

What is linked: ``netlist/<module>.v`` of every module of the manifest, as synthesis wrote it,
with each ``memwall_ram`` black box replaced by its macro arrangement
(:mod:`memwall.flows.memory_view`). Constraints: the config's clock on the top's ``clk``
(ideal, with the nominal transition of :func:`memwall.flows.sta.nominal_slew`); the top's own
ports keep the I/O budget of ``constraint.sdc`` (:data:`memwall.flows.sta.IO_BUDGET` of the
period as input and output delay), inputs switch with the nominal slew and outputs drive FO4
(:func:`memwall.flows.sta.nominal_load`), exactly the top-level context the hierarchical
method starts from. Nets are not buffered in either method, except that the hierarchical runs
model an FO4 buffer tree where a *boundary* load exceeds FO16
(:func:`memwall.flows.sta.buffer_tree`); the flat report lists those nets so a difference
they cause can be told apart.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from .constants import MEMORY_CELL
from .errors import NetlistError, StaError
from .memory_view import MemoryView, memory_views
from .netlist import read_netlist
from .opensta2019 import check_run
from .pdk import Pdk, pdk_cell_library
from .sta import (
    DEFAULT_SIGNOFF,
    IO_BUDGET,
    TIMING_REPORT_TCL,
    SignOff,
    clock_tcl,
    nominal_load,
    nominal_slew,
    parse_timing,
    prelude_tcl,
    run_tcl,
)

__all__ = ["flat_verilog", "flat_tcl", "run_flat_sta"]

_MEMORY_INSTANCE = re.compile(rf"^(\s*){MEMORY_CELL}(\s+)(\\\S+|[A-Za-z_][\w$]*)(\s*\()", re.M)


def flat_verilog(synth_dir: Path, modules: list[str],
                 views: dict[tuple[str, str], MemoryView]) -> str:
    """The design as one Verilog file: every module's netlist, memories as their wrappers."""
    parts = []
    for module in modules:
        text = (Path(synth_dir) / "netlist" / f"{module}.v").read_text()

        def wrapper(match: re.Match, module=module) -> str:
            name = match.group(3).lstrip("\\")
            view = views.get((module, name))
            if view is None:
                raise StaError(f"{module}: memory {name} has no timing view")
            return f"{match.group(1)}{view.wrapper}{match.group(2)}{match.group(3)}" \
                   f"{match.group(4)}"

        parts.append(_MEMORY_INSTANCE.sub(wrapper, text))
    parts += [view.verilog for view in views.values()]
    return "\n".join(parts)


def flat_tcl(pdk: Pdk, clock_period_ns: float, netlist_path: Path, top: str,
             inputs: list[str], outputs: list[str], clock_port: str | None,
             signoff: SignOff = DEFAULT_SIGNOFF) -> str:
    """The OpenSTA script of the flat run (see the module docstring for the constraints)."""
    time_unit = pdk.time_unit_ps * 1e-12
    cap_unit = pdk_cell_library(pdk).libs[0].cap_f
    period = pdk.to_library_time(clock_period_ns)
    slew = nominal_slew(pdk) / time_unit
    budget = IO_BUDGET * period
    lines = prelude_tcl(pdk, [netlist_path], top)
    lines += clock_tcl(clock_port, period, slew, signoff.uncertainty_tcl(pdk))
    if inputs:
        lines += ["set memwall_inputs [get_ports {" + " ".join(inputs) + "}]",
                  f"set_input_delay {budget:.6g} -clock clk $memwall_inputs",
                  f"set_input_transition {slew:.6g} $memwall_inputs"]
    if outputs:
        lines += ["set memwall_outputs [get_ports {" + " ".join(outputs) + "}]",
                  f"set_output_delay {budget:.6g} -clock clk $memwall_outputs",
                  f"set_load -pin_load {nominal_load(pdk) / cap_unit:.6g} $memwall_outputs"]
    lines += TIMING_REPORT_TCL
    return "\n".join(lines) + "\n"


def run_flat_sta(synth_dir: Path, manifest: dict, pdk: Pdk, clock_period_ns: float,
                 signoff: SignOff = DEFAULT_SIGNOFF) -> dict:
    """Time the whole synthesised design flat, in one OpenSTA run (scripts in
    ``sta/flat/``, ``sta/flat_<corner>/`` for a corner other than typical), on ``pdk``'s
    corner under ``signoff``'s margins.

    Returns
    -------
    dict
        ``flat_wns_ns`` (signed worst setup slack, None when nothing is timed),
        ``flat_hold_wns_ns``, ``flat_tns_ns``,
        ``flat_critical_path`` (``startpoint``, ``endpoint``, ``slack_ns``, ``text``),
        ``flat_sta`` (what was linked and constrained: ``io_budget``, ``memories``,
        ``signoff``, ``runtime_s``, ``log``).
    """
    start = time.perf_counter()
    synth_dir = Path(synth_dir).resolve()   # OpenSTA runs in sta/flat/
    top = manifest["top"]
    modules = [m for m in manifest["modules"] if manifest["instances"].get(m)]
    netlists = {}
    for module in modules:
        try:
            netlists[module] = read_netlist(synth_dir / "netlist" / f"{module}.json", module)
        except NetlistError as exc:
            raise StaError(f"no netlist for module {module}: {exc}") from None
    cells = pdk_cell_library(pdk)
    views = memory_views(synth_dir, netlists, pdk, cells)
    work = synth_dir / "sta" / ("flat" if pdk.corner == "tt" else f"flat_{pdk.corner}")
    work.mkdir(parents=True, exist_ok=True)
    netlist_path = work / f"{top}.flat.v"
    netlist_path.write_text(flat_verilog(synth_dir, modules, views))
    top_netlist = netlists[top]
    clock_port = "clk" if "clk" in top_netlist.port_bits else None
    inputs = sorted(p for p, d, _ in top_netlist.ports if d == "input" and p != clock_port)
    outputs = sorted(p for p, d, _ in top_netlist.ports if d != "input")
    out = run_tcl(flat_tcl(pdk, clock_period_ns, netlist_path, top, inputs, outputs,
                           clock_port, signoff), work, f"{top}.flat")
    check_run(out, pdk)
    timing = parse_timing(out)
    slack, hold = timing["worst_slack_s"], timing["hold_slack_s"]
    wns = slack * 1e9 if slack != float("inf") else None
    return {
        "flat_wns_ns": wns,
        "flat_hold_wns_ns": hold * 1e9 if hold != float("inf") else None,
        "flat_tns_ns": timing["tns_s"] * 1e9,
        "flat_critical_path": {"startpoint": timing["startpoint"],
                               "endpoint": timing["endpoint"], "slack_ns": wns,
                               "text": timing["path"]},
        "flat_sta": {
            "top": top,
            "modules_linked": len(modules),
            "io_budget": f"top-level ports only: input and output delay {IO_BUDGET:.0%} of the "
                         "period, nominal input slew, FO4 output load; every module boundary "
                         "below the top is timed end to end",
            "memories": {f"{v.module}/{v.cell}": (f"{v.rows}x{v.cols} {v.macro} per port"
                                                  if v.macro else "unmapped: ports only")
                         for v in views.values()},
            "signoff": signoff.as_dict(pdk),
            "runtime_s": round(time.perf_counter() - start, 1),
            "log": str(work / f"{top}.flat.log"),
        },
    }
