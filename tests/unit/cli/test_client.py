"""cli/client.py without a daemon: error answers and a socket nobody serves become the
client's own errors, and streamed events are typed. Against the real daemon:
tests/e2e/test_client.py."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from llamon_playground.cli.client import (
    ActiveRunConflict,
    ApiError,
    ConnectionLost,
    DaemonNotRunning,
    Event,
    PlaygroundClient,
    PlaygroundError,
    health,
)
from llamon_playground.cli.errors import api_error
from llamon_playground.common.config import Settings, build_settings
from llamon_playground.common.contract import RunStatus
from llamon_playground.common.sse import SseEvent
from tests.support.procs import short_tmpdir


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    base = short_tmpdir("lpc")
    yield build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(base)})
    shutil.rmtree(base, ignore_errors=True)


def test_error_answers_map_to_the_hierarchy() -> None:
    conflict = api_error(409, {"detail": {"error": "active_run_conflict", "message": "busy",
                                          "active_run_id": "run_1"}})
    assert isinstance(conflict, ActiveRunConflict) and conflict.active_run_id == "run_1"
    assert conflict.status == 409 and conflict.code == "active_run_conflict"
    missing = api_error(404, {"detail": {"error": "run_not_found", "message": "no run r"}})
    assert type(missing) is ApiError and missing.code == "run_not_found"
    assert str(missing) == "no run r (run_not_found)"
    other = api_error(409, {"detail": {"error": "run_not_active", "message": "m"}})
    assert type(other) is ApiError
    for body in (None, b"<html>", {"detail": "text"}):
        odd = api_error(502, body)
        assert odd.code == "http_error" and odd.message == "HTTP 502"
    assert issubclass(ConnectionLost, DaemonNotRunning)
    assert issubclass(DaemonNotRunning, PlaygroundError) and issubclass(ApiError, PlaygroundError)


def test_events_are_typed() -> None:
    event = Event.from_sse(SseEvent("run.status", '{"status": "completed"}', "12"))
    assert event == Event(12, "run.status", {"status": "completed"})
    assert event.status is RunStatus.COMPLETED and event.terminal
    running = Event.from_sse(SseEvent("run.status", '{"status": "running"}', "3"))
    assert running.status is RunStatus.RUNNING and not running.terminal
    delta = Event.from_sse(SseEvent("output.delta", '{"text": "hi"}'))
    assert delta.id is None and delta.status is None and not delta.terminal


async def test_no_daemon_is_daemon_not_running(settings: Settings) -> None:
    with pytest.raises(DaemonNotRunning):
        await health(settings)
    async with PlaygroundClient(settings) as client:
        with pytest.raises(DaemonNotRunning) as caught:
            await client.sessions()
        assert type(caught.value) is DaemonNotRunning
        with pytest.raises(DaemonNotRunning):
            async for _ in client.stream("run_x"):
                pass


async def test_a_runtime_dir_that_is_not_ours_is_refused(settings: Settings,
                                                        tmp_path: Path) -> None:
    settings.runtime_base.mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").mkdir()
    settings.runtime_dir.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DaemonNotRunning, match="not a directory of ours"):
        async with PlaygroundClient(settings):
            pass
