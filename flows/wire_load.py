"""Wire-load estimates for a PDK whose Liberty brings none (ASAP7): by fanout and block size.

Pre-layout timing needs some wire on every net. Nangate45 and sky130hd Liberty files carry
wire-load models that OpenSTA applies by default; the ASAP7 files carry none, so without this
module every ASAP7 net had pin capacitance only and a path that grows with the design (VLEN)
was invisible. The model, and where each number comes from:

- **Length by fanout**: the fanout-length tables of the Nangate45 library's
  ``hvratio_1_1`` wire-load groups for 1K-, 3K- and 5K-gate blocks
  (``NangateOpenCellLibrary_typical.lib``, PDKv1.3_v2010_12, in ``$MEMWALL_PDK_ROOT/nangate45``;
  :data:`NANGATE45_TABLES`, checked against the file by the tests). The 5K table is the base.
- **Block size**: length grows with the block as ``gates ** growth``; ``growth`` is the least
  squares slope of log length against log gates over fanouts 1-6 of those three tables
  (:func:`block_growth`; Rent's rule gives the same form, Donath's ``N ** (p - 0.5)``). The block
  is the whole design being signed off (OpenSTA's ``top`` wire-load mode), its size in NAND2
  equivalents: standard-cell area over the area of the PDK's NAND2 x1. Every net of the design,
  timed flat or module by module, gets the same model, so flat and hierarchical timing agree.
- **Geometry**: lengths scale from 45 nm to the PDK by the square root of the NAND2 x1 area
  ratio (the cell pitch), both areas read from the Liberty files (Nangate45's NAND2_X1 is
  cited, :data:`NANGATE45_NAND2_AREA_UM2`).
- **Wire R and C per micron**: ORFS ``flow/platforms/asap7/setRC.tcl``, ``set_wire_rc
  -signal -resistance 3.23151E-02 -capacitance 1.73323E-01`` (kOhm/um, fF/um): the signal-wire
  values ORFS uses for ASAP7 placement-stage parasitics (:data:`SIGNAL_RC`); the same file's
  ``set_wire_rc -clock -resistance 5.13971E-02 -capacitance 1.44549E-01`` for clock nets
  (:data:`CLOCK_RC`, used by the clock-tree estimate, :mod:`memwall.flows.clock_tree`). Both
  as of ORFS commit a3ea4d0a4 (2025-06-04); ORFS commit 09df6d28c (2026-07-16) refitted them
  (clock C 1.45426E-01 fF/um, +0.6 %).

Limits, stated with every figure: a wire-load model knows fanout, not distance, so a buffer
tree's trunk across a 2048-lane datapath is costed like a local net; the numbers are a
pre-layout estimate, no substitute for placement parasitics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from memwall.files import write_text_atomic

__all__ = ["WireLoad", "NANGATE45_TABLES", "SIGNAL_RC", "CLOCK_RC", "block_growth",
           "wire_load_for", "LIBRARY_NAME"]

#: Nangate45 ``wire_load("<n>K_hvratio_1_1")`` groups: gates -> ((fanout, length um), ...),
#: and their ``slope`` (um per fanout past the table): 5.0 for 3K and 5K, 6.283688 for 1K.
NANGATE45_TABLES = {
    1000: ((1, 1.3446), (2, 2.8263), (3, 4.7581), (4, 7.4080), (5, 10.9381), (6, 15.7314),
           (8, 29.7891)),
    3000: ((1, 1.5771), (2, 3.9330), (3, 6.6217), (4, 9.7638), (5, 13.5526), (6, 18.1322),
           (7, 22.5871), (8, 25.1074), (10, 30.1480)),
    5000: ((1, 1.7460), (2, 3.9394), (3, 6.4626), (4, 9.2201), (5, 11.9123), (6, 14.8358),
           (7, 18.6155), (8, 22.6727), (9, 25.4842), (11, 27.0320)),
}
NANGATE45_SLOPE_5K = 5.0
#: ``area`` of NAND2_X1 in the same Nangate45 file (um^2).
NANGATE45_NAND2_AREA_UM2 = 0.798
#: The base table's block size.
BASE_GATES = 5000

#: PDK -> (signal wire kOhm per um, fF per um, source).
SIGNAL_RC = {
    "asap7": (3.23151e-2, 1.73323e-1,
              "ORFS flow/platforms/asap7/setRC.tcl (commit a3ea4d0a4): set_wire_rc -signal"),
}
#: PDK -> (clock wire kOhm per um, fF per um, source): what ORFS gives clock nets.
CLOCK_RC = {
    "asap7": (5.13971e-2, 1.44549e-1,
              "ORFS flow/platforms/asap7/setRC.tcl (commit a3ea4d0a4): set_wire_rc -clock"),
}
#: PDK -> its NAND2 x1 cell, the gate-equivalent unit and the pitch reference.
NAND2 = {"asap7": "NAND2x1_ASAP7_75t_R"}

#: The Liberty library the model is written into for OpenSTA.
LIBRARY_NAME = "memwall_wire_load"


@cache
def block_growth() -> float:
    """Exponent of length against block size: the least squares slope of log length against
    log gates over fanouts 1-6 of :data:`NANGATE45_TABLES`, one intercept per fanout."""
    rows, rhs = [], []
    fanouts = range(1, 7)
    for gates, table in NANGATE45_TABLES.items():
        lengths = dict(table)
        for k, f in enumerate(fanouts):
            row = [0.0] * (len(fanouts) + 1)
            row[0], row[1 + k] = math.log(gates), 1.0
            rows.append(row)
            rhs.append(math.log(lengths[f]))
    solution, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    return float(solution[0])


@dataclass(frozen=True)
class WireLoad:
    """One block's wire-load model: length (um) by fanout, R and C per um."""
    name: str
    gates: float                                  # block size, NAND2 equivalents
    fanout_length: tuple[tuple[int, float], ...]  # (fanout, um)
    slope_um: float                               # um per fanout past the table
    res_kohm_per_um: float
    cap_ff_per_um: float
    source: str
    liberty_path: Path | None = None

    def length_um(self, fanout: int) -> float:
        """Liberty's rule: the table, linear between its points, ``slope`` past its end."""
        if fanout <= 0:
            return 0.0
        table = self.fanout_length
        if fanout >= table[-1][0]:
            return table[-1][1] + (fanout - table[-1][0]) * self.slope_um
        if fanout <= table[0][0]:
            return table[0][1] * fanout / table[0][0]
        for (f0, l0), (f1, l1) in zip(table, table[1:], strict=False):
            if f0 <= fanout <= f1:
                return l0 + (l1 - l0) * (fanout - f0) / (f1 - f0)
        raise AssertionError("unreachable: the table covers every fanout")

    def cap_f(self, fanout: int) -> float:
        """Wire capacitance (F) of a net with ``fanout`` loads."""
        return self.length_um(fanout) * self.cap_ff_per_um * 1e-15

    def liberty_text(self) -> str:
        """A Liberty library holding only this model (units: kOhm, fF, um), for OpenSTA's
        ``set_wire_load_model``."""
        thresholds = "".join(f"  {k}_{e} : {v};\n" for k, v in
                             (("input_threshold_pct", 50), ("output_threshold_pct", 50),
                              ("slew_lower_threshold_pct", 10),
                              ("slew_upper_threshold_pct", 90)) for e in ("rise", "fall"))
        points = "".join(f"    fanout_length ({f}, {length:.6g});\n"
                         for f, length in self.fanout_length)
        return (f"/* memwall wire-load model: {self.source} */\n"
                f"library ({LIBRARY_NAME}) {{\n  delay_model : table_lookup;\n"
                '  time_unit : "1ps";\n  voltage_unit : "1V";\n  current_unit : "1mA";\n'
                '  pulling_resistance_unit : "1kohm";\n  capacitive_load_unit (1, ff);\n'
                f"{thresholds}  wire_load (\"{self.name}\") {{\n"
                f"    capacitance : {self.cap_ff_per_um:.6g};\n"
                f"    resistance : {self.res_kohm_per_um:.6g};\n"
                f"    slope : {self.slope_um:.6g};\n    area : 0;\n{points}  }}\n}}\n")

    def tcl(self) -> list[str]:
        """OpenSTA commands that read the model and apply it to every net."""
        if self.liberty_path is None:
            raise ValueError(f"wire-load model {self.name} has not been written (write())")
        return [f"read_liberty {{{self.liberty_path}}}",
                "set_wire_load_mode top",
                f"set_wire_load_model -name {self.name} -library {LIBRARY_NAME}"]

    def write(self, path: Path) -> WireLoad:
        """Write the Liberty view to ``path``; the model that reads it from there."""
        write_text_atomic(Path(path), self.liberty_text())
        return WireLoad(**{**self.__dict__, "liberty_path": Path(path).resolve()})

    def as_dict(self) -> dict:
        return {"model": self.name, "block_gates": round(self.gates),
                "length_um_at_fanout": {str(f): round(self.length_um(f), 4)
                                        for f in (1, 2, 4, 8, 16)},
                "res_kohm_per_um": self.res_kohm_per_um, "cap_ff_per_um": self.cap_ff_per_um,
                "mode": "top (one model for every net of the design)",
                "source": self.source}


def wire_load_for(pdk_name: str, std_cell_area_um2: float, nand2_area_um2: float) -> WireLoad:
    """The model of a design of ``std_cell_area_um2`` of standard cells on ``pdk_name``,
    whose NAND2 x1 (:data:`NAND2`) is ``nand2_area_um2``."""
    if pdk_name not in SIGNAL_RC:
        raise ValueError(f"no wire-load estimate for PDK {pdk_name}; known: "
                         f"{', '.join(sorted(SIGNAL_RC))} (the others' Liberty has its own)")
    if nand2_area_um2 <= 0:
        raise ValueError(f"NAND2 area must be positive, not {nand2_area_um2}")
    gates = max(std_cell_area_um2, 0.0) / nand2_area_um2
    pitch = math.sqrt(nand2_area_um2 / NANGATE45_NAND2_AREA_UM2)
    size = (max(gates, 1.0) / BASE_GATES) ** block_growth()
    scale = pitch * size
    res, cap, rc_source = SIGNAL_RC[pdk_name]
    table = tuple((f, length * scale) for f, length in NANGATE45_TABLES[BASE_GATES])
    return WireLoad(
        name=f"memwall_{pdk_name}_{round(gates)}g", gates=gates, fanout_length=table,
        slope_um=NANGATE45_SLOPE_5K * scale, res_kohm_per_um=res, cap_ff_per_um=cap,
        source=(f"lengths: Nangate45 5K_hvratio_1_1 x cell pitch {pitch:.4f} x (gates/5000)^"
                f"{block_growth():.4f} (from Nangate45's 1K/3K/5K hvratio_1_1 tables); "
                f"R, C: {rc_source}"))
