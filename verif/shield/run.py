"""Run a SHIELD workload trace through the RTL controller (behind ``memwall run shield``).

:func:`run_trace` generates :class:`~memwall.hdl.shield.controller.ShieldController` for a config,
and runs the ``run_trace`` test of :mod:`memwall.verif.shield.tb_controller` through the shared
:func:`~memwall.verif.common.runner.simulate`: the trace is driven one word per cycle into
eDRAM bank models, the refresh schedule and the retention bound are checked as in
the regression, and the figures are written to a JSON file whose path this function chooses
(a temporary folder, passed in ``params``) and reads back, since ``simulate`` deletes the run
folder of a passing run.
"""

from __future__ import annotations

from pathlib import Path

from memwall.families.shield.config import ShieldConfig
from memwall.golden.shield.trace import load_trace
from memwall.hdl.shield.controller import TOP_NAME, ShieldController
from memwall.verif.common.runner import simulate_for_result
from memwall.verif.shield.tb_controller import config_params

__all__ = ["run_trace", "TB"]

TB = "memwall.verif.shield.tb_controller"


def run_trace(cfg: ShieldConfig, trace_path, sim: str | None = None,
              seed: int | None = None) -> dict:
    """Drive the trace at ``trace_path`` through the RTL; return what the hardware did.

    Returns ``{"refresh_counts": {"standard", "relaxed", "refreshless": 0}, "cycles",
    "data_errors", "data_errors_by_field", "reads"}``: row refreshes the controller issued
    (the ``<bank>_ref`` strobes the banks saw) from the trace's first cycle to its last, the
    cycles the trace took on the RTL (one per word access or release, plus idle time, plus any
    cycle an access waited for a refresh; cycle 1 is the trace's first), and the bit errors read
    back (``hi`` sign+exponent, ``kv_mantissa``, ``qo_mantissa``: from the eDRAM retention
    model; only QO mantissas may fail under a correct schedule) over ``reads`` word reads.

    Raises :class:`~memwall.golden.shield.trace.TraceError` for a bad trace (before simulating)
    and :class:`~memwall.verif.common.runner.SimulationFailed` if the controller breaks its
    refresh schedule, the retention bound or the bank protocol.
    """
    trace_path = Path(trace_path).resolve()
    load_trace(trace_path, cfg)  # validate here: a clear error instead of a failed simulation
    return simulate_for_result(ShieldController(cfg), TOP_NAME, TB,
                               {"config": config_params(cfg), "trace": str(trace_path)},
                               testcase="run_trace", sim=sim, seed=seed)
