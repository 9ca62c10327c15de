"""Serving requests on a ring of rDXE DXEs, on one clock.

Requests arrive at given cycles. *Token-level pipelining* (the rDXE ring, :func:`serve`): the
model's layers are split over the DXEs (:func:`layer_split`: as evenly as they go, 8 layers on 7
DXEs are one DXE of 2 and six of 1); a DXE's work for a token is its layers' cycles and MACs. A
token moves one DXE per step, every DXE working on a different token; a request's prompt tokens
enter back to back, each generated token when the previous one has left the ring (autoregression);
requests join and leave at token granularity; a step lasts as long as its slowest DXE; an empty
ring waits, idle, for the next arrival. *Padded batching* (``batch=B``): requests in arrival order,
``B`` to a batch; a batch starts when its last member has arrived and the previous batch has left;
every member is padded to the batch's longest prompt and longest output, and the batch's lanes
advance in lockstep, position by position, on the same ring (the most favourable reading of it:
``B >= dxes`` lanes keep the ring full; padding, waiting for members and the ring's drain at each
batch's end are what it loses). Both are measured as **MAC utilisation**: useful MACs (each
request's real tokens at their real contexts, every layer of the model once) over ``dxes`` x a
DXE's peak MACs a cycle x the cycles from the first arrival to the last token out. **DXE
occupancy** (busy DXE-cycles over ``dxes`` times those cycles) is reported beside it; it is not MAC
utilisation. With unequal layer counts the DXEs holding fewer layers idle part of every step
(:func:`layer_balance`: the busy share of a step's DXE-cycles when every layer takes the same
cycles).

:func:`padded_utilisation` is the token ratio of padded batching (its lane occupancy).
"""

from __future__ import annotations

import numpy as np

__all__ = ["PROMPT", "OUTPUT", "GAP", "requests", "layer_split", "layer_balance", "serve",
           "padded_utilisation"]

#: Defaults of :func:`requests` (ASSUMPTIONS: the paper gives no workload): prompt and output
#: tokens, uniform in these ranges, and the gap between arrivals, in its own units.
PROMPT = (16, 256)
OUTPUT = (8, 128)
GAP = (0, 64)


def requests(count: int, seed: int, prompt=PROMPT, output=OUTPUT, gap=GAP):
    """Seeded requests: arrival (in ``gap`` units), prompt tokens, output tokens."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.integers(gap[0], gap[1] + 1, count))
    return [(int(a), int(rng.integers(prompt[0], prompt[1] + 1)),
             int(rng.integers(output[0], output[1] + 1))) for a in arrivals]


def layer_split(layers: int, dxes: int) -> tuple[int, ...]:
    """Layers per DXE of ``layers`` split over ``dxes`` DXEs as evenly as they go, the larger
    shares first (8 over 7: ``(2, 1, 1, 1, 1, 1, 1)``). More DXEs than layers: one layer on each
    of ``layers`` DXEs (a DXE with no layer is not in the ring)."""
    if layers < 1 or dxes < 1:
        raise ValueError(f"layers and dxes must be >= 1, got {layers} and {dxes}")
    used = min(layers, dxes)
    base, extra = divmod(layers, used)
    return tuple(base + (d < extra) for d in range(used))


def layer_balance(split) -> float:
    """Layers over DXEs x the largest share: the most a step's DXE-cycles can be busy when
    every layer takes the same cycles (8 over 7: 8 / 14)."""
    return sum(split) / (len(split) * max(split))


def _pipeline(layer_cycles, layer_macs, split, reqs, start: int, lockstep: bool = False) -> dict:
    """The ring on one clock from cycle ``start``: ``reqs`` are (arrival cycle, prompt,
    output); ``layer_cycles[c]``, ``layer_macs[c]``: one layer's cycles and MACs for a token at
    context ``c``; ``split[d]``: the layers of DXE ``d``. A step lasts as long as its slowest
    DXE. A step's new token is the first ready request's (arrival order) or, with ``lockstep``,
    the ready request furthest behind (a batch's lanes advance position by position). Returns
    the end cycle, busy DXE-cycles, MACs and each request's end."""
    n, dxes = len(reqs), len(split)
    length = [p + o for _, p, o in reqs]
    next_token, ready_at, done = [0] * n, [0] * n, [0] * n
    slots = [None] * dxes                 # (request, context) per DXE
    t, step, busy, macs, finished, first = start, 0, 0, 0, 0, 0
    while finished < n:
        leaving = slots[-1]
        slots = [None] + slots[:-1]
        if leaving is not None:
            r, ctx = leaving
            if ctx + 1 == length[r]:
                done[r] = t
                finished += 1
            elif ctx + 1 >= reqs[r][1]:   # a generated token: the next one may now enter
                ready_at[r] = step
        if finished == n:
            break
        while True:
            chosen = None
            for r in range(first, n):     # first ready request (arrival order)
                if (next_token[r] < length[r] and ready_at[r] is not None
                        and ready_at[r] <= step and reqs[r][0] <= t):
                    if not lockstep:
                        chosen = r
                        break
                    if chosen is None or next_token[r] < next_token[chosen]:
                        chosen = r
            if chosen is not None or any(s is not None for s in slots):
                break
            t = max(t, min(reqs[r][0] for r in range(first, n) if next_token[r] < length[r]))
        if chosen is not None:
            ctx = next_token[chosen]
            slots[0] = (chosen, ctx)
            next_token[chosen] += 1
            ready_at[chosen] = step + 1 if ctx + 1 < reqs[chosen][1] else None
            while first < n and next_token[first] == length[first]:
                first += 1                # every token of it entered: skip it from now on
        work = [(split[d], slot[1] + 1) for d, slot in enumerate(slots) if slot is not None]
        busy += sum(k * layer_cycles[c] for k, c in work)
        macs += sum(k * layer_macs[c] for k, c in work)
        t += max(k * layer_cycles[c] for k, c in work)
        step += 1
    return {"end": t, "busy": busy, "macs": macs, "done": done}


def serve(layer_cycles, layer_macs, split, peak_per_dxe: int, reqs,
          batch: int | None = None) -> dict:
    """Serve ``reqs`` (arrival cycle, prompt, output; in arrival order) on ``len(split)`` DXEs
    holding ``split[d]`` layers each (:func:`layer_split`), by token-level pipelining
    (``batch`` None) or padded batching of ``batch`` requests (module docstring).
    ``layer_cycles[c]``, ``layer_macs[c]``: one layer's cycles and useful MACs for a token at
    context ``c``; ``peak_per_dxe``: MACs a cycle of one DXE. Returns MAC utilisation, DXE
    occupancy, the cycles, the useful MACs and each request's latency in cycles."""
    split = tuple(split)
    dxes = len(split)
    start = min(a for a, _, _ in reqs)
    if batch is None:
        r = _pipeline(layer_cycles, layer_macs, split, reqs, start)
        end, busy, useful, done = r["end"], r["busy"], r["macs"], r["done"]
    else:
        prefix = np.concatenate([[0], np.cumsum(layer_macs[1:])])   # one layer, tokens 1..c
        end, busy, useful, done = start, 0, 0, []
        for i in range(0, len(reqs), batch):
            members = reqs[i:i + batch]
            begin = max(end, max(a for a, _, _ in members))
            padded = (begin, max(p for _, p, _ in members), max(o for _, _, o in members))
            r = _pipeline(layer_cycles, layer_macs, split, [padded] * len(members), begin,
                          lockstep=True)
            end, busy = r["end"], busy + r["busy"]
            useful += sum(split) * int(sum(prefix[p + o] for _, p, o in members))
            done += r["done"]
    span = end - start
    return {"mac_utilisation": useful / (dxes * peak_per_dxe * span),
            "dxe_occupancy": busy / (dxes * span), "cycles": span, "macs": int(useful),
            "latency_cycles": [d - a for d, (a, _, _) in zip(done, reqs, strict=True)]}


def padded_utilisation(reqs, lanes: int) -> float:
    """Lane occupancy of padded batching: the requests' tokens over ``lanes`` x the padded
    tokens, batches of ``lanes`` in arrival order (a token ratio, not a utilisation in time)."""
    useful = padded = 0
    for i in range(0, len(reqs), lanes):
        batch = reqs[i:i + lanes]
        useful += sum(p + o for _, p, o in batch)
        padded += lanes * (max(p for _, p, _ in batch) + max(o for _, _, o in batch))
    return useful / padded
