"""BF16 -> BF16 ``exp(x)`` and ``1/x``: integer models bit-exact with ``hdl/common/transcendental``.

Both functions take and return BF16 *bit patterns* (``uint16`` arrays) and mirror the RTL
datapath in NumPy integer arithmetic of the same widths, so ``bf16_exp(bits) == Bf16Exp.y`` and
``bf16_recip(bits) == Bf16Recip.y`` bit for bit. The ROM contents are computed here once
(:func:`exp_tables`, :func:`recip_table`) and the RTL takes them from this module, so both sides
use identical constants. :func:`exp_reference` / :func:`recip_reference` (float64 values),
:func:`nearest_bf16` (their correctly rounded BF16) and :func:`measure` bound the error of the
algorithms themselves.

Importable without Amaranth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from memwall.golden.common.formats import BF16, round_to_bf16

__all__ = [
    "EXP_PARAMS",
    "LOG2E_CONST",
    "LOG2E_FRAC_BITS",
    "ExpTables",
    "bf16_exp",
    "bf16_recip",
    "exp_reference",
    "exp_tables",
    "measure",
    "nearest_bf16",
    "recip_reference",
    "recip_table",
    "ulp_error",
]

_QNAN = BF16.qnan_bits        # 0x7FC0
_INF = BF16.inf_bits          # 0x7F80
_ONE = BF16.bias << BF16.man_bits   # 0x3F80

# ---------------------------------------------------------------------------------------------
# exp
# ---------------------------------------------------------------------------------------------

#: Datapath widths of :func:`bf16_exp` / ``Bf16Exp`` (the defaults the RTL is built with).
#:
#: ``t_frac_bits``     F   fraction bits kept of t = x * log2(e) (truncated);
#: ``table_bits``      T   top bits of frac(t) that index the 2**f tables (2**T entries);
#: ``interp_bits``     R   next bits of frac(t) fed to the linear-interpolation multiplier;
#: ``table_frac_bits`` W   fraction bits of the interpolated 2**f in [1, 2);
#: ``slope_frac_bits`` S   fraction bits of the per-segment slope (slope < 2: S + 1 bits).
EXP_PARAMS: dict[str, int] = {
    "t_frac_bits": 10,
    "table_bits": 6,
    "interp_bits": 4,
    "table_frac_bits": 12,
    "slope_frac_bits": 3,
}

_LOG2E = 1.0 / math.log(2.0)
#: log2(e) as C / 2**LOG2E_FRAC_BITS, C = round(log2(e) * 2**14) = 23637: relative error 4.9e-6,
#: as good as any 16- or 17-bit constant (the next two bits of log2(e) * 2**14 are zero), so
#: ``|t|`` is off by at most 128 * 4.9e-6 = 6.3e-4 (a tenth of an ulp) at the largest |x|. Its
#: canonical signed-digit form 2**15 - 2**13 - 2**10 + 2**6 + 2**4 + 2**2 + 1 factors as
#: ``85 + 23 * 2**10`` with ``85 = 5 * 17``, ``23 = 3 * 8 - 1``: five adders in the RTL.
LOG2E_FRAC_BITS = 14
LOG2E_CONST = round(_LOG2E * 2 ** LOG2E_FRAC_BITS)
# Exponent fields that reach the datapath: |x| in [2**-9, 2**7). Below, e**x rounds to 1.0 for
# either sign (|x| < 2**-9); above, it overflows (x >= 128 > 88.72) or underflows (x <= -128).
EXP_E_LO = BF16.bias - 9      # 118
EXP_E_HI = BF16.bias + 6      # 133


@dataclass(frozen=True)
class ExpTables:
    """Constants of one :data:`EXP_PARAMS` point, shared by the golden model and the RTL.

    Attributes
    ----------
    log2e : int
        :data:`LOG2E_CONST`, ``round(log2(e) * 2**14)``.
    base : tuple of int
        ``base[i]``: 2**f at the start of segment ``i`` minus 1, in units of ``2**-W``, plus the
        half-ulp rounding offset ``2**(W - 8)`` (so the final rounding is a plain truncation).
    slope : tuple of int
        ``slope[i]``: segment slope in units of ``2**-S``.
    max_err : float
        Largest ``|base + slope * r - (2**f_mid - 1)|`` over all segments and ``r``, in units of
        ``2**-W`` (rounding offset excluded): the interpolation's own error.
    """
    params: tuple
    log2e: int
    base: tuple
    slope: tuple
    max_err: float  # max |interpolated - 2**f_mid| over every (i, r), in units of 2**-W

    @property
    def p(self) -> dict:
        return dict(self.params)

    @property
    def prod_shift(self) -> int:
        """Right shift of ``slope[i] * r`` to units of ``2**-W``."""
        p = self.p
        return p["slope_frac_bits"] + p["table_bits"] + p["interp_bits"] - p["table_frac_bits"]


def _check_exp_params(p: dict) -> None:
    """Raise ``ValueError`` naming the key unless ``p`` is a valid exp datapath."""
    if set(p) != set(EXP_PARAMS):
        raise ValueError(f"exp params must have exactly the keys {sorted(EXP_PARAMS)}, "
                         f"got {sorted(p)}")
    k = LOG2E_FRAC_BITS
    f, t, r = p["t_frac_bits"], p["table_bits"], p["interp_bits"]
    w, s = p["table_frac_bits"], p["slope_frac_bits"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in p.values()):
        raise ValueError(f"exp params must be integers, got {p}")
    if not 8 <= f <= k + 16:
        raise ValueError(f"t_frac_bits must be in 8..{k + 16}, got {f}")
    if not 1 <= t <= 8 or t >= f:
        raise ValueError(f"table_bits must be in 1..8 and below t_frac_bits, got {t}")
    if not 0 <= r <= f - t:
        raise ValueError(f"interp_bits must be in 0..t_frac_bits-table_bits, got {r}")
    if not 9 <= w <= 24:
        raise ValueError(f"table_frac_bits must be in 9..24, got {w}")
    if not 1 <= s <= 16 or s + t + r < w:
        raise ValueError(f"slope_frac_bits must be in 1..16 with slope_frac_bits + table_bits + "
                         f"interp_bits >= table_frac_bits, got {s}")


@cache
def _exp_tables(items: tuple) -> ExpTables:
    p = dict(items)
    _check_exp_params(p)
    t, r, w, s = p["table_bits"], p["interp_bits"], p["table_frac_bits"], p["slope_frac_bits"]
    shift = s + t + r - w
    rr = np.arange(1 << r, dtype=np.int64)
    base, slope, worst = [], [], 0.0
    for i in range(1 << t):
        # (i, r) stands for f in [(i*2**R + r) * 2**-(T+R), +2**-(T+R)) (t and r are truncated):
        # aim at the middle of that interval.
        f_mid = (i * (1 << r) + rr + 0.5) * 2.0 ** -(t + r)
        target = (np.exp2(f_mid) - 1.0) * 2.0 ** w
        chord = (2.0 ** ((i + 1) / (1 << t)) - 2.0 ** (i / (1 << t))) * (1 << t)
        best = None
        # Minimax over the integer datapath: try slopes around the chord, centre the offset.
        for sl in range(max(round(chord * 2 ** s) - 3, 0), round(chord * 2 ** s) + 4):
            err = target - ((sl * rr) >> shift)
            b = int(np.round((err.max() + err.min()) / 2))
            e = float(np.abs(err - b).max())
            if best is None or e < best[0]:
                best = (e, b, sl)
        worst = max(worst, best[0])
        base.append(best[1] + (1 << (w - 8)))   # + half an output ulp: rounding is truncation
        slope.append(best[2])
        # The RTL keeps base + slope * r in W + 1 bits and reads the significand q from its top
        # 8: q may reach 128 (2.0, fraction 0 plus a carry) but not beyond.
        pv = base[-1] + ((slope[-1] * rr) >> shift)
        if base[-1] < 0 or pv.max() >> (w - 7) > 128:
            raise ValueError(f"exp params {p}: segment {i} leaves [1, 2] (too coarse a slope)")
    return ExpTables(items, LOG2E_CONST, tuple(base), tuple(slope), worst)


def exp_tables(params: dict | None = None) -> ExpTables:
    """Constants for ``params`` (default :data:`EXP_PARAMS`); raises ``ValueError`` if invalid."""
    p = dict(EXP_PARAMS if params is None else params)
    _check_exp_params(p)
    return _exp_tables(tuple(sorted(p.items())))


def bf16_exp(bits, params: dict | None = None) -> np.ndarray:
    """``e**x`` of BF16 bit patterns, bit-exact with ``Bf16Exp``.

    Algorithm (all integer; F, T, R, W, S from :data:`EXP_PARAMS`):

    1. Specials: NaN -> ``0x7FC0``; +inf -> +inf; -inf -> +0; ``|x| < 2**-9`` (exponent field
       below 118, including zeros and subnormals) -> 1.0, which is the correctly rounded result;
       ``|x| >= 128`` -> +inf for x > 0, +0 for x < 0.
    2. ``|t| = x * log2(e)`` in fixed point: the 8-bit significand times the constant
       :data:`LOG2E_CONST` ``/ 2**14``, shifted left by ``e - 118`` (0..15) and truncated to
       ``8 + F`` bits (8 integer, F fraction). Negative x take the one's complement, so
       ``t = n + f`` (``n`` signed, ``f`` in ``[0, 1)``) lies less than 2**-F below the
       exact product for either sign; the tables aim at the middle of that interval.
    3. ``2**f``: the top T bits of f pick ``base`` and ``slope``; the next R bits ``r`` give
       ``p = base + (slope * r >> (S + T + R - W))`` with W fraction bits (a linear
       interpolation, minimax per segment over the integer datapath).
    4. Round: ``base`` already holds half an output ulp, so the 8-bit significand is
       ``p >> (W - 7)``; a result of 2.0 carries into the exponent.
    5. Biased exponent ``n + 127 + carry``: >= 255 -> +inf; <= 0 -> +0 (results below
       2**-126 are flushed to zero: no subnormal outputs; only x in [-92.5, -87.5], eleven
       inputs, would have had one).

    Measured exhaustively over all 65536 inputs against float64 ``exp`` for the default
    :data:`EXP_PARAMS` (``python -m memwall.golden.common.transcendental``): max error 0.6035 ulp
    over the inputs whose exact result is a normal BF16 number; 65128 of 65280 finite inputs
    (99.767 %) correctly rounded (RNE). Of the other 152, 141 are one ulp off, with the exact
    value within 0.104 ulp of the rounding midpoint (x in [-84.5, 88]), and 11 are the
    flushed subnormals (x = -92.5, -92, ..., -87.5). The output is monotonic in x.

    Parameters
    ----------
    bits : array_like of uint16
        BF16 bit patterns.
    params : dict, optional
        Datapath widths (keys of :data:`EXP_PARAMS`); default :data:`EXP_PARAMS`.

    Returns
    -------
    numpy.ndarray of uint16
        BF16 bit patterns of the results.
    """
    tb = exp_tables(params)
    p = tb.p
    k = LOG2E_FRAC_BITS
    fb, t, r, w = p["t_frac_bits"], p["table_bits"], p["interp_bits"], p["table_frac_bits"]
    x = np.asarray(bits, dtype=np.uint16).astype(np.int64)
    s = x >> 15
    e = (x >> 7) & 0xFF
    frac = x & 0x7F

    # 2. |t| as an unsigned (8 + F)-bit fixed-point number.
    prod = (frac | 0x80) * tb.log2e
    sh = (e - EXP_E_LO) & 0xF
    t_abs = ((prod << sh) >> (k + 16 - fb)) & ((1 << (8 + fb)) - 1)
    t_fix = np.where(s == 1, ~t_abs, t_abs)          # signed, 9 + F bits
    n = t_fix >> fb
    f = t_fix & ((1 << fb) - 1)

    # 3. 2**f by table + linear interpolation.
    seg = f >> (fb - t)
    rr = (f >> (fb - t - r)) & ((1 << r) - 1)
    base = np.asarray(tb.base, dtype=np.int64)[seg]
    slope = np.asarray(tb.slope, dtype=np.int64)[seg]
    pv = base + ((slope * rr) >> tb.prod_shift)

    # 4. Round (offset is in ``base``): 8-bit significand, carry on 2.0.
    q = pv >> (w - 7)
    carry = q >> 7
    be = n + BF16.bias + carry
    y = (be << 7) | (q & 0x7F)
    y = np.where(be >= 255, _INF, y)
    y = np.where(be <= 0, 0, y)

    # 1. Specials.
    y = np.where(e < EXP_E_LO, _ONE, y)
    y = np.where(e > EXP_E_HI, np.where(s == 1, 0, _INF), y)
    y = np.where(e == 0xFF, np.where(frac != 0, _QNAN, np.where(s == 1, 0, _INF)), y)
    return y.astype(np.uint16)


# ---------------------------------------------------------------------------------------------
# reciprocal
# ---------------------------------------------------------------------------------------------

@cache
def recip_table() -> tuple:
    """The 128-entry reciprocal ROM, indexed by the 7-bit fraction ``f`` of ``m = 1 + f/128``.

    Entry bits: ``[6:0]`` fraction of ``q = 1/m`` (``f == 0``) or ``q = 2/m`` (``f != 0``)
    correctly rounded to 8 significant bits; ``[7]`` ``1`` if that rounding went *down*
    (exact ``q`` above the entry: needed to round again into a subnormal); ``[8]`` ``1`` for
    ``f == 0`` (``q = 1`` exactly, exponent one higher). ``2/m = 256/(128+f)`` is never a
    rounding tie (``k(2j+1) = 2**16`` has no odd factor) and never rounds up to 2.0.
    """
    entries = []
    for f in range(128):
        if f == 0:
            entries.append(1 << 8)
            continue
        num, den = 1 << 15, 128 + f          # q * 128 = 32768 / (128 + f), in (128, 254)
        q8, rem = divmod(num, den)
        if 2 * rem > den:                    # 2 * rem == den never happens (no ties)
            q8 += 1
            down = 0
        else:
            down = 1
        assert 128 < q8 < 256 and 2 * rem != den
        entries.append((down << 7) | (q8 & 0x7F))
    return tuple(entries)


def bf16_recip(bits) -> np.ndarray:
    """``1/x`` of BF16 bit patterns, bit-exact with ``Bf16Recip``; correctly rounded (RNE) for
    every input, subnormal inputs and outputs included.

    Algorithm: for a normal input ``x = ±m * 2**(e - 127)``, ``1/x = ±q * 2**(be - 127)``
    with ``be = 253 - e + [f == 0]`` and ``q`` (``1/m`` if ``f == 0``, else ``2/m``, in
    ``[1, 2)``) from :func:`recip_table`, correctly rounded to 8 significant bits. ``be >= 1``
    (a normal result) except for ``|x| > 2**126``, where ``be`` is 0 or -1: the result is the
    subnormal ``q * 2**(be - 127)``, ``q`` shifted right by 1 or 2 and rounded again. That is
    exact because ``2/m`` is never a multiple of 2**-7 (the table's rounding direction bit
    says which side of ``q`` it lies, so there are no ties) and ``1/m = 1`` shifts exactly. A
    subnormal input ``f * 2**-133`` is normalised by a 1- or 2-bit shift (``f >= 64`` or
    ``32 <= f < 64``); ``f < 32`` (``|x| < 2**-128``) overflows to a signed inf, as does zero,
    and ``f == 32`` (reciprocal exactly 2**128) gives ``be = 255``, also inf.

    Specials: ``±0 -> ±inf``, ``±inf -> ±0``, NaN -> ``0x7FC0``.

    Measured exhaustively over all 65536 inputs
    (``python -m memwall.golden.common.transcendental``):
    max error 0.4980 ulp over the inputs whose exact result is a normal BF16 number; all 65280
    finite inputs (100 %) correctly rounded, subnormal inputs and outputs included.

    Parameters
    ----------
    bits : array_like of uint16
        BF16 bit patterns.

    Returns
    -------
    numpy.ndarray of uint16
        BF16 bit patterns of the results.
    """
    x = np.asarray(bits, dtype=np.uint16).astype(np.int64)
    s = x >> 15
    e = (x >> 7) & 0xFF
    frac = x & 0x7F

    # Subnormal input: normalise (the leading one is bit 6 or bit 5; below that it overflows).
    sub = e == 0
    idx = np.where(~sub, frac, np.where(frac >= 64, (frac << 1) & 0x7F, (frac << 2) & 0x7F))
    e_eff = np.where(~sub, e, np.where(frac >= 64, 0, -1))
    entry = np.asarray(recip_table(), dtype=np.int64)[idx]
    q7 = entry & 0x7F
    down = (entry >> 7) & 1
    ez = entry >> 8
    be = 253 - e_eff + ez

    q8 = q7 | 0x80
    sub1 = (q8 >> 1) + (q8 & 1 & down)                              # be == 0
    lo2 = q8 & 3
    sub2 = (q8 >> 2) + ((lo2 == 3) | ((lo2 == 2) & (down == 1)))    # be == -1
    mag = np.where(be >= 1, (be << 7) | q7, np.where(be == 0, sub1, sub2))
    mag = np.where(be >= 255, _INF, mag)
    mag = np.where(sub & (frac < 32), _INF, mag)
    mag = np.where(e == 0xFF, 0, mag)
    y = (s << 15) | mag
    y = np.where((e == 0xFF) & (frac != 0), _QNAN, y)
    return y.astype(np.uint16)


# ---------------------------------------------------------------------------------------------
# float64 references and error measurement
# ---------------------------------------------------------------------------------------------

def nearest_bf16(values) -> np.ndarray:
    """Correctly rounded (RNE) BF16 bits of float64 ``values``: subnormals kept, overflow to
    ±inf, NaN -> ``0x7FC0``.

    :func:`round_to_bf16` goes through float32 and may double-round; this picks, among its
    result and that result's two neighbours, the one nearest to the float64 value (ties to
    even), which undoes any double rounding (it moves the result by at most one ulp).
    """
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        first = round_to_bf16(v).view(np.uint16).astype(np.int64)
        best, best_d = first.copy(), np.full(v.shape, np.inf)
        for d in (-1, 0, 1):
            c = first + d
            mag = c & 0x7FFF
            ok = (((c ^ first) & 0x8000) == 0) & (mag < _INF) & (c >= 0) & (c < 65536)
            cv = BF16.from_bits(np.clip(c, 0, 65535).astype(np.uint16)).astype(np.float64)
            dist = np.where(ok, np.abs(cv - v), np.inf)
            better = (dist < best_d) | ((dist == best_d) & ok & ((c & 1) == 0))
            best = np.where(better, c, best)
            best_d = np.where(better, dist, best_d)
    max_finite = 2.0 ** 128 * (1 - 2.0 ** -8)
    half_ulp_max = 2.0 ** (127 - 8)
    best = np.where(np.abs(v) >= max_finite + half_ulp_max,
                    np.where(v > 0, _INF, _INF | 0x8000), best)
    best = np.where(np.isnan(v), _QNAN, best)
    return best.astype(np.uint16)


def _values(bits) -> np.ndarray:
    with np.errstate(invalid="ignore"):   # NaN patterns
        return BF16.from_bits(np.asarray(bits, dtype=np.uint16)).astype(np.float64)


def exp_reference(bits) -> np.ndarray:
    """float64 ``exp`` of BF16 bit patterns (error ~1e-16 relative)."""
    with np.errstate(over="ignore"):
        return np.exp(_values(bits))


def recip_reference(bits) -> np.ndarray:
    """float64 ``1/x`` of BF16 bit patterns (exact to float64 rounding)."""
    with np.errstate(divide="ignore"):
        return 1.0 / _values(bits)


def ulp_error(ybits, exact) -> np.ndarray:
    """``|y - exact|`` in units of the BF16 ulp at ``exact`` (``2**(floor(log2|exact|) - 7)``,
    the subnormal ulp below 2**-126)."""
    exact = np.asarray(exact, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ex = np.maximum(np.floor(np.log2(np.abs(exact))), -126)
        return np.abs(_values(ybits) - exact) / np.exp2(ex - 7)


def measure(func, reference) -> dict:
    """Exhaustive accuracy of ``func`` (bits -> bits) against ``reference`` (bits -> float64).

    Returns ``max_ulp`` (over inputs whose exact result lies in the normal BF16 range
    ``[2**-126, max finite]``), ``correct`` / ``finite`` (count of finite inputs whose result is
    the correctly rounded one) and ``fraction``.
    """
    allbits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    got = func(allbits)
    exact = reference(allbits)
    finite = np.isfinite(_values(allbits))
    correct = (got == nearest_bf16(exact)) & finite
    mag = np.abs(exact)
    normal = finite & (mag >= 2.0 ** -126) & (mag <= 2.0 ** 128 * (1 - 2.0 ** -8))
    return {
        "max_ulp": float(ulp_error(got[normal], exact[normal]).max()),
        "correct": int(correct.sum()),
        "finite": int(finite.sum()),
        "fraction": float(correct.sum() / finite.sum()),
    }


if __name__ == "__main__":
    for name, fn, ref in (("exp", bf16_exp, exp_reference),
                          ("recip", bf16_recip, recip_reference)):
        r = measure(fn, ref)
        print(f"{name}: max {r['max_ulp']:.4f} ulp (normal outputs); {r['correct']}/"
              f"{r['finite']} finite inputs correctly rounded ({100 * r['fraction']:.3f} %)")
