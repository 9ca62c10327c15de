"""Hierarchical Verilog generation: one module per unique (component, parameters).

Amaranth emits one Verilog module per *instance*, so a 2048-lane datapath would be converted
2048 times. Here a parent adds a child with :func:`unique_submodule`; while a :class:`Design` is
being built, the child is converted once per distinct ``(class, params)`` and every use becomes an
``Instance`` of that module (what Chisel/FIRRTL dedup does). Outside a design (Amaranth simulation)
the child is added as an ordinary submodule, so the same generator code serves both.

A component opts in by exposing ``params``: a JSON-serialisable dict that fully determines its
hardware. Components that build their Verilog structurally (described once as a
:class:`~memwall.hdl.common.structural.Netlist`, e.g. :class:`LaneArray`) implement
``emit_verilog(design, name) -> str`` instead of being converted by Amaranth.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import re
from dataclasses import dataclass

from amaranth._toolchain.yosys import find_yosys
from amaranth.back import rtlil
from amaranth.hdl import ClockSignal, Instance, ResetSignal, Value
from amaranth.lib import wiring

__all__ = ["Design", "ModuleInfo", "Port", "unique_submodule", "port_values", "module_key",
           "CLOCK_PORTS"]

_current_design: contextvars.ContextVar[Design | None] = contextvars.ContextVar(
    "memwall_design", default=None)

CLOCK_PORTS = ("clk", "rst")


@dataclass(frozen=True)
class Port:
    name: str
    direction: str  # "input" | "output"
    width: int


@dataclass(frozen=True)
class ModuleInfo:
    name: str
    ports: tuple[Port, ...]

    @property
    def port_names(self) -> set[str]:
        return {p.name for p in self.ports}

    def port(self, name: str) -> Port:
        for p in self.ports:
            if p.name == name:
                return p
        raise KeyError(f"module {self.name} has no port {name!r}")


def port_values(component: wiring.Component) -> dict[str, tuple[str, Value]]:
    """Map each flattened port name (Amaranth's ``a__b`` naming) to (direction, value)."""
    ports = {}
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(part) for part in path)
        ports[name] = ("output" if member.flow == wiring.Out else "input", Value.cast(value))
    return ports


def module_key(component) -> tuple[str, str]:
    params = getattr(component, "params", None)
    if params is None:
        raise TypeError(f"{type(component).__qualname__} has no 'params'; components added with "
                        f"unique_submodule must expose the parameters that determine them")
    cls = type(component)
    return f"{cls.__module__}.{cls.__qualname__}", json.dumps(params, sort_keys=True)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _readable_suffix(params: dict) -> str | None:
    parts = []
    for key, value in sorted(params.items()):
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, str)):
            return None
        parts.append(f"{key}{value}")
    suffix = "_".join(re.sub(r"[^A-Za-z0-9]", "", p) for p in parts)
    return suffix if len(suffix) <= 40 else None


_PORT_DECL = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):(\d+)\]\s+)?\\?([A-Za-z_][\w$.]*)\s*;")
_RTLIL_PORT = re.compile(r"^\s*wire width (\d+) (input|output) \d+\s+(?:signed\s+)?\\(\S+)\s*$",
                         re.M)
_VERILOG_MODULE = re.compile(r"^module \\?([^\s(]+)\s*\(", re.M)
# Yosys numbers the helper regs it writes ("dump_module$N") across the whole run.
_YOSYS_AUTO_NAME = re.compile(r"\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+")


def _local_auto_names(text: str) -> str:
    """Number Yosys' helper names per module, so a module's text depends on it alone."""
    names: dict[str, str] = {}
    return _YOSYS_AUTO_NAME.sub(
        lambda m: names.setdefault(m.group(0), f"$auto$dump_module${len(names) + 1}"), text)


def _rtlil_ports(text: str, name: str) -> tuple[Port, ...]:
    start = text.index(f"\nmodule \\{name}\n")
    body = text[start:text.index("\nend\n", start)]
    return tuple(Port(pname, direction, int(width))
                 for width, direction, pname in _RTLIL_PORT.findall(body))


def _parse_ports(text: str, name: str) -> tuple[Port, ...]:
    """Read the port declarations of module ``name`` out of structural Verilog."""
    start = re.search(rf"^module {re.escape(name)}\(", text, re.M)
    if start is None:
        raise RuntimeError(f"module {name} not found in converted Verilog")
    end = text.index("\nendmodule", start.start())
    ports = []
    for line in text[start.start():end].splitlines():
        match = _PORT_DECL.match(line)
        if match:
            direction, msb, lsb, pname = match.groups()
            width = int(msb) - int(lsb) + 1 if msb is not None else 1
            ports.append(Port(pname, direction, width))
    return tuple(ports)


class Design:
    """The set of unique Verilog modules reached from one or more top components."""

    def __init__(self, on_module=None):
        #: Called with each module's name once it is built (a progress display's hook).
        self.on_module = on_module
        self._by_key: dict[tuple[str, str], ModuleInfo] = {}
        self._names: set[str] = set()
        self._order: list[str] = []            # module names, children before parents
        self._rtlil: dict[str, str] = {}       # modules Amaranth built, converted in one go
        self._text: dict[str, str] = {}        # module name -> Verilog
        self._emitting: list[str] = []         # modules being built, innermost last
        #: parent module -> {child module: instances of it in one parent}
        self.children: dict[str, dict[str, int]] = {}
        #: parent module -> its child instances in order (see :meth:`instance_tree`)
        self._instances: dict[str, list[dict]] = {}

    # -- building --------------------------------------------------------------------------------
    def add_top(self, component, name: str) -> ModuleInfo:
        return self._emit(component, name)

    def module_for(self, component) -> ModuleInfo:
        component._MustUse__silence = True  # stands for its deduplicated module, never elaborated
        key = module_key(component)
        if key not in self._by_key:
            self._by_key[key] = self._emit(component, self._fresh_name(component, key))
        return self._by_key[key]

    def record_instance(self, child: str, count: int = 1, *, instance: str,
                        block: str | None = None) -> None:
        """Note an instance ``instance`` of module ``child`` in the module being built.

        With ``block``, it is the instance inside a ``generate`` loop ``block`` of ``count``
        iterations (``count`` instances in all); without, ``count`` must be 1.
        """
        if block is None and count != 1:
            raise ValueError(f"instance {instance}: {count} instances need a generate block")
        parent = self._emitting[-1]
        siblings = self.children.setdefault(parent, {})
        siblings[child] = siblings.get(child, 0) + count
        entry = {"instance": instance, "module": child}
        if block is not None:
            entry["generate"] = {"block": block, "count": count}
        self._instances.setdefault(parent, []).append(entry)

    def instance_tree(self) -> dict[str, list[dict]]:
        """Per module, its instances of the design's modules, in the order of its Verilog.

        Returns ``{parent module: [entry, ...]}`` with a (possibly empty) list for every module
        of :attr:`module_names`. Each entry is::

            {"instance": <Verilog instance name>, "module": <child module>}
            {"instance": "u", "module": <child module>,
             "generate": {"block": <generate block label>, "count": <iterations>}}

        An instance without ``generate`` is the VCD scope ``<parent scope>.<instance>``. One
        with ``generate`` is ``count`` scopes ``<parent scope>.<block>[k].<instance>`` for
        ``k = 0 .. count-1``, the ``[k]`` spelt as the simulator writes it (Icarus ``[k]``,
        Verilator ``__BRA__k__KET__``, some tools ``(k)``). Only modules of the design appear:
        memories and Amaranth's own non-deduplicated submodules (``<parent>.<child>`` in the
        parent's file) are part of their parent. Summed per child module, ``count`` gives
        :attr:`children`.
        """
        return {name: [dict(e) for e in self._instances.get(name, [])] for name in self._order}

    def instance_counts(self, top: str) -> dict[str, int]:
        """How many times each module occurs in the elaborated hierarchy under ``top``."""
        counts: dict[str, int] = {}

        def visit(module: str, times: int) -> None:
            counts[module] = counts.get(module, 0) + times
            for child, n in self.children.get(module, {}).items():
                visit(child, times * n)

        visit(top, 1)
        return counts

    def _fresh_name(self, component, key) -> str:
        base = getattr(component, "module_name", None) or _snake(type(component).__name__)
        suffix = _readable_suffix(component.params)
        name = f"{base}_{suffix}" if suffix else base
        if suffix is None or name in self._names:
            name = f"{base}_{hashlib.sha1(key[1].encode()).hexdigest()[:8]}"
        return name

    def _emit(self, component, name: str) -> ModuleInfo:
        if name in self._names:
            raise ValueError(f"module name {name!r} is used twice in one design")
        self._names.add(name)
        component._MustUse__silence = True  # converted here, not elaborated by a parent
        token = _current_design.set(self)
        self._emitting.append(name)
        self.children.setdefault(name, {})
        try:
            if hasattr(component, "emit_verilog"):
                text = component.emit_verilog(self, name)
                info = ModuleInfo(name, _parse_ports(text, name))
                self._text[name] = text.strip() + "\n"
            else:
                text = rtlil.convert(component, name=name, emit_src=False)
                info = ModuleInfo(name, _rtlil_ports(text, name))
                self._check_cells(text, name)
                self._rtlil[name] = text
        finally:
            self._emitting.pop()
            _current_design.reset(token)
        self._order.append(name)
        if self.on_module is not None:
            self.on_module(name)
        return info

    def _check_cells(self, text: str, name: str) -> None:
        """Every instance recorded for ``name`` is a cell of that very module (not of one of
        Amaranth's own submodules), so :meth:`instance_tree` names real scopes."""
        start = text.index(f"\nmodule \\{name}\n")
        body = text[start:text.index("\nend\n", start)]
        cells = set(re.findall(r"^\s*cell \\(\S+) \\(\S+)$", body, re.M))
        for entry in self._instances.get(name, []):
            if (entry["module"], entry["instance"]) not in cells:
                raise RuntimeError(f"instance {entry['instance']} of {entry['module']} is not a "
                                   f"cell of module {name}: add it with unique_submodule in the "
                                   f"component's own module")

    def _write_verilog(self) -> None:
        """One Yosys run turns every pending RTLIL module into Verilog (not one run per module)."""
        if not self._rtlil:
            return
        script = [f"read_rtlil <<rtlil\n{text}\nrtlil" for text in self._rtlil.values()]
        script += ["proc -nomux -norom", "memory_collect",
                   "attrmap -remove generator -remove top -remove src",
                   "attrmap -modattr -remove generator -remove top -remove src",
                   "write_verilog -norename"]
        yosys = find_yosys(lambda version: version >= (0, 40))
        output = yosys.run(["-q", "-"], "\n".join(script), ignore_warnings=True)
        # Split per module; Amaranth's own (non-deduplicated) submodules are named
        # "<parent>.<child>" and stay in their parent's file.
        starts = []
        for match in _VERILOG_MODULE.finditer(output):
            begin = match.start()
            while True:   # a module's own attribute lines "(* ... *)" belong to its piece
                previous = output.rfind("\n", 0, begin - 1) + 1
                if begin == 0 or not output.startswith("(*", previous):
                    break
                begin = previous
            starts.append((begin, match.group(1)))
        pieces: dict[str, list[str]] = {name: [] for name in self._rtlil}
        ends = [begin for begin, _ in starts[1:]] + [len(output)]
        for (begin, module), end in zip(starts, ends, strict=True):
            owner = module if module in pieces else module.split(".", 1)[0]
            pieces[owner].append(_local_auto_names(output[begin:end].strip()) + "\n")
        for name, parts in pieces.items():
            self._text[name] = "\n".join(parts)
        self._rtlil.clear()

    # -- results ---------------------------------------------------------------------------------
    @property
    def module_names(self) -> list[str]:
        return list(self._order)

    def generator_keys(self) -> dict[str, tuple[str, str]]:
        """Module name -> its generator key (:func:`module_key`: class path, parameters as
        sorted JSON), for every module built through :meth:`module_for` (tops are not)."""
        return {info.name: key for key, info in self._by_key.items()}

    def verilog(self) -> str:
        self._write_verilog()
        return "\n".join(self._text[name] for name in self._order)

    def module_text(self, name: str) -> str:
        self._write_verilog()
        return self._text[name]


def instance_connections(info: ModuleInfo, ports: dict[str, tuple[str, Value]]) -> dict:
    """Instance keyword arguments binding a module's ports to the given values."""
    missing = sorted(set(ports) - info.port_names)
    if missing:   # a port the module text lost would be left unconnected without a word
        raise RuntimeError(f"module {info.name}: port(s) {', '.join(missing)} of the component "
                           "are not ports of its generated module")
    kwargs = {}
    for port in info.ports:
        if port.name in CLOCK_PORTS and port.name not in ports:
            kwargs[f"i_{port.name}"] = ClockSignal() if port.name == "clk" else ResetSignal()
            continue
        direction, value = ports[port.name]
        kwargs[("o_" if direction == "output" else "i_") + port.name] = value
    return kwargs


def unique_submodule(m, name: str, component) -> None:
    """Add ``component`` to ``m``: a deduplicated instance inside a Design, else a submodule."""
    design = _current_design.get()
    if design is None:
        m.submodules[name] = component
        return
    info = design.module_for(component)
    design.record_instance(info.name, instance=name)
    m.submodules[name] = Instance(info.name, **instance_connections(info, port_values(component)))
