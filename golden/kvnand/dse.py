"""The KVNAND design-space sweep (Fig. 15, widened) through the project's sweep runner.

Axes: models x formats x contexts x systems x KV buffers, at one parameter set (a config's:
:meth:`~memwall.golden.kvnand.systems.Params.from_config`). The systems are by default Fig.
15's: every split of ``dies`` IFC dies (a G1 die count, ``KVNAND-D-(G1 + dies - G1)``, or
``"C"``, ``KVNAND-C-dies``); or any list of systems by name
(:data:`~memwall.golden.kvnand.systems.SYSTEM_GRAMMAR`: ``base1``, ``kvnand_c:16``,
``kvnand_d:4+12``). A KV buffer is a name of
:func:`~memwall.golden.kvnand.systems.buffer_readings` (the kv_buffer inconsistency: every KV
stream buffered, or only as many as the 8 KB plane buffer / 5 MiB SoC buffer hold open), your
own ``{name: {"c_open_streams": n, "d_open_streams": m}}``, or sizes in KiB
(:func:`~memwall.golden.kvnand.systems.buffer_kib_readings`).

One :class:`~memwall.sweep.Job` per (buffer reading, model, format) computes that slice over
every context and system in a fresh process (:class:`~memwall.sweep.LocalProcesses` by default,
a Ray cluster when one is given: :func:`memwall.sweep.backend`). :func:`run_dse` assembles the
slices into :func:`memwall.golden.kvnand.model.dse`'s grid, one per buffer reading:
``{reading: {"<model> <format>": {context: {"cells": {label: ms | None}, "best": label}}}}``
(None: the configuration does not fit, OOM; labels ``D-(G1+G2)``, ``C-x``, ``Base-1``,
``Base-2``). On the default grid the ``paper_sufficient`` reading equals
``kvnand_model.dse()`` cell for cell (tests/kvnand/test_kvnand_report.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from memwall.golden.kvnand.model import DEFAULT, DSE_CASES, DSE_CONTEXTS, decode_step
from memwall.golden.kvnand.systems import (
    BUFFER_KIB_GRAMMAR,
    FORMATS,
    MODELS,
    Params,
    System,
    buffer_kib_readings,
    kvnand_c,
    kvnand_d,
    parse_system,
)
from memwall.golden.kvnand.systems import buffer_readings as named_readings
from memwall.sweep import Job, LocalProcesses, RayCluster, backend, run_sweep

__all__ = ["DEFAULT_GRID", "BUFFER_KIB_GRAMMAR", "buffer_kib_readings", "dse_jobs", "run_dse",
           "dse_slice", "systems_slice", "sweep_command_result"]

#: Fig. 15's grid (the paper's 8-die study), with both buffer readings.
DEFAULT_GRID = {
    "models": tuple(dict.fromkeys(m for m, _ in DSE_CASES)),
    "formats": tuple(dict.fromkeys(f for _, f in DSE_CASES)),
    "contexts": DSE_CONTEXTS,
    "splits": None,                        # every G1 in 1..dies-1, then "C"
    "buffer_readings": ("paper_sufficient", "buffer_limited"),
    "dies": 8,
}
def _label(system: System) -> str:
    return {"kvnand_d": f"D-({system.g1}+{system.g2})", "kvnand_c": f"C-{system.g1}",
            "base1": "Base-1", "base2": "Base-2"}[system.kind]


def systems_slice(model: str, fmt: str, contexts: Sequence[int], systems: Sequence[str],
                  params: Params) -> dict[int, dict]:
    """One job: latency (ms, rounded as ``kvnand_model.dse``; None = OOM) of every system
    (by name) at every context for one model, format and parameter set, and the best system
    per context (the fastest that fits; on a tie the first in ``systems``)."""
    out = {}
    for ctx in contexts:
        cells = {}
        for spec in systems:
            system = parse_system(spec, params)
            r = decode_step(system, model, ctx, fmt)
            cells[_label(system)] = None if r["oom"] else round(r["latency_s"] * 1e3, 4)
        fit = {k: v for k, v in cells.items() if v is not None}
        out[ctx] = {"cells": cells, "best": min(fit, key=fit.get) if fit else None}
    return out


def _split_specs(splits: Sequence[int | str], dies: int) -> tuple[str, ...]:
    return tuple(kvnand_c(dies).spec if s == "C" else kvnand_d(s, dies - s).spec
                 for s in splits)


def dse_slice(model: str, fmt: str, contexts: Sequence[int], splits: Sequence[int | str],
              dies: int, params: Params) -> dict[int, dict]:
    """:func:`systems_slice` of the splits of ``dies`` dies (a G1 die count, or ``"C"``)."""
    return systems_slice(model, fmt, contexts, _split_specs(splits, dies), params)


def _readings(readings, p: Params) -> dict[str, dict]:
    named = named_readings(p)
    if isinstance(readings, Mapping):
        readings = {str(k): dict(v) for k, v in readings.items()}
    else:
        unknown = [r for r in readings if r not in named]
        if unknown:
            raise ValueError(f"buffer_readings={unknown}: allowed {list(named)} or "
                             "a mapping {name: {'c_open_streams': n, 'd_open_streams': m}}")
        readings = {r: dict(named[r]) for r in readings}
    for name, kw in readings.items():
        extra = set(kw) - {"c_open_streams", "d_open_streams"}
        if extra:
            raise ValueError(f"buffer reading {name!r}: keys {sorted(extra)}; allowed "
                             "c_open_streams, d_open_streams")
    if not readings:
        raise ValueError("buffer_readings: give at least one")
    return readings


def _grid(models=None, formats=None, contexts=None, splits=None, buffer_readings=None,
          dies=None, systems=None, *, p: Params = DEFAULT) -> dict:
    """The grid with defaults filled in, checked (a ValueError names the key and what is
    allowed). ``systems`` (names), when given, replaces ``splits`` and ``dies``."""
    d = DEFAULT_GRID
    dies = d["dies"] if dies is None else int(dies)
    if dies < 2:
        raise ValueError(f"dies={dies}: must be >= 2 (KVNAND-D needs a die in G1 and in G2)")
    g = {"models": tuple(d["models"] if models is None else models),
         "formats": tuple(d["formats"] if formats is None else formats),
         "contexts": tuple(int(c) for c in (d["contexts"] if contexts is None else contexts)),
         "splits": tuple([*range(1, dies), "C"] if splits is None else splits),
         "buffer_readings": _readings(d["buffer_readings"] if buffer_readings is None
                                      else buffer_readings, p),
         "dies": dies}
    for key, allowed in (("models", MODELS), ("formats", FORMATS)):
        bad = [x for x in g[key] if x not in allowed]
        if bad or not g[key]:
            raise ValueError(f"{key}={list(g[key])}: allowed (at least one of) {sorted(allowed)}")
    if not g["contexts"] or min(g["contexts"]) < 1:
        raise ValueError(f"contexts={list(g['contexts'])}: give at least one, each >= 1")
    if systems is None:
        bad = [s for s in g["splits"] if s != "C" and not (isinstance(s, int) and 1 <= s < dies)]
        if bad or not g["splits"]:
            raise ValueError(f"splits={list(g['splits'])}: allowed G1 die counts 1..{dies - 1} "
                             "and 'C' (KVNAND-C)")
        g["systems"] = _split_specs(g["splits"], dies)
    else:
        g["systems"] = tuple(parse_system(s, p).spec for s in systems)   # ValueError: named
        if not g["systems"]:
            raise ValueError("systems: give at least one")
    for spec in g["systems"]:
        s = parse_system(spec, p)
        planes = s.g1 * p.planes_per_die
        short = [m for m in g["models"] if s.kind == "kvnand_c"
                 and planes < MODELS[m].heads + 2 * MODELS[m].kv_heads]
        if short:
            what = f"splits: 'C' ({_label(s)})" if systems is None else f"systems: {spec}"
            raise ValueError(f"{what} has {planes} planes, fewer than the heads + 2 KV heads "
                             f"of {', '.join(short)} (head parallelism needs a plane each); "
                             "drop it or give more dies")
    return g


def dse_jobs(models=None, formats=None, contexts=None, splits=None, buffer_readings=None,
             dies=None, systems=None, *, p: Params = DEFAULT) -> list[Job]:
    """The sweep's jobs: one per buffer reading x model x format, each over every context and
    system. ``p``: the parameters the readings' open-stream counts are applied to."""
    g = _grid(models, formats, contexts, splits, buffer_readings, dies, systems, p=p)
    jobs = []
    for reading, kw in g["buffer_readings"].items():
        params = replace(p, **kw)
        for model in g["models"]:
            for fmt in g["formats"]:
                jobs.append(Job(f"{reading} {model} {fmt}", systems_slice,
                                (model, fmt, g["contexts"], g["systems"], params)))
    return jobs


def run_dse(runner: LocalProcesses | RayCluster | None = None, *, p: Params = DEFAULT,
            progress=None, **grid) -> dict:
    """Run :func:`dse_jobs` (``grid``: its axes) with :func:`memwall.sweep.run_sweep` on
    ``runner`` (default: local processes) and assemble ``{reading: {"<model> <format>":
    {context: {"cells": ..., "best": ...}}}}``, the grid of ``kvnand_model.dse`` per reading."""
    g = _grid(**grid, p=p)
    jobs = dse_jobs(g["models"], g["formats"], g["contexts"],
                    buffer_readings=g["buffer_readings"], systems=g["systems"], p=p)
    values = run_sweep(jobs, runner, progress=progress, description="kvnand DSE")
    return {reading: {f"{model} {fmt}": values[f"{reading} {model} {fmt}"]
                      for model in g["models"] for fmt in g["formats"]}
            for reading in g["buffer_readings"]}


def sweep_command_result(ray: str | None = None, workers: int | None = None, *,
                         p: Params = DEFAULT, **grid) -> dict:
    """What the CLI prints for the DSE sweep (JSON-able: string keys): the grid (``grid``:
    :func:`_grid`'s axes; Fig. 15's by default) at parameters ``p``, run on a Ray cluster
    (``ray``: an address, ``local`` or ``auto``) or else on ``workers`` local processes; the
    grid's axes, the cells per buffer reading and the best system per model, format and
    context. A bad axis raises ValueError before any job runs."""
    g = _grid(**grid, p=p)
    with backend(ray, workers) as runner:
        res = run_dse(runner, p=p, models=g["models"], formats=g["formats"],
                      contexts=g["contexts"], buffer_readings=g["buffer_readings"],
                      systems=g["systems"])
    return {"grid": {"models": list(g["models"]), "formats": list(g["formats"]),
                     "contexts": list(g["contexts"]), "systems": list(g["systems"]),
                     "buffer_readings": g["buffer_readings"]},
            "backend": runner.name,
            "dse": {reading: {case: {str(ctx): row for ctx, row in rows.items()}
                              for case, rows in cases.items()}
                    for reading, cases in res.items()},
            "best": {reading: {case: {str(ctx): row["best"] for ctx, row in rows.items()}
                               for case, rows in cases.items()}
                     for reading, cases in res.items()}}
