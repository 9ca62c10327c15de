"""What a mutation run has learned, kept in the repository (``reports/mutation_kept/<config>.json``)
so that a run resumes on a fresh clone, as Stryker's incremental report does.

A run of ``memwall mutate`` keeps its work in ``build/mutate/<config>/``: the coverage pass, the
control, each mutant's per-test outcomes and each survivor's equivalence result, every one
keyed by what it depends on (the mutant's text, the test, the seed and the test's sources; the
design and the mutation). A fresh clone has no ``build/``, and a full d-PLENA run is hours of
CPU. The record holds the same entries, with their keys: :func:`restore_folder` and
:func:`restore_mutants` put them where the run looks for them (only where it has nothing of its
own), and :func:`save_record` gathers them back when the run ends, is stopped, or fails. An
entry whose key no longer matches (a test or the hardware changed) is never used, so a stale
record costs time, never a wrong score.
"""

from __future__ import annotations

import json
from pathlib import Path

from memwall import paths
from memwall.files import write_text_atomic

__all__ = ["RECORD_ROOT", "record_path", "restore_folder", "restore_mutants", "save_record"]

RECORD_ROOT = paths.REPORTS / "mutation_kept"
#: Bumped when the record's layout changes (an older record is then ignored).
RECORD_FORMAT = 1
#: The run's files the record carries whole (the coverage pass and the control).
_WHOLE_FILES = ("coverage", "control")


def record_path(config: str, root: Path = RECORD_ROOT) -> Path:
    return Path(root) / f"{config}.json"


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError:
        return {}      # a record cut short (an interrupted write of an old version): start over
    return record if record.get("format") == RECORD_FORMAT else {}


def restore_folder(folder: Path, config: str, root: Path = RECORD_ROOT) -> None:
    """Write the record's coverage pass and control into ``folder`` where it has none."""
    record = _load(record_path(config, root))
    for name in _WHOLE_FILES:
        file = folder / f"{name}.json"
        if record.get(name) is not None and not file.exists():
            write_text_atomic(file, json.dumps(record[name], indent=1))


def _mutant_files(folder: Path, module: str, mutant: dict) -> tuple[Path, Path]:
    result = Path(mutant["file"]).with_suffix(".result.json")
    return result, folder / module / f"equivalence_{mutant['id']}.json"


def restore_mutants(folder: Path, config: str, module: str, mutants: list[dict],
                    root: Path = RECORD_ROOT) -> None:
    """Merge the record's outcomes for ``module``'s ``mutants`` (matched by their mutation)
    into their kept files: a test's outcome where the mutant has none for that test, an
    equivalence result where it has none."""
    kept = _load(record_path(config, root)).get("modules", {}).get(module, {})
    for mutant in mutants:
        entry = kept.get(mutant["mutation"])
        if not entry:
            continue
        result_file, equivalence_file = _mutant_files(folder, module, mutant)
        if entry.get("runs"):
            local = json.loads(result_file.read_text()) if result_file.exists() else {}
            runs = {**entry["runs"], **local.get("runs", {})}
            if runs != local.get("runs"):
                write_text_atomic(result_file, json.dumps({"runs": runs}))
        if entry.get("equivalence") and not equivalence_file.exists():
            write_text_atomic(equivalence_file, json.dumps(entry["equivalence"]))


def save_record(folder: Path, config: str, modules: dict[str, list[dict]],
                root: Path = RECORD_ROOT) -> Path:
    """Gather ``folder``'s kept work into the record: the coverage pass, the control and, for
    each of ``modules`` (name -> its sampled mutants), every mutant's outcomes. Other modules'
    entries stay as they were; a module's mutations no longer sampled are dropped."""
    path = record_path(config, root)
    record = _load(path) or {"format": RECORD_FORMAT, "config": config, "modules": {}}
    for name in _WHOLE_FILES:
        if (folder / f"{name}.json").exists():
            record[name] = json.loads((folder / f"{name}.json").read_text())
    for module, mutants in modules.items():
        entries = {}
        for mutant in mutants:
            result_file, equivalence_file = _mutant_files(folder, module, mutant)
            entry = {}
            if result_file.exists():
                entry["runs"] = json.loads(result_file.read_text()).get("runs", {})
            if equivalence_file.exists():
                entry["equivalence"] = json.loads(equivalence_file.read_text())
            if entry:
                entries[mutant["mutation"]] = entry
        record["modules"][module] = entries
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, _layout(record))
    return path


def _layout(record: dict) -> str:
    """JSON with one line per mutant, so that a run's change to the record diffs line by line."""
    head = {k: v for k, v in record.items() if k != "modules"}
    lines = ["{" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}"
                              for k, v in head.items()) + ',\n"modules": {']
    modules = []
    for module in sorted(record["modules"]):
        mutants = record["modules"][module]
        body = ",\n".join(f"  {json.dumps(m)}: {json.dumps(mutants[m], sort_keys=True)}"
                          for m in sorted(mutants))
        modules.append(f" {json.dumps(module)}: {{\n{body}\n }}" if body
                       else f" {json.dumps(module)}: {{}}")
    lines.append(",\n".join(modules))
    lines.append("}}\n")
    return "\n".join(lines)
