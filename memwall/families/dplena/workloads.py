"""d-PLENA's power workload: the activity ``memwall synth`` gives every module of the core.

Power activity comes from the core itself (:func:`core_workload`): one sampling step of MXFP8
logits through ``dplena_core`` under Verilator, so every module (sequencer, dequantiser, Vector
SRAM banks, FIFO, memories' enables) has the activity the step gives it, and a unit the step
leaves idle idles. Configs wider than :data:`SIM_BANKS` Vector SRAM banks are simulated as a
reduced core (:func:`sim_config`): the VCD grows with VLEN x log2(VLEN) per Vector SRAM row
(each reduction-tree level dumps the row), so the full 2048-lane core's step would write tens of
GB for module types that repeat the reduced core's. ``python -m memwall.flows.workload CONFIG``
prints what a config's run costs (cycles, simulation and VCD-reading time, VCD size, peak RSS).
"""

from __future__ import annotations

from memwall.families.dplena.config import DplenaConfig
from memwall.family import PowerWorkload

#: The core workload simulates a core of at most this many Vector SRAM banks: a config with
#: more is simulated with its VLEN reduced to SIM_BANKS x its bank width (every other field,
#: the Vector SRAM rows and fp_stages included, kept), and each module type the reduced core
#: lacks takes the activity of the same generator's nearest module (memwall.flows.workload).
#: Two banks keep the Vector SRAM's write arbitration between banks.
SIM_BANKS = 2
#: Positions (L) of the simulated step, and chunks per row: the per-chunk pattern (prefetch,
#: max, exp-sum rescale) repeats over a row and the per-position one over a block, so a few of
#: each give the mix of Table II's step (B 16, L 32, V 126464). Cycle model on dplena64:
#: vector work is 79 % of the simulated step's ~2k cycles (89 % of Table II's), scalar 10 %
#: (8 %); four positions give the same mix in twice the cycles (and VCD: ~0.1 MB a cycle).
SIM_POSITIONS = 2
SIM_CHUNKS = 3
#: Chunks of more Vector SRAM rows than this are simulated at this size (the paper's
#: two-pass configs hold 247-row chunks: 3 of them would be ~30k cycles).
SIM_MAX_CHUNK_ROWS = 64


def sim_config(cfg: DplenaConfig) -> DplenaConfig:
    """The core the power workload simulates: ``cfg`` itself, or with VLEN reduced to
    :data:`SIM_BANKS` banks and the Vector SRAM KiB scaled so that it keeps its rows."""
    import dataclasses

    vlen = max(SIM_BANKS * cfg.bank_lanes, 1 << (cfg.block_len - 1).bit_length(), 32)
    if vlen >= cfg.vlen:
        return cfg
    return dataclasses.replace(cfg, name=f"{cfg.name}_vlen{vlen}", vlen=vlen,
                               vector_sram_kib=cfg.vector_sram_kib * vlen // cfg.vlen)


def core_workload(cfg: DplenaConfig) -> PowerWorkload:
    """One sampling step on the core (:func:`sim_config`), MXFP8 logits, Table II's shape
    scaled down (:func:`memwall.verif.dplena.core_run.sampling_step`).

    Chunks have the Vector SRAM rows of Table II's chunk on ``cfg``
    (:func:`memwall.golden.dplena.model.default_v_chunk`), so each chunk's vector work is the
    real one's. A reduced core reads a row in fewer HBM beats; its port is throttled to one
    beat every ``cfg.banks / banks`` cycles, so that it waits for HBM as the real core does
    (dplena2048 is memory-bound: 32 beats a row at 64 B/cycle).
    """
    from memwall.families.dplena.report import TABLE_II
    from memwall.golden.dplena.model import default_v_chunk
    from memwall.hdl.dplena.core import TOP_NAME, DplenaCore
    from memwall.verif.dplena.core_run import sampling_step, step_job

    sim = sim_config(cfg)
    every = cfg.banks // sim.banks
    chunk_rows = -(-default_v_chunk(cfg, TABLE_II["V"]) // cfg.vlen)
    chunk_rows = max(1, min(chunk_rows, sim.vector_sram_rows // 2 - 3, SIM_MAX_CHUNK_ROWS))
    positions = min(SIM_POSITIONS, cfg.block_len)

    wl, logits, x = sampling_step(sim, block_len=positions, chunks=SIM_CHUNKS,
                                  chunk_rows=chunk_rows)

    def prepare(folder):
        return step_job(sim, wl, logits, x, folder)["params"]

    core = f"{cfg.name} core" if sim is cfg else \
        (f"{cfg.name} core reduced to VLEN {sim.vlen} ({sim.banks} of {cfg.banks} Vector SRAM "
         f"banks, HBM port 1 beat per {every} cycles)")
    return PowerWorkload(
        TOP_NAME, DplenaCore(sim), "memwall.verif.dplena.tb_core", {"beat_every": every},
        prepare=prepare,
        description=(f"core workload ({core}; MXFP8 sampling step B={wl.batch} L={wl.block_len} "
                     f"V={wl.vocab} in {SIM_CHUNKS} chunks of {chunk_rows} rows, "
                     f"k={wl.k[0]})"))


def power_workloads(cfg: DplenaConfig) -> list[PowerWorkload]:
    """The core itself on a sampling step (:func:`core_workload`): every module, the
    sequencer, dequantiser, Vector SRAM banks, memories and FIFO included, with the activity
    the step gives it, a unit idle where the core leaves it idle."""
    return [core_workload(cfg)]
