"""rDXE KV cache layouts: where each K and V byte of a head lives, as memory images.

A tile has ``vacs`` VACs; each KV cache word holds ``lanes`` bytes. For a head of dimension
``dh`` and up to ``max_tokens`` tokens (:class:`~memwall.families.rdxe.config.RdxeConfig`):

* **K, both layouts (row by row).** Token ``t`` lives in VAC ``t % vacs``, word
  ``(t // vacs) * (dh // lanes) + i // lanes``, byte ``i % lanes``. A new token's K is
  produced spread over the VACs and broadcast on the GBUS to its owner, which writes it with
  byte enables (the irregular write). QK then reads one full word per VAC per cycle.
* **V, iWuR (column by column).** Dimension ``i`` lives in VAC ``i % vacs``, word
  ``v_base + (i // vacs) * (max_tokens // lanes) + t // lanes``, byte ``t % lanes``. The VAC
  that computes ``v[i]`` keeps it (a local byte write); P.V reads one full word (``lanes``
  tokens of one dimension) per VAC per cycle.
* **V, baseline (row by row, local).** VAC ``j`` writes its dimensions ``j + vacs*b`` of token
  ``t`` as one word at ``v_base + t``, byte ``b``: a regular word write, but P.V must gather
  ``lanes`` rows, one byte each, for every word it multiplies.

The K region starts at word 0; ``v_base`` is the first word after a K region sized for
``max_tokens`` tokens of ``max_head_dim`` (so the regions do not move with a head's ``dh``).
The images are ``(vacs, words, lanes)`` uint8 arrays; bytes never written are 0.
"""

from __future__ import annotations

import numpy as np

from memwall.families.rdxe.config import LAYOUTS, kv_words_needed, v_base

__all__ = ["LAYOUTS", "v_base", "kv_words_needed", "kv_image", "kv_bytes_used", "kv_occupancy",
           "kv_footprint"]

def kv_image(k, v, vacs: int, lanes: int, max_tokens: int, max_head_dim: int,
             layout: str, into: np.ndarray | None = None) -> np.ndarray:
    """The KV caches of a tile after writing tokens ``0 .. t-1`` of one head: ``k`` and ``v``
    are ``(t, dh)`` INT8; ``k`` may be None (only V written). ``into``: the image before the
    writes (else all zeros)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    v = np.asarray(v, np.int64)
    t, dh = v.shape
    words = kv_words_needed(vacs, lanes, max_tokens, max_head_dim, layout)
    image = np.zeros((vacs, words, lanes), dtype=np.uint8)
    if into is not None:
        keep = min(words, into.shape[1])
        image[:, :keep] = into[:, :keep]
    kw, vb = dh // lanes, v_base(vacs, lanes, max_tokens, max_head_dim)
    for tok in range(t):
        for i in range(dh):
            if k is not None:
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


def kv_occupancy(image: np.ndarray) -> dict:
    """Bytes and words of a KV image (``(vacs, words, lanes)``) that hold data: bytes not 0 and
    words with at least one such byte. 0 is a valid INT8 value, so write non-zero values to
    count what a write-back fills (:func:`kv_footprint` does)."""
    filled = np.asarray(image) != 0
    return {"bytes": int(filled.sum()), "words": int(filled.any(axis=2).sum())}


def kv_footprint(tokens: int, dh: int, kv_heads: int, vacs: int, lanes: int, max_tokens: int,
                 max_head_dim: int, layout: str) -> dict:
    """What ``kv_heads`` KV heads of ``tokens`` tokens occupy, measured on their images
    (:func:`kv_image`, the image the RTL's write-back produces), one image per KV head (a KV
    head is one tile group's cache; its query heads read it over VLINK): filled bytes, filled
    words, and the words the address map reserves (every image's words). Each head's K and V
    bytes are written non-zero (K 1..127, V -1..-127), so a byte written twice or never
    changes the count."""
    tags = (np.arange(tokens * dh).reshape(tokens, dh) + 1) % 127 + 1
    out = {"bytes": 0, "words": 0, "reserved_words": 0}
    for head in range(kv_heads):
        image = kv_image((tags + head) % 127 + 1, -((tags + 2 * head) % 127 + 1), vacs, lanes,
                         max_tokens, max_head_dim, layout)
        used = kv_occupancy(image)
        out["bytes"] += used["bytes"]
        out["words"] += used["words"]
        out["reserved_words"] += image.shape[0] * image.shape[1]
    return out
