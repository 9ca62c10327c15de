"""Synthesis, timing, power and reports (``memwall.flows``): a layered package.

:data:`LAYERS` orders every module of the package, lowest first; a module imports only
modules before it (at any depth, function-level imports included), so there are no import
circles. ``tests/common/test_layout.py`` checks it. From the bottom:

- **foundations**: ``errors`` (every exception class of the flow), ``constants`` (names the
  steps share: the memories' black-box cell, how Yosys is started);
- **PDK and Liberty**: ``liberty`` (the one ``.lib`` reader), ``wire_load`` (a design's
  wire-load model where the Liberty has none), ``pdk`` (platforms, the Liberty
  cache, a PDK's cell library), ``opensta2019`` (the 2019 OpenSTA's traps and their
  workarounds, its views of the Liberty files);
- **netlists and activity**: ``netlist`` (gate netlists from Yosys' JSON, the hierarchy's
  boundary loads), ``activity`` (toggle rates from a VCD), ``gate_activity`` (the gate-level
  activity simulation), ``rewrite`` (one module as OpenSTA sees it), ``memory_view`` and
  ``memory_power`` (the memories as SRAM macros: timing views, power), ``sram_model`` (SRAM
  energy, leakage and area for any shape: a CACTI-shaped fit carried to the PDK), ``macro_map``
  (which arrangement of macros covers a memory), ``repair`` (buffer
  trees on nets that load their drivers past a limit);
- **tool runs**: ``synth`` (Yosys, one run per unique module), ``sta`` (one OpenSTA session:
  its script, the run, its reports);
- **timing methods built on the sessions**: ``characterise`` and ``budget`` (module
  boundaries constrained from the design around them), ``flat_sta`` (the whole design in
  one run, the reference), ``calibration`` (the power checked against a hand computation);
- **the hierarchical run**: ``clock_tree`` (the clock tree the ideal clock leaves out),
  ``enable_registers`` (the flip-flops that hold on an enable, on what condition, how often),
  ``clock_gating`` (clock gating of the registers whose enables the RTL has), ``hierarchical``
  (timing and power of a design, one unique module at a time, multiplied by instance counts);
- **workloads**: ``workload`` (a family's power workloads simulated for activity);
- **the flow orchestrator**: ``provenance`` (the commit, RTL, config and flow a
  ``metrics.json`` came from), ``flow`` (``memwall synth``: every step, then ``metrics.json``);
- **outputs**: ``gates`` (the committed regression gates), ``report`` (``memwall report``).

No module of the package imports a family (``memwall.families``, a family's hdl, golden or
verif modules); families are reached through the shared registry, :mod:`memwall.family`.
"""

#: Every module of ``flows/``, lowest first: each imports only modules earlier in the order.
LAYERS = (
    # foundations
    "errors", "constants",
    # PDK and Liberty
    "liberty", "wire_load", "pdk", "opensta2019",
    # netlists and activity
    "netlist", "activity", "gate_activity", "rewrite", "memory_view", "memory_power",
    "sram_model", "macro_map", "repair",
    # tool runs
    "synth", "sta",
    # timing methods built on the sessions
    "characterise", "budget", "flat_sta", "calibration",
    # the hierarchical run
    "clock_tree", "enable_registers", "clock_gating", "hierarchical",
    # workloads
    "workload",
    # the flow orchestrator
    "provenance", "flow",
    # outputs
    "gates", "report",
)
