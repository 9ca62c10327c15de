"""The plots of ``reports/kvnand/`` (:mod:`.report`): the Fig. 15 design-space heatmaps and
the decode throughput of every system against the context."""

from __future__ import annotations

from pathlib import Path

from memwall.families.kvnand.report import PLOTS, _cases, _ctx, _ctxs, _labels, _models

__all__ = ["plots"]


def plots(res: dict, out: Path) -> list[Path]:
    """``fig15_dse.png`` (the Fig. 15 heatmaps) and ``fig12_throughput.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    dse = res["dse"]
    cases = _cases(res)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    for ax, case in zip(axes.flat, cases, strict=True):
        ctxs = _ctxs(dse[case])
        labels = _labels(dse[case][ctxs[0]]["cells"])
        grid = np.array([[dse[case][c]["cells"][lab] or np.nan for c in ctxs] for lab in labels],
                        dtype=float)
        fit = grid[~np.isnan(grid)]
        norm = LogNorm(vmin=fit.min(), vmax=fit.max()) if fit.size else None
        image = ax.imshow(np.ma.masked_invalid(grid), cmap="YlGnBu", norm=norm, aspect="auto")
        ax.set_xticks(range(len(ctxs)), [_ctx(c) for c in ctxs])
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("context (tokens)")
        ax.set_title(case.replace("w8a8", "W8A8").replace("w4a16", "W4A16"))
        for j, c in enumerate(ctxs):
            best = dse[case][c]["best"]
            for i, lab in enumerate(labels):
                v = grid[i, j]
                if np.isnan(v):
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///",
                                           edgecolor="0.7", linewidth=0))
                    ax.text(j, i, "OOM", ha="center", va="center", fontsize=8, color="0.35")
                    continue
                dark = norm is not None and norm(v) > 0.6
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black",
                        fontweight="bold" if lab == best else "normal")
                if lab == best:
                    ax.add_patch(Rectangle((j - 0.45, i - 0.42), 0.9, 0.84, fill=False,
                                           edgecolor="red", linewidth=2.5))
        fig.colorbar(image, ax=ax, label="latency per token (ms, log scale)")
    fig.suptitle("Fig. 15: KVNAND design space, latency per token (ms); red box: the best of "
                 "each context; hatched: OOM")
    fig.tight_layout()
    paths = [out / PLOTS[0]]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)

    h = res["headline"]
    models = _models(res)
    dies = sum(h["rows"][0]["kvnand_d_split"])
    # Three panels a row, readable at page width; the legend gets a panel of its own (or sits
    # beside the grid when every panel holds a model), never over the data.
    cols = min(3, len(models))
    rows_n = -(-len(models) // cols)
    fig, grid = plt.subplots(rows_n, cols, figsize=(4.2 * cols, 3.6 * rows_n), sharey=True,
                             squeeze=False)
    series = (("Base-1", "base1_ms"), ("Base-2", "base2_ms"),
              (f"KVNAND-C-{dies}", "kvnand_c16_ms"), ("best KVNAND-D", "kvnand_d_ms"))
    axes = list(grid.flat)
    for ax, m in zip(axes, models, strict=False):
        rows = [r for r in h["rows"] if r["model"] == m]
        for label, key in series:
            pts = [(r["context"], 1e3 / r[key]) for r in rows if r[key]]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(m, fontsize=12)
        ax.set_xlabel("context (tokens)", fontsize=11)
        ax.tick_params(labelsize=10)
        ax.grid(alpha=0.3, which="both")
    for ax in grid[:, 0]:
        ax.set_ylabel("decode tokens/s", fontsize=11)
    handles, labels = axes[0].get_legend_handles_labels()
    spare = axes[len(models):]
    for ax in spare:
        ax.axis("off")
    note = "BF16 KV cache; a missing point: out of memory"
    if spare:
        spare[0].legend(handles, labels, loc="center", fontsize=11, title=note,
                        title_fontsize=10, frameon=False)
    else:
        fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=11,
                   title=note, title_fontsize=10, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Decode throughput against context (the paper's Fig. 12 systems)", fontsize=13)
    fig.tight_layout()
    paths.append(out / PLOTS[1])
    fig.savefig(paths[1], dpi=110, bbox_inches="tight")
    plt.close(fig)
    return paths
