"""Structural modules described once: instances, wires and connections by signature.

Wide datapaths (VLEN lanes) cannot pass through an Amaranth conversion (a module's input bits are
numbered in 16 bits), so their tops are written as structural Verilog. Here such a module is
*described* once, as a :class:`Netlist` -- instances of deduplicated child modules, wires and
plain slices of wide buses, connections checked against the children's ``wiring.Signature`` --
and that description renders both as Verilog (inside a :class:`~.netlist.Design`) and as an
Amaranth module (simulation of small sizes). It carries no logic: every gate lives in an
Amaranth component.

A component opts in with the :class:`Structural` mixin and a ``structure(netlist)`` method::

    def structure(self, netlist):
        control = netlist.instance("control", LockstepControl(cmd, latency=1))
        lanes = netlist.instances("lane", Lane, count)          # a generate loop
        netlist.connect(netlist.io.i, control.i)               # by signature
        netlist.connect(control.load, lanes.load)               # one driver, any readers
        netlist.bind(lanes.y, netlist.net(netlist.io.y).lane(16))   # lane i: y[16i +: 16]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Signal, Value
from amaranth.lib import wiring

from memwall.hdl.common.netlist import CLOCK_PORTS, Design, Port, port_values, unique_submodule

__all__ = ["Netlist", "NetInstance", "End", "Structural", "Expr", "Net", "Slice", "Lane",
           "Constant", "Concat"]


class Expr:
    """A net expression of a structural description: what an instance port is bound to."""

    width: int
    assignable = False

    def verilog(self) -> str:
        raise NotImplementedError

    def value(self, env: dict[str, Value], index: int) -> Value:
        raise NotImplementedError


class Net(Expr):
    """A named net: a port of the module being described or one of its wires."""

    assignable = True

    def __init__(self, name: str, width: int):
        self.name, self.width = name, width

    def __getitem__(self, key: slice) -> Slice:
        if isinstance(key, int):
            key = slice(key, key + 1)
        start, stop, step = key.indices(self.width)
        if step != 1 or stop <= start:
            raise ValueError(f"{self.name}[{key.start}:{key.stop}]: only non-empty, contiguous "
                             f"slices of a {self.width}-bit net")
        return Slice(self, start, stop)

    def lane(self, width: int, per: int = 1) -> Lane:
        """Element ``i // per`` of ``width`` bits, for replica ``i`` of a generate loop."""
        return Lane(self, width, per)

    def verilog(self) -> str:
        return self.name

    def value(self, env, index):
        return env[self.name]


class Slice(Expr):
    assignable = True

    def __init__(self, net: Net, start: int, stop: int):
        self.net, self.start, self.stop, self.width = net, start, stop, stop - start

    def verilog(self) -> str:
        if self.width == 1:
            return f"{self.net.name}[{self.start}]"
        return f"{self.net.name}[{self.stop - 1}:{self.start}]"

    def value(self, env, index):
        return env[self.net.name][self.start:self.stop]


class Lane(Expr):
    """Per-replica slice: bits ``(i // per) * width`` up of ``net`` in replica ``i``."""

    assignable = True
    per_replica = True

    def __init__(self, net: Net, width: int, per: int = 1):
        if width < 1 or per < 1:
            raise ValueError(f"lane of {net.name}: width and per must be >= 1")
        self.net, self.width, self.per = net, width, per

    def verilog(self) -> str:
        index = "i" if self.per == 1 else f"(i/{self.per})"
        return f"{self.net.name}[{index}*{self.width} +: {self.width}]"

    def value(self, env, index):
        return env[self.net.name].word_select(index // self.per, self.width)


class Constant(Expr):
    def __init__(self, value: int, width: int):
        if not 0 <= value < (1 << width):
            raise ValueError(f"constant {value} does not fit {width} bits")
        self.constant, self.width = value, width

    def verilog(self) -> str:
        return f"{self.width}'b0" if self.constant == 0 else f"{self.width}'h{self.constant:x}"

    def value(self, env, index):
        return Const(self.constant, self.width)


class Concat(Expr):
    """Parts concatenated LSB first (as Amaranth's ``Cat``)."""

    def __init__(self, *parts: Expr):
        if not parts:
            raise ValueError("Concat of nothing")
        self.parts, self.width = parts, sum(p.width for p in parts)

    def verilog(self) -> str:
        return "{" + ", ".join(p.verilog() for p in reversed(self.parts)) + "}"

    def value(self, env, index):
        return Cat(*(p.value(env, index) for p in self.parts))


@dataclass(frozen=True)
class _Leaf:
    port: str       # flattened port name of the owner
    drives: bool    # drives the net, seen from inside the module being described
    width: int


class End:
    """A member of an instance's (or the described module's own) interface, by signature path.

    Attribute access walks the signature (``seq.dma_cmd.valid``); ``end["a__b"]`` takes
    Amaranth's flattened name.
    """

    def __init__(self, owner, path: tuple[str, ...]):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_path", path)
        if not self._leaves():
            raise AttributeError(f"{owner._label} has no member {'.'.join(path)!r}")

    def _leaves(self) -> dict[tuple[str, ...], _Leaf]:
        n = len(self._path)
        return {path[n:]: leaf for path, leaf in self._owner._leaves.items()
                if path[:n] == self._path}

    @property
    def _label(self) -> str:
        return ".".join((self._owner._label, *self._path))

    def __getattr__(self, name: str) -> End:
        if name.startswith("_"):
            raise AttributeError(name)
        return End(self._owner, (*self._path, name))

    def __getitem__(self, flat_name: str) -> End:
        return End(self._owner, (*self._path, *flat_name.split("__")))

    def __repr__(self) -> str:
        return f"<End {self._label}>"


class _Owner:
    def __init__(self, label: str, leaves: dict[tuple[str, ...], _Leaf]):
        self._label, self._leaves = label, leaves

    def __getattr__(self, name: str) -> End:
        if name.startswith("_"):
            raise AttributeError(name)
        return End(self, (name,))

    def __getitem__(self, flat_name: str) -> End:
        return End(self, tuple(flat_name.split("__")))


def _signature_leaves(component, inside: bool) -> dict[tuple[str, ...], _Leaf]:
    leaves = {}
    for path, member, value in component.signature.flatten(component):
        output = member.flow == wiring.Out
        leaves[tuple(str(p) for p in path)] = _Leaf(
            "__".join(str(p) for p in path), output != inside, len(Value.cast(value)))
    return leaves


class NetInstance(_Owner):
    """An instance (or a ``generate`` array of identical instances) in a :class:`Netlist`."""

    def __init__(self, name: str, component, factory, count: int | None):
        super().__init__(name, _signature_leaves(component, inside=False))
        self._name, self._component, self._factory, self._count = name, component, factory, count
        self._binds: dict[str, Expr] = {}


class Netlist:
    """A structural module described once: instances, wires and signature-checked connections.

    The same description renders as Verilog (:meth:`verilog`: a ``generate`` loop per instance
    array, one module per unique child, so the cost does not grow with the width of the vectors
    routed) and as an Amaranth module (:meth:`elaborate`, for simulation of small sizes).
    It holds no logic: nets connect ports, and a net expression is a wire, a port, a constant
    slice, a per-replica lane slice, a constant or a concatenation of those.

    Parameters
    ----------
    component : wiring.Component, optional
        The component being described; its ports are the module's ports and :attr:`io`
        reaches them (flipped: its inputs drive nets inside). Without it the module's ports
        are those made by :meth:`expose`.
    """

    def __init__(self, component: wiring.Component | None = None):
        self._component = component
        own = _signature_leaves(component, inside=True) if component is not None else {}
        self.io = _Owner("io", own)
        self._ports: list[Port] = [Port(leaf.port, "input" if leaf.drives else "output",
                                        leaf.width) for leaf in own.values()]
        self._names: set[str] = {p.name for p in self._ports} | set(CLOCK_PORTS)
        self._wires: list[Net] = []
        self._items: list = []    # NetInstance | (target, expression) in description order

    # -- description ------------------------------------------------------------------------------
    def _claim(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"net name {name!r} is used twice")
        self._names.add(name)
        return name

    def wire(self, name: str, width: int) -> Net:
        net = Net(self._claim(name), width)
        self._wires.append(net)
        return net

    def instance(self, name: str, component) -> NetInstance:
        """One instance of ``component``'s module; its ports are bound later by signature."""
        inst = NetInstance(self._claim(name), component, None, None)
        self._items.append(inst)
        return inst

    def instances(self, name: str, factory: Callable[[], wiring.Component],
                  count: int) -> NetInstance:
        """``count`` identical instances from ``factory``: a ``generate`` loop named ``name``
        over replicas ``i = 0 .. count-1`` (each instance is called ``u`` inside it)."""
        if count < 1:
            raise ValueError(f"instances {name}: count must be >= 1, got {count}")
        inst = NetInstance(self._claim(name), factory(), factory, count)
        self._items.append(inst)
        return inst

    def assign(self, target: Expr, expression: Expr) -> None:
        """A continuous assignment of wiring (a slice, concatenation or constant): no logic."""
        if not target.assignable or isinstance(target, Lane):
            raise TypeError(f"cannot assign to {target.verilog()}")
        self._check_width(target.verilog(), target.width, expression)
        self._items.append((target, expression))

    @staticmethod
    def _check_width(what: str, width: int, expression: Expr) -> None:
        if expression.width != width:
            raise ValueError(f"{what} is {width} bits, {expression.verilog()} is "
                             f"{expression.width}")

    def _leaf(self, end: End) -> _Leaf:
        leaves = end._leaves()
        if list(leaves) != [()]:
            members = ", ".join(".".join(p) for p in leaves)
            raise TypeError(f"{end._label} is an interface ({members}); bind its ports one by "
                            f"one or connect it")
        return leaves[()]

    def bind(self, end: End, expression: Expr) -> None:
        """Bind a port of an instance to a net expression (checked for width and direction)."""
        if not isinstance(end._owner, NetInstance):
            raise TypeError(f"bind() takes an instance port, not {end._label}")
        inst, leaf = end._owner, self._leaf(end)
        self._check_width(end._label, leaf.width, expression)
        if leaf.drives and not expression.assignable:
            raise TypeError(f"output {end._label} cannot drive {expression.verilog()}")
        if isinstance(expression, Lane) and inst._count is None:
            raise TypeError(f"{end._label}: a lane slice needs an instance array")
        if leaf.drives and inst._count is not None and not isinstance(expression, Lane):
            raise TypeError(f"output {end._label} of {inst._count} instances needs a lane slice")
        if leaf.port in inst._binds:
            raise ValueError(f"{end._label} is bound twice")
        inst._binds[leaf.port] = expression

    def net(self, end: End) -> Net | Expr:
        """The net a port is bound to; an unbound instance port gets a wire ``<inst>_<port>``."""
        leaf = self._leaf(end)
        if not isinstance(end._owner, NetInstance):
            return Net(leaf.port, leaf.width)
        inst = end._owner
        if leaf.port not in inst._binds:
            self.bind(end, self.wire(f"{inst._name}_{leaf.port}", leaf.width))
        return inst._binds[leaf.port]

    def connect(self, *ends: End, name: str | None = None) -> None:
        """Connect interface members by signature, as ``wiring.connect`` does.

        Every end must have the same members with the same widths; each member must be driven
        by exactly one end (an instance's output, or an input of the module described) and is
        read by all others. A member that is no port of the module described gets a wire named
        after its driver (``<instance>_<port>``), or ``name`` followed by the member's path.
        """
        if len(ends) < 2:
            raise TypeError("connect() needs at least two ends")
        labels = ", ".join(e._label for e in ends)
        leafsets = [e._leaves() for e in ends]
        for end, leaves in zip(ends[1:], leafsets[1:], strict=True):
            if set(leaves) != set(leafsets[0]):
                missing = sorted(".".join(p) or "(port)" for p in set(leaves) ^ set(leafsets[0]))
                raise ValueError(f"connect({labels}): members differ between {ends[0]._label} "
                                 f"and {end._label}: {', '.join(missing)}")
        for sub in leafsets[0]:
            member = ".".join(sub) or "(port)"
            widths = {leaves[sub].width for leaves in leafsets}
            if len(widths) > 1:
                detail = ", ".join(f"{e._label} {ls[sub].width}"
                                   for e, ls in zip(ends, leafsets, strict=True))
                raise ValueError(f"connect({labels}): member {member} has different widths "
                                 f"({detail})")
            drivers = [e for e, ls in zip(ends, leafsets, strict=True) if ls[sub].drives]
            if len(drivers) != 1:
                raise ValueError(f"connect({labels}): member {member} is driven by "
                                 f"{len(drivers)} ends ({', '.join(d._label for d in drivers)})"
                                 f"; exactly one must drive it")
            outer = [e for e in ends if not isinstance(e._owner, NetInstance)]
            if len(outer) > 1:
                raise ValueError(f"connect({labels}): connects two ports of the module itself")
            if outer:
                net = Net(leafsets[ends.index(outer[0])][sub].port, widths.pop())
            elif name is not None:
                net = self.wire("__".join((name, *sub)), widths.pop())
            else:
                driver = drivers[0]
                port = leafsets[ends.index(driver)][sub].port
                net = self.wire(f"{driver._owner._name}_{port}", widths.pop())
            for end in ends:
                if isinstance(end._owner, NetInstance):
                    self.bind(End(end._owner, (*end._path, *sub)), net)

    def expose(self, end: End, name: str | None = None) -> None:
        """Make an instance's interface ports of the module described, by its signature.

        Port names are ``name`` (default: the member's own flattened name) followed by the
        sub-member path (``name__valid``); directions are the instance's.
        """
        if not isinstance(end._owner, NetInstance):
            raise TypeError(f"expose() takes an instance member, not {end._label}")
        prefix = name if name is not None else "__".join(end._path)
        for sub, leaf in end._leaves().items():
            port = "__".join((prefix, *sub))
            if self._component is not None:
                own = {p.name: p for p in self._ports}
                if port not in own or own[port].width != leaf.width or \
                        (own[port].direction == "output") != leaf.drives:
                    raise ValueError(f"expose({end._label}): {port} is no matching port of "
                                     f"{type(self._component).__name__}")
            else:
                self._claim(port)
                self._ports.append(Port(port, "output" if leaf.drives else "input", leaf.width))
            self.bind(End(end._owner, (*end._path, *sub)), Net(port, leaf.width))

    # -- rendering --------------------------------------------------------------------------------
    def _unbound(self, inst: NetInstance, ports) -> None:
        names = {p for p in ports if p not in CLOCK_PORTS}
        unbound, unknown = names - set(inst._binds), set(inst._binds) - names
        if unbound or unknown:
            raise ValueError(f"instance {inst._name}: unbound ports {sorted(unbound)}, "
                             f"unknown ports {sorted(unknown)}")

    def verilog(self, design: Design, name: str) -> str:
        """The module's Verilog; children become modules of ``design`` (deduplicated)."""
        body, clocked, genvar = [], set(), False
        for item in self._items:
            if not isinstance(item, NetInstance):
                body.append(f"  assign {item[0].verilog()} = {item[1].verilog()};")
                continue
            info = design.module_for(item._component)
            design.record_instance(info.name, item._count or 1,
                                   instance="u" if item._count else item._name,
                                   block=item._name if item._count else None)
            self._unbound(item, info.port_names)
            connections = []
            for port in info.ports:
                if port.name in CLOCK_PORTS:
                    clocked.add(port.name)
                    connections.append(f".{port.name}({port.name})")
                else:
                    connections.append(f".{port.name}({item._binds[port.name].verilog()})")
            line = f"{info.name} {'u' if item._count else item._name} ({', '.join(connections)});"
            if item._count is None:
                body.append(f"  {line}")
                continue
            if not genvar:
                body.append("  genvar i;")
                genvar = True
            body += ["  generate",
                     f"    for (i = 0; i < {item._count}; i = i + 1) begin : {item._name}",
                     f"      {line}", "    end", "  endgenerate"]
        ports = [Port(p, "input", 1) for p in CLOCK_PORTS if p in clocked] + self._ports
        lines = [f"module {name}({', '.join(p.name for p in ports)});"]
        for port in ports:
            # Vectors keep an explicit range even at width 1, so lane slices stay legal.
            rng = "" if port.name in CLOCK_PORTS else f"[{port.width - 1}:0] "
            lines.append(f"  {port.direction} {rng}{port.name};")
        lines += [f"  wire [{w.width - 1}:0] {w.name};" for w in self._wires]
        return "\n".join(lines + body + ["endmodule"]) + "\n"

    def elaborate(self) -> Module:
        """The same description as an Amaranth module (children as submodules)."""
        if self._component is None:
            raise TypeError("only a netlist of a component elaborates in Amaranth")
        m = Module()
        env: dict[str, Value] = {name: value
                                 for name, (_, value) in port_values(self._component).items()}
        for net in self._wires:
            env[net.name] = Signal(net.width, name=net.name)
        for item in self._items:
            if not isinstance(item, NetInstance):
                m.d.comb += item[0].value(env, 0).eq(item[1].value(env, 0))
                continue
            replicas = [item._component] if item._count is None else \
                [item._component] + [item._factory() for _ in range(item._count - 1)]
            for index, child in enumerate(replicas):
                unique_submodule(m, item._name if item._count is None else
                                 f"{item._name}{index}", child)
                ports = port_values(child)
                self._unbound(item, ports)
                for port, (direction, value) in ports.items():
                    net = item._binds[port].value(env, index)
                    m.d.comb += value.eq(net) if direction == "input" else net.eq(value)
        return m


class Structural:
    """Mixin for components described once, as a :class:`Netlist`, by ``structure(netlist)``.

    In a :class:`Design` the description becomes structural Verilog; under Amaranth (e.g.
    simulation of a small size) it elaborates to the same submodules and connections.
    """

    def structure(self, netlist: Netlist) -> None:
        raise NotImplementedError

    def _netlist(self) -> Netlist:
        netlist = Netlist(self if isinstance(self, wiring.Component) else None)
        self.structure(netlist)
        return netlist

    def emit_verilog(self, design: Design, name: str) -> str:
        return self._netlist().verilog(design, name)

    def elaborate(self, platform):
        return self._netlist().elaborate()
