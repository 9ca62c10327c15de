"""``memwall golden|model|run dplena``: the sampling step on your own data, the cycle model, and
the generated core in simulation."""

from __future__ import annotations

import argparse
import re

from memwall.command import UsageError, check_sim_cycles, output_path, positive_int
from memwall.families.dplena.config import LOGITS_FORMAT_ALIASES, LOGITS_FORMATS
from memwall.family import Command
from memwall.files import dumps_json
from memwall.inputs import shown

__all__ = ["COMMANDS"]


def _stream_options(parser: argparse.ArgumentParser) -> None:
    """How logits reach the core: the same two options on golden, model and run."""
    parser.add_argument("--logits-format", choices=[*LOGITS_FORMATS, *LOGITS_FORMAT_ALIASES],
                        default=None,
                        help="how logits are held in HBM before dequantisation (default: the "
                             "config's logits_format; mxfp8 is mxfp8_e4m3); golden takes any, "
                             "model and run bf16 or the MX format the config's core decodes")
    parser.add_argument("--v-chunk", type=positive_int, default=None,
                        help="logits per prefetch chunk (default: the largest that fits "
                             "the config's Vector SRAM, evened out)")


#: Row-chunks (B x L x chunks of a row) the cycle model walks, instruction by instruction:
#: beyond any paper workload (Table II has 32 x 2), and a bound on its time.
MAX_MODEL_ROW_CHUNKS = 1 << 19


def max_batch(cfg) -> int:
    """The most rows the core holds: INT SRAM keeps 2*B*L + B words, so B <= words / 3."""
    return cfg.int_sram_words // 3


def _inputs(args, cfg) -> dict:
    from memwall.golden.dplena import sampling as golden

    return golden.load_sampling_inputs(args.inputs, cfg.block_len, cfg.k_max,
                                       max_batch=max_batch(cfg))


def _v_chunk(cfg, args, vocab: int) -> int:
    """``--v-chunk`` or the cycle model's default for the config; checked against the core."""
    from memwall.golden.dplena.model import default_v_chunk
    from memwall.golden.dplena.program import WorkloadError

    try:
        v_chunk = args.v_chunk if args.v_chunk is not None else default_v_chunk(cfg, vocab)
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    if v_chunk < vocab and v_chunk % cfg.vlen:
        raise UsageError(f"--v-chunk {v_chunk}: must be a multiple of vlen ({cfg.vlen}) or at "
                         f"least V ({vocab})")
    return v_chunk


def _workload(cfg, args, shape, k, mask_id, check=None):
    """The workload, with every limit of the core checked by generating its program; ``check``
    sees it first (a bound on work that must not wait for the program)."""
    from memwall.golden.dplena.program import Workload, WorkloadError, generate

    fmt = args.logits_format or cfg.logits_format
    batch, block_len, vocab = shape
    wl = Workload(batch, block_len, vocab, _v_chunk(cfg, args, vocab),
                  tuple(int(v) for v in k), mask_id=int(mask_id), logits_format=fmt)
    if check is not None:
        check(wl)
    try:
        generate(cfg, wl)   # every limit of the core, before anything runs
    except WorkloadError as exc:
        raise UsageError(str(exc)) from None
    return wl


# --- golden ---------------------------------------------------------------------------------

def _golden_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", required=True, help="input .npz (logits, x, mask_id, k)")
    parser.add_argument("--out", required=True, help="output .npz (x, x0, confidence, transfer)")
    _stream_options(parser)


def golden_command(args, cfg) -> None:
    from memwall.golden.dplena import sampling as golden

    output_path(args.out)
    logits_format = args.logits_format or cfg.logits_format
    inputs = _inputs(args, cfg)
    logits = golden.prepare_logits(inputs["logits"], logits_format)
    v_chunk = _v_chunk(cfg, args, inputs["logits"].shape[2])
    result = golden.sample_step_hw(logits, inputs["x"], inputs["mask_id"], inputs["k"], cfg.vlen,
                                   stable_max=cfg.stable_max, v_chunk=v_chunk,
                                   sum_partials=cfg.stages.sum_partials)
    golden.save_sampling_outputs(args.out, result)
    print(f"memwall: wrote {args.out} (B={inputs['x'].shape[0]}, L={inputs['x'].shape[1]}, "
          f"V={inputs['logits'].shape[2]}, logits {logits_format}, "
          f"{int(result['transfer'].sum())} tokens transferred)")


# --- model ---------------------------------------------------------------------------------

def _workload_option(text: str, limits: dict[str, int]) -> tuple[int, ...]:
    """``--workload B,L,V,T``: each an integer in [1, its limit], checked before use."""
    parts = text.split(",")
    names = ",".join(limits)
    numbers = all(re.fullmatch(r"\s*[0-9]{1,12}\s*", p) for p in parts)
    if len(parts) != len(limits) or not numbers:
        raise UsageError(f"--workload {shown(text)}: expected {len(limits)} positive integers "
                         f"{names}")
    values = tuple(int(p) for p in parts)
    for (name, limit), value in zip(limits.items(), values, strict=True):
        if not 1 <= value <= limit:
            raise UsageError(f"--workload {text}: {name} = {value:,} must be in [1, {limit:,}] "
                             f"for this config")
    return values

def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workload", required=True,
                        help="B,L,V,T (batch, block length, vocabulary, diffusion steps)")
    _stream_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def model_command(args, cfg) -> None:
    from memwall.golden.dplena.model import estimate
    from memwall.golden.dplena.sampling import MAX_VOCAB

    batch, block_len, vocab, steps = _workload_option(args.workload, {
        "B": max_batch(cfg), "L": cfg.block_len, "V": MAX_VOCAB, "T": 1 << 30})
    # k only sizes the top-k work, a few cycles per row: the most the core allows.
    k = (min(block_len, cfg.k_max),) * batch

    def bounded(wl) -> None:
        row_chunks = batch * block_len * len(wl.chunks())
        if row_chunks > MAX_MODEL_ROW_CHUNKS:
            raise UsageError(f"--workload {args.workload}: {batch * block_len} rows of "
                             f"{len(wl.chunks())} chunks (V_chunk {wl.v_chunk}) is "
                             f"{row_chunks:,} row-chunks; the cycle model walks at most "
                             f"{MAX_MODEL_ROW_CHUNKS:,} (a larger --v-chunk or fewer rows)")

    wl = _workload(cfg, args, (batch, block_len, vocab), k, 0, check=bounded)
    result = {"config": cfg.name, "stable_max": cfg.stable_max, "vlen": cfg.vlen,
              "hbm_bytes_per_cycle": cfg.hbm_bytes_per_cycle, "clock_mhz": cfg.clock_mhz,
              "workload": {"B": batch, "L": block_len, "V": vocab, "T": steps,
                           "logits_format": wl.logits_format},
              **estimate(cfg, wl, steps).as_dict()}
    result["latency_ms"] = result["cycles"] / (cfg.clock_mhz * 1e3)
    bl = batch * block_len
    # Paper Eq. 2-4 (edge mode) next to what this core holds for the workload.
    result["sram_bytes"] = {
        "paper_eq2_int": 2 * bl * 4, "paper_eq3_fp": max(block_len, cfg.vlen) * 2,
        "paper_eq4_vector": (3 * bl + min(wl.v_chunk, vocab)) * 2,
        "int_used": (2 * bl + batch) * 4, "fp_used": block_len * 2,
        "vector_used": (2 * -(-min(wl.v_chunk, vocab) // cfg.vlen) + 3) * cfg.vlen * 2,
        "int_config": cfg.int_sram_words * 4, "fp_config": cfg.fp_sram_words * 2,
        "vector_config": cfg.vector_sram_kib * 1024}
    if args.json:
        print(dumps_json(result))
        return
    print(f"{cfg.name} ({cfg.stable_max}, VLEN {cfg.vlen}, {cfg.hbm_bytes_per_cycle} B/cycle): "
          f"B={batch} L={block_len} V={vocab} T={steps}, V_chunk={wl.v_chunk}")
    print(f"  cycles {result['cycles']:,} ({result['latency_ms']:.3f} ms at {cfg.clock_mhz:g} "
          f"MHz), bound {result['bound_cycles']:,.0f}, ratio {result['ratio_to_bound']:.3f}")


# --- run ------------------------------------------------------------------------------------

def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", required=True,
                        help="input .npz (logits, x, mask_id, k), as for memwall golden")
    parser.add_argument("--out", required=True,
                        help="output .npz (x, x0, confidence, transfer, cycles)")
    _stream_options(parser)


def run_command(args, cfg) -> None:
    from memwall.golden.dplena import sampling as golden
    from memwall.verif.dplena.core_run import run_core

    out = output_path(args.out)
    inputs = _inputs(args, cfg)
    wl = _workload(cfg, args, inputs["logits"].shape, inputs["k"], inputs["mask_id"])
    from memwall.golden.dplena.model import bound_cycles

    check_sim_cycles(bound_cycles(cfg, wl), args.max_cycles,
                     f"inputs {args.inputs} (B={wl.batch}, L={wl.block_len}, V={wl.vocab}, "
                     f"HBM bound)")
    result = run_core(cfg, wl, inputs["logits"], inputs["x"], sim=args.sim)
    golden.save_sampling_outputs(out, result)
    print(f"memwall: wrote {out} (B={wl.batch}, L={wl.block_len}, V={wl.vocab}, "
          f"V_chunk={wl.v_chunk}, logits {wl.logits_format}, {result['cycles']} cycles)")


COMMANDS = {
    "golden": Command("the hardware-exact sampling step (Algorithm 2) on an .npz of logits",
                      _golden_arguments, golden_command),
    "model": Command("cycles of a sampling step on the core, against the HBM bound",
                     _model_arguments, model_command),
    "run": Command("the generated dplena_core on an .npz of logits, in simulation",
                   _run_arguments, run_command),
}
