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
from memwall.golden import rdxe as golden
from memwall.golden.rdxe_layout import v_base
from memwall.hdl.rdxe.config import RdxeConfig
from memwall.hdl.rdxe.dxt import DEST_NONE, DEST_SCORES
from memwall.hdl.rdxe.sequencer import OP_KV_WB, OP_LOAD_A, OP_LOAD_W, OP_MAC

__all__ = ["Program", "words_of"]


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
                     norm_static: tuple | None = None) -> None:
        """Fused: ``w_base`` holds ``W'``, the VE folds ``out_static`` into its RC. Sequential:
        ``w_base`` holds ``W``, the gain vector is at ``g_base``, the VE folds ``norm_static``
        and the GEMV applies ``out_static``."""
        c = _ceil(d, self.cfg.lanes)
        fused = mode == "fused"
        static = out_static if fused else norm_static
        rc = (0, 0) if fused else golden.static_rc(out_static)
        self._command(OP_MAC, groups=_ceil(n, self.cfg.vacs), beats=c, rows=n, a_base=a_base,
                      g_base=g_base, w_base=w_base, gstride=c, stats=1, fused=int(fused),
                      sequential=int(not fused), rc_mant=int(rc[0]), rc_shift=int(rc[1]),
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
