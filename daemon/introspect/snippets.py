"""Copy curl / Copy Python: a run's A2A request, to send to the Host without the Playground.

What they carry: the run's text, data and file parts, its (redacted) business metadata and
its contextId; never the capture envelope (`llamon.playground`) nor its token, nor a stored
task id: a resumed run's task has ended, so its snippets send the whole resume chain to a
fresh task (snippet_chain.py). The request is written in the run's own A2A version:
1.0 JSON-RPC `SendStreamingMessage` with `A2A-Version: 1.0`, or 0.3 `message/stream` for a run
that spoke 0.3 (a 0.3 Host knows no 1.0 method). The Python snippet uses only the standard
library and prints each streamed event as one JSON line. Both exit non-zero when the Host
answers with a JSON-RPC error.
"""

from __future__ import annotations

import json
import pprint
import shlex
from collections.abc import Callable
from typing import Any

from llamon_playground.daemon.a2a.client import METHODS
from llamon_playground.daemon.a2a.wire import V1, build_message, parts_to_wire
from llamon_playground.daemon.data.redact import redact_metadata
from llamon_playground.daemon.introspect.snippet_chain import (
    HEREDOC,
    cannot,
    chain_curl,
    chain_python,
)

# When no Host runs, the snippets read the port from the environment (a shell that lacks
# it stops with this message instead of sending to a wrong URL).
PLACEHOLDER_SHELL_URL = ("http://127.0.0.1:"
                         "${LLAMON_HOST_PORT:?set LLAMON_HOST_PORT to the port of the Host}/")


def a2a_request(run: dict[str, Any], read_blob: Callable[[str], bytes],
                version: str = V1) -> dict[str, Any]:
    """The JSON-RPC body the run's send phase posts, minus the capture envelope."""
    stored = run.get("input") or {}
    parts = parts_to_wire(stored.get("parts") or [], version, read_blob)
    message = build_message(parts, version, run["context_id"], None)
    # Stored metadata is redacted already; again here (idempotent) for rows written before
    # redaction existed. It also drops the reserved capture envelope key.
    metadata = redact_metadata(stored.get("metadata") or {})
    params: dict[str, Any] = {"message": message}
    if metadata:
        params["metadata"] = metadata
    return {"jsonrpc": "2.0", "id": f"snippet-{run['id']}",
            "method": METHODS[version]["stream"], "params": params}


# Passes the answer through line by line and exits 1 if a line holds a JSON-RPC error
# object (`"error": {... "code": <number>`; quotes inside content are escaped, so a text
# that merely mentions an error never matches) or if nothing came at all (curl failed).
AWK_ERROR_EXIT = ("awk '{ print; fflush() } "
                  "/\"error\"[[:space:]]*:[[:space:]]*[{][^}]*"
                  "\"code\"[[:space:]]*:[[:space:]]*-?[0-9]/"
                  " { bad = 1 } END { exit (bad || NR == 0) }'")


def curl_snippet(body: dict[str, Any], url: str | None, version: str = V1) -> str:
    # No comment lines: zsh, the default macOS shell, runs `# ...` as a command when pasted.
    target = shlex.quote(url) if url else f'"{PLACEHOLDER_SHELL_URL}"'
    version_header = ["  -H 'A2A-Version: 1.0' \\"] if version == V1 else []
    # A heredoc, not an argument: an inline file can exceed the kernel's per-argument limit.
    return "\n".join([
        f"curl -sS -N -X POST {target} \\",
        "  -H 'Content-Type: application/json' \\",
        "  -H 'Accept: text/event-stream' \\",
        *version_header,
        f"  --data-binary @- <<'{HEREDOC}' | {AWK_ERROR_EXIT}",
        json.dumps(body, indent=2, ensure_ascii=False),
        HEREDOC,
        "",
    ])


PYTHON_TEMPLATE = '''\
"""Reproduces Playground run {run_id} against the Host directly.

A2A {version} JSON-RPC {method}; prints each streamed event as one JSON line and exits 1
when the Host answers with a JSON-RPC error. Standard library only.
"""

import json
{import_os}import sys
import urllib.request

HOST_URL = {url}

REQUEST = {request}


def is_error(text: str) -> bool:
    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and "error" in doc


def main() -> int:
    request = urllib.request.Request(
        HOST_URL,
        data=json.dumps(REQUEST).encode("utf-8"),
        method="POST",
        headers={{
            "Content-Type": "application/json",
            "Accept": "text/event-stream",{version_header}
        }},
    )
    failed = False
    with urllib.request.urlopen(request) as response:
        if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
            body = response.read().decode("utf-8")  # an error found before streaming
            print(body)
            return 1 if is_error(body) else 0
        for raw in response:
            line = raw.decode("utf-8").rstrip("\\r\\n")
            if line.startswith("data:"):
                data = line[5:].strip()
                print(data, flush=True)
                failed = failed or is_error(data)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def python_snippet(run_id: str, body: dict[str, Any], url: str | None,
                   version: str = V1) -> str:
    url_expr = repr(url) if url else '"http://127.0.0.1:%s/" % os.environ["LLAMON_HOST_PORT"]'
    header = '\n            "A2A-Version": "1.0",' if version == V1 else ""
    return PYTHON_TEMPLATE.format(
        run_id=run_id, import_os="" if url else "import os\n", url=url_expr,
        version=version, method=body["method"], version_header=header,
        request=pprint.pformat(body, indent=1, width=88, sort_dicts=False))


def build_snippets(chain: list[dict[str, Any]], read_blob: Callable[[str], bytes],
                   url: str | None, version: str = V1) -> dict[str, Any]:
    """`chain` is the run's resume chain, its root first and the run last (one run for a run
    that resumed nothing); `url` is the Host's JSON-RPC URL for `version` (the run's own A2A
    version), or None for the $LLAMON_HOST_PORT placeholder."""
    run = chain[-1]
    answer = {"run_id": run["id"], "a2a_version": version, "host_url": url,
              "messages": len(chain)}
    if run.get("parent_run_id") and chain[0].get("parent_run_id"):
        # Its chain's start is gone (not exported with it, say): nothing to start a task with.
        return {**answer, "messages": 0, **cannot(
            f"run {run['id']} answered a task whose first message is no longer in history "
            f"(run {chain[0]['parent_run_id']} is missing), so it cannot be sent again")}
    bodies = [a2a_request(step, read_blob, version) for step in chain]
    if len(bodies) == 1:
        return {**answer, "curl": curl_snippet(bodies[0], url, version),
                "python": python_snippet(run["id"], bodies[0], url, version)}
    return {**answer, "curl": chain_curl(bodies, url, PLACEHOLDER_SHELL_URL, version),
            "python": chain_python(run["id"], bodies, url, version)}
