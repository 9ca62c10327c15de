"""Accuracy of the rDXE datapath's fused (VRC) and sequential paths on float data.

**How it is measured.** Each workload is a seeded random float layer or head, standing in for the
user's float inputs (``x``, ``gamma``, ``w``; ``q``, ``k``, ``v``). The host quantises them as the
quantisation contract says (:mod:`memwall.golden.rdxe.quantise`), the bit-exact golden datapath
(:mod:`memwall.golden.rdxe.datapath`) computes the INT8 output ``y_q`` (``o_q``), and the error of
each output element is ``|y_q - y / s|``: ``y`` is float64 evaluated on the float inputs (not on the
INT8 operands, so the quantisation of every operand counts), ``s`` the output scale used, calibrated
as ``max|y| / 127`` of that float64 answer. Errors are in units of the output's INT8 LSB; an exactly
rounded INT8 output is within 0.5 (mean 0.25). Per operation, workload, scale granularity and mode:
the number of elements, the share within 1 LSB, the mean and the largest error and, for attention,
the scores that saturated at INT16 (none on these workloads: tested; the outputs cannot saturate at
a calibrated scale, ``max|y| / 127``).

**Workloads** (free constants, assumptions, not measured from a model):

* ``ordinary``: Gaussian. RMSNorm-GEMV: ``x`` N(0, 1) scaled over four decades, ``gamma``
  ``1 + 0.2 N(0, 1)``, ``w`` rows N(0, 1/d) times a per-row spread ``exp(ROW_SPREAD N(0, 1))``
  (trained weights' rows differ in range; per-channel scales gain more the larger the spread).
  Attention: ``q``, ``k``, ``v`` N(0, 1), ``q`` scaled from a diffuse to a peaked softmax.
* ``outlier_channel``: one channel much larger. RMSNorm-GEMV: one element of ``x``, ``OUTLIER``
  times (an activation outlier, as in LLMs' hidden states). Attention: one dimension of KV head
  0's keys over every token, ``KEY_OUTLIER`` times (LLMs' key caches have such channels; at 40x
  the peaked heads' scores would pass the INT16 score range).
* ``large_gain``: RMSNorm-GEMV only: one ``gamma`` set to ``LARGE_GAIN`` (attention has no gain).

Scale granularities: RMSNorm-GEMV weights per ``channel`` (row) or per ``tensor``; attention's
``k``, ``v`` (and ``q``'s group) per ``head`` or per ``tensor``. Seeded and deterministic, a few
seconds. ``python -m memwall.golden.rdxe.accuracy`` prints the table (``--json``: the dict).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from memwall.golden.rdxe import quantise as rdxe
from memwall.golden.rdxe.datapath import MODES

__all__ = ["study", "rows", "format_table", "rmsnorm_cases", "attention_cases", "WORKLOADS",
           "MEASURE", "ROW_SPREAD", "OUTLIER", "KEY_OUTLIER", "LARGE_GAIN"]

#: Workload classes per operation.
WORKLOADS = {"rmsnorm_gemv": ("ordinary", "outlier_channel", "large_gain"),
             "attention": ("ordinary", "outlier_channel")}
SCALES = {"rmsnorm_gemv": rdxe.WEIGHT_SCALES, "attention": rdxe.KV_SCALES}
#: One line for a report beside the figures.
MEASURE = ("|INT8 output - float64 on the float inputs / s| in output LSBs, s = max|float64 "
           "output| / 127 (calibrated); every operand quantised as the datapath's contract says")
#: Standard deviation of the log of the weight rows' ranges (an assumption).
ROW_SPREAD = 0.5
#: The outlier channel's factor (an assumption).
OUTLIER = 40.0
#: The key outlier channel's factor (an assumption).
KEY_OUTLIER = 10.0
#: The large gain value, against gains of 1 +- 0.2 (an assumption).
LARGE_GAIN = 20.0


def rmsnorm_cases(rng, workload: str, count: int = 150):
    """``(x, gamma, w, eps)`` of RMSNorm-GEMV layers of one workload class: d 64-512, n 32-128."""
    for _ in range(count):
        d = int(rng.choice([64, 256, 512]))
        n = int(rng.choice([32, 128]))
        x = rng.standard_normal(d) * 10.0 ** rng.uniform(-2, 2)
        gamma = 1 + 0.2 * rng.standard_normal(d)
        w = rng.standard_normal((n, d)) / np.sqrt(d) \
            * np.exp(ROW_SPREAD * rng.standard_normal(n))[:, None]
        if workload == "outlier_channel":
            x[rng.integers(d)] *= OUTLIER
        elif workload == "large_gain":
            gamma[rng.integers(d)] = LARGE_GAIN
        yield x, gamma, w, float(rng.choice([1e-6, 1e-5, 1e-2]))


def attention_cases(rng, workload: str, count: int = 80):
    """``(q, k, v)`` of attention heads of one workload class: 7-1024 tokens, dh 16 or 64, 2 or
    4 KV heads with 1 or 3 query heads each, query scale from diffuse to peaked softmax."""
    for _ in range(count):
        t = int(rng.choice([7, 64, 300, 1024]))
        dh = int(rng.choice([16, 64]))
        kv_heads = int(rng.choice([2, 4]))
        heads = kv_heads * int(rng.choice([1, 3]))
        sharp = 10.0 ** rng.uniform(-1, 0.8)                          # diffuse .. peaked
        q = rng.standard_normal((heads, dh)) * sharp
        k, v = rng.standard_normal((t, kv_heads, dh)), rng.standard_normal((t, kv_heads, dh))
        if workload == "outlier_channel":
            k[:, 0, rng.integers(dh)] *= KEY_OUTLIER
        yield q, k, v


def _summary(errors: list, scores_saturated: int | None) -> dict:
    e = np.concatenate(errors)
    out = {"elements": int(e.size), "within_1lsb": float(np.mean(e <= 1)),
           "mean_lsb": float(e.mean()), "max_lsb": float(e.max())}
    return out if scores_saturated is None else {**out, "scores_saturated": scores_saturated}


def _errors(out: dict, reference, scale: float) -> np.ndarray:
    return np.abs(out["y_q" if "y_q" in out else "o_q"] - np.asarray(reference) / scale).ravel()


def _measure(op: str, cases) -> dict:
    errors = {(s, m): [] for s in SCALES[op] for m in MODES}
    scores = dict.fromkeys(SCALES[op], 0 if op == "attention" else None)
    for case in cases:
        for scale in SCALES[op]:
            if op == "rmsnorm_gemv":
                quant = rdxe.quantise_rmsnorm_gemv(*case, weight_scale=scale)
                run, s = rdxe.quantised_rmsnorm_gemv, quant.s_y
            else:
                quant = rdxe.quantise_attention(*case, kv_scale=scale)
                run, s = rdxe.quantised_attention, quant.s_o
            if op == "attention":
                scores[scale] += quant.scores_saturated
            for mode in MODES:
                errors[scale, mode].append(_errors(run(quant, mode), quant.reference, s))
    return {scale: {mode: _summary(errors[scale, mode], scores[scale])
                    for mode in MODES} for scale in SCALES[op]}


def study(rms_seed: int = 11, attention_seed: int = 12) -> dict:
    """``result[op][workload][scale][mode]`` = ``{elements, within_1lsb, mean_lsb, max_lsb}``
    and, for attention, ``scores_saturated``: errors in output LSBs, measured as the module
    docstring says; ``scores_saturated`` counts scores past INT16 (0: the figures measure
    quantisation alone)."""
    out: dict = {"rmsnorm_gemv": {}, "attention": {}}
    for i, workload in enumerate(WORKLOADS["rmsnorm_gemv"]):
        rng = np.random.default_rng([rms_seed, i])
        out["rmsnorm_gemv"][workload] = _measure("rmsnorm_gemv", rmsnorm_cases(rng, workload))
    for i, workload in enumerate(WORKLOADS["attention"]):
        rng = np.random.default_rng([attention_seed, i])
        out["attention"][workload] = _measure("attention", attention_cases(rng, workload))
    return out


def rows(result: dict) -> list[dict]:
    """The study as flat rows (``op``, ``workload``, ``scale``, ``mode`` and the figures)."""
    return [{"op": op, "workload": workload, "scale": scale, "mode": mode, **figures}
            for op, workloads in result.items() for workload, scales in workloads.items()
            for scale, modes in scales.items() for mode, figures in modes.items()]


def format_table(result: dict) -> str:
    lines = [f"Error: {MEASURE}.", "",
             "| operation | workload | scale | mode | elements | within 1 LSB | mean | max |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows(result):
        lines.append(f"| {r['op']} | {r['workload']} | {r['scale']} | {r['mode']} | "
                     f"{r['elements']:,} | {100 * r['within_1lsb']:.1f} % | "
                     f"{r['mean_lsb']:.2f} | {r['max_lsb']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwall.golden.rdxe.accuracy",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the study's dict as JSON")
    args = parser.parse_args(argv)
    result = study()
    print(json.dumps(result, indent=1) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
