"""Daemon and front log JSON lines on request, tagged with request id, run id, generation."""

from __future__ import annotations

import orjson

from tests.support.api import Api
from tests.support.door import start_front
from tests.support.procs import Stack


def json_lines(text: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]


async def test_one_request_id_follows_a_run_through_front_and_daemon(stack: Stack) -> None:
    stack.env["LLAMON_PLAYGROUND_LOG_FORMAT"] = "json"
    stack.start_daemon()
    front = start_front(stack, global_args=("-v",))
    http = front.session(headers={"X-Request-Id": "trace-run-1"})
    api = Api(http)
    try:
        session = await api.session()
        run_id = await api.start_run(session, "stream logged words")
        assert (await api.wait_status(run_id))["status"] == "completed"
    finally:
        await api.close()
    front.proc.stop()
    assert stack.daemon is not None
    stack.daemon.stop()
    daemon_lines = json_lines(stack.daemon.output())
    assert daemon_lines and all({"time", "level", "logger", "message"} <= set(d)
                                for d in daemon_lines)
    tagged = [d for d in daemon_lines if d.get("run_id") == run_id]
    assert any(d.get("request_id") == "trace-run-1" and d.get("generation") == 1
               for d in tagged), daemon_lines
    front_lines = json_lines(front.proc.output())
    assert any(d.get("request_id") == "trace-run-1" and d.get("run_id") == run_id
               for d in front_lines), front_lines
