"""PDK discovery in the OpenROAD-flow-scripts platform layout, and a Liberty cache for the tools.

``MEMWALL_PDK_ROOT`` (default ``<repo>/../shared/pdk``) holds ``<platform>/lib/...`` as in ORFS.
The WASM Yosys has no zlib and sees only files below its working directory, and Debian's OpenSTA
reads no ``.lib.gz``; so every Liberty file is unzipped once into a cache folder, and the
standard-cell families are also merged into one file for tools that take a single ``-liberty``.
The PDK files themselves are never copied into the repo.

Cache layout (default ``build/pdk``, or ``cache_root``)::

    <platform>/<key>/<name>.lib               one source, unzipped (UTF-8 text)
    <platform>/<key>/opensta2019/<name>.lib   its OpenSTA view (memwall.flows.opensta2019)
    <platform>/<mkey>/<platform>_merged.lib   the standard-cell sources merged into one library

``key`` is the first 16 hex digits of ``sha256(CACHE_VERSION NUL <resolved source path> NUL
<sha256 of the source bytes>)``; ``mkey`` the same digest of ``merged`` and the inputs' keys, in
order. An entry is therefore never stale: another root, another file or the same file edited
gives another folder, and an entry, once written, is never rewritten or removed (delete
``build/pdk`` to reclaim the space; files of the older flat layout there are no longer read).
``name`` is the source's name without ``.gz``, any character other than ``[A-Za-z0-9._-]``
replaced by ``_``, so the names that reach Yosys scripts need no quoting.

Every source is checked before its entry is published: it decompresses (``.gz``) to at most
:data:`MAX_LIBERTY_BYTES`, is text (UTF-8, else read as Latin-1 and stored as UTF-8), parses as
a Liberty ``library`` whose braces close at its end, and a standard-cell library states its
``time_unit`` and holds cells. A source that fails raises :class:`PdkError` naming the file and
the fault. Entries are written to a temporary file unique to the process and thread in the
platform folder and published with :func:`os.replace` into their key folder (made only then);
the temporary file is removed on any exception, so a bad source leaves nothing behind.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import os
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memwall import paths

from .errors import LibertyError, PdkError
from .liberty import CellLibrary, Liberty, blank_comments, cell_library, group_end
from .wire_load import WireLoad

__all__ = ["Pdk", "Macro", "PLATFORMS", "CORNERS", "MAX_LIBERTY_BYTES", "pdk_root", "find_pdk",
           "corners", "pdk_cell_library"]


#: platform -> (standard-cell Liberty globs, SRAM macro Liberty glob), relative to <root>/<platform>
PLATFORMS = {
    "asap7": (["lib/NLDM/asap7sc7p5t_*_RVT_TT_nldm_*.lib*"], "lib/NLDM/fakeram7_*.lib*"),
    "nangate45": (["lib/NangateOpenCellLibrary_typical.lib*"], "lib/fakeram45_*.lib*"),
    "sky130hd": (["lib/sky130_fd_sc_hd__tt_025C_1v80.lib*"], None),
}
#: Other corners of a platform's standard cells (the PLATFORMS globs are its "tt"): ASAP7's slow
#: corner, 0.63 V and 100 C (../shared/pdk/asap7/SOURCES.md). The macros have one corner.
CORNERS = {
    "asap7": {"ss": ["lib/NLDM/asap7sc7p5t_*_RVT_SS_nldm*.lib*"]},
}

#: Cells no flow should pick (ORFS DONT_USE lists: physical-only, delay-tuned, or broken cells).
DONT_USE = {
    "asap7": ["*x1p*_ASAP7*", "*xp*_ASAP7*", "SDF*", "ICG*"],
    "nangate45": ["TAPCELL_X1", "FILLCELL_X1", "AOI211_X1", "OAI211_X1"],
    "sky130hd": ["sky130_fd_sc_hd__probe_p_*", "sky130_fd_sc_hd__probec_p_*",
                 "sky130_fd_sc_hd__lpflow_*", "sky130_fd_sc_hd__tapvpwrvgnd_1",
                 "sky130_fd_sc_hd__fill_*", "sky130_fd_sc_hd__decap_*",
                 "sky130_fd_sc_hd__diode_*", "sky130_fd_sc_hd__conb_1"],
}

#: The largest unzipped Liberty file accepted: 2 GiB (ASAP7's largest is 22 MB), so a gzip
#: bomb is refused while it is being decompressed, not after.
MAX_LIBERTY_BYTES = 2 << 30
#: Part of every cache key: bump it when what an entry holds changes (checks, merge, names).
CACHE_VERSION = "memwall-pdk-cache-1"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Macro:
    """An SRAM macro model (ORFS fakeram): ``depth`` words of ``width`` bits."""
    name: str
    depth: int
    width: int
    liberty: Path


@dataclass(frozen=True)
class Pdk:
    name: str
    root: Path
    cell_liberty: tuple[Path, ...]      # unzipped standard-cell Liberty files (cache)
    merged_liberty: Path                # the same families merged into one library (cache)
    macros: tuple[Macro, ...] = field(default=())
    time_unit_ps: float = 1.0           # 1.0 when the cell library counts time in ps, 1000 in ns
    dont_use: tuple[str, ...] = ()
    corner: str = "tt"
    #: The design's wire-load model where the Liberty has none (ASAP7; set by the flow once
    #: the design's size is known, :mod:`memwall.flows.wire_load`); None: the Liberty's own.
    wire_load: WireLoad | None = None

    def to_library_time(self, ns: float) -> float:
        """A time in ns expressed in the standard-cell library's time unit (SDC, abc -D)."""
        return ns * 1000.0 / self.time_unit_ps


def pdk_root() -> Path:
    return Path(os.environ.get("MEMWALL_PDK_ROOT", paths.REPO.parent / "shared" / "pdk"))


def _bad(pdk: str, src: Path, what: str) -> PdkError:
    return PdkError(f"PDK {pdk}: {src} {what}; expected the ORFS platform layout under "
                    f"$MEMWALL_PDK_ROOT (now {pdk_root()})")


def _digest(*parts: str) -> str:
    text = "\0".join((CACHE_VERSION, *parts))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _source_key(pdk: str, src: Path) -> tuple[str, str]:
    """(cache key of ``src``, sha256 of its bytes): its resolved path and its content."""
    content = hashlib.sha256()
    try:
        resolved = src.resolve()
        with open(resolved, "rb") as f:
            while chunk := f.read(_CHUNK):
                content.update(chunk)
    except (OSError, RuntimeError) as exc:   # RuntimeError: a symlink loop
        raise _bad(pdk, src, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") \
            from None
    return _digest(str(resolved), content.hexdigest()), content.hexdigest()


class _Hashing:
    """A binary file read through, its bytes hashed on the way (what was unzipped is what was
    keyed)."""

    def __init__(self, f):
        self.f, self.sha = f, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        self.sha.update(data)
        return data


def _cache_name(src: Path) -> str:
    name = src.name[:-3] if src.name.endswith(".gz") else src.name
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


@contextmanager
def _atomic(dst: Path, tmp_dir: Path | None = None) -> Iterator[Path]:
    """A temporary path in ``tmp_dir`` (default: beside ``dst``; the same file system), unique
    to this process and thread, moved onto ``dst`` when the block succeeds, else removed."""
    tmp_dir = tmp_dir or dst.parent
    tmp = tmp_dir / f".{dst.parent.name}.{dst.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        yield tmp
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _copy_text(pdk: str, src: Path, tmp: Path, sha256: str) -> None:
    """``src`` decompressed into ``tmp`` (at most :data:`MAX_LIBERTY_BYTES`), as UTF-8 text;
    ``sha256`` is the digest of the source bytes it was keyed by."""
    utf8, size = codecs.getincrementaldecoder("utf-8")(), 0
    is_utf8 = True
    try:
        with open(src, "rb") as raw, open(tmp, "wb") as out:
            hashing = _Hashing(raw)
            gz = src.name.endswith(".gz")
            f = gzip.GzipFile(fileobj=hashing, mode="rb") if gz else hashing
            while chunk := f.read(_CHUNK):
                size += len(chunk)
                if size > MAX_LIBERTY_BYTES:
                    raise _bad(pdk, src, f"unzips to more than {MAX_LIBERTY_BYTES} bytes "
                                         f"(refused as a likely gzip bomb)")
                if b"\0" in chunk:
                    raise _bad(pdk, src, "holds NUL bytes: binary data, not Liberty text")
                if is_utf8:
                    try:
                        utf8.decode(chunk)
                    except UnicodeDecodeError:
                        is_utf8 = False
                out.write(chunk)
            if is_utf8:
                try:
                    utf8.decode(b"", final=True)
                except UnicodeDecodeError:
                    is_utf8 = False
            while hashing.read(_CHUNK):   # bytes after the last gzip member
                pass
    except gzip.BadGzipFile as exc:
        raise _bad(pdk, src, f"is not a gzip file ({exc})") from None
    except (EOFError, zlib.error) as exc:
        raise _bad(pdk, src, f"is a truncated or corrupt gzip file ({exc})") from None
    except OSError as exc:
        raise _bad(pdk, src, f"cannot be read ({exc.strerror or exc})") from None
    if hashing.sha.hexdigest() != sha256:
        raise _bad(pdk, src, "changed while it was being read")
    if not is_utf8:   # Latin-1 decodes any byte; the cache holds UTF-8 for the reader
        with _atomic(tmp) as utf8_tmp, open(tmp, encoding="latin-1", newline="") as f, \
                open(utf8_tmp, "w", encoding="utf-8", newline="") as out:
            while text := f.read(_CHUNK):
                out.write(text)


def _check_liberty(pdk: str, src: Path, lib: Liberty, *, cells: bool) -> None:
    """Fail unless ``lib`` (the text of ``src``) is a whole Liberty library; with ``cells``, a
    standard-cell library: cells and a ``time_unit``."""
    try:
        end = group_end(blank_comments(lib.text), 0)
        if blank_comments(lib.text[end:]).strip():
            raise LibertyError(f"text after the library's closing brace at offset {end}")
        if cells:
            if lib.library.attr("time_unit") is None:
                raise LibertyError("no time_unit, which the flow needs to convert every time")
            _ = lib.time_s   # a time_unit that cannot be read fails here
            if not lib.cell_names:
                raise LibertyError("no cells")
    except LibertyError as exc:
        reason = str(exc).removeprefix(f"{lib.path}: ")
    except (ValueError, IndexError, KeyError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    else:
        return
    raise _bad(pdk, src, f"is not a usable Liberty library ({reason})")


def _read_liberty(pdk: str, src: Path, path: Path) -> Liberty:
    try:
        return Liberty(path)
    except LibertyError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
    except (ValueError, IndexError, KeyError, RecursionError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    raise _bad(pdk, src, f"is not a usable Liberty library ({reason})")


def _unpack(pdk: str, src: Path, cache: Path, *, cells: bool) -> tuple[Path, str]:
    """(cached text of ``src``, its key): checked and published on first use."""
    key, sha256 = _source_key(pdk, src)
    dst = cache / key / _cache_name(src)
    if not dst.exists():
        # Written and checked in the platform folder: a bad source leaves no key folder behind.
        cache.mkdir(parents=True, exist_ok=True)
        with _atomic(dst, cache) as tmp:
            _copy_text(pdk, src, tmp, sha256)
            _check_liberty(pdk, src, _read_liberty(pdk, src, tmp), cells=cells)
    return dst, key


def _merge(readers: list[Liberty], dst: Path) -> Path:
    """One library holding every cell of ``readers`` (header of the first, cells of all)."""
    if dst.exists():
        return dst
    with _atomic(dst, dst.parent.parent) as tmp:
        tmp.write_text(readers[0].header_text + "\n".join(r.body_text for r in readers)
                       + "\n}\n", encoding="utf-8")
    return dst


def _macro(path: Path) -> Macro | None:
    match = re.match(r"fakeram\d+_(\d+)x(\d+)", path.name)
    if not match:
        return None
    return Macro(path.name.split(".")[0], int(match.group(1)), int(match.group(2)), path)


def corners(name: str) -> tuple[str, ...]:
    """The standard-cell corners of platform ``name``, typical first."""
    return ("tt", *sorted(CORNERS.get(name, {})))


def find_pdk(name: str, cache_root: Path | None = None, corner: str = "tt") -> Pdk:
    """Locate platform ``name`` under :func:`pdk_root` and prepare its Liberty cache, with the
    standard cells of ``corner`` (:func:`corners`).

    Raises :class:`PdkError` for an unknown platform or corner, missing files, or a file that
    is not a readable Liberty library (nothing is published to the cache then).
    """
    if name not in PLATFORMS:
        raise PdkError(f"unknown PDK {name!r}; supported: {', '.join(sorted(PLATFORMS))}")
    if corner not in corners(name):
        raise PdkError(f"PDK {name} has no corner {corner!r}; its corners: "
                       f"{', '.join(corners(name))}")
    root = pdk_root() / name
    cell_globs, macro_glob = PLATFORMS[name]
    if corner != "tt":
        cell_globs = CORNERS[name][corner]
    found = sorted({p for g in cell_globs for p in root.glob(g)})
    if not found:
        raise PdkError(f"PDK {name}: no Liberty files matching {', '.join(cell_globs)} under "
                       f"{root} (set MEMWALL_PDK_ROOT to the folder holding {name}/lib/...; "
                       f"now {pdk_root()})")
    cache = (cache_root or paths.BUILD / "pdk") / name
    unpacked = [_unpack(name, p, cache, cells=True) for p in found]
    cells = [path for path, _ in unpacked]
    readers = [_read_liberty(name, src, p) for src, p in zip(found, cells, strict=True)]
    units = {round(lib.time_s / 1e-12, 6) for lib in readers}   # ps per library time unit
    if len(units) != 1 or not units <= {1.0, 1000.0}:
        raise PdkError(f"PDK {name}: standard-cell libraries disagree on time_unit, or count "
                       f"in neither ps nor ns: {sorted(units)} ps ({', '.join(map(str, found))})")
    if len(cells) > 1:
        merged_key = _digest("merged", *(key for _, key in unpacked))
        merged = _merge(readers, cache / merged_key / f"{name}_merged.lib")
    else:
        merged = cells[0]
    macros = []
    if macro_glob:
        for p in sorted(root.glob(macro_glob)):
            macro = _macro(_unpack(name, p, cache, cells=False)[0])
            if macro:
                macros.append(macro)
    return Pdk(name, root, tuple(cells), merged, tuple(macros), units.pop(),
               tuple(DONT_USE[name]), corner)


def pdk_cell_library(pdk: Pdk) -> CellLibrary:
    """Standard cells first (their units are the SDC's), then the PDK's macros."""
    return cell_library(tuple(pdk.cell_liberty) + tuple(m.liberty for m in pdk.macros),
                        pdk.wire_load)
