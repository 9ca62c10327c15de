"""cocotb drivers shared by every unit: stream source and sink, lane packing, scoreboard.

A stream ``prefix`` maps to Amaranth's flattened ports ``<prefix>__valid``, ``__ready``,
``__payload``. Sideband ports (lane vectors sampled with the same transfer) are named explicitly.
Handshakes are sampled at the rising edge, where cocotb reads the pre-edge values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from cocotb.triggers import RisingEdge

__all__ = ["pack_lanes", "unpack_lanes", "pack_struct", "StreamSource", "StreamSink", "Scoreboard",
           "start"]


def pack_lanes(values, width: int) -> int:
    """Pack lane values (lane 0 in the least significant bits) into one integer."""
    mask = np.uint64((1 << width) - 1) if width < 64 else np.uint64(~np.uint64(0))
    values = np.asarray(values).astype(np.uint64) & mask
    if width in (8, 16, 32, 64):
        return int.from_bytes(values.astype(f"<u{width // 8}").tobytes(), "little")
    if width == 1:
        return int.from_bytes(np.packbits(values.astype(np.uint8), bitorder="little").tobytes(),
                              "little")
    result = 0
    for n, v in enumerate(values.tolist()):
        result |= int(v) << (n * width)
    return result


def unpack_lanes(value: int, width: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_lanes`; returns ``uint64`` lane values."""
    if width in (8, 16, 32, 64):
        raw = int(value).to_bytes(count * width // 8, "little")
        return np.frombuffer(raw, dtype=f"<u{width // 8}").astype(np.uint64)
    mask = (1 << width) - 1
    return np.array([(int(value) >> (n * width)) & mask for n in range(count)], dtype=np.uint64)


def pack_struct(layout, **fields) -> int:
    """Pack a payload from the RTL's own ``amaranth.lib.data`` layout (no hand-coded offsets)."""
    return layout.const(fields).as_value().value


def _signal(dut, name):
    try:
        return getattr(dut, name)
    except AttributeError:
        raise AttributeError(f"DUT {dut._name} has no port {name!r}") from None


class StreamSource:
    """Drives ``<prefix>__valid/payload`` (+ sideband ports) and waits for ``__ready``."""

    def __init__(self, dut, prefix: str, clk, *, idle_prob: float = 0.0, rng=None):
        self.valid = _signal(dut, f"{prefix}__valid")
        self.ready = _signal(dut, f"{prefix}__ready")
        self.payload = getattr(dut, f"{prefix}__payload", None)
        self.dut, self.clk = dut, clk
        self.idle_prob, self.rng = idle_prob, rng or random.Random()
        self.valid.value = 0

    async def send(self, payload: int = 0, **sideband: int) -> None:
        while self.idle_prob and self.rng.random() < self.idle_prob:
            await RisingEdge(self.clk)
        if self.payload is not None:
            self.payload.value = payload
        for name, value in sideband.items():
            _signal(self.dut, name).value = value
        self.valid.value = 1
        while True:
            await RisingEdge(self.clk)
            if self.ready.value:
                break
        self.valid.value = 0


class StreamSink:
    """Accepts ``<prefix>`` transfers with random backpressure; records payload and sideband."""

    def __init__(self, dut, prefix: str, clk, *, sideband: tuple[str, ...] = (),
                 ready_prob: float = 1.0, rng=None):
        self.valid = _signal(dut, f"{prefix}__valid")
        self.ready = _signal(dut, f"{prefix}__ready")
        self.payload = getattr(dut, f"{prefix}__payload", None)
        self.sideband = {name: _signal(dut, name) for name in sideband}
        self.clk, self.ready_prob, self.rng = clk, ready_prob, rng or random.Random()
        self.items: list[dict] = []
        self.ready.value = 0

    async def run(self) -> None:
        while True:
            self.ready.value = int(self.rng.random() < self.ready_prob)
            await RisingEdge(self.clk)
            if self.valid.value and self.ready.value:
                item = {name: int(sig.value) for name, sig in self.sideband.items()}
                if self.payload is not None:
                    item["payload"] = int(self.payload.value)
                self.items.append(item)

    async def wait_for(self, count: int, timeout_cycles: int = 100_000) -> list[dict]:
        for _ in range(timeout_cycles):
            if len(self.items) >= count:
                return self.items[:count]
            await RisingEdge(self.clk)
        raise TimeoutError(f"expected {count} transfers, got {len(self.items)} "
                           f"after {timeout_cycles} cycles")


@dataclass
class Scoreboard:
    """Compares observed results with golden expectations, in order, bit for bit."""
    name: str
    log: object = None
    checked: int = 0
    failures: list[str] = field(default_factory=list)

    def compare(self, label: str, expected, observed) -> None:
        expected, observed = np.asarray(expected), np.asarray(observed)
        self.checked += 1
        if expected.shape != observed.shape or not np.array_equal(expected, observed):
            bad = np.flatnonzero(expected.ravel() != observed.ravel()) \
                if expected.shape == observed.shape else []
            detail = ", ".join(f"[{i}] expected {int(expected.ravel()[i]):#x} got "
                               f"{int(observed.ravel()[i]):#x}" for i in bad[:8])
            msg = f"{self.name} {label}: mismatch in {len(bad)} element(s): {detail}"
            self.failures.append(msg)
            if self.log:
                self.log.error(msg)

    def result(self) -> None:
        assert self.checked, f"{self.name}: nothing was checked"
        assert not self.failures, f"{self.name}: {len(self.failures)} mismatching transfers; " \
            f"first: {self.failures[0]}"
        if self.log:
            self.log.info("%s: %d transfers match the golden model", self.name, self.checked)


async def start(dut, period_ns: float = 2.0, reset_cycles: int = 3):
    """Start ``clk`` and hold the synchronous active-high ``rst`` for a few cycles."""
    import cocotb
    from cocotb.clock import Clock

    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
    dut.rst.value = 1
    for _ in range(reset_cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    return dut.clk
