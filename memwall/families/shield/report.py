"""Regenerate ``reports/shield/``: SHIELD power model, Fig. 5 scenarios, lifecycle, retention and
Algorithm 1 fault injection (``python -m memwall.families.shield.report``).

Writes ``results.json`` (every number), ``README.md`` (the tables and what they mean), and
``scenarios.png``, ``lifecycle.png``, ``retention.png``, ``fault_injection.png``. Everything comes
from :mod:`memwall.golden.shield.refresh`; the run is deterministic (fixed seeds).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from memwall import paths
from memwall.config import load_config
from memwall.families.shield import controller_cost
from memwall.families.shield.controller_cost import LAYERS
from memwall.families.shield.workloads import LAYER_LOOP, layer_loop_trace
from memwall.golden.shield import refresh as s
from memwall.golden.shield.trace import Step, Trace, load_trace

__all__ = ["build_report", "main"]

ROOT = paths.REPO
DEFAULT_OUT = ROOT / "reports" / "shield"
CONFIGS = ("shield_2mb", "shield_2mb_eta35")
FRACTIONS = (0.0, 0.2, 0.5, 0.8, 1.0)
BERS = tuple(float(b) for b in np.logspace(-5, math.log10(0.25), 12))
SEEDS = tuple(range(8))
# Large enough that BER 1e-5 still hits a few of the 4 x 65536 stored elements.
BLOCK = {"n_tokens": 128, "d_model": 512, "n_heads": 8}
MASKS = {"uniform (0xFFFF)": s.MASK_ALL, "mantissa only (0x007F)": s.MASK_MANTISSA}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else str(v)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _trace_checks() -> list[dict[str, Any]]:
    small = load_config("shield_small")
    big = load_config("shield_2mb")
    full = Trace((Step("write", "kv", 0, big.kv_words), Step("write", "qo", 0, big.qo_words),
                  Step("idle", us=200 * big.t_rel_us)))
    cases = [("shield_small", "configs/traces/shield_small.yaml", small,
              load_trace(ROOT / "configs/traces/shield_small.yaml", small)),
             ("shield_2mb", "all words written, then 200 T_rel idle", big, full),
             ("shield_2mb", LAYER_LOOP.format(layers=LAYERS), big,
              layer_loop_trace(big, LAYERS))]
    out = []
    for name, what, cfg, trace in cases:
        start = time.perf_counter()
        r = s.model_trace(cfg, trace)
        print(f"memwall: model_trace {name}, {len(trace.steps)} steps, {r['cycles']} cycles: "
              f"{1e3 * (time.perf_counter() - start):.1f} ms")
        out.append({"config": name, "trace": what, "result": r})
    return out


def build_report(out: Path = DEFAULT_OUT, *, seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """Compute every number and write ``out/`` (figures need matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    cfgs = {n: load_config(n) for n in CONFIGS}
    main_cfg = cfgs[CONFIGS[0]]
    res: dict[str, Any] = {"configs": {}, "calibration": s.paper_calibration(main_cfg)}
    scen = s.SCENARIOS + (s.STORYTELLING_LONG,)
    t_kv = s.kelle_interval_us(main_cfg)
    for name, cfg in cfgs.items():
        f = np.array(FRACTIONS)
        x = cfg.p_leak_mw / (cfg.e_ref_cycle_nj / cfg.t_std_us)
        res["configs"][name] = {
            "e_ref_cycle_nj": cfg.e_ref_cycle_nj, "p_leak_mw": cfg.p_leak_mw, "x": x,
            "p_base_mw": s.p_base(cfg),
            "model": {"kv_fraction": f, "p_shield_mw": s.p_shield(cfg, f),
                      "eta": s.eta(cfg, f), "eta_eq9": s.eta_eq9(cfg, f),
                      "gain_shield": s.p_base(cfg) / s.p_shield(cfg, f),
                      "gain_kv_only": s.p_base(cfg) / s.p_kv_only(cfg, f, t_kv)},
            "scenarios": [{k: v for k, v in s.scenario_power(cfg, sc).items()
                           if not k.endswith("_t") and k != "context"} for sc in scen],
            "lifecycle": s.scenario_power(cfg, s.LIFECYCLE),
        }
    # Footprint where KV-only (saves f (1 - T_std/t_kv)) equals SHIELD (saves Eq. 9).
    e9 = main_cfg.lo_bits / main_cfg.word_bits
    k_kv = 1 - main_cfg.t_std_us / t_kv
    res["crossover_kv_fraction"] = e9 / (k_kv + e9 * main_cfg.t_std_us / main_cfg.t_rel_us)
    res["t_kv_us"] = t_kv
    res["retention"] = {
        "relaxed_at_t_rel": s.ber(main_cfg, "relaxed", main_cfg.t_rel_us),
        "refreshless_at_qo_life": s.ber(main_cfg, "refreshless", main_cfg.qo_life_us),
        "standard_at_t_std": s.ber(main_cfg, "standard", main_cfg.t_std_us),
        "kelle_interval_us": t_kv,
    }
    res["traces"] = _trace_checks()
    res["refresh_saved"] = {name: controller_cost.refresh_saving(cfg)
                            for name, cfg in cfgs.items()}
    start = time.perf_counter()
    errs = s.fault_sweep(BERS, MASKS, seeds, **BLOCK)
    res["fault_injection"] = {"bers": BERS, "seeds": seeds, **BLOCK, "errors": errs,
                              "median": {k: np.median(v, axis=1) for k, v in errs.items()}}
    print(f"memwall: fault sweep {len(BERS)} BERs x {len(MASKS)} masks x {len(seeds)} seeds: "
          f"{time.perf_counter() - start:.1f} s")
    _figures(out, cfgs, res)
    (out / "results.json").write_text(json.dumps(_jsonable(res), indent=1) + "\n")
    (out / "README.md").write_text(_readme(res, cfgs))
    return res


# --- figures --------------------------------------------------------------------------------

def _figures(out: Path, cfgs, res) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = res["configs"][CONFIGS[0]]
    # Fig. 5a: gains per scenario.
    sc = main["scenarios"]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    xs = np.arange(len(sc))
    ax.bar(xs - 0.2, [r["gain_kv_only"] for r in sc], 0.4,
           label=f"KV-only (all KV bits @ {res['t_kv_us']:.0f} µs)", color="tab:gray")
    ax.bar(xs + 0.2, [r["gain_shield"] for r in sc], 0.4, label="SHIELD", color="tab:blue")
    ax.axhline(1.35, color="tab:blue", ls="--", lw=1, label="paper: SHIELD ~1.35x")
    ax.axhspan(1.15, 1.32, color="tab:gray", alpha=0.15, label="paper: Kelle 1.15-1.32x")
    ax.set_xticks(xs, [f"{r['scenario']}\nP={r['prefill']} D={r['decode']}\n"
                       f"F={r['kv_fraction']:.2f}" for r in sc])
    ax.set_ylabel("P_base / P_policy")
    ax.set_ylim(1.0, max(1.8, max(r["gain_kv_only"] for r in sc) + 0.1))
    ax.set_title(f"Fig. 5a model: Qwen3-8B footprint, {CONFIGS[0]}")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / "scenarios.png", dpi=130)
    plt.close(fig)

    # Fig. 5b: eta over the lifecycle.
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for name, style in zip(CONFIGS, ("-", ":"), strict=True):
        life = res["configs"][name]["lifecycle"]
        ctx = life["context"]
        ax.plot(ctx, 100 * life["eta_t"], "b" + style, label=f"SHIELD ({name})")
        ax.plot(ctx, 100 * life["eta_kv_only_t"], "k" + style, label=f"KV-only ({name})")
    life = main["lifecycle"]
    ax.plot(life["context"], 100 * life["eta_eq9_t"], "c--", label="Eq. 9 (refresh only)")
    ax.axhline(35, color="r", lw=0.8, ls="--", label="paper: eta ~35 %")
    ax.set_xlabel("context tokens (prefill 128, then 256 decode steps)")
    ax.set_ylabel("eta = 1 - P/P_base (%)")
    ax.set_title("Fig. 5b model: energy reduction over the lifecycle")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "lifecycle.png", dpi=130)
    plt.close(fig)

    # Retention table with the paper's points.
    cfg = cfgs[CONFIGS[0]]
    t = np.logspace(1, 4, 400)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for bank, st in zip(s.BANKS, ("-", "--", ":"), strict=True):
        ax.loglog(t, np.maximum(s.ber(cfg, bank, t), 1e-12), st, label=bank)
    ax.plot([cfg.t_rel_us], [1e-4], "ro", label="paper: KV mantissa 1e-4 @ 1216 µs")
    ax.plot([cfg.qo_life_us], [4e-4], "gs", label="paper: QO mantissa 0.04 % @ 1.5 ms")
    ax.plot([res["t_kv_us"]], [s.KELLE_BER], "k^", label="Kelle 2e-3 BER")
    ax.set_xlabel("time since restore (µs)")
    ax.set_ylabel("BER (floor 1e-12)")
    ax.set_title("Retention table (config default)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "retention.png", dpi=130)
    plt.close(fig)

    # Algorithm 1.
    fi = res["fault_injection"]
    bers = np.array(fi["bers"])
    fig, ax = plt.subplots(figsize=(6, 4))
    finite_all = np.concatenate([e[np.isfinite(e) & (e > 0)] for e in fi["errors"].values()])
    ceiling = 10 * finite_all.max() if finite_all.size else 1e3  # where inf is drawn
    for (name, err), color in zip(fi["errors"].items(), ("tab:red", "tab:blue"), strict=True):
        med = np.median(err, axis=1)
        lo, hi = np.minimum(err.min(axis=1), ceiling), np.minimum(err.max(axis=1), ceiling)
        ax.fill_between(bers, lo, hi, color=color, alpha=0.15, lw=0)
        finite = np.isfinite(med) & (med > 0)
        ax.loglog(bers[finite], med[finite], "o-", color=color, label=f"{name}, median")
        if (~np.isfinite(med)).any():
            ax.loglog(bers[~np.isfinite(med)], np.full((~np.isfinite(med)).sum(), ceiling),
                      "x", color=color, ms=8, label=f"{name}: median output non-finite")
    ax.set_xlabel("BER per element (Algorithm 1, p_kv = p_qo)")
    ax.set_ylabel("attention output relative error")
    ax.set_title(f"Algorithm 1 on one attention block ({len(fi['seeds'])} seeds, band min-max)",
                 fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fault_injection.png", dpi=130)
    plt.close(fig)


# --- README ---------------------------------------------------------------------------------

def _pct(v: float) -> str:
    return f"{100 * v:.1f} %"


def _readme(res, cfgs) -> str:
    main_name = CONFIGS[0]
    main = res["configs"][main_name]
    alt = res["configs"][CONFIGS[1]]
    L: list[str] = []
    add = L.append
    add("# SHIELD golden-model report\n")
    add("Generated by `.venv/bin/python -m memwall.families.shield.report` (writes this folder: "
        "`results.json`, `scenarios.png`, `lifecycle.png`, `retention.png`, "
        "`fault_injection.png`). Model code: `golden/shield/refresh.py`; tests: "
        "`tests/shield/test_golden_shield.py`. Units: µs, nJ, mW.\n")
    add("## Calibration: what the paper's numbers need\n")
    add("`x = P_leak / (E_ref_cycle/T_std)` (leakage over standard-refresh power). BF16, "
        "T_std = 45 µs, T_rel = 1216 µs; ranges over B_KV/B_total in [0, 1]; E_ref_cycle at the "
        "paper's P_leak = 0.95 mW (2 MB, DESTINY).\n")
    add("| paper figure | claim | x needed | E_ref_cycle (nJ) | P_leak/E_ref (1/µs) | note |")
    add("|---|---|---|---|---|---|")
    for r in res["calibration"]:
        if "x" in r:
            add(f"| {r['figure']} | {r['claim']} | {r['x'][0]:.3f} .. {r['x'][1]:.3f} | "
                f"{r['e_ref_cycle_nj'][0]:.0f} .. {r['e_ref_cycle_nj'][1]:.0f} | "
                f"{r['p_leak_over_e_ref_per_us'][0]:.4f} .. "
                f"{r['p_leak_over_e_ref_per_us'][1]:.4f} | {r['note']} |")
        else:
            add(f"| {r['figure']} | {r['claim']} | -- | -- | -- | {r['note']} |")
    add("")
    add(f"The paper's numbers are not mutually consistent: Eq. 9 (refresh power only) is "
        f"{_pct(main['model']['eta_eq9'][-1])} .. {_pct(main['model']['eta_eq9'][0])} whatever "
        f"the footprint; a 1.35x gain with leakage means eta = 26 %; eta = 35 % with leakage "
        f"means 1.54x. `configs/{main_name}.yaml` takes E_ref_cycle = "
        f"{cfgs[main_name].e_ref_cycle_nj:g} nJ (x = {main['x']:.3f}, about 4 fJ/bit for "
        f"16 Mbit): the 1.35x of Fig. 5a at f = 0.5, the paper's most specific number (it is "
        f"stated per scenario, the 35 % only as a summary). `configs/{CONFIGS[1]}.yaml` "
        f"takes {cfgs[CONFIGS[1]].e_ref_cycle_nj:g} nJ (x = {alt['x']:.3f}), which gives "
        f"the 35 % instead (Fig. 5b).\n")
    add("## Power model (Eq. 4-9) at fixed footprints\n")
    add(f"KV-only: every bit of a KV word refreshed every {res['t_kv_us']:.0f} µs -- the "
        f"interval where the retention table reaches Kelle's overall KV BER of 2e-3 -- and "
        f"every Q/O bit at T_std.\n")
    for name in CONFIGS:
        c = res["configs"][name]
        m = c["model"]
        add(f"`{name}`: P_base = {c['p_base_mw']:.3f} mW (P_leak {c['p_leak_mw']} + refresh "
            f"{c['p_base_mw'] - c['p_leak_mw']:.3f})\n")
        add("| B_KV/B_total | P_SHIELD (mW) | eta (with leakage) | Eq. 9 (refresh only) | "
            "gain SHIELD | gain KV-only |")
        add("|---|---|---|---|---|---|")
        for i, f in enumerate(m["kv_fraction"]):
            add(f"| {f:.1f} | {m['p_shield_mw'][i]:.3f} | {_pct(m['eta'][i])} | "
                f"{_pct(m['eta_eq9'][i])} | {m['gain_shield'][i]:.3f}x | "
                f"{m['gain_kv_only'][i]:.3f}x |")
        add("")
    add(f"The KV-only policy beats SHIELD once B_KV/B_total > "
        f"{res['crossover_kv_fraction']:.3f} (independent of leakage): relaxing all 16 bits of "
        f"a KV word to 3.25 ms saves more than relaxing only its 7 mantissa bits to 1.2 ms.\n")
    add("## Scenarios (Fig. 5a) and lifecycle (Fig. 5b)\n")
    add("Footprint model (`golden/shield/refresh.py: footprint`), Qwen3-8B (36 layers, 32 query "
        "heads, 8 KV heads, head_dim 128): per layer, a static Q/O buffer sized for the prefill "
        "pass (P x 2 x 32 x 128 words; at P = 2048 that is the paper's \"about 32 MB\") and the "
        "K/V cache of the context so far (context x 2 x 8 x 128). A pass takes max(1, tokens/64) "
        "decode-step times (edge-NPU roofline: 8 TFLOPS BF16 over 128 GB/s). Leakage and "
        "refresh are per allocated word, so each policy's energy ratio is Eq. 4-9 at the "
        "footprint-time-weighted F = ∫B_KV dt / ∫B_total dt. The paper does not give the "
        "scenario lengths; P and D below are ours.\n")
    for name in CONFIGS:
        add(f"`{name}`:\n")
        add("| scenario | P | D | F | gain SHIELD | gain KV-only | eta SHIELD | "
            "eta KV-only | Eq. 9 |")
        add("|---|---|---|---|---|---|---|---|---|")
        for r in res["configs"][name]["scenarios"]:
            add(f"| {r['scenario']} | {r['prefill']} | {r['decode']} | {r['kv_fraction']:.3f} "
                f"| {r['gain_shield']:.3f}x | {r['gain_kv_only']:.3f}x | {_pct(r['eta'])} | "
                f"{_pct(r['eta_kv_only'])} | {_pct(r['eta_eq9'])} |")
        life = res["configs"][name]["lifecycle"]
        add("")
        add(f"Lifecycle P=128, D=256 (F {life['kv_fraction_t'][0]:.3f} -> "
            f"{life['kv_fraction_t'][-1]:.3f}): eta SHIELD {_pct(life['eta_t'][0])} -> "
            f"{_pct(life['eta_t'][-1])} (mean {_pct(life['eta'])}), KV-only "
            f"{_pct(life['eta_kv_only_t'][0])} -> {_pct(life['eta_kv_only_t'][-1])}, "
            f"Eq. 9 {_pct(life['eta_eq9_t'][0])} -> {_pct(life['eta_eq9_t'][-1])}.\n")
    sc = main["scenarios"]
    add("What is reproduced and what is not:\n")
    add(f"- SHIELD's near-constant ~1.35x (Fig. 5a): reproduced, "
        f"{min(r['gain_shield'] for r in sc):.3f} .. {max(r['gain_shield'] for r in sc):.3f}x -- "
        f"by construction of E_ref_cycle; it is flat because Eq. 9 moves only 1.6 points over "
        f"all footprints.")
    k3 = [r["gain_kv_only"] for r in sc[:3]]
    add(f"- KV-only 1.15 .. 1.32x: ours {min(k3):.3f} .. {max(k3):.3f}x over Summary, "
        f"Translation, Storytelling, rising with F as in the paper; the exact values follow "
        f"from our (not the paper's) scenario lengths and Kelle interval.")
    add(f"- SHIELD above KV-only everywhere and the gap narrowing over the lifecycle "
        f"(Fig. 5b): reproduced while F < {res['crossover_kv_fraction']:.2f}. A long "
        f"decode-dominant run (Storytelling-2048: 1920 decode steps) reaches F = "
        f"{sc[3]['kv_fraction']:.2f} and KV-only wins ({sc[3]['gain_kv_only']:.2f}x vs "
        f"{sc[3]['gain_shield']:.2f}x): with a uniform 2e-3-BER interval for all KV bits the "
        f"paper's ranking needs short contexts, or a Kelle that relaxes KV refresh much less "
        f"than our uniform policy (Kelle's real 2-D refresh keeps MSBs refreshed more often).")
    add(f"- eta ~35 % (Fig. 5b, abstract): not with {main_name} ({_pct(main['lifecycle']['eta'])}"
        f"); {CONFIGS[1]} gives {_pct(alt['lifecycle']['eta'])} but then 1.54x gains. "
        f"Refresh-only Eq. 9 gives {_pct(main['lifecycle']['eta_eq9'])}.\n")
    add("![scenarios](scenarios.png) ![lifecycle](lifecycle.png)\n")
    add("## Trace model (what `memwall model shield` computes)\n")
    add("Exact refresh counts of the controller schedule (`expected_refresh_counts`), energy per "
        "row refresh, P_base = the unsegmented array refreshing every row at T_std over the "
        "same cycles. Live rows only are refreshed, so released Q/O rows also save "
        "standard-bank (exponent) refreshes -- more than Eq. 5-8, which assume the whole "
        "array allocated.\n")
    add("| config | trace | µs | refreshes std / rel | P_base mW | P_SHIELD mW | eta trace | "
        "F (live) | eta Eq. 4-8 at F |")
    add("|---|---|---|---|---|---|---|---|---|")
    for t in res["traces"]:
        r = t["result"]
        p = r["paper"]
        add(f"| {t['config']} | {t['trace']} | {r['duration_us']:.0f} | "
            f"{r['refresh_counts']['standard']} / {r['refresh_counts']['relaxed']} | "
            f"{r['p_base']:.4g} | {r['p_shield']:.4g} | {_pct(r['eta'])} | "
            f"{r['kv_fraction']:.3f} | {_pct(p['eta'])} |")
    add("")
    add("### Refresh power saved: what the controller must cost less than\n")
    add(f"Refresh power only (leakage excluded), mW, on the layer loop above "
        f"({LAYER_LOOP.format(layers=LAYERS)}), per calibration of the 2 MB workspace. "
        f"`trace`: "
        f"{controller_cost.MODELS['trace']}; `eq5-8`: {controller_cost.MODELS['eq5-8']}. "
        f"Beside the synthesised controller's area and power, with the net saving, in "
        f"`reports/area_power.md` (`make report`, section \"SHIELD: controller cost vs "
        f"refresh power saved\").\n")
    add("| calibration | model | F (B_KV/B_total) | baseline refresh mW | SHIELD refresh mW | "
        "saved mW | saved % of baseline |")
    add("|---|---|---|---|---|---|---|")
    for name, models in res["refresh_saved"].items():
        for model, r in models.items():
            add(f"| {name} | `{model}` | {r['kv_fraction']:.3f} | "
                f"{r['baseline_refresh_mw']:.4g} | {r['shield_refresh_mw']:.4g} | "
                f"{r['saved_mw']:.4g} | {_pct(r['saved_mw'] / r['baseline_refresh_mw'])} |")
    add("")
    rt = res["retention"]
    add("## Retention (config default table)\n")
    add(f"KV mantissa BER at T_rel = 1216 µs: {rt['relaxed_at_t_rel']:.3g} (paper: <= 1e-4); "
        f"QO mantissa BER over the 1.5 ms life: {rt['refreshless_at_qo_life']:.3g} (paper: "
        f"<= 0.04 %); sign/exponent at T_std: {rt['standard_at_t_std']:.3g}; Kelle's 2e-3 BER "
        f"is reached at {rt['kelle_interval_us']:.0f} µs. Log-linear interpolation between "
        f"points, linear on segments with a zero end, clamped after the last point.\n")
    add("![retention](retention.png)\n")
    fi = res["fault_injection"]
    add("## Algorithm 1 fault injection\n")
    add(f"One attention block (N = {fi['n_tokens']} tokens, d = {fi['d_model']}, "
        f"{fi['n_heads']} heads, causal, random X ~ N(0,1) and W ~ N(0, 1/d)); the outputs of "
        f"W_Q, W_K, W_V, W_O are stored as BF16 and Algorithm 1 hits each element with "
        f"probability BER and then XORs random bits under the mask (per-element selection, "
        f"not per-bit Bernoulli: a masked bit flips with probability BER/2). Error = "
        f"||O - O_ref|| / ||O_ref|| against the fault-free BF16 block, median of "
        f"{len(fi['seeds'])} seeds; inf = non-finite output (an exponent flip to all-ones "
        f"gives inf/NaN).\n")
    add("| BER | " + " | ".join(fi["median"]) + " |")
    add("|---|" + "---|" * len(fi["median"]))
    for i, b in enumerate(fi["bers"]):
        add(f"| {b:.2e} | " + " | ".join(f"{v[i]:.3g}" for v in fi["median"].values()) + " |")
    add("")
    add("Mantissa-only faults cost orders of magnitude less than uniform ones at the same BER "
        "(the basis of segmenting sign/exponent into the standard bank); this is the attention "
        "output of one random block, not the paper's perplexity (no LLM or data set here). "
        "With torch installed, `attach_torch_fault_hooks` puts the same hook on a model's "
        "q/k/v/o_proj Linear layers.\n")
    add("![fault injection](fault_injection.png)\n")
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwall.families.shield.report",
                                     description=__doc__)
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output folder")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    build_report(Path(args.out))
    print(f"memwall: wrote {args.out}/ in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
