"""Pipeline registers at named cut points, shared by the arithmetic blocks.

A pipelinable block describes its datapath once and calls :meth:`Stages.cut` at each of its
candidate cut points, in dataflow order, with the values that are live there. A table per block
says which cut points are active at each depth (:func:`depth_cuts`); an active cut registers its
values, an inactive one passes them through untouched, so depth 0 is the combinational block,
gate for gate.

The registers of the ``j``-th active cut are stage ``j``: they are ``reset_less`` and load only
when ``load[j]`` is high, which is :attr:`~memwall.hdl.common.lanes.LockstepControl.load` of the
lane's control (valid data enters that stage), so an idle pipeline does not toggle. A block with
``k`` stages has a latency of ``k`` cycles from its inputs to its output. A pipelined block
expects registered inputs and a register close behind its output (its first and last stages
are cut for that): d-PLENA's lanes register their operands in front of the block and their
result behind it (``LockstepControl(latency=k + 2)``, :mod:`memwall.families.dplena.config`).
"""

from __future__ import annotations

from collections.abc import Mapping

from amaranth.hdl import Module, Signal, Value

__all__ = ["Stages", "delay", "depth_cuts", "with_stages"]


def depth_cuts(table: Mapping[int, tuple[str, ...]], stages, what: str) -> tuple[str, ...]:
    """The active cut points of ``what`` at depth ``stages``, from its ``table``.

    ``table`` maps each depth ``k >= 1`` to ``k`` cut point names; depth 0 has none. Raises
    ``ValueError`` naming the allowed range when ``stages`` is not an int in ``0..max(table)``.
    """
    top = max(table, default=0)
    if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages <= top:
        raise ValueError(f"{what}: stages must be an int in 0..{top}, got {stages!r}")
    return table[stages] if stages else ()


def with_stages(params: dict, stages: int) -> dict:
    """``params`` plus ``"stages"`` when the block is pipelined; depth 0 keeps the same key
    (and so the same deduplicated module name) as the combinational block always had."""
    return {**params, "stages": stages} if stages else dict(params)


def delay(m: Module, value, loads, name: str, domain: str = "sync") -> Value:
    """``value`` behind ``len(loads)`` registers, register ``j`` loading when ``loads[j]``.

    Pads a block that has fewer stages than the lane it sits in, so every block of the lane
    delivers its result at the same stage. No loads: ``value`` itself.
    """
    value = Value.cast(value)
    for j, load in enumerate(loads):
        reg = Signal(value.shape(), name=f"{name}_d{j + 1}", reset_less=True)
        with m.If(load):
            m.d[domain] += reg.eq(value)
        value = reg
    return value


class Stages:
    """The pipeline registers of one block.

    Parameters
    ----------
    m : Module
        The block's module; registers go to its ``domain``.
    points : tuple[str, ...]
        Every candidate cut point of the block, in dataflow order.
    active : tuple[str, ...]
        The cut points that get registers, a subsequence of ``points``.
    load : Value, optional
        ``len(active)`` enable bits, bit ``j`` for the ``j``-th active cut. Needed when
        ``active`` is not empty.
    domain : str
        Clock domain of the registers.
    """

    def __init__(self, m: Module, points: tuple[str, ...], active: tuple[str, ...],
                 load: Value | None = None, domain: str = "sync"):
        unknown = [name for name in active if name not in points]
        if unknown:
            raise ValueError(f"unknown cut points {unknown}; the block has {list(points)}")
        order = [points.index(name) for name in active]
        if order != sorted(set(order)):
            raise ValueError(f"active cuts {list(active)} are not in dataflow order "
                             f"{list(points)} (or repeat one)")
        if active and (load is None or len(Value.cast(load)) != len(active)):
            raise ValueError(f"{len(active)} active cuts need a {len(active)}-bit load, "
                             f"got {None if load is None else len(Value.cast(load))}")
        self._m, self._points, self._active = m, tuple(points), tuple(active)
        self._load, self._domain = load, domain
        self._last = -1          # index in points of the last cut reached
        self._reached: list[str] = []

    @property
    def depth(self) -> int:
        """Number of register stages (active cuts)."""
        return len(self._active)

    def active(self, name: str) -> bool:
        """Whether cut point ``name`` gets registers (a block may pick a datapath form that
        suits the cut, e.g. a multiplier split in partial products)."""
        self._check_name(name)
        return name in self._active

    def cut(self, name: str, *signals: Signal, **values) -> tuple[Value, ...]:
        """The values at cut point ``name``: registered if the cut is active, else unchanged.

        ``signals`` are named signals (their registers take their names), ``values`` any
        value-like expressions named by keyword. Returns them in that order, as a tuple; every
        value the rest of the datapath uses must go through the cut. A register of stage ``j``
        is called ``p<j+1>_<name>``.
        """
        self._check_name(name)
        index = self._points.index(name)
        if index <= self._last:
            raise ValueError(f"cut point {name!r} reached after "
                             f"{self._points[self._last]!r}: cuts go in dataflow order")
        self._last = index
        named = []
        for sig in signals:
            if not isinstance(sig, Signal):
                raise TypeError(f"cut {name!r}: positional values must be Signals (named); "
                                f"pass other values by keyword")
            named.append((sig.name, sig))
        named += list(values.items())
        if name not in self._active:
            return tuple(value for _, value in named)
        j = self._active.index(name)
        self._reached.append(name)
        out = []
        for key, value in named:
            value = Value.cast(value)
            out.append(Signal(value.shape(), name=f"p{j + 1}_{key}", reset_less=True))
        with self._m.If(self._load[j]):
            self._m.d[self._domain] += [reg.eq(value) for reg, (_, value) in
                                        zip(out, named, strict=True)]
        return tuple(out)

    def done(self) -> None:
        """Check that every active cut was reached (call at the end of ``elaborate``)."""
        missed = [name for name in self._active if name not in self._reached]
        if missed:
            raise RuntimeError(f"active cut points {missed} were never reached")

    def _check_name(self, name: str) -> None:
        if name not in self._points:
            raise ValueError(f"unknown cut point {name!r}; the block has {list(self._points)}")
