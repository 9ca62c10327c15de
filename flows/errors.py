"""The flow's exception classes, one home below every other module of ``flows/``.

Each step raises its own: :class:`FlowError` (Yosys synthesis, :mod:`memwall.flows.synth`),
:class:`LibertyError` (:mod:`memwall.flows.liberty`), :class:`PdkError`
(:mod:`memwall.flows.pdk`), :class:`NetlistError` (:mod:`memwall.flows.netlist`),
:class:`StaError` (OpenSTA runs), :class:`ActivityError` (:mod:`memwall.flows.activity`) and
:class:`StaleRowsError` (:mod:`memwall.flows.report`). ``memwall`` reports :class:`PdkError` and
:class:`StaleRowsError`, each an :class:`~memwall.inputs.InputError`, as bad input
(exit status 2) and the others as a failed tool step (``memwall.cli._tool_failures``).
"""

from __future__ import annotations

from memwall.inputs import InputError

__all__ = ["FlowError", "LibertyError", "PdkError", "NetlistError", "StaError", "ActivityError",
           "StaleRowsError"]


class FlowError(RuntimeError):
    """A flow step that failed; the message names the step, its log and the log's last lines."""


class LibertyError(ValueError):
    """A Liberty file, or a part of one, that cannot be read; says which and why."""


class PdkError(InputError):
    """A PDK that cannot be found or read; the message says which file, why, and where memwall
    looked. Bad input: ``memwall`` exits with status 2."""


class NetlistError(RuntimeError):
    """A netlist that cannot be read; says which and why."""


class StaError(RuntimeError):
    """An OpenSTA run that failed or whose output cannot be trusted; says which and why."""


class ActivityError(RuntimeError):
    """A waveform that cannot give activity (no clock, no known top scope, empty window)."""


class StaleRowsError(InputError):
    """``memwall report`` found rows that are not of this checkout's RTL and flow (or whose
    provenance is unknown); the message names them and how to regenerate them. Exit status 2."""
