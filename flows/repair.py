"""Fanout and load repair: buffer trees on every net that loads its driver past a limit.

Synthesis maps flip-flops (``dfflibmap``) before ABC and leaves memories and child modules as
black boxes, so ABC sizes and buffers only its own logic: a net from ABC's logic to 250 flip-flop
enables, or to 25 SRAM macro enables, is one primary output to ABC with the nominal load of the
``-constr`` file. The gate then drives the whole load alone (an AO21x1 at 250 fF, past the end
of its delay tables), which a flat timing run shows and a physical flow removes with
``repair_design``. No place-and-route tool runs here, so this pass is that repair, before
placement, on the netlist Yosys wrote (its JSON, rewritten by Yosys into the netlist files):

- **Loads.** A net's load is the input capacitance of every pin it reaches (the Liberty pin
  ``capacitance``; an SRAM macro's pins through the memory's macro arrangement, as flat timing
  links them, :func:`memwall.flows.memory_view.memory_pin_caps`; a child module's input port at
  the load that child presents after its own repair) plus, for a module output port,
  :attr:`RepairRule.port_load`, the most a parent may hang on it. Wire capacitance is not
  counted here: the design's wire-load model (:mod:`memwall.flows.wire_load`) is sized once
  synthesis and repair have given the design's area; the limit's quarter of ``max_capacitance``
  leaves the wire its room.
- **Limits.** A net is repaired when its load exceeds :attr:`RepairRule.load_fraction` of its
  driver's characterised load (the output pin's Liberty ``max_capacitance``, where its tables
  end) or it has more than :attr:`RepairRule.max_fanout` sinks. A module input port, a child's
  output and an unmapped memory's output drive at most ``port_load``, so every module presents
  and tolerates a bounded load at its boundary and its own repair holds wherever it is
  instantiated.
- **Trees.** The sinks, in netlist order, are split into groups that each load one tree buffer
  within the same limits; the group buffers become the sinks of the next level, until the root
  net is within its driver's limit. Output ports stay on the root net (their bits keep their
  names).
- **Sizing.** A gate too weak to drive even the one buffer a tree would hang on its net (a
  sky130 ``_0`` gate's limit is 5.3 fF, a ``buf_8`` input 7.0 fF) is retyped first to the
  weakest drive strength of the same function (:meth:`CellLibrary.drive_variants`, none the PDK
  marks ``dont_use``) that can; its inputs' loads change with it, so the module's nets are
  read again before the trees are built.
- **Not repaired:** nets driven by tie cells (constants are not timed) and nets reaching a clock
  pin (flip-flop and macro clocks, and child ports that reach them): the clock is ideal in
  timing, and its tree is estimated apart.

The pass works bottom-up (:func:`repair_design`), children before parents, so a child's input
loads are the repaired ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .constants import MEMORY_CELL
from .liberty import CellLibrary

__all__ = ["RepairRule", "REPAIR_RULES", "ModuleRepair", "repair_module", "repair_design",
           "rewrite_script"]

_MEMORY_CLOCKS = ("RD_CLK", "WR_CLK")


@dataclass(frozen=True)
class RepairRule:
    """What a net may load, and the buffer its trees are made of.

    Attributes
    ----------
    buffer : tuple[str, str, str]
        Tree buffer: cell, input pin, output pin.
    strong : tuple[str, ...]
        Stronger buffers (same pins), weakest first, for a group the tree buffer cannot drive
        within the limit: one sink alone past it (a memory pin that reaches many macros).
    load_fraction : float
        Fraction of a driver's Liberty ``max_capacitance`` a net may load.
    max_fanout : int
        Most sinks of one net.
    port_load_fo : float
        A module port's load allowance in minimum-inverter input loads (``port_load``).
    inverter : tuple[str, str]
        Minimum inverter and its input pin (the unit of ``port_load_fo``).
    """
    buffer: tuple[str, str, str]
    inverter: tuple[str, str]
    strong: tuple[str, ...] = ()
    load_fraction: float = 0.25
    max_fanout: int = 16
    port_load_fo: float = 16.0

    def port_load(self, cells: CellLibrary) -> float:
        cell, pin = self.inverter
        return self.port_load_fo * cells.info(cell).inputs[pin]


#: The tree buffer of each platform: a strong buffer whose input is near the minimum's
#: (ASAP7's BUFx8 reads 0.85 fF and is characterised up to 369 fF).
REPAIR_RULES = {
    "asap7": RepairRule(("BUFx8_ASAP7_75t_R", "A", "Y"), ("INVx1_ASAP7_75t_R", "A"),
                        ("BUFx16f_ASAP7_75t_R", "BUFx24_ASAP7_75t_R")),
    "nangate45": RepairRule(("BUF_X8", "A", "Z"), ("INV_X1", "A"), ("BUF_X16", "BUF_X32")),
    "sky130hd": RepairRule(("sky130_fd_sc_hd__buf_8", "A", "X"),
                           ("sky130_fd_sc_hd__inv_1", "A"),
                           ("sky130_fd_sc_hd__buf_12", "sky130_fd_sc_hd__buf_16")),
}


@dataclass
class ModuleRepair:
    """What the repair of one module found and did, and what it presents to its parents."""
    module: str
    buffers: int = 0
    nets_repaired: int = 0
    resized: int = 0       # gates retyped to a stronger drive
    worst_before: tuple[float, str] = (0.0, "")    # (load / limit, net), the worst net
    worst_after: tuple[float, str] = (0.0, "")
    #: input port -> capacitance (F) of each bit, LSB first, after the repair
    input_loads: dict[str, list[float]] = field(default_factory=dict)
    #: input port -> bits (LSB first) that reach a clock pin
    clock_inputs: dict[str, set[int]] = field(default_factory=dict)


@dataclass
class _Sink:
    """One pin a net reaches: its capacitance, and how to move it to another net (None: it
    stays, a module output port)."""
    cap: float
    move: Callable[[int], None] | None


def _cell_pin(module: dict, cell: str, pin: str, index: int) -> Callable[[int], None]:
    def move(net: int) -> None:
        module["cells"][cell]["connections"][pin][index] = net
    return move


def _add_buffer(module: dict, name: str, cell: str, pins: tuple[str, str, str], a: int, y: int,
                new: int) -> None:
    """Buffer ``name`` (type ``cell``, pins as :attr:`RepairRule.buffer`) from net ``a`` to
    net ``y``; ``new``, the net it creates, gets a name."""
    _, pin_a, pin_y = pins
    module["cells"][name] = {"hide_name": 0, "type": cell, "parameters": {}, "attributes": {},
                             "port_directions": {pin_a: "input", pin_y: "output"},
                             "connections": {pin_a: [a], pin_y: [y]}}
    module["netnames"][f"{name}_{'y' if new == y else 'a'}"] = {
        "hide_name": 0, "bits": [new], "attributes": {}}


def _net_name(module: dict, net: int) -> str:
    for name, entry in module["netnames"].items():
        if net in entry["bits"]:
            i = entry["bits"].index(net)
            return name if len(entry["bits"]) == 1 else f"{name}[{i}]"
    return f"net {net}"


def _groups(level: list[_Sink], cap_limit: float, fanout: int) -> list[list[_Sink]]:
    """``level`` in order, cut into groups within ``cap_limit`` and ``fanout`` (at least one
    sink each)."""
    groups: list[list[_Sink]] = [[]]
    load = 0.0
    for sink in level:
        if groups[-1] and (load + sink.cap > cap_limit or len(groups[-1]) >= fanout):
            groups.append([])
            load = 0.0
        groups[-1].append(sink)
        load += sink.cap
    return groups


class _Module:
    """One module's nets as drivers (with their load limits) and sinks."""

    def __init__(self, module: dict, rule: RepairRule, cells: CellLibrary,
                 children: dict[str, ModuleRepair], memory_caps: dict[str, dict[str, float]],
                 ties: tuple[str, ...], port_load: float):
        self.limits: dict[int, float | None] = {}   # net -> load limit (None: leave it)
        self.driver_pins: dict[int, Callable[[int], None]] = {}   # net -> move its driving pin
        self.driver_cells: dict[int, tuple[str, str]] = {}   # net -> its driving (cell, pin)
        self.sinks: dict[int, list[_Sink]] = {}
        self.clock_nets: set[int] = set()
        self.input_bits: dict[str, list] = {}
        for port, entry in module["ports"].items():
            for net in entry["bits"]:
                if entry["direction"] == "input":
                    self._drive(net, port_load)
                else:
                    self._load(net, _Sink(port_load, None))
            if entry["direction"] == "input":
                self.input_bits[port] = entry["bits"]
        for name, cell in module["cells"].items():
            ctype = cell["type"].lstrip("\\")
            directions = cell.get("port_directions", {})
            child = children.get(ctype)
            info = cells.info(ctype) if ctype in cells else None
            for pin, bits in cell["connections"].items():
                for i, net in enumerate(bits):
                    if directions.get(pin) == "output" or (info and pin in info.outputs):
                        limit = port_load
                        if info is not None:
                            limit = info.max_capacitance.get(pin)
                            limit = None if ctype in ties or limit is None \
                                else rule.load_fraction * limit
                        self._drive(net, limit)
                        if info is not None:
                            self.driver_pins[net] = _cell_pin(module, name, pin, i)
                            self.driver_cells[net] = (name, pin)
                        continue
                    if ctype == MEMORY_CELL:
                        cap = memory_caps.get(name, {}).get(f"{pin}[{i}]", 0.0)
                        clock = pin in _MEMORY_CLOCKS
                    elif child is not None:
                        caps = child.input_loads.get(pin, [])
                        cap = caps[i] if i < len(caps) else 0.0
                        clock = i in child.clock_inputs.get(pin, ())
                    elif info is not None:
                        cap, clock = info.inputs.get(pin, 0.0), pin in info.clock_pins
                    else:
                        continue
                    self._load(net, _Sink(cap, _cell_pin(module, name, pin, i)), clock)

    def _drive(self, net, limit: float | None) -> None:
        if isinstance(net, int):
            self.limits[net] = None if net in self.limits else limit   # two drivers: leave it

    def _load(self, net, sink: _Sink, clock: bool = False) -> None:
        if isinstance(net, int):
            self.sinks.setdefault(net, []).append(sink)
            if clock:
                self.clock_nets.add(net)


def _size_drivers(module: dict, nets: _Module, rule: RepairRule, cells: CellLibrary,
                  sizes: list[tuple[float, str, float]], dont_use: tuple[str, ...]) -> int:
    """Retype each gate whose net is past its limit and that cannot drive the buffer the
    tree would give it (the first tree buffer, or the kept ports' buffer) to the weakest drive
    strength that can (the strongest there is, if none can). Returns how many it retyped."""
    resized = 0
    for net, (name, pin) in nets.driver_cells.items():
        limit, sinks = nets.limits.get(net), nets.sinks.get(net, [])
        load = sum(s.cap for s in sinks)
        if not limit or net in nets.clock_nets or load <= limit:
            continue
        kept_cap = sum(s.cap for s in sinks if s.move is None)
        need = sizes[0][2]
        if kept_cap:
            need = max(need, next((z for z in sizes if z[0] >= kept_cap), sizes[-1])[2])
        need = min(load, need)
        if limit >= need:
            continue
        cell = module["cells"][name]
        prefix, ctype = ("\\", cell["type"][1:]) if cell["type"].startswith("\\") \
            else ("", cell["type"])

        drive = {c: rule.load_fraction * cells.info(c).max_capacitance.get(pin, 0.0)
                 for c in cells.drive_variants(ctype)}
        options = [c for c in drive if drive[c] > drive[ctype]
                   and not any(fnmatchcase(c, p) for p in dont_use)]
        if options:
            cell["type"] = prefix + next((c for c in options if drive[c] >= need), options[-1])
            resized += 1
    return resized


def repair_module(name: str, module: dict, rule: RepairRule, cells: CellLibrary,
                  children: dict[str, ModuleRepair] | None = None,
                  memory_caps: dict[str, dict[str, float]] | None = None,
                  ties: tuple[str, ...] = (), dont_use: tuple[str, ...] = ()) -> ModuleRepair:
    """Size and buffer the nets of one module (Yosys JSON ``module``, changed in place).

    ``children``: the repairs of the child modules it instantiates (their input loads and
    clock ports); ``memory_caps``: per ``memwall_ram`` cell name, the capacitance of each of
    its input bits (``PORT[i]``); ``ties``: tie cell types, whose nets are left alone;
    ``dont_use``: cell name patterns sizing may not choose.
    """
    children = children or {}
    port_load = rule.port_load(cells)
    buf_cell, buf_in, buf_out = rule.buffer
    # (load limit, cell, input capacitance) of each buffer a group may get, weakest first
    sizes = [(rule.load_fraction * cells.info(c).max_capacitance[buf_out], c,
              cells.info(c).inputs[buf_in]) for c in (buf_cell, *rule.strong)]
    buf_limit = sizes[0][0]
    result = ModuleRepair(name)
    while True:     # a retyped gate loads its inputs more: read the nets again
        nets = _Module(module, rule, cells, children, memory_caps or {}, ties, port_load)
        resized = _size_drivers(module, nets, rule, cells, sizes, dont_use)
        result.resized += resized
        if not resized:
            break
    next_net = 1 + max([b for e in module["netnames"].values() for b in e["bits"]
                        if isinstance(b, int)] +
                       [b for c in module["cells"].values() for bits in c["connections"].values()
                        for b in bits if isinstance(b, int)], default=1)

    def worst(which: str, ratio: float, net: int) -> None:
        if ratio > getattr(result, which)[0]:
            setattr(result, which, (ratio, _net_name(module, net)))

    loads = {net: sum(s.cap for s in sinks) for net, sinks in nets.sinks.items()}
    for net in sorted(nets.sinks):
        limit = nets.limits.get(net)
        if not limit or net in nets.clock_nets:
            continue
        kept = [s for s in nets.sinks[net] if s.move is None]
        level = [s for s in nets.sinks[net] if s.move is not None]
        kept_cap = sum(s.cap for s in kept)
        worst("worst_before", (kept_cap + sum(s.cap for s in level)) / limit, net)
        repaired = False
        if kept and net in nets.driver_pins and \
                kept_cap + (sizes[0][2] if level else 0.0) > limit:
            # The output ports leave the gate no room for even one tree buffer, and they keep
            # their net: the gate drives a new net, and a buffer drives the old one (the root).
            size_limit, size, size_cap = next((z for z in sizes if z[0] >= kept_cap), sizes[-1])
            inner, next_net = next_net, next_net + 1
            buf = f"memwall_buf_{result.buffers}"
            result.buffers += 1
            nets.driver_pins[net](inner)
            _add_buffer(module, buf, size, rule.buffer, inner, net, inner)
            worst("worst_after", size_cap / limit, inner)
            limit, repaired = size_limit, True
        # Each level packs up to max_fanout sinks to a buffer, so the levels shrink until the
        # root is within its limit or one sink is left (the kept ports cannot move; a single
        # sink past the limit gets one buffer, a stronger one if it needs it, and no more).
        levels = 0
        while (kept_cap + sum(s.cap for s in level) > limit
               or len(kept) + len(level) > rule.max_fanout) and \
                (len(level) > 1 or (level and levels == 0 and kept_cap + level[0].cap > limit)):
            repaired, levels = True, levels + 1
            upper = []
            for group in _groups(level, buf_limit, rule.max_fanout):
                out, next_net = next_net, next_net + 1
                buf = f"memwall_buf_{result.buffers}"
                result.buffers += 1
                group_cap = sum(g.cap for g in group)
                size_limit, size, size_cap = next((z for z in sizes if z[0] >= group_cap),
                                                  sizes[-1])
                _add_buffer(module, buf, size, rule.buffer, net, out, out)
                for sink in group:
                    sink.move(out)
                worst("worst_after", group_cap / size_limit, out)
                upper.append(_Sink(size_cap, _cell_pin(module, buf, buf_in, 0)))
            level = upper
        result.nets_repaired += repaired
        loads[net] = kept_cap + sum(s.cap for s in level)
        worst("worst_after", loads[net] / limit, net)

    # What the module presents to its parents: each input bit's load, and its clock bits.
    for port, bits in nets.input_bits.items():
        result.input_loads[port] = [loads.get(b, 0.0) if isinstance(b, int) else 0.0
                                    for b in bits]
        clocks = {i for i, b in enumerate(bits) if b in nets.clock_nets}
        if clocks:
            result.clock_inputs[port] = clocks
    return result


def repair_design(modules: dict[str, dict], hierarchy: dict[str, dict[str, int]],
                  rule: RepairRule, cells: CellLibrary,
                  memory_caps: dict[str, dict[str, dict[str, float]]] | None = None,
                  ties: tuple[str, ...] = (), dont_use: tuple[str, ...] = ()
                  ) -> dict[str, ModuleRepair]:
    """Repair every module of ``modules`` (name -> Yosys JSON module, changed in place),
    children before parents (``hierarchy``: module -> child -> instances)."""
    done: dict[str, ModuleRepair] = {}

    def visit(module: str) -> None:
        if module in done:
            return
        for child in hierarchy.get(module, {}):
            visit(child)
        kids = {c: done[c] for c in hierarchy.get(module, {})}
        done[module] = repair_module(module, modules[module], rule, cells, kids,
                                     (memory_caps or {}).get(module), ties, dont_use)

    for module in modules:
        visit(module)
    return done


def rewrite_script(module: str, liberty: str) -> str:
    """The Yosys script that turns ``work/<module>.repaired.json`` into the module's netlist
    files and statistics, as synthesis writes them (paths relative to the Yosys root).

    No ``hierarchy`` and no black-box definitions: ``hierarchy`` would resize every memory
    cell's ports to its one-bit stub (a 512-bit write enable became one bit), and the cells of
    the JSON carry their own port directions and widths.
    """
    return "\n".join([
        f"# memwall: {module} after fanout and load repair",
        f"read_liberty -lib {liberty}",
        f"read_json work/{module}.repaired.json",
        # As synthesis leaves it: one-bit wires (OpenSTA's reader takes no assignment to a
        # concatenation, which JSON's multi-bit wires would give), none unused.
        "splitnets",
        "opt_clean -purge",
        f"tee -q -o work/{module}.stat.json stat -json -liberty {liberty}",
        f"write_verilog -noattr -noexpr -nohex -nodec netlist/{module}.v",
        f"select {module}",
        f"write_json -selected netlist/{module}.json",
        "select -clear",
    ]) + "\n"
