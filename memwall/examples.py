"""Example inputs for the families' ``golden`` and ``run`` commands, written to ``examples/``.

``python -m memwall.examples`` writes every family's (:attr:`memwall.family.Family.examples`,
``memwall/families/<family>/examples.py``), seeded, to ``examples/<family>/<file>``, so the
files the README's quick starts run on are reproducible; tests/common/test_examples.py checks
that the committed files hold what this writes, and runs the quick starts. Each file's format is
its command's (``--help``, ``docs/inputs.md``); the configs are the regression's small ones.
SHIELD's example is ``configs/traces/shield_small.yaml``, the trace its report and tests run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from memwall import paths

__all__ = ["EXAMPLES", "arrays", "write", "main"]

EXAMPLES = paths.REPO / "examples"


def arrays() -> dict[str, dict]:
    """Every example ``.npz``'s arrays, by its path under ``examples/`` (``<family>/<file>``)."""
    from memwall.family import families

    return {f"{name}/{file}": content for name, fam in families().items() if fam.examples
            for file, content in fam.examples().items()}


def write(root: Path = EXAMPLES) -> list[Path]:
    written = []
    for name, content in arrays().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, **content)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    for path in write():
        print(f"wrote {path.relative_to(paths.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
