"""What family subcommands share: the usage error, option types, and output checks that run
before any long work starts."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from memwall.inputs import InputError

__all__ = ["UsageError", "output_path", "output_folder", "write_json_output", "positive_int",
           "jobs_int", "mutant_count", "fraction", "margin_ps", "check_sim_cycles",
           "DEFAULT_MAX_SIM_CYCLES"]

#: ``memwall run``'s default bound on simulated cycles (``--max-cycles``): a run that long takes
#: minutes in Icarus; the analytic ``model`` of each family has no such bound.
DEFAULT_MAX_SIM_CYCLES = 2_000_000


class UsageError(InputError):
    """Bad command-line input; printed as ``memwall: error: ...`` with exit status 2."""


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse reports the option and the value)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer (>= 1)")
    return value


def fraction(text: str) -> float:
    """argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:   # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in [0, 1]")
    return value


def margin_ps(text: str) -> float:
    """argparse type: a timing margin in ps, in [0, 10000]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 10000.0:   # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not a margin in [0, 10000] ps")
    return value


#: Parallel tool runs (``--jobs``): each Yosys run holds up to a few GiB.
MAX_JOBS = 64


def jobs_int(text: str) -> int:
    """argparse type for ``--jobs``: an integer in [1, MAX_JOBS]."""
    value = positive_int(text)
    if value > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"{value} parallel runs; at most {MAX_JOBS}")
    return value


#: Most mutants ``memwall mutate --max`` samples per module.
MAX_MUTANTS = 1000


def mutant_count(text: str) -> int:
    """argparse type for ``memwall mutate --max``: mutants per module, in [1, MAX_MUTANTS]."""
    value = positive_int(text)
    if value > MAX_MUTANTS:
        raise argparse.ArgumentTypeError(f"{value} mutants per module; at most {MAX_MUTANTS}")
    return value


def _probe_writable(folder: Path, option: str, shown: Path) -> None:
    """Create and remove a file in ``folder``: the one honest test that a write will work."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".memwall-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{option} {shown}: cannot write in {folder} "
                         f"({exc.strerror or exc})") from None


def output_path(value: str, option: str = "--out") -> Path:
    """An output file that can be written: its folder exists and takes files, and the path is
    not a folder. Checked before any long work starts."""
    out = Path(value)
    if out.is_dir():
        raise UsageError(f"{option} {out}: is a folder; give a file name")
    if out.exists() and not out.is_file():
        raise UsageError(f"{option} {out}: exists and is not a regular file")
    if not out.parent.is_dir():
        what = "is not a folder" if out.parent.exists() else "does not exist"
        raise UsageError(f"{option} {out}: folder {out.parent} {what}")
    if out.exists() and not os.access(out, os.W_OK):
        raise UsageError(f"{option} {out}: the file exists and is not writable")
    _probe_writable(out.parent, option, out)
    return out


def output_folder(value: str, option: str = "--out") -> Path:
    """An output folder that exists and takes files, or can be created (with its parents).
    Nothing is created here; checked before any long work starts."""
    out = Path(value)
    existing = out
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{option} {out}: {existing} is a file, not a folder")
    _probe_writable(existing, option, out)
    return out


def check_sim_cycles(cycles: float, limit: int, what: str) -> None:
    """Refuse a simulation that would run more than ``limit`` cycles, before it starts."""
    if cycles > limit:
        raise UsageError(f"{what} needs at least {cycles:,.0f} simulated cycles; --max-cycles "
                         f"is {limit:,} (raise it to run it anyway, or use memwall model)")


def write_json_output(value: str, result: dict, option: str = "--out") -> Path:
    from memwall.files import write_json_atomic

    return write_json_atomic(output_path(value, option), result)
