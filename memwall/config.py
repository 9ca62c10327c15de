"""Named configurations: ``configs/<name>.yaml`` validated into a frozen config object.

Every unit family (:mod:`memwall.family`) has one frozen dataclass, its ``config_class``. A
YAML file names its family with ``unit:``; every other key must be a field of that dataclass.
Each field carries its check in the dataclass metadata, so the error says the file, the key and
what is allowed.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from memwall import paths
from memwall.inputs import InputError, check_keys, load_yaml, shown

__all__ = [
    "ConfigError", "CONFIG_DIR", "UnitConfig", "unit_names", "available_configs",
    "load_config", "config_from_dict", "field", "power_of_two", "int_range", "number_range",
    "one_of", "pdk_clocks", "frozen_pairs", "ceil_log2",
]

CONFIG_DIR = paths.CONFIGS


def ceil_log2(n: int) -> int:
    """Bits to count ``n`` things: log2 of the smallest power of two >= ``n`` (0 for 0 and 1),
    as ``amaranth.utils.ceil_log2``, for the specs, which import no Amaranth."""
    if n < 0:
        raise ValueError(f"{n} is negative")
    return (n - 1).bit_length() if n else 0


class ConfigError(InputError):
    """A config file or value that cannot be used; the message names what and what is allowed."""


# --- checks: each returns None when the value is allowed, else a phrase saying what is allowed --

Check = Callable[[Any], "str | None"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def power_of_two(lo: int, hi: int) -> Check:
    def check(value):
        if _is_int(value) and lo <= value <= hi and value & (value - 1) == 0:
            return None
        return f"must be a power of two in [{lo}, {hi}]"
    return check


def int_range(lo: int, hi: int) -> Check:
    def check(value):
        if _is_int(value) and lo <= value <= hi:
            return None
        return f"must be an integer in [{lo}, {hi}]"
    return check


def number_range(lo: float, hi: float) -> Check:
    def check(value):
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) and lo < value <= hi:
            return None
        return f"must be a number in ({lo}, {hi}]"
    return check


def one_of(*allowed) -> Check:
    def check(value):
        # Same type as well as equal: 32.0 is not the integer width 32.
        if any(type(value) is type(a) and value == a for a in allowed):
            return None
        return "must be one of " + ", ".join(repr(a) for a in allowed)
    return check


def pdk_clocks(lo: float, hi: float) -> Check:
    """A mapping of PDK name (``flows.pdk.PLATFORMS``) to a clock in MHz in ``(lo, hi]``.

    The config keeps it as sorted ``(pdk, MHz)`` pairs (:func:`frozen_pairs`), so a config
    stays hashable."""
    def check(value):
        from memwall.flows.pdk import PLATFORMS

        allowed = f"a mapping of PDK ({', '.join(sorted(PLATFORMS))}) to MHz in ({lo}, {hi}]"
        if not isinstance(value, dict):
            return f"must be {allowed}"
        for pdk, mhz in value.items():
            if pdk not in PLATFORMS:
                return f"has PDK {shown(pdk)}; it must be {allowed}"
            if number_range(lo, hi)(mhz):
                return f"has {shown(mhz)} MHz for {pdk}; it must be {allowed}"
        return None
    return check


def frozen_pairs(mapping) -> tuple:
    """A mapping as sorted ``(key, value)`` pairs: hashable, for a frozen config's field."""
    return tuple(sorted(dict(mapping).items()))


def field(default: Any, check: Check, doc: str) -> Any:
    """A config field with its default, its check and a one-line description."""
    metadata = {"check": check, "doc": doc}
    if isinstance(default, (dict, list)):   # mutable: every config gets its own copy
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


class UnitConfig:
    """What every unit's config offers the shared flow (gen, SDC, config.mk): a clock.

    A subclass sets ``unit_name`` (a class attribute, not a field) to its family's name. A
    family whose hardware does not depend on its clock may also have a ``pdk_clock_mhz`` field
    (:func:`pdk_clocks`): the clock a PDK is synthesised and timed at, where it differs from
    ``clock_mhz`` (the clock on every other PDK, and in the generated SDC's default).
    """

    unit_name: ClassVar[str]
    clock_mhz: float

    @property
    def clock_period_ns(self) -> float:
        return 1000.0 / self.clock_mhz

    def clock_mhz_on(self, pdk: str) -> float:
        """The clock ``pdk`` is synthesised and timed at."""
        return self.pdk_clocks().get(pdk, self.clock_mhz)

    def pdk_clocks(self) -> dict[str, float]:
        """PDK -> MHz where the config gives a PDK its own clock (``pdk_clock_mhz``)."""
        return dict(getattr(self, "pdk_clock_mhz", ()))

    def clock_period_ns_on(self, pdk: str) -> float:
        return 1000.0 / self.clock_mhz_on(pdk)


def _config_classes() -> dict[str, type]:
    from memwall.family import families

    return {name: fam.config_class for name, fam in families().items()}


def unit_names() -> list[str]:
    return sorted(_config_classes())


def available_configs(config_dir: Path = CONFIG_DIR) -> list[str]:
    return sorted(p.stem for p in config_dir.glob("*.yaml"))


def config_from_dict(raw: Any, source: str, name: str):
    """Validate a mapping (as read from YAML) into the unit's frozen config object."""
    units = _config_classes()
    try:
        check_keys(raw, source, None, what="a mapping of keys to values")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    unit = raw.get("unit")
    if not isinstance(unit, str) or unit not in units:
        raise ConfigError(f"{source}: key 'unit' is {shown(unit)}; allowed units: "
                          + ", ".join(sorted(units)))
    cls = units[unit]
    # `name` is the file name (the CONFIG name), never a key inside the file.
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    try:
        check_keys(raw, f"{source} (unit {unit})", ["unit", *fields])
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    values = {}
    for key, f in fields.items():
        value = raw[key] if key in raw else _default(f)
        problem = f.metadata["check"](value)
        if problem:
            raise ConfigError(f"{source}: {key}: {shown(value)} — {key} {problem}")
        values[key] = value
    try:
        return cls(name=name, **values)
    except ConfigError as exc:  # cross-field checks in __post_init__
        raise ConfigError(f"{source}: {exc}") from None


#: Config names become folder names, Make variables, FuseSoC VLNV names and Tcl words:
#: letters, digits, ``_``, ``-`` and ``.``, starting with a letter, digit or ``_``.
CONFIG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def check_config_name(name: str, source: str) -> str:
    if not CONFIG_NAME.fullmatch(name):
        raise ConfigError(f"{source}: config name {shown(name)} cannot be used: it names the "
                          f"build folder, Make and FuseSoC targets, so it must be 1-64 letters, "
                          f"digits, '_', '-' or '.', starting with a letter, digit or '_' "
                          f"(rename the file)")
    return name


def load_config(name_or_path: str, config_dir: Path = CONFIG_DIR):
    """Load a named config (``dplena2048``) or a YAML file path (``my/cfg.yaml``)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml"):
        name = check_config_name(path.stem, f"config file {path}")
    else:
        check_config_name(name_or_path, "config")
        path = config_dir / f"{name_or_path}.yaml"
        name = name_or_path
        if not path.is_file():
            raise ConfigError(f"unknown config {name_or_path!r}; available configs: "
                              + ", ".join(available_configs(config_dir))
                              + f" (in {config_dir}), or pass a path to a .yaml file")
    try:
        raw = load_yaml(path, "config file")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    return config_from_dict(raw, f"config file {path}", name)
