"""Shared fixtures: a copy of the example project and the real processes that serve it."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.api import Api
from tests.support.procs import Stack, copy_example, front_url, short_tmpdir, stack_for
from tests.support.transports import transport_env

# Fixtures several test modules share, registered once here instead of imported into each
# module (an imported fixture is an unused name that a parameter then redefines).
pytest_plugins = ["tests.support.door", "tests.support.a2a_host"]


@pytest.fixture
def runtime_base() -> Iterator[Path]:
    path = short_tmpdir("lp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_example(tmp_path)


@pytest.fixture(scope="module")
def front_transport(request: pytest.FixtureRequest) -> str | None:
    """The transport of the fronts a test starts: what `both_transports` or `handover_only`
    (tests/support/transports.py) give it, else None (the environment's, or the default)."""
    return getattr(request, "param", None)


@pytest.fixture
def stack(project: Path, runtime_base: Path, front_transport: str | None) -> Iterator[Stack]:
    with stack_for(project, runtime_base, extra_env=transport_env(front_transport)) as s:
        yield s


@pytest.fixture
def daemon(stack: Stack) -> Stack:
    if stack.daemon is None:  # else `api` started it, beside its front
        stack.start_daemon()
    return stack


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[Api]:
    """The API through a real front, as Studio would use it: the front starts beside the
    daemon (or on the test's `daemon`, when that fixture came first)."""
    _, url = stack.start_front() if stack.daemon is not None else stack.start_daemon_and_front()
    client = Api.for_url(url)
    yield client
    await client.close()


@pytest.fixture
async def direct(daemon: Stack) -> AsyncIterator[Api]:
    """The API straight on the daemon's Unix socket."""
    client = Api.for_socket(str(daemon.settings.socket_path))
    yield client
    await client.close()


@pytest.fixture(scope="module")
def module_daemon(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  front_transport: str | None) -> Iterator[Stack]:
    """One daemon (and one front, when the module's tests ask for `module_api`) shared by a
    module's tests that need no fresh history: each compares what it reads just before and
    after its own request, or reads only what it wrote (a daemon, a front and a Host start
    per test cost about a second). The front, if any, starts beside the daemon."""
    base = short_tmpdir("lpm")
    wants_front = any("module_api" in item.fixturenames for item in request.session.items
                      if item.module is request.module)
    try:
        project = copy_example(tmp_path_factory.mktemp("module"))
        with stack_for(project, base, extra_env=transport_env(front_transport)) as s:
            if wants_front:
                s.start_daemon_and_front()
            else:
                s.start_daemon()
            yield s
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
async def module_api(module_daemon: Stack) -> AsyncIterator[Api]:
    """The API through the module's shared front (started with the daemon, or by the first
    test that asks; a client of the test's own loop)."""
    url = (front_url(module_daemon.fronts[0]) if module_daemon.fronts
           else module_daemon.start_front()[1])
    assert url is not None
    client = Api.for_url(url)
    yield client
    await client.close()


@pytest.fixture
async def module_direct(module_daemon: Stack) -> AsyncIterator[Api]:
    """The API straight on the module's shared daemon's socket."""
    client = Api.for_socket(str(module_daemon.settings.socket_path))
    yield client
    await client.close()
