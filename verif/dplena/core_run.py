"""Run one sampling step on the generated d-PLENA core: program, HBM stream, outputs.

The host side of the core, shared by the regression (``tests/dplena/test_sim_core.py``), ``memwall
run dplena`` and the power workload (:func:`memwall.families.dplena.workloads.power_workloads`):
assemble the program for a workload, lay out the logits as HBM beats in prefetch order
(:mod:`memwall.golden.dplena.hbm`), write them as a job file for ``tb_core`` (:func:`step_job`), run
it under a simulator (:func:`run_words`, which runs any program) and decode the output FIFO
into the golden model's result dict (plus ``cycles``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from memwall.families.dplena.config import DplenaConfig
from memwall.golden.common.formats import BF16
from memwall.golden.dplena.interpreter import Prefetch, stream_beats
from memwall.golden.dplena.mx import quantize
from memwall.golden.dplena.program import Program, Workload, generate, stream_format
from memwall.golden.dplena.sampling import prepare_logits
from memwall.hdl.dplena.core import TOP_NAME, DplenaCore

__all__ = ["step_prefetches", "hbm_beats", "write_job", "step_job", "run_words", "run_core",
           "sampling_step"]


def step_prefetches(program: Program, logits) -> list[Prefetch]:
    """The data of every prefetch of ``program``, in program order.

    ``logits`` is float32 (B, L, V); an MX format quantises whole rows (blocks of 32 along V),
    BF16 rounds to nearest even.
    """
    z = np.asarray(logits, dtype=np.float32)
    fmt = stream_format(program.cfg, program.workload)
    if fmt != "bf16":
        elements, scales = quantize(z, fmt)
    else:
        bits = prepare_logits(z, "bf16")
    data = []
    for p in program.prefetches:
        if fmt != "bf16":
            first, last = p.start // 32, -(-(p.start + p.count) // 32)
            data.append(Prefetch(elements=elements[p.b, p.l, p.start:p.start + p.count],
                                 scales=scales[p.b, p.l, first:last], fmt=fmt))
        else:
            data.append(Prefetch(bits=bits[p.b, p.l, p.start:p.start + p.count]))
    return data


def hbm_beats(program: Program, logits) -> np.ndarray:
    """The HBM beat stream of ``program``: every prefetch's beats, in program order."""
    return stream_beats(step_prefetches(program, logits), program.cfg.hbm_bytes_per_cycle)


def write_job(folder: Path, words, int_image: dict, beats: np.ndarray, n_out: int, *,
              beat_bytes: int, stall: bool = False, restarts=()) -> dict:
    """Write ``tb_core``'s job file into ``folder``: the program ``words``, the INT SRAM words
    the host writes, the HBM beat stream, the number of output words and the programs started
    after it stops (``restarts``); returns the testbench params (the job and result paths,
    ``stall``, the beat width)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    job, result = folder / "job.npz", folder / "result.npz"
    more = {"restarts": np.asarray([w for r in restarts for w in r], dtype=np.uint64),
            "restart_lengths": np.asarray([len(r) for r in restarts], dtype=np.int64)} \
        if restarts else {}
    np.savez(job, program=np.asarray(list(words), dtype=np.uint64),
             int_addr=np.asarray(list(int_image), dtype=np.int64),
             int_data=np.asarray(list(int_image.values()), dtype=np.uint64),
             beats=beats, n_out=n_out, **more)
    return {"job": str(job), "result": str(result), "stall": stall, "beat_bytes": beat_bytes}


def step_job(cfg: DplenaConfig, workload: Workload, logits, x, folder: Path, *,
             stall: bool = False) -> dict:
    """:func:`write_job` for one sampling step of ``workload``: its program, INT SRAM image and
    HBM beats; returns the testbench ``params`` and the ``program``."""
    program = generate(cfg, workload)
    params = write_job(folder, program.words, program.int_image(np.asarray(x, dtype=np.int64)),
                       hbm_beats(program, logits), program.output_words(),
                       beat_bytes=cfg.hbm_bytes_per_cycle, stall=stall)
    return {"params": params, "program": program}


def run_words(cfg: DplenaConfig, words, int_image: dict, beats: np.ndarray, n_out: int, *,
              sim: str | None = None, seed: int | None = None, stall: bool = False,
              keep_waves: Path | None = None, restarts=()) -> tuple[np.ndarray, int]:
    """Run any program on ``cfg``'s core (:func:`write_job`'s inputs), then each of
    ``restarts`` in turn: the ``n_out`` words of the output FIFO and the cycle count of the
    last program, from its ``start`` to HALT."""
    from memwall.verif.common.runner import simulate

    with tempfile.TemporaryDirectory() as tmp:
        params = write_job(Path(tmp), words, int_image, beats, n_out,
                           beat_bytes=cfg.hbm_bytes_per_cycle, stall=stall, restarts=restarts)
        simulate(DplenaCore(cfg), TOP_NAME, "memwall.verif.dplena.tb_core", params, sim=sim,
                 seed=seed, keep_waves=keep_waves)
        with np.load(params["result"]) as r:
            return r["words"], int(r["cycles"])


def run_core(cfg: DplenaConfig, workload: Workload, logits, x, *, sim: str | None = None,
             seed: int | None = None, stall: bool = False,
             keep_waves: Path | None = None) -> dict:
    """Simulate one step of ``workload`` on ``cfg``'s core.

    Returns ``x``, ``x0`` (int64 (B, L)), ``confidence`` (float32: the BF16 confidence where
    ``x == mask_id``, else -inf, as :func:`memwall.golden.dplena.sampling.sample_step_hw`),
    ``confidence_bits`` (uint16, every position), ``transfer`` (bool) and ``cycles`` (int, from
    ``start`` to HALT). ``stall`` inserts random gaps in the HBM stream and the output
    ready. ``keep_waves``: keep the run's waveform there (VCD with Verilator), as
    :func:`memwall.verif.common.runner.simulate` does.
    """
    x = np.asarray(x, dtype=np.int64)
    program = generate(cfg, workload)
    words, cycles = run_words(cfg, program.words, program.int_image(x),
                              hbm_beats(program, logits), program.output_words(), sim=sim,
                              seed=seed, stall=stall, keep_waves=keep_waves)
    out = program.decode_outputs(words)
    valid = x == workload.mask_id
    conf = np.where(valid, BF16.from_bits(out["confidence"]).astype(np.float32),
                    np.float32(-np.inf)).astype(np.float32)
    return {"x": out["x"], "x0": out["x0"], "confidence": conf,
            "confidence_bits": out["confidence"], "transfer": out["transfer"], "cycles": cycles}


def sampling_step(cfg: DplenaConfig, *, batch: int = 1, block_len: int | None = None,
                  chunks: int = 3, chunk_rows: int = 4, seed: int = 1, mask_id: int = 126336):
    """A representative sampling step for ``cfg``: (workload, logits, x).

    Table II's shape scaled down (:data:`memwall.families.dplena.report.TABLE_II`: B 16,
    L 32, V 126464): ``batch`` rows of ``block_len`` positions (default the config's), V =
    ``chunks`` chunks of ``chunk_rows`` Vector SRAM rows each, MXFP8 logits like a language
    model's (unit normal x 3, one hot token per position), 60 % of the positions masked and
    k = min(L, k_max) tokens transferred per row.
    """
    rng = np.random.default_rng(seed)
    L = cfg.block_len if block_len is None else block_len
    v_chunk = chunk_rows * cfg.vlen
    vocab = chunks * v_chunk
    logits = (rng.standard_normal((batch, L, vocab)) * 3).astype(np.float32)
    for b in range(batch):
        logits[b, np.arange(L), rng.integers(0, vocab, L)] += 12.0
    x = rng.integers(0, 50_000, (batch, L))
    x[rng.random((batch, L)) < 0.6] = mask_id
    k = (min(L, cfg.k_max),) * batch
    return Workload(batch, L, vocab, v_chunk, k, mask_id, "mxfp8"), logits, x
