"""Hostile-but-honest input: every class of issue 10, each case run as a user would run it.

Each case runs ``memwall`` in a child process with its data segment capped at 4 GiB
(``RLIMIT_DATA``: the heap and anonymous maps, which is where an alias bomb or a declared
(1, 8, 10^9) array would go; ``RLIMIT_AS`` cannot be used, since the WASM Yosys reserves
address space it never touches) and a 60 s timeout, and checks the exit status, the message and
what is left on disk. ``TMPDIR`` points into the test's folder, so temporary files left behind
show up too.
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from memwall import paths
from memwall.boundary import PAUSE_ENV

REPO = paths.REPO
MEMORY_CAP = 4 << 30
TIMEOUT_S = 60


def _cap_memory():
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_CAP, MEMORY_CAP))


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, tmp: Path):
        self.code, self.out, self.err, self.tmp = proc.returncode, proc.stdout, proc.stderr, tmp

    def error(self, code: int = 2) -> str:
        """The one-line error of a run that failed with ``code``, without a traceback."""
        assert self.code == code, (self.code, self.out, self.err)
        assert "Traceback" not in self.err, self.err
        lines = [line for line in self.err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("memwall: error:"), self.err
        return lines[0]

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in (self.tmp / "tmp").iterdir())


def _env(tmp: Path, **extra) -> dict:
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp / "tmp"), "MEMWALL_LOG_DIR": str(tmp / "tmp")}
    for name in ("MEMWALL_TRACEBACK", "PYTHONWARNINGS"):   # a warning line is a failure here
        env.pop(name, None)
    return {**env, **extra}


def memwall(tmp: Path, *args, env: dict | None = None, stdin=None) -> Run:
    proc = subprocess.run([sys.executable, "-m", "memwall.cli", *map(str, args)], cwd=tmp,
                          env=_env(tmp, **(env or {})), capture_output=True, text=True,
                          timeout=TIMEOUT_S, preexec_fn=_cap_memory, stdin=stdin)
    return Run(proc, tmp)


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def _sampling_inputs(path: Path, **override) -> Path:
    rng = np.random.default_rng(0)
    arrays = {"logits": rng.standard_normal((1, 8, 64)).astype(np.float32),
              "x": np.zeros((1, 8), np.int64), "mask_id": np.int64(7), "k": np.array([2])}
    np.savez(path, **{**arrays, **override})
    return path


def _npy(array_header: dict, data: bytes = b"") -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, array_header)
    return out.getvalue() + data


# --- hangs --------------------------------------------------------------------------------

NESTED_EMPTY_REPEATS = """steps:
  - op: repeat
    times: 1000000
    steps:
      - op: repeat
        times: 1000000
        steps: []
"""


def test_hang_nested_repeats_of_nothing(tmp_path):
    """10^6 x 10^6 repeats of an empty list: expanded without iterating, in well under 60 s."""
    trace = _write(tmp_path / "t.yaml", NESTED_EMPTY_REPEATS)
    start = time.monotonic()
    run = memwall(tmp_path, "model", "shield", "--config", "shield_small", "--trace", trace,
                  "--json")
    assert run.code == 0, run.err
    assert time.monotonic() - start < 20
    assert json.loads(run.out)["cycles"] == 0
    assert run.leftovers() == []


def test_hang_repeat_expansion_is_bounded_before_expanding(tmp_path):
    trace = _write(tmp_path / "t.yaml", NESTED_EMPTY_REPEATS.replace("steps: []",
                                                                     "steps: [{op: idle, us: 1}]"))
    for verb, extra in (("model", []), ("run", ["--out", tmp_path / "o.json"])):
        run = memwall(tmp_path, verb, "shield", "--config", "shield_small", "--trace", trace,
                      *extra)
        message = run.error()
        assert "1000000 x 1000000 steps" in message and "at most 1,000,000 steps" in message
    assert not (tmp_path / "o.json").exists()


def test_hang_long_simulation_refused_before_it_starts(tmp_path):
    """An idle of 10^7 µs is 10^7 cycles at 1 MHz: refused by --max-cycles, not simulated."""
    trace = _write(tmp_path / "t.yaml", "steps: [{op: idle, us: 10000000}]\n")
    run = memwall(tmp_path, "run", "shield", "--config", "shield_small", "--trace", trace,
                  "--out", tmp_path / "o.json")
    assert "--max-cycles is 2,000,000" in run.error()
    assert not (tmp_path / "o.json").exists() and run.leftovers() == []


@pytest.mark.parametrize("config, gemm, message", [
    ("pim_small", "4096,4096,4096", "past its bound of 8,388,608 for one evaluation"),
    ("pim_paper", "65536,65536,65536", "candidates, past its bound of 8,000,000"),
])
def test_hang_pim_search_is_bounded(tmp_path, config, gemm, message):
    """GEMMs inside max_dim whose schedule search ran for minutes or passed 7 GB: refused
    with the estimate, within the minute and the 4 GiB cap."""
    start = time.monotonic()
    refused = memwall(tmp_path, "model", "pim", "--config", config, "--gemm", gemm).error()
    assert time.monotonic() - start < 60
    assert message in refused and "--max-search-steps" in refused


# --- unbounded memory ---------------------------------------------------------------------

ALIAS_BOMB = "".join(
    [f"a0: &a0 [{', '.join(['lol'] * 9)}]\n"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)]
    + ["unit: dplena\n"])


def test_memory_yaml_alias_bomb(tmp_path):
    assert len(ALIAS_BOMB) < 1000   # 9^9 = 387 M strings once expanded
    cfg = _write(tmp_path / "bomb.yaml", ALIAS_BOMB)
    message = memwall(tmp_path, "gen", cfg).error()
    assert "YAML nodes once aliases are expanded" in message
    assert not (tmp_path / "build").exists()


def test_memory_alias_bomb_in_a_trace(tmp_path):
    trace = _write(tmp_path / "t.yaml", ALIAS_BOMB.replace("unit: dplena\n", "steps: []\n"))
    message = memwall(tmp_path, "model", "shield", "--config", "shield_small", "--trace",
                      trace).error()
    assert "aliases are expanded" in message


def test_memory_npz_declaring_a_huge_array(tmp_path):
    """1 KB of .npz declaring a (1, 8, 10^9) float32 logits array: refused from its header."""
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("logits.npy", _npy({"descr": "<f4", "fortran_order": False,
                                       "shape": (1, 8, 10**9)}, b"\0" * 64))
    assert path.stat().st_size < 1024
    message = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", path,
                      "--out", tmp_path / "o.npz").error()
    assert "(1, 8, 1000000000)" in message and "at most 1,048,576" in message
    assert not (tmp_path / "o.npz").exists()


def test_memory_zip_bomb(tmp_path):
    """A zip of 512 MiB of zeros whose every axis is allowed, but whose size is not: refused
    from the header, before anything is decompressed."""
    path = tmp_path / "bomb.npz"
    shape = (16, 8, 1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z, \
            z.open("logits.npy", "w", force_zip64=True) as member:
        member.write(_npy({"descr": "<f4", "fortran_order": False, "shape": shape}))
        chunk = bytes(1 << 24)
        for _ in range(4 * np.prod(shape) // len(chunk)):
            member.write(chunk)
    assert path.stat().st_size < 4 << 20
    message = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", path,
                      "--out", tmp_path / "o.npz").error()
    assert "the arrays take more than" in message


def test_memory_workload_option(tmp_path):
    message = memwall(tmp_path, "model", "dplena", "--config", "dplena32", "--workload",
                      "1000000000,8,64,1").error()
    assert "B = 1,000,000,000 must be in [1, " in message


@pytest.mark.parametrize("key, value", [("int_sram_words", 16777216),
                                        ("vector_sram_kib", 65536)])
def test_memory_config_sizes_past_the_budget(tmp_path, key, value):
    """Sizes that used to pass the range check and then exhaust memory in Amaranth."""
    cfg = _write(tmp_path / "big.yaml", f"unit: dplena\nvlen: 64\n{key}: {value}\n")
    message = memwall(tmp_path, "gen", cfg, "--out", tmp_path / "build").error()
    assert key in message and "must be" in message
    assert not (tmp_path / "build").exists()


#: Configs in range field by field that ran past minutes or 4 GiB in memwall gen (issue 34).
PAST_THE_BUDGET = {
    "pim_dot_product_registers": ("unit: pim\noperation: dot_product\ncols: 1024\n"
                                  "subarrays: 21\ninput_beats: 256\n",
                                  "input_beats: 256 — beats of 2688 8-bit inputs are 5,505,024 "
                                  "register bits; at most 2,097,152"),
    "kvnand_memories": ("unit: kvnand\nn_fmac: 64\nvec_words: 16384\n",
                        "the plane's memories hold 16,908,288 bits; at most 16,777,216"),
    "kvnand_stream_ids": ("unit: kvnand\nkv_stream_bits: 24\n",
                          "kv_stream_bits must be an integer in [1, 19]"),
    "rdxe_memories": ("unit: rdxe\nvacs: 64\nlanes: 64\nwmem_words: 65536\n"
                      "kv_words: 65536\n", "at most 536,870,912 (2**29)"),
}


@pytest.mark.parametrize("case", list(PAST_THE_BUDGET))
def test_memory_family_configs_past_the_budget(tmp_path, case):
    text, message = PAST_THE_BUDGET[case]
    cfg = _write(tmp_path / "big.yaml", text)
    start = time.monotonic()
    run = memwall(tmp_path, "gen", cfg, "--out", tmp_path / "build")
    assert message in run.error()
    assert time.monotonic() - start < 30     # refused before any elaboration
    assert not (tmp_path / "build").exists() and run.leftovers() == []


# --- cache poisoning ----------------------------------------------------------------------

def test_cache_bad_pdk_root_leaves_the_good_cache(tmp_path):
    from memwall.flows.pdk import PLATFORMS, find_pdk, pdk_root

    if not (pdk_root() / "nangate45").is_dir():
        pytest.skip("no nangate45 under MEMWALL_PDK_ROOT")
    build = tmp_path / "build"
    good = find_pdk("nangate45", cache_root=build / "pdk")
    before = {p: p.read_bytes() for p in (build / "pdk").rglob("*") if p.is_file()}
    bad_root = tmp_path / "badpdk"
    glob = PLATFORMS["nangate45"][0][0]
    _write(bad_root / "nangate45" / glob.replace("*", ".gz"), b"garbage, not gzip")
    cfg = "dplena32"
    run = memwall(tmp_path, "synth", cfg, "--pdk", "nangate45", "--build", build,
                  env={"MEMWALL_PDK_ROOT": str(bad_root)})
    message = run.error()
    assert str(bad_root) in message
    after = {p: p.read_bytes() for p in (build / "pdk").rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before       # nothing cached was replaced
    assert find_pdk("nangate45", cache_root=build / "pdk").cell_liberty == good.cell_liberty


# --- tracebacks instead of errors ---------------------------------------------------------

def test_traceback_non_utf8_config_and_trace(tmp_path):
    cfg = _write(tmp_path / "latin.yaml", "unit: dplena\n# caf\xe9\n".encode("latin-1"))
    assert "line 2, column 6: byte 0xe9 is not UTF-8" in memwall(tmp_path, "gen", cfg).error()
    trace = _write(tmp_path / "t.yaml", b"steps: []\n\xff\n")
    message = memwall(tmp_path, "model", "shield", "--config", "shield_small", "--trace",
                      trace).error()
    assert "line 2, column 1: byte 0xff is not UTF-8" in message


def test_traceback_deeply_nested_yaml(tmp_path):
    cfg = _write(tmp_path / "deep.yaml", "unit: dplena\nvlen: " + "[" * 5000 + "]" * 5000)
    assert "nesting deeper than 64 levels" in memwall(tmp_path, "gen", cfg).error()


def test_traceback_out_paths(tmp_path):
    inputs = _sampling_inputs(tmp_path / "in.npz")
    a_file = _write(tmp_path / "file", "x")
    cases = [
        (["golden", "dplena", "--config", "dplena32", "--inputs", inputs, "--out", tmp_path],
         "is a folder; give a file name"),
        (["golden", "dplena", "--config", "dplena32", "--inputs", inputs, "--out",
          a_file / "o.npz"], "is not a folder"),
        (["golden", "dplena", "--config", "dplena32", "--inputs", inputs, "--out",
          "/proc/version/o.npz"], "is not a folder"),
        (["gen", "dplena32", "--out", a_file], "is a file, not a folder"),
        (["report", "--out", a_file / "reports"], "is a file, not a folder"),
    ]
    for argv, needle in cases:
        assert needle in memwall(tmp_path, *argv).error()
    assert a_file.read_text() == "x"


def test_traceback_integer_keys_in_a_trace(tmp_path):
    trace = _write(tmp_path / "t.yaml",
                   "steps:\n  - {op: write, class: kv, addr: 0, words: 4, 1: 2}\n")
    message = memwall(tmp_path, "model", "shield", "--config", "shield_small", "--trace",
                      trace).error()
    assert "keys must be names, got 1" in message


def test_traceback_broken_pipe(tmp_path):
    # `memwall configs | head -0`: the reader is gone before the first write. (Reading a line
    # first raced the exit: the whole listing fits one buffer flush, so the writer could finish.)
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "memwall.cli", "configs"], cwd=tmp_path,
                            env=_env(tmp_path), stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(read_end)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=TIMEOUT_S) == 128 + signal.SIGPIPE
    assert err == ""


def test_traceback_bad_v_chunk(tmp_path):
    inputs = _sampling_inputs(tmp_path / "in.npz")
    for value in ("-32", "0", "x"):
        run = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", inputs,
                      "--out", tmp_path / "o.npz", "--v-chunk", value)
        assert "argument --v-chunk" in run.error()
    assert not (tmp_path / "o.npz").exists()


def test_traceback_bad_liberty_files(tmp_path):
    from memwall.flows.pdk import PLATFORMS

    glob = PLATFORMS["nangate45"][0][0]
    truncated = __import__("gzip").compress(b"library (x) {\n" * 100)[:40]
    no_time_unit = b'library (x) {\n  cell (INV_X1) {\n    area : 1.0;\n  }\n}\n'
    for name, data in (("truncated", truncated), ("no_time_unit", no_time_unit)):
        root = tmp_path / name
        target = glob.replace("*", ".gz") if name == "truncated" else glob.replace("*", "")
        _write(root / "nangate45" / target, data)
        run = memwall(tmp_path, "synth", "dplena32", "--pdk", "nangate45", "--build",
                      tmp_path / "build", env={"MEMWALL_PDK_ROOT": str(root)})
        assert str(root) in run.error()


# --- half-written or wrong outputs --------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_output_interrupted_gen_leaves_nothing(tmp_path, signum):
    out = tmp_path / "build"
    proc = subprocess.Popen([sys.executable, "-m", "memwall.cli", "gen", "dplena32", "--out",
                             str(out)], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_cap_memory)
    deadline = time.monotonic() + TIMEOUT_S
    while not (out.is_dir() and any(out.iterdir())) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)   # until the staging folder exists: the worst moment
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 128 + signum, err
    assert b"Traceback" not in err
    leftovers = [p.name for p in out.iterdir()] if out.exists() else []
    assert leftovers in ([], ["dplena32"])   # nothing, or the finished output; no staging
    if leftovers:
        assert (out / "dplena32" / "manifest.json").is_file()


@pytest.mark.parametrize("point", ["start-up", "build", "simulation", "write-back"])
def test_output_interrupted_simulation_is_not_success(tmp_path, point):
    """Ctrl-C (SIGINT to the whole process group) at each marked point of ``memwall run``:
    the run waits at the point (memwall.boundary.checkpoint) until the signal comes, so the
    signal lands there whether the simulation is built already or not."""
    trace = REPO / "configs" / "traces" / "shield_small.yaml"
    out = tmp_path / "o.json"
    marker = tmp_path / "paused"
    env = _env(tmp_path, **{PAUSE_ENV: f"{point}:{marker}"})
    proc = subprocess.Popen([sys.executable, "-m", "memwall.cli", "run", "shield", "--config",
                             "shield_small", "--trace", str(trace), "--out", str(out)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + TIMEOUT_S
    while not marker.exists() and proc.poll() is None:
        assert time.monotonic() < deadline, f"the run never reached {point}"
        time.sleep(0.02)
    assert marker.exists(), f"the run ended ({proc.returncode}) without reaching {point}"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130, err
    assert b"interrupted by SIGINT" in err and b"Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paused", "tmp"]   # no o.json, no .tmp
    assert [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("memwall-")] == []


def test_output_json_has_no_nan(tmp_path):
    trace = _write(tmp_path / "t.yaml", "steps: []\n")
    run = memwall(tmp_path, "model", "shield", "--config", "shield_small", "--trace", trace,
                  "--json")
    assert run.code == 0, run.err

    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    result = json.loads(run.out, parse_constant=refuse)
    assert result["eta"] is None
    assert result["undefined"]["eta"] == "the trace takes no time (0 cycles)"


@pytest.mark.parametrize("clock", ["1e-320", "0", ".inf", ".nan", "-1"])
def test_output_clock_must_be_finite_and_positive(tmp_path, clock):
    cfg = _write(tmp_path / "c.yaml", f"unit: dplena\nvlen: 64\nclock_mhz: {clock}\n")
    assert "clock_mhz" in memwall(tmp_path, "gen", cfg, "--out", tmp_path / "b").error()
    assert not (tmp_path / "b").exists()


def test_output_file_names_reaching_make_and_fusesoc(tmp_path):
    cfg = _write(tmp_path / "my cfg$(shell rm x).yaml", "unit: dplena\nvlen: 64\n")
    message = memwall(tmp_path, "gen", cfg, "--out", tmp_path / "b").error()
    assert "config name 'my cfg$(shell rm x)' cannot be used" in message
    assert not (tmp_path / "b").exists()


# --- late errors --------------------------------------------------------------------------

def test_late_error_missing_output_folder_before_simulating(tmp_path):
    inputs = _sampling_inputs(tmp_path / "in.npz")
    trace = REPO / "configs" / "traces" / "shield_small.yaml"
    for argv in (["run", "dplena", "--config", "dplena32", "--inputs", inputs],
                 ["run", "shield", "--config", "shield_small", "--trace", trace]):
        start = time.monotonic()
        run = memwall(tmp_path, *argv, "--out", tmp_path / "missing" / "o")
        assert "folder" in run.error() and "does not exist" in run.error()
        assert time.monotonic() - start < 10   # no simulation ran


def test_late_error_mutate_checks_ray_before_building(tmp_path, monkeypatch):
    """An unreachable --ray fails before the design is elaborated (the module check needs it)
    and before the coverage run (minutes)."""
    import memwall.mutate as mutate_module
    from memwall.command import UsageError

    def no_build(config):
        raise AssertionError("the design was built before --ray was checked")

    monkeypatch.setattr(mutate_module, "_design", no_build)
    with pytest.raises(UsageError, match="--ray 127.0.0.1:1: cannot connect"):
        mutate_module.mutate("dplena32", ["nope"], ray="127.0.0.1:1", root=tmp_path,
                             record_root=tmp_path)


def test_late_error_mutate_unknown_module_before_any_work(tmp_path):
    """Module names come from elaborating the design (a second here): the check follows it, before
    any file is written or any test runs. A .yaml path is worked under its config's name (it
    was joined to the work folder as a path: 'File exists')."""
    cfg = _write(tmp_path / "my_shield.yaml", (REPO / "configs" / "shield_small.yaml").read_text())
    start = time.monotonic()
    run = memwall(tmp_path, "mutate", cfg, "--module", "nope")
    message = run.error()
    assert time.monotonic() - start < 30
    assert message.startswith("memwall: error: --module nope: not a module of my_shield; its "
                              "modules: refresh_scheduler_")
    assert not (paths.BUILD / "mutation" / "my_shield").exists() and run.leftovers() == []


def test_message_mutate_max_speaks_of_mutants(tmp_path):
    message = memwall(tmp_path, "mutate", "dplena32", "--max", "5000").error()
    assert "5000 mutants per module; at most 1000" in message


# --- misleading messages ------------------------------------------------------------------

def test_message_non_zip_inputs_is_not_called_a_pickle(tmp_path):
    path = _write(tmp_path / "in.npz", "logits,x\n1,2\n")
    message = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", path,
                      "--out", tmp_path / "o.npz").error()
    assert "pickle" not in message and "is not an .npz archive" in message


def test_message_names_the_path_once(tmp_path):
    path = _sampling_inputs(tmp_path / "in.npz", k=np.array([99]))
    message = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", path,
                      "--out", tmp_path / "o.npz").error()
    assert message.count(str(path)) == 1


def test_message_object_arrays_are_refused(tmp_path):
    path = _sampling_inputs(tmp_path / "in.npz", k=np.array([{"a": 1}], dtype=object))
    message = memwall(tmp_path, "golden", "dplena", "--config", "dplena32", "--inputs", path,
                      "--out", tmp_path / "o.npz").error()
    assert "holds Python objects" in message and "never pickles" in message


# --- numbers the datapath cannot hold, empty work, layouts (issue 34) ---------------------

def _rng():
    return np.random.default_rng(5)


DATA_CASES = {
    # Finite in float64, not representable after the command's conversion or scaling.
    "kvnand_pe_q_past_bf16": (
        ["golden", "kvnand", "--config", "kvnand_small", "--op", "pe", "--mode", "logit",
         "--width", "16"],
        lambda: {"page": np.zeros(256, np.uint8),
                 "q": np.pad(np.full((1, 1), 1e300), ((1, 0), (2, 13)))},
        "q[1, 2] = 1e+300 is not a finite BF16 number"),
    "rdxe_rmsnorm_x_past_the_scaling": (
        ["golden", "rdxe", "--config", "rdxe_small", "--op", "rmsnorm_gemv"],
        lambda: {"x": np.where(np.arange(16) == 3, 1e300, 1.0), "gamma": np.ones(16),
                 "w": np.ones((4, 16)) / 4},
        "x[3] = 1e+300: values must be finite with magnitude at most 2**400"),
    # Finite numbers the fixed-point path could not hold (ZeroDivisionError, OverflowError).
    "rdxe_rmsnorm_all_subnormal": (
        ["golden", "rdxe", "--config", "rdxe_small", "--op", "rmsnorm_gemv"],
        lambda: {"x": np.full(16, 5e-324), "gamma": np.ones(16), "w": np.ones((4, 16))},
        "x: largest magnitude 4.94066e-324"),
    "rdxe_rmsnorm_eps_past_its_register": (
        ["golden", "rdxe", "--config", "rdxe_small", "--op", "rmsnorm_gemv", "--eps", "1e308"],
        lambda: {"x": np.ones(16), "gamma": np.ones(16), "w": np.ones((4, 16))},
        "eps 1e+308: d * eps is"),
    "rdxe_attention_scores_past_the_rc": (
        ["golden", "rdxe", "--config", "rdxe_small", "--op", "attention"],
        lambda: {"q": _rng().standard_normal((2, 16)) * 1e100,
                 "k": _rng().standard_normal((5, 2, 16)) * 1e100,
                 "v": _rng().standard_normal((5, 2, 16))},
        "set by the scales of q and k"),
    # Empty work.
    "pim_weights_of_no_rows": (
        ["golden", "pim", "--config", "pim_small"],
        lambda: {"a": np.zeros((2, 0), np.int8), "b": np.zeros((0, 4), np.int8)},
        "at least 1 element"),
    # A GEMM whose schedule the event simulator would walk past --max-cycles.
    "pim_golden_past_max_cycles": (
        ["golden", "pim", "--config", "pim_small", "--max-cycles", "1000"],
        lambda: {"a": np.ones((4, 32), np.int8), "b": np.ones((32, 16), np.int8)},
        "simulated cycles; --max-cycles is 1,000"),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_data_the_datapath_cannot_hold(tmp_path, case):
    """One line and exit 2, no output, no warning line, within the minute and the 4 GiB cap
    (each used to write NaN with exit 0, print numpy warnings, or end in an internal error)."""
    argv, arrays, message = DATA_CASES[case]
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **arrays())
    run = memwall(tmp_path, *argv, "--inputs", inputs, "--out", tmp_path / "out.npz")
    assert message in run.error()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npz", "tmp"]
    assert run.leftovers() == []


def test_fortran_ordered_operands_are_valid_data(tmp_path):
    """Valid .npy data in Fortran order (it crashed a byte view): the product, quietly."""
    a, b = np.asfortranarray(np.ones((3, 8), np.int8)), np.asfortranarray(np.ones((8, 5), np.int8))
    np.savez(tmp_path / "in.npz", a=a, b=b)
    run = memwall(tmp_path, "golden", "pim", "--config", "pim_small", "--inputs",
                  tmp_path / "in.npz", "--out", tmp_path / "out.npz")
    assert run.code == 0 and run.err == "", run.err
    with np.load(tmp_path / "out.npz") as out:
        assert np.array_equal(out["c"], np.full((3, 5), 8))


# --- internal errors ----------------------------------------------------------------------

def test_internal_error_keeps_its_traceback_in_a_log(tmp_path, monkeypatch, capsys):
    from memwall import cli

    def broken(args):
        raise RuntimeError("a bug\nwith a second line")

    monkeypatch.setenv("MEMWALL_LOG_DIR", str(tmp_path))
    monkeypatch.delenv("MEMWALL_TRACEBACK", raising=False)
    monkeypatch.setattr(cli, "cmd_configs", broken)
    assert cli.main(["configs"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: a bug" in err
    logs = list(tmp_path.glob("memwall-crash-*.log"))
    assert len(logs) == 1 and "Traceback" in logs[0].read_text()
    assert str(logs[0]) in err
