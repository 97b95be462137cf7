"""Fronts with their door shut (token auth on), and raw HTTP to poke at the door.

`start_front` starts `llamon-playground front` the way a user does, under the Stack that owns
it (so teardown stops it), and reads the token the front wrote. `raw_request` speaks HTTP/1.1
by hand, so a test can send what a well-behaved client library refuses to (a non-ASCII or
10 kB Host, no Host at all, a body larger than it declares).
"""

from __future__ import annotations

import select
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from llamon_playground.common.contract import API_PREFIX
from tests.support.procs import (
    REPO,
    Proc,
    Stack,
    copy_example,
    front_url,
    short_tmpdir,
    stack_for,
    wait_for,
)
from tests.support.transports import transport_env

P = API_PREFIX


@dataclass
class Front:
    proc: Proc
    url: str  # http://127.0.0.1:PORT (no trailing slash)
    port: int
    token: str | None

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def session(self, headers: dict[str, str] | None = None,
                **kwargs: Any) -> aiohttp.ClientSession:
        """A client that sends the token (and `headers`) on every request."""
        return aiohttp.ClientSession(base_url=self.url, headers={**self.auth(), **(headers or {})},
                                     **kwargs)


def running_daemon(factory: pytest.TempPathFactory, name: str,
                   extra_env: dict[str, str] | None = None) -> Iterator[Stack]:
    """A daemon on a copy of the example, for a module-scoped fixture to share (read-mostly
    tests: starting one per test would cost a second each)."""
    base = short_tmpdir("lp" + name[:3])
    with stack_for(copy_example(factory.mktemp(name)), base, extra_env=extra_env) as stack:
        stack.start_daemon()
        yield stack
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def door_stack(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest,
               front_transport: str | None) -> Iterator[Stack]:
    """A module's shared daemon (tests/conftest.py registers this module's fixtures), its fronts
    on the module's transport (tests/support/transports.py)."""
    yield from running_daemon(tmp_path_factory, request.module.__name__.rsplit("_", 1)[-1],
                              extra_env=transport_env(front_transport))


@pytest.fixture(scope="module")
def front(door_stack: Stack) -> Front:
    """A module's shared front, token auth on."""
    return start_front(door_stack)


def start_front(stack: Stack, *args: str, global_args: tuple[str, ...] = (),
                env: dict[str, str] | None = None, command: str = "front") -> Front:
    """`llamon-playground [global_args] front PROJECT --port 0 [args]` (or `up`).

    The front makes its own token unless `env` gives one: a token the Stack may set for its
    own fronts is left out, these tests are about where the token comes from."""
    log = stack.runtime_base / f"door-front-{len(stack.fronts)}.log"
    base_env = {k: v for k, v in stack.env.items() if k != "LLAMON_PLAYGROUND_TOKEN"}
    proc = Proc([sys.executable, "-m", "llamon_playground", *global_args, command,
                 str(stack.project), "--port", "0", *args], {**base_env, **(env or {})}, log, REPO)
    stack.fronts.append(proc)
    url = wait_for(lambda: front_url(proc), 30, "the front's URL")
    token_file = stack.settings.front_token_path
    token = token_file.read_text().strip() if token_file.exists() else None
    return Front(proc, url, int(url.rsplit(":", 1)[1]), token)


def cli(stack: Stack, *args: str, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "llamon_playground", *args],
                          env={**stack.env, **(env or {})}, cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, check=False)


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def raw_request(port: int, head: bytes, body: bytes = b"", timeout: float = 10) -> RawAnswer:
    """Send `head` (request line + headers, no blank line) and `body`; read the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.rstrip(b"\r\n") + b"\r\nConnection: close\r\n\r\n" + body)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> RawAnswer:
    """One answer: headers, then Content-Length bytes (or up to the close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers["content-length"]) if "content-length" in headers else None
    while length is None or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return RawAnswer(int(lines[0].split()[1]), headers, body)


PIECE = 16 * 1024


def send_refused(sock: socket.socket, data: bytes) -> bytes:
    """Send a request the server will refuse part-way, in pieces, stopping once its answer is
    there, and read the answer to the end. A socket closed with input still unread sends a
    reset, which can wipe out the answer before it is read: sending no more than needed
    keeps that input small."""
    for start in range(0, len(data), PIECE):
        try:
            sock.sendall(data[start:start + PIECE])
        except (BrokenPipeError, ConnectionResetError):
            break  # answered and closed before the whole request was sent
        if select.select([sock], [], [], 0.2)[0]:
            break
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer
