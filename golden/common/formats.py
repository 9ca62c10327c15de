"""Binary floating-point formats shared by the golden models and the RTL generators.

Golden code works on *bit patterns* held in unsigned integer arrays (``uint16`` for BF16,
``uint32`` for FP32) because that is what the RTL sees and what a bit-exact comparison needs; the
``ml_dtypes`` views convert them to values. Importable without Amaranth or cocotb.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["FloatFormat", "BF16", "FP32", "bf16_bits", "bf16_values", "fp32_bits", "fp32_values",
           "round_to_bf16"]


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754-style binary format: 1 sign bit, ``exp_bits`` exponent, ``man_bits`` fraction."""
    name: str
    exp_bits: int
    man_bits: int

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def exp_max(self) -> int:
        """Biased exponent field of inf/NaN."""
        return (1 << self.exp_bits) - 1

    @property
    def sign_mask(self) -> int:
        return 1 << (self.width - 1)

    @property
    def inf_bits(self) -> int:
        return self.exp_max << self.man_bits

    @property
    def qnan_bits(self) -> int:
        """The one NaN every memwall block returns: +, all-ones exponent, fraction MSB."""
        return self.inf_bits | (1 << (self.man_bits - 1))

    @property
    def uint(self) -> type:
        return {16: np.uint16, 32: np.uint32}[self.width]

    @property
    def dtype(self) -> type:
        return {"bf16": ml_dtypes.bfloat16, "fp32": np.float32}[self.name]

    def is_nan(self, bits: np.ndarray) -> np.ndarray:
        bits = np.asarray(bits).astype(np.uint64)
        return ((bits >> self.man_bits) & self.exp_max == self.exp_max) & \
            (bits & ((1 << self.man_bits) - 1) != 0)

    def canonicalize_nan(self, bits: np.ndarray) -> np.ndarray:
        """Replace every NaN pattern with :attr:`qnan_bits` (the RTL's only NaN output)."""
        bits = np.asarray(bits, dtype=self.uint)
        return np.where(self.is_nan(bits), self.uint(self.qnan_bits), bits).astype(self.uint)

    def to_bits(self, values) -> np.ndarray:
        return np.asarray(values, dtype=self.dtype).view(self.uint)

    def from_bits(self, bits) -> np.ndarray:
        return np.asarray(bits, dtype=self.uint).view(self.dtype)


BF16 = FloatFormat("bf16", 8, 7)
FP32 = FloatFormat("fp32", 8, 23)


def bf16_bits(values) -> np.ndarray:
    """Round float values to BF16 (RNE, via float32 — see :func:`round_to_bf16`) and return bits."""
    return round_to_bf16(values).view(np.uint16)


def bf16_values(bits) -> np.ndarray:
    return BF16.from_bits(bits)


def fp32_bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def fp32_values(bits) -> np.ndarray:
    return FP32.from_bits(bits)


def round_to_bf16(values) -> np.ndarray:
    """Round to BF16 with round-to-nearest-even, subnormals kept.

    Always goes through float32: ``ml_dtypes`` converts float64 -> bfloat16 by way of float32
    (double rounding: 1 + 2**-8 + 2**-30 becomes 1.0, not 1 + 2**-7). Callers whose exact result
    is not representable in float32 must round to float32 themselves first and show that this
    double rounding is innocuous (it is for +, -, * of two BF16 values: 24 >= 2*8 + 2).
    """
    arr = np.asarray(values)
    if arr.dtype != np.float32:
        arr = arr.astype(np.float32)
    return arr.astype(ml_dtypes.bfloat16)
