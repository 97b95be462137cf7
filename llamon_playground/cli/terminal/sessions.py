"""`sessions` (list, rename) and `delete --all`: the page's session list and its "Delete all
history", from the shell."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

from llamon_playground.cli.client import PlaygroundClient
from llamon_playground.cli.terminal.commands import PROJECT_HELP, json_arg
from llamon_playground.cli.terminal.control import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    emit,
    fail,
    run_command,
)

# The newest run's time, when the daemon's session listing carries it.
LAST_ACTIVITY = "last_activity_at"


def session_line(session: Mapping[str, Any]) -> str:
    last = session.get(LAST_ACTIVITY)
    active = f"  last {last}" if last else ""
    runs = session.get("run_count")
    count = f"  {runs} run{'' if runs == 1 else 's'}" if runs is not None else ""
    return (f"{session['id']}  {session['created_at']}{active}{count}  "
            f"{session.get('title') or '(untitled)'}")


async def list_sessions(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """Every session, oldest first: id, created, last activity (when given), runs, title."""
    sessions = await client.sessions()
    if args.json:
        emit({"sessions": sessions})
        return EXIT_OK
    for session in sessions:
        print(session_line(session))
    if not sessions:
        print("no session yet", file=sys.stderr)
    return EXIT_OK


async def rename(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`sessions rename ID TITLE`: the session with its new title."""
    session = await client.update_session(args.session_id, title=args.title)
    if args.json:
        emit(session)
    else:
        print(f"{session['id']} {session.get('title') or '(untitled)'}")
    return EXIT_OK


def confirmed(question: str) -> bool:
    """Ask on stderr, read one line from stdin: only `y`/`yes` says yes (EOF says no)."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


async def delete_all(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`delete --all`: every session, run, event and suite of the project (`DELETE
    /sessions`), after a yes on stdin unless `--yes`."""
    if not args.yes:
        doc = await client.call("GET", "/history")
        counts = doc["counts"]
        question = (f"delete all history of {client.settings.project_dir} "
                    f"({counts['sessions']:,} sessions, {counts['runs']:,} runs)?")
        if not confirmed(question):
            print("llamon-playground: nothing deleted (add --yes to skip the question)",
                  file=sys.stderr)
            return EXIT_ERROR
    deleted = await client.delete_all()
    if args.json:
        emit(deleted)
        return EXIT_OK
    gone = deleted["deleted"]
    print(f"deleted {gone.get('sessions', 0):,} sessions, {gone.get('runs', 0):,} runs, "
          f"{gone.get('events', 0):,} events, {gone.get('suites', 0):,} suites "
          f"({deleted['blobs_removed']:,} files removed)")
    return EXIT_OK


def sessions_command(project_of: Callable[[str | None], Any], args: argparse.Namespace) -> int:
    """`sessions [project]` or `sessions rename ID TITLE [project]` (a project folder named
    `rename` is given as `./rename`)."""
    words = list(args.words)
    if words and words[0] == "rename":
        if len(words) not in (3, 4):
            fail("usage: sessions rename SESSION_ID TITLE [project]")
            return EXIT_USAGE
        args.session_id, args.title = words[1], words[2]
        return run_command(project_of(words[3] if len(words) == 4 else None), args, rename)
    if len(words) > 1:
        fail("usage: sessions [project] | sessions rename SESSION_ID TITLE [project]")
        return EXIT_USAGE
    return run_command(project_of(words[0] if words else None), args, list_sessions)


def add_session_commands(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """`sessions` and `sessions rename` (`new-session` and `delete` are elsewhere)."""
    sessions = sub.add_parser("sessions", help="list sessions; `sessions rename ID TITLE` "
                                               "retitles one")
    sessions.add_argument("words", nargs="*", metavar="[rename ID TITLE] [project]",
                          help="`rename ID TITLE` sets a session's title; then " + PROJECT_HELP)
    json_arg(sessions, "`{\"sessions\": [...]}` (rename: the session) as the API gives them")
    sessions.set_defaults(func=lambda args: sessions_command(project_of, args))
