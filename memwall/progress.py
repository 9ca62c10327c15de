"""Progress of long runs: a ``rich`` display on a terminal, plain lines otherwise.

One :class:`Progress` per command. Each step of known size is a :meth:`Progress.task`; the
display shows the step, done/total, elapsed time and an ETA. When stderr is not a terminal, or
with ``--quiet``, the same events are plain lines on stderr (``[3/12] synth: reduction_unit
(elapsed 0:00:41, ETA 0:02:04)``), so logs and CI output stay readable. Tasks may be advanced
from worker threads. A task whose parts run side by side (:mod:`memwall.sweep`) also shows which
parts are running: :meth:`Task.begin` one, :meth:`Task.advance` it when it ends.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress", "Task", "plain_progress"]


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Task:
    """One step with ``total`` parts (None: unknown); advance it as parts finish.

    ``running``: the parts begun (:meth:`begin`) and not yet ended, in the order they began.
    """

    def __init__(self, progress: Progress, description: str, total: int | None, rich_id=None):
        self._progress, self.description, self.total = progress, description, total
        self.done, self._rich_id, self.start = 0, rich_id, time.monotonic()
        self.running: list[str] = []

    def begin(self, part: str) -> None:
        """``part`` has started (shown as running until :meth:`advance` ends it)."""
        with self._progress._lock:
            self.running.append(part)
            self._progress._began(self, part)

    def advance(self, text: str | None = None, n: int = 1, *, ended: str | None = None) -> None:
        """``n`` more parts are done; ``text`` says which (the last finished part). The running
        part ``ended`` (default: ``text``) is no longer running."""
        with self._progress._lock:
            self.done += n
            ended = text if ended is None else ended
            if ended in self.running:
                self.running.remove(ended)
            self._progress._advanced(self, text)

    def running_text(self) -> str:
        return f"running: {', '.join(self.running)}" if self.running else ""

    def eta_s(self) -> float | None:
        if not self.total or not self.done:
            return None
        elapsed = time.monotonic() - self.start
        return elapsed / self.done * (self.total - self.done)


class Progress:
    """The progress display of one command (a context manager)."""

    def __init__(self, *, plain: bool | None = None, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        if plain is None:
            plain = not getattr(self.stream, "isatty", lambda: False)()
        self.plain = plain
        self._lock = threading.RLock()
        self._rich = None
        self.start = time.monotonic()

    def __enter__(self) -> Progress:
        if not self.plain:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                TextColumn("{task.fields[last]}"), TextColumn("{task.fields[running]}"),
                console=Console(file=self.stream), transient=False)
            self._rich.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)
            self._rich = None

    def log(self, text: str) -> None:
        """A line of its own (a result, a log file's path), above any progress display."""
        with self._lock:
            if self._rich is not None:
                self._rich.console.print(text, markup=False, highlight=False)
            else:
                print(text, file=self.stream, flush=True)

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[Task]:
        """A step of ``total`` parts; its line stays when it ends."""
        with self._lock:
            rich_id = self._rich.add_task(description, total=total, last="", running="") \
                if self._rich is not None else None
            task = Task(self, description, total, rich_id)
            if self._rich is None:
                size = f" ({total} parts)" if total else ""
                print(f"{description}{size} ...", file=self.stream, flush=True)
        ended = "stopped after"   # unless the body ends normally
        try:
            yield task
            ended = "done in"
        finally:
            with self._lock:
                if self._rich is not None and total is None:
                    self._rich.update(rich_id, total=task.done, completed=task.done)
                elif self._rich is None:
                    print(f"{description}: {ended} {_clock(time.monotonic() - task.start)}",
                          file=self.stream, flush=True)

    @staticmethod
    def _count(task: Task) -> str:
        return f"{task.done}/{task.total}" if task.total else f"{task.done}"

    def _began(self, task: Task, part: str) -> None:
        if self._rich is not None:
            self._rich.update(task._rich_id, running=task.running_text())
            return
        print(f"[{self._count(task)}] {task.description}: started {part} "
              f"({task.running_text()})", file=self.stream, flush=True)

    def _advanced(self, task: Task, text: str | None) -> None:
        if self._rich is not None:
            self._rich.update(task._rich_id, completed=task.done, last=text or "",
                              running=task.running_text())
            return
        eta = task.eta_s()
        timing = f"elapsed {_clock(time.monotonic() - task.start)}" + \
            (f", ETA {_clock(eta)}" if eta is not None else "") + \
            (f"; {task.running_text()}" if task.running else "")
        print(f"[{self._count(task)}] {task.description}: {text or ''} ({timing})",
              file=self.stream, flush=True)


def plain_progress() -> Progress:
    """Plain lines on stderr: for library calls with no command around them."""
    return Progress(plain=True)
