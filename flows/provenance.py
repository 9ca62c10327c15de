"""Where a ``metrics.json`` came from: the commit, the RTL, the config and the flow.

:func:`provenance` is the ``"provenance"`` record :func:`memwall.flows.flow.run_flow` writes
into every ``metrics.json``; :func:`current_design` and :func:`stale_reasons` are how
``memwall report`` tells a row of this checkout's design and flow from a stale one.

- ``rtl_sha256``: one digest over the generated RTL the flow synthesised (every file of
  ``<gen_dir>/rtl``, by name); the same design gives the same hash at any commit. It is the
  SHA-256 of ``sha256sum``'s listing of the files, so a shell gives it too:
  ``(cd build/<config>/rtl && LC_ALL=C sha256sum -- * | sha256sum)``.
- ``config_sha256``: the config the RTL and its clock came from (``manifest.json``'s
  ``config``): a new clock changes synthesis and power but not one byte of RTL.
- ``flow_version``: a digest of the flow's own sources, every ``flows/*.py`` but
  ``report.py`` (which reads metrics and makes none, so a change of the report's layout does
  not stale every row); ``tools`` the versions beside it (Yosys as synthesis found it,
  OpenSTA's ``-version``, Python, Amaranth).
- ``commit``: ``git rev-parse HEAD`` of the checkout, and ``dirty``: whether a tracked file
  under :data:`TRACKED` differs from it. Those are the folders a figure depends on: ``hdl/``,
  ``memwall/`` (the families' config classes, ``gen``) and ``configs/`` make the RTL;
  ``flows/`` synthesises, times and powers it; ``verif/`` and ``golden/`` run the power
  workloads whose switching activity the power comes from. Tests, reports and docs change no
  figure. Without git (a tarball install, or a checkout git will not read) both are None and
  ``commit_note`` says why; the RTL hash and flow version still identify the row.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from memwall import paths

__all__ = ["TRACKED", "FLOW_EXCLUDED", "provenance", "rtl_sha256", "config_sha256",
           "flow_version", "git_state", "opensta_version", "current_design", "design_digest",
           "stale_reasons"]

#: Folders of the checkout whose tracked files make a figure; a change under one marks the
#: commit ``dirty``.
TRACKED = ("hdl", "golden", "verif", "flows", "memwall", "configs")
#: Sources of ``flows/`` left out of :func:`flow_version`: they make no metric.
FLOW_EXCLUDED = ("report.py", "gates.py")
#: Seconds a ``git`` or ``sta -version`` call may take before it counts as unavailable.
TOOL_TIMEOUT_S = 20


def _sha256_listing(entries) -> str:
    """SHA-256 of ``sha256sum``'s listing (``<hex>  <name>\\n``) of ``(name, data)`` pairs."""
    listing = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in entries)
    return hashlib.sha256(listing.encode()).hexdigest()


def rtl_sha256(gen_dir: Path) -> str:
    """One digest of every file in ``gen_dir/rtl``, in name order (names and bytes)."""
    files = sorted((p for p in (Path(gen_dir) / "rtl").iterdir() if p.is_file()),
                   key=lambda p: p.name)
    return _sha256_listing((p.name, p.read_bytes()) for p in files)


def config_sha256(config: dict) -> str:
    """Digest of a generated design's config (``manifest.json``'s ``config``, as json)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def flow_version(flows_dir: Path | None = None) -> str:
    """Digest of the flow's sources: every ``flows/*.py`` but :data:`FLOW_EXCLUDED`."""
    folder = Path(flows_dir) if flows_dir is not None else paths.layer_folder("flows")
    files = sorted((p for p in folder.glob("*.py") if p.name not in FLOW_EXCLUDED),
                   key=lambda p: p.name)
    return _sha256_listing((p.name, p.read_bytes()) for p in files)


def _git(*args: str) -> str:
    # No optional locks: a flow finishing beside another must not race it for .git/index.lock.
    proc = subprocess.run(["git", "-C", str(paths.REPO), *args], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or [f"status {proc.returncode}"])[0])
    return proc.stdout


def git_state() -> dict:
    """``{"commit": HEAD, "dirty": bool}`` of the checkout, or both None and ``commit_note``."""
    try:
        top = Path(_git("rev-parse", "--show-toplevel").strip()).resolve()
        if top != paths.REPO.resolve():   # an install inside someone else's repository
            raise RuntimeError(f"{paths.REPO} is not the top of a git checkout ({top} is)")
        commit = _git("rev-parse", "HEAD").strip()
        changed = _git("status", "--porcelain=v1", "--untracked-files=no", "--", *TRACKED)
    except FileNotFoundError:
        return {"commit": None, "dirty": None, "commit_note": "git not found"}
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        return {"commit": None, "dirty": None, "commit_note": f"git: {exc}"}
    return {"commit": commit, "dirty": bool(changed.strip())}


def opensta_version() -> str | None:
    """``sta -version`` of the OpenSTA the flow runs (``MEMWALL_STA``), or None."""
    from .sta import STA_BINARY

    try:
        proc = subprocess.run([STA_BINARY, "-version"], capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout.strip()
    return text.splitlines()[0] if proc.returncode == 0 and text else None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def provenance(gen_dir: Path, yosys_version: str | None = None) -> dict:
    """The provenance record of a flow run on the design generated in ``gen_dir``.

    ``yosys_version``: the Yosys synthesis ran (``metrics["synth"]["yosys_version"]``).
    ``config_sha256`` is None where ``gen_dir`` has no ``manifest.json``.
    """
    gen_dir = Path(gen_dir)
    try:
        config = json.loads((gen_dir / "manifest.json").read_text())["config"]
    except (OSError, ValueError, KeyError):
        config = None
    return {
        **git_state(),
        "rtl_sha256": rtl_sha256(gen_dir),
        "config_sha256": None if config is None else config_sha256(config),
        "flow_version": flow_version(),
        "tools": {"yosys": yosys_version, "opensta": opensta_version(),
                  "python": platform.python_version(), "amaranth": _version("amaranth")},
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def current_design(config: str) -> dict:
    """``rtl_sha256`` and ``config_sha256`` of the design this checkout generates for
    ``config``: :func:`memwall.gen.generate` into a temporary folder, never the build folder
    (generating there would drop the results of RTL that changed before a report could name
    them, and would swap the folder under a flow running on it). A config that no longer loads
    or generates gives None for both and ``error``."""
    from memwall.config import load_config
    from memwall.gen import generate

    with tempfile.TemporaryDirectory(prefix="memwall-provenance-") as tmp:
        try:
            gen_dir = generate(load_config(config), Path(tmp))
        except ValueError as exc:   # InputError: a config gone, or past its bounds
            return {"rtl_sha256": None, "config_sha256": None, "error": str(exc)}
        return design_digest(gen_dir)


def design_digest(gen_dir: Path) -> dict:
    """``rtl_sha256`` and ``config_sha256`` of the design generated in ``gen_dir``."""
    manifest = json.loads((Path(gen_dir) / "manifest.json").read_text())
    return {"rtl_sha256": rtl_sha256(gen_dir), "config_sha256": config_sha256(manifest["config"])}


def stale_reasons(record: dict, current: dict, flow: str) -> list[str]:
    """Why a row's provenance ``record`` is not this checkout's design and flow (empty: it
    is). ``current``: :func:`current_design` of the row's config; ``flow``: :func:`flow_version`
    now."""
    reasons = []
    if current.get("rtl_sha256") is None:
        reasons.append(f"the checkout cannot generate the config ({current.get('error')})")
    elif record.get("rtl_sha256") != current["rtl_sha256"]:
        reasons.append(f"RTL {str(record.get('rtl_sha256'))[:10]}, the checkout generates "
                       f"{current['rtl_sha256'][:10]}")
    if current.get("config_sha256") is not None and \
            record.get("config_sha256") != current["config_sha256"]:
        reasons.append("the config has changed since")
    if record.get("flow_version") != flow:
        reasons.append(f"flow {str(record.get('flow_version'))[:10]}, the checkout's is "
                       f"{flow[:10]}")
    return reasons
