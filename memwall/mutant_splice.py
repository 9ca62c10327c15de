"""Inside every simulation that ``memwall mutate`` runs: the module digests it records, and
the mutant it puts in place (:func:`design_verilog`, called by
:mod:`memwall.verif.common.runner`).

Kept apart from :mod:`memwall.mutate` because every simulation imports it: ``memwall mutate``
keys the outcomes it keeps by the files a test imports, and its own machinery (the run, the
report) is not among them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from memwall.verif.common.runner import COVERAGE_ENV, MUTANT_ENV

__all__ = ["applied_path", "module_digest", "design_verilog"]


def _name_pattern(name: str) -> re.Pattern:
    # The module's own name, escaped or not, in its header, its instances' types and the
    # "<name>.<child>" names of Amaranth's own submodules.
    return re.compile(rf"(?<![\w$.]){re.escape(chr(92))}?{re.escape(name)}(?=[\s(.;])")


def module_digest(text: str, name: str) -> str:
    """A module's identity: its Verilog with its own name blanked and, in each module of the
    text, its continuous assignments sorted (their order means nothing in Verilog, and the
    same component generated inside another design may list them in another order), hashed."""
    canonical = []
    for module in _name_pattern(name).sub("@", text).split("endmodule"):
        lines = module.splitlines()
        canonical += [line for line in lines if not line.startswith("  assign ")]
        canonical += sorted(line for line in lines if line.startswith("  assign "))
        canonical.append("endmodule")
    return hashlib.sha1("\n".join(canonical).encode()).hexdigest()[:16]


def _renamed(text: str, old: str, new: str) -> str:
    return _name_pattern(old).sub(lambda m: m.group(0).replace(old, new), text)


def applied_path(spec_path: str | Path) -> Path:
    """Where the simulations of a mutant run list the digests they replaced, one per line."""
    return Path(f"{spec_path}.applied")


def design_verilog(design, sim: str) -> str:
    """The design's Verilog as the simulation runner builds it for ``sim``, for ``memwall
    mutate``'s runs: with :data:`COVERAGE_ENV`, the digests of its modules are recorded under
    the current pytest test; with :data:`MUTANT_ENV`, the mutant replaces the module of its
    digest."""
    names = design.module_names
    texts = {name: design.module_text(name) for name in names}
    digests = {name: module_digest(texts[name], name) for name in names}
    folder = os.environ.get(COVERAGE_ENV)
    if folder:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        with open(Path(folder) / f"{os.getpid()}.jsonl", "a") as out:
            out.write(json.dumps({"test": test, "sim": sim,
                                  "modules": sorted(set(digests.values()))}) + "\n")
    spec_path = os.environ.get(MUTANT_ENV)
    if spec_path:
        replace = {r["digest"]: r for r in json.loads(Path(spec_path).read_text())["replace"]}
        applied = []
        for name in names:
            if digests[name] in replace:
                new = replace[digests[name]]
                texts[name] = _renamed(new["verilog"], new["module"], name)
                applied.append(digests[name])
        with open(applied_path(spec_path), "a") as out:   # what the run checks it replaced
            out.write("".join(f"{digest}\n" for digest in applied))
    return "\n".join(texts[name] for name in names)
