"""One runner for sweeps of independent jobs: local processes, or a Ray cluster.

A :class:`Job` is a picklable callable with its arguments, a name for the progress display and
the error messages, the CPUs it keeps busy and, optionally, an ``exclusive`` key (jobs with the
same key never run at the same time: they write the same folder) and a log file (the job's
stdout and stderr, its own output included, go there rather than over the progress display).
:func:`run_sweep` runs a list of them through a backend and returns ``{name: value}``:

* :class:`LocalProcesses` (the default): each job in a fresh process (``spawn``), at most
  ``workers`` at once; by default as many as the CPUs allow, given each job's ``cpus``.
* :class:`RayCluster`: the same jobs as Ray tasks (``num_cpus`` = the job's ``cpus``) on a
  cluster (``address``: ``auto``, ``host:port``) or on a Ray instance started for the sweep
  (``local``). Ray is an optional extra: ``pip install -e '.[ray]'``.

Both are context managers (re-entrant: enter one early to fail before long work, e.g. on an
unreachable cluster) and take the same path: the caller schedules (so ``exclusive`` holds on
any cluster), a job that fails is reported while the others run on, and ``on_result`` sees
every finished job's value in the caller, so it can check or write what the job wrote. A job
writes its outputs where its arguments say; on a multi-node cluster those paths must be on a
filesystem every node mounts at the same path, and memwall must be installed on every node (the
same version, as on the caller).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwall.command import UsageError
from memwall.progress import Progress, plain_progress

__all__ = ["Job", "JobFailed", "SweepError", "LocalProcesses", "RayCluster", "backend",
           "run_sweep", "available_cpus", "run_bounded", "RAY_INSTALL"]

#: How to get Ray (the ``ray`` extra of pyproject.toml), as error messages name it.
RAY_INSTALL = ".venv/bin/pip install -e '.[ray]'"


def run_bounded(cmd: list[str], *, cwd: Path, env: dict | None = None,
                timeout_s: float | None = None, stdout=subprocess.PIPE
                ) -> tuple[int | None, str | None]:
    """Run a tool in its own process group: ``(returncode, output)``, stderr merged into
    stdout (``output`` is None when ``stdout`` is a file); ``(None, output)`` past
    ``timeout_s``. The whole group (the tool's own children: SBY's solvers, pytest's
    simulator) is killed on a timeout and when the caller is stopped, so that none outlives
    its job and takes the CPUs of the next."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, output
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, proc.communicate()[0]
    except BaseException:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the tool and every process of its session: SBY starts each solver in a process
    group of its own, which killing the tool's group alone would leave running."""
    kills = [(os.killpg, proc.pid)] + [(os.kill, pid) for pid in _session_members(proc.pid)]
    for kill, pid in kills:
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _session_members(session: int) -> list[int]:
    """The processes of ``session`` (Linux' /proc; none found elsewhere)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:          # ended while listed
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == session:
            members.append(int(stat.parent.name))
    return members


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Job:
    """One job of a sweep.

    Parameters
    ----------
    name : str
        Unique within the sweep; the progress display and error messages show it.
    fn, args, kwargs :
        What runs: ``fn(*args, **kwargs)``. All three must pickle (module-level functions,
        plain data), on every backend; so must the value returned.
    cpus : int
        CPUs the job keeps busy (a flow run: its ``--jobs`` Yosys processes); sizes the
        default number of local workers and is the Ray task's ``num_cpus``.
    exclusive : str, optional
        Jobs with the same key never run at the same time (they write the same folder).
    log : Path, optional
        The job's stdout and stderr (file descriptors 1 and 2, so child tools' output too),
        and the traceback of a failure; overwritten when the job starts.
    """

    name: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    cpus: int = 1
    exclusive: str | None = None
    log: Path | None = None


class JobFailed(RuntimeError):
    """A job's error that could not be sent back as itself (it does not pickle), or a worker
    that died without an answer (killed, out of memory)."""


class SweepError(RuntimeError):
    """Some jobs failed; every other job ran to the end. ``failures``: ``{name: exception}``;
    ``results``: the values of the jobs that succeeded."""

    def __init__(self, description: str, total: int, failures: dict[str, BaseException],
                 results: dict[str, Any]):
        self.failures, self.results = failures, results
        listed = "; ".join(f"{name} ({_one_line(exc)})" for name, exc in failures.items())
        super().__init__(f"{description}: {len(failures)} of {total} jobs failed: {listed}. "
                         f"The other {total - len(failures)} finished and kept their results.")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


@contextlib.contextmanager
def _output_to(log: Path | None) -> Iterator[None]:
    """File descriptors 1 and 2 (Python's and child tools' output) go to ``log`` meanwhile."""
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(log, "w") as f:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict, log: Path | None) -> Any:
    """Run one job in its worker process; a failure's traceback goes to the job's log."""
    with _output_to(log):
        try:
            return fn(*args, **kwargs)
        except Exception:
            if log is not None:
                traceback.print_exc()
            raise


# --- local processes ---------------------------------------------------------------------------

def _child(conn, fn, args, kwargs, log) -> None:
    """A local worker process: run the job, send back ("ok", value) or ("error", exception)."""
    from memwall.boundary import signals_raise

    with signals_raise():   # SIGTERM from the caller: cleanups run, child tools are killed
        try:
            message = ("ok", _call(fn, args, kwargs, log))
        except Exception as exc:
            message = ("error", exc)
        except KeyboardInterrupt as exc:   # the sweep was cancelled (or Ctrl-C): no traceback
            conn.close()
            sys.exit(128 + getattr(exc, "signum", signal.SIGINT))
        try:
            conn.send(message)
        except Exception as exc:   # the value or the exception does not pickle
            what = _one_line(message[1]) if message[0] == "error" else "its value"
            conn.send(("error", JobFailed(f"could not send back {what}: {_one_line(exc)}")))
        conn.close()


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        how = f"{signal.Signals(-code).name}" + \
            (", as from the out-of-memory killer" if -code == signal.SIGKILL else "")
        return f"the worker process died without an answer (exit status {code}: {how})"
    return f"the worker process died without an answer (exit status {code})"


class LocalProcesses:
    """Each job in a fresh local process (``spawn``: no state inherited from the caller, and
    a worker's peak memory is its own job's). ``workers``: jobs at once (default: the CPUs
    available divided by the largest job's ``cpus``, at least 1)."""

    name = "local processes"

    def __init__(self, workers: int | None = None):
        self.workers = workers
        self._ctx = multiprocessing.get_context("spawn")
        self._running: dict[Any, tuple] = {}

    def __enter__(self) -> LocalProcesses:
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()

    def slots(self, jobs: Sequence[Job]) -> int:
        if self.workers is not None:
            return self.workers
        return max(1, available_cpus() // max((job.cpus for job in jobs), default=1))

    def submit(self, job: Job):
        receive, send = self._ctx.Pipe(duplex=False)
        process = self._ctx.Process(target=_child, name=f"memwall-sweep {job.name}",
                                    args=(send, job.fn, job.args, job.kwargs, job.log))
        process.start()
        send.close()   # the child holds the other copy: EOF when it exits
        self._running[receive] = (process, job)
        return receive

    def wait(self, handles: list) -> list[tuple[Any, str, Any]]:
        """Block until a job ends; ``(handle, "ok" | "error", value | exception)`` for each."""
        finished = []
        for receive in multiprocessing.connection.wait(handles):
            process, job = self._running.pop(receive)
            try:
                status, value = receive.recv()
            except (EOFError, OSError):   # it died without an answer
                process.join()
                status, value = "error", JobFailed(_died(process.exitcode))
            receive.close()
            process.join()
            finished.append((receive, status, value))
        return finished

    def cancel(self) -> None:
        """Stop every running job: SIGTERM (its cleanups run), then SIGKILL after 10 s.

        SIGTERM is sent again every second: the kernel may hand a process-wide signal to
        another thread (numpy's OpenBLAS threads), which does not wake the main thread from a
        blocking wait (for Yosys); the next one reaches it, and it acts on the first."""
        processes = [process for process, _ in self._running.values()]
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            alive = [process for process in processes if process.is_alive()]
            if not alive:
                break
            for process in alive:
                process.terminate()
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=1.0)
        for receive, (process, _) in list(self._running.items()):
            if process.is_alive():
                process.kill()
            process.join()
            receive.close()
        self._running.clear()


def _in_fresh_process(fn: Callable[..., Any], args: tuple, kwargs: dict,
                      log: Path | None) -> Any:
    """A Ray task: the job in a fresh process, as :class:`LocalProcesses` runs it. A Ray
    worker is reused from task to task, and Ray's cancel cannot stop a blocking call (a wait
    for Yosys); here the job's peak memory is its own and a cancel (KeyboardInterrupt, which
    lands in this polling loop) stops the job's process and its tools."""
    with LocalProcesses(workers=1) as local:
        handle = local.submit(Job("ray task", fn, args, kwargs, log=log))
        while not multiprocessing.connection.wait([handle], timeout=0.25):
            pass
        [(_, status, value)] = local.wait([handle])
    if status == "error":
        raise value
    return value


# --- Ray ---------------------------------------------------------------------------------------

def _check_reachable(address: str, timeout_s: float = 10.0) -> None:
    """A ``host:port`` that nobody answers fails here in seconds; Ray itself would retry the
    connection for minutes."""
    if address in ("local", "auto") or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except ValueError:
        raise UsageError(f"--ray {address}: not host:port, 'auto' or 'local'") from None
    except OSError as exc:
        raise UsageError(f"--ray {address}: cannot connect ({exc.strerror or exc})") from None


class RayCluster:
    """Jobs as Ray tasks. ``address``: ``local`` starts a Ray instance on this machine for the
    sweep (``num_cpus``: its CPUs, default all available) and stops it afterwards; ``auto``
    (or ``RAY_ADDRESS``) connects to the cluster this machine is a node of, ``host:port`` to
    the one whose head is there (``ray://host:port``, Ray Client, also needs ``ray[client]``).
    An already initialised Ray (``ray.init`` by the caller) is used as it is.

    ``workers``: jobs submitted at once (default: the cluster's CPUs divided by the largest
    job's ``cpus``); Ray places each task on a node with ``cpus`` free CPUs (a job wanting
    more than the largest node has asks for that node's CPUs instead).
    """

    name = "Ray"

    def __init__(self, address: str = "auto", *, workers: int | None = None,
                 num_cpus: int | None = None):
        try:
            import ray
        except ImportError:
            raise UsageError(f"--ray {address}: Ray is not installed; install it with "
                             f"{RAY_INSTALL}") from None
        _check_reachable(address)
        self._ray, self.address, self.workers, self.num_cpus = ray, address, workers, num_cpus
        self.name = f"Ray ({address})"
        self._started, self._depth = False, 0
        self._remote = None
        # memwall's own settings (MEMWALL_PDK_ROOT, MEMWALL_CONFIG_DIR, ...) go with each task:
        # a cluster's workers do not inherit the caller's environment.
        self._env = {k: v for k, v in os.environ.items() if k.startswith("MEMWALL_")}
        self._running: dict[Any, Job] = {}

    def __enter__(self) -> RayCluster:
        self._depth += 1   # re-entrant: a caller may connect before the sweep starts
        if self._depth > 1:
            return self
        ray = self._ray
        if not ray.is_initialized():
            options = dict(include_dashboard=False, log_to_driver=False,
                           logging_level=logging.ERROR)
            # ray.init takes over SIGTERM (and keeps it after shutdown); memwall's handler
            # (memwall.boundary) must stay, so that SIGTERM cancels the tasks and exits 143.
            sigterm = signal.getsignal(signal.SIGTERM)
            try:
                if self.address == "local":
                    ray.init(address="local", num_cpus=self.num_cpus or available_cpus(),
                             **options)
                    # Its workers see the caller's import path, as spawned processes do.
                    self._env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
                else:
                    ray.init(address=self.address, **options)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                self._depth = 0
                raise UsageError(f"--ray {self.address}: cannot start or reach Ray: "
                                 f"{_one_line(exc)}") from None
            finally:
                if threading.current_thread() is threading.main_thread() and sigterm is not None:
                    signal.signal(signal.SIGTERM, sigterm)
            self._started = True
        self._remote = ray.remote(max_retries=0)(_in_fresh_process)
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        self.cancel()
        if self._started:
            self._ray.shutdown()
            self._started = False

    def _node_cpus(self) -> list[float]:
        return [node["Resources"].get("CPU", 0.0) for node in self._ray.nodes() if node["Alive"]]

    def slots(self, jobs: Sequence[Job]) -> int:
        if self.workers is not None:
            return self.workers
        largest = max((job.cpus for job in jobs), default=1)
        return max(1, int(sum(self._node_cpus())) // largest)

    def submit(self, job: Job):
        cpus = min(job.cpus, max(self._node_cpus(), default=1.0)) or 1
        ref = self._remote.options(num_cpus=cpus, name=job.name,
                                   runtime_env={"env_vars": self._env}).remote(
            job.fn, job.args, job.kwargs, job.log)
        self._running[ref] = job
        return ref

    def wait(self, handles: list) -> list[tuple[Any, str, Any]]:
        ray = self._ray
        done: list = []
        while not done:
            # Poll, and sleep in Python: a signal during a blocking ray.wait comes out as a
            # bare KeyboardInterrupt, losing which signal it was (SIGTERM must exit 143).
            done, _ = ray.wait(handles, num_returns=1, timeout=0)
            if not done:
                time.sleep(0.25)
        finished = []
        for ref in done:
            self._running.pop(ref, None)
            try:
                finished.append((ref, "ok", ray.get(ref)))
            except ray.exceptions.RayTaskError as exc:   # the job raised: its own exception
                cause = getattr(exc, "cause", None)
                finished.append((ref, "error", cause if cause is not None else exc))
            except ray.exceptions.RayError as exc:   # a worker or node died
                finished.append((ref, "error", JobFailed(_one_line(exc))))
        return finished

    def cancel(self) -> None:
        """Stop every running job: KeyboardInterrupt in the task, which stops the job's
        process (:func:`_in_fresh_process`); a task still running after 10 s is killed."""
        refs = list(self._running)
        self._running.clear()
        if not refs:
            return
        for ref in refs:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=False)
        with contextlib.suppress(Exception):
            self._ray.wait(refs, num_returns=len(refs), timeout=10.0)
        for ref in refs:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)


def backend(ray: str | None = None, workers: int | None = None) -> LocalProcesses | RayCluster:
    """The backend of ``--ray ADDRESS`` (Ray; :class:`UsageError` when it is not installed) or
    else of ``--workers N`` (local processes)."""
    if ray is not None:
        return RayCluster(ray, workers=workers)
    return LocalProcesses(workers)


# --- the sweep ---------------------------------------------------------------------------------

def run_sweep(jobs: Sequence[Job], runner: LocalProcesses | RayCluster | None = None, *,
              progress: Progress | None = None, description: str = "sweep",
              on_result: Callable[[Job, Any], None] | None = None) -> dict[str, Any]:
    """Run every job; returns ``{job.name: value}`` in the order of ``jobs``.

    Jobs start in order, as many at once as ``runner`` has slots, skipping (for now) one whose
    ``exclusive`` key a running job holds. ``progress`` shows done/total, the last job to end
    and the running ones. ``on_result(job, value)`` runs in the caller as each job ends (an
    exception there counts as that job's failure). A failed job is logged at once with its
    error; the others run on; then :class:`SweepError` names every failure.
    """
    runner = runner if runner is not None else LocalProcesses()
    progress = progress or plain_progress()
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"{description}: job names must be unique: {names}")
    for job in jobs:   # the same rule on every backend (Ray's cloudpickle would take more)
        try:
            pickle.dumps((job.fn, job.args, job.kwargs))
        except Exception as exc:
            raise TypeError(f"{description}: job {job.name} does not pickle: {exc}") from None
    results: dict[str, Any] = {}
    failures: dict[str, BaseException] = {}
    with runner, progress.task(f"{description} ({runner.name})", len(jobs)) as task:
        slots = runner.slots(jobs)
        pending, running = list(jobs), {}
        while pending or running:
            held = {job.exclusive for job in running.values()}
            for job in list(pending):
                if len(running) >= slots:
                    break
                if job.exclusive is not None and job.exclusive in held:
                    continue
                pending.remove(job)
                running[runner.submit(job)] = job
                held.add(job.exclusive)
                task.begin(job.name)
            for handle, status, value in runner.wait(list(running)):
                job = running.pop(handle)
                if status == "ok" and on_result is not None:
                    try:
                        on_result(job, value)
                    except Exception as exc:
                        status, value = "error", exc
                if status == "ok":
                    results[job.name] = value
                    task.advance(job.name)
                else:
                    failures[job.name] = value
                    log = f" (log: {job.log})" if job.log is not None else ""
                    progress.log(f"{description}: {job.name} failed{log}: "
                                 f"{type(value).__name__}: {value}")
                    task.advance(f"{job.name} FAILED", ended=job.name)
    if failures:
        raise SweepError(description, len(jobs),
                         {name: failures[name] for name in names if name in failures},
                         {name: results[name] for name in names if name in results})
    return {name: results[name] for name in names}
