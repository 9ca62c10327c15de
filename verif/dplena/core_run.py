"""Run one sampling step on the generated d-PLENA core: program, HBM stream, outputs.

The host side of the core, shared by the regression (``tests/test_sim_core.py``) and
``memwall run dplena``: assemble the program for a workload, lay out the logits as HBM beats in
prefetch order (:mod:`memwall.golden.hbm`), run ``tb_core`` under a simulator, and decode the
output FIFO into the golden model's result dict (plus ``cycles``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from memwall.golden import hbm
from memwall.golden.dplena import prepare_logits
from memwall.golden.formats import BF16
from memwall.golden.mxfp8 import quantize
from memwall.hdl.dplena.config import DplenaConfig
from memwall.hdl.dplena.core import TOP_NAME, DplenaCore
from memwall.hdl.dplena.program import Program, Workload, generate

__all__ = ["hbm_beats", "run_core"]


def hbm_beats(program: Program, logits) -> np.ndarray:
    """The HBM beat stream of ``program``: every prefetch's beats, in program order.

    ``logits`` is float32 (B, L, V); MXFP8 quantises whole rows (blocks of 32 along V), BF16
    rounds to nearest even.
    """
    wl, width = program.workload, program.cfg.hbm_bytes_per_cycle
    z = np.asarray(logits, dtype=np.float32)
    if wl.logits_format == "mxfp8":
        elements, scales = quantize(z)
    else:
        bits = prepare_logits(z, "bf16")
    beats = []
    for p in program.prefetches:
        if wl.logits_format == "mxfp8":
            first, last = p.start // 32, -(-(p.start + p.count) // 32)
            beats.append(hbm.prefetch_beats_mx(elements[p.b, p.l, p.start:p.start + p.count],
                                               scales[p.b, p.l, first:last], width))
        else:
            beats.append(hbm.prefetch_beats_bf16(bits[p.b, p.l, p.start:p.start + p.count],
                                                 width))
    return np.concatenate(beats) if beats else np.zeros((0, width), np.uint8)


def run_core(cfg: DplenaConfig, workload: Workload, logits, x, *, sim: str | None = None,
             seed: int | None = None, stall: bool = False) -> dict:
    """Simulate one step of ``workload`` on ``cfg``'s core.

    Returns ``x``, ``x0`` (int64 (B, L)), ``confidence`` (float32: the BF16 confidence where
    ``x == mask_id``, else -inf, as :func:`memwall.golden.dplena.sample_step_hw`),
    ``confidence_bits`` (uint16, every position), ``transfer`` (bool) and ``cycles`` (int, from
    ``start`` to HALT). ``stall`` inserts random gaps in the HBM stream and the output
    ready.
    """
    from memwall.verif.common.runner import simulate

    program = generate(cfg, workload)
    beats = hbm_beats(program, logits)
    x = np.asarray(x, dtype=np.int64)
    image = program.int_image(x)
    with tempfile.TemporaryDirectory() as tmp:
        job, result = Path(tmp) / "job.npz", Path(tmp) / "result.npz"
        np.savez(job, program=np.asarray(program.words, dtype=np.uint64),
                 int_addr=np.asarray(list(image), dtype=np.int64),
                 int_data=np.asarray(list(image.values()), dtype=np.uint64),
                 beats=beats, n_out=program.output_words())
        simulate(DplenaCore(cfg), TOP_NAME, "memwall.verif.dplena.tb_core",
                 {"job": str(job), "result": str(result), "stall": stall,
                  "beat_bytes": cfg.hbm_bytes_per_cycle}, sim=sim, seed=seed)
        with np.load(result) as r:
            words, cycles = r["words"], int(r["cycles"])
    out = program.decode_outputs(words)
    valid = x == workload.mask_id
    conf = np.where(valid, BF16.from_bits(out["confidence"]).astype(np.float32),
                    np.float32(-np.inf)).astype(np.float32)
    return {"x": out["x"], "x0": out["x0"], "confidence": conf,
            "confidence_bits": out["confidence"], "transfer": out["transfer"], "cycles": cycles}
