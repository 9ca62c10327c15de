"""cocotb testbenches: elementwise unit and scalar FP unit against the golden arithmetic."""

from __future__ import annotations

import random

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, RisingEdge

from memwall.golden.common.formats import BF16
from memwall.golden.common.fparith import fp32_to_bf16, fp_add, fp_mul, fp_sub
from memwall.golden.common.transcendental import bf16_exp, bf16_recip
from memwall.hdl.dplena.elementwise import EW_CMD, SCALAR_CMD, EwOp, ScalarOp
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import (
    Scoreboard,
    StreamSink,
    StreamSource,
    pack_lanes,
    pack_struct,
    start,
    unpack_lanes,
)
from memwall.verif.dplena.stimulus import SPECIALS, bf16_vector, fp32_sticky_ties

ALL_BF16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)

EW_GOLDEN = {
    EwOp.ADD: lambda a, b: fp_add(a, b, BF16),
    EwOp.SUB: lambda a, b: fp_sub(a, b, BF16),
    EwOp.MUL: lambda a, b: fp_mul(a, b, BF16),
    EwOp.EXP: lambda a, b: bf16_exp(a),
}
SCALAR_GOLDEN = {
    ScalarOp.EXP: lambda a: bf16_exp((a & 0xFFFF).astype(np.uint16)),
    ScalarOp.RECIP: lambda a: bf16_recip((a & 0xFFFF).astype(np.uint16)),
    ScalarOp.TO_BF16: lambda a: fp32_to_bf16(a.astype(np.uint32)),
}


async def _run(dut, cases, cmd_layout, operands, result_width=16):
    """Drive ``cases`` of (cmd fields, {port: lane values}, expected), then score in order."""
    lanes = tb_params()["lanes"]
    clk = await start(dut)
    source = StreamSource(dut, "i", clk, idle_prob=0.1, rng=random.Random(cocotb.RANDOM_SEED))
    sink = StreamSink(dut, "o", clk, sideband=("y",), ready_prob=0.7,
                      rng=random.Random(cocotb.RANDOM_SEED + 1))
    cocotb.start_soon(sink.run())

    # The command comes back with its result: every field (the tag over all its values) is
    # checked, as a sequencer matches results by it.
    commands = [pack_struct(cmd_layout, tag=n % 16, **fields)
                for n, (fields, _, _) in enumerate(cases)]

    async def drive():
        for command, (_, ports, _) in zip(commands, cases, strict=True):
            packed = {name: pack_lanes(ports[name], width) for name, width in operands.items()}
            await source.send(command, **packed)

    cocotb.start_soon(drive())
    isolation = []
    blocks = _lane_blocks(dut)
    if blocks:
        cocotb.start_soon(_check_isolation(clk, blocks, isolation))
    observed = await sink.wait_for(len(cases), timeout_cycles=50 * len(cases) + 1000)
    assert not isolation, f"{len(isolation)} cycles broke operand isolation; first: {isolation[0]}"
    board = Scoreboard(dut._name, dut._log)
    for n, ((fields, _, expected), item) in enumerate(zip(cases, observed, strict=True)):
        got = unpack_lanes(item["y"], result_width, lanes).astype(np.uint16)
        board.compare(f"case {n} {fields.get('op')} y", expected.astype(np.uint16), got)
        board.compare(f"case {n} command", commands[n], item["payload"])
    board.result()


def _lane_blocks(dut) -> list[tuple] | None:
    """Each lane's adder, multiplier and exp block inputs, as Icarus shows them inside the
    unit (Verilator keeps only the ports); None for another design (the scalar FP unit's
    lanes have no such blocks). A lane is ``lane[<i>].u`` as Yosys writes the unit back for
    mutation (an escaped name, which Icarus shows only among its parent's children, and so
    too the lane's own), or in a generate array as Amaranth writes it."""
    if "icarus" not in cocotb.SIM_NAME.lower():
        return None
    lanes = _children(dut)
    try:
        lanes = [_children(lanes[f"lane[{i}].u"] if f"lane[{i}].u" in lanes else dut.lane[i].u)
                 for i in range(tb_params()["lanes"])]
    except (AttributeError, IndexError):
        return None
    if "add" not in lanes[0]:
        return None
    ports = [{block: _children(u[block]) for block in ("add", "mul", "exp")} for u in lanes]
    return [((p["add"]["a"], p["add"]["b"]), (p["mul"]["a"], p["mul"]["b"]), (p["exp"]["a"],))
            for p in ports]


def _children(handle) -> dict:
    return {child._name: child for child in handle}


def _nonzero(value) -> bool:
    """A 1 among the bits. Bits that are x count as no 1: the unit as Yosys writes it back
    for mutation leaves some don't-care operands x where Amaranth's Verilog gives a value."""
    return "1" in str(value)


async def _check_isolation(clk, blocks, errors: list) -> None:
    """Operand isolation, a power contract no output shows: each cycle, in every lane, at
    most one of the three blocks (the one the op uses) sees a non-zero operand."""
    cycle = 0
    while True:
        await RisingEdge(clk)
        await ReadOnly()
        cycle += 1
        for lane, ports in enumerate(blocks):
            busy = [n for n, block in zip(("add", "mul", "exp"), ports, strict=True)
                    if any(_nonzero(port.value) for port in block)]
            if len(busy) > 1:
                errors.append(f"cycle {cycle}, lane {lane}: {' and '.join(busy)} both see "
                              "operands")


def _chunks(values: np.ndarray, lanes: int):
    pad = (-len(values)) % lanes
    return np.concatenate([values, values[:pad]]).reshape(-1, lanes)


@cocotb.test()
async def elementwise_ops(dut):
    lanes = tb_params()["lanes"]
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    cases = []
    # exp of every BF16 input (the golden model's error bound is measured on the same set)
    representative = tb_params().get("representative", False)
    for a in [] if representative else _chunks(ALL_BF16, lanes):
        cases.append(({"op": EwOp.EXP}, {"a": a, "b": a}, EW_GOLDEN[EwOp.EXP](a, a)))
    # The power workload keeps to logits-like operands; verification adds every corner case.
    kinds = ("random",) if representative else (
        "random", "wide", "specials", "denormal", "nan", "ties", "zeros")
    for _ in range(tb_params().get("vectors_per_op", 60)):
        for op in (EwOp.ADD, EwOp.SUB, EwOp.MUL):
            a = bf16_vector(rng, lanes, str(rng.choice(kinds)))
            b = bf16_vector(rng, lanes, str(rng.choice(kinds)))
            if not representative and rng.random() < 0.3:   # cancellation, rounding ties
                b = (a ^ rng.integers(0, 4, lanes, dtype=np.uint16)).astype(np.uint16)
            scalar = int(bf16_vector(rng, 1, str(rng.choice(kinds)))[0])
            scalar_b = bool(rng.random() < 0.4)
            b_eff = np.full(lanes, scalar, np.uint16) if scalar_b else b
            fields = {"op": op, "scalar_b": int(scalar_b), "scalar": scalar}
            cases.append((fields, {"a": a, "b": b}, EW_GOLDEN[op](a, b_eff)))
    await _run(dut, cases, EW_CMD, {"a": 16, "b": 16})


@cocotb.test()
async def scalar_ops(dut):
    lanes = tb_params()["lanes"]
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    cases = []
    # Every BF16 input when the array is wide enough; a random sample through a single lane.
    pool = ALL_BF16 if tb_params().get("exhaustive", True) else np.concatenate(
        [SPECIALS, rng.choice(ALL_BF16, 400)])
    for op in (ScalarOp.EXP, ScalarOp.RECIP):
        for a in _chunks(pool.astype(np.uint32), lanes):
            junk_high = rng.integers(0, 1 << 16, lanes, dtype=np.uint32) << 16  # must be ignored
            cases.append(({"op": op}, {"a": a | junk_high}, SCALAR_GOLDEN[op](a)))
    for vector in range(tb_params().get("to_bf16_vectors", 200)):
        a = rng.integers(0, 1 << 32, lanes, dtype=np.uint64).astype(np.uint32)
        a[rng.random(lanes) < 0.2] &= 0x807FFFFF               # subnormals
        a[rng.random(lanes) < 0.2] |= 0x7F800000               # inf / NaN
        tie = rng.random(lanes) < 0.2                          # exact rounding ties
        a[tie] = (a[tie] & 0xFFFF0000) | 0x8000
        # Ties but for one sticky bit, each bit in turn, on an even result half the time: a
        # dropped sticky bit rounds them down to even.
        near = rng.random(lanes) < 0.4
        turn = vector * lanes + np.arange(lanes)
        a[near] = fp32_sticky_ties(a[near], turn[near])
        cases.append(({"op": ScalarOp.TO_BF16}, {"a": a}, SCALAR_GOLDEN[ScalarOp.TO_BF16](a)))
    await _run(dut, cases, SCALAR_CMD, {"a": 32})
