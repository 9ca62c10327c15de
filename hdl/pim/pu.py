"""The PIM processing unit: turns one row activation's sense-amp outputs into accumulated
partial sums (arithmetic: :mod:`memwall.golden.pim.macro`, section "PU arithmetic").

The sense amps already multiplied: each output bit is a stored weight bit AND its broadcast
input bit. The PU weighs that row by the input bit-plane (and, bit-serially, the weight
bit-plane) and accumulates:

* bit-parallel: a field is a whole weight word; shift-and-add over the input bit-planes;
* bit-serial: a field is one weight bit; the fields are summed as a popcount (dot-product) or
  kept per column (row-wise), then shifted by the two planes.

The most significant plane of a signed operand has negative weight, so its terms are
subtracted. Row-wise keeps one accumulator per field (one output each); dot-product sums the
fields into one accumulator. An accumulator loads only where its term can be non-zero (or a
group starts), so the lanes of gated sense amps hold their registers.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from memwall.families.pim.config import PimConfig

__all__ = ["PimPu", "pu_params", "result_words"]


def result_words(cfg: PimConfig) -> int:
    """Words of one result (and partial-sum) beat: a field each row-wise, one dot-product."""
    return cfg.fields if cfg.row_wise else 1


def pu_params(cfg: PimConfig) -> dict:
    """The config fields the PU's netlist depends on (its module name and dedup key)."""
    return {"width": cfg.width, "field_bits": cfg.field_bits, "row_wise": cfg.row_wise,
            "weight_signed": cfg.weight_signed and not cfg.bit_serial,
            "acc_bits": cfg.acc_bits, "max_shift": max_shift(cfg)}


def max_shift(cfg: PimConfig) -> int:
    """Largest plane weight exponent: input plane, plus the weight plane bit-serially."""
    return cfg.input_bits - 1 + (cfg.weight_bits - 1 if cfg.bit_serial else 0)


class PimPu(wiring.Component):
    """Accumulates one activation per cycle; emits a group's sums with its last activation.

    Parameters
    ----------
    cfg : PimConfig
        Row width, field width, operation, precisions and accumulator width.

    Attributes
    ----------
    valid : In(1)
        ``rdata`` and the controls below belong to an activation in this cycle.
    rdata : In(width)
        Sense-amp outputs (stored bit AND input bit).
    shift : In(range(max_shift + 1))
        Weight of this activation's planes, as a power of two.
    negate : In(1)
        Subtract (exactly one of the planes is the negative MSB plane of a signed operand).
    first : In(1)
        First activation of a group: start from ``init`` instead of the accumulator.
    last : In(1)
        Last activation of a group: ``emit`` this cycle with the finished sums.
    init : In(words * acc_bits)
        The group's starting sums (0, or the previous k-tile's partial sums).
    emit : Out(1)
        ``result`` holds a finished group (valid only in this cycle).
    result : Out(words * acc_bits)
        Word ``w`` in bits ``[w * acc_bits, (w + 1) * acc_bits)``, two's complement.
    """

    def __init__(self, cfg: PimConfig):
        self.cfg = cfg
        self.params = pu_params(cfg)
        self.words = result_words(cfg)
        acc = self.words * cfg.acc_bits
        super().__init__({
            "valid": In(1), "rdata": In(cfg.width),
            "shift": In(range(max_shift(cfg) + 1)), "negate": In(1),
            "first": In(1), "last": In(1), "init": In(acc),
            "emit": Out(1), "result": Out(acc),
        })

    def _field_values(self) -> list:
        """Each field of ``rdata`` as a number: a (signed) word, or one bit."""
        cfg, fw = self.cfg, self.cfg.field_bits
        values = []
        for f in range(cfg.fields):
            bits = self.rdata[f * fw:(f + 1) * fw]
            values.append(bits.as_signed() if self.params["weight_signed"] else bits)
        return values

    def elaborate(self, platform):
        m = Module()
        cfg, width = self.cfg, self.cfg.acc_bits
        values = self._field_values()
        fw = cfg.field_bits
        # A word whose sense-amp outputs are all 0 adds 0: its accumulator holds (and so
        # clock-gates), as a lane of gated sense amps is idle; only a group's first activation
        # loads it regardless.
        busy = [self.rdata[f * fw:(f + 1) * fw].any() for f in range(cfg.fields)]
        if not cfg.row_wise:
            # Dot product: sum the fields first (bit-serially, a popcount), then weigh once; a
            # balanced tree, so the sum's width and depth grow with log2(fields) (a chain of
            # thousands of fields overflowed Python's recursion limit in Amaranth's shape()).
            total = _tree_sum(values)
            reduced = Signal(signed(len(total) + 1) if self.params["weight_signed"]
                             else unsigned(len(total)), name="field_sum")
            m.d.comb += reduced.eq(total)
            values = [reduced]
            busy = [self.rdata.any()]
        accs = []
        for w, (value, lane_busy) in enumerate(zip(values, busy, strict=True)):
            acc = Signal(signed(width), name=f"acc{w}")
            base = Mux(self.first, self.init[w * width:(w + 1) * width].as_signed(), acc)
            term = Signal(signed(width), name=f"term{w}")
            m.d.comb += term.eq(value << self.shift)
            nxt = Signal(signed(width), name=f"next{w}")
            m.d.comb += nxt.eq(Mux(self.negate, base - term, base + term))
            with m.If(self.valid & (self.first | lane_busy)):
                m.d.sync += acc.eq(nxt)
            accs.append(nxt)
        m.d.comb += [self.emit.eq(self.valid & self.last), self.result.eq(Cat(*accs))]
        return m


def _tree_sum(values: list):
    """The exact sum of ``values`` as a balanced tree of adds (pairs of neighbours first)."""
    while len(values) > 1:
        pairs = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]
