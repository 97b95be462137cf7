"""The benchmark's raw SSE client (scripts/benchmarks/clients/raw_http.py) against a real loopback server.

Its figures are only as good as this reader: every id once and in order, the terminal status
seen, the chunked body decoded however the bytes are cut.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from scripts.benchmarks.clients.raw_http import (
    Dechunker,
    SseTarget,
    check_ids,
    open_sse,
    read_sse_answer,
)
from tests.support.waiting import eventually

HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


def frame(seq: int, kind: str, data: str) -> bytes:
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


def chunk(payload: bytes, ext: bytes = b"") -> bytes:
    return f"{len(payload):x}".encode() + ext + b"\r\n" + payload + b"\r\n"


FRAMES = [frame(1, "run.status", '{"status":"running"}'),
          frame(2, "output.delta", '{"text":"a"}'),
          frame(3, "output.delta", '{"text":"b"}'),
          frame(4, "run.status", '{"status":"completed"}')]
BODY = b"".join(FRAMES)
# Chunk borders fall inside frames and a chunk carries an extension: the decoder must not care.
CHUNKED = chunk(BODY[:7], b";x=1") + chunk(BODY[7:60]) + chunk(BODY[60:]) + b"0\r\n\r\n"


def test_the_chunk_decoder_gives_the_same_body_whatever_the_cuts() -> None:
    for cut in (1, 2, 3, 5, 8, len(CHUNKED)):
        out = bytearray()
        decoder = Dechunker()
        for i in range(0, len(CHUNKED), cut):
            decoder.feed(CHUNKED[i:i + cut], out)
        assert bytes(out) == BODY, cut
        assert decoder.complete


def test_the_chunk_decoder_stops_at_the_last_chunk() -> None:
    out = bytearray()
    decoder = Dechunker()
    decoder.feed(chunk(b"abc"), out)
    assert not decoder.complete
    decoder.feed(b"0\r\n\r\nnot part of the body", out)
    assert decoder.complete and bytes(out) == b"abc"


def test_a_collected_answer_is_read_like_a_live_one() -> None:
    answer, frames = read_sse_answer(HEAD + CHUNKED)
    assert answer.status == 200 and answer.chunked and answer.complete
    assert frames.seqs == [1, 2, 3, 4]
    assert frames.last_kind == b"run.status" and frames.ended_terminal

    plain = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + BODY[:-30]
    answer, frames = read_sse_answer(plain)
    assert not answer.chunked and not answer.complete
    assert frames.seqs == [1, 2, 3] and not frames.ended_terminal


@pytest.fixture
async def server() -> AsyncIterator[tuple[SseTarget, asyncio.Queue[bytes | None]]]:
    """A loopback server that answers one request with the byte strings put in `parts`,
    one write each, in order; None ends the answer."""
    parts: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        while (part := await parts.get()) is not None:
            writer.write(part)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    srv = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield SseTarget("tcp", port), parts
        parts.put_nowait(None)  # a test that failed half-way: let the answer end


async def test_the_reader_gets_every_id_in_order_and_the_terminal_status(
        server: tuple[SseTarget, asyncio.Queue[bytes | None]]) -> None:
    target, parts = server
    reader = await open_sse(target, "run_x", timed=True)
    for i in range(0, len(HEAD), 9):  # even the head comes in pieces
        parts.put_nowait(HEAD[i:i + 9])
    parts.put_nowait(chunk(FRAMES[0] + FRAMES[1][:5]))
    await eventually(lambda: reader.seqs, lambda seqs: seqs == [1],
                     "the first frame to be read", timeout=10, interval=0.001)
    parts.put_nowait(chunk(FRAMES[1][5:] + FRAMES[2] + FRAMES[3]) + b"0\r\n\r\n")
    parts.put_nowait(None)
    await asyncio.wait_for(reader.closed, 10)

    assert reader.status == 200 and reader.error is None
    assert reader.seqs == [1, 2, 3, 4]
    assert reader.frames.ended_terminal
    timed = reader.frames.timed_frames()
    assert [(s, k) for s, k, _, _ in timed] == [
        (1, "run.status"), (2, "output.delta"), (3, "output.delta"), (4, "run.status")]
    assert [first for _, _, _, first in timed] == [True, False, False, False]
    arrivals = [t for _, _, t, _ in timed]
    assert arrivals == sorted(arrivals) and arrivals[0] < arrivals[1]


async def test_a_refusal_is_reported_and_releases_the_waiters(
        server: tuple[SseTarget, asyncio.Queue[bytes | None]]) -> None:
    target, parts = server
    reader = await open_sse(target, "run_x")
    parts.put_nowait(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nno run_x!")
    parts.put_nowait(None)
    await asyncio.wait_for(asyncio.gather(reader.headed, reader.closed), 10)
    assert reader.status == 404 and reader.error is not None and "no run_x" in reader.error
    assert reader.seqs == [] and not reader.frames.ended_terminal


def test_check_ids_names_what_is_wrong() -> None:
    check_ids("same", [1, 2, 3], [1, 2, 3])
    with pytest.raises(RuntimeError, match=r"1 missing .* 1 duplicated, 1 out of order"):
        check_ids("bad", [1, 3, 3], [1, 2, 3])
