"""rDXE KV cache layouts: where each K and V byte of a head lives, as memory images.

A tile has ``vacs`` VACs; each KV cache word holds ``lanes`` bytes. For a head of dimension
``dh`` and up to ``max_tokens`` tokens (:class:`~memwall.hdl.rdxe.config.RdxeConfig`):

* **K, both layouts (row by row).** Token ``t`` lives in VAC ``t % vacs``, word
  ``k_base + (t // vacs) * (dh // lanes) + i // lanes``, byte ``i % lanes``. A new token's K is
  produced spread over the VACs and broadcast on the GBUS to its owner, which writes it with
  byte enables (the irregular write). QK then reads one full word per VAC per cycle.
* **V, iWuR (column by column).** Dimension ``i`` lives in VAC ``i % vacs``, word
  ``v_base + (i // vacs) * (max_tokens // lanes) + t // lanes``, byte ``t % lanes``. The VAC
  that computes ``v[i]`` keeps it (a local byte write); P.V reads one full word (``lanes``
  tokens of one dimension) per VAC per cycle.
* **V, baseline (row by row, local).** VAC ``j`` writes its dimensions ``j + vacs*b`` of token
  ``t`` as one word at ``v_base + t``, byte ``b``: a regular word write, but P.V must gather
  ``lanes`` rows, one byte each, for every word it multiplies.

``k_base = 0`` and ``v_base`` is the first word after the K region of ``max_tokens`` tokens.
The images are ``(vacs, words, lanes)`` uint8 arrays; bytes never written are 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LAYOUTS", "k_words", "v_base", "kv_words_needed", "kv_image", "kv_bytes_used"]

LAYOUTS = ("iwur", "baseline")


def k_words(vacs: int, lanes: int, max_tokens: int, dh: int) -> int:
    """Words of one VAC's K region."""
    return -(-max_tokens // vacs) * (dh // lanes)


def v_base(vacs: int, lanes: int, max_tokens: int, dh: int) -> int:
    return k_words(vacs, lanes, max_tokens, dh)


def kv_words_needed(vacs: int, lanes: int, max_tokens: int, dh: int, layout: str) -> int:
    """KV cache words per VAC for one head of ``max_tokens`` tokens."""
    v_words = (dh // vacs) * (max_tokens // lanes) if layout == "iwur" else max_tokens
    return k_words(vacs, lanes, max_tokens, dh) + v_words


def kv_image(k, v, vacs: int, lanes: int, max_tokens: int, layout: str) -> np.ndarray:
    """The KV caches of a tile after writing tokens ``0 .. t-1`` of one head: ``k`` and ``v``
    are ``(t, dh)`` INT8."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    k, v = np.asarray(k, np.int64), np.asarray(v, np.int64)
    t, dh = k.shape
    words = kv_words_needed(vacs, lanes, max_tokens, dh, layout)
    image = np.zeros((vacs, words, lanes), dtype=np.uint8)
    kw, vb = dh // lanes, v_base(vacs, lanes, max_tokens, dh)
    for tok in range(t):
        for i in range(dh):
            image[tok % vacs, (tok // vacs) * kw + i // lanes, i % lanes] = k[tok, i] & 0xFF
            if layout == "iwur":
                word = vb + (i // vacs) * (max_tokens // lanes) + tok // lanes
                image[i % vacs, word, tok % lanes] = v[tok, i] & 0xFF
            else:
                image[i % vacs, vb + tok, i // vacs] = v[tok, i] & 0xFF
    return image


def kv_bytes_used(t: int, dh: int, kv_heads: int) -> int:
    """KV bytes a tile group holds for ``t`` tokens: K and V of each KV head, INT8. With GQA the
    group's tiles share their KV heads (``kv_heads = heads / group``)."""
    return 2 * t * dh * kv_heads
