"""Vector lanes: N copies of a lane component driven in lockstep by one control component.

A VLEN-wide unit is a :class:`LaneArray`: one control instance (valid/ready, pipeline enables) and
``count`` lane instances, wired once in :meth:`LaneArray.structure`
(:class:`~memwall.hdl.common.structural.Netlist`). In a Design that description is a Verilog
``generate`` loop over one lane module, so generation time and file size do not grow with VLEN,
and no Amaranth-converted module ever carries VLEN-wide operand pairs (Amaranth numbers a
module's input bits in 16 bits); under Amaranth simulation the same description elaborates to
ordinary submodules.
"""

from __future__ import annotations

from collections.abc import Callable

from amaranth.hdl import Module, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from memwall.hdl.common.netlist import module_key, port_values
from memwall.hdl.common.structural import Netlist, Structural

__all__ = ["LaneArray", "LockstepControl"]


class LockstepControl(wiring.Component):
    """Valid/ready control of a ``latency``-stage pipeline whose data registers live in the lanes.

    The whole pipeline advances together: it stalls only when its last stage holds a result the
    consumer does not take. Stage ``j`` of every lane loads when ``load[j]`` is high, which is
    only when valid data enters that stage, so idle lanes do not toggle.

    Parameters
    ----------
    cmd_shape : shape-like
        Payload carried from ``i`` to ``o`` alongside the lanes' data (op code, tags, ...).
    latency : int
        Pipeline stages (>= 1).
    last_cmd : bool
        Also output ``last_cmd``: the command entering the last stage, for lanes that choose
        their registered result by it (for ``latency`` 1, ``i.payload`` itself).

    Attributes
    ----------
    i : In(stream.Signature(cmd_shape))
        Command stream; lane inputs are sampled with its transfers.
    o : Out(stream.Signature(cmd_shape))
        Result stream; lane outputs are valid while ``o.valid`` is high.
    load : Out(latency)
        Per-stage register enables for the lanes.
    last_cmd : Out(cmd_shape)
        Only with ``last_cmd=True``.
    """

    def __init__(self, cmd_shape, latency: int, last_cmd: bool = False):
        if latency < 1:
            raise ValueError(f"latency must be >= 1, got {latency}")
        self._cmd_shape = cmd_shape
        self.latency = latency
        self.params = {"cmd_width": Shape.cast(cmd_shape).width, "latency": latency}
        ports = {
            "i": In(stream.Signature(cmd_shape)),
            "o": Out(stream.Signature(cmd_shape)),
            "load": Out(latency),
        }
        if last_cmd:
            self.params["last_cmd"] = True
            ports["last_cmd"] = Out(cmd_shape)
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        valid = [Signal(1, name=f"valid{j}") for j in range(self.latency)]
        cmds = [Signal(self._cmd_shape, name=f"cmd{j}") for j in range(self.latency)]
        advance = ~valid[-1] | self.o.ready
        m.d.comb += self.i.ready.eq(advance)
        incoming = [self.i.valid] + valid[:-1]
        sources = [self.i.payload] + cmds[:-1]
        for j in range(self.latency):
            m.d.comb += self.load[j].eq(advance & incoming[j])
            with m.If(advance):
                m.d.sync += valid[j].eq(incoming[j])
            with m.If(self.load[j]):
                m.d.sync += cmds[j].eq(sources[j])
        m.d.comb += [self.o.valid.eq(valid[-1]), self.o.payload.eq(cmds[-1])]
        if "last_cmd" in self.signature.members:
            m.d.comb += self.last_cmd.eq(sources[-1])
        return m


class LaneArray(Structural, wiring.Component):
    """``count`` lanes plus one control component, emitted as a Verilog ``generate`` loop.

    Ports of the array: every port of ``control`` not named in ``links``, with the control's own
    names; every lane port not in ``links`` or ``broadcast`` as an ``ArrayLayout`` over the lanes
    (lane ``n`` owns element ``n``); ``broadcast`` lane inputs once, shared by all lanes.

    Parameters
    ----------
    lane_factory : callable
        Returns a new lane component (with ``params``); all lanes must be identical.
    count : int
        Number of lanes.
    control : wiring.Component
        The control component (with ``params``).
    links : dict[str, str]
        Lane input port -> control port (flattened name) driving it in every lane: a control
        output becomes an internal net, a control input (e.g. ``i__payload``) stays a port.
    broadcast : tuple[str, ...]
        Lane input ports shared by all lanes as one array port.
    """

    def __init__(self, *, lane_factory: Callable[[], wiring.Component], count: int,
                 control: wiring.Component, links: dict[str, str] | None = None,
                 broadcast: tuple[str, ...] = ()):
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        self._lane_factory = lane_factory
        self._lane = lane_factory()
        self._lane._MustUse__silence = True   # a template for the signature, never elaborated
        self._control = control
        self._links = dict(links or {})
        self._broadcast = tuple(broadcast)
        self.count = count
        members = {}
        control_outputs = {name for name, (direction, _) in port_values(control).items()
                           if direction == "output"}
        self._internal_links = set(self._links.values()) & control_outputs
        for name, member in control.signature.members.items():
            if name not in self._internal_links:
                members[name] = member
        for name, member in self._lane.signature.members.items():
            if not member.is_port:
                raise TypeError(f"lane port {name!r} must be a plain port, not an interface")
            if name in self._links:
                continue
            if name in members:
                raise ValueError(f"lane port {name!r} clashes with a control port of that name")
            if name in self._broadcast:
                members[name] = member
            else:
                members[name] = member.flow(data.ArrayLayout(member.shape, count))
        if not hasattr(self, "params"):
            self.params = {"lane": module_key(self._lane), "control": module_key(control),
                           "count": count, "links": self._links, "broadcast": self._broadcast}
        super().__init__(members)

    # One description for both paths: Verilog (a generate loop over one lane module) and
    # Amaranth simulation (ordinary submodules wired the same way).
    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        control = netlist.instance("control", self._control)
        lanes = netlist.instances("lane", self._lane_factory, self.count)
        for name in self._control.signature.members:
            if name not in self._internal_links:
                netlist.connect(io[name], control[name])
        for name in self._lane.signature.members:
            if name in self._links:
                target = self._links[name]
                source = control[target] if target in self._internal_links else io[target]
                netlist.connect(source, lanes[name])
            elif name in self._broadcast:
                netlist.connect(io[name], lanes[name])
            else:
                width = len(Value.cast(getattr(self._lane, name)))
                netlist.bind(lanes[name], netlist.net(io[name]).lane(width))
