"""The relay's client reads only an answer's head and where its body ends (api/upstream.py):
a chunked body cut anywhere by the reads, trailers included, ends exactly where it ends."""

from __future__ import annotations

import pytest

from llamon_playground.api.upstream import BadAnswer, ChunkedEnd, parse_head

BODY = (b"5\r\nhello\r\n1a;ext=1\r\n" + b"x" * 26 + b"\r\n"
        b"0\r\nTrailer: yes\r\n\r\n")


def end_of(body: bytes, cuts: list[int]) -> int:
    """Feed `body` followed by the next answer's bytes, cut at `cuts`; where the body ended."""
    data = body + b"HTTP/1.1 200 OK\r\n"
    tracker = ChunkedEnd()
    start = 0
    for cut in [*cuts, len(data)]:
        used = tracker.feed(data[start:cut])
        if used <= 0:
            return start - used
        start = cut
    raise AssertionError("the end was never found")


def test_a_chunked_body_ends_after_its_trailers_wherever_the_reads_cut_it() -> None:
    assert end_of(BODY, []) == len(BODY)
    for cut in range(1, len(BODY)):
        assert end_of(BODY, [cut]) == len(BODY), cut
    assert end_of(BODY, list(range(1, len(BODY)))) == len(BODY)  # a byte at a time


@pytest.mark.parametrize("body", [b"zz\r\n", b"-1\r\n", b"0x1a\r\n", b"1_0\r\n",
                                  b"\r\n"])
def test_a_bad_chunk_size_line_is_a_bad_answer(body: bytes) -> None:
    with pytest.raises(BadAnswer):
        ChunkedEnd().feed(body)


def test_the_head_gives_status_headers_and_framing() -> None:
    head = parse_head(b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 12")
    assert (head.status, head.reason, head.length, head.chunked) == (404, "Not Found", 12, False)
    assert head.headers == [("Content-Type", "application/json"), ("Content-Length", "12")]
    assert head.keep_alive
    chunked = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5")
    assert (chunked.length, chunked.chunked) == (None, True)  # chunked wins over a length


@pytest.mark.parametrize(("raw", "keep"), [
    (b"HTTP/1.1 200 OK\r\nConnection: close", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0", False),  # an HTTP/1.0 answer closes...
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive", True)])  # ...unless it says otherwise
def test_which_answers_leave_their_connection_open(raw: bytes, keep: bool) -> None:
    assert parse_head(raw).keep_alive is keep


@pytest.mark.parametrize("raw", [b"SSH-2.0-x", b"HTTP/1.1 abc OK",
                                 b"HTTP/1.1 200 OK\r\nno colon here",
                                 b"HTTP/1.1 200 OK\r\nContent-Length: -1",
                                 b"HTTP/1.1 200 OK\r\nContent-Length: \xb2",
                                 b"HTTP/1.1 2000 OK"])
def test_a_head_that_is_not_http_is_a_bad_answer(raw: bytes) -> None:
    with pytest.raises(BadAnswer):
        parse_head(raw)
