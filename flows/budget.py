"""Boundary constraints of every module from the design around it (hierarchical timing that
agrees with flat, end-to-end timing).

Each unique module is timed on its own cells (:mod:`memwall.flows.hierarchical`); a path that
crosses its boundary is timed against constraints at its ports. A fixed budget (20 % of the
period at every port) misjudges both sides: a combinational FP adder between two registers of its
parent gets 60 % of the period although the parent's logic before and after it takes more, or
less. Here the constraints come from the real driver and load timing, in three steps with a
number of OpenSTA runs linear in the number of unique modules:

1. **Characterise** (:mod:`memwall.flows.characterise`; one OpenSTA run per unique module,
   plus one for all memories): the module's own cells between its port groups, with zero
   external delay.
2. **Abstract, bottom-up** (:class:`GroupGraph`, :func:`abstract`): a module's ports seen
   through its whole subtree, from its own characterisation and its children's abstracts
   joined into a graph of groups (own paths, plain wires, each child's abstract):
   clock-to-output arrival per output, required arrival per input, delay per input/output
   pair.
3. **Context, top-down** (:func:`contexts`): the top's ports keep the I/O budget of
   ``constraint.sdc`` (:data:`memwall.flows.sta.IO_BUDGET`); in each context of a module,
   arrivals go forward and required times backward through its graph, and every child
   instance (or group of instances) gets a context of its own. A module keeps its distinct
   contexts, so the late input of one instance never meets the tight output of another.

The final per-module timing run then sets every boundary port from the context that is worst
for the module's own cells: input delay = arrival at the port, output delay = period -
required time (plus a modelled buffer tree's delay, as before). Times are in the standard
cells' library unit (ps on ASAP7).

What it does not see and flat timing does, so it errs on the pessimistic side: which bit of
a bus wider than :data:`memwall.flows.characterise.BITWISE_MAX` arrives late (the bus arrives
with its latest bit); which instance of a lane array (more than
:data:`memwall.flows.characterise.PER_INSTANCE_MAX` instances) a path uses (the array is one
group); rise and fall apart (a boundary takes the later of the two); the real transition at a
boundary (every cut port switches with the nominal slew).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .characterise import (
    MEMORIES,
    SEP,
    Boundary,
    Characterisation,
    Group,
    boundary,
    characterise,
    group_bit,
    memories_run,
)
from .memory_view import MemoryView
from .netlist import Hierarchy, top_down
from .pdk import Pdk
from .rewrite import ModuleRun
from .sta import IO_BUDGET

__all__ = ["Abstract", "GroupGraph", "abstract", "Contexts", "contexts", "port_delays",
           "derive_delays", "CONTEXTS_MAX"]

INF = math.inf

# --------------------------------------------------------------------------------------------
# Step 2: abstracts, bottom-up.

Key = tuple   # (port, bit) of a module's own port, as in its groups


@dataclass
class Abstract:
    """A module's ports seen through its whole subtree (library time units)."""
    clk_arrival: dict[Key, float]               # output -> latest arrival from a register
    required: dict[Key, float]                  # input -> latest arrival its registers allow
    comb: dict[Key, dict[Key, float]]           # input -> output -> delay


class GroupGraph:
    """The groups of one module joined by own paths, plain wires and children's abstracts."""

    def __init__(self, char: Characterisation, groups: Boundary,
                 abstracts: dict[str, Abstract]):
        self.char, self.abstracts, self.merged = char, abstracts, groups.merged
        edges: dict[Group, dict[Group, float]] = defaultdict(dict)

        def add(u: Group, v: Group, d: float) -> None:
            if d > edges[u].get(v, -INF):
                edges[u][v] = d

        for u, row in char.comb.items():
            for v, d in row.items():
                add(u, v, d)
        for u, v in groups.wires:
            add(u, v, 0.0)
        nodes = set(groups.sources.values()) | {g for gs in groups.sinks.values() for g in gs}
        nodes |= {g for w in groups.wires for g in w}
        #: (child type, instance or "" when merged) -> its groups
        self.children: dict[tuple[str, str], set[Group]] = defaultdict(set)
        for g in nodes:
            if g[0] in ("ci", "co"):
                self.children[(g[1], g[4])].add(g)
        #: Edges through a child grouped over its instances: a path may take them as often as
        #: there are instances (A feeds B through the module's logic), see :meth:`forward`.
        self.passes: dict[Group, dict[Group, float]] = defaultdict(dict)
        for (child, inst), gs in self.children.items():
            abstract = abstracts.get(child)
            if abstract is None:
                continue
            outs = {g[2:4]: g for g in gs if g[0] == "co"}
            for g in gs:
                if g[0] == "ci":
                    for key, d in abstract.comb.get(g[2:4], {}).items():
                        if key in outs:
                            add(g, outs[key], d)
                            if not inst:
                                self.passes[g][outs[key]] = d
        self.nodes = nodes | set(edges) | {v for row in edges.values() for v in row}
        self.edges = dict(edges)
        order, rest = self._order(self.edges)
        #: Loops only close through grouped instances: then a path is followed layer by
        #: layer, one pass through a grouped child per layer, up to as many passes as those
        #: children have instances (never more: each instance is passed at most once).
        self.cyclic = bool(rest)
        self.layers = 1
        if self.cyclic:
            passes = dict(self.passes)
            inner = {u: {v: d for v, d in row.items() if v not in passes.get(u, {})}
                     for u, row in self.edges.items()}
            order, rest = self._order(inner)
            if rest:   # a loop through a whole bus of one instance (bits grouped): each such
                # child is passed at most once more
                on_loop = set(rest)
                for u in on_loop:
                    if u[0] == "ci":
                        for v in list(inner.get(u, {})):
                            if v[0] == "co" and v in on_loop:
                                passes.setdefault(u, {})[v] = inner[u].pop(v)
                order, rest = self._order(inner)
                order += rest   # none left: every loop passes a child
            self.passes = defaultdict(dict, passes)
            self.edges = inner
            passed = {(u[1], u[4]) for u in passes}
            self.layers = 1 + sum(self.merged.get(t, 1) if not inst else 1
                                  for t, inst in passed)
        self.order = order
        self.position = {g: k for k, g in enumerate(order)}

    def _order(self, edges) -> tuple[list[Group], list[Group]]:
        """(topological order, the nodes left on loops)."""
        indegree: dict[Group, int] = dict.fromkeys(self.nodes, 0)
        for row in edges.values():
            for v in row:
                indegree[v] += 1
        ready = sorted(g for g, n in indegree.items() if n == 0)
        order = []
        while ready:
            u = ready.pop()
            order.append(u)
            for v in edges.get(u, {}):
                indegree[v] -= 1
                if indegree[v] == 0:
                    ready.append(v)
        return order, sorted(self.nodes - set(order))

    def _forward_once(self, init: dict[Group, float]) -> dict[Group, float]:
        reach, stack = set(init), list(init)
        while stack:
            for v in self.edges.get(stack.pop(), {}):
                if v not in reach:
                    reach.add(v)
                    stack.append(v)
        arrival = dict(init)
        for u in sorted(reach, key=self.position.__getitem__):
            a = arrival.get(u, -INF)
            if a == -INF:
                continue
            for v, d in self.edges.get(u, {}).items():
                if a + d > arrival.get(v, -INF):
                    arrival[v] = a + d
        return arrival

    def _backward_once(self, init: dict[Group, float]) -> dict[Group, float]:
        required = dict(init)
        for u in reversed(self.order):
            for v, d in self.edges.get(u, {}).items():
                r = required.get(v, INF) - d
                if r < required.get(u, INF):
                    required[u] = r
        return required

    def forward(self, init: dict[Group, float]) -> dict[Group, float]:
        """Latest arrival at every node reached from ``init``."""
        layer = self._forward_once(init)
        arrival = dict(layer)
        for _ in range(self.layers - 1):
            nxt: dict[Group, float] = {}
            for u, row in self.passes.items():
                if layer.get(u, -INF) != -INF:
                    for v, d in row.items():
                        nxt[v] = max(nxt.get(v, -INF), layer[u] + d)
            if not nxt:
                break
            layer = self._forward_once(nxt)
            for g, a in layer.items():
                if a > arrival.get(g, -INF):
                    arrival[g] = a
        return arrival

    def backward(self, init: dict[Group, float]) -> dict[Group, float]:
        """Earliest required time at every node that reaches a node of ``init``."""
        layer = self._backward_once(init)
        required = dict(layer)
        for _ in range(self.layers - 1):
            nxt: dict[Group, float] = {}
            for u, row in self.passes.items():
                for v, d in row.items():
                    if layer.get(v, INF) != INF:
                        nxt[u] = min(nxt.get(u, INF), layer[v] - d)
            if not nxt:
                break
            layer = self._backward_once(nxt)
            for g, r in layer.items():
                if r < required.get(g, INF):
                    required[g] = r
        return required

    def clock_sources(self) -> dict[Group, float]:
        """Arrivals launched by registers: own ones at sink groups, children's at theirs."""
        init = dict(self.char.clk_arrival)
        for (child, _inst), gs in self.children.items():
            abstract = self.abstracts.get(child)
            for g in gs:
                if abstract and g[0] == "co" and g[2:4] in abstract.clk_arrival:
                    init[g] = max(init.get(g, -INF), abstract.clk_arrival[g[2:4]])
        return init

    def endpoints(self) -> dict[Group, float]:
        """Required arrivals of registers: own ones at source groups, children's at theirs."""
        init = dict(self.char.required)
        for (child, _inst), gs in self.children.items():
            abstract = self.abstracts.get(child)
            for g in gs:
                if abstract and g[0] == "ci" and g[2:4] in abstract.required:
                    init[g] = min(init.get(g, INF), abstract.required[g[2:4]])
        return init


def abstract(graph: GroupGraph) -> Abstract:
    """The module's own :class:`Abstract` from its graph."""
    arrival = graph.forward(graph.clock_sources())
    required = graph.backward(graph.endpoints())
    comb = {}
    for g in sorted(g for g in graph.nodes if g[0] == "in"):
        row = {v[2:4]: d for v, d in graph.forward({g: 0.0}).items() if v[0] == "out"}
        if row:
            comb[g[2:4]] = row
    return Abstract({g[2:4]: a for g, a in arrival.items() if g[0] == "out" and a != -INF},
                    {g[2:4]: r for g, r in required.items() if g[0] == "in" and r != INF},
                    comb)


# --------------------------------------------------------------------------------------------
# Step 3: contexts, top-down.

#: One context of a module: (arrival at each input, required time at each output).
Context = tuple
#: Contexts kept per module: the worst by the slack they give its subtree. A context whose
#: subtree slack is better cannot hide a worse path below (every path through a child that
#: depends on the context is a path of the subtree), so dropping it keeps the design's WNS.
CONTEXTS_MAX = 16


@dataclass
class Contexts:
    """Per module: the context its final timing run uses (the one of its distinct contexts
    that is worst for its own cells), the arrival and required time that context gives each
    of its groups, how many contexts it had, and the worst slack of each module's graph."""
    arrival: dict[str, dict[Group, float]] = field(default_factory=dict)
    required: dict[str, dict[Group, float]] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)
    graph_slack: dict[str, float] = field(default_factory=dict)


def _context_key(context: Context) -> tuple:
    return tuple(tuple(sorted((k, round(v, 3)) for k, v in side.items())) for side in context)


def _slacks(graph: GroupGraph, arrival: dict, required: dict) -> tuple[float, float]:
    """(worst slack over every group: the subtree's paths; worst over paths through the
    module's own cells) of one context's arrival and required times."""
    subtree = min((required[g] - a for g, a in arrival.items()
                   if a != -INF and required.get(g, INF) != INF), default=INF)
    own = INF
    for u, row in graph.char.comb.items():
        a = arrival.get(u, -INF)
        if a != -INF:
            own = min([own] + [required.get(v, INF) - a - d for v, d in row.items()])
    for g, r in graph.char.required.items():
        own = min(own, r - arrival.get(g, -INF))
    for g, a in graph.char.clk_arrival.items():
        own = min(own, required.get(g, INF) - a)
    return subtree, own


def contexts(order: list[str], top: str, top_ports: list[tuple[Key, str]],
             graphs: dict[str, GroupGraph], period: float) -> Contexts:
    """Every module's contexts, parents first (``order``): the top's ports keep the
    :data:`IO_BUDGET`; in each context of a module, arrivals go forward and required times
    backward through its graph, and each child instance (or group of instances) gets a
    context of its own from them. A module's distinct contexts are kept (the
    :data:`CONTEXTS_MAX` worst), so the late input of one instance never meets the tight
    output of another."""
    budget = IO_BUDGET * period
    incoming: dict[str, dict[tuple, Context]] = defaultdict(dict)
    top_context = ({k: budget for k, d in top_ports if d == "input"},
                   {k: period - budget for k, d in top_ports if d != "input"})
    incoming[top][_context_key(top_context)] = top_context
    ctx = Contexts()
    for module in order:
        graph = graphs.get(module)
        if graph is None:
            continue
        evaluated = []
        for context in incoming.pop(module, {}).values():
            init = graph.clock_sources()
            for key, a in context[0].items():
                g = ("in", "", *key, "")
                init[g] = max(init.get(g, -INF), a)
            arrival = graph.forward(init)
            init = graph.endpoints()
            for key, r in context[1].items():
                g = ("out", "", *key, "")
                init[g] = min(init.get(g, INF), r)
            required = graph.backward(init)
            evaluated.append((*_slacks(graph, arrival, required), arrival, required))
        if not evaluated:   # no instance under the top reaches it
            continue
        ctx.count[module] = len(evaluated)
        evaluated.sort(key=lambda e: e[0])
        ctx.graph_slack[module] = evaluated[0][0]
        kept = evaluated[:CONTEXTS_MAX]
        own = min(kept, key=lambda e: e[1])
        ctx.arrival[module], ctx.required[module] = own[2], own[3]
        for _s, _o, arrival, required in kept:
            for (child, _inst), gs in graph.children.items():
                context = ({g[2:4]: arrival[g] for g in gs
                            if g[0] == "ci" and arrival.get(g, -INF) != -INF},
                           {g[2:4]: required[g] for g in gs
                            if g[0] == "co" and required.get(g, INF) != INF})
                incoming[child][_context_key(context)] = context
    return ctx


def port_delays(module: str, groups: Boundary, ctx: Contexts,
                period: float) -> tuple[dict[str, float], dict[str, float]]:
    """(input delay, output delay) of every port of ``module``'s timing run that the context
    constrains (library units): input delay = arrival at the port, output delay = period -
    required time (the modelled buffer tree's delay is added by the timing script)."""
    arrival, required = ctx.arrival.get(module, {}), ctx.required.get(module, {})
    inputs = {p: arrival[g] for p, g in groups.sources.items()
              if arrival.get(g, -INF) != -INF}
    outputs = {}
    for port, gs in groups.sinks.items():
        r = min((required.get(g, INF) for g in gs), default=INF)
        if r != INF:
            outputs[port] = period - r
    return inputs, outputs


# --------------------------------------------------------------------------------------------
# The three steps together.

def derive_delays(runs: dict[str, ModuleRun], hier: Hierarchy,
                  views: dict[tuple[str, str], MemoryView], pdk: Pdk, clock_period_ns: float,
                  work: Path, pool_map) -> tuple[dict[str, tuple[dict, dict]], dict]:
    """Steps 1-3 for every module of ``runs`` (timing runs, memory loads added).

    ``pool_map(function, items)`` runs the characterisations (in parallel). Returns the
    (input delays, output delays) of each module's timing run and a summary for the metrics.
    """
    period = pdk.to_library_time(clock_period_ns)
    groups = {m: boundary(run, hier.netlists[m], hier.fan[m], hier.netlists, views, pdk)
              for m, run in runs.items()}
    items = [(runs[m], groups[m]) for m in runs]
    memories = None
    if views:
        memories = memories_run(list(views.values()), pdk)
        items.append(memories)
    chars = dict(pool_map(lambda item: (item[0].module, characterise(
        item[0], item[1], pdk, clock_period_ns, work)), items))
    abstracts: dict[str, Abstract] = {}
    if memories is not None:
        whole = abstract(GroupGraph(chars[MEMORIES], memories[1], {}))
        split: dict[str, Abstract] = defaultdict(lambda: Abstract({}, {}, {}))
        for (name, bit), a in whole.clk_arrival.items():
            wrapper, port = name.split(SEP, 1)
            split[wrapper].clk_arrival[(port, bit)] = a
        for (name, bit), r in whole.required.items():
            wrapper, port = name.split(SEP, 1)
            split[wrapper].required[(port, bit)] = r
        abstracts.update(split)   # no path through a macro: comb stays empty
    order = [m for m in top_down(hier) if m in runs]
    graphs: dict[str, GroupGraph] = {}
    for module in reversed(order):   # children first
        graphs[module] = GroupGraph(chars[module], groups[module], abstracts)
        abstracts[module] = abstract(graphs[module])
    top = hier.top
    top_netlist = hier.netlists[top]
    top_ports = [((p, group_bit(i, len(top_netlist.port_bits[p]))), d)
                 for p, d, _r in top_netlist.ports if p != runs[top].clock_port
                 for i in top_netlist.port_indices(p)]
    ctx = contexts(order, top, top_ports, graphs, period)
    delays = {m: port_delays(m, groups[m], ctx, period) for m in runs}
    unit_ns = pdk.time_unit_ps * 1e-3
    summary = {
        "method": "context",
        "top_io_budget": IO_BUDGET,
        "looped_groups": sorted(m for m, g in graphs.items() if g.cyclic),
        "contexts": {m: n for m, n in sorted(ctx.count.items()) if n > 1},
        "graph_wns_ns": _worst(ctx.graph_slack.values(), min, unit_ns),
        "characterisation_runs": sum(1 for r in runs.values() if r.leaf_cells) + bool(views),
        "top_abstract_ns": {
            "worst_clk_to_output": _worst(abstracts[top].clk_arrival.values(), max, unit_ns),
            "worst_input_required": _worst(abstracts[top].required.values(), min, unit_ns)},
    }
    return delays, summary


def _worst(values, pick, scale: float) -> float | None:
    values = [v for v in values if math.isfinite(v)]
    return round(pick(values) * scale, 4) if values else None
