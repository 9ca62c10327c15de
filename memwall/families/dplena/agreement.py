"""What quantising the logits costs in decisions: per logits format, how often the chip's
sampling step makes the float64 LLaDA step's decisions (``reports/dplena/agreement.{md,json}``,
``python -m memwall.families.dplena.agreement``, ``make agreement``).

**Workload.** Steps of one 32-token block (B = 1, L = 32, every position masked), vocabulary
126,464 (LLaDA's), k = 4 tokens transferred a step (a 32-token block in 8 steps). Each
position's logits have the shape an LM head's output has: a Gaussian bulk (``sigma = 2``) over the
whole vocabulary and a heavy-tailed head of 64 candidate tokens at random ids, ``m + d * G``
with ``G`` standard Gumbel (the maximum-domain law of a Zipf-like top), their offset ``m`` above
the bulk's maximum uniform over ``[-2, 10]`` and their spread ``d`` log-uniform over
``[0.3, 3]``, drawn per position. The softmax entropy this gives is measured per position and
reported (quantiles, nats): confident and unsure positions alike, a reader can check the range.
Seeds ``SEED + trial``; every number is deterministic.

**What is compared.** The reference is LLaDA's step in float64 on the float32 logits
(:func:`memwall.golden.dplena.sampling.sample_step_reference`). Each format's step is what the
core computes, bit for bit (:func:`~memwall.golden.dplena.sampling.sample_step_hw` at
``dplena2048``'s VLEN, chunk and reduction, fused online softmax) on the logits as that format
delivers them: the MX formats quantised on the host and expanded by the dequantiser
(:mod:`memwall.golden.dplena.mx`: scale from the block maximum, round to nearest even,
saturating), ``bf16`` rounded RNE on the host. ``bf16`` separates the core's own BF16
arithmetic from the quantisation of the logits.

**Figures** (each a share over every step or position of every trial, with its 95 % Wilson
interval): *x0 agrees*, the predicted token equals float64's at a position; *set agrees*, a
step transfers exactly float64's positions; *step agrees*, the step's output block equals
float64's (same positions, same tokens).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np

from memwall import paths
from memwall.files import write_json_atomic, write_text_atomic

__all__ = ["FORMATS", "WORKLOAD", "logits", "entropy_nats", "trial", "study", "render", "main"]

OUT = paths.REPORTS / "dplena"
#: The formats compared: BF16 and every MX format of :mod:`memwall.golden.dplena.mx`.
FORMATS = ("bf16", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4_e2m1")
#: The stated distribution and step (module docstring).
WORKLOAD = {"vocab": 126464, "block_len": 32, "k": 4, "bulk_sigma": 2.0, "head_tokens": 64,
            "head_offset": (-2.0, 10.0), "head_spread": (0.3, 3.0), "seed": 20261202,
            "config": "dplena2048"}
MASK_ID = 126336      # LLaDA's [MASK]
DEFAULT_TRIALS = 128
#: A position is *confident* below this softmax entropy (nats): where the step commits tokens.
CONFIDENT_NATS = 1.0
Z95 = 1.959963984540054


def logits(trial_index: int, workload: dict = WORKLOAD) -> np.ndarray:
    """One step's float32 logits, shape (1, L, V): the module docstring's distribution."""
    rng = np.random.default_rng(workload["seed"] + trial_index)
    length, vocab, head = workload["block_len"], workload["vocab"], workload["head_tokens"]
    z = workload["bulk_sigma"] * rng.standard_normal((length, vocab))
    lo, hi = workload["head_spread"]
    for row in z:
        ids = rng.choice(vocab, head, replace=False)
        offset = rng.uniform(*workload["head_offset"])
        spread = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        row[ids] = row.max() + offset + spread * rng.gumbel(size=head)
    return z[None].astype(np.float32)


def entropy_nats(z: np.ndarray) -> np.ndarray:
    """Softmax entropy (nats) of each position of float logits (..., V), in float64."""
    z = np.asarray(z, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1)


def trial(trial_index: int, workload: dict = WORKLOAD, formats=FORMATS) -> dict:
    """One step: the entropies, and per format the counts of agreeing positions and whether the
    transferred set and the whole step agree with float64."""
    from memwall.config import load_config
    from memwall.golden.dplena.model import default_v_chunk
    from memwall.golden.dplena.sampling import (
        prepare_logits,
        sample_step_hw,
        sample_step_reference,
    )

    cfg = load_config(workload["config"])
    z = logits(trial_index, workload)
    length = workload["block_len"]
    x = np.full((1, length), MASK_ID, np.int64)
    k = np.array([workload["k"]])
    ref = sample_step_reference(z, x, MASK_ID, k)
    out = {"trial": trial_index, "entropy_nats": entropy_nats(z)[0].round(6).tolist(),
           "formats": {}}
    v_chunk = default_v_chunk(cfg, workload["vocab"])
    for fmt in formats:
        hw = sample_step_hw(prepare_logits(z, fmt), x, MASK_ID, k, cfg.vlen, stable_max="fused",
                            v_chunk=v_chunk, sum_partials=cfg.stages.sum_partials)
        out["formats"][fmt] = {
            "x0_agree": (hw["x0"] == ref["x0"])[0].astype(int).tolist(),
            "committed_agree": int(np.sum((hw["x"] == ref["x"]) & ref["transfer"])),
            "set_agree": bool(np.array_equal(hw["transfer"], ref["transfer"])),
            "step_agree": bool(np.array_equal(hw["x"], ref["x"]))}
    return out


def _wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = hits / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return (centre - half, centre + half)


def study(trials: int = DEFAULT_TRIALS, workers: int = 1, workload: dict = WORKLOAD) -> dict:
    """Every trial, and per format the three shares with their intervals."""
    start = time.perf_counter()
    indices = list(range(trials))
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            runs = list(pool.map(partial(trial, workload=workload), indices))
    else:
        runs = [trial(i, workload) for i in indices]
    from memwall.golden.dplena import mx

    entropies = np.concatenate([r["entropy_nats"] for r in runs])
    confident = entropies < CONFIDENT_NATS
    positions = trials * workload["block_len"]
    committed = trials * workload["k"]
    summary = {}
    for fmt in FORMATS:
        x0 = np.concatenate([r["formats"][fmt]["x0_agree"] for r in runs]).astype(bool)
        counts = {"x0": (int(x0.sum()), positions),
                  "x0_confident": (int(x0[confident].sum()), int(confident.sum())),
                  "committed": (sum(r["formats"][fmt]["committed_agree"] for r in runs),
                                committed),
                  "set": (sum(r["formats"][fmt]["set_agree"] for r in runs), trials),
                  "step": (sum(r["formats"][fmt]["step_agree"] for r in runs), trials)}
        summary[fmt] = {
            "bits_per_element": 16.0 if fmt == "bf16" else mx.bits_per_element(mx.FORMATS[fmt]),
            **{f"{key}_agree": hits / n for key, (hits, n) in counts.items()},
            **{f"{key}_interval": _wilson(hits, n) for key, (hits, n) in counts.items()}}
    return {"command": "python -m memwall.families.dplena.agreement"
                       + ("" if trials == DEFAULT_TRIALS else f" --trials {trials}"),
            "workload": {**workload, "head_offset": list(workload["head_offset"]),
                         "head_spread": list(workload["head_spread"]),
                         "mask_id": MASK_ID, "trials": trials, "positions": positions},
            "entropy_nats_quantiles": {q: float(np.quantile(entropies, float(q)))
                                       for q in ("0", "0.1", "0.5", "0.9", "1")},
            "summary": summary, "trials": runs,
            "seconds": round(time.perf_counter() - start, 1)}


def _pct(share: float, interval) -> str:
    return f"{100 * share:.1f} % ({100 * interval[0]:.1f}-{100 * interval[1]:.1f})"


def render(data: dict) -> str:
    from memwall.flows.report import markdown_table

    w, q = data["workload"], data["entropy_nats_quantiles"]
    lines = [
        "# d-PLENA: what quantising the logits costs in decisions", "",
        f"Generated by `{data['command']}` (`make agreement`); every number is in "
        "`agreement.json`. The method, the distribution and the definitions are the docstring "
        "of `memwall/families/dplena/agreement.py`; in short:", "",
        f"- **Workload**: {w['trials']} sampling steps of one {w['block_len']}-token block, "
        f"every position masked, vocabulary {w['vocab']:,}, k = {w['k']} transferred a step; "
        f"logits: a Gaussian bulk (sigma {w['bulk_sigma']:g}) and a Gumbel head of "
        f"{w['head_tokens']} tokens, offset U[{w['head_offset'][0]:g}, {w['head_offset'][1]:g}] "
        f"above the bulk's maximum, spread log-U[{w['head_spread'][0]:g}, "
        f"{w['head_spread'][1]:g}], per position; seeds {w['seed']} + trial.",
        f"- **Softmax entropy** of the {w['positions']:,} positions, nats: min {q['0']:.2f}, "
        f"10 % {q['0.1']:.2f}, median {q['0.5']:.2f}, 90 % {q['0.9']:.2f}, max {q['1']:.2f} "
        f"(a uniform distribution would be {math.log(w['vocab']):.2f}).",
        "- **Reference**: LLaDA's step in float64 on the float32 logits. **Each format**: the "
        f"core's step bit for bit ({w['config']}'s VLEN, chunk and reduction, fused online "
        "softmax) on the logits as the format delivers them (MX: quantised on the host, "
        "expanded by the dequantiser; bf16: rounded on the host).",
        "- **Shares** with their 95 % Wilson interval: *x0 agrees*, the predicted token equals "
        f"float64's, over every position and over the confident ones (entropy < "
        f"{CONFIDENT_NATS:g} nat); *committed agree*, over the tokens float64 commits, the "
        "format commits the same token there; *set agrees* (the transferred positions) and "
        "*step agrees* (the whole output block) over steps.",
        "",
        markdown_table(["logits format", "HBM bits / logit", "x0 agrees", "x0 agrees, confident",
                        "committed agree", "set agrees", "step agrees"],
                       [[fmt, f"{s['bits_per_element']:g}",
                         *(_pct(s[f"{key}_agree"], s[f"{key}_interval"])
                           for key in ("x0", "x0_confident", "committed", "set", "step"))]
                        for fmt, s in ((f, data["summary"][f]) for f in FORMATS)]),
        "How a format loses a decision: an element of 1-3 mantissa bits can make head tokens "
        "(or, after the softmax, confidences) equal that float64 tells apart; the core then "
        "takes the lower token id (position), as its argmax and top-k do on any tie.",
        f"This machine: {data['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwall.families.dplena.agreement",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help=f"sampling steps (default {DEFAULT_TRIALS})")
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--out", type=Path, default=OUT, help="report folder")
    args = parser.parse_args(argv)
    if args.trials < 1 or args.workers < 1:
        print("memwall: --trials and --workers must be at least 1", file=sys.stderr)
        return 2
    data = study(args.trials, args.workers)
    text = render(data)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "agreement.json", data, indent=None)   # per-position lists
    write_text_atomic(args.out / "agreement.md", text)
    print(f"memwall: wrote {args.out}/agreement.md and agreement.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
