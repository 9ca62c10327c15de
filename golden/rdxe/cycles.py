"""rDXE cycle model: the sequencer's cycles per command, exactly, and a decoder layer on a DXE.

:func:`command_cycles` counts what ``hdl/rdxe/sequencer.py`` does (no stalls), from the cycle a
command is taken to the first cycle the group is idle again with its last result read (a
reader taking one result a cycle): the testbench checks it equals the RTL on every MAC and
write-back command of its session. Loads are paced by the host's stream and are not modelled.

Per MAC command with ``G`` groups of ``B`` beats (``beats * lanes`` with the baseline layout's
gathers) and ``P = max(0, vacs - B)`` idle cycles between groups:

* plain: the last beat issues at ``s = G*B + (G-1)*P``;
* fused: the first group's last beat at ``B``, the Newton–Raphson start 3 cycles later, its RC
  seen ``NR + 1`` cycles after that (``NR`` = 7 for ``1/x``, 9 for ``1/sqrt(x)``): ``r = B + 4 +
  NR``; then ``vacs`` idle cycles and the other groups: ``s = r + vacs + (G-1)*B + (G-2)*P``;
* sequential: a statistics pass of ``beats`` words, the same 3 + NR + 1 cycles (``r = beats + 4
  + NR``), the normalisation pass (``beats``), 1 idle cycle, then the plain MAC pass:
  ``s = r + beats + 1 + G*B + (G-1)*P``.

The last result leaves VAC ``j`` (the last group's last row) ``6 + j`` cycles after the last
beat, and the command ends 4 cycles after that: ``s + j + 10``. A fused command of one group
ends ``r + j + 7`` (its results wait for the RC). A K/V write-back moves 4 bytes a cycle:
``ceil(dh / 4) + 2``.
"""

from __future__ import annotations

__all__ = ["NR_LATENCY", "command_cycles", "mac_cycles", "kv_write_cycles"]

#: Newton–Raphson cycles from start to done: ``1/x`` (op 0) and ``1/sqrt(x)`` (op 1); equal to
#: ``hdl.common.fixed.NewtonRaphson.latency``.
NR_LATENCY = {0: 7, 1: 9}
_TAIL = 10          # last beat -> last result (6 + j) -> command idle (+4)
_GBUS_BYTES = 4


def mac_cycles(vacs: int, lanes: int, groups: int, beats: int, rows: int, *, gather=False,
               fused=False, sequential=False, invsqrt=False) -> int:
    """Cycles of one MAC command (see the module docstring)."""
    per_group = beats * (lanes if gather else 1)
    pitch = max(0, vacs - per_group)
    last_vac = rows - (groups - 1) * vacs - 1
    nr = NR_LATENCY[int(invsqrt)]
    if sequential:
        rc_seen = beats + 4 + nr
        last = rc_seen + beats + 1 + groups * per_group + (groups - 1) * pitch
    elif fused:
        rc_seen = per_group + 4 + nr
        if groups == 1:
            return rc_seen + last_vac + 7
        last = rc_seen + vacs + (groups - 1) * per_group + (groups - 2) * pitch
    else:
        last = groups * per_group + (groups - 1) * pitch
    return last + last_vac + _TAIL


def kv_write_cycles(dh: int) -> int:
    return -(-dh // _GBUS_BYTES) + 2


def command_cycles(vacs: int, lanes: int, command: dict) -> int | None:
    """Cycles of a command dict (``hdl.rdxe.program`` form); None for loads."""
    op = command["op"]
    if op == 2:
        return kv_write_cycles(command["op_fields"]["dh"])
    if op != 3:
        return None
    return mac_cycles(vacs, lanes, command["groups"], command["beats"], command["rows"],
                      gather=bool(command["gather"]), fused=bool(command["fused"]),
                      sequential=bool(command["sequential"]),
                      invsqrt=bool(command["op_fields"]["nr_op"]))
