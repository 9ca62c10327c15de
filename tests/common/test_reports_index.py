"""reports/README.md indexes every report: each file under reports/ is listed with the command
that writes it, and each listed file exists."""

import re

from memwall import paths

INDEX = paths.REPORTS / "README.md"


def _listed() -> set[str]:
    listed = set()
    for line in INDEX.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("| report") and "---" not in line:
            listed |= set(re.findall(r"`([^`]+)`", line.split(" | ")[0]))
    return listed


def test_every_report_file_is_indexed_and_every_indexed_file_exists():
    files = {p.relative_to(paths.REPORTS).as_posix() for p in paths.REPORTS.rglob("*")
             if p.is_file() and p != INDEX}
    listed = _listed()
    patterns = {name for name in listed if "<" in name}
    expanded = {f for f in files for pattern in patterns
                if re.fullmatch(re.sub(r"<[^>]+>", "[^/]+", re.escape(pattern)
                                       .replace(r"\<", "<").replace(r"\>", ">")), f)}
    assert files - (listed | expanded) == set(), "reports not in reports/README.md"
    assert (listed - patterns) - files == set(), "reports/README.md lists missing files"
    assert expanded, "the pattern rows match nothing"
