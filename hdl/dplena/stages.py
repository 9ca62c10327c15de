"""Pipeline depth of the d-PLENA datapath: register stages per FP block, and what they cost.

One config knob, ``fp_stages``, sets the register stages inside every FP block of the core; a
block that allows fewer (its ``DEPTHS`` table, :mod:`memwall.hdl.common.pipeline`) gets its own
maximum. Every latency the units, the sequencer and the cycle model use is derived here, so
the RTL and :mod:`memwall.families.dplena.model` cannot disagree:

* a pipelined block always starts from registers: whatever drives a unit (the sequencer's
  decode, a memory macro's output) has the cycle before to arrive. So a lane of several blocks
  (elementwise: add, mul, exp; scalar FP: exp, 1/x, FP32 -> BF16) registers its operands,
  runs its blocks (the shorter ones padded to the deepest, ``d``) and registers the selected
  result: latency ``d + 2`` (``1`` when combinational);
* a reduction-tree level is one FP32 add plus the node's output register, ``add_fp32 + 1``,
  and the leaves register their masked inputs first;
* the cross-chunk accumulator registers its add's operands too, and keeps one interleaved FP32
  partial sum per cycle of its add (:attr:`FpStages.sum_partials`), so a chunk a cycle never
  waits for the previous chunk's add (:func:`memwall.golden.fparith.reduce_sum`);
* the sequencer's S_ADD_F, S_MUL_F and S_SUB_BF register their operands and their result:
  ``stages + 3`` cycles (1 when combinational).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memwall.hdl.common.fp import Fp32ToBf16, FpAdd, FpMul
from memwall.hdl.common.transcendental import Bf16Exp, Bf16Recip

__all__ = ["FpStages", "block_max_stages", "max_fp_stages", "tree_latency"]


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
        """Cycles from an elementwise command to its result: the result register, plus the
        operand register and the deepest block's stages when the blocks are pipelined."""
        return _lane_latency(max(self.add_bf16, self.mul_bf16, self.exp))

    @property
    def scalar_fp_latency(self) -> int:
        """Cycles from a scalar FP unit command (e^x, 1/x, FP32 -> BF16) to its result."""
        return _lane_latency(max(self.exp, self.recip, self.to_bf16))

    def tree_latency(self, levels: int) -> int:
        """Cycles of a reduction tree of ``levels`` levels (:func:`tree_latency`)."""
        return tree_latency(levels, self.add_fp32)

    @property
    def sum_partials(self) -> int:
        """Interleaved FP32 partial sums of the cross-chunk accumulator: its add takes
        ``add_fp32`` stages, plus an operand register when pipelined, so a chunk's partial
        must be that many chunks old."""
        return _lane_latency(self.add_fp32)

    @staticmethod
    def arith_cycles(stages: int) -> int:
        """Cycles of a sequencer S_ADD_F / S_MUL_F / S_SUB_BF on a block of ``stages``: one
        when combinational; else the operand register, the block, its result register and
        the register-file write."""
        return stages + 3 if stages else 1


def tree_latency(levels: int, stages: int) -> int:
    """Cycles of a reduction tree of ``levels`` levels whose FP32 adders have ``stages``:
    ``stages + 1`` per level, plus the leaves' input register when ``stages > 0``."""
    return levels * (stages + 1) + (1 if stages else 0)


def _lane_latency(depth: int) -> int:
    """A result register behind ``depth`` block stages, and an operand register in front of
    them when ``depth > 0``."""
    return depth + 2 if depth else 1
