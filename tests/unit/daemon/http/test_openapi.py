"""The OpenAPI document and the daemon's router, both from the one route declaration: every
public route, and nothing else."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.common.config import build_settings
from llamon_playground.common.wire.routes import CAPTURE_PATH, ROUTES
from llamon_playground.daemon.app import build_services, make_app, shutdown
from llamon_playground.daemon.http.openapi import (
    FRONT_OPERATIONS,
    OPERATIONS,
    PREFIX,
    build_document,
)
from tests.support.procs import copy_example

PRIVATE_ROUTES = {("POST", CAPTURE_PATH)}  # daemon socket only, never relayed by the front


async def test_document_lists_exactly_the_routes_the_daemon_serves(tmp_path: Path) -> None:
    settings = build_settings(copy_example(tmp_path),
                              {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "run")})
    services = await build_services(settings, {})
    try:
        app = make_app(services)
        served = {(route.method, route.resource.canonical) for route in app.router.routes()
                  if route.method != "HEAD" and route.resource is not None}
    finally:
        await shutdown(services)
    public = {(m, p) for m, p in served if p.startswith(PREFIX + "/") or p == "/health"}
    assert served - public == PRIVATE_ROUTES  # a new route outside the API is a decision
    assert served == {(r.method, r.full_path) for r in ROUTES if not r.front}
    documented = {(op.method, op.full_path) for op in OPERATIONS}
    assert documented == public
    paths = build_document()["paths"]
    assert {(m.upper(), p) for p, ops in paths.items() for m in ops} == documented | {
        (op.method, op.full_path) for op in FRONT_OPERATIONS}


def walk(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(
        value, list) else ()
    for child in children:
        yield from walk(child)


def test_document_is_whole() -> None:
    doc = orjson.loads(orjson.dumps(build_document()))
    assert doc["openapi"].startswith("3.1")
    schemas = doc["components"]["schemas"]
    refs = {v["$ref"] for v in walk(doc) if isinstance(v, dict) and "$ref" in v}
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    for path, ops in doc["paths"].items():
        for op in ops.values():
            declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", path)), path
            assert "401" in op["responses"] and "500" in op["responses"]
            for link in op["responses"].get("201", op["responses"].get("202", {})).get(
                    "links", {}).values():
                assert link["operationId"] in ids


def test_the_daemon_loads_the_document_only_when_asked() -> None:
    # Asked for seldom, kept for days: the daemon imports the document's module on the
    # route's first request (tests/e2e/test_openapi.py asks for it through a front).
    probe = ("import sys, llamon_playground.daemon.app; "
             "print('llamon_playground.daemon.http.openapi' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "False"
