"""MXFP8 -> BF16 dequantiser and Vector SRAM write engine of the d-PLENA sampling core.

Logits stream from HBM in the beat layout of :mod:`memwall.golden.dplena.hbm` (``W`` =
``beat_bytes`` bytes per beat): MXFP8 as a scale beat followed by up to 32 data beats per group of
``32 W`` elements, or BF16 passthrough at ``W/2`` elements per beat. Every ``W`` elements become one
Vector SRAM write of ``W`` BF16 lanes: a (row, bank) granule of a ``vlen``-wide row split into
``vlen / W`` banks.

* :class:`DequantLane` - one lane: ``y = BF16_RNE(E4M3 * 2**(S - 127))`` or the raw BF16,
  bit-exact with :func:`memwall.golden.dplena.mxfp8.dequantize`, registered when ``load``.
* :class:`DequantControl` - command, beat parsing, scale window, BF16 beat pairing, write
  addressing and backpressure.
* :class:`Dequantiser` - one control plus ``W`` lanes, written as structural Verilog (a
  ``generate`` loop over one lane module).

Timing (no stalls): a data beat (MXFP8) or the second beat of a pair (BF16) accepted at clock
edge ``t`` gives ``wr_valid`` in the cycle after ``t`` (one cycle of latency). A prefetch of
``B = golden.hbm.num_beats(count, fmt, W)`` beats keeps ``busy`` high for ``B + 1`` cycles; the
next command is accepted one cycle later, so back-to-back prefetches take ``B + 2`` cycles each.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.golden.common.formats import BF16
from memwall.hdl.common.structural import Netlist, Structural

__all__ = ["DequantLane", "DequantControl", "Dequantiser", "dequant_cmd_layout", "MX_BLOCK",
           "MX_GROUP_BEATS"]

MX_BLOCK = 32          # elements per E8M0 scale (OCP MX)
MX_GROUP_BEATS = 32    # data beats per scale beat (golden.hbm.MX_GROUP_BEATS)


def dequant_cmd_layout(row_bits: int) -> data.StructLayout:
    """Prefetch command: element ``count``, format flag (0 MXFP8, 1 BF16), destination ``row``."""
    return data.StructLayout({"count": 32, "bf16": 1, "row": row_bits})


class DequantLane(wiring.Component):
    """One lane: MXFP8 element x scale -> BF16 (or BF16 passthrough), registered when ``load``.

    The E4M3 element is ``M * 2**(E - 10)`` with a 4-bit integer significand ``M`` (hidden bit
    ``E != 0``) and ``E = max(e, 1)``; times ``2**(S - 127)`` it is exact in BF16 unless the
    biased exponent leaves ``1 .. 254``: above, the result is +-inf (only with ``S >= 0xF7``);
    below, it is a BF16 subnormal, shifted right and rounded to nearest even. A NaN element
    (``x.1111.111``) or NaN scale (``0xFF``) gives ``0x7FC0``; ``+-0`` stays ``+-0``.

    Attributes
    ----------
    load : In(1)
        Register enable.
    bf16 : In(1)
        1: ``y = raw``; 0: ``y = dequant(elem, scale)``.
    elem : In(8)
        E4M3 bit pattern.
    scale : In(8)
        E8M0 bit pattern.
    raw : In(16)
        BF16 bits passed through in BF16 mode.
    y : Out(16)
        BF16 result (reset-less register).
    """

    def __init__(self):
        self.params = {}
        super().__init__({"load": In(1), "bf16": In(1), "elem": In(8), "scale": In(8),
                          "raw": In(16), "y": Out(16)})

    def elaborate(self, platform):
        m = Module()
        elem, scale = self.elem, self.scale
        sign, exp, frac = elem[7], elem[3:7], elem[0:3]
        nan = (elem[0:7] == 0x7F) | (scale == 0xFF)
        normal_in = exp != 0
        mant = Cat(frac, normal_in)          # 4-bit integer significand
        lz = Signal(2)                       # leading zeros of a non-zero mant
        m.d.comb += lz.eq(Mux(mant[3], 0, Mux(mant[2], 1, Mux(mant[1], 2, 3))))
        sig = Signal(4)                      # mant normalised: leading one at bit 3
        m.d.comb += sig.eq(mant << lz)
        # BF16 biased exponent of 1.fff: max(e,1) - 10 + (S - 127) + (3 - lz) + 127; -9 .. 262.
        biased = Signal(signed(11))
        m.d.comb += biased.eq(Mux(normal_in, exp, 1) + scale - 7 - lz)

        # Subnormal result (biased <= 0): the 8-bit BF16 significand sig.0000 shifted right by
        # 1 - biased (1 .. 10). Its set bits are sig's 4, so 6 guard bits below the kept field
        # hold every bit shifted out: the round bit and an exact sticky.
        shift = Signal(4)
        m.d.comb += shift.eq(1 - biased)
        shifted = Signal(14)
        m.d.comb += shifted.eq(Cat(Const(0, 10), sig) >> shift)
        kept = shifted[6:13]
        round_up = shifted[5] & (kept[0] | (shifted[0:5] != 0))
        sub_mag = Signal(15)                 # a carry out of the fraction is the min normal
        m.d.comb += sub_mag.eq(kept + round_up)

        dequant = Signal(16)
        with m.If(nan):
            m.d.comb += dequant.eq(BF16.qnan_bits)
        with m.Elif(mant == 0):
            m.d.comb += dequant.eq(Cat(Const(0, 15), sign))
        with m.Elif(biased >= BF16.exp_max):
            m.d.comb += dequant.eq(Cat(Const(BF16.inf_bits, 15), sign))
        with m.Elif(biased <= 0):
            m.d.comb += dequant.eq(Cat(sub_mag, sign))
        with m.Else():
            m.d.comb += dequant.eq(Cat(Const(0, 4), sig[0:3], biased[0:8], sign))

        result = Signal(16, reset_less=True)
        with m.If(self.load):
            m.d.sync += result.eq(Mux(self.bf16, self.raw, dequant))
        m.d.comb += self.y.eq(result)
        return m


def _check(vlen, beat_bytes, row_bits) -> None:
    for name, value in (("vlen", vlen), ("beat_bytes", beat_bytes), ("row_bits", row_bits)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if beat_bytes < MX_BLOCK or beat_bytes & (beat_bytes - 1):
        raise ValueError(f"beat_bytes must be a power of two >= {MX_BLOCK}, got {beat_bytes}")
    if vlen < beat_bytes or vlen % beat_bytes:
        raise ValueError(f"vlen must be a multiple of beat_bytes ({beat_bytes}) and >= it, "
                         f"got {vlen}")
    if not 1 <= row_bits <= 32:
        raise ValueError(f"row_bits must be in 1 .. 32, got {row_bits}")


def _bank_bits(vlen: int, beat_bytes: int) -> int:
    return max(1, ceil_log2(vlen // beat_bytes))


class DequantControl(wiring.Component):
    """Beat parsing, lane drive and write addressing of the dequantiser (no lane datapath).

    One command at a time (``cmd.ready`` only when not ``busy``; ``count == 0`` is accepted and
    does nothing). MXFP8: a scale beat loads the scale register (no write); each data beat loads
    the lanes with its ``W`` elements and the window of ``W/32`` scales for it. BF16: the first
    beat of a pair is held, the second loads the lanes (lanes ``0 .. W/2-1`` from the held
    beat); an odd last beat loads on its own. Write ``k`` of a prefetch goes to
    ``row = cmd.row + k // NB``, ``bank = k % NB``; the lanes' ``y`` registers are its data and
    are held while ``wr_valid & ~wr_ready`` (``beat.ready`` is low then).

    Parameters
    ----------
    vlen : int
        Vector SRAM row width in elements (a multiple of ``beat_bytes``).
    beat_bytes : int
        HBM beat width ``W`` in bytes (a power of two >= 32); also the lanes per write.
    row_bits : int
        Width of the Vector SRAM row address.

    Attributes
    ----------
    cmd : In(stream.Signature(dequant_cmd_layout(row_bits)))
    beat : In(stream.Signature(W * 8))
    load, mode_bf16 : Out(1)
        Lane register enable and lane mode.
    lane_elem : Out(W * 8)
        Byte ``p`` for lane ``p`` (zero in BF16 mode, so the dequant logic stays quiet).
    lane_scale : Out(W // 32 * 8)
        Scale byte ``b`` for lanes ``32b .. 32b+31``.
    lane_raw : Out(W * 16)
        BF16 lanes (zero in MXFP8 mode).
    wr_valid : Out(1)
    wr_ready : In(1)
    wr_row : Out(row_bits)
    wr_bank : Out(max(1, ceil_log2(vlen // W)))
    busy : Out(1)
        From command acceptance until the last write is accepted.
    """

    def __init__(self, vlen: int, beat_bytes: int, row_bits: int):
        _check(vlen, beat_bytes, row_bits)
        self.vlen, self.beat_bytes, self.row_bits = vlen, beat_bytes, row_bits
        self.params = {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits}
        w = beat_bytes
        super().__init__({
            "cmd": In(stream.Signature(dequant_cmd_layout(row_bits))),
            "beat": In(stream.Signature(w * 8)),
            "load": Out(1), "mode_bf16": Out(1),
            "lane_elem": Out(w * 8), "lane_scale": Out(w // MX_BLOCK * 8),
            "lane_raw": Out(w * 16),
            "wr_valid": Out(1), "wr_ready": In(1),
            "wr_row": Out(row_bits), "wr_bank": Out(self.bank_bits),
            "busy": Out(1),
        })

    @property
    def banks(self) -> int:
        return self.vlen // self.beat_bytes

    @property
    def bank_bits(self) -> int:
        return _bank_bits(self.vlen, self.beat_bytes)

    def elaborate(self, platform):
        m = Module()
        w = self.beat_bytes
        payload = self.beat.payload
        cmd = self.cmd.payload

        run = Signal()                       # beats of the current prefetch still to come
        wr_valid = Signal()                  # the lanes hold a write not yet accepted
        bf16 = Signal()
        remaining = Signal(32)               # elements not yet consumed
        in_data = Signal()                   # MXFP8: 0 = next beat is a scale beat
        data_beat = Signal(range(MX_GROUP_BEATS))
        second = Signal()                    # BF16: the next beat completes a pair
        held = Signal(w * 8, reset_less=True)
        scales = Signal(w * 8, reset_less=True)
        row = Signal(self.row_bits)
        bank = Signal(self.bank_bits)

        busy = run | wr_valid
        take = Signal()
        last = Signal()                      # this beat is the prefetch's last
        m.d.comb += [
            self.cmd.ready.eq(~busy),
            self.beat.ready.eq(run & (~wr_valid | self.wr_ready)),
            take.eq(self.beat.valid & self.beat.ready),
            last.eq(remaining <= Mux(bf16, w // 2, w)),
            self.load.eq(take & Mux(bf16, second | last, in_data)),
            self.busy.eq(busy),
            self.wr_valid.eq(wr_valid),
            self.wr_row.eq(row),
            self.wr_bank.eq(bank),
            self.mode_bf16.eq(bf16),
            self.lane_elem.eq(Mux(bf16, 0, payload)),
            self.lane_scale.eq(scales.word_select(data_beat, w // MX_BLOCK * 8)),
            self.lane_raw.eq(Mux(bf16, Cat(Mux(second, held, payload), payload), 0)),
        ]

        with m.If(self.cmd.valid & self.cmd.ready & (cmd.count != 0)):
            m.d.sync += [run.eq(1), bf16.eq(cmd.bf16), remaining.eq(cmd.count),
                         in_data.eq(0), data_beat.eq(0), second.eq(0),
                         row.eq(cmd.row), bank.eq(0)]

        with m.If(take):
            with m.If(last & (bf16 | in_data)):
                m.d.sync += run.eq(0)
            with m.If(bf16):
                m.d.sync += [remaining.eq(remaining - w // 2), second.eq(~second)]
                with m.If(~second):
                    m.d.sync += held.eq(payload)
            with m.Elif(~in_data):
                m.d.sync += [scales.eq(payload), in_data.eq(1), data_beat.eq(0)]
            with m.Else():
                m.d.sync += [remaining.eq(remaining - w), data_beat.eq(data_beat + 1)]
                with m.If(data_beat == MX_GROUP_BEATS - 1):
                    m.d.sync += in_data.eq(0)

        with m.If(self.wr_ready):
            m.d.sync += wr_valid.eq(0)
        with m.If(self.load):
            m.d.sync += wr_valid.eq(1)
        with m.If(wr_valid & self.wr_ready):
            with m.If(bank == self.banks - 1):
                m.d.sync += [bank.eq(0), row.eq(row + 1)]
            with m.Else():
                m.d.sync += bank.eq(bank + 1)
        return m


class Dequantiser(Structural, wiring.Component):
    """HBM prefetch stream -> Vector SRAM writes: one :class:`DequantControl`, ``W`` lanes.

    Ports as :class:`DequantControl` for ``cmd``, ``beat``, ``wr_*`` and ``busy``, plus
    ``wr_data``: lane ``p``'s BF16 result at bits ``16p .. 16p+15``, valid with ``wr_valid``.
    Lanes of the last write past the prefetch's end carry don't-care values (``+0`` for MXFP8
    zero padding, the odd beat's copy in BF16).

    Parameters
    ----------
    vlen : int
        Vector SRAM row width in elements (a multiple of ``beat_bytes``).
    beat_bytes : int
        HBM beat width ``W`` (a power of two >= 32).
    row_bits : int
        Row address width.

    Attributes
    ----------
    cmd : In(stream.Signature(dequant_cmd_layout(row_bits)))
    beat : In(stream.Signature(W * 8))
    wr_valid : Out(1)
    wr_ready : In(1)
    wr_row : Out(row_bits)
    wr_bank : Out(max(1, ceil_log2(vlen // W)))
    wr_data : Out(ArrayLayout(16, W))
    busy : Out(1)
    """

    module_name = "mx_dequantiser"

    def __init__(self, vlen: int, beat_bytes: int, row_bits: int):
        _check(vlen, beat_bytes, row_bits)
        self.vlen, self.beat_bytes, self.row_bits = vlen, beat_bytes, row_bits
        self.params = {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits}
        super().__init__({
            "cmd": In(stream.Signature(dequant_cmd_layout(row_bits))),
            "beat": In(stream.Signature(beat_bytes * 8)),
            "wr_valid": Out(1), "wr_ready": In(1),
            "wr_row": Out(row_bits), "wr_bank": Out(_bank_bits(vlen, beat_bytes)),
            "wr_data": Out(data.ArrayLayout(16, beat_bytes)),
            "busy": Out(1),
        })

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        control = netlist.instance(
            "control", DequantControl(self.vlen, self.beat_bytes, self.row_bits))
        lanes = netlist.instances("lane", DequantLane, self.beat_bytes)
        for name in ("cmd", "beat", "wr_valid", "wr_ready", "wr_row", "wr_bank", "busy"):
            netlist.connect(io[name], control[name])
        netlist.connect(control.load, lanes.load)
        netlist.connect(control.mode_bf16, lanes.bf16)
        netlist.bind(lanes.elem, netlist.net(control.lane_elem).lane(8))
        netlist.bind(lanes.scale, netlist.net(control.lane_scale).lane(8, per=MX_BLOCK))
        netlist.bind(lanes.raw, netlist.net(control.lane_raw).lane(16))
        netlist.bind(lanes.y, netlist.net(io.wr_data).lane(16))
