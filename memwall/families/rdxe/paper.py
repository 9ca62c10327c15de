"""The rDXE paper's claims and the wording of every comparison of ours with them
(``reports/rdxe``): which side of the paper's figure each of ours lies, at :data:`TOLERANCE`.

The verdicts are computed: each of our values is classed below, within or above (in, for a
range) and the wording names the classes found, so a verdict can only say "within" or "in"
where the values are.
"""

from __future__ import annotations

from memwall.golden.rdxe import baselines as bl

__all__ = ["PAPER", "TOLERANCE", "WITHIN", "near", "span", "pct", "against_value",
           "against_max", "against_range"]

#: The paper's claims (rdxe-edge-slm-decoder-vrc-iwur). The VRC and iWuR figures are the
#: baselines' constants (:mod:`memwall.golden.rdxe.baselines`); the others: GQA's "by up to
#: 83 %" (Sec. III-C), the ring's "77.8% utilization" and "32.7% and 52.4% higher utilization"
#: than 8-way and 16-way (Sec. I, III-A), and the chip's performance, the table of Fig. 6
#: ("0.81-1.63" TOPS, at the fastest voltage and frequency).
PAPER = {"nonlinear_speedup_max": bl.PAPER_NONLINEAR_SPEEDUP,
         "layer_speedup_max": bl.PAPER_LAYER_SPEEDUP, "iwur_speedup": bl.PAPER_IWUR_SPEEDUP,
         "iwur_utilisation_gain": bl.IWUR_UTILISATION_GAIN, "gqa_reduction_6": 0.83,
         "ring_utilisation": 0.778, "ring_gain_8": 0.327, "ring_gain_16": 0.524,
         "peak_tops": (0.81, 1.63)}
#: Relative distance within which a figure of ours is said to agree with the paper's.
TOLERANCE = 0.10
WITHIN = f"within {100 * TOLERANCE:.0f} %"


def near(value: float, paper: float) -> bool:
    return abs(value / paper - 1) <= TOLERANCE


def span(values, fmt: str = "{:.2f}", unit: str = "x") -> str:
    """``lo-hi`` (or one value) of ``values``, formatted."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def pct(values) -> str:
    return span([100 * v for v in values], "{:.1f}", " %")


def _classes(values, labels: dict, classify) -> str:
    """The labels of the classes ``values`` fall in: one label, or each with its count."""
    found: dict = {}
    for v in values:
        found[classify(v)] = found.get(classify(v), 0) + 1
    if len(found) == 1:
        return labels[next(iter(found))]
    n = len(values)
    return ", ".join(f"{found[k]} of {n} {labels[k]}" for k in labels if k in found)


def against_value(values, paper: float) -> str:
    """Our figures (one or several) against one paper figure: each below, within
    :data:`TOLERANCE` or above it."""
    def classify(v):
        if near(v, paper):
            return "within"
        return "above" if v > paper else "below"

    return _classes(values, {"below": "below the paper's", "within": f"{WITHIN} of the paper's",
                             "above": "above the paper's"}, classify)


def against_max(values, paper: float) -> str:
    """Our maximum against a paper maximum ("up to X"): like with like."""
    if near(max(values), paper):
        return f"our maximum {WITHIN} of the paper's maximum"
    return f"our maximum {'above' if max(values) > paper else 'below'} the paper's maximum"


def against_range(values, lo: float, hi: float) -> str:
    """Our figures against a paper range: each below, in or above it (below or above
    :data:`TOLERANCE`-near its end is said so when all are)."""
    def classify(v):
        return "below" if v < lo else "above" if v > hi else "in"

    out = _classes(values, {"below": "below the paper's range", "in": "in the paper's range",
                            "above": "above the paper's range"}, classify)
    if out.startswith("below") and near(max(values), lo):
        out += f" ({WITHIN} of its low end)"
    elif out.startswith("above") and near(min(values), hi):
        out += f" ({WITHIN} of its high end)"
    return out
