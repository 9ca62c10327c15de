"""Pipeline depth of the d-PLENA datapath: register stages per FP block, and what they cost.

One config knob, ``fp_stages``, sets the register stages inside every FP block of the core; a
block that allows fewer (its ``DEPTHS`` table, :mod:`memwall.hdl.common.pipeline`) gets its own
maximum. Every latency the units, the sequencer and the cycle model use is derived here, so
the RTL and :mod:`memwall.families.dplena.model` cannot disagree:

* a lane of several blocks (elementwise: add, mul, exp; scalar FP: exp, 1/x, FP32 -> BF16) pads
  its shorter blocks to the deepest, then registers the selected result: latency ``max + 1``;
* a reduction-tree level is one FP32 add plus the node's output register: ``add_fp32 + 1``;
* the cross-chunk accumulator keeps ``add_fp32 + 1`` interleaved FP32 partial sums, so a chunk
  a cycle never waits for the previous chunk's add (:func:`memwall.golden.fparith.reduce_sum`);
* the sequencer's S_ADD_F, S_MUL_F and S_SUB_BF take their block's stages plus one cycle.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

__all__ = ["FpStages", "block_max_stages", "max_fp_stages"]


def block_max_stages() -> dict[str, int]:
    """The deepest pipeline each FP block of the core allows, by :class:`FpStages` field."""
    return {"add_bf16": max(FpAdd.DEPTHS["bf16"]), "mul_bf16": max(FpMul.DEPTHS["bf16"]),
            "exp": max(Bf16Exp.DEPTHS), "recip": max(Bf16Recip.DEPTHS),
            "to_bf16": max(Fp32ToBf16.DEPTHS),
            "add_fp32": max(FpAdd.DEPTHS["fp32"]), "mul_fp32": max(FpMul.DEPTHS["fp32"])}


def max_fp_stages() -> int:
    """``fp_stages`` beyond this adds nothing: every block is at its deepest."""
    return max(block_max_stages().values())


@dataclass(frozen=True)
class FpStages:
    """Register stages inside each FP block (0: combinational, the block as it always was)."""

    add_bf16: int = 0
    mul_bf16: int = 0
    exp: int = 0
    recip: int = 0
    to_bf16: int = 0
    add_fp32: int = 0
    mul_fp32: int = 0

    def __post_init__(self):
        top = block_max_stages()
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not 0 <= value <= top[name]:
                raise ValueError(f"FpStages.{name}: must be an int in 0..{top[name]}, "
                                 f"got {value!r}")

    @classmethod
    def uniform(cls, depth: int) -> FpStages:
        """``depth`` stages in every block, or the block's own maximum if that is smaller."""
        return cls(**{name: min(depth, top) for name, top in block_max_stages().items()})

    def as_params(self) -> dict:
        """The non-zero depths, for a module's ``params`` (all-zero: empty, so combinational
        modules keep the names they always had)."""
        return {name: value for name, value in asdict(self).items() if value}

    @property
    def elementwise_latency(self) -> int:
        """Cycles from an elementwise command to its result."""
        return max(self.add_bf16, self.mul_bf16, self.exp) + 1

    @property
    def scalar_fp_latency(self) -> int:
        """Cycles from a scalar FP unit command (e^x, 1/x, FP32 -> BF16) to its result."""
        return max(self.exp, self.recip, self.to_bf16) + 1

    @property
    def tree_level_latency(self) -> int:
        """Cycles of one reduction-tree level."""
        return self.add_fp32 + 1

    @property
    def sum_partials(self) -> int:
        """Interleaved FP32 partial sums of the cross-chunk accumulator."""
        return self.add_fp32 + 1
