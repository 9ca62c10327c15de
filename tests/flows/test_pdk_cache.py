"""``memwall.flows.pdk``: a Liberty cache keyed by each source, filled only with checked files;
``memwall.flows.opensta2019.tcl_word``: paths that survive Tcl.

Fake PDK roots in the ORFS layout (a few tiny libraries), no synthesis: fast.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memwall import paths
from memwall.flows import pdk as pdk_module
from memwall.flows.errors import PdkError
from memwall.flows.liberty import Liberty
from memwall.flows.opensta2019 import tcl_word
from memwall.flows.pdk import PLATFORMS, find_pdk
from memwall.inputs import InputError

# File names matching the asap7 globs of PLATFORMS.
AO = "lib/NLDM/asap7sc7p5t_AO_RVT_TT_nldm_211120.lib.gz"
INVBUF = "lib/NLDM/asap7sc7p5t_INVBUF_RVT_TT_nldm_220122.lib.gz"
RAM = "lib/NLDM/fakeram7_64x21.lib"


def liberty_text(name: str, *, time_unit: str | None = '"1ps"', cell: str = "INVx1") -> str:
    unit = f"  time_unit : {time_unit};\n" if time_unit else ""
    return (f"/* a fake library */\nlibrary ({name}) {{\n{unit}"
            f"  capacitive_load_unit (1, ff);\n"
            f"  cell ({cell}_{name}) {{\n    area : 0.1;\n"
            f"    pin (A) {{ direction : input; capacitance : 0.5; }}\n"
            f"    pin (Y) {{ direction : output; function : \"!A\"; }}\n  }}\n}}\n")


def fake_root(base: Path, tag: str, files: dict[str, bytes] | None = None) -> Path:
    """A MEMWALL_PDK_ROOT holding asap7 with two cell families and one macro."""
    root = base / tag
    files = files or {}
    defaults = {AO: gzip.compress(liberty_text(f"ao_{tag}").encode()),
                INVBUF: gzip.compress(liberty_text(f"invbuf_{tag}", cell="BUFx2").encode()),
                RAM: liberty_text("fakeram7_64x21", time_unit='"1ns"',
                                  cell="fakeram7_64x21").encode()}
    for rel, data in {**defaults, **files}.items():
        path = root / "asap7" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def snapshot(cache: Path) -> dict[str, tuple[str, int]]:
    """Every file of the cache: relative path -> (sha256, mtime in ns)."""
    return {str(p.relative_to(cache)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                        p.stat().st_mtime_ns)
            for p in sorted(cache.rglob("*")) if p.is_file()}


def use_root(monkeypatch, root: Path) -> None:
    monkeypatch.setenv("MEMWALL_PDK_ROOT", str(root))


def test_fake_root_matches_the_platform_globs(tmp_path, monkeypatch):
    cell_globs, macro_glob = PLATFORMS["asap7"]
    root = fake_root(tmp_path, "good")
    assert all(any((root / "asap7").glob(g)) for g in cell_globs)
    use_root(monkeypatch, root)
    pdk = find_pdk("asap7", cache_root=tmp_path / "cache")
    assert len(pdk.cell_liberty) == 2 and pdk.time_unit_ps == 1.0
    assert {m.name for m in pdk.macros} == {"fakeram7_64x21"}
    assert set(Liberty(pdk.merged_liberty).cell_names) == {"INVx1_ao_good", "BUFx2_invbuf_good"}
    assert pdk.merged_liberty.name == "asap7_merged.lib"
    for path in (*pdk.cell_liberty, pdk.merged_liberty, pdk.macros[0].liberty):
        assert path.parent.parent == tmp_path / "cache" / "asap7"
        assert len(path.parent.name) == 16   # the key folder
    assert issubclass(PdkError, InputError)


def test_garbage_gzip_never_touches_a_good_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    good = fake_root(tmp_path, "good")
    use_root(monkeypatch, good)
    before = find_pdk("asap7", cache_root=cache)
    files = snapshot(cache)

    bad = fake_root(tmp_path, "bad", {AO: b"this is not gzip at all\n" * 10})
    garbage = bad / "asap7" / AO
    os.utime(garbage, (946684800, 946684800))   # older than the cache: still read
    use_root(monkeypatch, bad)
    with pytest.raises(PdkError) as err:
        find_pdk("asap7", cache_root=cache)
    message = str(err.value)
    assert str(garbage) in message and "not a gzip file" in message
    assert "MEMWALL_PDK_ROOT" in message and str(bad) in message
    assert snapshot(cache) == files   # nothing replaced, removed or added (no temp files)

    use_root(monkeypatch, good)
    after = find_pdk("asap7", cache_root=cache)
    assert after == before
    assert snapshot(cache) == files


def test_another_root_gets_its_own_entries(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    use_root(monkeypatch, fake_root(tmp_path, "one"))
    one = find_pdk("asap7", cache_root=cache)
    use_root(monkeypatch, fake_root(tmp_path, "two"))
    two = find_pdk("asap7", cache_root=cache)
    assert set(one.cell_liberty).isdisjoint(two.cell_liberty)
    assert one.merged_liberty != two.merged_liberty
    assert "INVx1_ao_one" in Liberty(one.merged_liberty)
    assert "INVx1_ao_two" in Liberty(two.merged_liberty)
    # Back to the first root, whose entries are older than the second's: still its own.
    use_root(monkeypatch, tmp_path / "one")
    assert find_pdk("asap7", cache_root=cache) == one


def test_edited_source_gets_a_new_entry(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    root = fake_root(tmp_path, "root")
    use_root(monkeypatch, root)
    first = find_pdk("asap7", cache_root=cache)
    (root / "asap7" / AO).write_bytes(gzip.compress(liberty_text("edited").encode()))
    os.utime(root / "asap7" / AO, (946684800, 946684800))   # even with an older mtime
    second = find_pdk("asap7", cache_root=cache)
    assert second.cell_liberty[0] != first.cell_liberty[0]
    assert "INVx1_edited" in Liberty(second.merged_liberty)
    assert first.cell_liberty[0].exists()


def test_real_pdk_and_fake_root_differ(tmp_path, monkeypatch):
    real = paths.REPO.parent / "shared" / "pdk"
    if not (real / "sky130hd").is_dir():
        pytest.skip(f"no PDK at {real}")
    cache = tmp_path / "cache"
    use_root(monkeypatch, real)
    real_pdk = find_pdk("sky130hd", cache_root=cache)
    fake = tmp_path / "fake" / "sky130hd" / "lib" / "sky130_fd_sc_hd__tt_025C_1v80.lib.gz"
    fake.parent.mkdir(parents=True)
    fake.write_bytes(gzip.compress(liberty_text("fake130", time_unit='"1ns"').encode()))
    use_root(monkeypatch, tmp_path / "fake")
    fake_pdk = find_pdk("sky130hd", cache_root=cache)
    assert real_pdk.merged_liberty != fake_pdk.merged_liberty
    assert real_pdk.merged_liberty.name == fake_pdk.merged_liberty.name
    assert Liberty(fake_pdk.merged_liberty).cell_names == ["INVx1_fake130"]
    assert len(Liberty(real_pdk.merged_liberty).cell_names) > 100
    use_root(monkeypatch, real)
    assert find_pdk("sky130hd", cache_root=cache) == real_pdk


def _gz(data: bytes) -> bytes:
    """gzip with a fixed header time: test ids (and xdist's collection) must not vary."""
    return gzip.compress(data, mtime=0)


@pytest.mark.parametrize("data, fault", [
    (_gz(liberty_text("nounit", time_unit=None).encode()), "no time_unit"),
    (_gz(liberty_text("x").encode())[:-40], "truncated or corrupt gzip"),
    (_gz(liberty_text("x").encode())[:30], "truncated or corrupt gzip"),
    (_gz(liberty_text("x").encode()[:-60]), "unbalanced braces"),
    (_gz(liberty_text("x", time_unit='"1 fortnight"').encode()), "time_unit"),
    (_gz(b"library (empty) {\n  time_unit : \"1ps\";\n}\n"), "no cells"),
    (_gz(b"cell (x) { }\n"), "not a Liberty library"),
    (_gz(b"library (x\n"), "not a usable Liberty library"),
    (_gz(b"\x00\x01\x02binary"), "NUL bytes"),
    (b"", "not a usable Liberty library"),
], ids=lambda v: v if isinstance(v, str) else "data")
def test_bad_sources_are_refused(tmp_path, monkeypatch, data, fault):
    cache = tmp_path / "cache"
    use_root(monkeypatch, fake_root(tmp_path, "bad", {AO: data}))
    with pytest.raises(PdkError) as err:
        find_pdk("asap7", cache_root=cache)
    assert fault in str(err.value)
    assert str(tmp_path / "bad" / "asap7" / AO) in str(err.value)
    assert not [p for p in cache.rglob("*") if p.is_file()]   # nothing published, no temp


def test_gzip_bomb_is_refused_while_unzipping(tmp_path, monkeypatch):
    monkeypatch.setattr(pdk_module, "MAX_LIBERTY_BYTES", 1 << 20)
    big = liberty_text("big").replace("/* a fake library */", "/*" + " " * (3 << 20) + "*/")
    use_root(monkeypatch, fake_root(tmp_path, "bomb", {AO: gzip.compress(big.encode())}))
    with pytest.raises(PdkError, match="unzips to more than 1048576 bytes"):
        find_pdk("asap7", cache_root=tmp_path / "cache")


def test_latin1_source_is_stored_as_utf8(tmp_path, monkeypatch):
    text = liberty_text("latin").replace("a fake library", "caf\xe9 \xb5m")
    use_root(monkeypatch, fake_root(tmp_path, "latin",
                                    {AO: gzip.compress(text.encode("latin-1"))}))
    pdk = find_pdk("asap7", cache_root=tmp_path / "cache")
    assert pdk.cell_liberty[0].read_text(encoding="utf-8") == text
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    use_root(monkeypatch, fake_root(tmp_path, "root"))

    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pdk_module, "_check_liberty", interrupt)
    with pytest.raises(KeyboardInterrupt):
        find_pdk("asap7", cache_root=cache)
    assert not [p for p in cache.rglob("*") if p.is_file()]
    monkeypatch.undo()
    use_root(monkeypatch, tmp_path / "root")
    assert find_pdk("asap7", cache_root=cache).cell_liberty[0].exists()


def test_unreadable_source_names_the_file(tmp_path, monkeypatch):
    root = fake_root(tmp_path, "root")
    (root / "asap7" / AO).unlink()
    (root / "asap7" / AO).mkdir()   # a folder where a file should be
    use_root(monkeypatch, root)
    with pytest.raises(PdkError, match="cannot be read"):
        find_pdk("asap7", cache_root=tmp_path / "cache")


# --- tcl_word -------------------------------------------------------------------------------

WORDS = [
    "/plain/path/asap7_merged.lib",
    "/with space/a b.lib",
    "/br{ace}/x.lib",
    "/un{balanced/x.lib",
    "/close}first{/x.lib",
    "/back\\slash/x.lib",
    "/trailing\\",
    "\\\nnext",
    "new\nline",
    "$HOME[exec ls]",
    '"quoted" ;semi #hash',
    "{*}expand",
    "tab\there",
    "x\\n\\x41\\u0041",
    "\\{",
    "{",
    "}",
    "",
    "caf\xe9 \u00b5m",
]


def test_tcl_word_keeps_plain_paths_braced():
    assert tcl_word("/a/b.lib") == "{/a/b.lib}"
    assert tcl_word(Path("/a b/c.lib")) == "{/a b/c.lib}"
    assert tcl_word("/br{ace}/x") == "{/br{ace}/x}"
    assert "\n" not in "".join(tcl_word(w) for w in WORDS)   # one line each


def _tcl_interpreters() -> list[list[str]]:
    found = []
    if shutil.which("tclsh"):
        found.append(["tclsh"])
    if shutil.which("sta"):
        found.append(["sta", "-no_init", "-exit"])
    return found


@pytest.mark.tool   # one of the interpreters is OpenSTA's
@pytest.mark.parametrize("interpreter", _tcl_interpreters() or [None],
                         ids=lambda i: i[0] if i else "none")
def test_tcl_word_round_trips(tmp_path, interpreter):
    if interpreter is None:
        pytest.skip("neither tclsh nor OpenSTA is installed")
    lines = []
    for word in WORDS:   # every character as its code point: no encoding in between
        lines += [f"set w {tcl_word(word)}",
                  'set out {}',
                  'foreach c [split $w ""] { append out [format %06x [scan $c %c]] }',
                  'puts "W:$out"']
    lines.append('puts "ENC:[encoding system]"')
    script = tmp_path / "words.tcl"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = subprocess.run([*interpreter, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = [line[2:] for line in proc.stdout.splitlines() if line.startswith("W:")]
    encoding = [line[4:] for line in proc.stdout.splitlines() if line.startswith("ENC:")]
    # OpenSTA reads the (UTF-8) script in iso8859-1 and writes file names back in it: the
    # characters differ beyond ASCII but the bytes that reach the file system are the same.
    assert encoding in (["utf-8"], ["iso8859-1"])

    def as_read(word: str) -> str:
        return word if encoding == ["utf-8"] else word.encode("utf-8").decode("latin-1")

    assert got == ["".join(f"{ord(c):06x}" for c in as_read(word)) for word in WORDS]
