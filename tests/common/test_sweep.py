"""The sweep runner (memwall.sweep): local processes and Ray give the same results; a failing or
dying job is reported while the others finish; exclusive jobs never overlap; ``report --run``
options fail early and clearly."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from memwall.progress import Progress
from memwall.sweep import (
    Job,
    JobFailed,
    LocalProcesses,
    RayCluster,
    SweepError,
    run_sweep,
)

# Jobs: tiny module-level functions (what a worker can import), writing where the caller says.
# (memwall.cli is imported in the tests that use it: each worker imports this module.)

def square(x: int, out: str) -> dict:
    result = {"x": x, "square": x * x}
    Path(out, f"{x}.json").write_text(json.dumps(result))
    print(f"square {x}")   # to the job's log, not over the progress display
    return result


def fail(x: int) -> None:
    raise ValueError(f"job {x} went wrong")


def die(x: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def span(x: int, out: str) -> None:
    start = time.monotonic()
    time.sleep(0.3)
    Path(out, f"{x}.span").write_text(f"{start} {time.monotonic()}")


def sleeper(out: str) -> None:
    Path(out, "started").write_text("")
    try:
        time.sleep(60)
    finally:
        Path(out, "cleaned up").write_text("")


def _square_jobs(out: Path) -> list[Job]:
    return [Job(f"square {x}", square, (x, str(out)), log=out / f"{x}.log") for x in (3, 4)]


def _run(jobs, runner):
    stream = io.StringIO()
    with Progress(plain=True, stream=stream) as progress:
        return run_sweep(jobs, runner, progress=progress, description="test"), stream.getvalue()


def test_local_processes(tmp_path):
    results, shown = _run(_square_jobs(tmp_path), LocalProcesses(workers=2))
    assert results == {"square 3": {"x": 3, "square": 9}, "square 4": {"x": 4, "square": 16}}
    assert json.loads((tmp_path / "4.json").read_text()) == {"x": 4, "square": 16}
    assert (tmp_path / "3.log").read_text() == "square 3\n"
    assert "test (local processes) (2 parts) ..." in shown
    assert "started square 3 (running: square 3)" in shown
    assert "[2/2] test (local processes): " in shown


def test_progress_shows_the_running_parts():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    shown = {}
    for stream in (io.StringIO(), Terminal()):   # plain lines, and the rich display
        with Progress(stream=stream) as progress, progress.task("sweep", 2) as task:
            task.begin("a")
            task.begin("b")
            assert task.running_text() == "running: a, b"
            task.advance("a FAILED", ended="a")
            assert task.running == ["b"]
            task.advance("b")
            assert task.running == [] and task.done == 2
        shown[progress.plain] = stream.getvalue()
    assert shown[True].splitlines()[1:4] == [
        "[0/2] sweep: started a (running: a)", "[0/2] sweep: started b (running: a, b)",
        "[1/2] sweep: a FAILED (elapsed 0:00:00, ETA 0:00:00; running: b)"]
    assert "2/2" in shown[False]


def test_failing_and_dying_jobs_leave_the_others_done(tmp_path):
    jobs = [Job("fails", fail, (1,), log=tmp_path / "fails.log"), Job("dies", die, (2,)),
            *_square_jobs(tmp_path)]
    stream = io.StringIO()
    with pytest.raises(SweepError) as caught, Progress(plain=True, stream=stream) as progress:
        run_sweep(jobs, LocalProcesses(workers=2), progress=progress, description="test")
    err = caught.value
    assert set(err.failures) == {"fails", "dies"}
    assert isinstance(err.failures["fails"], ValueError)
    assert isinstance(err.failures["dies"], JobFailed) and "-9" in str(err.failures["dies"])
    assert err.results == {"square 3": {"x": 3, "square": 9}, "square 4": {"x": 4, "square": 16}}
    assert (tmp_path / "3.json").is_file() and (tmp_path / "4.json").is_file()
    assert "2 of 4 jobs failed: fails (ValueError: job 1 went wrong); dies (JobFailed" in str(err)
    assert "test: fails failed (log: " in stream.getvalue()
    assert "ValueError: job 1 went wrong" in (tmp_path / "fails.log").read_text()   # traceback


def test_exclusive_jobs_never_overlap(tmp_path):
    jobs = [Job(f"span {x}", span, (x, str(tmp_path)), exclusive="same folder") for x in (1, 2)]
    run_sweep(jobs, LocalProcesses(workers=2), progress=Progress(plain=True,
                                                                 stream=io.StringIO()))
    (a0, a1), (b0, b1) = (map(float, (tmp_path / f"{x}.span").read_text().split())
                          for x in (1, 2))
    assert a1 <= b0   # job order kept, one at a time


def test_cancel_stops_jobs_and_runs_their_cleanups(tmp_path):
    """What SIGINT/SIGTERM of the caller does to the running jobs (memwall.boundary)."""
    runner = LocalProcesses(workers=1)
    runner.submit(Job("sleeper", sleeper, (str(tmp_path),)))
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.1)
    start = time.monotonic()
    runner.cancel()
    assert (tmp_path / "cleaned up").exists()
    assert time.monotonic() - start < 10   # stopped by SIGTERM, not by the SIGKILL fallback


def test_jobs_must_pickle():
    with pytest.raises(TypeError, match="job lambda does not pickle"):
        run_sweep([Job("lambda", lambda: 1)], LocalProcesses(workers=1),
                  progress=Progress(plain=True, stream=io.StringIO()))


def test_ray_gives_the_local_results(tmp_path):
    """A two-job sweep on a Ray instance started for it (2 CPUs) returns and writes what the
    local processes do."""
    pytest.importorskip("ray")
    local_dir, ray_dir = tmp_path / "local", tmp_path / "ray"
    local_dir.mkdir()
    ray_dir.mkdir()
    local, _ = _run(_square_jobs(local_dir), LocalProcesses(workers=2))
    on_ray, shown = _run(_square_jobs(ray_dir), RayCluster("local", num_cpus=2))
    assert on_ray == local
    for name in ("3.json", "4.json", "3.log", "4.log"):
        assert (ray_dir / name).read_text() == (local_dir / name).read_text()
    assert "test (Ray (local))" in shown and "[2/2]" in shown


def test_report_jobs_are_one_config_at_a_time(tmp_path):
    from memwall.cli import report_jobs

    jobs = report_jobs([("c1", "asap7"), ("c1", "sky130hd"), ("c2", "asap7")],
                       tmp_path / "build", jobs=2, force=False)
    assert [job.name for job in jobs] == ["c1/asap7", "c1/sky130hd", "c2/asap7"]
    assert [job.exclusive for job in jobs] == ["c1", "c1", "c2"]
    assert all(job.cpus == 2 and Path(job.args[2]).is_absolute() for job in jobs)
    assert jobs[0].log == (tmp_path / "build").resolve() / "logs" / "report" / "c1.asap7.log"


def test_report_ray_without_ray(tmp_path, monkeypatch, capsys):
    from memwall.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)   # `import ray` fails as if not installed
    code = main(["report", "--run", "--ray", "auto", "--build", str(tmp_path / "build"),
                 "--out", str(tmp_path / "reports")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("memwall: error: --ray auto: Ray is not installed") and \
        "pip install -e '.[ray]'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "build").exists()


def test_report_sweep_options_need_run(tmp_path, capsys):
    from memwall.cli import main

    assert main(["report", "--workers", "2", "--build", str(tmp_path)]) == 2
    assert "--ray and --workers go with --run" in capsys.readouterr().err
    assert main(["report", "--run", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


def test_a_bounded_tool_takes_its_children_with_it(tmp_path):
    """Past its bound a tool is killed with every process of its session: a grandchild in its
    group, and one in a process group of its own, as SBY starts each solver (either would
    otherwise run on after an ``unknown`` and slow every later job)."""
    from memwall.sweep import run_bounded

    pid_file = tmp_path / "child.pid"
    rc, output = run_bounded([sys.executable, "-c",
                              "import os, subprocess, sys, time; "
                              "sleep = [sys.executable, '-c', 'import time; time.sleep(60)']; "
                              "p = subprocess.Popen(sleep); "
                              "q = subprocess.Popen(sleep, preexec_fn=os.setpgrp, "
                              "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                              f"open({str(pid_file)!r}, 'w').write(f'{{p.pid}} {{q.pid}}'); "
                              "print('started', flush=True); time.sleep(60)"],
                             cwd=tmp_path, timeout_s=3)
    assert rc is None and output.startswith("started")
    time.sleep(0.2)
    for pid in pid_file.read_text().split():
        stat = Path(f"/proc/{pid}/stat")
        # Gone, or a zombie no one has reaped yet (killed; a container's init may not reap).
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", pid
    assert run_bounded([sys.executable, "-c", "print('done')"], cwd=tmp_path) == (0, "done\n")
