"""Copy curl / Copy Python of a resumed run: the whole resume chain, against a fresh task.

A resumed run answered a task that has ended since (answering it ended it), so its own
message alone can never be sent again: the Host refuses a message to a task in a terminal
state. The snippet sends the chain's first message instead, which starts a fresh task, then
each answer in turn to the task the previous step named, while the Host asks for input. No
stored task id appears in it.
"""

from __future__ import annotations

import json
import pprint
import shlex
from typing import Any

from llamon_playground.daemon.a2a.wire import V1

# The line of a later step's body the shell fills in with the task the previous step named
# (a task id is checked to be a plain token first, so it is safe in sed's replacement).
TASK_SLOT = "@LLAMON_PREVIOUS_TASK_ID@"
TASK_FILE = "LLAMON_TASK_FILE"
HEREDOC = "A2A_REQUEST"

# Prints each line as it comes; remembers the last `"taskId": "<token>"`, the task the next
# answer continues, writing it to the task file at the end; exits 1 on a JSON-RPC error
# object or when nothing came at all (curl failed).
AWK_STEP = (
    "awk -v task_file=\"$" + TASK_FILE + "\" '{ print; fflush(); rest = $0 } "
    "/\"error\"[[:space:]]*:[[:space:]]*[{][^}]*\"code\"[[:space:]]*:[[:space:]]*-?[0-9]/"
    " { bad = 1 } "
    "{ while (match(rest, /\"taskId\"[[:space:]]*:[[:space:]]*\"[A-Za-z0-9_.:-]+\"/)) "
    "{ task = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH) } } "
    "END { sub(/^\"taskId\"[[:space:]]*:[[:space:]]*\"/, \"\", task); sub(/\"$/, \"\", task); "
    "printf \"%s\", task > task_file; exit (bad || NR == 0) }'")


def chain_bodies(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chain's requests: the first as stored, each later one with the task slot."""
    out = []
    for step, body in enumerate(bodies):
        message = dict(body["params"]["message"])
        message.pop("taskId", None)
        if step:
            message["taskId"] = TASK_SLOT
        out.append({**body, "params": {**body["params"], "message": message}})
    return out


def chain_curl(bodies: list[dict[str, Any]], url: str | None, placeholder: str,
               version: str = V1) -> str:
    """A POSIX shell list (bash, zsh): one curl a step, each later body given the task id
    the step before named; it stops at the first step that fails."""
    target = shlex.quote(url) if url else f'"{placeholder}"'
    headers = ["  -H 'Content-Type: application/json' \\",
               "  -H 'Accept: text/event-stream' \\"]
    if version == V1:
        headers.append("  -H 'A2A-Version: 1.0' \\")
    # No comment lines: zsh, the default macOS shell, runs `# ...` as a command when pasted.
    lines = [f"LLAMON_HOST_URL={target} &&", f"{TASK_FILE}=$(mktemp) &&"]
    for step, body in enumerate(chain_bodies(bodies)):
        last = step == len(bodies) - 1
        tail = "" if last else " &&"
        if step == 0:
            lines.append("curl -sS -N -X POST \"$LLAMON_HOST_URL\" \\")
        else:
            lines.append(f"LLAMON_TASK_ID=$(cat \"${TASK_FILE}\") && "
                         "[ -n \"$LLAMON_TASK_ID\" ] &&")
            lines.append(f"sed \"s/{TASK_SLOT}/$LLAMON_TASK_ID/\" <<'{HEREDOC}' | "
                         "curl -sS -N -X POST \"$LLAMON_HOST_URL\" \\")
        lines += headers
        if step == 0:
            lines.append(f"  --data-binary @- <<'{HEREDOC}' | {AWK_STEP}{tail}")
        else:
            lines.append(f"  --data-binary @- | {AWK_STEP}{tail}")
        lines += [json.dumps(body, indent=2, ensure_ascii=False), HEREDOC]
    lines += ["LLAMON_STATUS=$?", f"rm -f \"${TASK_FILE}\"", "[ \"$LLAMON_STATUS\" -eq 0 ]", ""]
    return "\n".join(lines)


CHAIN_PYTHON_TEMPLATE = '''\
"""Reproduces Playground run {run_id} against the Host directly, with its resume chain.

That run answered a task that has ended since, so its message alone cannot be sent again:
this sends the chain's first message, which starts a fresh task, then each answer to that
task while the Host asks for input ({steps} messages). A2A {version} JSON-RPC {method};
prints each streamed event as one JSON line and exits 1 when the Host answers with a
JSON-RPC error or stops asking for input before the last answer. Standard library only.
"""

import json
{import_os}import sys
import urllib.request

HOST_URL = {url}

REQUESTS = {requests}


def is_error(doc: object) -> bool:
    return isinstance(doc, dict) and "error" in doc


def task_and_state(doc: object) -> tuple:
    """The task id and state a streamed event names (A2A 1.0 or 0.3), or None."""
    result = doc.get("result") if isinstance(doc, dict) else None
    if not isinstance(result, dict):
        return None, None
    for key in ("task", "statusUpdate", "artifactUpdate", "message"):
        if isinstance(result.get(key), dict):
            result = dict(result[key], kind=key)
            break
    task_id = result.get("id") if result.get("kind") == "task" else result.get("taskId")
    state = (result.get("status") or {{}}).get("state")
    if state:
        state = str(state).lower().replace("task_state_", "").replace("-", "_")
    return task_id, state


def send(request: dict) -> tuple:
    """Post one request and print its events: (failed, task id, last state)."""
    http = urllib.request.Request(
        HOST_URL,
        data=json.dumps(request).encode("utf-8"),
        method="POST",
        headers={{
            "Content-Type": "application/json",
            "Accept": "text/event-stream",{version_header}
        }},
    )
    failed, task_id, state = False, None, None
    with urllib.request.urlopen(http) as response:
        if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
            body = response.read().decode("utf-8")  # an error found before streaming
            print(body)
            try:
                return is_error(json.loads(body)), None, None
            except ValueError:
                return False, None, None
        for raw in response:
            line = raw.decode("utf-8").rstrip("\\r\\n")
            if not line.startswith("data:"):
                continue
            print(line[5:].strip(), flush=True)
            try:
                doc = json.loads(line[5:])
            except ValueError:
                continue
            failed = failed or is_error(doc)
            found, now = task_and_state(doc)
            task_id, state = found or task_id, now or state
    return failed, task_id, state


def main() -> int:
    task_id = None
    for step, request in enumerate(REQUESTS, 1):
        if task_id is not None:
            request["params"]["message"]["taskId"] = task_id
        failed, task_id, state = send(request)
        if failed:
            return 1
        if step < len(REQUESTS) and (task_id is None or state != "input_required"):
            print(f"message {{step}} of {{len(REQUESTS)}}: the Host did not ask for input "
                  f"(task {{task_id}}, state {{state}}), so the next answer has no task to "
                  "continue", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def chain_python(run_id: str, bodies: list[dict[str, Any]], url: str | None,
                 version: str = V1) -> str:
    """The Python snippet of a resume chain (`bodies`: the root's request first)."""
    requests = chain_bodies(bodies)
    for body in requests[1:]:
        del body["params"]["message"]["taskId"]  # set at run time from the step before
    url_expr = repr(url) if url else '"http://127.0.0.1:%s/" % os.environ["LLAMON_HOST_PORT"]'
    header = '\n            "A2A-Version": "1.0",' if version == V1 else ""
    return CHAIN_PYTHON_TEMPLATE.format(
        run_id=run_id, steps=len(bodies), import_os="" if url else "import os\n",
        url=url_expr, version=version, method=bodies[0]["method"], version_header=header,
        requests=pprint.pformat(requests, indent=1, width=88, sort_dicts=False))


def cannot(reason: str) -> dict[str, str]:
    """Snippets that only say why the run cannot be reproduced, and exit 1."""
    return {"curl": f"printf '%s\\n' {shlex.quote(reason)} >&2; false\n",
            "python": f'import sys\n\nsys.exit({reason!r})\n'}
