"""``memwall golden|run|model kvnand``: BCH encoding of message bits, the plane PE on a page
image and the KV write-combine buffer on a slice trace, through the golden models or the
generated RTL; the design-space model."""

from __future__ import annotations

import argparse

import numpy as np

from memwall.command import UsageError, check_sim_cycles, jobs_int, output_path
from memwall.family import Command
from memwall.files import dumps_json, write_npz_atomic
from memwall.inputs import ArraySpec, InputError, load_npz

__all__ = ["COMMANDS", "load_bch_inputs", "load_pe_inputs", "load_kvbuf_trace"]

OPS = ("bch", "pe", "kvbuf")
_INTS = tuple(np.dtype(t) for t in ("uint8", "int8", "int16", "int32", "int64", "bool"))
_FLOATS = tuple(np.dtype(t) for t in ("float16", "float32", "float64"))
_LIMIT = 1 << 16
_INPUT_NAME = {"gemv": "x", "logit": "q", "attend": "p"}
#: Per mode: the input vector's largest shape and how messages name it.
_INPUT_SHAPE = {"gemv": ((_LIMIT,), "(cols,)"), "logit": ((_LIMIT, _LIMIT), "(heads, d)"),
                "attend": ((_LIMIT, _LIMIT), "(tokens, heads)")}


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    from memwall.golden.kvnand.kvbuf import MAX_TRACE_SLICES

    parser.add_argument("--op", required=True, choices=OPS,
                        help="bch: message (N, 8192) of 0/1 -> codeword (N, 9088), message "
                             "then parity; pe: a page image and an input vector -> FP32 "
                             "results; kvbuf: a trace of KV slice writes -> the page programs "
                             "of the config's KV write-combine buffer")
    parser.add_argument("--inputs", required=True,
                        help="input .npz. kvbuf: the trace, 'stream' (N,) integer stream ids "
                             "0..2**kv_stream_bits-1 and 'data' (N, kv_slice_bytes) uint8, "
                             "the slice writes in arrival order (N at most "
                             f"{MAX_TRACE_SLICES}), flushed at the end. pe --mode attend on a "
                             "w8a8 config: 'p' holds INT8 codes c and 'p_exp' (a scalar "
                             "integer e) their E8M0 scale, p = c * 2**e (e = -7: units of "
                             "1/128); 'scales' are the V page's")
    parser.add_argument("--out", required=True,
                        help="output .npz: codeword (bch); y and y_bits (pe); kvbuf: one row "
                             "per page program in issue order, stream, page (its number), "
                             "valid (bytes), early (programmed before full), cause (0 full, "
                             "1 evict, 2 flush), data (P, page_bytes) uint8, and programs "
                             "(P); run adds cycles")
    parser.add_argument("--mode", choices=("gemv", "logit", "attend"), default="gemv",
                        help="pe: gemv (page rows x x), logit (K tokens x q heads) or attend "
                             "(p-weighted sum of V tokens)")
    parser.add_argument("--width", type=int, default=None,
                        help="pe: elements of a page row (gemv cols) or token (d); required "
                             "for --op pe")
    parser.add_argument("--units", type=int, default=None,
                        help="pe: rows or tokens of the page to use (default: all it holds)")


# --- inputs -----------------------------------------------------------------------------------

def load_bch_inputs(path) -> np.ndarray:
    """``message`` (N, 8192) of 0/1 from an ``.npz``."""
    from memwall.golden.kvnand import bch

    arrays = load_npz(path, {"message": ArraySpec(_INTS, (_LIMIT, _LIMIT),
                                                  f"(N, {bch.K}) uint8 of 0/1")},
                      what="--inputs")
    msg = arrays["message"]
    if msg.ndim == 1:
        msg = msg[None, :]
    if msg.shape[1] != bch.K or msg.shape[0] == 0:
        raise InputError(f"--inputs {path}: message has shape {msg.shape}; (N, {bch.K}) with "
                         "N >= 1 is allowed (8192 message bits a row)")
    bad = np.argwhere((msg != 0) & (msg != 1))
    if bad.size:
        r, c = bad[0]
        raise InputError(f"--inputs {path}: message[{r}, {c}] = {msg[r, c]}; bits must be 0 "
                         "or 1")
    return msg.astype(np.uint8)


def _bf16_codes(name: str, a: np.ndarray, path) -> np.ndarray:
    import ml_dtypes

    if a.dtype not in _FLOATS:
        raise InputError(f"--inputs {path}: {name} is {a.dtype}; float values (rounded to "
                         "BF16) are allowed")
    with np.errstate(over="ignore"):   # an overflow is found below, by position
        bf16 = np.asarray(a, np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)
    bad = np.argwhere(~np.isfinite(bf16.astype(np.float64)))
    if bad.size:
        at = tuple(int(i) for i in bad[0])
        top = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
        raise InputError(f"--inputs {path}: {name}[{', '.join(map(str, at))}] = {a[at]:g} is "
                         f"not a finite BF16 number; finite values of magnitude at most "
                         f"{top:.5g} (BF16's largest, after rounding) are allowed")
    return bf16.view(np.uint16).astype(np.int64)


def _int8_codes(name: str, a: np.ndarray, path) -> np.ndarray:
    if a.dtype not in _INTS or a.dtype == np.bool_:
        raise InputError(f"--inputs {path}: {name} is {a.dtype}; integers in -128..127 are "
                         "allowed (W8A8 activations)")
    bad = np.argwhere((a < -128) | (a > 127))
    if bad.size:
        raise InputError(f"--inputs {path}: {name}{list(bad[0])} = {a[tuple(bad[0])]}; "
                         "integers in -128..127 are allowed")
    return a.astype(np.int64)


def load_pe_inputs(cfg, args) -> dict:
    """The page image's element codes, the input vector's codes and the scales of a ``pe``
    run, checked against the config and the mode."""
    from memwall.golden.kvnand import pe

    mode, path = args.mode, args.inputs
    name = _INPUT_NAME[mode]
    kind, in_kind = pe.page_kind(cfg.fmt, mode), pe.input_kind(cfg.fmt)
    specs = {"page": ArraySpec((np.dtype("uint8"),), (cfg.page_bytes,),
                               f"({cfg.page_bytes},) uint8 page image"),
             name: ArraySpec(_FLOATS + _INTS, _INPUT_SHAPE[mode][0],
                             f"{_INPUT_SHAPE[mode][1]} of {in_kind} values")}
    if pe.scaled(kind):
        specs["scales"] = ArraySpec(_FLOATS, (_LIMIT,), "(groups,) float scales")
    prob_scaled = mode == "attend" and in_kind == "int8"
    if prob_scaled:
        lo, hi = pe.PROB_EXP_RANGE
        specs["p_exp"] = ArraySpec(_INTS[:-1], (), f"a scalar integer in {lo}..{hi}: the "
                                   "E8M0 exponent e of W8A8 ATTEND's probabilities p = c * "
                                   "2**e (e = -7: units of 1/128)")
    arrays = load_npz(path, specs, what="--inputs")
    page = arrays["page"]
    if page.shape != (cfg.page_bytes,):
        raise InputError(f"--inputs {path}: page has shape {page.shape}; ({cfg.page_bytes},) "
                         f"bytes (config {cfg.name}) are allowed")
    if args.width is None or args.width < 1:
        raise UsageError("--width: required for --op pe, a positive number of elements (gemv "
                         "cols, logit/attend d)")
    most = cfg.page_elements(kind) // args.width
    units = most if args.units is None else args.units
    if not 1 <= units <= most:
        raise UsageError(f"--units {units}: 1..{most} rows or tokens of --width {args.width} "
                         f"fit a {kind} page of {cfg.page_bytes} bytes")
    codes = pe.unpack_page(page, kind, units * args.width)
    convert = _int8_codes if in_kind == "int8" else _bf16_codes
    vec = convert(name, arrays[name], path)
    scales = None
    if pe.scaled(kind):
        scales = _bf16_codes("scales", arrays["scales"], path)
    if prob_scaled:
        # The probabilities' scale rides on the V page's group scales (golden/kvnand/pe.py).
        p_exp = int(arrays["p_exp"])
        lo, hi = pe.PROB_EXP_RANGE
        if not lo <= p_exp <= hi:
            raise InputError(f"--inputs {path}: p_exp = {p_exp}; an integer in {lo}..{hi} is "
                             "allowed (the E8M0 exponent e of the probabilities p = c * 2**e)")
        try:
            scales = pe.prob_scales(scales, p_exp)
        except ValueError as exc:
            raise InputError(f"--inputs {path}: {exc}") from None
    return {"codes": codes, "inputs": vec, "scales": scales, "units": units}


def load_kvbuf_trace(cfg, path) -> tuple[np.ndarray, np.ndarray]:
    """A trace of KV slice writes (:mod:`memwall.golden.kvnand.kvbuf`'s docstring):
    ``stream`` (N,) and ``data`` (N, kv_slice_bytes), checked against the config."""
    from memwall.golden.kvnand.kvbuf import MAX_TRACE_SLICES

    ids = 1 << cfg.kv_stream_bits
    width = cfg.kv_slice_bytes
    arrays = load_npz(path, {
        "stream": ArraySpec(_INTS[:-1], (MAX_TRACE_SLICES,),
                            f"(N,) integer stream ids 0..{ids - 1}, N at most "
                            f"{MAX_TRACE_SLICES}"),
        "data": ArraySpec((np.dtype("uint8"),), (MAX_TRACE_SLICES, width),
                          f"(N, {width}) uint8 slice bytes (kv_slice_bytes {width}), N at "
                          f"most {MAX_TRACE_SLICES}", min_shape=(1, width))}, what="--inputs")
    streams, data = arrays["stream"], arrays["data"]
    if len(streams) != len(data):
        raise InputError(f"--inputs {path}: stream has {len(streams)} rows and data "
                         f"{len(data)}; one stream id per slice is allowed")
    bad = np.flatnonzero((streams < 0) | (streams >= ids))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"--inputs {path}: stream[{i}] = {streams[i]}; stream ids "
                         f"0..{ids - 1} are allowed (kv_stream_bits {cfg.kv_stream_bits}, "
                         f"config {cfg.name})")
    return streams.astype(np.int64), data


def _plan(cfg, args):
    from memwall.hdl.kvnand.program import ShapeError, plan_page

    data = load_pe_inputs(cfg, args)
    try:
        return plan_page(cfg, args.mode, data["codes"], args.width, data["inputs"],
                         data["scales"])
    except ShapeError as exc:
        raise InputError(f"--inputs {args.inputs}: {exc} (config {cfg.name})") from None


def _pe_arrays(cmd, mode: str, units: int) -> dict:
    bits = np.asarray(cmd.expect, np.uint32)
    heads = 1 << cmd.command["heads_log2"]
    shape = {"gemv": (units,), "logit": (units, heads),
             "attend": (heads, cmd.command["width"])}[mode]
    return {"y": bits.view(np.float32).reshape(shape), "y_bits": bits.reshape(shape)}


# --- commands ---------------------------------------------------------------------------------

def _kvbuf_golden(cfg, streams: np.ndarray, data: np.ndarray) -> dict:
    from memwall.golden.kvnand import kvbuf

    return kvbuf.run_trace(streams, data, cfg.kv_slots, cfg.page_bytes, cfg.kv_slice_bytes,
                           cfg.kv_mapping, cfg.kv_policy)


def _kvbuf_summary(arrays: dict) -> str:
    early = int(arrays["early"].sum())
    return f"{int(arrays['programs'])} page programs, {early} of them early"


def golden_command(args, cfg) -> None:
    from memwall.golden.kvnand import bch

    out = output_path(args.out)
    if args.op == "kvbuf":
        arrays = _kvbuf_golden(cfg, *load_kvbuf_trace(cfg, args.inputs))
        write_npz_atomic(out, arrays)
        print(f"memwall: wrote {out} (kvbuf, golden: {_kvbuf_summary(arrays)})")
        return
    if args.op == "bch":
        write_npz_atomic(out, {"codeword": bch.encode(load_bch_inputs(args.inputs))})
        print(f"memwall: wrote {out} (BCH(9088,8192) codewords, golden)")
        return
    cmd = _plan(cfg, args)
    write_npz_atomic(out, _pe_arrays(cmd, args.mode, cmd.command["units"]))
    print(f"memwall: wrote {out} (pe {args.mode}, golden)")


def run_command(args, cfg) -> None:
    from memwall.golden.kvnand import bch
    from memwall.golden.kvnand import pe as kvnand_pe
    from memwall.hdl.kvnand.program import command_cycles
    from memwall.verif.kvnand.run import run_bch, run_kvbuf, run_pages

    out = output_path(args.out)
    if args.op == "kvbuf":
        streams, data = load_kvbuf_trace(cfg, args.inputs)
        # The golden run gives the beats in and out: a lower bound of the RTL's cycles.
        want = _kvbuf_golden(cfg, streams, data)
        beats = (data.size // cfg.kv_word_bytes
                 + int(want["programs"]) * (1 + cfg.page_bytes // cfg.kv_word_bytes))
        check_sim_cycles(beats, args.max_cycles, f"--inputs {args.inputs} (kvbuf)")
        arrays = run_kvbuf(cfg, streams, data, sim=args.sim)
        write_npz_atomic(out, arrays)
        print(f"memwall: wrote {out} (kvbuf on the RTL: {_kvbuf_summary(arrays)}, "
              f"{int(arrays['cycles'])} cycles)")
        return
    if args.op == "bch":
        messages = load_bch_inputs(args.inputs)
        check_sim_cycles(len(messages) * bch.N / cfg.bch_bits, args.max_cycles,
                         f"--inputs {args.inputs} (bch)")
        codewords, cycles = run_bch(cfg, messages, sim=args.sim)
        write_npz_atomic(out, {"codeword": codewords, "cycles": np.int64(cycles)})
        print(f"memwall: wrote {out} (BCH codewords from the RTL, {cycles} cycles)")
        return
    cmd = _plan(cfg, args)
    c = cmd.command
    latency = kvnand_pe.latency(cfg.n_fmac, cfg.mul_stages, cfg.scaled, args.mode,
                                1 << c["heads_log2"], bool(c["emit"]))
    # The command's exact cycles (the RTL's count) and the writes of its vector and scales.
    check_sim_cycles(command_cycles(cfg, cmd, latency) + len(cmd.vec) + len(cmd.scales),
                     args.max_cycles, f"--inputs {args.inputs} (pe)")
    result = run_pages(cfg, [cmd], sim=args.sim)[0]
    arrays = _pe_arrays(cmd, args.mode, cmd.command["units"])
    got = np.asarray(result["results"], np.uint32).reshape(arrays["y_bits"].shape)
    arrays = {"y": got.view(np.float32), "y_bits": got, "cycles": np.int64(result["cycles"])}
    write_npz_atomic(out, arrays)
    print(f"memwall: wrote {out} (pe {args.mode} on the RTL, {result['cycles']} cycles)")


#: Longest context a model query takes (tokens): ten times the paper's longest; Base-2's page
#: count walks every token.
MAX_CONTEXT = 1_000_000


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    from memwall.golden.kvnand.systems import BUFFER_KIB_GRAMMAR, FORMATS, MODELS, SYSTEM_GRAMMAR

    models, formats = ", ".join(MODELS), ", ".join(FORMATS)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    point = parser.add_argument_group(
        "one point", "one decode token of one model on one system (all of --model, --context "
        "and --system; the parameters are the config's)")
    point.add_argument("--model", metavar="NAME", help=f"the model: {models}")
    point.add_argument("--context", metavar="N",
                       help=f"tokens in the context (decimal, 1..{MAX_CONTEXT:,})")
    point.add_argument("--format", metavar="F",
                       help=f"number format: {formats} (default: the config's fmt)")
    point.add_argument("--system", metavar="S", help=f"the system: {SYSTEM_GRAMMAR}")
    sweep = parser.add_argument_group(
        "sweep", "the design-space sweep; an axis not given is Fig. 15's (LLaMA3.1-70B and "
        "OPT-30B, W8A8 and W4A16, 128..100K tokens, every KVNAND-D split of 8 dies and "
        "KVNAND-C-8, both KV-buffer readings); values may be separated by spaces or commas")
    sweep.add_argument("--sweep", action="store_true",
                       help="run the sweep (models x contexts x formats x systems x KV "
                            "buffers) through the sweep runner")
    sweep.add_argument("--models", nargs="+", metavar="NAME", help=f"models: {models}")
    sweep.add_argument("--contexts", nargs="+", metavar="N",
                       help=f"contexts in tokens, 1..{MAX_CONTEXT:,}")
    sweep.add_argument("--formats", nargs="+", metavar="F", help=f"formats: {formats}")
    sweep.add_argument("--systems", nargs="+", metavar="S", help=f"systems: {SYSTEM_GRAMMAR}")
    sweep.add_argument("--buffer-kib", nargs="+", metavar="C/D",
                       help=f"KV buffer sizes, one reading each: {BUFFER_KIB_GRAMMAR} "
                            "(default: the readings paper_sufficient, every stream buffered, "
                            "and buffer_limited, the config's kv_buffer_bytes and "
                            "soc_kv_buffer_kib)")
    sweep.add_argument("--workers", type=jobs_int, default=None,
                       help="local worker processes (default: the CPUs)")
    sweep.add_argument("--ray", default=None, metavar="ADDRESS",
                       help="run the jobs as Ray tasks (local, auto or host:port; the ray "
                            "extra)")


def _values(option: str, values) -> list[str]:
    """An option's values, split at commas as well as spaces."""
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    if not out:
        raise UsageError(f"{option}: give at least one value")
    return out


def _one_of(option: str, value: str, allowed) -> str:
    if value not in allowed:
        raise UsageError(f"{option} {value!r}: allowed {', '.join(allowed)}")
    return value


def _context(option: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_CONTEXT:
        raise UsageError(f"{option} {text!r}: allowed a whole number of tokens, 1.."
                         f"{MAX_CONTEXT:,}")
    return int(text)


def _system(option: str, spec: str, params):
    from memwall.golden.kvnand.systems import parse_system

    try:
        return parse_system(spec, params)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def model_result(cfg=None) -> dict:
    """The design-space model's figures at the config's parameters (``cfg`` None: the paper's,
    as ``kvnand_paper``): :func:`~memwall.golden.kvnand.model.evaluate` (the paper's study,
    its figures in the formats the paper gives them), and in the config's format ``fmt``:
    ``geomean_speedup_vs_base1``, context ("128", "1024", "10240") -> the geomean over the
    five models of the best KVNAND design against Base-1, and ``d_over_base2_100k``, model ->
    the best KVNAND-D split's speedup over Base-2 at 100K tokens (models where both fit)."""
    from memwall.golden.kvnand import model as kvnand_model
    from memwall.golden.kvnand.systems import Params

    p = kvnand_model.DEFAULT if cfg is None else Params.from_config(cfg)
    fmt = "bf16" if cfg is None else cfg.fmt
    result = kvnand_model.evaluate(p)
    own = kvnand_model.headline(p, contexts=(128, 1024, 10240, 100_000), fmt=fmt)
    result["config"] = {"name": None if cfg is None else cfg.name, "format": fmt}
    result["geomean_speedup_vs_base1"] = {
        str(c): own["geomean_vs_base1"][c]["kvnand"] for c in (128, 1024, 10240)}
    result["d_over_base2_100k"] = own["d_over_base2_100k"]
    return result


def _point(args, cfg, p) -> None:
    from memwall.golden.kvnand import model as kvnand_model
    from memwall.golden.kvnand.systems import FORMATS, MODELS

    missing = [f"--{k}" for k in ("model", "context", "system") if getattr(args, k) is None]
    if missing:
        raise UsageError(f"one point needs --model, --context and --system; missing "
                         f"{', '.join(missing)}")
    model = _one_of("--model", args.model, MODELS)
    context = _context("--context", args.context)
    fmt = _one_of("--format", args.format or cfg.fmt, FORMATS)
    system = _system("--system", args.system, p)
    try:
        r = kvnand_model.decode_step(system, model, context, fmt)
    except ValueError as exc:             # KVNAND-C with fewer planes than heads
        raise UsageError(f"--system {args.system}: {exc}") from None
    r = {"config": cfg.name, "system_spec": system.spec, **r}
    if args.json:
        print(dumps_json(r))
        return
    print(f"{r['system']}, {model}, {context:,} tokens, {fmt} (config {cfg.name}): "
          f"{1e3 * r['latency_s']:.3f} ms a token ({r['tokens_per_s']:.2f} tokens/s), "
          f"{1e3 * r['energy_J']:.2f} mJ" + (f"; does not fit: {r['oom_reason']}"
                                            if r["oom"] else ""))
    for key, value in r["latency"].items():
        print(f"  {key:>10}: {1e3 * value:.3f} ms")


def _sweep_grid(args, p) -> dict:
    """The sweep's axes from the command line (only those given), checked."""
    from memwall.golden.kvnand.systems import FORMATS, MODELS, buffer_kib_readings

    grid = {}
    if args.models is not None:
        grid["models"] = [_one_of("--models", m, MODELS) for m in _values("--models",
                                                                          args.models)]
    if args.contexts is not None:
        grid["contexts"] = [_context("--contexts", c) for c in _values("--contexts",
                                                                       args.contexts)]
    if args.formats is not None:
        grid["formats"] = [_one_of("--formats", f, FORMATS) for f in _values("--formats",
                                                                             args.formats)]
    if args.systems is not None:
        grid["systems"] = [_system("--systems", s, p).spec for s in _values("--systems",
                                                                            args.systems)]
    if args.buffer_kib is not None:
        try:
            grid["buffer_readings"] = buffer_kib_readings(_values("--buffer-kib",
                                                                  args.buffer_kib), p)
        except ValueError as exc:
            raise UsageError(f"--buffer-kib: {exc}") from None
    return grid


def model_command(args, cfg) -> None:
    from memwall.golden.kvnand.systems import Params

    p = Params.from_config(cfg)
    point = [f"--{k}" for k in ("model", "context", "format", "system")
             if getattr(args, k) is not None]
    axes = [f"--{k.replace('_', '-')}" for k in ("models", "contexts", "formats", "systems",
                                                 "buffer_kib") if getattr(args, k) is not None]
    runner = [o for o, v in (("--ray", args.ray), ("--workers", args.workers)) if v]
    if point and (args.sweep or axes or runner):
        raise UsageError(f"one-point options ({', '.join(point)}) do not go with --sweep and "
                         "its options")
    if not args.sweep and (axes or runner):
        raise UsageError(f"{', '.join(axes + runner)}: these go with --sweep")
    if point:
        _point(args, cfg, p)
        return
    if args.sweep:
        from memwall.golden.kvnand.dse import dse_jobs, sweep_command_result

        grid = _sweep_grid(args, p)
        try:
            dse_jobs(**grid, p=p)         # checks the grid as a whole before anything runs
        except ValueError as exc:
            raise UsageError(f"--sweep: {exc}") from None
        result = sweep_command_result(args.ray, args.workers, p=p, **grid)
        result["config"] = cfg.name
        if args.json:
            print(dumps_json(result))
            return
        print(f"KVNAND design-space sweep, config {cfg.name} ({result['backend']}): the best "
              "system per context")
        for reading, cases in result["best"].items():
            for case, best in cases.items():
                print(f"  {reading:>18} {case:<22} " + ", ".join(f"{ctx}: {b}" for ctx, b in
                                                             best.items()))
        return
    result = model_result(cfg)
    if args.json:
        print(dumps_json(result))
        return
    fmt = result["config"]["format"]
    print(f"KVNAND design-space model, config {cfg.name} (memwall model kvnand --json for "
          "every figure)")
    for ctx, value in result["geomean_speedup_vs_base1"].items():
        print(f"  geomean speedup of the best KVNAND over Base-1 at {ctx} tokens, {fmt}: "
              + ("none fits" if value is None else f"{value:.2f}x"))
    for model, value in result["d_over_base2_100k"].items():
        print(f"  KVNAND-D over Base-2 at 100K, {model}, {fmt}: {value:.2f}x")


COMMANDS = {
    "golden": Command("BCH codewords of message bits, the plane PE on a page image, or the KV "
                      "write-combine buffer on a slice trace, through the golden models",
                      _data_arguments, golden_command),
    "run": Command("the same through the generated RTL, in simulation", _data_arguments,
                   run_command),
    "model": Command("design-space model: Base-1, Base-2, KVNAND-D (every split), KVNAND-C; "
                     "latency, energy, OOM, ablations, cost", _model_arguments, model_command),
}
