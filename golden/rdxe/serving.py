"""Serving requests on a ring of rDXE DXEs, on one clock.

Requests arrive at given cycles. *Token-level pipelining* (the rDXE ring, :func:`serve`):
``dxes`` DXEs hold ``layers / dxes`` layers each; a token moves one DXE per step, every DXE
working on a different token; a request's prompt tokens enter back to back, each generated
token when the previous one has left the ring (autoregression); requests join and leave at
token granularity; a step lasts as long as its slowest DXE; an empty ring waits, idle, for the
next arrival. *Padded batching* (``batch=B``): requests in arrival order, ``B`` to a batch; a
batch starts when its last member has arrived and the previous batch has left; every member is
padded to the batch's longest prompt and longest output, and the batch's lanes advance in
lockstep, position by position, on the same ring (the most favourable reading of it: ``B >=
dxes`` lanes keep the ring full; padding, waiting for members and the ring's drain at each
batch's end are what it loses). Both are measured as **MAC utilisation**: useful MACs (each
request's real tokens at their real contexts) over ``dxes`` x a DXE's peak MACs a cycle x the
cycles from the first arrival to the last token out. **DXE occupancy** (busy DXE-cycles over
``dxes`` times those cycles) is reported beside it; it is not MAC utilisation.

:func:`ring` and :func:`padded_utilisation` are the step-based model and the token ratio the
report used before (kept: the CLI's tests use them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["requests", "ring", "serve", "padded_utilisation"]


def requests(count: int, seed: int, prompt=(16, 256), output=(8, 128), gap=(0, 64)):
    """Seeded requests: arrival (in ``gap`` units), prompt tokens, output tokens."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.integers(gap[0], gap[1] + 1, count))
    return [(int(a), int(rng.integers(prompt[0], prompt[1] + 1)),
             int(rng.integers(output[0], output[1] + 1))) for a in arrivals]


def ring(stage_cycles, dxes: int, reqs) -> dict:
    """Token-level pipeline over ``dxes`` DXEs, arrivals in steps, an empty step lasting no
    cycles. ``stage_cycles(t)``: one DXE's cycles for a token at context ``t``. Returns DXE
    occupancy (``utilisation``), steps, cycles and per-request latency in cycles."""
    n = len(reqs)
    next_token = [0] * n                  # tokens of the request already entered
    ready_at = [a for a, _, _ in reqs]    # step at which its next token may enter
    done_at = [None] * n
    slots = [None] * dxes                 # (request, context) per DXE
    step, work, t_now = 0, 0, 0
    finished = 0
    step_start = []                       # cycle at which each step starts
    while finished < n:
        leaving = slots[-1]
        slots = [None] + slots[:-1]
        if leaving is not None:
            r, ctx = leaving
            p, o = reqs[r][1], reqs[r][2]
            if ctx + 1 == p + o:
                done_at[r] = step
                finished += 1
            elif ctx + 1 >= p:            # a generated token: the next one may now enter
                ready_at[r] = step
        for r in range(n):                # first ready request (arrival order)
            p, o = reqs[r][1], reqs[r][2]
            if next_token[r] < p + o and ready_at[r] is not None and ready_at[r] <= step:
                ctx = next_token[r]
                slots[0] = (r, ctx)
                next_token[r] += 1
                # Prompt tokens follow each other; a generated token waits for this one.
                ready_at[r] = step + 1 if ctx + 1 < p else None
                break
        times = [stage_cycles(slot[1] + 1) for slot in slots if slot is not None]
        step_start.append(t_now)
        work += sum(times)
        t_now += max(times, default=0)    # an empty ring waits a step of no cycles
        step += 1
        if step > 10_000_000:
            raise RuntimeError("ring simulation does not finish")
    latency = [step_start[min(done_at[r], len(step_start) - 1)]
               - step_start[min(reqs[r][0], len(step_start) - 1)] for r in range(n)]
    return {"utilisation": work / (t_now * dxes) if t_now else 0.0, "steps": step,
            "cycles": t_now, "latency_cycles": latency}


def _pipeline(stage_cycles, stage_macs, dxes: int, reqs, start: int,
              lockstep: bool = False) -> dict:
    """The ring on one clock from cycle ``start``: ``reqs`` are (arrival cycle, prompt,
    output); ``stage_cycles[c]``, ``stage_macs[c]``: one DXE's cycles and MACs for a token at
    context ``c``. A step's new token is the first ready request's (arrival order) or, with
    ``lockstep``, the ready request furthest behind (a batch's lanes advance position by
    position). Returns the end cycle, busy DXE-cycles, MACs and each request's end."""
    n = len(reqs)
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
        occupied = [slot[1] + 1 for slot in slots if slot is not None]
        busy += sum(stage_cycles[c] for c in occupied)
        macs += sum(stage_macs[c] for c in occupied)
        t += max(stage_cycles[c] for c in occupied)
        step += 1
    return {"end": t, "busy": busy, "macs": macs, "done": done}


def serve(stage_cycles, stage_macs, dxes: int, peak_per_dxe: int, reqs,
          batch: int | None = None) -> dict:
    """Serve ``reqs`` (arrival cycle, prompt, output; in arrival order) on ``dxes`` DXEs by
    token-level pipelining (``batch`` None) or padded batching of ``batch`` requests (module
    docstring). ``peak_per_dxe``: MACs a cycle of one DXE. Returns MAC utilisation, DXE
    occupancy, the cycles and each request's latency in cycles."""
    start = min(a for a, _, _ in reqs)
    if batch is None:
        r = _pipeline(stage_cycles, stage_macs, dxes, reqs, start)
        end, busy, useful, done = r["end"], r["busy"], r["macs"], r["done"]
    else:
        prefix = np.concatenate([[0], np.cumsum(stage_macs[1:])])   # MACs of tokens 1..c
        end, busy, useful, done = start, 0, 0, []
        for i in range(0, len(reqs), batch):
            members = reqs[i:i + batch]
            begin = max(end, max(a for a, _, _ in members))
            padded = (begin, max(p for _, p, _ in members), max(o for _, _, o in members))
            r = _pipeline(stage_cycles, stage_macs, dxes, [padded] * len(members), begin,
                          lockstep=True)
            end, busy = r["end"], busy + r["busy"]
            useful += dxes * int(sum(prefix[p + o] for _, p, o in members))
            done += r["done"]
    span = end - start
    return {"mac_utilisation": useful / (dxes * peak_per_dxe * span),
            "dxe_occupancy": busy / (dxes * span), "cycles": span,
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
