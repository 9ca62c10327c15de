"""Writing result files so that a reader sees the old file or the whole new one, never part."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["write_json_atomic"]


def write_json_atomic(path, data, *, indent: int | None = 2) -> Path:
    """Write ``data`` as sorted JSON through a temporary file renamed over ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")   # unique per writing process
    try:
        tmp.write_text(json.dumps(data, indent=indent, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
