"""The error boundary of ``memwall``: what a failure looks like to the user.

Every expected failure is one line on stderr, ``memwall: error: ...``, and an exit status:

* 2: bad input (any :class:`memwall.inputs.InputError`: config, option, data file, trace,
  PDK; or an output path the OS refuses);
* 1: a tool run failed (its message names the log), or an internal error, whose traceback is
  kept in ``$MEMWALL_LOG_DIR/memwall-crash-*.log`` (default: the temp folder) rather than
  printed; ``MEMWALL_TRACEBACK=1`` lets it through;
* 128 + signal: 130 on SIGINT, 143 on SIGTERM, after the cleanups have run; 141 when the reader
  of stdout went away (nothing is printed, as for a tool killed by SIGPIPE).

SIGINT and SIGTERM raise :class:`Interrupted` in the main thread, so every ``finally`` and
``except BaseException`` cleanup runs (staging folders, temporary files, child processes), and
a signal that could not stop the command (it landed in a ``__del__``) still never ends in 0.

:func:`checkpoint` marks the points of a run where a signal is worst (start-up, the simulator's
build, the simulation, the write-back of a result): a test names one in ``MEMWALL_PAUSE_AT``
and the run waits there, so the signal lands at that point every time, not when a sleep in
the test happens to end.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memwall.inputs import InputError

__all__ = ["Interrupted", "checkpoint", "signals_raise", "crash_log", "error", "exit_status",
           "guarded"]


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised in the main thread so that every ``finally`` and ``except
    BaseException`` cleanup runs (staging folders, temporary files, child processes)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


#: ``<point>:<marker file>``: :func:`checkpoint` of that name writes the marker file, then waits.
PAUSE_ENV = "MEMWALL_PAUSE_AT"
#: How long a paused run waits for the test's signal before it goes on (and then, without the
#: signal, ends as usual: a test that expected 130 fails rather than hangs).
PAUSE_S = 60.0


def checkpoint(point: str) -> None:
    """A named point of a run (``start-up``, ``build``, ``simulation``, ``write-back``).

    Does nothing unless ``MEMWALL_PAUSE_AT`` names this point; then it writes the marker file
    the variable names (the process's pid) and waits up to :data:`PAUSE_S` for a signal. The
    tests of the signal handling stop a run at each point this way.
    """
    wanted, _, marker = os.environ.get(PAUSE_ENV, "").partition(":")
    if wanted != point or not marker:
        return
    Path(marker).write_text(f"{os.getpid()}\n")
    time.sleep(PAUSE_S)   # a signal's handler raises out of the sleep


@contextlib.contextmanager
def signals_raise():
    """SIGINT and SIGTERM raise :class:`Interrupted` once; a second signal during the cleanup
    is remembered, not raised, so the cleanup finishes. Yields the list of signals seen."""
    seen: list[int] = []

    def handler(signum, frame):
        seen.append(signum)
        if len(seen) == 1:
            raise Interrupted(signum)

    def unraisable(info):
        # A signal that lands in a __del__ (Amaranth's UnusedElaboratable check) cannot
        # propagate; it is in `seen` already, so main still exits with 128 + signal.
        if not isinstance(info.exc_value, Interrupted):
            default_hook(info)

    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    default_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    try:
        yield seen
    finally:
        sys.unraisablehook = default_hook
        for sig, old in previous.items():
            signal.signal(sig, old)


#: OS errors that mean a path the user gave cannot be used (exit 2), not a broken machine.
_BAD_PATH = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR,
             errno.EISDIR, errno.ENAMETOOLONG, errno.EEXIST}


def crash_log(exc: BaseException) -> Path | None:
    """Keep the traceback of an internal error in a file rather than on the terminal."""
    folder = Path(os.environ.get("MEMWALL_LOG_DIR") or tempfile.gettempdir())
    try:
        fd, name = tempfile.mkstemp(prefix=time.strftime("memwall-crash-%Y%m%d-%H%M%S-"),
                                    suffix=".log", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(f"memwall {' '.join(sys.argv[1:])}\n\n")
            traceback.print_exception(exc, file=f)
        return Path(name)
    except OSError:
        return None


def error(message: str) -> None:
    """One line on stderr. A command that stopped part-way leaves Amaranth components unbuilt;
    their UnusedElaboratable warnings at exit would only bury the message."""
    with contextlib.suppress(ImportError):
        from amaranth.hdl import UnusedElaboratable

        warnings.simplefilter("ignore", UnusedElaboratable)
    try:
        print(f"memwall: error: {message}", file=sys.stderr, flush=True)
    except OSError:   # stderr itself is gone
        pass


def exit_status(command: Callable[[Any], None], args: Any,
                tool_failures: tuple[type[Exception], ...] = ()) -> int:
    """Run ``command(args)``; every expected failure becomes one line and an exit status.

    ``tool_failures`` are the exceptions of a failed tool run (Yosys, OpenSTA, a simulator):
    their message already names the step, its log and the log's last lines.
    """
    try:
        command(args)
        sys.stdout.flush()   # a closed pipe shows here, inside the boundary
    except InputError as exc:   # configs, options, data files, traces, PDK files
        error(str(exc))
        return 2
    except tool_failures as exc:
        error(str(exc))
        return 1
    except BrokenPipeError:
        # The reader went away (`memwall configs | head -1`): stop quietly, as a tool killed
        # by SIGPIPE would; point stdout at /dev/null so the exit flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        error(f"{where}{exc.strerror or exc}")
        return 2 if exc.errno in _BAD_PATH else 1
    except MemoryError as exc:
        log = crash_log(exc)
        error(f"out of memory{f' (traceback in {log})' if log else ''}")
        return 1
    except Exception as exc:   # a bug: the traceback goes to a file, one line to the terminal
        if os.environ.get("MEMWALL_TRACEBACK"):
            raise
        log = crash_log(exc)
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        error(f"internal error: {type(exc).__name__}: {first_line}"
               + (f" (traceback in {log}; please report it)" if log else ""))
        return 1
    return 0


def guarded(command: Callable[[], int]) -> int:
    """``command()``'s exit status, with SIGINT/SIGTERM turned into 128 + the signal."""
    with signals_raise() as seen:
        try:
            code = command()
        except KeyboardInterrupt as exc:   # the command's own cleanups have run
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            error(f"interrupted by {signal.Signals(signum).name}; nothing half-written is left")
            return 128 + signum
        if seen:   # a signal came where it could not stop the command: never report success
            error(f"interrupted by {signal.Signals(seen[0]).name}")
            return 128 + seen[0]
        return code
