"""Run page commands on the generated KVNAND PE, messages through the BCH encoder, or a slice
trace through the KV write-combine buffer (behind ``memwall run kvnand``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from memwall.families.kvnand.config import KvnandConfig
from memwall.golden.kvnand import kvbuf as golden_kvbuf
from memwall.golden.kvnand import pe as golden
from memwall.hdl.kvnand.bch import BchEncoder
from memwall.hdl.kvnand.core import kv_buffer
from memwall.hdl.kvnand.pe import Pe
from memwall.hdl.kvnand.program import PageCommand, plan_page
from memwall.verif.common.runner import simulate_for_result

__all__ = ["run_pages", "run_bch", "run_kvbuf", "whole_pages"]


def run_pages(cfg: KvnandConfig, commands: list[PageCommand], sim: str | None = None,
              seed: int | None = None) -> list[dict]:
    """Per command: ``cycles`` and ``results`` (FP32 bits)."""
    listed = [{"mode": c.mode, "command": c.command, "beats": c.beats, "vec": c.vec,
               "scales": c.scales, "outputs": 0 if c.expect is None else len(c.expect)}
              for c in commands]
    return simulate_for_result(Pe(cfg), "kvnand_pe", "memwall.verif.kvnand.tb_pe",
                               {"config": dataclasses.asdict(cfg), "commands": listed},
                               testcase="program", sim=sim, seed=seed)


def _codes(rng: np.random.Generator, kind: str, count: int) -> np.ndarray:
    """Finite element or input codes of ``kind``: BF16 bits of normal values, or integers."""
    if kind == "bf16":
        return (rng.standard_normal(count).astype(np.float32).view(np.uint32) >> 16) \
            .astype(np.int64)
    lo = -(1 << (golden.KINDS[kind] - 1))
    return rng.integers(lo, -lo, count)


def whole_pages(cfg: KvnandConfig, rng: np.random.Generator
                ) -> list[tuple[str, int, bool, PageCommand]]:
    """A whole page of the config's format per case, rows or tokens of ``max_d`` elements:
    GEMV; LOGIT and ATTEND with one head and with ``max_heads``; ATTEND at ``max_heads`` with
    its emit as well. Each ``(mode, heads, emit, command)``: the pages the design-space model
    costs (:meth:`memwall.golden.kvnand.systems.Params.mac_cycles`)."""
    d, fmt = cfg.max_d, cfg.fmt
    in_kind = golden.input_kind(fmt)
    cases = [("gemv", 1, False)] + [(mode, heads, False) for mode in ("logit", "attend")
                                    for heads in sorted({1, cfg.max_heads})]
    cases.append(("attend", cfg.max_heads, True))
    out = []
    for mode, heads, emit in cases:
        kind = golden.page_kind(fmt, mode)
        elements = cfg.page_elements(kind)
        units = elements // d
        shape = {"gemv": (d,), "logit": (heads, d), "attend": (units, heads)}[mode]
        inputs = _codes(rng, in_kind, int(np.prod(shape))).reshape(shape)
        scales = None
        if golden.scaled(kind):
            scales = (rng.uniform(0.5, 2.0, elements // cfg.group).astype(np.float32)
                      .view(np.uint32) >> 16).astype(np.int64)
        out.append((mode, heads, emit, plan_page(cfg, mode, _codes(rng, kind, elements), d,
                                                 inputs, scales, emit=emit)))
    return out


def run_bch(cfg: KvnandConfig, messages: np.ndarray, sim: str | None = None,
            seed: int | None = None) -> tuple[np.ndarray, int]:
    """The codewords ``(N, 9088)`` of message rows ``(N, 8192)`` and the encoder's cycles."""
    enc = BchEncoder(cfg.bch_bits)
    res = simulate_for_result(
        enc, f"kvnand_bch_p{cfg.bch_bits}", "memwall.verif.kvnand.tb_bch_run",
        {**enc.params, "messages_bits": np.asarray(messages, np.uint8).tolist()},
        testcase="program", sim=sim, seed=seed)
    return np.asarray(res["codewords"], np.uint8), int(res["cycles"])


def run_kvbuf(cfg: KvnandConfig, streams, data, sim: str | None = None,
              seed: int | None = None) -> dict[str, np.ndarray]:
    """A slice trace (``streams`` (N,), ``data`` (N, kv_slice_bytes)) through the config's KV
    write-combine buffer, then a flush: the arrays of
    :func:`memwall.golden.kvnand.kvbuf.program_arrays` as the RTL issued them (``cause``: full
    when not partial, flush when issued after the flush was accepted, else evict; ``programs``
    the RTL's counter) and ``cycles``."""
    buf = kv_buffer(cfg)
    res = simulate_for_result(
        buf, "kvnand_kvbuf_run", "memwall.verif.kvnand.tb_kvbuf_run",
        {**buf.params, "streams": np.asarray(streams, np.int64).tolist(),
         "slices": np.asarray(data, np.uint8).tolist()}, testcase="program", sim=sim, seed=seed)
    programs = res["programs"]
    causes = ["full" if not p["partial"] else "flush" if p["after_flush"] else "evict"
              for p in programs]
    arrays = golden_kvbuf.program_arrays(
        {"programs": [{"stream": p["stream"], "page": p["page"], "valid": p["valid"],
                       "cause": cause, "data": np.asarray(p["data"], np.uint8)}
                      for p, cause in zip(programs, causes, strict=True)]}, cfg.page_bytes)
    arrays["early"] = np.array([bool(p["partial"]) for p in programs], bool)
    arrays["programs"] = np.int64(res["counters"]["programs"])
    arrays["cycles"] = np.int64(res["cycles"])
    return arrays
