"""Copy curl / Copy Python: a run's A2A request, to send to the Host without the Playground.

What they carry: the run's text, data and file parts, its (redacted) business metadata, its
contextId, and the taskId when the run resumes a task; never the capture envelope
(`llamon.playground`) nor its token. The request is A2A 1.0 JSON-RPC `SendStreamingMessage`
with `A2A-Version: 1.0`. The Python snippet uses only the standard library and prints each
streamed event as one JSON line.
"""

from __future__ import annotations

import json
import pprint
import shlex
from collections.abc import Callable
from typing import Any

from llamon_playground.daemon.a2a.wire import V1, build_message, parts_to_wire
from llamon_playground.daemon.data.redact import redact_metadata

# When no Host runs, the snippets read the port from the environment (a shell that lacks
# it stops with this message instead of sending to a wrong URL).
PLACEHOLDER_SHELL_URL = ("http://127.0.0.1:"
                         "${LLAMON_HOST_PORT:?set LLAMON_HOST_PORT to the port of the Host}/")
HEREDOC = "A2A_REQUEST"


def a2a_request(run: dict[str, Any], read_blob: Callable[[str], bytes]) -> dict[str, Any]:
    """The JSON-RPC body the run's send phase posts, minus the capture envelope."""
    stored = run.get("input") or {}
    parts = parts_to_wire(stored.get("parts") or [], V1, read_blob)
    # A resume continues the parent's task; any other run started a task of its own.
    task_id = run.get("task_id") if run.get("parent_run_id") else None
    message = build_message(parts, V1, run["context_id"], task_id)
    # Stored metadata is redacted already; again here (idempotent) for rows written before
    # redaction existed. It also drops the reserved capture envelope key.
    metadata = redact_metadata(stored.get("metadata") or {})
    params: dict[str, Any] = {"message": message}
    if metadata:
        params["metadata"] = metadata
    return {"jsonrpc": "2.0", "id": f"snippet-{run['id']}", "method": "SendStreamingMessage",
            "params": params}


def curl_snippet(body: dict[str, Any], url: str | None) -> str:
    # No comment lines: zsh, the default macOS shell, runs `# ...` as a command when pasted.
    target = shlex.quote(url) if url else f'"{PLACEHOLDER_SHELL_URL}"'
    # A heredoc, not an argument: an inline file can exceed the kernel's per-argument limit.
    return "\n".join([
        f"curl -sS -N -X POST {target} \\",
        "  -H 'Content-Type: application/json' \\",
        "  -H 'Accept: text/event-stream' \\",
        "  -H 'A2A-Version: 1.0' \\",
        f"  --data-binary @- <<'{HEREDOC}'",
        json.dumps(body, indent=2, ensure_ascii=False),
        HEREDOC,
        "",
    ])


PYTHON_TEMPLATE = '''\
"""Reproduces Playground run {run_id} against the Host directly.

A2A 1.0 JSON-RPC SendStreamingMessage; prints each streamed event as one JSON line.
Standard library only.
"""

import json
{import_os}import urllib.request

HOST_URL = {url}

REQUEST = {request}


def main() -> None:
    request = urllib.request.Request(
        HOST_URL,
        data=json.dumps(REQUEST).encode("utf-8"),
        method="POST",
        headers={{
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "A2A-Version": "1.0",
        }},
    )
    with urllib.request.urlopen(request) as response:
        if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
            print(response.read().decode("utf-8"))  # an error found before streaming
            return
        for raw in response:
            line = raw.decode("utf-8").rstrip("\\r\\n")
            if line.startswith("data:"):
                print(line[5:].strip(), flush=True)


if __name__ == "__main__":
    main()
'''


def python_snippet(run_id: str, body: dict[str, Any], url: str | None) -> str:
    url_expr = repr(url) if url else '"http://127.0.0.1:%s/" % os.environ["LLAMON_HOST_PORT"]'
    return PYTHON_TEMPLATE.format(
        run_id=run_id, import_os="" if url else "import os\n", url=url_expr,
        request=pprint.pformat(body, indent=1, width=88, sort_dicts=False))


def build_snippets(run: dict[str, Any], read_blob: Callable[[str], bytes],
                   url: str | None) -> dict[str, Any]:
    """`url` is the Host's JSON-RPC URL, or None for the $LLAMON_HOST_PORT placeholder."""
    body = a2a_request(run, read_blob)
    return {"run_id": run["id"], "a2a_version": V1, "host_url": url,
            "curl": curl_snippet(body, url), "python": python_snippet(run["id"], body, url)}
