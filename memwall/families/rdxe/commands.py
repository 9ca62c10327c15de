"""``memwall golden|run|model rdxe``: RMSNorm-GEMV and decode attention on your float data
through the INT8 golden datapath or the generated tile group, and the cycle and ring models."""

from __future__ import annotations

import argparse

import numpy as np

from memwall.command import UsageError, check_sim_cycles, output_path
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
                        help="output .npz: the float result (y or o), its INT8 values (y_q or "
                             "o_q) and INT32 accumulators (acc), and cycles for run")
    parser.add_argument("--mode", choices=("fused", "sequential"), default="fused",
                        help="VRC fused with the GEMV (default) or the sequential baseline")
    parser.add_argument("--layout", choices=("iwur", "baseline"), default="iwur",
                        help="attention's V layout in the KV cache (run only changes cycles)")
    parser.add_argument("--eps", type=float, default=1e-5,
                        help="RMSNorm epsilon (default 1e-5)")


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


def _quantised(args):
    from memwall.golden.rdxe import datapath as rdxe

    arrays = load_op_inputs(args.op, args.inputs)
    if args.op == "rmsnorm_gemv":
        if not (np.isfinite(args.eps) and args.eps > 0):
            raise UsageError(f"--eps {args.eps}: must be a finite number > 0")
        return rdxe.quantise_rmsnorm_gemv(arrays["x"], arrays["gamma"], arrays["w"], args.eps)
    return rdxe.quantise_attention(arrays["q"], arrays["k"], arrays["v"])


def _int8(values) -> np.ndarray:
    """The INT8 outputs as int8, never wrapped: a value outside -128..127 is a datapath bug
    (the hardware saturates), so it stops the command instead of flipping a sign."""
    values = np.asarray(values)
    if values.size and (values.min() < -128 or values.max() > 127):
        raise RuntimeError(f"INT8 outputs span {values.min()}..{values.max()}: the datapath "
                           "did not saturate them (a bug, not an input error)")
    return values.astype(np.int8)


def _save(out, args, quant, values, acc, cycles=None) -> None:
    if args.op == "rmsnorm_gemv":
        scale = quant.s_y_fused if args.mode == "fused" else quant.s_y_seq
        arrays = {"y": values * scale, "y_q": _int8(values)}
    else:
        arrays = {"o": values * quant.s_o, "o_q": _int8(values)}
    arrays["acc"] = np.asarray(acc, np.int32)
    if cycles is not None:
        arrays["cycles"] = np.int64(cycles)
    write_npz_atomic(out, arrays)


def _statics(quant, mode: str):
    if hasattr(quant, "w_merged"):                         # rmsnorm_gemv
        return quant.fused_static if mode == "fused" else quant.seq_out_static
    return quant.out_static if mode == "fused" else quant.seq_out_static


def golden_command(args, cfg) -> None:
    from memwall.golden.rdxe import datapath as rdxe

    out = output_path(args.out)
    quant = _quantised(args)
    static = _statics(quant, args.mode)
    if args.op == "rmsnorm_gemv":
        w = quant.w_merged if args.mode == "fused" else quant.w
        r = rdxe.rmsnorm_gemv(quant.x, w, quant.eps_sum, static, args.mode, quant.g,
                              quant.seq_norm_static)
        values, acc = r["y"], r["acc"]
    else:
        r = rdxe.attention(quant.q, quant.k, quant.v, quant.score_rc, static, args.mode)
        values, acc = r["o"], r["acc"]
    _save(out, args, quant, np.asarray(values, np.int64), acc)
    print(f"memwall: wrote {out} ({args.op}, {args.mode}, golden INT8 datapath)")


def run_command(args, cfg) -> None:
    from memwall.golden.rdxe.cycles import command_cycles
    from memwall.hdl.rdxe.program import ShapeError, plan_attention, plan_rmsnorm_gemv
    from memwall.verif.rdxe.run import run_program

    out = output_path(args.out)
    quant = _quantised(args)
    static = _statics(quant, args.mode)
    try:
        if args.op == "rmsnorm_gemv":
            w = quant.w_merged if args.mode == "fused" else quant.w
            prog, assemble = plan_rmsnorm_gemv(cfg, quant.x, w, quant.eps_sum, static,
                                               args.mode, quant.g, quant.seq_norm_static)
        else:
            prog, assemble = plan_attention(cfg, quant.q, quant.k, quant.v, quant.score_rc,
                                            static, args.mode, args.layout)
    except ShapeError as exc:
        raise InputError(f"--inputs {args.inputs}: {exc} (config {cfg.name})") from None
    estimate = sum(command_cycles(cfg.vacs, cfg.lanes, c) or 0 for c in prog.commands) \
        + len(prog.data)
    check_sim_cycles(estimate, args.max_cycles, f"--inputs {args.inputs} ({args.op})")
    results = run_program(prog, sim=args.sim)
    values, acc = assemble(results)
    cycles = sum(r["cycles"] for r in results)
    _save(out, args, quant, values, acc, cycles)
    print(f"memwall: wrote {out} ({args.op}, {args.mode}, {cycles} cycles on the RTL, loads "
          "included)")


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
