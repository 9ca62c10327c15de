"""The Python API (``import memwall``): documented, and the same work as the CLI."""

import numpy as np

import memwall


def test_the_package_says_what_it_is_and_how_to_use_it():
    assert memwall.__doc__ and "generate(cfg)" in memwall.__doc__
    for name in memwall.__all__:
        assert getattr(memwall, name).__doc__, name


def test_generate_writes_what_gen_writes(tmp_path):
    from memwall.cli import main

    out = memwall.generate("shield_small", tmp_path / "api")
    assert main(["gen", "shield_small", "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    cli = tmp_path / "cli" / "shield_small"
    for path in cli.rglob("*"):
        if path.is_file() and path.name != "manifest.json":
            assert (out / path.relative_to(cli)).read_bytes() == path.read_bytes(), path.name


def test_golden_models_are_the_familys_functions():
    models = memwall.golden_models("shield")
    cfg = memwall.load_config("shield_small")
    assert set(models) == set(memwall.unit_family("shield").golden)
    assert np.isclose(models["eta"](cfg, 0.5), memwall.golden.shield.refresh.eta(cfg, 0.5))
    assert {"dplena", "kvnand", "pim", "rdxe", "shield"} <= set(memwall.unit_families())
