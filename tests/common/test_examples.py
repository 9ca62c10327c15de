"""The shipped example inputs and the README's quick starts: the files in examples/ hold what
``python -m memwall.examples`` writes, and every quick-start block of the README runs verbatim
(from a folder holding only the checkout's .venv, configs and examples), its golden and RTL
outputs equal where the family's RTL is exact."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from memwall import examples, paths

README = (paths.REPO / "README.md").read_text()
BLOCKS = dict(re.findall(r"^### Quick start: (\w[\w-]*)[^\n]*\n\n```sh\n(.*?)```", README,
                         re.S | re.M))


def test_the_examples_are_what_their_generator_writes():
    for name, want in examples.arrays().items():
        with np.load(examples.EXAMPLES / name) as got:
            assert set(got.files) == set(want), name
            for key, value in want.items():
                assert got[key].dtype == np.asarray(value).dtype, (name, key)
                assert np.array_equal(got[key], value), (name, key)


def test_every_family_has_a_quick_start():
    from memwall.family import families

    names = {"d-PLENA": "dplena", "SHIELD": "shield", "eDRAM": "pim", "rDXE": "rdxe",
             "KVNAND": "kvnand"}
    assert {names[b] for b in BLOCKS} == set(families())


@pytest.mark.sim
@pytest.mark.parametrize("family", sorted(BLOCKS))
def test_the_quick_start_runs_verbatim(family, tmp_path):
    for link in (".venv", "configs", "examples"):
        (tmp_path / link).symlink_to(paths.REPO / link)
    run = subprocess.run(["bash", "-e", "-c", BLOCKS[family]], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    goldens = sorted(tmp_path.glob("*_golden.*"))
    assert goldens and (tmp_path / "build").is_dir()
    for golden in goldens:
        rtl = golden.with_name(golden.name.replace("_golden", "_run"))
        if not rtl.exists():
            continue
        if golden.suffix == ".json":
            want, got = json.loads(golden.read_text()), json.loads(rtl.read_text())
            assert set(want) | {"rtl", "model"} == set(got)
            continue
        with np.load(golden) as want, np.load(rtl) as got:
            assert set(want.files) <= set(got.files)
            for key in want.files:
                if want[key].dtype.kind in "iub":    # the RTL's exact outputs
                    assert np.array_equal(want[key], got[key]), (golden.name, key)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readmes_links_resolve():
    """Every link of README.md, docs/*.md and reports/paper_vs_ours.md: an anchor of a heading
    in the same file, or a file relative to the linking one."""
    for doc in [paths.REPO / "README.md", *sorted((paths.REPO / "docs").glob("*.md")),
                paths.REPORTS / "paper_vs_ours.md"]:
        text = doc.read_text()
        anchors = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
        for target in re.findall(r"\]\(#([^)]+)\)", text):
            assert target in anchors, (doc.name, target)
        for target in re.findall(r"\]\(([^)#:]+)\)", text):
            assert (doc.parent / target).exists(), (doc.name, target)
