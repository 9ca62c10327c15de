"""Progress display: plain lines off a terminal (what CI and logs see), a rich display on one."""

import io
import re
import threading

from memwall.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines_off_a_terminal():
    out = io.StringIO()
    with Progress(stream=out) as progress, progress.task("synth x/asap7", 2) as task:
        task.advance("synthesis")
        progress.log("a result line")
        task.advance("timing")
    lines = out.getvalue().splitlines()
    assert lines[0] == "synth x/asap7 (2 parts) ..."
    assert re.fullmatch(r"\[1/2\] synth x/asap7: synthesis \(elapsed 0:00:\d\d, ETA 0:00:\d\d\)",
                        lines[1])
    assert lines[2] == "a result line"
    assert lines[3].startswith("[2/2] synth x/asap7: timing (elapsed ")
    assert lines[4].startswith("synth x/asap7: done in 0:00:")


def test_rich_display_on_a_terminal_and_threads():
    out = _Terminal()
    with Progress(stream=out) as progress, progress.task("modules", 8) as task:
        assert not progress.plain
        workers = [threading.Thread(target=task.advance, args=(f"m{i}",)) for i in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    assert task.done == 8 and "8/8" in out.getvalue()


def test_quiet_forces_plain_lines_on_a_terminal():
    out = _Terminal()
    with Progress(plain=True, stream=out) as progress, progress.task("job", 1) as task:
        task.advance("one")
    assert "[1/1] job: one" in out.getvalue()
