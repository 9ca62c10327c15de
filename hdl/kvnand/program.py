"""Page commands for the KVNAND plane PE: the input-vector words, scales, command and page
beats of one operation, and its expected results from :mod:`memwall.golden.kvnand.pe`.

Input-vector layouts (``n`` lanes a word, lane ``k = g*J + j``, ``J = n / G``):

* GEMV: word ``s`` holds ``x[s*n + k]``;
* LOGIT: word ``s`` holds ``q[g, s*J + j]``;
* ATTEND: word ``t`` holds ``p[t, g]`` in every lane of head ``g``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memwall.families.kvnand.config import KvnandConfig
from memwall.golden.kvnand import pe as golden
from memwall.hdl.kvnand.pe import MODE_CODES

__all__ = ["PageCommand", "ShapeError", "plan_page", "command_cycles"]


class ShapeError(ValueError):
    """An operation the config's PE cannot run as given."""


def _fit(ok: bool, message: str) -> None:
    if not ok:
        raise ShapeError(message)


@dataclass
class PageCommand:
    mode: str
    command: dict
    beats: list[int]
    vec: list[int]
    scales: list[int] = field(default_factory=list)
    expect: np.ndarray | None = None     # FP32 bits in output order (None: nothing out)
    acc: np.ndarray | None = None        # ATTEND: the sums after this page


def _lane_words(values: np.ndarray) -> list[int]:
    """Rows of 16-bit codes -> words, lane 0 in the low bits."""
    v = (np.asarray(values).astype(np.int64) & 0xFFFF).astype(np.uint64)
    return [int(sum(int(x) << (16 * i) for i, x in enumerate(row))) for row in v]


def plan_page(cfg: KvnandConfig, mode: str, codes, width: int, inputs, scales=None, *,
              clear: bool = True, emit: bool = True, acc=None, vec_base: int = 0
              ) -> PageCommand:
    """One page command. ``codes``: the page's element codes (``units * width``, BF16 bits or
    integers of the mode's kind); ``inputs``: GEMV ``x`` (width), LOGIT ``q`` (G, width),
    ATTEND ``p`` (units, G), as 16-bit codes of the input kind; ``scales``: BF16 bits per
    group for a scaled page; ``acc``: ATTEND's sums so far (FP32 bits, ``(G, width)``)."""
    n = cfg.n_fmac
    kind, in_kind = golden.page_kind(cfg.fmt, mode), golden.input_kind(cfg.fmt)
    codes = np.asarray(codes).ravel()
    _fit(width >= 1 and codes.size % width == 0 and codes.size,
         f"the page's {codes.size} elements are not whole rows of {width}")
    units = codes.size // width
    _fit(codes.size <= cfg.page_elements(kind),
         f"{codes.size} {kind} elements exceed a page ({cfg.page_elements(kind)})")
    inputs = np.asarray(inputs)
    heads = 1 if mode == "gemv" else inputs.shape[0 if mode == "logit" else 1]
    _fit(heads >= 1 and not heads & (heads - 1) and heads <= cfg.max_heads,
         f"heads {heads}: a power of two up to max_heads ({cfg.max_heads})")
    lanes = n // heads
    if mode == "gemv":
        _fit(width % n == 0, f"cols {width}: a multiple of n_fmac ({n})")
        _fit(inputs.shape == (width,), f"x must have shape ({width},), got {inputs.shape}")
        words = inputs.reshape(width // n, n)
    elif mode == "logit":
        _fit(width % lanes == 0 and width >= n,
             f"d {width}: at least n_fmac ({n}) and a multiple of n_fmac / heads ({lanes})")
        _fit(inputs.shape == (heads, width), f"q must have shape (G, {width})")
        words = inputs.reshape(heads, width // lanes, lanes).transpose(1, 0, 2) \
            .reshape(width // lanes, n)
    else:
        _fit(width % lanes == 0 and width <= cfg.max_d,
             f"d {width}: a multiple of n_fmac / heads ({lanes}), at most max_d ({cfg.max_d})")
        _fit(inputs.shape == (units, heads), f"p must have shape ({units}, G)")
        words = np.repeat(inputs, lanes, axis=1)
    _fit(vec_base + len(words) <= cfg.vec_words,
         f"{len(words)} input words from {vec_base} exceed vec_words ({cfg.vec_words})")

    page = golden.pack_page(codes, kind, cfg.page_bytes)
    beat_bytes = cfg.beat_bits // 8
    used = -(-codes.size * golden.elem_bits(kind) // 8)
    beats = [int.from_bytes(page[b:b + beat_bytes].tobytes(), "little")
             for b in range(0, -(-used // beat_bytes) * beat_bytes, beat_bytes)]
    scaled = golden.scaled(kind)
    if scaled:
        groups = -(-codes.size // cfg.group)
        _fit(scales is not None and len(scales) >= groups,
             f"a {kind} page needs {groups} scales (one per {cfg.group} elements)")
        scales = [int(v) for v in np.asarray(scales, np.uint16)[:groups]]
    command = {"mode": MODE_CODES[mode], "units": units, "width": width,
               "heads_log2": heads.bit_length() - 1, "clear": int(clear), "emit": int(emit),
               "vec_base": vec_base}
    a32 = golden.page_fp32(codes, kind, scales, cfg.group).reshape(units, width)
    b32 = golden.input_fp32(inputs, in_kind)
    out = PageCommand(mode, command, beats, _lane_words(words), scales or [])
    if mode == "gemv":
        out.expect = golden.gemv(a32, b32, n)
    elif mode == "logit":
        out.expect = golden.logit(a32, b32, n).ravel()
    else:
        out.acc = golden.attend(a32, b32, n, None if clear else acc)
        out.expect = out.acc.ravel() if emit else None
    return out


def command_cycles(cfg: KvnandConfig, cmd: PageCommand, latency: int) -> int:
    """Cycles of a command from its acceptance to the PE's next ``cmd.ready`` when beats and
    the result stream never wait: :func:`memwall.golden.kvnand.pe.page_cycles`."""
    c = cmd.command
    return golden.page_cycles(cmd.mode, c["units"], c["width"], 1 << c["heads_log2"],
                              cfg.n_fmac, latency, bool(c["emit"]))
