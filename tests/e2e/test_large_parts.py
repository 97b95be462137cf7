"""A run's memory does not grow with its output or input (docs/storage.md, "Large text"): a
long text is a blob, `GET /runs/{id}` answers its excerpt with a link, and the link
streams the whole part (Content-Length, Range). Real daemon, real front, the echo Host."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import orjson

from llamon_playground.cli.client import PlaygroundClient
from tests.support.api import Api
from tests.support.procs import copy_example, stack_for

KIB = 1024
MIB = 1024 * KIB
EXCERPT_CHARS = 16 * KIB


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def content(api: Api, url: str, headers: dict[str, str] | None = None
                  ) -> tuple[int, dict[str, str], bytes]:
    async with api.http.get(url, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.read()


async def test_output_over_the_limit_ends_the_run_its_long_text_a_blob_served_whole(
        tmp_path: Path, runtime_base: Path) -> None:
    limit = 6 * MIB
    with stack_for(copy_example(tmp_path), runtime_base, extra_env={
            "LLAMON_PLAYGROUND_MAX_RUN_OUTPUT_BYTES": str(limit)}) as stack:
        _, url = stack.start_daemon_and_front()
        assert stack.daemon is not None
        api = Api.for_url(url)
        try:
            session = await api.session()
            run_id = await api.start_run(session, "tokens 1000000")
            deltas = [e.data["text"] for e in await api.events(run_id, timeout=100)
                      if e.event == "output.delta"]
            run = await api.wait_status(run_id)
            assert run["status"] == "failed" and run["reason"] == "host_output_too_large"
            [part] = [p for p in run["output"] if p["kind"] == "text"]
            assert part["truncated"] is True and len(part["text"]) == EXCERPT_CHARS
            assert 64 * KIB < part["size"] < limit
            assert len(orjson.dumps(run)) < 64 * KIB, "the detail answer is bounded"
            status, headers, whole = await content(api, part["content_url"])
            assert status == 200 and int(headers["Content-Length"]) == part["size"] == len(whole)
            assert headers["Content-Type"].startswith("text/plain")
            text = whole.decode()
            assert text.startswith(part["text"])
            count = text.count(" ")
            assert text == "".join(f"t{n} " for n in range(count)), "every token, in order"
            assert text.startswith("".join(deltas)), "what the client got is a prefix"
            status, headers, piece = await content(api, part["content_url"],
                                                   {"Range": "bytes=100-199"})
            assert status == 206 and piece == whole[100:200]
            assert headers["Content-Range"] == f"bytes 100-199/{len(whole)}"
            # A functional bound, not a speed target: the output was never held whole.
            assert peak_rss_mb(stack.daemon.popen.pid) < 400
            # The typed client: the whole part as it streams, and from an offset.
            async with PlaygroundClient.for_project(stack.project, stack.env) as client:
                assert await client.part_content(run_id, "output", 0) == whole
                tail = b"".join([chunk async for chunk in client.stream_part(
                    run_id, "output", 0, start=len(whole) - 10)])
                assert tail == whole[-10:]
            listed = (await api.ok("GET", f"sessions/{session}/runs"))["runs"][0]
            [cut] = [p for p in listed["output"] if p["kind"] == "text"]
            assert cut["size"] == part["size"] and cut["content_url"] == part["content_url"]
        finally:
            await api.close()


async def test_a_16_mib_text_input_is_stored_as_a_blob_and_replayed_intact(
        tmp_path: Path, runtime_base: Path) -> None:
    # The echo Host's first event repeats the input (escaped: 6 bytes an é): its event and
    # line limits are raised to fit.
    with stack_for(copy_example(tmp_path), runtime_base, extra_env={
            "LLAMON_PLAYGROUND_MAX_HOST_EVENT_BYTES": str(64 * MIB),
            "LLAMON_PLAYGROUND_MAX_HOST_LINE_BYTES": str(64 * MIB)}) as stack:
        _, url = stack.start_daemon_and_front()
        api = Api.for_url(url)
        try:
            session = await api.session()
            text = "tokens 3 " + "é" * (8 * MIB - 64)  # 16 MiB of UTF-8, inside the body
            body = orjson.dumps({"parts": [{"kind": "text", "text": text}]})
            async with api.http.post(f"/api/playground/v1/sessions/{session}/runs",
                                     data=io.BytesIO(body),
                                     headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 202, await resp.read()
                run_id = (orjson.loads(await resp.read()))["run_id"]
            run = await api.wait_status(run_id)
            assert run["status"] == "completed", run["error"]
            [part] = run["input"]["parts"]
            sent = text.encode()
            assert part["truncated"] and part["size"] == len(sent)
            assert part["sha256"] == hashlib.sha256(sent).hexdigest()
            status, headers, whole = await content(api, part["content_url"])
            assert status == 200 and whole == sent
            assert int(headers["Content-Length"]) == len(sent)
            rerun = await api.wait_status((await api.ok(
                "POST", f"runs/{run_id}/rerun", None, 202))["run_id"])
            assert rerun["status"] == "completed"
            assert rerun["input"]["parts"][0]["sha256"] == part["sha256"]
            # What the Host answered: three tokens, so it read the text's first words.
            assert "".join(p.get("text", "") for p in rerun["output"]) == "t0 t1 t2 "
            # A bundle carries the whole text (its blob) and an import serves it again.
            async with api.http.post("/api/playground/v1/bundles/export",
                                     data=orjson.dumps({"run_ids": [run_id]}),
                                     headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 200
                bundle = await resp.read()
            assert part["sha256"] in orjson.loads(bundle)["blobs"]
            async with api.http.post("/api/playground/v1/bundles/import",
                                     data=io.BytesIO(bundle),
                                     headers={"Content-Type": "application/json"}) as resp:
                assert resp.status == 201, await resp.read()
                imported = orjson.loads(await resp.read())["runs"][run_id]
            [copy] = (await api.run(imported))["input"]["parts"]
            status, _, again = await content(api, copy["content_url"])
            assert status == 200 and again == sent
        finally:
            await api.close()


async def test_size_checks_count_json_escapes(api: Api) -> None:
    session = await api.session()
    # 65,534 characters, 393,204 bytes as JSON: over the 64 KiB a metadata value may take.
    code, doc = await api.call("POST", f"sessions/{session}/runs", {
        "parts": [{"kind": "text", "text": "x"}], "metadata": {"note": "\u0000" * 65_534}})
    assert code == 413 and doc["detail"]["error"] == "metadata_too_large", doc
    assert (await api.ok("GET", f"sessions/{session}/runs"))["runs"] == []

