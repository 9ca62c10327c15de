"""The KVNAND design-space sweep (Fig. 15, widened) through the project's sweep runner.

Axes: models x formats x contexts x die splits x buffer readings, on ``dies`` IFC dies. A split
is a G1 die count (``KVNAND-D-(G1 + dies - G1)``) or ``"C"`` (``KVNAND-C-dies``); a buffer
reading is a name of :data:`~memwall.golden.kvnand.systems.BUFFER_READINGS` (the kv_buffer
inconsistency: every KV stream buffered, or only as many as the 8 KB plane buffer / 5 MiB SoC
buffer hold open) or your own ``{name: {"c_open_streams": n, "d_open_streams": m}}``.

One :class:`~memwall.sweep.Job` per (buffer reading, model, format) computes that slice over
every context and split in a fresh process (:class:`~memwall.sweep.LocalProcesses` by default,
a Ray cluster when one is given: :func:`memwall.sweep.backend`). :func:`run_dse` assembles the
slices into :func:`memwall.golden.kvnand.model.dse`'s grid, one per buffer reading:
``{reading: {"<model> <format>": {context: {"cells": {label: ms | None}, "best": label}}}}``
(None: the configuration does not fit, OOM). On the default grid the ``paper_sufficient``
reading equals ``kvnand_model.dse()`` cell for cell (tests/kvnand/test_kvnand_report.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

from memwall.golden.kvnand.model import DEFAULT, DSE_CASES, DSE_CONTEXTS, decode_step
from memwall.golden.kvnand.systems import (
    BUFFER_READINGS,
    FORMATS,
    MODELS,
    Params,
    kvnand_c,
    kvnand_d,
)
from memwall.sweep import Job, LocalProcesses, RayCluster, backend, run_sweep

__all__ = ["DEFAULT_GRID", "dse_jobs", "run_dse", "dse_slice", "sweep_command_result"]

#: Fig. 15's grid (the paper's 8-die study), with both buffer readings.
DEFAULT_GRID = {
    "models": tuple(dict.fromkeys(m for m, _ in DSE_CASES)),
    "formats": tuple(dict.fromkeys(f for _, f in DSE_CASES)),
    "contexts": DSE_CONTEXTS,
    "splits": None,                        # every G1 in 1..dies-1, then "C"
    "buffer_readings": tuple(BUFFER_READINGS),
    "dies": 8,
}


def _label(split: int | str, dies: int) -> str:
    return f"C-{dies}" if split == "C" else f"D-({split}+{dies - split})"


def dse_slice(model: str, fmt: str, contexts: Sequence[int], splits: Sequence[int | str],
              dies: int, params: Params) -> dict[int, dict]:
    """One job: latency (ms, rounded as ``kvnand_model.dse``; None = OOM) of every split at
    every context for one model, format and parameter set, and the best split per context
    (the fastest that fits; on a tie the first in ``splits``)."""
    out = {}
    for ctx in contexts:
        cells = {}
        for split in splits:
            system = kvnand_c(dies, params) if split == "C" else kvnand_d(split, dies - split,
                                                                        params)
            r = decode_step(system, model, ctx, fmt)
            cells[_label(split, dies)] = None if r["oom"] else round(r["latency_s"] * 1e3, 4)
        fit = {k: v for k, v in cells.items() if v is not None}
        out[ctx] = {"cells": cells, "best": min(fit, key=fit.get) if fit else None}
    return out


def _readings(buffer_readings) -> dict[str, dict]:
    if isinstance(buffer_readings, Mapping):
        readings = {str(k): dict(v) for k, v in buffer_readings.items()}
    else:
        unknown = [r for r in buffer_readings if r not in BUFFER_READINGS]
        if unknown:
            raise ValueError(f"buffer_readings={unknown}: allowed {list(BUFFER_READINGS)} or "
                             "a mapping {name: {'c_open_streams': n, 'd_open_streams': m}}")
        readings = {r: dict(BUFFER_READINGS[r]) for r in buffer_readings}
    for name, kw in readings.items():
        extra = set(kw) - {"c_open_streams", "d_open_streams"}
        if extra:
            raise ValueError(f"buffer reading {name!r}: keys {sorted(extra)}; allowed "
                             "c_open_streams, d_open_streams")
    if not readings:
        raise ValueError("buffer_readings: give at least one")
    return readings


def _grid(models=None, formats=None, contexts=None, splits=None, buffer_readings=None,
          dies=None) -> dict:
    """The grid with defaults filled in, checked (a ValueError names the key and what is
    allowed)."""
    d = DEFAULT_GRID
    dies = d["dies"] if dies is None else int(dies)
    if dies < 2:
        raise ValueError(f"dies={dies}: must be >= 2 (KVNAND-D needs a die in G1 and in G2)")
    g = {"models": tuple(d["models"] if models is None else models),
         "formats": tuple(d["formats"] if formats is None else formats),
         "contexts": tuple(int(c) for c in (d["contexts"] if contexts is None else contexts)),
         "splits": tuple([*range(1, dies), "C"] if splits is None else splits),
         "buffer_readings": _readings(d["buffer_readings"] if buffer_readings is None
                                      else buffer_readings),
         "dies": dies}
    for key, allowed in (("models", MODELS), ("formats", FORMATS)):
        bad = [x for x in g[key] if x not in allowed]
        if bad or not g[key]:
            raise ValueError(f"{key}={list(g[key])}: allowed (at least one of) {sorted(allowed)}")
    if not g["contexts"] or min(g["contexts"]) < 1:
        raise ValueError(f"contexts={list(g['contexts'])}: give at least one, each >= 1")
    bad = [s for s in g["splits"] if s != "C" and not (isinstance(s, int) and 1 <= s < dies)]
    if bad or not g["splits"]:
        raise ValueError(f"splits={list(g['splits'])}: allowed G1 die counts 1..{dies - 1} "
                         "and 'C' (KVNAND-C)")
    if "C" in g["splits"]:
        planes = dies * DEFAULT.planes_per_die
        short = [m for m in g["models"] if planes < MODELS[m].heads + 2 * MODELS[m].kv_heads]
        if short:
            raise ValueError(f"splits: 'C' on {dies} dies has {planes} planes, fewer than the "
                             f"heads + 2 KV heads of {short} (head parallelism needs a plane "
                             "each); drop 'C' or give more dies")
    return g


def dse_jobs(models=None, formats=None, contexts=None, splits=None, buffer_readings=None,
             dies=None, *, p: Params = DEFAULT) -> list[Job]:
    """The sweep's jobs: one per buffer reading x model x format, each over every context and
    split. ``p``: the parameters the readings' open-stream counts are applied to."""
    g = _grid(models, formats, contexts, splits, buffer_readings, dies)
    jobs = []
    for reading, kw in g["buffer_readings"].items():
        params = Params(**{**asdict(p), **kw})
        for model in g["models"]:
            for fmt in g["formats"]:
                jobs.append(Job(f"{reading} {model} {fmt}", dse_slice,
                                (model, fmt, g["contexts"], g["splits"], g["dies"], params)))
    return jobs


def run_dse(runner: LocalProcesses | RayCluster | None = None, *, p: Params = DEFAULT,
            progress=None, **grid) -> dict:
    """Run :func:`dse_jobs` (``grid``: its axes) with :func:`memwall.sweep.run_sweep` on
    ``runner`` (default: local processes) and assemble ``{reading: {"<model> <format>":
    {context: {"cells": ..., "best": ...}}}}``, the grid of ``kvnand_model.dse`` per reading."""
    g = _grid(**grid)
    jobs = dse_jobs(**g, p=p)
    values = run_sweep(jobs, runner, progress=progress, description="kvnand DSE")
    return {reading: {f"{model} {fmt}": values[f"{reading} {model} {fmt}"]
                      for model in g["models"] for fmt in g["formats"]}
            for reading in g["buffer_readings"]}


def sweep_command_result(ray: str | None = None, workers: int | None = None) -> dict:
    """What the CLI prints for the DSE sweep (JSON-able: string keys): the default grid run
    on a Ray cluster (``ray``: an address, ``local`` or ``auto``) or else on ``workers`` local
    processes; the grid's axes, the cells per buffer reading and the best split per model,
    format and context."""
    g = _grid()
    with backend(ray, workers) as runner:
        res = run_dse(runner)
    return {"grid": {**{k: list(v) for k, v in g.items() if k not in ("dies",
                                                                      "buffer_readings")},
                     "dies": g["dies"], "buffer_readings": g["buffer_readings"]},
            "backend": runner.name,
            "dse": {reading: {case: {str(ctx): row for ctx, row in rows.items()}
                              for case, rows in cases.items()}
                    for reading, cases in res.items()},
            "best": {reading: {case: {str(ctx): row["best"] for ctx, row in rows.items()}
                               for case, rows in cases.items()}
                     for reading, cases in res.items()}}
