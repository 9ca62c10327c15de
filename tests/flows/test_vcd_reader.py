"""The flow's streaming VCD reader against vcdvcd's parse of the same file.

:func:`memwall.flows.activity.activity_from_vcd` streams a VCD twice and keeps each signal's
counts bit-sliced (:class:`memwall.flows.activity._Bits`), since a whole-core run's VCD is
hundreds of MB. vcdvcd holds the whole file in memory: too big for those, but an independent
reference for small files. From its parse every module's per-bit [toggles per cycle, duty] is
recomputed with ``bit_activity`` (the flow's path before it had its own reader) and averaged
over the module's instances, the traces with ``bit_trace``; the reader must give the same.

Two VCDs: a hand-written one with the cases a reader gets wrong (vectors shorter than their var,
extended with 0 or their leading x/z; x and z, either case, in scalars and vectors; changes off
the clock edges and outside the window; a ``$var`` and a ``$timescale`` over several lines; an
Amaranth submodule scope flattened into its instance; id codes shared by scopes), and a seeded
random one (1 to 130 bits, x/z sprinkled, more instances and cycles than are traced, times in
steps of 2). Dropping a carry in the bit-sliced counts, counting x or z as 1 or a change from or
to x/z as a toggle, or losing a change of a traced signal fails both.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from vcdvcd import VCDVCD

from memwall.flows import activity

LEAF_SCOPE = """$scope module {name} $end
$var wire 1 ! clk $end
$var wire 1 {d} d $end
$var wire 8 {data} data [7:0] $end
$scope module fifo $end
$var wire 3 {level} level [2:0] $end
$upscope $end
$upscope $end
"""

#: Clock ! in every scope, top's bus " is u1's data, idle never has a value; fifo is no
#: module of the design.
HAND_HEADER = ("$date\n  today\n$end\n$timescale 1ps $end\n$scope module TOP $end\n"
               "$var wire 1 ! clk $end\n$scope module top $end\n$var wire 1 ! clk $end\n"
               "$var wire 8 \" bus [7:0] $end\n$var wire 4 ( idle [3:0] $end\n"
               + LEAF_SCOPE.format(name="u0", d="#", data="$", level="%")
               + LEAF_SCOPE.format(name="u1", d="&", data='"', level="'")
               + "$upscope $end\n$upscope $end\n$enddefinitions $end\n")

#: Its value changes besides the clock (period 10, rising at 5 to 85): "time: change | ...".
HAND_CHANGES = """\
0: bx " | x# | b0 $ | bz % | 0& | b0 '
3: b101 " | 1& | b100 '
7: 1# | b11110000 $
12: bx1 "
13: z& | b1 % | b11 '
15: 0#
21: b101 " | b1111 $ | 1& | 1#
25: bz0 $
28: b10 % | X#
34: b11111111 "
35: 0& | b1x1 '
41: b0 $
44: b110 % | 1&
47: b1x0 "
52: 1# | b111 % | b0 '
55: b10101010 $
63: b1 " | 0&
65: b01010101 $ | Z#
71: 0#
75: b11 '
77: b0 % | 1&
82: 1# | b10 "
85: b11 $
88: 0#"""


def clocked_vcd(header: str, changes: dict, clock: str, period: int, rises: int) -> str:
    """``header`` and ``changes`` (time -> value changes) with the clock: 0 at time 0, then
    ``rises`` periods of 1 in the first half and 0 in the second."""
    at = defaultdict(list, {0: [f"0{clock}"]})
    for k in range(rises):
        at[period // 2 + k * period].append(f"1{clock}")
        at[(k + 1) * period].append(f"0{clock}")
    for time, values in changes.items():
        at[time] += values
    return header + "".join(f"#{t}\n" + "".join(v + "\n" for v in at[t]) for t in sorted(at))


def bit_keys(name: str, size: int) -> list[str]:
    """The flow's key of each bit, MSB first: ``data[7:0]`` -> ``data[7]`` .. ``data[0]``."""
    base, bracket, index = name.partition("[")
    if not bracket:
        return [name] if size == 1 else [f"{name}[{i}]" for i in reversed(range(size))]
    msb, _, lsb = index.rstrip("]").partition(":")
    msb, lsb = int(msb), int(lsb or msb)
    step = -1 if msb >= lsb else 1
    return [f"{base}[{i}]" for i in range(msb, lsb + step, step)]


def reference_modules(vcd_path, scopes: dict[str, str]) -> tuple[float, dict]:
    """(clock period in ns, modules) as activity_from_vcd must give them, from vcdvcd."""
    vcd = VCDVCD(str(vcd_path), store_tvs=True, store_scopes=True)
    clock = vcd[f"{min(scopes, key=len)}.clk"].tv
    rises = [t for (t, v), (_, p) in zip(clock[1:], clock[:-1], strict=True)
             if v == "1" and p == "0"]
    start, end, cycles = rises[0], rises[-1], len(rises) - 1
    edges = rises[:-1][:activity.TRACE_CYCLES]
    rates = defaultdict(lambda: defaultdict(list))   # module -> bit -> per instance
    traces = defaultdict(lambda: defaultdict(list))
    instances = defaultdict(int)
    for scope, module in sorted(scopes.items()):
        instances[module] += 1
        for reference, code in vcd.references_to_ids.items():
            # The innermost module scope owns a variable: a sub-scope that is no module (a
            # flattened submodule) gives its variables to it, named by the path below it.
            owner = max((s for s in scopes if reference.startswith(s + ".")), key=len,
                        default=None)
            if owner != scope:
                continue
            size, tv = int(vcd.data[code].size), vcd.data[code].tv
            keys = bit_keys(reference[len(scope) + 1:], size)
            for key, rate in zip(keys, activity.bit_activity(tv, size, start, end, cycles),
                                 strict=True):
                rates[module][key].append(rate)
            if instances[module] <= activity.TRACE_INSTANCES:
                for key, word in zip(keys, activity.bit_trace(tv, size, edges), strict=True):
                    traces[module][key].append(word)
    modules = {m: {"instances": instances[m], "trace_cycles": len(edges),
                   "signals": {k: [sum(r[0] for r in v) / len(v), sum(r[1] for r in v) / len(v)]
                               for k, v in bits.items()},
                   "traces": dict(traces[m])}
               for m, bits in rates.items()}
    return (end - start) / cycles * float(vcd.timescale["timescale"]) * 1e9, modules


def assert_reader_matches_vcdvcd(reader_vcd, reference_vcd, tree, scopes):
    act = activity.activity_from_vcd(reader_vcd, tree)
    period_ns, expected = reference_modules(reference_vcd, scopes)
    assert act["scopes"] == scopes
    assert act["clock_period_ns"] == pytest.approx(period_ns, rel=1e-12)
    assert sorted(act["modules"]) == sorted(expected)
    for module, want in expected.items():
        got = act["modules"][module]
        assert (got["instances"], got["trace_cycles"]) == \
            (want["instances"], want["trace_cycles"]), module
        assert sorted(got["signals"]) == sorted(want["signals"]), module
        for key, rate in want["signals"].items():
            assert got["signals"][key] == pytest.approx(rate, rel=1e-12), (module, key)
        assert got["traces"] == want["traces"], module


def test_hand_written_vcd_matches_vcdvcd(tmp_path):
    changes = {int(time): [change.strip() for change in row.split("|")]
               for time, row in (line.split(":") for line in HAND_CHANGES.splitlines())}
    text = clocked_vcd(HAND_HEADER, changes, "!", 10, 9)
    reference = tmp_path / "reference.vcd"
    reference.write_text(text)
    # vcdvcd reads one definition per line: it gets the same VCD with them on one line.
    spread = tmp_path / "spread.vcd"
    spread.write_text(text.replace("$timescale 1ps $end", "$timescale\n  1ps\n$end")
                      .replace("$var wire 8 $ data [7:0] $end", "$var wire 8 $\n data [7:0]\n$end"))
    tree = {"top": [{"instance": "u0", "module": "leaf"}, {"instance": "u1", "module": "leaf"}],
            "leaf": []}
    scopes = {"TOP.top": "top", "TOP.top.u0": "leaf", "TOP.top.u1": "leaf"}
    assert_reader_matches_vcdvcd(spread, reference, tree, scopes)


def random_vcd(rng, cycles: int, instances: int) -> str:
    """A VCD of a top and ``instances`` instances ``u<k>`` with a flattened ``fifo`` scope each,
    over ``cycles`` clock periods of 20, every signal changing in 40% of them at an even time."""
    top_vars = [("flag[3]", 1), ("bus[129:0]", 130)]
    leaf_vars = [("v", 1), ("slice[8:2]", 7), ("w[63:0]", 64), ("wide[129:0]", 130),
                 ("count", 5), ("fifo.level[0:2]", 3)]
    codes = iter(chr(34 + i // 90) + chr(34 + i % 90) for i in range(90 * 90))
    signals = [(next(codes), size) for _, size in top_vars]
    lines = ["$timescale 1ns $end", "$scope module TOP $end", "$var wire 1 ! clk $end",
             "$scope module top $end", "$var wire 1 ! clk $end"]
    lines += [f"$var wire {size} {code} {name} $end"
              for (name, size), (code, _) in zip(top_vars, signals, strict=True)]
    for k in range(instances):
        lines += [f"$scope module u{k} $end", "$var wire 1 ! clk $end"]
        for name, size in leaf_vars:
            signals.append((next(codes), size))
            scope, _, name = name.rpartition(".")
            var = f"$var wire {size} {signals[-1][0]} {name} $end"
            lines += [f"$scope module {scope} $end", var, "$upscope $end"] if scope else [var]
        lines.append("$upscope $end")
    lines += ["$upscope $end", "$upscope $end", "$enddefinitions $end"]

    def change(code, size):
        if size == 1 and rng.random() < 0.9:
            return rng.choice(list("0101010101xzXZ")) + code
        bits = rng.choice(list("01"), size)
        if rng.random() < 0.2:   # x/z sprinkled over some bits
            bits[rng.random(size) < 0.3] = rng.choice(list("xzXZ"))
        text = "".join(bits)
        if rng.random() < 0.5:   # writers drop leading zeros; a leading x/z extends itself
            text = text[rng.integers(size):]
        return f"b{text} {code}"

    changes = defaultdict(list, {0: [change(code, size) for code, size in signals]})
    for cycle in range(cycles + 1):
        for code, size in signals:
            if rng.random() < 0.4:
                changes[20 * cycle + 2 * int(rng.integers(10))].append(change(code, size))
    return clocked_vcd("\n".join(lines) + "\n", changes, "!", 20, cycles)


def test_random_vcd_matches_vcdvcd(tmp_path):
    instances = activity.TRACE_INSTANCES + 2
    path = tmp_path / "random.vcd"
    path.write_text(random_vcd(np.random.default_rng(20240611), activity.TRACE_CYCLES + 88,
                               instances))
    tree = {"top": [{"instance": f"u{k}", "module": "leaf"} for k in range(instances)],
            "leaf": []}
    scopes = {"TOP.top": "top"} | {f"TOP.top.u{k}": "leaf" for k in range(instances)}
    assert_reader_matches_vcdvcd(path, path, tree, scopes)
