"""The front's lobby (api/connections.py): a connection whose whole head asks for no stream
gets a slot before the streams and the silent connections accepted ahead of it, and only
as many asking for a stream as the slots let be judged at once. Real sockets (socket
pairs), the lobby's own peek at what each sent."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from llamon_playground.api.connections import OTHER, STREAM, UNSEEN, Lobby, head_kind
from llamon_playground.common.contract import API_PREFIX
from tests.support.waiting import eventually

P = API_PREFIX


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for ours, theirs in made:
        ours.close()
        theirs.close()


def connected(pairs: list[tuple[socket.socket, socket.socket]], sent: bytes) -> socket.socket:
    """The server's side of a connection whose client sent `sent`."""
    ours, theirs = socket.socketpair()
    pairs.append((ours, theirs))
    if sent:
        theirs.sendall(sent)
    return ours


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def socks(taken: list[tuple[socket.socket, str]]) -> list[socket.socket]:
    return [conn for conn, _ in taken]


def test_heads_are_told_apart_by_the_route_declaration() -> None:
    assert head_kind(get(f"{P}/events")) == STREAM
    assert head_kind(get(f"{P}/suite-runs/sr_1/events?after=3")) == STREAM
    assert head_kind(get(f"{P}/host/logs?follow=1")) == STREAM
    assert head_kind(get(f"{P}/host/logs")) == OTHER
    assert head_kind(get("/health")) == OTHER
    assert head_kind(b"GET /health HTTP/1.1\r\nHost: x\r\n") == UNSEEN  # not whole yet


async def test_a_request_that_is_no_stream_goes_first(
        pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    lobby = Lobby(16)
    streams = [connected(pairs, get(f"{P}/events")) for _ in range(3)]
    silent = connected(pairs, b"")
    partial = connected(pairs, b"GET /health HTTP/1.1\r\n")
    probe = connected(pairs, get("/health"))
    for conn in (*streams, silent, partial, probe):
        lobby.add(conn)
    assert lobby.take(1) == [(probe, OTHER)]
    # The rest in the order they came.
    assert socks(lobby.take(10)) == [*streams, silent, partial]
    assert lobby.take(1) == []


async def test_a_connection_gone_before_it_said_anything_is_closed(
        pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    lobby = Lobby(16)
    ours = connected(pairs, b"")
    pairs[-1][1].close()
    lobby.add(ours)
    assert lobby.take(1) == []
    assert ours.fileno() == -1


async def test_close_closes_what_waits(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    lobby = Lobby(16)
    waiting = connected(pairs, get(f"{P}/events"))
    lobby.add(waiting)
    lobby.close()
    assert waiting.fileno() == -1 and lobby.take(1) == []


async def test_a_head_that_comes_after_the_accept_is_judged_when_it_comes(
        pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    lobby = Lobby(16)
    stream = connected(pairs, get(f"{P}/events"))
    late = connected(pairs, b"")  # accepted before its client's head arrived
    lobby.add(stream)
    lobby.add(late)
    assert lobby.waiting[late] == UNSEEN
    pairs[-1][1].sendall(get("/health"))
    await eventually(lambda: lobby.waiting[late], lambda kind: kind == OTHER,
                     "the late head judged")
    assert lobby.take(1) == [(late, OTHER)]
    assert lobby.take(1) == [(stream, STREAM)]



async def test_streams_past_the_number_judged_at_once_wait_and_nothing_else_does(
        pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    lobby = Lobby(16)
    first, second, third = (connected(pairs, get(f"{P}/events")) for _ in range(3))
    silent = connected(pairs, b"")
    probe = connected(pairs, get("/health"))
    for conn in (first, second, third, silent, probe):
        lobby.add(conn)
    # Room for five, but for one stream only: the streams behind it keep their turn.
    assert lobby.take(5, streams=1) == [(probe, OTHER), (first, STREAM), (silent, UNSEEN)]
    assert lobby.take(5, streams=0) == []
    assert lobby.take(5, streams=2) == [(second, STREAM), (third, STREAM)]


async def test_a_head_judged_after_the_accept_wakes_the_accepting(
        pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    woken: list[bool] = []
    lobby = Lobby(16, judged=lambda: woken.append(True))
    late = connected(pairs, b"")
    lobby.add(late)
    assert woken == []
    pairs[-1][1].sendall(get("/health"))
    await eventually(lambda: lobby.waiting[late], lambda kind: kind == OTHER,
                     "the late head judged")
    assert woken == [True]
