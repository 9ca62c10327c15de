"""The layout rule, checked over the sources' ASTs (nothing is imported to check it but the
order of flows/, ``memwall.flows.LAYERS``).

Every layer holds ``common/`` (shared) and one folder per family. Imports go one way:
golden/common <- golden/<f> <- verif. hdl never imports verif, nor a family's golden *models*
(:data:`GOLDEN_MODELS`: cycle and analytic models, schedulers, DSE); it may read the bit-exact
definitions it implements from its own family's golden folder (a table, a code's generator, a
format constant), so that each has one definition. golden imports no hdl, verif or flows. A
shared module imports no family; a family imports no other family; a family's spec
(``memwall/families/<f>/config.py``) imports no layer. No layer has an import circle, and a
module of flows/ imports only modules below it in ``LAYERS``. Paths of the checkout come from
:mod:`memwall.paths` only, and every module or test path named in a string exists.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from memwall import paths
from memwall.family import families

LAYER_NAMES = ("hdl", "golden", "verif", "flows")
#: Module names, in ``golden/<f>/``, of the cycle and analytic models, schedulers and DSE: what
#: hdl never imports.
GOLDEN_MODELS = ("model", "cycles", "interpreter", "schedule", "systems", "dse", "accuracy")
SOURCE_FOLDERS = (*LAYER_NAMES, "memwall", "tests", "benchmarks")
FAMILIES = tuple(sorted(families()))
_FAMILY_WORDS = [re.compile(rf"(^|_){name}(_|$)") for name in FAMILIES]


def _sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (paths.REPO / f).rglob("*.py"))


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def imports_of(path: Path) -> set[str]:
    """The ``memwall`` modules ``path`` imports, at any depth (function-level imports too),
    relative imports resolved; ``from a import b`` counts ``a.b`` where that is a module."""
    me = paths.module_of(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if paths.source_of(sub) is not None else base)
    return {name for name in found if name == "memwall" or name.startswith("memwall.")}


def _layer(module: str) -> tuple[str, str | None]:
    """(layer, family or None) of a module: ``memwall.golden.pim.macro.schedule`` -> (golden, pim),
    ``memwall.golden.common.formats`` -> (golden, None), ``memwall.families.pim.x`` ->
    (families, pim), ``memwall.cli`` -> (memwall, None)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in (*LAYER_NAMES, "families"):
        family = parts[2] if len(parts) > 2 and parts[2] in FAMILIES else None
        return parts[1], family
    return "memwall", None


def violations(path: Path) -> list[str]:
    """The imports of ``path`` against the rule."""
    return against_rule(paths.module_of(path), imports_of(path))


def against_rule(me: str, imported: set[str]) -> list[str]:
    """The imports of module ``me`` (the modules ``imported``) against the rule."""
    layer, family = _layer(me)
    found = []
    for name in sorted(imported):
        to_layer, to_family = _layer(name)
        why = None
        if family is None and to_family is not None and not me.startswith("memwall.families"):
            why = "a shared module imports a family"
        elif family is not None and to_family not in (None, family):
            why = f"family {family} imports family {to_family}"
        elif layer == "hdl" and to_layer == "verif":
            why = "hdl imports verif"
        elif layer == "hdl" and to_layer == "golden" and to_family is not None \
                and name.rpartition(".")[2] in GOLDEN_MODELS:
            why = "hdl imports a family's golden models"
        elif layer == "golden" and to_layer in ("hdl", "verif", "flows"):
            why = f"golden imports {to_layer}"
        elif layer == "families" and me.endswith(".config") and to_layer != "memwall":
            why = "a family's spec imports a layer"
        elif layer == "families" and me.endswith(".config") and name.startswith(
                "memwall.families") and not name.endswith(".config"):
            why = "a family's spec imports its family's other modules"
        if why:
            found.append(f"{me} imports {name}: {why}")
    return found


def test_every_module_imports_first():
    """Each module of the layers and of memwall imports in an interpreter that has loaded no other
    memwall module: an import cycle (a golden model importing its family's spec, whose package
    imports a command that imports the golden model) fails only when a module is imported first,
    as a cocotb testbench is, not when the tests happen to import it second."""
    import subprocess
    import sys
    modules = [paths.module_of(p) for p in _sources(*LAYER_NAMES, "memwall")
               if p.name != "__main__.py"]
    script = ("import importlib, sys\n"
              "failed = []\n"
              "for name in sys.argv[1:]:\n"
              "    for loaded in [m for m in sys.modules if m.startswith('memwall')]:\n"
              "        del sys.modules[loaded]\n"
              "    try:\n"
              "        importlib.import_module(name)\n"
              "    except Exception as exc:\n"
              "        if \"has no attribute 'top'\" not in str(exc):  # needs a simulator\n"
              "            failed.append(f'{name}: {exc!r}')\n"
              "print('\\n'.join(failed))\n")
    run = subprocess.run([sys.executable, "-c", script, *modules], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == ""


def test_imports_follow_the_layout_rule():
    found = [v for path in _sources(*LAYER_NAMES, "memwall") for v in violations(path)]
    assert found == []


def test_the_rule_finds_bad_imports():
    assert against_rule("memwall.hdl.common.x", {"memwall.verif.common.runner",
                                                 "memwall.golden.shield.trace",
                                                 "memwall.golden.common.formats"}) == [
        "memwall.hdl.common.x imports memwall.golden.shield.trace: a shared module imports a "
        "family",
        "memwall.hdl.common.x imports memwall.verif.common.runner: hdl imports verif"]
    assert against_rule("memwall.hdl.pim.core", {"memwall.golden.pim.macro",
                                                 "memwall.golden.pim.schedule"}) == [
        "memwall.hdl.pim.core imports memwall.golden.pim.schedule: hdl imports a family's "
        "golden models"]
    assert against_rule("memwall.golden.pim.schedule", {"memwall.golden.shield.trace",
                                                        "memwall.hdl.pim.core"}) == [
        "memwall.golden.pim.schedule imports memwall.golden.shield.trace: family pim imports "
        "family shield",
        "memwall.golden.pim.schedule imports memwall.hdl.pim.core: golden imports hdl"]
    assert against_rule("memwall.families.pim.config", {"memwall.config",
                                                        "memwall.golden.common.formats"}) == [
        "memwall.families.pim.config imports memwall.golden.common.formats: a family's spec "
        "imports a layer"]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph(folder: str) -> dict[str, set[str]]:
    graph = {}
    for path in _sources(folder):
        me = paths.module_of(path)
        graph[me] = {n for n in imports_of(path) if n.startswith(f"memwall.{folder}.")
                     or n == f"memwall.{folder}"} - {me}
    return graph


@pytest.mark.parametrize("folder", LAYER_NAMES)
def test_no_import_circles(folder):
    assert _cycles(import_graph(folder)) == []


def _family_module(name: str) -> bool:
    """``name`` is a family's: in a family's folder of a layer, or of ``memwall.families``."""
    return _layer(name)[1] is not None or name.startswith("memwall.families")


def test_flows_imports_only_downward():
    """Every module of flows/ has its place in ``memwall.flows.LAYERS`` and imports only
    modules before it there (the package itself, which only names the order, is below all);
    none imports a family (the shared registry, ``memwall.family``, is fine)."""
    from memwall.flows import LAYERS

    assert len(set(LAYERS)) == len(LAYERS), "a module named twice in LAYERS"
    rank = {"memwall.flows": -1} | {f"memwall.flows.{m}": i for i, m in enumerate(LAYERS)}
    graph = import_graph("flows")
    assert sorted(set(graph) - set(rank)) == [], "modules of flows/ missing from LAYERS"
    assert sorted(set(rank) - set(graph)) == [], "names in LAYERS with no module"
    upward = [f"{me} imports {name}" for me in sorted(graph) for name in sorted(graph[me])
              if rank.get(name, len(LAYERS)) >= rank[me]]
    assert upward == [], "imports up the order of LAYERS:\n" + "\n".join(upward)
    families_imported = [f"{paths.module_of(p)} imports {name}" for p in _sources("flows")
                         for name in sorted(imports_of(p)) if _family_module(name)]
    assert families_imported == [], "\n".join(families_imported)


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _parents_subscripts(path: Path) -> list[int]:
    return [node.lineno for node in ast.walk(_tree(path))
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"]


def test_checkout_paths_come_from_the_paths_module():
    found = {str(p.relative_to(paths.REPO)): lines for p in _sources(*SOURCE_FOLDERS)
             if p != paths.source_of("memwall.paths") and (lines := _parents_subscripts(p))}
    assert found == {}


#: A module name in a string: what cocotb runs (``"memwall.verif.pim.tb_core"``) and what the
#: family descriptions name lazily (``"memwall.hdl.pim.core:build_top"``).
_MODULE_STRING = re.compile(r"^(memwall(?:\.\w+)+)(?::\w+)?$")


def _named_modules(path: Path) -> list[tuple[int, str]]:
    return [(node.lineno, m.group(1)) for node in ast.walk(_tree(path))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (m := _MODULE_STRING.match(node.value))]


def _resolves(name: str, named_in: Path) -> bool:
    """``name`` is a checkout module, or a module of the out-of-tree family whose folder holds
    ``named_in`` (``memwall.families.tinyacc.tb`` in ``.../tinyacc/__init__.py``)."""
    if paths.source_of(name) is not None:
        return True
    parts = name.split(".")
    if parts[:2] != ["memwall", "families"] or len(parts) < 4:
        return False
    folder = next((f for f in named_in.parents if f.name == parts[2]), None)
    return folder is not None and folder.joinpath(*parts[3:]).with_suffix(".py").is_file()


def test_every_module_named_in_a_string_exists():
    missing = [f"{p.relative_to(paths.REPO)}:{line}: {name}"
               for p in _sources(*SOURCE_FOLDERS) if p != Path(__file__).resolve()
               for line, name in _named_modules(p) if not _resolves(name, p)]
    assert missing == []


@pytest.mark.parametrize("name", FAMILIES)
def test_every_regression_test_path_exists(name):
    tests = families()[name].regression_tests
    assert tests, f"family {name} names no regression tests"
    missing = [t for t in tests if not (paths.REPO / t.split("::")[0]).is_file()]
    assert missing == []


#: Each layer: what it may hold besides one folder per family.
SHARED_ENTRIES = {"hdl": {"__init__.py", "common"}, "golden": {"__init__.py", "common"},
                  "verif": {"__init__.py", "common"}, "memwall/families": {"__init__.py"},
                  "tests": {"conftest.py", "common", "flows", "assurance", "plugin_family"}}


@pytest.mark.parametrize("layer", sorted(SHARED_ENTRIES))
def test_each_layer_holds_its_shared_folders_and_one_folder_per_family(layer):
    folder = paths.REPO / layer
    entries = {p.name for p in folder.iterdir() if p.name != "__pycache__"}
    assert entries - SHARED_ENTRIES[layer] - set(FAMILIES) == set()
    assert set(FAMILIES) - entries == set(), f"a family without its folder in {layer}/"


def test_reports_of_a_family_are_in_its_folder():
    loose = [p.name for p in paths.REPORTS.iterdir() if p.is_file()
             and any(re_family.search(p.stem) for re_family in _FAMILY_WORDS)]
    assert loose == []
    assert [f for f in FAMILIES if not (paths.REPORTS / f).is_dir()] == []


@pytest.mark.parametrize("layer", LAYER_NAMES)
def test_no_family_named_file_in_a_shared_folder(layer):
    shared = [p for p in (paths.REPO / layer).rglob("*.py")
              if not set(p.relative_to(paths.REPO / layer).parts[:-1]) & set(FAMILIES)]
    named = [str(p.relative_to(paths.REPO)) for p in shared
             if any(re_family.search(p.stem) for re_family in _FAMILY_WORDS)]
    assert named == []


