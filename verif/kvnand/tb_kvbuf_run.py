"""cocotb test behind ``memwall run kvnand --op kvbuf``: a given slice trace through the KV
write-combine buffer (:class:`memwall.hdl.kvnand.kvbuf.KvWriteBuffer`), recording what the RTL
issues, without a golden model; it ends when no beat has come out for a while after the flush
was accepted."""

from __future__ import annotations

import json

import cocotb
from cocotb.triggers import RisingEdge

from memwall.hdl.kvnand.kvbuf import in_layout, out_layout
from memwall.verif.common.runner import tb_params
from memwall.verif.common.streams import StreamSink, StreamSource, pack_struct, start


@cocotb.test()
async def program(dut):
    """Feed ``params["streams"]`` and ``params["slices"]`` (byte lists) in order, then one
    flush; write every program request (header fields, page bytes, whether it came after the
    flush was accepted), the ``programs``/``partials`` counters and the cycles from the first
    input beat to the last output beat to ``params["out"]``."""
    p = tb_params()
    word_bytes = p["word_bytes"]
    wpp = p["page_bytes"] // word_bytes
    ilayout = in_layout(p["stream_bits"], word_bytes)
    olayout = out_layout(p["stream_bits"], p["page_bits"], p["page_bytes"], word_bytes)
    clk = await start(dut)
    source = StreamSource(dut, "i", clk)
    flush = StreamSource(dut, "flush", clk)
    sink = StreamSink(dut, "o", clk)
    cocotb.start_soon(sink.run())
    clock = {"cycle": 0, "last_out": 0, "seen": 0}

    async def count():                    # cycles, and the one of the latest output beat
        while True:
            await RisingEdge(clk)
            clock["cycle"] += 1
            if len(sink.items) != clock["seen"]:
                clock["seen"], clock["last_out"] = len(sink.items), clock["cycle"]

    cocotb.start_soon(count())
    began = clock["cycle"]
    for stream, data in zip(p["streams"], p["slices"], strict=True):
        for k in range(0, len(data), word_bytes):
            word = int.from_bytes(bytes(data[k:k + word_bytes]), "little")
            await source.send(pack_struct(ilayout, data=word, stream=stream))
    await flush.send()
    flushed_from = len(sink.items)        # no request leaves on the edge that takes the flush
    # The flush scans one slot a cycle between requests: a quiet stretch longer than that
    # (and than a request's turnaround) means the buffer is done.
    quiet, seen = 0, len(sink.items)
    while quiet < 4 * p["slots"] + 16:
        await RisingEdge(clk)
        quiet = 0 if len(sink.items) != seen else quiet + 1
        seen = len(sink.items)
    programs = []
    for n, item in enumerate(sink.items):
        beat = olayout.from_bits(item["payload"])
        if beat.header:
            info = beat.body.info
            programs.append({"stream": int(info.stream), "page": int(info.page),
                             "valid": int(info.valid), "partial": int(info.partial),
                             "after_flush": n >= flushed_from, "words": [], "last": []})
        else:
            assert programs, f"output beat {n} is a data beat before any header"
            programs[-1]["words"].append(int(beat.body.data))
            programs[-1]["last"].append(int(beat.last))
    for n, prog in enumerate(programs):
        assert prog["last"] == [0] * (wpp - 1) + [1], \
            f"program {n}: {len(prog['last'])} data beats, last flags {prog['last']}; " \
            f"{wpp} beats with last on the final one expected"
        prog["data"] = list(b"".join(w.to_bytes(word_bytes, "little") for w in prog.pop("words")))
        del prog["last"]
    with open(p["out"], "w") as f:
        json.dump({"programs": programs, "cycles": clock["last_out"] - began,
                   "counters": {"programs": dut.programs.value.to_unsigned(),
                                "partials": dut.partials.value.to_unsigned()}}, f)
