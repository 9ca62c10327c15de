"""PDK discovery in the OpenROAD-flow-scripts platform layout, and a Liberty cache for the tools.

``MEMWALL_PDK_ROOT`` (default ``<repo>/../shared/pdk``) holds ``<platform>/lib/...`` as in ORFS.
The WASM Yosys has no zlib and sees only files below its working directory, and Debian's OpenSTA
reads no ``.lib.gz``; so every Liberty file is unzipped once into a cache folder (default
``build/pdk/<platform>/``), and the standard-cell families are also merged into one file for
tools that take a single ``-liberty``. The PDK files themselves are never copied into the repo.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .liberty import Liberty

__all__ = ["PdkError", "Pdk", "Macro", "PLATFORMS", "pdk_root", "find_pdk"]

REPO_ROOT = Path(__file__).resolve().parents[1]

#: platform -> (standard-cell Liberty globs, SRAM macro Liberty glob), relative to <root>/<platform>
PLATFORMS = {
    "asap7": (["lib/NLDM/asap7sc7p5t_*_RVT_TT_nldm_*.lib*"], "lib/NLDM/fakeram7_*.lib*"),
    "nangate45": (["lib/NangateOpenCellLibrary_typical.lib*"], "lib/fakeram45_*.lib*"),
    "sky130hd": (["lib/sky130_fd_sc_hd__tt_025C_1v80.lib*"], None),
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

class PdkError(RuntimeError):
    """A PDK that cannot be found or read; the message says where memwall looked."""


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

    def to_library_time(self, ns: float) -> float:
        """A time in ns expressed in the standard-cell library's time unit (SDC, abc -D)."""
        return ns * 1000.0 / self.time_unit_ps


def pdk_root() -> Path:
    return Path(os.environ.get("MEMWALL_PDK_ROOT", REPO_ROOT.parent / "shared" / "pdk"))


def _unzip(src: Path, cache: Path) -> Path:
    name = src.name[:-3] if src.suffix == ".gz" else src.name
    dst = cache / name
    if not dst.exists() or dst.stat().st_mtime < src.stat().st_mtime:
        data = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
        tmp = dst.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(dst)
    return dst


def _merge(libs: list[Path], dst: Path) -> Path:
    """One library holding every cell of ``libs`` (header of the first, cells of all)."""
    if dst.exists() and all(dst.stat().st_mtime >= lib.stat().st_mtime for lib in libs):
        return dst
    readers = [Liberty(lib) for lib in libs]
    tmp = dst.with_suffix(".tmp")
    tmp.write_text(readers[0].header_text + "\n".join(r.body_text for r in readers) + "\n}\n")
    tmp.replace(dst)
    return dst


def _macro(path: Path) -> Macro | None:
    match = re.match(r"fakeram\d+_(\d+)x(\d+)", path.name)
    if not match:
        return None
    return Macro(path.name.split(".")[0], int(match.group(1)), int(match.group(2)), path)


def find_pdk(name: str, cache_root: Path | None = None) -> Pdk:
    """Locate platform ``name`` under :func:`pdk_root` and prepare its Liberty cache."""
    if name not in PLATFORMS:
        raise PdkError(f"unknown PDK {name!r}; supported: {', '.join(sorted(PLATFORMS))}")
    root = pdk_root() / name
    cell_globs, macro_glob = PLATFORMS[name]
    found = sorted({p for g in cell_globs for p in root.glob(g)})
    if not found:
        raise PdkError(f"PDK {name}: no Liberty files matching {', '.join(cell_globs)} under "
                       f"{root} (set MEMWALL_PDK_ROOT to the folder holding {name}/lib/...; "
                       f"now {pdk_root()})")
    cache = (cache_root or REPO_ROOT / "build" / "pdk") / name
    cache.mkdir(parents=True, exist_ok=True)
    cells = [_unzip(p, cache) for p in found]
    units = {round(Liberty(p).time_s / 1e-12, 6) for p in cells}   # ps per library time unit
    if len(units) != 1 or not units <= {1.0, 1000.0}:
        raise PdkError(f"PDK {name}: standard-cell libraries disagree on time_unit, or count "
                       f"in neither ps nor ns: {sorted(units)} ps")
    merged = _merge(cells, cache / f"{name}_merged.lib") if len(cells) > 1 else cells[0]
    macros = []
    if macro_glob:
        for p in sorted(root.glob(macro_glob)):
            macro = _macro(_unzip(p, cache))
            if macro:
                macros.append(macro)
    return Pdk(name, root, tuple(cells), merged, tuple(macros), units.pop(),
               tuple(DONT_USE[name]))
