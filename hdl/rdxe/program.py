"""Host side of an rDXE tile group: operations as commands and the data words they consume.

Each method appends one command (a dict for :func:`~memwall.hdl.rdxe.sequencer.command_layout`)
and, for loads, the words ``data_in`` must deliver, in order. The loop bounds, addresses and
factors are worked out here, so the sequencer only counts. Results come back in row order:
GEMV rows, QK tokens, P.V dimensions (``vacs`` per group, VAC ``j`` giving element
``group * vacs + j``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memwall.families.rdxe.config import RdxeConfig
from memwall.golden.rdxe import datapath as golden
from memwall.golden.rdxe.layout import v_base
from memwall.hdl.rdxe.dxt import DEST_NONE, DEST_SCORES
from memwall.hdl.rdxe.sequencer import OP_KV_WB, OP_LOAD_A, OP_LOAD_W, OP_MAC

__all__ = ["Program", "words_of", "ShapeError", "plan_rmsnorm_gemv", "plan_attention"]


def words_of(vector, lanes: int) -> list[int]:
    """INT8 vector -> ``lanes``-byte words (lane 0 in the low byte), zero-padded."""
    v = np.asarray(vector, dtype=np.int64).ravel()
    v = np.concatenate([v, np.zeros(-len(v) % lanes, np.int64)]) & 0xFF
    return [int.from_bytes(bytes(v[i:i + lanes].astype(np.uint8)), "little")
            for i in range(0, len(v), lanes)]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Program:
    cfg: RdxeConfig
    commands: list[dict] = field(default_factory=list)
    data: list[int] = field(default_factory=list)

    def _op_fields(self, **kw) -> dict:
        base = {"dest": DEST_NONE, "res_base": 0, "kv_v": 0, "iwur": 1, "token": 0, "dh": 0,
                "eps_sum": 0, "smant": 0, "sshift": 0, "nr_op": 0}
        base.update(kw)
        return base

    def _command(self, op: int, op_fields: dict | None = None, **kw) -> dict:
        cmd = {"op": op, "tile": 0, "kv": 0, "exp": 0, "gather": 0, "stats": 0, "fused": 0,
               "sequential": 0, "narrow": 1, "groups": 0, "beats": 0, "rows": 0, "tokens": 0,
               "a_base": 0, "g_base": 0, "w_base": 0, "gstride": 0, "rc_mant": 0,
               "rc_shift": 0, "op_fields": self._op_fields(**(op_fields or {}))}
        cmd.update(kw)
        self.commands.append(cmd)
        return cmd

    # -- loads ---------------------------------------------------------------------------------
    def load_a(self, tile: int, base: int, vector) -> None:
        words = words_of(vector, self.cfg.lanes)
        self._command(OP_LOAD_A, tile=tile, a_base=base, groups=len(words))
        self.data += words

    def load_w(self, tile: int, base: int, w) -> int:
        """Rows of ``w`` (n, d) into the weight memories for :meth:`gemv`; returns the words
        used per VAC."""
        cfg = self.cfg
        w = np.asarray(w, np.int64)
        n, d = w.shape
        c = _ceil(d, cfg.lanes)
        groups = _ceil(n, cfg.vacs)
        for g in range(groups):
            for k in range(c):
                for j in range(cfg.vacs):
                    row = g * cfg.vacs + j
                    chunk = w[row, k * cfg.lanes:(k + 1) * cfg.lanes] if row < n else []
                    self.data += words_of(np.concatenate([chunk, np.zeros(cfg.lanes
                                                                           - len(chunk))]),
                                          cfg.lanes)
        self._command(OP_LOAD_W, tile=tile, w_base=base, groups=groups * c)
        return groups * c

    # -- MAC operations ------------------------------------------------------------------------
    def gemv(self, n: int, d: int, a_base: int, w_base: int, rc: tuple, narrow: int = 1,
             dest: int = DEST_NONE, res_base: int = 0) -> None:
        c = _ceil(d, self.cfg.lanes)
        self._command(OP_MAC, groups=_ceil(n, self.cfg.vacs), beats=c, rows=n, a_base=a_base,
                      w_base=w_base, gstride=c, rc_mant=int(rc[0]), rc_shift=int(rc[1]),
                      narrow=narrow, op_fields={"dest": dest, "res_base": res_base})

    def rmsnorm_gemv(self, n: int, d: int, a_base: int, w_base: int, eps_sum: int,
                     out_static: tuple, mode: str = "fused", g_base: int = 0,
                     norm_static: tuple | None = None, out_bits: int = 8) -> None:
        """Fused: ``w_base`` holds ``W'``, the VE folds ``out_static`` into its RC. Sequential:
        ``w_base`` holds ``W``, the gain vector is at ``g_base``, the VE folds ``norm_static``
        and the GEMV applies ``out_static``. ``out_bits``: the outputs' width, 8 (INT8) or 16
        (INT16, for weights whose per-row scales the host applies)."""
        if out_bits not in (8, 16):
            raise ValueError(f"out_bits must be 8 or 16, got {out_bits!r}")
        c = _ceil(d, self.cfg.lanes)
        fused = mode == "fused"
        static = out_static if fused else norm_static
        rc = (0, 0) if fused else golden.static_rc(out_static)
        self._command(OP_MAC, groups=_ceil(n, self.cfg.vacs), beats=c, rows=n, a_base=a_base,
                      g_base=g_base, w_base=w_base, gstride=c, stats=1, fused=int(fused),
                      sequential=int(not fused), rc_mant=int(rc[0]), rc_shift=int(rc[1]),
                      narrow=int(out_bits == 8),
                      op_fields={"eps_sum": int(eps_sum), "smant": int(static[0]),
                                 "sshift": int(static[1]), "nr_op": 1})

    def qk(self, tokens: int, dh: int, a_base: int, score_rc: tuple) -> None:
        kw = dh // self.cfg.lanes
        self._command(OP_MAC, kv=1, groups=_ceil(tokens, self.cfg.vacs), beats=kw, rows=tokens,
                      a_base=a_base, w_base=0, gstride=kw, rc_mant=int(score_rc[0]),
                      rc_shift=int(score_rc[1]), narrow=0,
                      op_fields={"dest": DEST_SCORES})

    def pv(self, tokens: int, dh: int, out_static: tuple, mode: str = "fused",
           layout: str = "iwur") -> None:
        cfg = self.cfg
        fused = mode == "fused"
        static = out_static if fused else golden.static_factor(127.0)
        rc = (0, 0) if fused else golden.static_rc(out_static)
        iwur = layout == "iwur"
        self._command(OP_MAC, kv=1, exp=1, gather=int(not iwur), groups=dh // cfg.vacs,
                      beats=_ceil(tokens, cfg.lanes), rows=dh, tokens=tokens,
                      w_base=v_base(cfg.vacs, cfg.lanes, cfg.max_tokens, cfg.max_head_dim),
                      gstride=cfg.max_tokens // cfg.lanes if iwur else 0, stats=1,
                      fused=int(fused), sequential=int(not fused), rc_mant=int(rc[0]),
                      rc_shift=int(rc[1]),
                      op_fields={"smant": int(static[0]), "sshift": int(static[1]),
                                 "nr_op": 0})

    def kv_write(self, token: int, dh: int, a_base: int, value: bool,
                 layout: str = "iwur") -> None:
        """The ``dh`` bytes at ``abuf[a_base]`` as K (``value`` false) or V of ``token``."""
        self._command(OP_KV_WB, a_base=a_base,
                      op_fields={"kv_v": int(value), "iwur": int(layout == "iwur"),
                                 "token": token, "dh": dh})


# --- whole operations on a tile group ---------------------------------------------------------

class ShapeError(ValueError):
    """An operation that does not fit the config; the message names the limit."""


def _fit(ok: bool, message: str) -> None:
    if not ok:
        raise ShapeError(message)


def _sequential_built(cfg: RdxeConfig, mode: str) -> None:
    _fit(mode == "fused" or cfg.sequential_baseline,
         f"the sequential mode needs the config's sequential_baseline hardware ({cfg.name} is "
         "built without it)")


def plan_rmsnorm_gemv(cfg: RdxeConfig, x, w, eps_sum: int, out_static: tuple,
                      mode: str = "fused", g=None, norm_static: tuple | None = None,
                      out_bits: int = 8):
    """A GEMV with RMSNorm on the group: the rows split over the tiles (each tile runs the
    same statistics on the same ``x``), ``out_bits`` wide outputs
    (:meth:`Program.rmsnorm_gemv`). Returns the program and ``assemble(results) -> (y, acc)``
    in row order."""
    x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
    n, d = w.shape
    lanes, vacs, tiles = cfg.lanes, cfg.vacs, cfg.gqa_group
    c = _ceil(d, lanes)
    per_tile = _ceil(n, tiles)
    _fit(2 * c <= cfg.abuf_words, f"d = {d}: x and gamma need {2 * c} words of the activation "
         f"buffer; the config has abuf_words = {cfg.abuf_words} ({cfg.abuf_words * lanes // 2} "
         "elements each)")
    _fit(_ceil(per_tile, vacs) * c <= cfg.wmem_words,
         f"w ({n}, {d}): {per_tile} rows per tile need {_ceil(per_tile, vacs) * c} weight words "
         f"per VAC; the config has wmem_words = {cfg.wmem_words}")
    _sequential_built(cfg, mode)
    _fit(mode == "fused" or c <= cfg.fbuf_words,
         f"d = {d}: the sequential mode needs {c} feature-buffer words; the config has "
         f"fbuf_words = {cfg.fbuf_words}")
    prog = Program(cfg)
    for t in range(tiles):
        prog.load_a(t, 0, x)
        if g is not None:
            prog.load_a(t, c, g)
        rows = w[t * per_tile:(t + 1) * per_tile]
        prog.load_w(t, 0, np.concatenate([rows, np.zeros((per_tile - len(rows), d), np.int64)]))
    prog.rmsnorm_gemv(per_tile, d, 0, 0, eps_sum, out_static, mode, c, norm_static, out_bits)

    def assemble(results):
        last = results[-1]
        y = np.concatenate([last["values"][t] for t in range(tiles)])[:n]
        acc = np.concatenate([last["accs"][t] for t in range(tiles)])[:n]
        return np.asarray(y, np.int64), np.asarray(acc, np.int64)
    return prog, assemble


def _per_head(factor, kv_heads: int, name: str) -> list[tuple]:
    """``factor``: one ``(mant, shift)`` pair for every KV head, or a list of one per head."""
    if len(factor) and isinstance(factor[0], (tuple, list, np.ndarray)):
        _fit(len(factor) == kv_heads, f"{name}: {len(factor)} factors for {kv_heads} KV heads")
        return [tuple(f) for f in factor]
    return [tuple(factor)] * kv_heads


def plan_attention(cfg: RdxeConfig, q, k, v, score_rc, out_static,
                   mode: str = "fused", layout: str = "iwur"):
    """Decode attention on the group: per KV head, its tokens written to tile 0's KV caches,
    then its query heads ``gqa_group`` at a time (one per tile, sharing the cache). Returns
    the program and ``assemble(results) -> (o, acc)``, ``(heads, dh)`` each.

    ``score_rc`` and ``out_static``: one ``(mant, shift)`` factor, or one per KV head (K and
    V quantised per head: the factors are per command, so they cost no hardware)."""
    q, k, v = (np.asarray(a, np.int64) for a in (q, k, v))
    heads, dh = q.shape
    tokens, kv_heads = k.shape[0], k.shape[1]
    score_rcs = _per_head(score_rc, kv_heads, "score_rc")
    out_statics = _per_head(out_static, kv_heads, "out_static")
    lanes, vacs, tiles = cfg.lanes, cfg.vacs, cfg.gqa_group
    _fit(dh <= cfg.max_head_dim and dh % lanes == 0 and dh % vacs == 0,
         f"head dimension {dh}: must be at most max_head_dim ({cfg.max_head_dim}) and a "
         f"multiple of lanes ({lanes}) and vacs ({vacs})")
    _fit(tokens <= cfg.max_tokens, f"{tokens} tokens: the config holds max_tokens = "
         f"{cfg.max_tokens}")
    words = dh // lanes
    _fit(2 * words <= cfg.abuf_words, f"head dimension {dh}: q and a K/V row need {2 * words} "
         f"activation-buffer words; the config has abuf_words = {cfg.abuf_words}")
    _sequential_built(cfg, mode)
    _fit(mode == "fused" or -(-tokens // lanes) <= cfg.fbuf_words,
         f"{tokens} tokens: the sequential mode needs {-(-tokens // lanes)} feature-buffer "
         f"words; the config has fbuf_words = {cfg.fbuf_words}")
    group = heads // kv_heads
    prog = Program(cfg)
    order = []                     # (command index, [query head per tile or None])
    for kh in range(kv_heads):
        for tok in range(tokens):
            prog.load_a(0, words, k[tok, kh])
            prog.kv_write(tok, dh, words, value=False)
            prog.load_a(0, words, v[tok, kh])
            prog.kv_write(tok, dh, words, value=True, layout=layout)
        mine = list(range(kh * group, (kh + 1) * group))
        for start in range(0, group, tiles):
            chunk = mine[start:start + tiles]
            for t in range(tiles):
                prog.load_a(t, 0, q[chunk[t]] if t < len(chunk) else np.zeros(dh, np.int64))
            prog.qk(tokens, dh, 0, score_rcs[kh])
            prog.pv(tokens, dh, out_statics[kh], mode, layout)
            order.append((len(prog.commands) - 1, chunk))

    def assemble(results):
        o = np.zeros((heads, dh), np.int64)
        acc = np.zeros((heads, dh), np.int64)
        for index, chunk in order:
            for t, h in enumerate(chunk):
                o[h] = results[index]["values"][t]
                acc[h] = results[index]["accs"][t]
        return o, acc
    return prog, assemble
