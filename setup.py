"""Package layout, found rather than listed: every folder with an ``__init__.py`` under the
import roots below is a package, so a new unit family (``hdl/<name>/``, ``verif/<name>/``,
``memwall/families/<name>/``) installs without editing a list. The project's metadata and pinned
dependencies are in pyproject.toml.

One import root: the card's top-level folders install under the ``memwall`` package
(``memwall.hdl`` -> ``hdl/``), so nothing generic (``hdl``, ``golden``, ...) lands in
site-packages.
"""

from pathlib import Path

from setuptools import setup

ROOTS = {"memwall": "memwall", "memwall.hdl": "hdl", "memwall.golden": "golden",
         "memwall.verif": "verif", "memwall.flows": "flows"}


def _packages() -> list[str]:
    here = Path(__file__).resolve().parent
    found = []
    for package, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(here / folder).parts
            found.append(".".join((package, *parts)))
    return found


setup(packages=_packages(), package_dir=ROOTS,
      package_data={"memwall.flows": ["gates.json", "reference/*"]})
