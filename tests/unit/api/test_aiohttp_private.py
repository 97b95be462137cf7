"""The product touches aiohttp's private parts only in api/aiohttp_adapter.py, which checks
them at the front's start and falls back to the plain transport when they fail.

The fallback's test fakes a fault: an aiohttp release without what the adapter relies on
cannot be installed here, so the test takes the name away (monkeypatch) and runs the real
self-test and the real front start-up path's choice against it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import aiohttp.http_writer
import pytest

from llamon_playground.api import aiohttp_adapter
from tests.support.aiohttp_private import private_uses, scan

ROOT = Path(__file__).resolve().parents[3]
ADAPTER = frozenset({"api/aiohttp_adapter.py"})


def test_no_module_but_the_adapter_touches_aiohttp_private_names() -> None:
    assert scan(ROOT, ADAPTER) == []


def test_the_adapter_is_where_they_are() -> None:
    found = private_uses((ROOT / "api/aiohttp_adapter.py").read_text(), "adapter",
                         "llamon_playground.api.aiohttp_adapter")
    assert any("aiohttp.http_writer" in line for line in found)


@pytest.mark.parametrize(("snippet", "said"), [
    ("from aiohttp.web_protocol import RequestHandler", "imports from aiohttp.web_protocol"),
    ("import aiohttp.http_writer", "imports aiohttp.http_writer"),
    ("from aiohttp.helpers import _SENTINEL", "imports aiohttp.helpers._SENTINEL"),
    (("from aiohttp import web\n"
     "class S(web.Server):\n"
     "    def __call__(self):\n"
     "        return web.RequestHandler(self, loop=self._loop, **self._kwargs)\n"),
     "S uses aiohttp's _loop"),
    (("from aiohttp import web\n"
     "class R(web.AppRunner):\n"
     "    async def _make_server(self):\n"
     "        return await super()._make_server()\n"),
     "R overrides aiohttp's _make_server"),
    (("from aiohttp import web\n"
     "class H(web.RequestHandler):\n"
     "    def connection_lost(self, exc):\n"
     "        task = self._task_handler\n"),
     "H uses aiohttp's _task_handler"),
    ("def cancel(request):\n    request._cancel(None)\n", "uses _cancel"),
    ("def swap(server, cls):\n    server.__class__ = cls\n", "assigns __class__"),
])
def test_the_scan_finds_each_kind_of_private_use(snippet: str, said: str) -> None:
    found = private_uses(snippet, "snippet")
    assert found and any(said in line for line in found), found


def test_own_private_names_are_not_aiohttp_s() -> None:
    own = ("import asyncio\n"
           "class Pool:\n"
           "    def __init__(self):\n"
           "        self._loop = asyncio.get_event_loop_policy()\n"
           "    def loop(self, other):\n"
           "        return other._loop\n"
           "from aiohttp import web\n"
           "class Answer(web.StreamResponse):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self._kept_by_us = True\n")
    assert private_uses(own, "snippet") == []


async def test_the_self_test_passes_on_this_aiohttp() -> None:
    await aiohttp_adapter.self_test()
    assert await aiohttp_adapter.choose_transport("fast") == "fast"


async def test_a_missing_name_falls_back_to_plain_with_one_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # The fault faked: an aiohttp whose http_writer has no StreamWriter any more.
    monkeypatch.delattr(aiohttp.http_writer, "StreamWriter")
    caplog.set_level(logging.DEBUG)
    assert await aiohttp_adapter.choose_transport("fast") == "plain"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "front transport: plain" in warnings[0].getMessage()
    assert "StreamWriter" in warnings[0].getMessage()


async def test_a_flag_that_no_longer_behaves_falls_back_to_plain(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # The fault faked: the flag is there but turning it off no longer stops the framing
    # (the writer reads another name): the behaviour check, not the name check, finds it.
    monkeypatch.setattr(aiohttp_adapter, "pass_chunks_through", lambda writer: None)
    caplog.set_level(logging.DEBUG)
    assert await aiohttp_adapter.choose_transport("fast") == "plain"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "chunked answer" in warnings[0].getMessage(), warnings


async def test_a_plain_front_asked_for_runs_no_self_test(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(aiohttp.http_writer, "StreamWriter")
    assert await aiohttp_adapter.choose_transport("plain") == "plain"
