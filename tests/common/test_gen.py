"""``memwall.gen.generate``: the files a flow needs, deterministic, deduplicated, atomic."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import math
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from memwall import gen, lint, orfs, paths
from memwall.config import load_config
from memwall.gen import generate

TOP = "dplena_core"
CONFIGS = paths.REPO / "configs"
MODULE_DEF = re.compile(r"^module\s+\\?([^\s(]+)\s*\(", re.M)
AUTO_NAME = re.compile(r"\$auto\$\S*?\$\d+")
FLOW_FILES = {"filelist.f", "constraint.sdc", "config.mk", "manifest.json",
              lint.WAIVERS, *(orfs.sdc_name(p) for p in orfs.TIME_UNIT_PS)}


@pytest.fixture(scope="module")
def out32(tmp_path_factory):
    """dplena32, generated once; tests only read it."""
    return generate(load_config("dplena32"), out_root=tmp_path_factory.mktemp("gen32"))


@pytest.fixture(scope="module")
def out2048(tmp_path_factory):
    return generate(load_config("dplena2048"), out_root=tmp_path_factory.mktemp("gen2048"))


def _tree(root) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones included) by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _filelist(out) -> list[str]:
    return out.joinpath("filelist.f").read_text().split()


def _definitions(out) -> collections.Counter:
    """module name -> how many times it is defined across the rtl files."""
    counts = collections.Counter()
    for path in (out / "rtl").glob("*.v"):
        counts.update(MODULE_DEF.findall(path.read_text()))
    return counts


def _instantiated(text: str, modules) -> set[str]:
    """Which of ``modules`` are instantiated in the Verilog ``text``."""
    return {m for m in modules if re.search(rf"^\s*{re.escape(m)}\s+\w+\s*\(", text, re.M)}


# --- outputs -----------------------------------------------------------------------------------

def test_outputs_exist(out32):
    assert out32.name == "dplena32"
    rtl = sorted(p.relative_to(out32).as_posix() for p in (out32 / "rtl").glob("*.v"))
    assert f"rtl/{TOP}.v" in rtl
    assert set(_tree(out32)) == FLOW_FILES | {"dplena32.core"} | set(rtl)
    # filelist.f: every rtl file once, paths relative to the output folder.
    files = _filelist(out32)
    assert sorted(files) == rtl and len(files) == len(set(files))
    assert all((out32 / f).is_file() for f in files)


def test_filelist_is_in_dependency_order(out32):
    files = _filelist(out32)
    modules = [f.removeprefix("rtl/").removesuffix(".v") for f in files]
    assert modules[-1] == TOP
    for i, f in enumerate(files):
        used = _instantiated((out32 / f).read_text(), modules)
        later = used - set(modules[:i])
        assert not later, f"{f} instantiates {sorted(later)}, listed after it"


def test_each_file_defines_its_module(out32):
    for path in (out32 / "rtl").glob("*.v"):
        names = MODULE_DEF.findall(path.read_text())
        # Amaranth's own (not deduplicated) submodules stay in their parent's file as parent.x
        assert path.stem in names
        assert all(n == path.stem or n.startswith(path.stem + ".") for n in names)


def test_constraint_clock_period(out32, tmp_path):
    sdc = out32.joinpath("constraint.sdc").read_text()
    assert re.search(r"^set clk_period 1\n", sdc, re.M)
    assert "create_clock -name clk -period $clk_period [get_ports clk]" in sdc
    cfg_path = tmp_path / "slow32.yaml"
    text = (CONFIGS / "dplena32.yaml").read_text()
    cfg_path.write_text(text.replace("clock_mhz: 1000", "clock_mhz: 800"))
    out = generate(load_config(str(cfg_path)), out_root=tmp_path / "build")
    assert out.name == "slow32"
    assert re.search(r"^set clk_period 1\.25\n", (out / "constraint.sdc").read_text(), re.M)
    # dplena32 gives sky130hd and nangate45 clocks of their own: the PLATFORM's, else 1.25 ns
    mk = (out / "config.mk").read_text()
    assert re.search(r"^export CLOCK_PERIOD_NS = "
                     r"\$\(or \$\(CLOCK_PERIOD_NS_\$\(PLATFORM\)\),1\.25\)$", mk, re.M)
    for pdk, mhz in load_config(str(cfg_path)).pdk_clocks().items():
        assert re.search(rf"^CLOCK_PERIOD_NS_{pdk} = {1000 / mhz:.6g}$", mk, re.M)
    # The clock changes the constraints only, not the RTL.
    assert {k: v for k, v in _tree(out).items() if k.startswith("rtl/")} == \
           {k: v for k, v in _tree(out32).items() if k.startswith("rtl/")}


def _sdc_period(text: str) -> float:
    (value,) = re.findall(r"^set clk_period ([0-9.eE+-]+)$", text, re.M)
    return float(value)


@pytest.mark.parametrize("platform", sorted(orfs.TIME_UNIT_PS))
def test_each_platforms_sdc_is_in_its_liberty_time_unit(out32, platform):
    """ORFS reads an SDC in the platform's Liberty time unit (ASAP7: ps): the unit memwall writes
    in is the one the platform's standard-cell Liberty states, and the number is the config's
    clock on that platform."""
    from memwall.flows.pdk import find_pdk

    assert orfs.TIME_UNIT_PS[platform] == find_pdk(platform).time_unit_ps
    period_ps = _sdc_period((out32 / orfs.sdc_name(platform)).read_text()) \
        * orfs.TIME_UNIT_PS[platform]
    assert period_ps == pytest.approx(1e3 * load_config("dplena32").clock_period_ns_on(platform),
                                      rel=1e-6)


def test_config_mk_picks_the_platforms_sdc_and_refuses_another_platform(out32, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    (tmp_path / "Makefile").write_text(f"include {out32 / 'config.mk'}\nshow:\n"
                                       "\t@echo $(SDC_FILE) $(CORE_UTILIZATION) $(PLACE_DENSITY)\n")
    for platform in orfs.TIME_UNIT_PS:
        run = subprocess.run(["make", "-s", "show", f"PLATFORM={platform}"], cwd=tmp_path,
                             capture_output=True, text=True, check=True)
        sdc, utilisation, density = run.stdout.split()
        assert Path(sdc).resolve() == (out32 / orfs.sdc_name(platform)).resolve()
        assert 0 < float(utilisation) < 100 and 0 < float(density) < 1
    run = subprocess.run(["make", "-s", "show", "PLATFORM=gf180"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode != 0 and "no SDC for PLATFORM=gf180" in run.stderr


def test_config_mk(out32):
    text = out32.joinpath("config.mk").read_text()
    assert re.search(rf"^export DESIGN_NAME = {TOP}$", text, re.M)
    assert re.search(r"^export DESIGN_NICKNAME = dplena32$", text, re.M)
    listed = re.findall(r"\$\(DESIGN_DIR\)/(rtl/\S+\.v)", text)
    assert listed == _filelist(out32)


def test_config_mk_resolves_from_anywhere(out32, tmp_path):
    """``include``d from another folder (as ORFS does), every VERILOG_FILES entry exists."""
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    (tmp_path / "Makefile").write_text(
        f"include {out32 / 'config.mk'}\nshow:\n\t@echo $(VERILOG_FILES)\n\t@echo $(SDC_FILE)\n")
    run = subprocess.run(["make", "-s", "show"], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    verilog, sdc = run.stdout.splitlines()
    paths = verilog.split()
    assert len(paths) == len(_filelist(out32))
    for p in paths + [sdc]:
        assert (tmp_path / p).resolve().is_file(), p


def test_core_file(out32):
    core_text = out32.joinpath("dplena32.core").read_text()
    assert core_text.startswith("CAPI=2:\n")
    core = yaml.safe_load(core_text)
    assert core["name"].startswith("memwall:dplena:dplena32:")
    assert core["filesets"]["rtl"]["files"] == _filelist(out32)
    assert core["filesets"]["constraints"]["files"] == ["constraint.sdc"]
    assert core["targets"]["default"]["toplevel"] == TOP
    assert core["targets"]["lint"]["toplevel"] == TOP


def test_manifest(out32):
    manifest = json.loads(out32.joinpath("manifest.json").read_text())
    tree = _tree(out32)
    assert set(manifest["files"]) == set(tree) - {"manifest.json"}
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256(tree[rel]).hexdigest() == digest, rel
    cfg = load_config("dplena32")
    assert manifest["config"] == json.loads(json.dumps({"unit": "dplena",
                                                       **dataclasses.asdict(cfg)}))
    assert manifest["config"]["vlen"] == 32 and manifest["config"]["block_len"] == 8
    assert manifest["top"] == TOP
    assert manifest["modules"] == [f.removeprefix("rtl/").removesuffix(".v")
                                   for f in _filelist(out32)]
    assert manifest["tools"]["amaranth"] == "0.5.10"
    # instance_tree: per module its instances; summed counts give "hierarchy"
    tree = manifest["instance_tree"]
    assert sorted(tree) == sorted(manifest["modules"])
    for parent, entries in tree.items():
        counts = collections.Counter()
        for entry in entries:
            counts[entry["module"]] += entry.get("generate", {}).get("count", 1)
        assert dict(counts) == manifest["hierarchy"][parent], parent
    top = {e["instance"]: e for e in tree[TOP]}
    assert top["sequencer"]["module"].startswith("sequencer_")
    assert top["u"]["generate"] == {"block": "bank", "count": cfg.banks}


def test_regeneration_is_byte_identical(out32, tmp_path):
    again = generate(load_config("dplena32"), out_root=tmp_path)
    first, second = _tree(out32), _tree(again)
    assert sorted(first) == sorted(second)
    for rel in first:
        assert first[rel] == second[rel], rel


def test_overwrites_previous_output(tmp_path):
    out = generate(load_config("dplena32"), out_root=tmp_path)
    before = _tree(out)
    (out / "rtl" / "stale_module.v").write_text("module stale_module(); endmodule\n")
    (out / "notes.txt").write_text("left behind\n")
    assert generate(load_config("dplena32"), out_root=tmp_path) == out
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["dplena32"]


# --- one Verilog module per unique component ------------------------------------------------------

def test_every_module_defined_once(out32):
    counts = _definitions(out32)
    assert counts and max(counts.values()) == 1, [m for m, n in counts.items() if n > 1]
    # and every module instantiated anywhere is one of them (no dangling references)
    names = set(counts)
    for path in (out32 / "rtl").glob("*.v"):
        text = path.read_text()
        for inst in re.findall(r"^\s*([A-Za-z_]\w*)\s+[A-Za-z_]\w*\s*\(\s*\.", text, re.M):
            assert inst in names, f"{path.name} instantiates undefined module {inst}"


#: The lane modules' names at the configs' default pipeline depth (fp_stages 3; exp is at
#: its deepest, 3).
EW_LANE = "elementwise_lane_addbf163_exp3_mulbf163"


@pytest.mark.parametrize(("lane", "unit_prefix", "lanes"), [
    (EW_LANE, "elementwise_unit_", 32),                  # VLEN
    ("dequant_lane", "mx_dequantiser", 32),              # hbm_bytes_per_cycle
    ("select_lane_width32", "masked_select_unit", 1),    # the INT select lane
])
def test_lane_module_shared_by_all_lanes(out32, lane, unit_prefix, lanes):
    assert _definitions(out32)[lane] == 1
    (unit,) = [p for p in (out32 / "rtl").glob(f"{unit_prefix}*.v")]
    text = unit.read_text()
    # The unit instantiates the one lane module vlen times, in a generate loop.
    loop = re.search(rf"for \((\w+) = 0; \1 < (\d+); \1 = \1 \+ 1\) begin : \w+\n"
                     rf"\s*{lane} \w+ \(", text)
    assert loop and int(loop.group(2)) == lanes
    assert len(_instantiated(text, [lane])) == 1
    assert text.count(f"{lane} ") == 1


def test_module_count_does_not_scale_with_vlen(out32, out2048):
    n16, n2048 = len(_definitions(out32)), len(_definitions(out2048))
    extra_levels = int(math.log2(2048)) - int(math.log2(16))
    # Only the log2(VLEN)-deep reduction tree adds modules: a few per level (tree, node, ...),
    # never one per lane (128 times more lanes here).
    per_level = 4
    assert n2048 - n16 <= per_level * extra_levels, (n16, n2048)
    assert n2048 < 100
    assert max(_definitions(out2048).values()) == 1
    # The lane modules do not depend on VLEN at all: same text, up to the numbering of Yosys's
    # $auto$ names (a counter over the whole design's Yosys run).
    for lane in (EW_LANE, "select_lane_width32"):
        texts = [AUTO_NAME.sub("$auto", (out / "rtl" / f"{lane}.v").read_text())
                 for out in (out32, out2048)]
        assert texts[0] == texts[1], lane
    # Generated Verilog stays small: proportional to VLEN at most, not to VLEN * lane size.
    size = sum(p.stat().st_size for p in (out2048 / "rtl").glob("*.v"))
    assert size < 4_000_000, size


# --- atomicity -----------------------------------------------------------------------------------

class _Boom(RuntimeError):
    pass


def _raise(*args, **kwargs):
    raise _Boom("injected failure")


def test_failure_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "_core", _raise)
    with pytest.raises(_Boom):
        generate(load_config("dplena32"), out_root=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("owner, target", [(gen, "_core"), (orfs, "config_mk"),
                                           (orfs, "platform_sdc"), (gen, "_tool_versions")])
def test_failure_keeps_previous_output(tmp_path, monkeypatch, owner, target):
    out = generate(load_config("dplena32"), out_root=tmp_path)
    before = _tree(tmp_path)
    monkeypatch.setattr(owner, target, _raise)
    with pytest.raises(_Boom):
        generate(load_config("dplena32"), out_root=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no .dplena32.* staging left
    assert _tree(tmp_path) == before


def test_failure_in_rtl_writing_keeps_previous_output(tmp_path, monkeypatch):
    generate(load_config("dplena32"), out_root=tmp_path)
    before = _tree(tmp_path)
    calls = []

    def module_text(self, name):
        calls.append(name)
        if len(calls) == 3:
            raise _Boom("midway through the rtl files")
        return original(self, name)

    original = gen.Design.module_text
    monkeypatch.setattr(gen.Design, "module_text", module_text)
    with pytest.raises(_Boom):
        generate(load_config("dplena32"), out_root=tmp_path)
    assert len(calls) == 3
    assert _tree(tmp_path) == before
    assert [p.name for p in tmp_path.iterdir()] == ["dplena32"]


# --- Verilator lint ------------------------------------------------------------------------------

def test_lint_every_module_of_dplena2048(out2048):
    """Every unique module of the biggest paper config, linted once at its full width with all
    warnings and the core's waivers (the whole flattened design is ~10^7 gates; dplena32 above
    is linted whole)."""
    start = time.perf_counter()
    problems = lint.lint_core(out2048, per_module=True)
    print(f"verilator --lint-only -Wall, every module of dplena2048: "
          f"{time.perf_counter() - start:.1f} s")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("config", ["pim_small", "pim_paper", "rdxe_small", "rdxe_paper",
                                    "kvnand_small", "kvnand_paper"])
def test_lint_every_module_of_family(config, tmp_path):
    """The eDRAM PIM controller and PU, rDXE's tile group and KVNAND's plane, each module
    once, at the regression and paper sizes."""
    problems = lint.lint_core(generate(load_config(config), tmp_path / "out"), per_module=True)
    assert not problems, "\n".join(problems)


def test_flow_results_survive_regeneration_of_the_same_rtl(tmp_path):
    cfg = load_config("dplena32")
    out = generate(cfg, tmp_path)
    (out / "synth" / "asap7").mkdir(parents=True)
    (out / "synth" / "asap7" / "metrics.json").write_text("{}")
    generate(cfg, tmp_path)                                  # same RTL: results kept
    assert (out / "synth" / "asap7" / "metrics.json").exists()
    wider = dataclasses.replace(cfg, vlen=64)                # different RTL: results dropped
    assert generate(wider, tmp_path) == out and not (out / "synth").exists()
