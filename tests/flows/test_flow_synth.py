"""``memwall.flows.synth``: hierarchical Yosys synthesis, area accounting, memories, failures.

dplena32 is synthesised once per PDK (asap7 ~70 s, sky130hd ~30 s with 2 jobs); everything else
uses designs of one or two small modules.
"""

from __future__ import annotations

import collections
import fnmatch
import io
import json
import math
import re
import shutil

import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from memwall.config import load_config
from memwall.flows import macro_map, synth
from memwall.flows.constants import MEMORY_CELL
from memwall.flows.errors import FlowError, PdkError
from memwall.flows.liberty import CELL_START
from memwall.flows.macro_map import choose_macro
from memwall.flows.netlist import read_netlist
from memwall.flows.pdk import find_pdk
from memwall.flows.synth import synthesize
from memwall.gen import generate
from memwall.hdl.common.netlist import Design, unique_submodule
from memwall.progress import Progress

PERIOD_NS = 1.0
CELL_LINE = re.compile(r"^\s*(\\?\S+)\s+\\?\S+\s*\($", re.M)

#: Progress lines of a synthesis the test does not read.
QUIET = Progress(plain=True, stream=io.StringIO())


def _pdk(name):
    try:
        return find_pdk(name)
    except PdkError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def gen32(tmp_path_factory):
    return generate(load_config("dplena32"), out_root=tmp_path_factory.mktemp("gen32"))


@pytest.fixture(scope="module", params=["asap7", "sky130hd"])
def synth16(request, gen32, tmp_path_factory):
    """(gen dir, pdk, out dir, result) for dplena32 on one PDK."""
    pdk = _pdk(request.param)
    out = tmp_path_factory.mktemp(f"synth16_{pdk.name}")
    stream = io.StringIO()
    result = synthesize(gen32, pdk, PERIOD_NS, out, jobs=2,
                        progress=Progress(plain=True, stream=stream))
    return gen32, pdk, out, result, stream.getvalue().splitlines()


def _manifest(gen_dir):
    return json.loads((gen_dir / "manifest.json").read_text())


def _one(by_module, prefix: str) -> str:
    """The one module named ``prefix...`` (names carry the pipeline depth, e.g. ``_stages2``)."""
    (name,) = [m for m in by_module if m.startswith(prefix)]
    return name


def _cell_types(netlist_text: str) -> collections.Counter:
    return collections.Counter(m.group(1).lstrip("\\") for m in CELL_LINE.finditer(netlist_text))


# -- dplena32 -----------------------------------------------------------------------------------
def test_every_module_gets_a_netlist_and_a_complete_log(synth16):
    gen_dir, pdk, out, result, lines = synth16
    manifest = _manifest(gen_dir)
    modules = manifest["modules"]
    assert set(result["area_by_module"]) == set(modules)
    platform = synth.PLATFORM_CELLS[pdk.name]
    ties = {platform.tiehi[0], platform.tielo[0]}
    for module in modules:
        text = (out / "netlist" / f"{module}.v").read_text()
        assert re.search(rf"^module {re.escape(module)}\(", text, re.M), module
        assert "End of script" in (out / "logs" / f"{module}.log").read_text(), module
        # Hierarchical: each child stays an instance, as many times as the manifest says.
        types = _cell_types(text)
        for child, count in manifest["hierarchy"].get(module, {}).items():
            assert types[child] == count, (module, child)
        # The same run's JSON netlist (what the flow reads) holds the same cells and ports.
        gates = read_netlist(out / "netlist" / f"{module}.json", module)
        assert collections.Counter(c.type for c in gates.cells) == types, module
        ports = re.search(rf"^module {re.escape(module)}\((.*?)\);", text, re.M | re.S)
        assert [p for p, _, _ in gates.ports] == \
            [p.strip().lstrip("\\") for p in ports.group(1).split(",")], module
        # Gate level: only library cells, children and nothing the PDK marks dont_use (except
        # the tie cells, which hilomap places on purpose: sky130hd's conb_1 is dont_use for ABC).
        for cell in set(types) - set(manifest["hierarchy"].get(module, {})) - ties:
            assert not cell.startswith("$"), (module, cell)
            assert not any(fnmatch.fnmatchcase(cell, p) for p in pdk.dont_use), (module, cell)
    assert len([line for line in lines if line.startswith("[") and "Yosys:" in line]) == \
        len(modules)
    repaired = [m for m, r in result["repair"].items() if r["buffers"] or r["resized"]]
    assert len([line for line in lines if line.startswith("[") and "repair:" in line]) == \
        len(repaired)
    for module, entry in result["repair"].items():
        # Every net within its driver's limit after the repair; each repaired module's log.
        assert entry["worst_load_after"]["of_limit"] <= 1.0, (module, entry)
        if entry["buffers"] or entry["resized"]:
            assert "End of script" in (out / "logs" / f"{module}.repair.log").read_text()
    assert re.search(r"^\[\d+/\d+\] Yosys: modules of \S+: \S+ \d+\.\d s \(elapsed ",
                     lines[2])
    assert result["yosys_version"].startswith("Yosys 0.58")
    assert result["runtime_s"] > 0 and result["peak_rss_mb"] > 0
    assert result["pdk"] == pdk.name and result["clock_period_ns"] == PERIOD_NS
    assert json.loads((out / "area.json").read_text()) == json.loads(json.dumps(result))


def test_memory_cells_keep_their_port_widths(synth16):
    """The repaired netlists keep every memory's ports as wide as the memory (a rewrite once
    cut them to the one-bit black-box stub: a 512-bit write enable became one bit)."""
    gen_dir, _, out, result, _ = synth16
    checked = 0
    for module in _manifest(gen_dir)["modules"]:
        cells = {c.name.lstrip("\\"): c for c in read_netlist(out / "netlist" / f"{module}.json",
                                                               module).cells}
        for mem in macro_map.memories((out / "work" / f"{module}.mem.il").read_text()):
            pins = cells[mem["cell"].lstrip("\\")].pins
            width, abits = int(mem["WIDTH"]), int(mem["ABITS"])
            assert len(pins["WR_DATA"]) == len(pins["RD_DATA"]) == width, (module, mem["cell"])
            assert len(pins["WR_ADDR"]) == len(pins["RD_ADDR"]) == abits, (module, mem["cell"])
            checked += 1
    assert checked >= 6 and any(r["buffers"] for r in result["repair"].values())


def test_area_adds_up(synth16):
    gen_dir, _, _, result, _ = synth16
    manifest = _manifest(gen_dir)
    by_module = result["area_by_module"]
    assert result["area_um2"] > 0
    for module, entry in by_module.items():
        assert entry["instances"] == manifest["instances"][module]
        assert entry["total_um2"] == pytest.approx(entry["own_um2"] * entry["instances"])
    assert result["area_um2"] == pytest.approx(sum(e["own_um2"] * e["instances"]
                                                   for e in by_module.values()))
    assert result["cells"] == sum(e["cells"] * e["instances"] for e in by_module.values())
    # Units: the top's direct children with their subtrees, plus the top's own cells.
    top = manifest["top"]
    units = result["area_by_unit"]
    assert set(units) == set(manifest["hierarchy"][top]) | {top}
    assert sum(u["area_um2"] for u in units.values()) == pytest.approx(result["area_um2"])
    elementwise = next(u for u in units if u.startswith("elementwise_unit"))
    lanes = sum(by_module[_one(by_module, m)]["total_um2"] for m in
                ("elementwise_lane_", "fp_add_fmtbf16_", "fp_mul_fmtbf16_"))
    assert units[elementwise]["area_um2"] >= lanes
    # Every memory of the core (Vector SRAM halves, FP/INT SRAM, instruction memory, FIFO) is a
    # macro black box, none became flip-flops; mapped wherever the PDK has SRAM macros.
    assert result["warnings"] == [] and len(result["macros"]) == 6
    assert all(m["status"] == "mapped" or m["reason"].endswith("has no SRAM macros")
               for m in result["macros"]), result["macros"]


def test_lane_areas_are_plausible(synth16):
    # Measured (1 ns target, ORFS dont_use lists): FP32 adder 129 um^2 / 1254 cells on ASAP7,
    # 7131 um^2 / 1132 cells on sky130hd; BF16 multiplier 85 / 4861 um^2; dplena32 in total
    # 7465 um^2 on ASAP7 and 0.42 mm^2 on sky130hd.
    _, pdk, _, result, _ = synth16
    by_module = result["area_by_module"]
    fp32_add = by_module[_one(by_module, "fp_add_fmtfp32_")]["own_um2"]
    bf16_mul = by_module[_one(by_module, "fp_mul_fmtbf16_")]["own_um2"]
    scale = {"asap7": 1.0, "sky130hd": 55.0}[pdk.name]  # sky130hd cells are ~40-60x larger
    assert 60 * scale < fp32_add < 400 * scale
    assert 30 * scale < bf16_mul < 300 * scale
    assert 500 < by_module[_one(by_module, "fp_add_fmtfp32_")]["cells"] < 3000
    # A BF16 adder is a narrower FP32 adder.
    assert by_module[_one(by_module, "fp_add_fmtbf16_")]["own_um2"] < fp32_add
    # The top only routes, plus the glue of the Vector SRAM write arbitration.
    assert by_module["dplena_core"]["cells"] < 40


# -- small designs ------------------------------------------------------------------------------
def _write_gen(design: Design, top: str, out):
    """A `memwall gen`-like folder (rtl/, manifest.json) for ``design``."""
    (out / "rtl").mkdir(parents=True)
    for module in design.module_names:
        (out / "rtl" / f"{module}.v").write_text(design.module_text(module))
    manifest = {"top": top, "modules": design.module_names,
                "hierarchy": {m: dict(c) for m, c in design.children.items()},
                "instances": design.instance_counts(top)}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


class Ram(wiring.Component):
    """A ``depth`` x ``width`` memory with one write and one read port.

    Parameters
    ----------
    depth, width : int
        Words and bits per word.
    async_read : bool
        Read combinationally (no SRAM macro can do that).
    """
    module_name = "ram"

    def __init__(self, depth: int, width: int, async_read: bool = False):
        self.depth, self.width, self.async_read = depth, width, async_read
        self.params = {"depth": depth, "width": width, "async_read": int(async_read)}
        super().__init__({"waddr": In(range(depth)), "wdata": In(width), "we": In(1),
                          "raddr": In(range(depth)), "rdata": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = memory.Memory(shape=self.width, depth=self.depth, init=[])
        write = mem.write_port()
        read = mem.read_port(domain="comb" if self.async_read else "sync")
        m.d.comb += [write.addr.eq(self.waddr), write.data.eq(self.wdata), write.en.eq(self.we),
                     read.addr.eq(self.raddr)]
        m.d.sync += self.rdata.eq(read.data + 1)   # some logic after the memory
        return m


class RamPair(wiring.Component):
    """Two 200 x 40 synchronous RAMs (as instances of one module) and a 32 x 8 asynchronous one."""

    def __init__(self):
        super().__init__({"waddr": In(8), "wdata": In(40), "we": In(1), "raddr": In(8),
                          "rdata": Out(40)})

    def elaborate(self, platform):
        m = Module()
        rams = [Ram(200, 40), Ram(200, 40), Ram(32, 8, async_read=True)]
        for i, ram in enumerate(rams):
            unique_submodule(m, f"ram{i}", ram)
            m.d.comb += [ram.waddr.eq(self.waddr), ram.wdata.eq(self.wdata),
                         ram.we.eq(self.we), ram.raddr.eq(self.raddr)]
        m.d.comb += self.rdata.eq(rams[0].rdata ^ rams[1].rdata ^ rams[2].rdata)
        return m


@pytest.fixture(scope="module")
def ram_gen(tmp_path_factory):
    design = Design()
    design.add_top(RamPair(), "ram_pair")
    return _write_gen(design, "ram_pair", tmp_path_factory.mktemp("ramgen") / "gen")


def _memory_modules(ram_gen):
    manifest = _manifest(ram_gen)
    sync = next(m for m in manifest["modules"] if m.startswith("ram_") and "asyncread0" in m)
    asynchronous = next(m for m in manifest["modules"] if "asyncread1" in m)
    return sync, asynchronous


@pytest.mark.tool
def test_memory_maps_to_the_least_energy_arrangement_within_the_area_slack(ram_gen, tmp_path):
    pdk = _pdk("asap7")
    result = synthesize(ram_gen, pdk, PERIOD_NS, tmp_path / "out", progress=QUIET)
    sync, asynchronous = _memory_modules(ram_gen)
    macros = {m["module"]: m for m in result["macros"]}
    assert set(macros) == {sync, asynchronous}

    mapped = macros[sync]
    assert (mapped["status"], mapped["depth"], mapped["width"]) == ("mapped", 200, 40)
    assert mapped["bits"] == 8000 and mapped["instances"] == 2
    costs = macro_map.macro_costs(pdk)     # the SRAM model's figures for every fakeram7 shape
    macro = next(m for m in pdk.macros if m.name == mapped["macro"])
    cols, count = math.ceil(40 / macro.width), \
        math.ceil(40 / macro.width) * math.ceil(200 / macro.depth)
    assert mapped["macro_count"] == count and mapped["chosen_by"] == "energy"
    assert mapped["area_um2"] == pytest.approx(count * costs[macro.name].area_um2)
    assert mapped["access_energy_pj"] == pytest.approx(
        cols * costs[macro.name].access_energy_j * 1e12)
    options = [(math.ceil(40 / m.width) * math.ceil(200 / m.depth) * costs[m.name].area_um2,
                math.ceil(40 / m.width) * costs[m.name].access_energy_j) for m in pdk.macros]
    least_area = min(a for a, _ in options)
    least = min(e for a, e in options if a <= least_area * (1 + macro_map.AREA_SLACK))
    assert mapped["access_energy_pj"] == pytest.approx(least * 1e12)
    assert mapped["total_um2"] == pytest.approx(2 * mapped["area_um2"])
    cheapest = mapped["area_um2"]

    unmapped = macros[asynchronous]
    assert unmapped["status"] == "unmapped" and "asynchronous" in unmapped["reason"]
    assert unmapped["bits"] == 256 and unmapped["area_um2"] == 0

    # Macro area is part of the module's own area; the memory never becomes flip-flops.
    entry = result["area_by_module"][sync]
    assert entry["macro_um2"] == pytest.approx(cheapest)
    assert entry["own_um2"] > entry["macro_um2"]
    for module in (sync, asynchronous):
        types = _cell_types((tmp_path / "out" / "netlist" / f"{module}.v").read_text())
        assert types[MEMORY_CELL] == 1
        flops = sum(n for cell, n in types.items() if cell.startswith("DFF"))
        assert flops <= 40, (module, flops)   # the output register only, not 8000 bits
    assert result["area_um2"] == pytest.approx(
        sum(e["own_um2"] * e["instances"] for e in result["area_by_module"].values()))


@pytest.mark.tool
def test_memory_is_unmapped_on_a_pdk_without_macros(ram_gen, tmp_path):
    pdk = _pdk("sky130hd")
    assert not pdk.macros
    result = synthesize(ram_gen, pdk, PERIOD_NS, tmp_path / "out", progress=QUIET)
    assert {m["status"] for m in result["macros"]} == {"unmapped"}
    assert sorted(m["bits"] for m in result["macros"]) == [256, 8000]
    sync, _ = _memory_modules(ram_gen)
    assert result["area_by_module"][sync]["macro_um2"] == 0
    assert result["area_by_module"][sync]["cells"] < 200


def test_choose_macro():
    pdk = _pdk("asap7")
    costs = macro_map.macro_costs(pdk)
    areas = {name: macro_map.MacroCost(macro_map.liberty_area(m.liberty), 1.0, "area only")
             for m in pdk.macros for name in [m.name]}
    assert areas["fakeram7_256x32"].area_um2 == pytest.approx(343.985)
    macro, count, area, _ = choose_macro(256, 32, pdk.macros, areas, "area")
    assert (macro.name, count) == ("fakeram7_256x32", 1)   # 128x64 has the same area, 2 copies
    macro, count, _, _ = choose_macro(4096, 39, pdk.macros, areas, "area")
    assert (macro.name, count) == ("fakeram7_2048x39", 2)
    assert choose_macro(16, 8, (), {}) is None
    # Priced by the SRAM model: energy grows with the macro's size (not fakeram7's one figure),
    # and each objective finds its own optimum over every macro type.
    assert costs["fakeram7_256x256"].access_energy_j > \
        10 * costs["fakeram7_64x21"].access_energy_j
    # 2048 x 512: fewest-area is 14 deep macros; by energy, shallower ones within 10 % area.
    singles = [choose_macro(2048, 512, [m], costs, "area") for m in pdk.macros]
    _, _, least_area, its_energy = choose_macro(2048, 512, pdk.macros, costs, "area")
    assert least_area == min(s[2] for s in singles)
    _, _, area, energy = choose_macro(2048, 512, pdk.macros, costs, "energy")
    assert energy == min(s[3] for s in singles if s[2] <= least_area * (1 + macro_map.AREA_SLACK))
    assert energy < its_energy and least_area <= area <= least_area * (1 + macro_map.AREA_SLACK)
    assert min(s[3] for s in singles) < energy     # least energy alone would split further
    with pytest.raises(ValueError, match="macro objective 'speed': one of energy, area"):
        choose_macro(32, 512, pdk.macros, costs, "speed")


# -- failures -----------------------------------------------------------------------------------
def _broken_gen(tmp_path):
    gen = tmp_path / "gen"
    (gen / "rtl").mkdir(parents=True)
    (gen / "rtl" / "leaf.v").write_text("module leaf(input a, output y);\n  assign y = ~a;\n"
                                        "endmodule\n")
    (gen / "rtl" / "broken.v").write_text("module broken(input a, output y);\n"
                                          "  leaf u (.a(a), .y(y))\n  this is not verilog;\n"
                                          "endmodule\n")
    manifest = {"top": "broken", "modules": ["leaf", "broken"],
                "hierarchy": {"broken": {"leaf": 1}, "leaf": {}},
                "instances": {"broken": 1, "leaf": 1}}
    (gen / "manifest.json").write_text(json.dumps(manifest))
    return gen


@pytest.mark.tool
def test_a_yosys_error_raises_flow_error_with_the_log_tail(tmp_path):
    pdk = _pdk("sky130hd")
    with pytest.raises(FlowError) as info:
        synthesize(_broken_gen(tmp_path), pdk, PERIOD_NS, tmp_path / "out",
                   progress=QUIET)
    message = str(info.value)
    assert "broken" in message and str(tmp_path / "out" / "logs" / "broken.log") in message
    assert "ERROR" in message and "syntax error" in message


def test_a_truncated_run_raises_flow_error(tmp_path, monkeypatch):
    # What wasmtime >= 40 does: stop in the middle of the script with status 0.
    fake = ("import sys\n"
            "if '-V' in sys.argv: print('Yosys 0.58 (fake)'); sys.exit(0)\n"
            "log = sys.argv[sys.argv.index('-l') + 1]\n"
            "open(log, 'w').write('3.23. Executing ABC pass\\n')\n")
    monkeypatch.setattr(synth, "YOSYS_MAIN", fake)
    pdk = _pdk("sky130hd")
    gen = _broken_gen(tmp_path)
    shutil.copy(gen / "rtl" / "leaf.v", gen / "rtl" / "broken.v")   # valid, but never finishes
    with pytest.raises(FlowError, match="End of script") as info:
        synthesize(gen, pdk, PERIOD_NS, tmp_path / "out", progress=QUIET)
    assert "Executing ABC pass" in str(info.value)


def test_lite_liberty_keeps_every_cell_area_and_pin(tmp_path):
    pdk = _pdk("asap7")
    lite = synth.lite_liberty(pdk.merged_liberty, tmp_path / "lite.lib")
    full_text, lite_text = pdk.merged_liberty.read_text(), lite.read_text()
    assert len(lite_text) < len(full_text) / 10

    def cells(text):
        area = re.compile(r"^\s*area\s*:\s*([0-9.]+)", re.M)
        pins = re.compile(r"^\s*(?:pin|bus)\s*\(\s*\"?(\w+)", re.M)
        starts = [(m.start(), m.group(1)) for m in CELL_START.finditer(text)]
        out = {}
        for (begin, name), (end, _) in zip(starts, starts[1:] + [(len(text), "")], strict=True):
            body = text[begin:end]
            out[name] = (area.search(body).group(1), sorted(set(pins.findall(body))))
        return out

    assert cells(lite_text) == cells(full_text)
    assert "timing" not in re.findall(r"^\s*(\w+)\s*\(", lite_text, re.M)
