"""MX -> BF16 dequantiser and Vector SRAM write engine of the d-PLENA sampling core.

Logits stream from HBM in the beat layout of :mod:`memwall.golden.dplena.hbm` (``W`` =
``beat_bytes`` bytes per beat): an MX format as a scale beat followed by the data beats of up
to ``32 W`` elements, or BF16 passthrough at ``W/2`` elements per beat. The dequantiser is
generated for one MX format (``fmt``, one of :data:`memwall.golden.dplena.mx.FORMATS`; BF16 is
always the runtime alternative) and writes ``G`` = :func:`memwall.golden.dplena.hbm.write_lanes`
elements at a time (``W`` for 8-bit elements, ``2 W`` for 6- and 4-bit ones), one (row, bank)
granule of a ``vlen``-wide row split into ``vlen / G`` banks.

* :class:`DequantLane` - one lane: ``y = BF16_RNE(element * 2**(S - 127))`` or the raw BF16,
  bit-exact with :func:`memwall.golden.dplena.mx.dequantize`, registered when ``load``.
* :class:`DequantControl` - command, beat parsing (a one-beat hold for 6-bit elements, whose
  write spans a beat and a half), scale window, BF16 beat gathering, write addressing and
  backpressure.
* :class:`Dequantiser` - one control plus ``G`` lanes, written as structural Verilog (a
  ``generate`` loop over one lane module).

Timing (no stalls): the beat that completes a write (every MX data beat of 8- and 4-bit
elements, the second and third of every three for 6 bits; the ``2G/W``-th BF16 beat), accepted
at clock edge ``t``, gives ``wr_valid`` in the cycle after ``t`` (one cycle of latency). The
last beat of a prefetch always completes a write (the layout pads to whole writes), so a
prefetch of ``B = golden.hbm.num_beats(count, fmt, W)`` beats keeps ``busy`` high for ``B + 1``
cycles; the next command is accepted one cycle later, so back-to-back prefetches take ``B + 2``
cycles each.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from memwall.golden.common.formats import BF16
from memwall.golden.dplena.hbm import DEFAULT_FORMAT, group_data_beats, write_lanes
from memwall.golden.dplena.mx import FORMATS as MX_FORMATS
from memwall.hdl.common.structural import Netlist, Structural

__all__ = ["DequantLane", "DequantControl", "Dequantiser", "dequant_cmd_layout", "MX_BLOCK",
           "MX_GROUP_BEATS", "DEFAULT_FORMAT"]

MX_BLOCK = 32          # elements per E8M0 scale (OCP MX)
MX_GROUP_BEATS = 32    # MXFP8 data beats per scale beat (golden.hbm.MX_GROUP_BEATS)


def _mx(fmt):
    if fmt not in MX_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(MX_FORMATS)}, got {fmt!r}")
    return MX_FORMATS[fmt]


def _fmt_params(fmt: str) -> dict:
    """The default format's modules keep their parameter-free names (and their Verilog)."""
    return {} if fmt == DEFAULT_FORMAT else {"fmt": fmt}


def dequant_cmd_layout(row_bits: int) -> data.StructLayout:
    """Prefetch command: element ``count``, format flag (0 MXFP8, 1 BF16), destination ``row``."""
    return data.StructLayout({"count": 32, "bf16": 1, "row": row_bits})


class DequantLane(wiring.Component):
    """One lane: MX element x scale -> BF16 (or BF16 passthrough), registered when ``load``.

    An element of ``e`` exponent and ``m`` mantissa bits (bias ``2**(e-1) - 1``) is
    ``M * 2**(E - bias - m)`` with an ``m+1``-bit integer significand ``M`` (hidden bit
    ``E != 0``) and ``E = max(exp, 1)``; times ``2**(S - 127)`` it is exact in BF16 (at most 4
    significant bits against BF16's 8) unless the biased exponent leaves ``1 .. 254``: above, the
    result is +-inf (only with the largest scales); below, it is a BF16 subnormal, shifted right
    and rounded to nearest even, with guard bits enough to hold every bit shifted out. A NaN
    element (E4M3 ``x.1111.111``; E5M2 ``x.11111.mm``, ``mm != 0``) or a NaN scale (``0xFF``)
    gives ``0x7FC0``; an E5M2 infinity stays +-inf; ``+-0`` stays ``+-0``.

    Parameters
    ----------
    fmt : str
        The MX element format (:data:`memwall.golden.dplena.mx.FORMATS`).

    Attributes
    ----------
    load : In(1)
        Register enable.
    bf16 : In(1)
        1: ``y = raw``; 0: ``y = dequant(elem, scale)``.
    elem : In(bits)
        The element's bit pattern (8, 6 or 4 bits).
    scale : In(8)
        E8M0 bit pattern.
    raw : In(16)
        BF16 bits passed through in BF16 mode.
    y : Out(16)
        BF16 result (reset-less register).
    """

    def __init__(self, fmt: str = DEFAULT_FORMAT):
        self.fmt = _mx(fmt)
        self.params = _fmt_params(fmt)
        super().__init__({"load": In(1), "bf16": In(1), "elem": In(self.fmt.bits),
                          "scale": In(8), "raw": In(16), "y": Out(16)})

    def elaborate(self, platform):
        m = Module()
        f = self.fmt
        mb, eb = f.mbits, f.bits - 1 - f.mbits
        bias = (1 << (eb - 1)) - 1
        elem, scale = self.elem, self.scale
        sign, exp, frac = elem[f.bits - 1], elem[mb:mb + eb], elem[0:mb]
        exp_ones = (1 << eb) - 1
        nan = scale == 0xFF
        elem_inf = None
        if f.nan_code is not None and eb == 4:             # E4M3 (fn): only S.1111.111
            nan = (elem[0:f.bits - 1] == f.nan_code) | nan
        elif f.nan_code is not None:                       # E5M2: IEEE-like specials
            nan = ((exp == exp_ones) & (frac != 0)) | nan
            elem_inf = (exp == exp_ones) & (frac == 0)
        normal_in = exp != 0
        mant = Cat(frac, normal_in)          # (m+1)-bit integer significand
        lz = Signal(max(1, ceil_log2(mb + 1)))   # leading zeros of a non-zero mant
        lz_value = mb
        for i in range(1, mb + 1):
            lz_value = Mux(mant[i], mb - i, lz_value)
        m.d.comb += lz.eq(lz_value)
        sig = Signal(mb + 1)                 # mant normalised: leading one at bit m
        m.d.comb += sig.eq(mant << lz)
        # BF16 biased exponent of 1.fff: max(e,1) - bias - m + (S - 127) + (m - lz) + 127.
        biased = Signal(signed(11))
        m.d.comb += biased.eq(Mux(normal_in, exp, 1) + scale - bias - lz)

        # Subnormal result (biased <= 0): the 8-bit BF16 significand (sig, zero-extended)
        # shifted right by 1 - biased (1 .. max_shift). Its set bits are sig's m+1, so `guard`
        # bits below the kept field hold every bit shifted out: the round bit and an exact
        # sticky.
        max_shift = bias + mb               # 1 - the least biased (E = 1, S = 0, lz = m)
        guard = max(2, max_shift - 7 + mb)
        shift = Signal(ceil_log2(max_shift + 1))
        m.d.comb += shift.eq(1 - biased)
        shifted = Signal(guard + 8)
        m.d.comb += shifted.eq(Cat(Const(0, guard + 7 - mb), sig) >> shift)
        kept = shifted[guard:guard + 7]
        round_up = shifted[guard - 1] & (kept[0] | (shifted[0:guard - 1] != 0))
        sub_mag = Signal(15)                 # a carry out of the fraction is the min normal
        m.d.comb += sub_mag.eq(kept + round_up)

        dequant = Signal(16)
        with m.If(nan):
            m.d.comb += dequant.eq(BF16.qnan_bits)
        if elem_inf is not None:
            with m.Elif(elem_inf):
                m.d.comb += dequant.eq(Cat(Const(BF16.inf_bits, 15), sign))
        with m.Elif(mant == 0):
            m.d.comb += dequant.eq(Cat(Const(0, 15), sign))
        with m.Elif(biased >= BF16.exp_max):
            m.d.comb += dequant.eq(Cat(Const(BF16.inf_bits, 15), sign))
        with m.Elif(biased <= 0):
            m.d.comb += dequant.eq(Cat(sub_mag, sign))
        with m.Else():
            m.d.comb += dequant.eq(Cat(Const(0, 7 - mb), sig[0:mb], biased[0:8], sign))

        result = Signal(16, reset_less=True)
        with m.If(self.load):
            m.d.sync += result.eq(Mux(self.bf16, self.raw, dequant))
        m.d.comb += self.y.eq(result)
        return m


def _check(vlen, beat_bytes, row_bits, fmt) -> int:
    """Checks the parameters; returns the write lanes ``G``."""
    for name, value in (("vlen", vlen), ("beat_bytes", beat_bytes), ("row_bits", row_bits)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {value!r}")
    _mx(fmt)
    if beat_bytes < MX_BLOCK or beat_bytes & (beat_bytes - 1):
        raise ValueError(f"beat_bytes must be a power of two >= {MX_BLOCK}, got {beat_bytes}")
    lanes = write_lanes(fmt, beat_bytes)
    if vlen < lanes or vlen % lanes:
        raise ValueError(f"vlen must be a multiple of the {lanes} lanes a {fmt} write fills "
                         f"and >= it, got {vlen}")
    if not 1 <= row_bits <= 32:
        raise ValueError(f"row_bits must be in 1 .. 32, got {row_bits}")
    return lanes


def _bank_bits(vlen: int, lanes: int) -> int:
    return max(1, ceil_log2(vlen // lanes))


class DequantControl(wiring.Component):
    """Beat parsing, lane drive and write addressing of the dequantiser (no lane datapath).

    One command at a time (``cmd.ready`` only when not ``busy``; ``count == 0`` is accepted and
    does nothing). MX: a scale beat loads the scale register (no write); a data beat of 8- or
    4-bit elements loads the lanes with its ``G`` elements; of 6-bit elements, the first beat of
    every three is held, the second loads the lanes with the held beat and its own lower half,
    the third with the second's upper half and itself. Each load takes the window of ``G/32``
    scales of its write. BF16: ``2G/W`` beats make a write; all but the last are held; a
    prefetch's last beat loads with whatever it has. Write ``k`` of a prefetch goes to
    ``row = cmd.row + k // NB``, ``bank = k % NB``; the lanes' ``y`` registers are its data and
    are held while ``wr_valid & ~wr_ready`` (``beat.ready`` is low then).

    Parameters
    ----------
    vlen : int
        Vector SRAM row width in elements (a multiple of ``G``).
    beat_bytes : int
        HBM beat width ``W`` in bytes (a power of two >= 32).
    row_bits : int
        Width of the Vector SRAM row address.
    fmt : str
        The MX element format (default MXFP8 E4M3).

    Attributes
    ----------
    cmd : In(stream.Signature(dequant_cmd_layout(row_bits)))
    beat : In(stream.Signature(W * 8))
    load, mode_bf16 : Out(1)
        Lane register enable and lane mode.
    lane_elem : Out(G * bits)
        Element ``p`` for lane ``p`` (zero in BF16 mode, so the dequant logic stays quiet).
    lane_scale : Out(G // 32 * 8)
        Scale byte ``b`` for lanes ``32b .. 32b+31``.
    lane_raw : Out(G * 16)
        BF16 lanes (zero in MX mode).
    wr_valid : Out(1)
    wr_ready : In(1)
    wr_row : Out(row_bits)
    wr_bank : Out(max(1, ceil_log2(vlen // G)))
    busy : Out(1)
        From command acceptance until the last write is accepted.
    """

    def __init__(self, vlen: int, beat_bytes: int, row_bits: int, fmt: str = DEFAULT_FORMAT):
        self.lanes = _check(vlen, beat_bytes, row_bits, fmt)
        self.vlen, self.beat_bytes, self.row_bits, self.fmt = vlen, beat_bytes, row_bits, fmt
        self.params = {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits,
                       **_fmt_params(fmt)}
        w, g, bits = beat_bytes, self.lanes, _mx(fmt).bits
        super().__init__({
            "cmd": In(stream.Signature(dequant_cmd_layout(row_bits))),
            "beat": In(stream.Signature(w * 8)),
            "load": Out(1), "mode_bf16": Out(1),
            "lane_elem": Out(g * bits), "lane_scale": Out(g // MX_BLOCK * 8),
            "lane_raw": Out(g * 16),
            "wr_valid": Out(1), "wr_ready": In(1),
            "wr_row": Out(row_bits), "wr_bank": Out(self.bank_bits),
            "busy": Out(1),
        })

    @property
    def banks(self) -> int:
        return self.vlen // self.lanes

    @property
    def bank_bits(self) -> int:
        return _bank_bits(self.vlen, self.lanes)

    def elaborate(self, platform):
        m = Module()
        w, g = self.beat_bytes, self.lanes
        bits = _mx(self.fmt).bits
        gathered = 2 * g // w                # BF16 beats per write: 2 or 4
        payload = self.beat.payload
        cmd = self.cmd.payload

        run = Signal()                       # beats of the current prefetch still to come
        wr_valid = Signal()                  # the lanes hold a write not yet accepted
        bf16 = Signal()
        remaining = Signal(32)               # elements not yet consumed
        in_data = Signal()                   # MX: 0 = next beat is a scale beat
        data_beat = Signal(range(group_data_beats(self.fmt)))
        if gathered == 2:
            second = Signal()                # BF16: the next beat completes a pair
            held = [Signal(w * 8, name="held", reset_less=True)]
            bf16_beat = second
        else:
            bf16_beat = Signal(range(gathered))   # BF16: beats of this write so far
            held = [Signal(w * 8, name=f"held{i}", reset_less=True) for i in range(gathered - 1)]
        scales = Signal(w * 8, reset_less=True)
        row = Signal(self.row_bits)
        bank = Signal(self.bank_bits)
        if bits == 6:
            phase = Signal(range(3))         # MXFP6: beat of the current three
            write = Signal(range(MX_BLOCK * w // g))   # write of the group
            mx_load = in_data & (phase != 0)
            elems = Mux(phase == 1, Cat(held[0], payload[:4 * w]),
                        Cat(held[0][4 * w:], payload))
        else:
            write, mx_load, elems = data_beat, in_data, payload

        busy = run | wr_valid
        take = Signal()
        last = Signal()                      # this beat is the prefetch's last
        if gathered == 2:
            bf16_load = second | last
            raw = Cat(Mux(second, held[0], payload), payload)
        else:
            bf16_load = (bf16_beat == gathered - 1) | last
            raw = Cat(*(Mux(bf16_beat > i, h, payload) for i, h in enumerate(held)), payload)
        m.d.comb += [
            self.cmd.ready.eq(~busy),
            self.beat.ready.eq(run & (~wr_valid | self.wr_ready)),
            take.eq(self.beat.valid & self.beat.ready),
            last.eq(remaining <= Mux(bf16, w // 2, g)),
            self.load.eq(take & Mux(bf16, bf16_load, mx_load)),
            self.busy.eq(busy),
            self.wr_valid.eq(wr_valid),
            self.wr_row.eq(row),
            self.wr_bank.eq(bank),
            self.mode_bf16.eq(bf16),
            self.lane_elem.eq(Mux(bf16, 0, elems)),
            self.lane_scale.eq(scales.word_select(write, g // MX_BLOCK * 8)),
            self.lane_raw.eq(Mux(bf16, raw, 0)),
        ]

        with m.If(self.cmd.valid & self.cmd.ready & (cmd.count != 0)):
            m.d.sync += [run.eq(1), bf16.eq(cmd.bf16), remaining.eq(cmd.count),
                         in_data.eq(0), data_beat.eq(0), bf16_beat.eq(0),
                         row.eq(cmd.row), bank.eq(0)]

        with m.If(take):
            with m.If(last & (bf16 | mx_load)):
                m.d.sync += run.eq(0)
            with m.If(bf16):
                m.d.sync += remaining.eq(remaining - w // 2)
                if gathered == 2:
                    m.d.sync += second.eq(~second)
                    with m.If(~second):
                        m.d.sync += held[0].eq(payload)
                else:
                    m.d.sync += bf16_beat.eq(bf16_beat + 1)
                    with m.Switch(bf16_beat):
                        for i, h in enumerate(held):
                            with m.Case(i):
                                m.d.sync += h.eq(payload)
            with m.Elif(~in_data):
                m.d.sync += [scales.eq(payload), in_data.eq(1), data_beat.eq(0)]
                if bits == 6:
                    m.d.sync += [phase.eq(0), write.eq(0)]
            with m.Else():
                if bits == 6:
                    m.d.sync += [data_beat.eq(data_beat + 1),
                                 phase.eq(Mux(phase == 2, 0, phase + 1))]
                    with m.If(phase != 2):
                        m.d.sync += held[0].eq(payload)
                    with m.If(phase != 0):
                        m.d.sync += [remaining.eq(remaining - g), write.eq(write + 1)]
                else:
                    m.d.sync += [remaining.eq(remaining - g), data_beat.eq(data_beat + 1)]
                with m.If(data_beat == group_data_beats(self.fmt) - 1):
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
    """HBM prefetch stream -> Vector SRAM writes: one :class:`DequantControl`, ``G`` lanes.

    Ports as :class:`DequantControl` for ``cmd``, ``beat``, ``wr_*`` and ``busy``, plus
    ``wr_data``: lane ``p``'s BF16 result at bits ``16p .. 16p+15``, valid with ``wr_valid``.
    Lanes of the last write past the prefetch's end carry don't-care values (``+0`` for MX
    zero padding, a copy of the last beat's in BF16).

    Parameters
    ----------
    vlen : int
        Vector SRAM row width in elements (a multiple of ``G``).
    beat_bytes : int
        HBM beat width ``W`` (a power of two >= 32).
    row_bits : int
        Row address width.
    fmt : str
        The MX element format (default MXFP8 E4M3).

    Attributes
    ----------
    cmd : In(stream.Signature(dequant_cmd_layout(row_bits)))
    beat : In(stream.Signature(W * 8))
    wr_valid : Out(1)
    wr_ready : In(1)
    wr_row : Out(row_bits)
    wr_bank : Out(max(1, ceil_log2(vlen // G)))
    wr_data : Out(ArrayLayout(16, G))
    busy : Out(1)
    """

    module_name = "mx_dequantiser"

    def __init__(self, vlen: int, beat_bytes: int, row_bits: int, fmt: str = DEFAULT_FORMAT):
        self.lanes = _check(vlen, beat_bytes, row_bits, fmt)
        self.vlen, self.beat_bytes, self.row_bits, self.fmt = vlen, beat_bytes, row_bits, fmt
        self.params = {"vlen": vlen, "beat_bytes": beat_bytes, "row_bits": row_bits,
                       **_fmt_params(fmt)}
        super().__init__({
            "cmd": In(stream.Signature(dequant_cmd_layout(row_bits))),
            "beat": In(stream.Signature(beat_bytes * 8)),
            "wr_valid": Out(1), "wr_ready": In(1),
            "wr_row": Out(row_bits), "wr_bank": Out(_bank_bits(vlen, self.lanes)),
            "wr_data": Out(data.ArrayLayout(16, self.lanes)),
            "busy": Out(1),
        })

    def structure(self, netlist: Netlist) -> None:
        io = netlist.io
        control = netlist.instance(
            "control", DequantControl(self.vlen, self.beat_bytes, self.row_bits, self.fmt))
        lanes = netlist.instances("lane", lambda: DequantLane(self.fmt), self.lanes)
        for name in ("cmd", "beat", "wr_valid", "wr_ready", "wr_row", "wr_bank", "busy"):
            netlist.connect(io[name], control[name])
        netlist.connect(control.load, lanes.load)
        netlist.connect(control.mode_bf16, lanes.bf16)
        netlist.bind(lanes.elem, netlist.net(control.lane_elem).lane(_mx(self.fmt).bits))
        netlist.bind(lanes.scale, netlist.net(control.lane_scale).lane(8, per=MX_BLOCK))
        netlist.bind(lanes.raw, netlist.net(control.lane_raw).lane(16))
        netlist.bind(lanes.y, netlist.net(io.wr_data).lane(16))
