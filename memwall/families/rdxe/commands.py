"""``memwall golden|run|model rdxe``: RMSNorm-GEMV and decode attention on your float data
through the INT8 golden datapath or the generated tile group, and the cycle and ring models.

The host quantises the float inputs as :mod:`memwall.golden.rdxe.quantise` says (the contract):
``--weight-scale`` and ``--kv-scale`` pick the scales' granularity, ``--out-scale`` a static
output scale (default: calibrated from the float64 answer on your inputs). The output ``.npz``
holds the float result, its INT8 values at the output scale, the INT32 accumulators, the scale,
the count of saturated outputs and, for per-channel weights, the datapath's INT16 values and
the per-row scales that turn them into the result."""

from __future__ import annotations

import argparse

import numpy as np

from memwall.command import UsageError, check_sim_cycles, output_path
from memwall.families.rdxe.config import KV_SCALES, WEIGHT_SCALES
from memwall.family import Command
from memwall.files import dumps_json, write_npz_atomic
from memwall.inputs import ArraySpec, InputError, load_npz

__all__ = ["COMMANDS", "load_op_inputs"]

OPS = ("rmsnorm_gemv", "attention")
_FLOATS = tuple(np.dtype(t) for t in ("float16", "float32", "float64"))
_LIMIT = 1 << 16


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--op", required=True, choices=OPS,
                        help="rmsnorm_gemv: x (d), gamma (d), w (n, d) -> y = w @ (x / "
                             "rms(x) * gamma); attention: q (heads, dh), k and v (t, kv_heads, "
                             "dh) -> o = softmax(q k^T / sqrt(dh)) v")
    parser.add_argument("--inputs", required=True, help="input .npz of float arrays")
    parser.add_argument("--out", required=True,
                        help="output .npz: the float result (y or o), its INT8 values at the "
                             "output scale (y_q or o_q), the INT32 accumulators (acc), the "
                             "output scale (s_y or s_o), the outputs saturated at -128/127 "
                             "(saturated); with --weight-scale channel the datapath's INT16 "
                             "values (y16) and per-row scales (row_scale, y = y16 * "
                             "row_scale); cycles for run")
    parser.add_argument("--mode", choices=("fused", "sequential"), default="fused",
                        help="VRC fused with the GEMV (default) or the sequential baseline")
    parser.add_argument("--layout", choices=("iwur", "baseline"), default="iwur",
                        help="attention's V layout in the KV cache (run only changes cycles)")
    parser.add_argument("--eps", type=float, default=1e-5,
                        help="RMSNorm epsilon (default 1e-5)")
    parser.add_argument("--weight-scale", choices=WEIGHT_SCALES, default=None,
                        help="rmsnorm_gemv: INT8 weight scales per output row (channel, the "
                             "default: the datapath writes INT16 with one factor for all rows "
                             "and the host scales each row) or one per tensor (the datapath's "
                             "own INT8 output)")
    parser.add_argument("--kv-scale", choices=KV_SCALES, default=None,
                        help="attention: INT8 scales of k and v per KV head (head, the "
                             "default; q per group of query heads) or one per tensor")
    parser.add_argument("--out-scale", type=float, default=None, metavar="S",
                        help="static scale of the INT8 output (s_y or s_o: one LSB in the "
                             "result's units); outputs past -128..127 saturate and are "
                             "counted. Default: calibrated, max|float64 result| / 127")


def _finite(name: str, a: np.ndarray, path) -> np.ndarray:
    a = np.asarray(a, np.float64)
    if not np.all(np.isfinite(a)):
        raise InputError(f"--inputs {path}: {name} holds NaN or infinite values; finite "
                         "numbers are allowed")
    return a


def load_op_inputs(op: str, path) -> dict[str, np.ndarray]:
    """The float arrays of ``op`` from an ``.npz``, with their shapes checked."""
    if op == "rmsnorm_gemv":
        specs = {"x": ArraySpec(_FLOATS, (_LIMIT,), "(d,) float"),
                 "gamma": ArraySpec(_FLOATS, (_LIMIT,), "(d,) float"),
                 "w": ArraySpec(_FLOATS, (_LIMIT, _LIMIT), "(n, d) float")}
    else:
        specs = {"q": ArraySpec(_FLOATS, (_LIMIT, _LIMIT), "(heads, dh) float"),
                 "k": ArraySpec(_FLOATS, (_LIMIT, _LIMIT, _LIMIT), "(t, kv_heads, dh) float"),
                 "v": ArraySpec(_FLOATS, (_LIMIT, _LIMIT, _LIMIT), "(t, kv_heads, dh) float")}
    arrays = {name: _finite(name, a, path)
              for name, a in load_npz(path, specs, what="--inputs").items()}
    where = f"--inputs {path}"
    if op == "rmsnorm_gemv":
        d = arrays["x"].shape[0]
        if arrays["gamma"].shape != (d,) or arrays["w"].shape[1:] != (d,) or d == 0:
            raise InputError(f"{where}: x {arrays['x'].shape}, gamma {arrays['gamma'].shape} "
                             f"and w {arrays['w'].shape} must be (d,), (d,) and (n, d), d >= 1")
    else:
        q, k, v = arrays["q"], arrays["k"], arrays["v"]
        if k.shape != v.shape or q.shape[1:] != k.shape[2:] or 0 in k.shape or 0 in q.shape:
            raise InputError(f"{where}: q {q.shape}, k {k.shape} and v {v.shape} must be "
                             "(heads, dh), (t, kv_heads, dh) and (t, kv_heads, dh), none empty")
        if q.shape[0] % k.shape[1]:
            raise InputError(f"{where}: heads ({q.shape[0]}) must be a multiple of kv_heads "
                             f"({k.shape[1]})")
    return arrays


def _check_options(args) -> None:
    """Options that do not fit the operation or hold no number: a usage error before any work."""
    for option, value, op in (("--weight-scale", args.weight_scale, "rmsnorm_gemv"),
                              ("--kv-scale", args.kv_scale, "attention")):
        if value is not None and args.op != op:
            raise UsageError(f"{option} applies to --op {op}, not {args.op}")
    if args.out_scale is not None and not (np.isfinite(args.out_scale) and args.out_scale > 0):
        raise UsageError(f"--out-scale {args.out_scale}: must be a finite number > 0")
    if args.op == "rmsnorm_gemv" and not (np.isfinite(args.eps) and args.eps > 0):
        raise UsageError(f"--eps {args.eps}: must be a finite number > 0")


def _quantised(args):
    from memwall.golden.rdxe import quantise as rdxe

    _check_options(args)
    arrays = load_op_inputs(args.op, args.inputs)
    if args.op == "rmsnorm_gemv":
        return rdxe.quantise_rmsnorm_gemv(arrays["x"], arrays["gamma"], arrays["w"], args.eps,
                                          args.weight_scale or WEIGHT_SCALES[0],
                                          args.out_scale)
    return rdxe.quantise_attention(arrays["q"], arrays["k"], arrays["v"],
                                   args.kv_scale or KV_SCALES[0], args.out_scale)


def _int8(values) -> np.ndarray:
    """The INT8 outputs as int8, never wrapped: a value outside -128..127 is a datapath bug
    (the hardware saturates), so it stops the command instead of flipping a sign."""
    values = np.asarray(values)
    if values.size and (values.min() < -128 or values.max() > 127):
        raise RuntimeError(f"INT8 outputs span {values.min()}..{values.max()}: the datapath "
                           "did not saturate them (a bug, not an input error)")
    return values.astype(np.int8)


def _int16(values) -> np.ndarray:
    values = np.asarray(values)
    if values.size and (values.min() < -(1 << 15) or values.max() >= 1 << 15):
        raise RuntimeError(f"INT16 outputs span {values.min()}..{values.max()}: the datapath "
                           "did not saturate them (a bug, not an input error)")
    return values.astype(np.int16)


def _save(out, args, quant, values, acc, cycles=None) -> str:
    """Writes the outputs (the --out help says what each holds); returns what to tell the user
    about the scales and saturation."""
    values = np.asarray(values, np.int64)
    if args.op == "rmsnorm_gemv":
        result = quant.outputs(values, args.mode)
        arrays = {"y": result["y"], "y_q": _int8(result["y_q"]), "s_y": np.float64(quant.s_y)}
        if quant.bits == 16:
            arrays["y16"] = _int16(values)
            arrays["row_scale"] = (quant.fused_row_scale if args.mode == "fused"
                                   else quant.seq_row_scale)
        scale, given, granularity = quant.s_y, quant.s_y_given, \
            f"weights per {quant.weight_scale}"
    else:
        result = quant.outputs(values)
        arrays = {"o": result["o"], "o_q": _int8(result["o_q"]), "s_o": np.float64(quant.s_o)}
        scale, given, granularity = quant.s_o, quant.s_o_given, f"k and v per {quant.kv_scale}"
    arrays["saturated"] = np.int64(quant.saturated)
    arrays["acc"] = np.asarray(acc, np.int32)
    if cycles is not None:
        arrays["cycles"] = np.int64(cycles)
    write_npz_atomic(out, arrays)
    note = (f"{granularity}; output scale {scale:.6g} ({'given' if given else 'calibrated'}); "
            f"{quant.saturated} of {values.size} outputs saturated at -128/127")
    if getattr(quant, "scores_saturated", 0):
        note += (f"; {quant.scores_saturated} scores past the INT16 score range, saturated "
                 "(the softmax of those heads is off)")
    return note


def golden_command(args, cfg) -> None:
    from memwall.golden.rdxe import quantise as rdxe

    out = output_path(args.out)
    quant = _quantised(args)
    if args.op == "rmsnorm_gemv":
        r = rdxe.quantised_rmsnorm_gemv(quant, args.mode)
    else:
        r = rdxe.quantised_attention(quant, args.mode)
    note = _save(out, args, quant, r["values"], r["acc"])
    print(f"memwall: wrote {out} ({args.op}, {args.mode}, golden INT8 datapath; {note})")


def run_command(args, cfg) -> None:
    from memwall.golden.rdxe.cycles import command_cycles
    from memwall.hdl.rdxe.program import ShapeError, plan_attention, plan_rmsnorm_gemv
    from memwall.verif.rdxe.run import run_program

    out = output_path(args.out)
    quant = _quantised(args)
    try:
        if args.op == "rmsnorm_gemv":
            prog, assemble = plan_rmsnorm_gemv(cfg, quant.x, quant.weights(args.mode),
                                               quant.eps_sum, quant.out_static(args.mode),
                                               args.mode, quant.g, quant.seq_norm_static,
                                               out_bits=quant.bits)
        else:   # K and V quantised per KV head: each head its own score and output factors
            prog, assemble = plan_attention(cfg, quant.q, quant.k, quant.v, quant.score_rcs,
                                            quant.statics(args.mode), args.mode, args.layout)
    except ShapeError as exc:
        raise InputError(f"--inputs {args.inputs}: {exc} (config {cfg.name})") from None
    estimate = sum(command_cycles(cfg.vacs, cfg.lanes, c) or 0 for c in prog.commands) \
        + len(prog.data)
    check_sim_cycles(estimate, args.max_cycles, f"--inputs {args.inputs} ({args.op})")
    results = run_program(prog, sim=args.sim)
    values, acc = assemble(results)
    cycles = sum(r["cycles"] for r in results)
    note = _save(out, args, quant, values, acc, cycles)
    print(f"memwall: wrote {out} ({args.op}, {args.mode}, {cycles} cycles on the RTL, loads "
          f"included; {note})")


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def model_command(args, cfg) -> None:
    from memwall.golden.rdxe import model as rdxe_model

    result = rdxe_model.evaluate(cfg)
    print(dumps_json(result) if args.json else rdxe_model.format_report(result))


COMMANDS = {
    "golden": Command("RMSNorm-GEMV or decode attention of your float data through the INT8 "
                      "golden datapath", _data_arguments, golden_command),
    "run": Command("the same through the generated rdxe_group, in simulation",
                   _data_arguments, run_command),
    "model": Command("cycle model: fused vs sequential VRC, iWuR vs baseline KV layout, GQA "
                     "capacity, and the ring of DXEs against padded batching",
                     _model_arguments, model_command),
}
