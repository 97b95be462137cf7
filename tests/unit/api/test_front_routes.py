"""The front learns the daemon's routes from their one declaration (common/wire/routes.py):
every stream the daemon's OpenAPI document declares is lent, the suite run's events among
them, and a route's body limit comes from the same place."""

from __future__ import annotations

import re
from pathlib import Path

from llamon_playground.api.limits import IMPORT_BODY, SMALL_BODY, body_limit
from llamon_playground.common.config import Settings
from llamon_playground.common.contract import API_PREFIX
from llamon_playground.common.wire.routes import front_routes, stream_routes
from llamon_playground.daemon.http.openapi import OPERATIONS, SSE

P = API_PREFIX


def concrete(path: str) -> str:
    """A request path for a declared one: each parameter a plausible id."""
    return re.sub(r"\{[^}]+\}", "r_0123abcd", path)


def test_every_stream_the_daemon_declares_is_lent() -> None:
    streams = [op for op in OPERATIONS if op.media == SSE]
    assert {op.path for op in streams} >= {"/runs/{run_id}/events", "/events",
                                          "/suite-runs/{suite_run_id}/events"}
    for op in streams:
        assert front_routes().is_stream(op.method, concrete(op.full_path), frozenset()), op.path


def test_a_suite_run_s_events_are_lent() -> None:
    assert front_routes().is_stream("GET", f"{P}/suite-runs/sr_1/events", frozenset())
    assert not front_routes().is_stream("GET", f"{P}/suite-runs/sr_1", frozenset())
    assert not front_routes().is_stream("POST", f"{P}/suite-runs/sr_1/events", frozenset())


def test_the_host_log_is_a_stream_only_when_followed() -> None:
    assert front_routes().is_stream("GET", f"{P}/host/logs", frozenset({"follow"}))
    assert not front_routes().is_stream("GET", f"{P}/host/logs", frozenset({"after"}))


def test_each_declared_stream_is_a_route_of_the_daemon() -> None:
    declared = {(op.method, op.path) for op in OPERATIONS}
    for route in stream_routes():
        assert ("GET", route.path) in declared, route


def test_body_limits_follow_the_declaration(tmp_path: Path) -> None:
    settings = Settings(project_dir=tmp_path, runtime_base=tmp_path)
    assert body_limit(settings, "POST", f"{P}/bundles/import") == IMPORT_BODY
    assert body_limit(settings, "POST", f"{P}/sessions/s_1/runs") == settings.max_request_bytes
    assert body_limit(settings, "POST", f"{P}/runs/r_1/resume") == settings.max_request_bytes
    assert body_limit(settings, "POST", f"{P}/runs/r_1/rerun") == settings.max_request_bytes
    assert body_limit(settings, "POST", f"{P}/sessions") == SMALL_BODY
    assert body_limit(settings, "GET", f"{P}/bundles/import") == SMALL_BODY
