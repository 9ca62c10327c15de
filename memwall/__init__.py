"""memwall: hardware generation and RTL verification for the units edge-LLM accelerators use
to beat the memory wall.

Five unit families (``memwall units``): d-PLENA's diffusion-LLM sampling core, SHIELD's
segmented eDRAM refresh controller, a retention-aware eDRAM PIM macro, rDXE's VRC-fused decoder
engine and KVNAND's in-flash KV-cache plane. Each has Amaranth generators (``memwall.hdl``),
bit-exact NumPy golden models (``memwall.golden``), cocotb testbenches (``memwall.verif``) and a
synthesis, timing and power flow (``memwall.flows``). The command line is ``memwall``; the same
work from Python::

    import memwall

    cfg = memwall.load_config("dplena32")           # a named config, or a .yaml path
    out = memwall.generate(cfg)                      # build/dplena32/: RTL, SDCs, config.mk, ...
    step = memwall.golden_models("dplena")["sample_step_hw"]   # the family's golden models
    memwall.unit_families()                          # every unit family, by name

:func:`generate` is what ``memwall gen`` runs; :func:`golden_models` gives the functions the
``golden`` commands call (plain functions on NumPy arrays, documented in their modules).
"""

from __future__ import annotations

# Not "family"/"families": those names are the modules memwall.family and memwall.families.
__all__ = ["load_config", "generate", "golden_models", "unit_family", "unit_families"]


def load_config(name):
    """A config by name (``configs/<name>.yaml``) or ``.yaml`` path, checked field by field
    (:func:`memwall.config.load_config`; a bad config raises
    :class:`memwall.config.ConfigError`)."""
    from memwall.config import load_config as load

    return load(name)


def generate(config, out_root=None, progress=None):
    """Write ``<out_root>/<config name>/`` (default: ``build/`` in the checkout) as ``memwall
    gen`` does: one Verilog file per unique module, ``filelist.f``, the SDCs, ORFS's
    ``config.mk``, the FuseSoC core, ``lint.vlt`` and ``manifest.json``; returns the folder.
    ``config`` is a loaded config or a name or path for :func:`load_config`."""
    from pathlib import Path

    from memwall import paths
    from memwall.gen import generate as write

    cfg = load_config(config) if isinstance(config, (str, Path)) else config
    return write(cfg, Path(out_root) if out_root is not None else paths.BUILD, progress)


def golden_models(unit: str) -> dict:
    """The golden models of unit family ``unit`` by name (``memwall.family.Family.golden``)."""
    return {name: getattr(fn, "resolve", lambda f=fn: f)()
            for name, fn in unit_family(unit).golden.items()}


def unit_family(unit: str):
    """The :class:`memwall.family.Family` named ``unit`` (KeyError naming the known ones)."""
    from memwall.family import family as find

    return find(unit)


def unit_families() -> dict:
    """Every unit family found (``memwall.families`` and ``MEMWALL_FAMILY_PATH``), by name."""
    from memwall.family import families as found

    return found()
