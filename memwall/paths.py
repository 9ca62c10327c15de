"""Where the checkout's folders are: the one place that knows the layout of the repository.

Every other module asks here instead of counting ``Path(__file__).parents``, so a module can
move between folders without its idea of the repository root moving with it.

The card's top-level folders install under the ``memwall`` package (setup.py's ``ROOTS``):
:data:`LAYERS` maps each import package to its folder, and :func:`source_of` turns a module
name into its file without importing it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["REPO", "CONFIGS", "REPORTS", "BUILD", "TESTS", "BENCHMARKS", "LAYERS",
           "layer_folder", "source_of", "module_of"]

#: The checkout: the folder holding ``memwall/`` (this file's package) and the card's layers.
REPO = Path(__file__).resolve().parent.parent
#: Named configs (``configs/<name>.yaml``); ``MEMWALL_CONFIG_DIR`` points elsewhere.
CONFIGS = Path(os.environ.get("MEMWALL_CONFIG_DIR", REPO / "configs"))
REPORTS = REPO / "reports"
BUILD = REPO / "build"
TESTS = REPO / "tests"
BENCHMARKS = REPO / "benchmarks"

#: Import package -> folder of the checkout (as installed by setup.py).
LAYERS = {"memwall.hdl": REPO / "hdl", "memwall.golden": REPO / "golden",
          "memwall.verif": REPO / "verif", "memwall.flows": REPO / "flows",
          "memwall": REPO / "memwall"}


def layer_folder(layer: str) -> Path:
    """The folder of a layer: ``"hdl"`` -> ``<repo>/hdl`` (KeyError for an unknown layer)."""
    return LAYERS[f"memwall.{layer}" if layer != "memwall" else layer]


def source_of(module: str) -> Path | None:
    """The file of ``module`` (``memwall.hdl.pim.core`` -> ``hdl/pim/core.py``, a package ->
    its ``__init__.py``) if it is one of the checkout's, without importing it; else None."""
    for package, folder in LAYERS.items():   # memwall last: its layers are more specific
        if module != package and not module.startswith(package + "."):
            continue
        base = folder.joinpath(*module[len(package) + 1:].split(".")) if module != package \
            else folder
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path
        return None
    return None


def module_of(path: Path) -> str | None:
    """The module name of a checkout file (the inverse of :func:`source_of`), or None."""
    path = Path(path).resolve()
    for package, folder in LAYERS.items():
        if folder in path.parents and path.suffix == ".py":
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((package, *parts))
    return None
