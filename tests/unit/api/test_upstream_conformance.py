"""The fast relay's own HTTP/1.1 (api/upstream.py, api/relay.py) against h11, a well-kept parser.

Generated answers (Content-Length, chunked with random chunk sizes, extensions and
trailers, read to the close; HEAD, 204 and 304; a second answer pipelined behind the
first), cut into reads at generated places, go through our `Connection` and through an
h11 client. Both must accept with the same status, reason and headers, and end the answer
at the same byte (the relay passes on exactly the bytes h11 read as the body, framing
included), or both must refuse: a bad status line, a bad chunk size or chunk end, a header
without a colon, a bad or conflicting Content-Length, a Transfer-Encoding other than
chunked, a head past the size limit.

The request heads the relay writes are read back by h11 as a server, too.

Deliberate differences, not generated: our client never asks for an interim (1xx) answer,
reads CRLF line ends only (the daemon's aiohttp writes nothing else), and never reuses a
connection that carried bytes past an answer's end (h11 keeps them for the next one).
"""

from __future__ import annotations

import asyncio
import itertools
import string
from dataclasses import dataclass

import h11
import pytest
from aiohttp import HttpVersion, HttpVersion10, HttpVersion11
from aiohttp.test_utils import make_mocked_request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llamon_playground.api.relay import request_head
from llamon_playground.api.upstream import MAX_HEAD, Connection
from llamon_playground.common.request_context import REQUEST_ID

SETTINGS = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOKEN = (string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~").encode()
VCHAR = bytes(range(0x21, 0x7F)) + bytes(range(0x80, 0x100))  # visible, and obs-text
FRAMING = {b"content-length", b"transfer-encoding", b"connection"}


class Wire(asyncio.Transport):
    """The socket under a `Connection`, standing in for a real one so that the test, not
    the kernel, decides where the reads cut the daemon's bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@dataclass(frozen=True)
class Parsed:
    status: int
    reason: bytes
    headers: list[tuple[bytes, bytes]]  # names lower-cased, Transfer-Encoding's value too
    end: int  # where the answer ends in the bytes fed
    reusable: bool


REFUSED = "refused"
INCOMPLETE = "incomplete"
Outcome = Parsed | str


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(data)}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def normal(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(n.lower(), v.lower() if n.lower() == b"transfer-encoding" else v)
            for n, v in headers]


async def _ours(data: bytes, cuts: list[int], head: bool, eof: bool) -> Outcome:
    conn = Connection()
    wire = Wire()
    conn.connection_made(wire)
    conn.begin(b"GET / HTTP/1.1\r\nHost: daemon\r\n\r\n", expect_body=not head)
    for piece in pieces(data, cuts):
        if wire.closed:
            break  # it gave up on the connection: nothing more is read
        conn.data_received(piece)
    if eof and not wire.closed:
        conn.connection_lost(None)
    if conn.failure is not None:
        return REFUSED
    if not conn.complete:
        return INCOMPLETE
    answer = await conn.head()
    body = await conn.read_all()
    head_end = data.index(b"\r\n\r\n") + 4
    assert data[head_end:head_end + len(body)] == body  # the daemon's bytes, untouched
    return Parsed(answer.status, answer.reason.encode("latin-1"),
                  normal([(n.encode("latin-1"), v.encode("latin-1"))
                          for n, v in answer.headers]),
                  head_end + len(body), conn.reusable)


def ours(data: bytes, cuts: list[int], head: bool = False, eof: bool = False) -> Outcome:
    return asyncio.run(_ours(data, cuts, head, eof))


def theirs(data: bytes, cuts: list[int], head: bool = False, eof: bool = False) -> Outcome:
    client = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    client.send(h11.Request(method="HEAD" if head else "GET", target="/",
                            headers=[("Host", "daemon")]))
    client.send(h11.EndOfMessage())
    response: h11.Response | None = None
    ended = False
    try:
        for piece in [*pieces(data, cuts), *([b""] if eof else [])]:
            client.receive_data(piece)
            while not ended:
                event = client.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                if isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.EndOfMessage):
                    ended = True
                elif isinstance(event, h11.InformationalResponse):
                    pytest.fail("interim answers are not generated")
    except h11.RemoteProtocolError:
        return REFUSED
    if not ended or response is None:
        return INCOMPLETE
    left, _closed = client.trailing_data
    end = len(data) - len(left)
    keep = client.their_state is h11.DONE and not left and not eof
    return Parsed(response.status_code, bytes(response.reason),
                  normal(list(response.headers.raw_items())), end, keep)


def agree(data: bytes, cuts: list[int], head: bool = False, eof: bool = False) -> Outcome:
    mine, h11s = ours(data, cuts, head, eof), theirs(data, cuts, head, eof)
    # h11 never lets a connection go back to a pool while HTTP/1.0 (with or without
    # keep-alive); the daemon answers an HTTP/1.1 request in HTTP/1.1.
    if (isinstance(mine, Parsed) and isinstance(h11s, Parsed)
            and not data.startswith(b"HTTP/1.1")):
        h11s = Parsed(h11s.status, h11s.reason, h11s.headers, h11s.end, mine.reusable)
    assert mine == h11s, (data[:400], cuts)
    return mine


# -- generated answers ---------------------------------------------------------------------------

names = st.binary(min_size=1, max_size=16).map(
    lambda raw: bytes(TOKEN[b % len(TOKEN)] for b in raw)).filter(
    lambda n: n.lower() not in FRAMING)
words = st.binary(min_size=1, max_size=12).map(
    lambda raw: bytes(VCHAR[b % len(VCHAR)] for b in raw))
values = st.lists(words, max_size=4).map(b" ".join)
ows = st.sampled_from([b"", b" ", b"\t", b"  "])


@st.composite
def header_lines(draw: st.DrawFn, max_size: int = 8) -> list[bytes]:
    lines = []
    for name, value in draw(st.lists(st.tuples(names, values), max_size=max_size)):
        lines.append(name + b":" + draw(ows) + value + (draw(ows) if value else b""))
    return lines


@st.composite
def chunked_body(draw: st.DrawFn, payload: bytes) -> bytes:
    out = bytearray()
    pos = 0
    while pos < len(payload):
        size = draw(st.integers(1, len(payload) - pos))
        out += chunk_line(draw, size) + payload[pos:pos + size] + b"\r\n"
        pos += size
    out += chunk_line(draw, 0)
    out += b"".join(line + b"\r\n" for line in draw(header_lines(max_size=3)))  # trailers
    return bytes(out + b"\r\n")


def chunk_line(draw: st.DrawFn, size: int) -> bytes:
    digits = b"%x" % size
    if draw(st.booleans()):
        digits = digits.upper()
    digits = b"0" * draw(st.integers(0, 2)) + digits
    ext = b""
    if draw(st.booleans()):
        ext = b";" + draw(names) + draw(st.sampled_from([b"", b"=1", b'="a b"']))
    return digits + ext + draw(st.sampled_from([b"", b" ", b"\t"])) + b"\r\n"


@dataclass(frozen=True)
class Answer:
    data: bytes
    head: bool  # answers a HEAD request
    eof: bool  # the daemon closes after it (an answer read to the close needs it)


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0"]))
    status = draw(st.sampled_from([200, 201, 204, 304, 404, 409, 500, 503]))
    reason = draw(st.sampled_from([b" OK", b" Not Found", b" a reason with  spaces", b" ",
                                   b""]))
    head = draw(st.booleans()) if status == 200 else False
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    payload = draw(st.binary(max_size=600))
    lines = draw(header_lines())
    connection = draw(st.sampled_from([None, b"close", b"keep-alive"]))
    if connection is not None:
        lines.insert(draw(st.integers(0, len(lines))), b"Connection: " + connection)
    bodiless = head or status in (204, 304)
    body = b""
    if framing == "length":
        lines.append(b"Content-Length: %s%d" % (b"0" * draw(st.integers(0, 1)), len(payload)))
        body = payload
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"Chunked"])))
        body = draw(chunked_body(payload))
    else:
        body = payload
    data = version + b" %d" % status + reason + b"\r\n" + b"".join(
        line + b"\r\n" for line in lines) + b"\r\n" + (b"" if bodiless else body)
    eof = framing == "close" and not bodiless
    if not eof and draw(st.booleans()):  # a second answer behind it
        data += b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    return Answer(data, head, eof)


@st.composite
def cut_answers(draw: st.DrawFn, source: st.SearchStrategy[Answer]) -> tuple[Answer, list[int]]:
    answer = draw(source)
    cuts = draw(st.lists(st.integers(0, len(answer.data)), max_size=6))
    if draw(st.booleans()):
        cuts += range(0, len(answer.data), draw(st.integers(1, 7)))  # read by a few bytes
    return answer, cuts


@SETTINGS
@given(cut_answers(answers()))
def test_generated_answers_parse_as_h11_parses_them(case: tuple[Answer, list[int]]) -> None:
    answer, cuts = case
    outcome = agree(answer.data, cuts, answer.head, answer.eof)
    assert isinstance(outcome, Parsed), outcome  # every generated answer is well formed


# -- malformed answers ---------------------------------------------------------------------------

def corrupt(answer: Answer, how: str, draw: st.DrawFn) -> bytes:
    data = answer.data
    head, _, rest = data.partition(b"\r\n\r\n")
    _status_line, _, headers = head.partition(b"\r\n")
    if how == "status_line":
        bad = draw(st.sampled_from([b"HTTP/1.1 20 OK", b"HTTP/1.1 2000 OK", b"HTTP/1.1 abc OK",
                                    b"HTTX/1.1 200 OK", b"HTTP/1.1", b"200 OK",
                                    b"HTTP/1.1  200 OK", b"HTTP/1.1 200OK", b"SSH-2.0-x"]))
        return bad + b"\r\n" + headers + b"\r\n\r\n" + rest
    if how == "no_colon":
        return head + b"\r\nNo colon in this line\r\n\r\n" + rest
    if how == "content_length":
        bad = draw(st.sampled_from([b"abc", b"-1", b"1.5", b"0x10", b"\xb2",
                                    b"5\r\nContent-Length: 6"]))
        return head + b"\r\nContent-Length: " + bad + b"\r\n\r\n" + rest
    if how == "transfer_encoding":
        bad = draw(st.sampled_from([b"gzip, chunked", b"identity",
                                    b"chunked\r\nTransfer-Encoding: chunked"]))
        return head + b"\r\nTransfer-Encoding: " + bad + b"\r\n\r\n" + rest
    raise AssertionError(how)


@st.composite
def malformed_heads(draw: st.DrawFn) -> tuple[bytes, list[int], bool]:
    answer = draw(answers())
    how = draw(st.sampled_from(["status_line", "no_colon", "content_length",
                                "transfer_encoding"]))
    data = corrupt(answer, how, draw)
    return data, draw(st.lists(st.integers(0, len(data)), max_size=4)), answer.head


@SETTINGS
@given(malformed_heads())
def test_a_malformed_head_is_refused_by_both(case: tuple[bytes, list[int], bool]) -> None:
    data, cuts, head = case
    assert agree(data, cuts, head, eof=True) == REFUSED


@st.composite
def broken_chunks(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    payload = draw(st.binary(min_size=1, max_size=200))
    size = len(payload)
    bad = draw(st.sampled_from([
        b"%x\r\n" % size + payload + b"XY0\r\n\r\n",  # the chunk not ended by CRLF
        b"%x\r\n" % size + payload + b"\n0\r\n\r\n",
        b"zz\r\n", b"-1\r\n", b"0x1a\r\n", b"1_0\r\n", b"\r\n", b" \r\n", b"+5\r\n",
        b"5 5\r\n", b";ext\r\n"]))
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + bad
    return data, draw(st.lists(st.integers(0, len(data)), max_size=4))


@SETTINGS
@given(broken_chunks())
def test_a_bad_chunk_size_or_end_is_refused_by_both(case: tuple[bytes, list[int]]) -> None:
    data, cuts = case
    assert agree(data, cuts, eof=True) == REFUSED


# -- limits -----------------------------------------------------------------------------------

READ = 16 * 1024  # a read of the socket, smaller than the limit
# Both parsers check the limit while a head is incomplete, so where the reads cut decides
# about a head within one read of the limit; these are clear of it either way.


def head_with(lines: list[bytes]) -> bytes:
    return (b"HTTP/1.1 200 OK\r\n" + b"".join(line + b"\r\n" for line in lines)
            + b"Content-Length: 2\r\n\r\nok")


@pytest.mark.parametrize(("lines", "outcome"), [
    ([b"X-H%d: value" % i for i in range(2000)], "parsed"),  # many headers, under the limit
    ([b"X-H%d: value" % i for i in range(8000)], REFUSED),  # too many: the head is too large
    ([b"X-Big: " + b"v" * (MAX_HEAD - 100)], "parsed"),
    ([b"X-Big: " + b"v" * (MAX_HEAD + READ)], REFUSED),  # one header too large
])
def test_a_head_past_the_limit_is_refused_by_both(lines: list[bytes], outcome: str) -> None:
    data = head_with(lines)
    got = agree(data, list(range(0, len(data), READ)), eof=False)
    assert (got if got == REFUSED else "parsed") == outcome


def test_an_answer_cut_short_is_never_taken_whole() -> None:
    """The daemon closing mid-body: ours refuses (503 to the client), h11 says the same."""
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"
    assert agree(data, [], eof=True) == REFUSED
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"
    assert agree(chunked, [], eof=True) == REFUSED
    assert agree(chunked, [], eof=False) == INCOMPLETE


# -- the request head the relay writes ------------------------------------------------------------

segments = st.lists(st.sampled_from(["a", "Z", "0", "-", ".", "_", "~", "%20", "%C3%A9", ":"]),
                    min_size=1, max_size=6).map("".join)
paths = st.lists(segments, min_size=1, max_size=4).map(
    lambda parts: "/api/playground/v1/" + "/".join(parts))
queries = st.sampled_from(["", "?after=12", "?follow=1&lines=5", "?q=a%20b&x="])
header_values = words.map(lambda raw: raw.decode("latin-1")).filter(str.isascii)


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(st.sampled_from(["GET", "POST", "PATCH", "DELETE", "HEAD"]), paths, queries,
       st.dictionaries(st.sampled_from(["Content-Type", "Accept", "Last-Event-ID", "Cookie",
                                        "Authorization"]), header_values),
       st.sampled_from([HttpVersion11, HttpVersion10]),
       st.sampled_from(["", "Content-Length: 7", "Transfer-Encoding: chunked",
                        "Connection: close"]))
def test_the_request_head_h11_reads_is_the_one_meant(
        method: str, path: str, query: str, headers: dict[str, str], version: HttpVersion,
        extra: str) -> None:
    """What goes up to the daemon (api/relay.py's request_head, lent or relayed), read by
    h11 as a server: the method, the target as the client sent it, the named headers and
    the front's own; never the client's Authorization or Cookie."""
    request = make_mocked_request(method, path + query, headers=headers, version=version)
    request[REQUEST_ID] = "req_0123abcd_1"
    server = h11.Connection(h11.SERVER)
    server.receive_data(request_head(request, extra))
    event = server.next_event()
    assert isinstance(event, h11.Request), event
    assert (event.method, event.target) == (method.encode(), (path + query).encode())
    assert event.http_version == b"1.%d" % version.minor
    got = [(n.decode(), v.decode("latin-1")) for n, v in event.headers.raw_items()]
    named = [(n, headers[n]) for n in ("Content-Type", "Accept", "Last-Event-ID")
             if n in headers]
    framing = [tuple(extra.split(": "))] if extra else []
    assert got == [("Host", "daemon"), ("X-Request-Id", "req_0123abcd_1"), *named, *framing]
