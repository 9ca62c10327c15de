"""What family subcommands share: the usage error, and checks of output paths."""

from __future__ import annotations

from pathlib import Path

from memwall.inputs import InputError

__all__ = ["UsageError", "output_path", "write_json_output"]


class UsageError(InputError):
    """Bad command-line input; printed as ``memwall: error: ...`` with exit status 2."""


def output_path(value: str, option: str = "--out") -> Path:
    """An output file whose folder exists; checked before any long work starts."""
    out = Path(value)
    if not out.parent.is_dir():
        raise UsageError(f"{option} {out}: folder {out.parent} does not exist")
    return out


def write_json_output(value: str, result: dict, option: str = "--out") -> Path:
    from memwall.files import write_json_atomic

    return write_json_atomic(output_path(value, option), result)
