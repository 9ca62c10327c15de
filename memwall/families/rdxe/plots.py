"""The rDXE report's plots (``reports/rdxe/``), from ``results.json`` as written:
``speedups.png`` (VRC and iWuR layer speed-ups against context, each baseline as the paper
reads it and as our RTL builds it, beside the paper's figures) and ``serving.png`` (the ring
against padded batching over the offered load)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plots", "PLOTS"]

PLOTS = ("speedups.png", "serving.png")


def _rows(res: dict, key: str, model: str) -> list[dict]:
    return sorted((r for r in res[key] if r["model"] == model), key=lambda r: r["tokens"])


def _finish(fig, axes, ticks, xlabel: str, path: Path) -> None:
    """Log2 x axis at the data's own ticks, readable fonts, legends below the panels, saved."""
    import matplotlib.pyplot as plt

    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlabel(xlabel, fontsize=11)
        ax.tick_params(labelsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2,
                  frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def plots(res: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memwall.families.rdxe.paper import PAPER

    c = res["constants"]
    fig, (vrc, iwur) = plt.subplots(1, 2, figsize=(12, 4.5))
    for model, marker in (("OPT-350M", "o"), ("MT5-small", "s")):
        rows = _rows(res, "vrc", model)
        x = [r["tokens"] for r in rows]
        vrc.plot(x, [r["layer_speedup"] for r in rows], marker=marker, color="C0",
                 label=f"{model}, paper's baseline (model)")
        vrc.plot(x, [r["layer_speedup_rtl"] for r in rows], marker=marker, color="C1",
                 linestyle="--", label=f"{model}, our RTL's sequential mode")
    vrc.axhline(PAPER["layer_speedup_max"], color="k", linestyle=":",
                label=f"paper: up to {PAPER['layer_speedup_max']}x")
    vrc.set_title("VRC: one decoder layer, unfused / fused", fontsize=12)
    rows = _rows(res, "iwur", "MT5-small")
    x = [r["tokens"] for r in rows]
    for key, label, style in (("layer_speedup", "baseline packed (paper's '+25 %')", "-"),
                              ("layer_speedup_word", "baseline word per VAC", "-."),
                              ("layer_speedup_rtl", "our RTL's baseline layout", "--")):
        iwur.plot(x, [r[key] for r in rows], marker="o", linestyle=style, label=label)
    lo, hi = c["paper_iwur_speedup"]
    iwur.axhspan(lo, hi, color="0.85", label=f"paper: {lo}-{hi}x")
    iwur.set_title("iWuR: one MT5-small layer, baseline / iWuR", fontsize=12)
    for ax in (vrc, iwur):
        ax.set_ylabel("layer speed-up", fontsize=11)
    _finish(fig, (vrc, iwur), x, "context (tokens)", out / PLOTS[0])

    sweep = sorted((r for r in res["ring_sensitivity"] if r["offered_load"] is not None),
                   key=lambda r: r["offered_load"])
    loads = [r["offered_load"] for r in sweep]
    fig, (util, latency) = plt.subplots(1, 2, figsize=(12, 4.5))
    for key, label in (("ring", "ring"), ("padded_8", "padded batching, 8-way"),
                       ("padded_16", "padded batching, 16-way")):
        util.plot(loads, [100 * r[key]["mac_utilisation"] for r in sweep], marker="o",
                  label=label)
        latency.plot(loads, [r[key]["mean_latency_ms"] for r in sweep], marker="o", label=label)
    util.axhline(100 * PAPER["ring_utilisation"], color="k", linestyle=":",
                 label=f"paper: {100 * PAPER['ring_utilisation']:.1f} % (not defined)")
    util.set_ylabel("MAC utilisation (%)", fontsize=11)
    util.set_title("Serving: MAC utilisation", fontsize=12)
    latency.set_ylabel("mean request latency (ms)", fontsize=11)
    latency.set_title("Serving: latency", fontsize=12)
    _finish(fig, (util, latency), loads, "offered load (service time / mean arrival gap)",
            out / PLOTS[1])
    return list(PLOTS)
