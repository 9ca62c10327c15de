"""Behavioural eDRAM for the testbenches: SHIELD's banks (:class:`EdramBank`) and the eDRAM PIM
macro (:class:`PimMacro`), on one cell store (:class:`EdramCells`).

One :class:`EdramBank` per bank (``standard``, ``relaxed``, ``refreshless``) samples
``<bank>_row/_col/_we/_re/_wdata/_ref`` at each rising edge and drives ``<bank>_rdata`` after it
(synchronous read: the field is on ``rdata`` in the cycle after ``re``).

Retention: every cell remembers the cycle it was last restored (a write restores the written
cell, a refresh the whole row; a read restores nothing). When a cell is read or refreshed and the
time since its restore exceeds the bank's guaranteed retention (``T_std`` for the standard bank,
``T_rel`` for the relaxed bank, none for the refresh-less bank), its bits fail with the golden
retention model: a bit has failed by age ``a`` with probability ``ber(cfg, bank, a_us)``. Failed
bits read inverted and stay failed until the next restore, and a refresh writes the corrupted
value back, as real eDRAM does. When a cell is observed again without a restore in between, each
bit still intact fails with the conditional probability ``(ber(a2) - ber(a1)) / (1 - ber(a1))``,
so the chance that a bit reads wrong at age ``a`` is ``ber(a)`` however often it was looked at.

Bookkeeping for the checks: per-row refresh times, and for every cell that holds live data (written
and not yet killed by the testbench's RELEASE) the longest time it went without a restore.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

__all__ = ["EdramCells", "EdramBank", "PimMacro"]


class EdramCells:
    """What every behavioural eDRAM model here shares: a value and the cycle of its last
    restore per cell (``None``: never written), the ports of one macro (``<prefix>_<port>``,
    ``rdata`` driven low until the first read), and a log of illegal port use."""

    def __init__(self, dut, prefix: str, ports: tuple[str, ...], cells: int):
        self.value = [0] * cells
        self.restored: list[int | None] = [None] * cells
        self.protocol: list[str] = []
        self._port = {p: getattr(dut, f"{prefix}_{p}") for p in ports}
        self._port["rdata"].value = 0

    def age(self, addr: int, now: int) -> int | None:
        """Cycles since ``addr`` was last restored (``None``: it holds no data)."""
        restored = self.restored[addr]
        return None if restored is None else now - restored


class EdramBank(EdramCells):
    """One eDRAM macro behind the ``<name>_*`` ports of a :class:`ShieldController`.

    Parameters
    ----------
    dut : cocotb handle
        The controller top.
    name : str
        ``standard``, ``relaxed`` or ``refreshless``.
    cfg : ShieldConfig
        Geometry (rows, ``row_words``, field widths), intervals and clock.
    ber : callable(bank, elapsed_us) -> float
        Retention model (the golden ``ber`` bound to the config).
    rng : random.Random
        Seeded source of the bit failures.
    """

    def __init__(self, dut, name: str, cfg, ber: Callable[[str, float], float],
                 rng: random.Random):
        self.name = name
        self.rows = cfg.bank_rows[name]
        self.row_words = cfg.row_words
        self.bits = cfg.hi_bits if name == "standard" else cfg.lo_bits
        self.refreshed = name != "refreshless"
        # Guaranteed retention in cycles; None: no guarantee (the refresh-less bank).
        self.retention = {"standard": cfg.t_std_cycles, "relaxed": cfg.t_rel_cycles}.get(name)
        self.us_per_cycle = 1.0 / cfg.clock_mhz
        self._ber = ber
        self._ber_cache: dict[int, float] = {}
        self.rng = rng
        size = self.rows * self.row_words
        super().__init__(dut, name, ("row", "col", "we", "re", "wdata", "rdata"), size)
        self.seen = [0] * size          # age (cycles) at the last decay evaluation since restore
        self.failed = [0] * size        # bits failed since the last restore
        self.live = [False] * size
        self.refresh_times: list[list[int]] = [[] for _ in range(self.rows)]
        self.max_age = 0                # longest a live cell went without a restore (cycles)
        self.worst: tuple | None = None  # (age, address, cycle) of that
        self.flipped_bits = 0           # bit failures injected so far
        # log P(every read so far returned its bits intact): a read at age a sees a bit wrong
        # with probability ber(a), failures persist until the next restore, so per cell and
        # restore only its last read counts.
        self.log_clean_reads = 0.0
        self._read_p = [0.0] * size     # ber at the cell's last read since its restore
        self._ref = getattr(dut, f"{name}_ref") if self.refreshed else None

    # -- retention ------------------------------------------------------------------------------
    def ber_at(self, age_cycles: int) -> float:
        """Probability that a bit has failed ``age_cycles`` after its restore (0 within the
        guaranteed retention)."""
        if self.retention is not None and age_cycles <= self.retention:
            return 0.0
        p = self._ber_cache.get(age_cycles)
        if p is None:
            p = self._ber_cache[age_cycles] = float(self._ber(self.name,
                                                              age_cycles * self.us_per_cycle))
        return p

    def _decay(self, addr: int, now: int) -> None:
        restored = self.restored[addr]
        if restored is None:
            return
        age = now - restored
        p_now = self.ber_at(age)
        p_before = self.ber_at(self.seen[addr])
        self.seen[addr] = age
        if p_now <= p_before:
            return
        q = (p_now - p_before) / (1.0 - p_before)
        intact = ~self.failed[addr]
        flips = 0
        for bit in range(self.bits):
            if intact >> bit & 1 and self.rng.random() < q:
                flips |= 1 << bit
        if flips:
            self.value[addr] ^= flips
            self.failed[addr] |= flips
            self.flipped_bits += bin(flips).count("1")

    def _close_reads(self, addr: int) -> None:
        p = self._read_p[addr]
        if p:
            self.log_clean_reads += self.bits * math.log1p(-p) if p < 1 else -math.inf
            self._read_p[addr] = 0.0

    def _restore(self, addr: int, now: int) -> None:
        if self.live[addr]:
            self._age(addr, now)
        self._close_reads(addr)
        self.restored[addr] = now
        self.seen[addr] = 0
        self.failed[addr] = 0

    def _age(self, addr: int, now: int) -> None:
        age = now - self.restored[addr]
        if age > self.max_age:
            self.max_age, self.worst = age, (age, addr, now)

    # -- testbench hooks ------------------------------------------------------------------------
    def kill(self, addrs, now: int) -> None:
        """The data in ``addrs`` died (RELEASE accepted in cycle ``now``): close their ages."""
        for addr in addrs:
            if self.live[addr]:
                self._age(addr, now)
                self.live[addr] = False

    def finish(self, now: int) -> None:
        """End of the run: account the age of every cell still live."""
        for addr, live in enumerate(self.live):
            if live:
                self._age(addr, now)
            self._close_reads(addr)

    def refreshes(self, before: int | None = None, after: int = 0) -> int:
        """Refreshes seen in cycles ``after < t < before``."""
        return sum(1 for times in self.refresh_times for t in times
                   if t > after and (before is None or t < before))

    # -- one clock edge -------------------------------------------------------------------------
    def tick(self, now: int) -> int | None:
        """Apply what the ports asked for in cycle ``now``; returns the refreshed row or None."""
        port = self._port
        ref = self.refreshed and int(self._ref.value)
        we, re = int(port["we"].value), int(port["re"].value)
        if not (ref or we or re):
            return None
        row = int(port["row"].value)
        if row >= self.rows:
            self.protocol.append(f"cycle {now}: {self.name} row {row} >= {self.rows} rows")
            return None
        if ref and (we or re) or we and re:
            self.protocol.append(f"cycle {now}: {self.name} ref={ref} we={we} re={re} together")
        if ref:
            base = row * self.row_words
            for addr in range(base, base + self.row_words):
                if self.restored[addr] is not None:
                    self._decay(addr, now)
                    self._restore(addr, now)
            self.refresh_times[row].append(now)
            return row
        col = int(port["col"].value)
        if col >= self.row_words:
            self.protocol.append(f"cycle {now}: {self.name} col {col} >= {self.row_words}")
            return None
        addr = row * self.row_words + col
        if we:
            self._restore(addr, now)
            self.value[addr] = int(port["wdata"].value)
            self.live[addr] = True
        if re:
            self._decay(addr, now)
            if self.restored[addr] is not None:
                self._read_p[addr] = self.ber_at(now - self.restored[addr])
            port["rdata"].value = self.value[addr]
        return None


class PimMacro(EdramCells):
    """The eDRAM PIM macro behind ``pim_core``'s ``macro_*`` ports (rows of ``cfg.width`` cells).

    Sampled at each rising edge (``tick``); ``macro_rdata`` is driven after it, so read data is
    on the port in the cycle after ``macro_re``. A write stores and restores a row; a refresh
    restores it (writing back what it holds, corrupted or not); a read restores nothing and
    returns the stored bits AND ``macro_inbits`` (the sense amps gated by 0 input bits). The
    retention that applies is that of the VPD in force at read time: a read older than
    ``retention_cycles[vpd]`` returns the row XOR a pattern fixed by (row, restore cycle), so a
    failure reproduces, and is recorded; so is a read whose ``macro_vref`` is not
    ``vref_table[vpd]`` (also corrupted). Counters per VPD level: activations, sa_on,
    sa_gated, writes, refreshes.
    """

    COUNTERS = ("activations", "sa_on", "sa_gated", "writes", "refreshes")

    def __init__(self, dut, cfg, *, retention_cycles=None, vref_table=None):
        self.cfg, self.width = cfg, cfg.width
        self.retention = list(retention_cycles or [cfg.retention_cycles(v)
                                                   for v in range(cfg.levels)])
        self.vref_table = list(vref_table or range(cfg.levels))
        super().__init__(dut, "macro", ("row", "we", "wdata", "re", "inbits", "ref", "vpd",
                                        "vref", "rdata"), cfg.rows)
        self.counters = {v: dict.fromkeys(self.COUNTERS, 0) for v in range(cfg.levels)}
        self.retention_violations: list[tuple] = []
        self.vref_violations: list[tuple] = []
        self.max_read_age = 0

    def _pattern(self, row: int, restored: int) -> int:
        """A fixed, data-independent corruption of one row (no Python hash: reproducible)."""
        seed = (row * 0x9E3779B1 + restored * 0x85EBCA77 + 1) & 0xFFFFFFFF
        value, bits = 0, 0
        while bits < self.width:
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            value |= (seed >> 8 & 0xFFFF) << bits
            bits += 16
        return (value | 1) & ((1 << self.width) - 1)

    def _expired(self, row: int, now: int, vpd: int) -> bool:
        age = self.age(row, now)
        return age is not None and age > self.retention[vpd]

    def tick(self, now: int) -> None:
        port = self._port
        we, re, ref = (int(port[p].value) for p in ("we", "re", "ref"))
        if not (we or re or ref):
            return
        if we + re + ref > 1:
            self.protocol.append(f"cycle {now}: we={we} re={re} ref={ref} together")
        row, vpd = int(port["row"].value), int(port["vpd"].value)
        if row >= self.cfg.rows or vpd >= self.cfg.levels:
            self.protocol.append(f"cycle {now}: row {row} / VPD level {vpd} out of range")
            return
        counts = self.counters[vpd]
        if we:
            self.value[row], self.restored[row] = int(port["wdata"].value), now
            counts["writes"] += 1
        elif ref:
            if self._expired(row, now, vpd):
                self.retention_violations.append(("refresh", now, row,
                                                  now - self.restored[row], self.retention[vpd]))
                self.value[row] ^= self._pattern(row, self.restored[row])
            self.restored[row] = now
            counts["refreshes"] += 1
        else:
            inbits = int(port["inbits"].value)
            ones = bin(inbits).count("1")
            counts["activations"] += 1
            counts["sa_on"] += ones
            counts["sa_gated"] += self.width - ones
            data = self.value[row]
            age = self.age(row, now)
            if age is not None:
                self.max_read_age = max(self.max_read_age, age)
                if age > self.retention[vpd]:
                    self.retention_violations.append(("read", now, row, age,
                                                      self.retention[vpd]))
                    data ^= self._pattern(row, self.restored[row])
            if int(port["vref"].value) != self.vref_table[vpd]:
                self.vref_violations.append((now, row, int(port["vref"].value),
                                             self.vref_table[vpd]))
                data ^= self._pattern(row, now)
            port["rdata"].value = data & inbits

    def finish(self, now: int) -> None:
        """End of the run (nothing to close: violations are recorded as they happen)."""
