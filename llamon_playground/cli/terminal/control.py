"""`llamon-playground` commands that drive a running daemon, for scripts.

They talk to the daemon's socket through the public client (`cli/client.py`; no front, no
token). Exit codes: 0 ok, 1 error, 2 usage, 3 daemon not running, 4 conflict
(`active_run_conflict`, `run_not_active`...).
`--json` prints the API's own objects, keys sorted, one document (or one event per line when
streaming): stable for scripts.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson

from llamon_playground.cli.api_types import HostStatus, Run, RunAccepted
from llamon_playground.cli.client import (
    ApiError,
    DaemonNotRunning,
    PlaygroundClient,
    PlaygroundError,
    health,
    text_part,
)
from llamon_playground.cli.errors import EXIT_CONFLICT as EXIT_CONFLICT
from llamon_playground.cli.errors import EXIT_ERROR as EXIT_ERROR
from llamon_playground.cli.errors import EXIT_NOT_RUNNING as EXIT_NOT_RUNNING
from llamon_playground.cli.errors import EXIT_OK as EXIT_OK
from llamon_playground.cli.errors import EXIT_USAGE as EXIT_USAGE
from llamon_playground.cli.front_record import stop_fronts
from llamon_playground.cli.terminal.hints import BadArgument, Placeholder, conflict_hint, suggest
from llamon_playground.cli.terminal.parts import run_request
from llamon_playground.cli.terminal.show import (
    print_history,
    print_trimmed,
    print_warnings,
    visible,
)
from llamon_playground.common.config import Settings
from llamon_playground.common.contract import SUCCESS_STATUSES, TERMINAL_STATUSES

TERMINAL = TERMINAL_STATUSES
SUCCESS = SUCCESS_STATUSES
Command = Callable[[PlaygroundClient, argparse.Namespace], Awaitable[int]]


def emit(doc: Any) -> None:
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    sys.stdout.flush()


def fail(message: str) -> None:
    print(f"llamon-playground: {message}", file=sys.stderr, flush=True)


def run_command(settings: Settings, args: argparse.Namespace, command: Command) -> int:
    """Run `command` against the daemon, mapping what went wrong to an exit code and one
    line on stderr (with the next command to type, where there is one)."""
    hint: list[str] = []

    async def main() -> int:
        async with PlaygroundClient(settings) as client:
            try:
                return await command(client, args)
            except ApiError as exc:
                hint.extend(filter(None, [await conflict_hint(client, exc)]))
                raise
    try:
        return asyncio.run(main())
    except BadArgument as exc:
        fail(str(exc))
        return EXIT_USAGE
    except DaemonNotRunning as exc:
        fail(f"no daemon serves {settings.project_dir} ({exc}); start one with "
             f"`{suggest(settings, 'up')}`")
        return EXIT_NOT_RUNNING
    except ApiError as exc:
        if getattr(args, "json", False):
            emit({"detail": exc.detail})
        fail("; ".join([str(exc), *hint]))
        return EXIT_CONFLICT if exc.status == 409 else EXIT_ERROR
    except PlaygroundError as exc:
        fail(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_OK  # `-f` / `--follow` end with Ctrl-C


# -- host ---------------------------------------------------------------------------------------

def print_host(status: HostStatus) -> None:
    print(f"state:      {status.get('state')}")
    print(f"generation: {status.get('generation')}")
    print(f"pid:        {status.get('pid') or '-'}")
    print(f"url:        {status.get('url') or '-'}")
    print(f"restarts:   {status.get('restarts')}  last exit code: {status.get('last_exit_code')}")
    print_warnings(list(status.get("warnings") or []))



async def host_action(client: PlaygroundClient, args: argparse.Namespace) -> int:
    if args.action == "status":
        status = await client.host()
    else:
        status = await client.host_control(args.action)
    if args.json:
        emit(status)
    else:
        print_host(status)
    return EXIT_OK


def print_log_line(line: Mapping[str, Any], as_json: bool, raw: bool = False) -> None:
    if as_json:
        emit(line)
    else:
        text = str(line.get("text", ""))
        sys.stdout.write(f"{text if raw else visible(text)}\n")
        sys.stdout.flush()


async def host_logs(client: PlaygroundClient, args: argparse.Namespace) -> int:
    after = 0
    while True:  # the whole kept log, page by page
        page = await client.host_logs(after)
        for line in page["lines"]:
            print_log_line(line, args.json, args.raw)
        if not page["lines"]:
            break
        after = page["next"]
    if args.follow:
        async for event in client.follow_host_logs(after):
            if event.kind == "log":
                print_log_line(event.data, args.json, args.raw)
    return EXIT_OK


# -- runs ---------------------------------------------------------------------------------------

def _first_text(run: Run) -> str:
    for part in (run.get("input") or {}).get("parts", []):
        if part.get("kind") == "text":
            return str(part.get("text", "")).replace("\n", " ")[:40]
    return ""


async def list_runs(client: PlaygroundClient, args: argparse.Namespace) -> int:
    if args.session:
        session_ids = [args.session]
    else:
        session_ids = [s["id"] for s in await client.sessions()]
    runs: list[Run] = []
    for session_id in session_ids:
        runs.extend(await client.runs(session_id))
    if args.json:
        emit({"runs": runs})
        return EXIT_OK
    for run in runs:
        print(f"{run['id']}  {run['status']:<14} {run.get('reason') or '-':<20} "
              f"{run['session_id']}  {run['created_at']}  {_first_text(run)}")
    return EXIT_OK


async def new_session(client: PlaygroundClient, args: argparse.Namespace) -> int:
    session = await client.create_session(title=args.title)
    if args.json:
        emit(session)
    else:
        print(session["id"])
    return EXIT_OK


async def follow_run(client: PlaygroundClient, run_id: str, as_json: bool,
                     show_text: bool, after: int | None = None) -> str:
    """Print the run's stream (after event `after`) until it ends; return its final status
    ("unknown" when the stream ended without one)."""
    status = "unknown"
    printed = False
    async for event in client.stream(run_id, after):
        if as_json:
            emit(event.data)
        elif show_text and event.kind == "output.delta":
            if printed and event.data.get("append") is False:
                sys.stdout.write("\n")  # a replaced artifact: its new text on a new line
            sys.stdout.write(str(event.data.get("text", "")))
            sys.stdout.flush()
            printed = True
        if event.terminal:
            status = str(event.data["status"])
    if printed:
        sys.stdout.write("\n")
    return status


async def cancel(client: PlaygroundClient, args: argparse.Namespace) -> int:
    answer = await client.cancel(args.run_id)
    status = str(answer["status"])
    if args.wait and status not in TERMINAL:
        await follow_run(client, args.run_id, as_json=False, show_text=False)
        status = (await client.run(args.run_id))["status"]
    if args.json:
        emit({"run_id": args.run_id, "status": status})
    else:
        print(f"{args.run_id} {status}")
    return EXIT_OK


def _texts(parts: Sequence[Mapping[str, Any]] | None) -> str:
    return " ".join(str(p.get("text", "")) for p in parts or [] if p.get("kind") == "text")


async def report_end(client: PlaygroundClient, run_id: str, status: str) -> None:
    """After a followed run: its final status on stderr, with why it did not complete
    (reason, message), and the question of a run that asks for input (on stdout)."""
    if status == "completed":
        print(f"{run_id} {status}", file=sys.stderr, flush=True)
        return
    run = await client.run(run_id)
    if status == "input_required":
        question = _texts(run.get("output")).strip()
        if question:
            print(question, flush=True)
        answer = suggest(client.settings, "resume", run_id, Placeholder('"answer"'))
        print(f"{run_id} {status}: the agent asks for input; answer it with "
              f"`{answer}`", file=sys.stderr, flush=True)
        return
    error = run.get("error") or {}
    why = f" ({run['reason']})" if run.get("reason") else ""
    message = f": {error['message']}" if error.get("message") else ""
    print(f"{run_id} {status}{why}{message}", file=sys.stderr, flush=True)


async def start_and_follow(client: PlaygroundClient, args: argparse.Namespace,
                           answer: RunAccepted) -> int:
    """What `send` and `rerun` print for a started run, following it with `--follow`."""
    run_id = answer["run_id"]
    if args.json:
        emit(answer)
    elif args.follow:
        print(run_id, file=sys.stderr, flush=True)
    else:
        print(f"{run_id} {answer['status']}")
    if not args.follow:
        return EXIT_OK
    status = await follow_run(client, run_id, args.json, show_text=True)
    if not args.json:
        await report_end(client, run_id, status)
    return EXIT_OK if status in SUCCESS else EXIT_ERROR


async def send(client: PlaygroundClient, args: argparse.Namespace) -> int:
    request = run_request(args)
    return await start_and_follow(client, args, await client.create_run(
        args.session_id, request.parts, metadata=request.metadata,
        changed_files=request.changed_files))


async def rerun(client: PlaygroundClient, args: argparse.Namespace) -> int:
    edits: dict[str, Any] = {}
    if args.text is not None:
        edits["parts"] = [text_part(args.text)]
    if args.label is not None:
        edits["label"] = args.label
    return await start_and_follow(client, args, await client.rerun(args.run_id, **edits))


async def label(client: PlaygroundClient, args: argparse.Namespace) -> int:
    fields: dict[str, str | None] = {"label": args.text or None}  # "" clears the label
    if args.note is not None:
        fields["note"] = args.note or None
    run = await client.update_run(args.run_id, **fields)
    if args.json:
        emit(run)
    else:
        print(f"{run['id']} {run['label'] or '-'}")
    return EXIT_OK


# -- daemon and token ---------------------------------------------------------------------------

async def history(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.call("GET", "/history")
    if args.json:
        emit(doc)
    else:
        print_history(doc)
    return EXIT_OK


async def history_trim(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.call("POST", "/history/trim")
    if args.json:
        emit(doc)
    else:
        print_trimmed(doc)
    return EXIT_OK


def stop_daemon(settings: Settings, args: argparse.Namespace) -> int:
    """Graceful shutdown: SIGTERM to the pid the daemon itself reports, then wait until it
    has let go of the project's lock (its last act); then every front of the project, its
    `up`'s or not (a foreground `up` ends with its front). With no daemon running, the
    fronts still go (a daemon that crashed under them): exit 0 if one did, else 3."""
    try:
        pid: int | None = int(asyncio.run(health(settings))["pid"])
    except DaemonNotRunning:
        pid = None
    if pid is not None:
        if not stop_daemon_pid(settings, pid, args.timeout):
            fail(f"the daemon (pid {pid}) did not stop within {args.timeout:g} s")
            return EXIT_ERROR
        print(f"stopped the daemon (pid {pid})", flush=True)
    fronts = stop_fronts(settings)
    for front in fronts:
        print(f"stopped the front (pid {front})", flush=True)
    if pid is None and not fronts:
        fail(f"no daemon serves {settings.project_dir}")
        return EXIT_NOT_RUNNING
    if pid is None:
        print(f"no daemon was running for {settings.project_dir}", flush=True)
    return EXIT_OK


def stop_daemon_pid(settings: Settings, pid: int, timeout: float) -> bool:
    """SIGTERM to the daemon `pid`; whether it let go of the project's lock in time."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while lock_held(settings):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def lock_held(settings: Settings) -> bool:
    """Whether a daemon holds the project's lock (it lets go last, once wholly gone)."""
    try:
        fd = os.open(settings.lock_path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def print_token(settings: Settings, args: argparse.Namespace) -> int:
    from llamon_playground.api.token_store import kept_token, rotate_token
    token = rotate_token(settings) if args.rotate else kept_token(settings)
    if token is None:
        fail(f"no front has made a token for {settings.project_dir} yet")
        return EXIT_NOT_RUNNING
    print(token)
    return EXIT_OK
