"""SHIELD workloads: the layer loop the report models, and the cocotb runs that set the
controller's switching activity in ``memwall synth``."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import yaml

from memwall.families.shield.config import ShieldConfig
from memwall.family import PowerWorkload
from memwall.files import write_text_atomic
from memwall.golden.shield.trace import Step, Trace

__all__ = ["layer_loop_trace", "power_workloads", "trace_yaml", "LAYER_LOOP", "POWER_SIM_WORDS",
           "POWER_WINDOW_WORDS"]

#: What :func:`layer_loop_trace` does, in words (report tables name their workload with it).
LAYER_LOOP = ("{layers} layers: KV written once; per layer Q/O written, 400 µs, read, "
              "released, 100 µs")

#: Largest workspace (words) whose controller a power run simulates with the regression's
#: random layered traffic (every word written, read and checked: millions of cycles for
#: ``shield_2mb``). Larger ones run :func:`layer_loop_trace` compressed in time.
POWER_SIM_WORDS = 4096

#: Words of a region in the compressed layer loop of a large workspace's power run.
POWER_WINDOW_WORDS = 4096


def layer_loop_trace(cfg: ShieldConfig, layers: int = 8, scale: int = 1) -> Trace:
    """The workspace through ``layers`` decoder layers (:data:`LAYER_LOOP`): KV written once,
    then per layer the Q/O buffer written, held through attention and FFN, read and released
    (a life under 1.5 ms).

    ``scale > 1`` divides every region (rounded up) and every idle time by ``scale``: the same
    sequence of phases, with the same share of cycles in each, in ``1/scale`` of the cycles.
    """
    if not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an int >= 1, got {scale!r}")
    kv, qo = -(-cfg.kv_words // scale), -(-cfg.qo_words // scale)
    layer = (Step("write", "qo", 0, qo), Step("idle", us=400.0 / scale),
             Step("read", "qo", 0, qo), Step("release", "qo"),
             Step("idle", us=100.0 / scale))
    if not qo:
        layer = (Step("idle", us=500.0 / scale),)
    return Trace((Step("write", "kv", 0, kv),) + layer * layers)


def trace_yaml(trace: Trace) -> str:
    """``trace`` in the trace-file format of :mod:`memwall.golden.shield.trace`."""
    steps = []
    for step in trace.steps:
        if step.op in ("write", "read"):
            steps.append({"op": step.op, "class": step.cls, "addr": step.addr,
                          "words": step.words})
        elif step.op == "release":
            steps.append({"op": "release", "class": step.cls})
        else:
            steps.append({"op": "idle", "us": step.us})
    return yaml.safe_dump({"seed": trace.seed, "steps": steps}, sort_keys=False)


def _trace_file(cfg: ShieldConfig, trace: Trace) -> tuple[Path, Path]:
    """The trace as a file for the ``run_trace`` testbench (which reads a path), and where that
    testbench writes its result; named by content, so reruns share them."""
    text = trace_yaml(trace)
    folder = Path(tempfile.gettempdir()) / "memwall-shield-power"
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{cfg.name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
    path = folder / f"{stem}.yaml"
    if not path.exists() or path.read_text() != text:
        write_text_atomic(path, text)
    return path, folder / f"{stem}.json"


def power_scale(cfg: ShieldConfig) -> int:
    """Time compression of a large workspace's power run: regions of at most
    :data:`POWER_WINDOW_WORDS` words."""
    return max(1, -(-max(cfg.kv_words, cfg.qo_words) // POWER_WINDOW_WORDS))


def power_workloads(cfg: ShieldConfig) -> list[PowerWorkload]:
    """The controller under load, simulated as the synthesised top (``shield_controller``), so
    its own nets take their activity from the run, not only its children's.

    Up to :data:`POWER_SIM_WORDS` words: the regression's random layered KV/QO traffic. Larger:
    the report's layer loop (:func:`layer_loop_trace`) compressed by :func:`power_scale` -- the
    same mix of writes, reads, idle time and releases per cycle, but only ``1/scale`` of the
    rows live, so refreshes are that much rarer than in the full loop.
    """
    from memwall.hdl.shield.controller import TOP_NAME, ShieldController
    from memwall.verif.shield.tb_controller import config_params

    tb = "memwall.verif.shield.tb_controller"
    if cfg.total_words <= POWER_SIM_WORDS:
        return [PowerWorkload(TOP_NAME, ShieldController(cfg), tb,
                              {"config": config_params(cfg), "layers": 4}, "random_workload")]
    trace, out = _trace_file(cfg, layer_loop_trace(cfg, scale=power_scale(cfg)))
    return [PowerWorkload(TOP_NAME, ShieldController(cfg), tb,
                          {"config": config_params(cfg), "trace": str(trace), "out": str(out)},
                          "run_trace")]
