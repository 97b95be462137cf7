"""The composer of an Agent: from the live Host's AgentCard (echo_agent, with and without
the `input_schemas` capability), and from the source alone while no Host runs."""

from __future__ import annotations

from pathlib import Path

from tests.support.api import Api
from tests.support.procs import stack_for


async def start_host(api: Api) -> None:
    """A run starts the Host; the composer itself never does."""
    run = await api.wait_status(await api.start_run(await api.session(), "stream hi"))
    assert run["status"] == "completed", run


async def test_agent_with_input_schemas_offers_schema_drafts(project: Path,
                                                             runtime_base: Path) -> None:
    env = {"ECHO_INPUT_SCHEMAS": "approval.v1, other.v2"}
    with stack_for(project, runtime_base, extra_env=env) as stack:
        stack.start_daemon()
        api = Api.for_socket(str(stack.settings.socket_path))
        try:
            before = await api.ok("GET", "composer-schema")
            assert before["kind"] == "agent" and before["host_ready"] is False
            assert before["mode"] == "text" and before["tabs"] == []
            assert [d["code"] for d in before["diagnostics"]] == ["host_not_ready"]
            host = await api.ok("GET", "host")
            assert host["state"] != "ready"  # asking did not start the Host

            await start_host(api)
            answer = await api.ok("GET", "composer-schema")
            assert answer["host_ready"] is True and answer["mode"] == "data"
            assert answer["card"]["name"] == "echo_agent"
            assert [t["draft"] for t in answer["tabs"]] == [{"schema": "approval.v1"},
                                                             {"schema": "other.v2"}]
            assert all(t["fields_declared"] is False for t in answer["tabs"])
            assert answer["text"] is None and answer["diagnostics"] == []

            code, doc = await api.call("GET", "source-targets/echo")
            assert code == 404 and doc["detail"]["error"] == "node_not_found"
            assert "no Flow graph" in doc["detail"]["message"]
        finally:
            await api.close()


async def test_agent_without_schemas_gets_a_text_composer_with_examples(api: Api) -> None:
    await start_host(api)
    answer = await api.ok("GET", "composer-schema")
    assert answer["host_ready"] is True and answer["mode"] == "text" and answer["tabs"] == []
    text = answer["text"]
    assert text["input_modes"] == ["text/plain", "application/json"]
    assert [e["text"] for e in text["examples"]] == ["stream hello world", "markdown",
                                                     "data", "ask", "slow", "fail", "crash"]
    assert {e["skill_id"] for e in text["examples"]} == {"echo"}
    assert text["skills"][0]["description"].startswith("The first word")
