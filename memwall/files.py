"""Writing result files: standard JSON only, and atomically, so that a reader sees the old file
or the whole new one, never part."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from memwall.boundary import checkpoint

__all__ = ["write_text_atomic", "write_json_atomic", "write_npz_atomic", "dumps_json",
           "standard_json"]


def standard_json(data: Any, _path: str = "", _undefined: dict | None = None) -> Any:
    """``data`` with every NaN or infinity replaced by ``null``.

    JSON has no NaN or Infinity (strict parsers reject Python's ``NaN``); where one was, the
    top-level mapping gains ``"undefined": {"<dotted key>": "<reason>"}``. A producer that
    knows why a value may be undefined gives the reason in its own top-level ``undefined``
    mapping (kept only for values that are in fact undefined); what it did not explain is
    marked ``"not a finite number (nan)"``.
    """
    top = _undefined is None
    undefined: dict = {} if top else _undefined
    if isinstance(data, float) and not math.isfinite(data):
        undefined.setdefault(_path, f"not a finite number ({data})")
        return None
    if isinstance(data, dict):
        out = {k: standard_json(v, f"{_path}.{k}" if _path else str(k), undefined)
               for k, v in data.items() if not (top and k == "undefined")}
    elif isinstance(data, (list, tuple)):
        out = [standard_json(v, f"{_path}[{i}]", undefined) for i, v in enumerate(data)]
    else:
        return data
    if top and isinstance(data, dict):
        given = data.get("undefined") or {}
        reasons = {path: given.get(path, generic) for path, generic in undefined.items()}
        if reasons:
            out["undefined"] = dict(sorted(reasons.items()))
    return out


def dumps_json(data: Any, *, indent: int | None = None) -> str:
    """Sorted, standard JSON (:func:`standard_json`)."""
    return json.dumps(standard_json(data), indent=indent, sort_keys=True, allow_nan=False)


def write_text_atomic(path, text: str) -> Path:
    """Write ``text`` through a temporary file renamed over ``path``; on any error or
    interrupt the temporary file goes and ``path`` keeps its old content."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # unique per writing process
    try:
        tmp.write_text(text)
        checkpoint("write-back")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path, data, *, indent: int | None = 2) -> Path:
    """Write ``data`` as sorted, standard JSON through a temporary file renamed over ``path``."""
    text = dumps_json(data, indent=indent) + "\n"   # before the file: a bad value writes nothing
    return write_text_atomic(path, text)


def write_npz_atomic(path, arrays: dict) -> Path:
    """Write ``arrays`` with ``np.savez`` to a temporary file in ``path``'s folder, flushed to
    disk and renamed over ``path``: readers never see a half-written file, and an error or
    interrupt leaves ``path`` as it was. The name is used as given (no ``.npz`` appended)."""
    import numpy as np

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the result the mode a plain open() would (umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
