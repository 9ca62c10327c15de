"""The one input layer: every file a user hands memwall is read here, with bounds.

What a hostile-but-honest user can give, and what each reader promises:

* **Text** (:func:`read_text`): at most ``MAX_TEXT_BYTES``, decoded as UTF-8; a bad byte is
  reported with its line and column.
* **YAML** (:func:`load_yaml`): safe tags only, no key given twice, at most ``MAX_YAML_DEPTH``
  levels of nesting and ``MAX_YAML_NODES`` nodes *after* alias expansion (an alias bomb is
  refused before anything is built from it).
* **Mappings** (:func:`check_keys`): keys are names; unknown and missing keys are listed with
  the allowed ones.
* **.npz archives** (:func:`load_npz`): the zip directory and each member's ``.npy`` header are
  read first; dtype, rank, every axis and the byte size are checked against limits the caller
  derives from its config, and only then is any array data decompressed. Object arrays
  (pickles) are refused, never loaded.

Every problem is an :class:`InputError` whose message names the file (once), what was wrong and
what is allowed; ``memwall`` prints it as one line and exits with status 2.
"""

from __future__ import annotations

import math
import reprlib
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

__all__ = [
    "InputError", "MAX_TEXT_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "read_text",
    "load_yaml", "parse_yaml", "check_keys", "shown", "ArraySpec", "load_npz",
]

#: The largest text input (config, trace) read: 16 MiB, far above any real one.
MAX_TEXT_BYTES = 16 << 20
#: Nesting depth of YAML collections; configs use 3, traces a few levels of ``repeat``.
MAX_YAML_DEPTH = 64
#: YAML nodes after aliases are expanded: a trace of 10^5 literal steps has about 10^6.
MAX_YAML_NODES = 2_000_000


class InputError(ValueError):
    """Input that cannot be used; the message names it, what was wrong and what is allowed.

    ``memwall`` prints ``memwall: error: <message>`` and exits with status 2.
    """


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict = 3, 6, 6
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 60


def shown(value: Any) -> str:
    """``repr(value)`` cut short: a message quotes what was given, not a megabyte of it."""
    return _SHOWN.repr(value)


# --- bytes and text -------------------------------------------------------------------------

def _open_error(path: Path, what: str, exc: OSError) -> InputError:
    reason = exc.strerror or str(exc)
    return InputError(f"{what} {path}: cannot read it ({reason})")


def read_bytes(path, what: str = "file", max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``."""
    path = Path(path)
    try:
        if not path.exists():
            raise InputError(f"{what} {path} does not exist")
        if not path.is_file():
            raise InputError(f"{what} {path} is not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"{what} {path} is {size:,} bytes; at most {max_bytes:,} are read")
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise _open_error(path, what, exc) from None
    if len(data) > max_bytes:   # grew while we looked, or a device that lies about its size
        raise InputError(f"{what} {path} is more than {max_bytes:,} bytes")
    return data


def read_text(path, what: str = "file", max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A UTF-8 text file of at most ``max_bytes``; a bad byte is named by line and column."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"{what} {path}: line {line}, column {column}: byte "
                         f"0x{data[exc.start]:02x} is not UTF-8; the file must be UTF-8 text"
                         ) from None


# --- YAML -----------------------------------------------------------------------------------

class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader with bounded nesting, and no key given twice (PyYAML keeps the last)."""

    max_depth = MAX_YAML_DEPTH

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        # Composition recurses once per level; stop long before Python's recursion limit.
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"nesting deeper than {self.max_depth} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice", key_node.start_mark)
            if isinstance(key, (str, int, float, bool)):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _expanded_nodes(root: yaml.Node, limit: int) -> int:
    """Nodes of the document with every alias expanded (memoised, so linear in the graph);
    stops counting past ``limit``. A cycle counts as unbounded."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = (node.value if isinstance(node, yaml.SequenceNode) else
                    [n for pair in node.value for n in pair]
                    if isinstance(node, yaml.MappingNode) else [])
        if not children_done:
            if key in open_nodes:
                return limit + 1   # a node that contains itself
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(key)
        sizes[key] = min(limit + 1, 1 + sum(sizes[id(child)] for child in children))
    return sizes[id(root)]


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: where and what (PyYAML's own text spans several, with a source excerpt)."""
    def at(mark) -> str:
        return f"line {mark.line + 1}, column {mark.column + 1}"

    if isinstance(exc, yaml.MarkedYAMLError):
        text = exc.problem or exc.context or "unreadable"
        if exc.problem_mark is not None:
            text = f"{at(exc.problem_mark)}: {text}"
        if exc.context and exc.problem and exc.context_mark is not None:
            text += f" ({exc.context} at {at(exc.context_mark)})"
        return text
    return " ".join(str(exc).split())


def parse_yaml(text: str, source: str, *, max_depth: int = MAX_YAML_DEPTH,
               max_nodes: int = MAX_YAML_NODES) -> Any:
    """One YAML document from ``text``, read within the bounds above."""
    loader = _BoundedLoader(text)
    loader.max_depth = max_depth
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        nodes = _expanded_nodes(root, max_nodes)
        if nodes > max_nodes:
            raise InputError(f"{source}: more than {max_nodes:,} YAML nodes once aliases are "
                             f"expanded (an alias that refers to itself counts as endless); "
                             f"write the values out or use fewer aliases")
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:   # a deep structure that slipped past the composer's count
        raise InputError(f"{source}: YAML nested too deeply (at most {max_depth} levels)"
                         ) from None
    finally:
        loader.dispose()


def load_yaml(path, what: str = "file", **bounds) -> Any:
    """:func:`read_text` then :func:`parse_yaml`."""
    return parse_yaml(read_text(path, what), f"{what} {path}", **bounds)


def check_keys(raw: Any, where: str, allowed: Iterable[str] | None,
               required: Iterable[str] = (), *, what: str = "a mapping") -> None:
    """``raw`` is a mapping whose keys are names from ``allowed`` (any names if None), with
    every ``required`` key.

    The message lists unknown and missing keys next to the allowed ones; a key that is not a
    name (``1:``, ``null:``) is reported as such rather than sorted against strings.
    """
    if not isinstance(raw, dict):
        kind = type(raw).__name__ if raw is not None else "nothing"
        raise InputError(f"{where}: expected {what}, got {kind}")
    not_names = [k for k in raw if not isinstance(k, str)]
    if not_names:
        raise InputError(f"{where}: keys must be names, got {shown(not_names[0])}"
                         + (f"; allowed keys: {', '.join(allowed)}" if allowed else ""))
    allowed = list(raw if allowed is None else allowed)
    unknown = sorted(set(raw) - set(allowed))
    missing = [k for k in required if k not in raw]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append("unknown key(s) " + ", ".join(unknown))
        if missing:
            parts.append("missing key(s) " + ", ".join(missing))
        raise InputError(f"{where}: {'; '.join(parts)}; allowed keys: {', '.join(allowed)}")


# --- .npz -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArraySpec:
    """What one member of an ``.npz`` may be, checked from its header before it is loaded.

    ``max_shape`` gives the largest size of each axis (its length is the rank), ``min_shape``
    the smallest (default: 1 for every axis, as an empty axis is no work to do); ``expect`` is
    the phrase used in messages (``"(B, L, V) float32"``).
    """
    dtypes: tuple[np.dtype, ...]
    max_shape: tuple[int, ...]
    expect: str
    required: bool = True
    min_shape: tuple[int, ...] | None = None


#: Members of an .npz we look at; more would be a hostile directory, not data.
MAX_NPZ_MEMBERS = 64


def _member_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo):
    with archive.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f".npy format version {version[0]}.{version[1]}; "
                             f"1.0 and 2.0 are read")
        return shape, dtype, f.tell()


def load_npz(path, specs: Mapping[str, ArraySpec], *, what: str = "input",
             max_bytes: int = 1 << 30) -> dict[str, np.ndarray]:
    """The members of ``specs`` from an ``.npz``, each checked against its spec first.

    Only the header of each member is read before the checks: its dtype (never an object
    dtype), rank, axis sizes and byte size, and the archive's declared uncompressed size of the
    member (decompression stops there, so a zip bomb costs nothing). ``max_bytes`` bounds the
    arrays together. Members not in ``specs`` are not read.
    """
    path = Path(path)
    label = f"{what} {path}"
    try:
        if not path.is_file():
            raise InputError(f"{label} does not exist" if not path.exists()
                             else f"{label} is not a regular file")
        with path.open("rb") as f:
            magic = f.read(6)
        if not zipfile.is_zipfile(path):
            kind = ("is a single .npy array, not" if magic == b"\x93NUMPY" else "is not")
            raise InputError(f"{label}: {kind} an .npz archive (a zip of .npy arrays, as "
                             f"np.savez writes) with the arrays " + ", ".join(specs))
        archive = zipfile.ZipFile(path)
    except OSError as exc:
        raise _open_error(path, what, exc) from None
    except zipfile.BadZipFile as exc:
        raise InputError(f"{label}: damaged zip archive ({exc})") from None
    with archive:
        infos = {}
        for info in archive.infolist()[:MAX_NPZ_MEMBERS + 1]:
            if info.filename.endswith(".npy"):
                infos[info.filename[:-4]] = info
        if len(archive.infolist()) > MAX_NPZ_MEMBERS:
            raise InputError(f"{label}: more than {MAX_NPZ_MEMBERS} members; expected the "
                             f"arrays " + ", ".join(specs))
        total = 0
        checked = {}
        for key, spec in specs.items():
            if key not in infos:
                if spec.required:
                    raise InputError(f"{label}: missing array {key!r} (expected {spec.expect}); "
                                     f"found {', '.join(sorted(infos)) or 'no arrays'}")
                continue
            info = infos[key]
            try:
                shape, dtype, header = _member_header(archive, info)
            except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
                raise InputError(f"{label}: array {key!r} has no readable .npy header ({exc})"
                                 ) from None
            if dtype.hasobject:
                raise InputError(f"{label}: array {key!r} holds Python objects (dtype {dtype}); "
                                 f"only plain numeric arrays are read, never pickles; expected "
                                 f"{spec.expect}")
            if dtype not in spec.dtypes:
                raise InputError(f"{label}: array {key!r} has dtype {dtype}; expected "
                                 f"{spec.expect}")
            if len(shape) != len(spec.max_shape):
                raise InputError(f"{label}: array {key!r} has shape {shape}; expected "
                                 f"{spec.expect}")
            smallest = spec.min_shape or (1,) * len(shape)
            for axis, (size, low, limit) in enumerate(zip(shape, smallest, spec.max_shape,
                                                           strict=True)):
                if size > limit:
                    raise InputError(f"{label}: array {key!r} has shape {shape}; axis {axis} "
                                     f"may be at most {limit:,} ({spec.expect})")
                if size < low:
                    raise InputError(f"{label}: array {key!r} has shape {shape}; axis {axis} "
                                     f"must have at least {low} element{'s' * (low != 1)} "
                                     f"({spec.expect}): there is no work to do")
            nbytes = math.prod(shape) * dtype.itemsize
            if info.file_size != header + nbytes:
                raise InputError(f"{label}: array {key!r} declares shape {shape} "
                                 f"({nbytes:,} bytes) but its member holds "
                                 f"{info.file_size - header:,}; the archive is damaged")
            total += nbytes
            if total > max_bytes:
                raise InputError(f"{label}: the arrays take more than {max_bytes:,} bytes; "
                                 f"at most that much is read")
            checked[key] = info
        arrays = {}
        for key, info in checked.items():
            try:
                with archive.open(info) as f:
                    # C order, whatever the file's (Fortran order is valid .npy data): the
                    # models view the arrays' bytes.
                    array = np.lib.format.read_array(f, allow_pickle=False)
                arrays[key] = array if array.flags.c_contiguous else np.ascontiguousarray(array)
            except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
                raise InputError(f"{label}: array {key!r} is damaged ({exc})") from None
        return arrays
