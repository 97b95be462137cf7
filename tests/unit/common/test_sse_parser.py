"""common/sse.py: the one SSE parser (client, A2A client, tests), against the WHATWG rules."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from llamon_playground.common.sse import SseEvent, SseParser, aiter_sse


def parse(*chunks: bytes) -> list[SseEvent]:
    parser = SseParser()
    return [event for chunk in chunks for event in parser.feed(chunk)]


def every_split(body: bytes) -> list[list[bytes]]:
    """The body as two chunks cut at each position, and one byte at a time."""
    return [[body[:i], body[i:]] for i in range(len(body) + 1)] + [
        [body[i:i + 1] for i in range(len(body))]]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert parse(b"data: one\ndata: two\ndata:three\n\n") == [
        SseEvent("message", "one\ntwo\nthree")]


def test_fields_of_one_event_and_the_default_type() -> None:
    body = b"id: 7\nevent: run.status\ndata: {\"a\": 1}\n\ndata: plain\n\n"
    assert parse(body) == [SseEvent("run.status", '{"a": 1}', "7"),
                           SseEvent("message", "plain", "7")]  # the last id stays in force


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending(newline: bytes) -> None:
    body = newline.join([b"id: 1", b"event: e", b"data: a", b"data: b", b"", b"data: c", b"",
                         b""])
    assert parse(body) == [SseEvent("e", "a\nb", "1"), SseEvent("message", "c", "1")]


@pytest.mark.parametrize("body", [
    b"id: 1\r\nevent: e\r\ndata: x\r\ndata: y\r\n\r\n: ping\r\n\r\ndata: z\r\n\r\n",
    b"id: 1\revent: e\rdata: x\rdata: y\r\r: ping\r\rdata: z\r\r",
    b"id: 1\nevent: e\ndata: x\ndata: y\n\n: ping\n\ndata: z\n\n",
], ids=["CRLF", "CR", "LF"])
def test_chunk_boundaries_anywhere_give_the_same_events(body: bytes) -> None:
    expected = [SseEvent("e", "x\ny", "1"), SseEvent("message", "z", "1")]
    assert parse(body) == expected
    for chunks in every_split(body):
        assert parse(*chunks) == expected, chunks


def test_a_cut_between_cr_and_lf_is_one_line_end_not_two() -> None:
    # Read as two line ends, "\r" + "\n" would be a blank line and dispatch "a" early,
    # without its second data line.
    assert parse(b"data: a\r", b"\ndata: b\r\n\r\n") == [SseEvent("message", "a\nb")]
    assert parse(b"data: a\r", b"", b"\n", b"\r\n") == [SseEvent("message", "a")]


def test_comments_are_skipped_and_dispatch_nothing() -> None:
    assert parse(b": keep-alive\n\n:\n\n") == []
    assert parse(b"data: a\n: between\ndata: b\n\n") == [SseEvent("message", "a\nb")]


def test_no_blank_line_at_the_end_means_no_event() -> None:
    assert parse(b"data: complete\n\ndata: cut off\n") == [SseEvent("message", "complete")]
    assert parse(b"data: cut off") == []


def test_a_block_without_data_is_not_an_event_but_its_id_counts() -> None:
    assert parse(b"event: lonely\nid: 3\n\ndata: x\n\n") == [SseEvent("message", "x", "3")]


def test_ids_stay_until_changed_and_an_empty_id_resets() -> None:
    body = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\nid\ndata: d\n\n"
    assert [e.id for e in parse(body)] == ["1", "1", "2", ""]
    parser = SseParser()
    parser.feed(b"id: 5\ndata: a\n\n")
    assert parser.last_event_id == "5"


def test_an_id_holding_nul_is_ignored() -> None:
    assert parse(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n")[1].id == "1"


def test_retry_takes_digits_only() -> None:
    events = parse(b"retry: 1500\ndata: a\n\nretry: soon\ndata: b\n\nretry: 20\ndata: c\n\n")
    assert [e.retry for e in events] == [1500, 1500, 20]


def test_only_one_space_after_the_colon_is_dropped_and_a_bare_name_is_empty() -> None:
    assert parse(b"data:  two spaces\n\n") == [SseEvent("message", " two spaces")]
    assert parse(b"data\n\n") == [SseEvent("message", "")]
    assert parse(b"data: a:b\n\n") == [SseEvent("message", "a:b")]


def test_unknown_fields_are_ignored() -> None:
    assert parse(b"foo: bar\ndata: x\n\n") == [SseEvent("message", "x")]


def test_a_leading_bom_is_dropped_even_when_split() -> None:
    body = b"\xef\xbb\xbfdata: x\n\n"
    for chunks in every_split(body):
        assert parse(*chunks) == [SseEvent("message", "x")], chunks
    assert parse(b"data: \xef\xbb\xbfx\n\n") == [SseEvent("message", "\ufeffx")]  # not leading


def test_utf8_split_inside_a_character() -> None:
    body = "data: héllo ✓\n\n".encode()
    for chunks in every_split(body):
        assert parse(*chunks) == [SseEvent("message", "héllo ✓")], chunks


def test_many_events_in_one_chunk_and_one_long_line_in_many() -> None:
    body = b"".join(b"id: %d\nevent: output.delta\ndata: {\"text\": \"t%d\"}\n\n" % (i, i)
                    for i in range(1, 5001))
    events = parse(body)
    assert [e.id for e in events] == [str(i) for i in range(1, 5001)]
    long_value = b"x" * 200_000
    chunks = [b"data: "] + [long_value[i:i + 1000] for i in range(0, len(long_value), 1000)]
    assert parse(*chunks, b"\n\n") == [SseEvent("message", long_value.decode())]


async def test_aiter_sse_reads_an_async_body() -> None:
    async def body() -> AsyncIterator[bytes]:
        for chunk in (b"id: 1\nda", b"ta: a\r", b"\n\r\n", b"data: tail"):
            yield chunk
    assert [e async for e in aiter_sse(body())] == [SseEvent("message", "a", "1")]


def test_a_line_over_the_limit_stops_the_parser_keeping_the_events_before() -> None:
    parser = SseParser(max_line=100, max_event=1000)
    events = parser.feed(b"data: small\n\ndata: " + b"x" * 80)
    assert [e.data for e in events] == ["small"] and parser.overflow is None
    assert parser.feed(b"x" * 100) == [] and parser.overflow is not None
    assert "line" in parser.overflow.what and parser.overflow.limit == 100
    assert parser.feed(b"\n\ndata: later\n\n") == [], "nothing more is taken"


def test_an_event_over_the_limit_stops_the_parser() -> None:
    parser = SseParser(max_line=1000, max_event=100)
    fits = b"data: " + b"a" * 50 + b"\ndata: " + b"b" * 49 + b"\n\n"  # 50 + 1 + 49 = 100
    over = b"data: first\n\ndata: " + b"a" * 50 + b"\ndata: " + b"b" * 50 + b"\n\n"
    assert len(parser.feed(fits)[0].data) == 100 and parser.overflow is None
    assert [e.data for e in parser.feed(over)] == ["first"]
    assert parser.overflow is not None and "event" in parser.overflow.what


def test_a_long_line_arriving_whole_is_caught_too() -> None:
    parser = SseParser(max_line=100)
    assert parser.feed(b"data: ok\n\ndata: " + b"x" * 200 + b"\n\n") == [
        SseEvent("message", "ok")]
    assert parser.overflow is not None
