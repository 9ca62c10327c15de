"""A unit family describes itself once; the shared code (config loader, gen, CLI, flow, report)
finds families instead of naming them.

A family is a package ``memwall.families.<name>`` whose ``FAMILY`` is a :class:`Family`. Its
spec (``config.py``, the config class its hardware, golden models and testbenches all read) sits
beside the description; its hardware, golden models and testbenches are in ``hdl/<name>/``,
``golden/<name>/`` and ``verif/<name>/``, and the description names them with :func:`lazy`, so
importing a family (as its hardware does, for its spec) imports nothing else. Discovery walks the
``memwall.families`` package (and the folders of ``MEMWALL_FAMILY_PATH``, see
:mod:`memwall.families`), as Glasgow finds its applets, so a new family is new files only.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwall.inputs import InputError

__all__ = ["Family", "Command", "PowerWorkload", "FamilyError", "families", "family",
           "extend_family_path", "lazy", "COMMAND_VERBS", "FAMILY_PATH_ENV"]

#: Extra folders of family packages, ``os.pathsep``-separated.
FAMILY_PATH_ENV = "MEMWALL_FAMILY_PATH"

#: The per-family subcommands of ``memwall``: ``memwall <verb> <family> --config ...``.
COMMAND_VERBS = {
    "golden": "run a golden model on your own data",
    "model": "analytic or cycle model of a unit on a workload",
    "run": "run the generated RTL on a workload (cocotb simulation)",
}


class FamilyError(InputError):
    """A family package that does not import or does not describe itself completely, or a
    ``MEMWALL_FAMILY_PATH`` entry that is not a folder (bad input: exit status 2)."""


class _Lazy:
    """A function named ``"module:attribute"``, imported on its first call."""

    def __init__(self, target: str):
        module, sep, attribute = target.partition(":")
        if not sep or not module or not attribute.isidentifier():
            raise FamilyError(f"lazy({target!r}): name a function as 'package.module:function'")
        self.target, self._module, self._attribute = target, module, attribute
        self._function: Callable | None = None

    def resolve(self) -> Callable:
        if self._function is None:
            self._function = getattr(importlib.import_module(self._module), self._attribute)
        return self._function

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"lazy({self.target!r})"


def lazy(target: str) -> Callable:
    """``"package.module:function"`` as a function that imports its module when first called.

    A family's description names its generator, golden models, power workloads, properties
    and reports this way: the hardware imports the family's spec, which imports the family
    package, so the package must not import the hardware back.
    """
    return _Lazy(target)


@dataclass(frozen=True)
class Command:
    """One ``memwall <verb> <family>`` subcommand.

    ``add_arguments(parser)`` adds the family's own options (the shared code adds ``--config``,
    and ``--sim`` and ``--max-cycles`` to ``run``); ``run(args, cfg)`` does the work with the
    loaded config. It reads files through :mod:`memwall.inputs`, checks its output paths
    (:func:`memwall.command.output_path`) and, for ``run``, the simulated cycles
    (:func:`memwall.command.check_sim_cycles`) before any long work, and raises an
    :class:`memwall.inputs.InputError` (``UsageError``, ``ConfigError``, ...) for bad input.
    """
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Any], None]


@dataclass(frozen=True)
class PowerWorkload:
    """A cocotb run whose switching activity feeds power analysis.

    ``component`` is simulated as top ``name`` with the cocotb module ``testbench`` (and
    ``testcase``, if given) and ``params`` (:func:`memwall.verif.common.runner.tb_params`).
    ``prepare``, if given, is called with the run's own folder before the simulation and
    returns more params: the files it wrote there (a program, its data), written only when
    the run happens. ``description`` says what the run is, for metrics' activity source.
    The component may be a reduced version of the design (fewer lanes): the flow gives each
    module of the design the activity of the simulated module of the same generator class
    with the nearest parameters (:mod:`memwall.flows.workload`).
    """
    name: str
    component: Any
    testbench: str
    params: Mapping[str, Any]
    testcase: str | None = None
    prepare: Callable[[Path], Mapping[str, Any]] | None = None
    description: str | None = None


@dataclass(frozen=True)
class Family:
    """Everything the shared code needs to know of a unit family.

    Parameters
    ----------
    name
        The ``unit:`` of its configs and the word in ``memwall golden|run|model <name>``.
    summary
        One line for ``memwall units``.
    config_class
        Frozen dataclass of :mod:`memwall.config` fields; its ``unit_name`` is ``name``.
    build_top
        ``cfg -> (top module name, component)``: what ``memwall gen`` emits.
    golden
        Name -> golden-model entry point (plain functions on arrays).
    power_workloads
        ``cfg -> [PowerWorkload]``: cocotb runs whose activity sets power in ``memwall synth``.
        An empty list is an answer ("no run fits this config"): the flow then reports default
        activity.
    commands
        Verb (``golden``, ``model``, ``run``) -> :class:`Command`.
    report_groups
        Module-name prefix -> group name in the area/power report (``vector``, ``scalar``, ...).
    report_matrix
        PDK -> configs that ``memwall report --run`` synthesises.
    regression_configs
        Small configs the regression simulates.
    report_sections
        ``(metrics rows of this family, its report folder reports/<name>/) -> (markdown,
        [plot file names in that folder])``: the family's part of ``reports/area_power.md``
        (paper comparisons, scaling fits), or None.
    write_reports
        ``folder -> None``: the family's own analytic report (``reports/<name>/``), run by
        ``make bench``; or None.
    bench_configs
        Configs whose generation time ``make bench`` records.
    properties
        ``cfg -> [memwall.formal.Property]``: the formal properties ``memwall prove <config>``
        proves, or None.
    regression_tests
        The pytest files (paths from the checkout) of the family's RTL regression: what
        ``memwall mutate`` runs against each mutant of the family's modules.
    paper_table
        ``reports folder -> markdown``: the family's paper figures beside ours (each with its
        baseline, metric and a computed verdict), built only from the report files already
        under ``reports/``: its section of ``reports/paper_vs_ours.md``
        (:mod:`memwall.paper_vs_ours`); or None.
    examples
        ``() -> {file name: {array name: array}}``: the example inputs of its commands, which
        ``python -m memwall.examples`` writes to ``examples/<name>/<file name>``; or None.
    """
    name: str
    summary: str
    config_class: type
    build_top: Callable[[Any], tuple[str, Any]]
    golden: Mapping[str, Callable]
    power_workloads: Callable[[Any], Sequence[PowerWorkload]]
    commands: Mapping[str, Command]
    report_groups: Mapping[str, str]
    report_matrix: Mapping[str, Sequence[str]]
    regression_configs: Sequence[str]
    report_sections: Callable[[list[dict], Path], tuple[str, list[str]]] | None = None
    write_reports: Callable[[Path], None] | None = None
    bench_configs: Sequence[str] = field(default_factory=tuple)
    properties: Callable[[Any], Sequence[Any]] | None = None
    regression_tests: Sequence[str] = field(default_factory=tuple)
    examples: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None
    paper_table: Callable[[Path], str] | None = None

    def __post_init__(self):
        unknown = sorted(set(self.commands) - set(COMMAND_VERBS))
        if unknown:
            raise FamilyError(f"family {self.name!r}: unknown command verb(s) "
                              f"{', '.join(unknown)}; allowed: {', '.join(COMMAND_VERBS)}")
        if getattr(self.config_class, "unit_name", None) != self.name:
            raise FamilyError(f"family {self.name!r}: its config class "
                              f"{self.config_class.__name__} has unit_name "
                              f"{getattr(self.config_class, 'unit_name', None)!r}")

    def report_group(self, module: str) -> str | None:
        """The report group of a module of this family's designs, or None."""
        for prefix, group in self.report_groups.items():
            if module.startswith(prefix):
                return group
        return None


def extend_family_path(path: list[str]) -> list[str]:
    """Append the folders of ``MEMWALL_FAMILY_PATH`` to a package ``__path__`` (in place)."""
    for folder in os.environ.get(FAMILY_PATH_ENV, "").split(os.pathsep):
        if folder and os.path.abspath(folder) not in path:
            path.append(os.path.abspath(folder))
    return path


_FOUND: tuple[tuple[str, ...], dict[str, Family]] | None = None


def families() -> dict[str, Family]:
    """Every family package found, by name (sorted)."""
    global _FOUND
    import memwall.families as package

    search = tuple(extend_family_path(package.__path__))   # the variable may be set since
    if _FOUND is not None and _FOUND[0] == search:
        return _FOUND[1]
    for folder in os.environ.get(FAMILY_PATH_ENV, "").split(os.pathsep):
        if folder and not os.path.isdir(folder):
            raise FamilyError(f"{FAMILY_PATH_ENV}: {folder} is not a folder (each entry must "
                              "be a folder holding <family>/__init__.py)")
    found: dict[str, Family] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in found or not info.ispkg:
            continue   # a family is a package, <folder>/<name>/__init__.py
        where = os.path.join(getattr(info.module_finder, "path", "?"), info.name)
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception as exc:   # a syntax error, a missing name, an error the family raises
            line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise FamilyError(f"family {info.name} ({where}) does not import: "
                              f"{type(exc).__name__}: {line}") from None
        described = getattr(module, "FAMILY", None)
        if not isinstance(described, Family):
            raise FamilyError(f"{module.__name__} ({module.__file__}) defines no FAMILY "
                              "(a memwall.family.Family)")
        if described.name != info.name:
            raise FamilyError(f"{module.__name__}: FAMILY.name is {described.name!r}; it must "
                              f"be the package name {info.name!r}")
        found[info.name] = described
    _FOUND = (search, found)
    return found


def family(name: str) -> Family:
    """The family called ``name``; KeyError naming the known ones otherwise."""
    known = families()
    if name not in known:
        raise KeyError(f"unknown unit family {name!r}; known: {', '.join(known)}")
    return known[name]
