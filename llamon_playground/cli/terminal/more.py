"""The CLI's commands for what the page does beyond sending: resume, compare, export,
import, delete a session; `list` (every daemon of this user) and the version."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.cli.client import PlaygroundClient
from llamon_playground.cli.discovery import list_daemons
from llamon_playground.cli.terminal.commands import (
    add_follow_options,
    add_part_options,
    daemon_command,
    json_arg,
    project_arg,
)
from llamon_playground.cli.terminal.control import (
    EXIT_OK,
    EXIT_USAGE,
    emit,
    fail,
    run_command,
    start_and_follow,
)
from llamon_playground.cli.terminal.hints import BadArgument
from llamon_playground.cli.terminal.parts import run_request


def version() -> str:
    """The installed package's version, or "unknown" when it runs uninstalled."""
    from importlib import metadata  # ~50 modules, ~3 MB: only when the version is asked for
    try:
        return metadata.version("llamon-playground")
    except metadata.PackageNotFoundError:
        return "unknown"


async def resume(client: PlaygroundClient, args: argparse.Namespace) -> int:
    request = run_request(args)
    return await start_and_follow(client, args, await client.resume(
        args.run_id, request.parts, metadata=request.metadata,
        changed_files=request.changed_files))


def _score(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, float) else str(value)


def print_compare(doc: dict[str, Any]) -> None:
    left, right = doc["left"], doc["right"]
    for side, run in (("left", left), ("right", right)):
        print(f"{side:<6} {run['run_id']}  {run['status']}"
              f"{' (' + run['reason'] + ')' if run.get('reason') else ''}"
              f"  {_score(run.get('duration_ms'))} ms"
              f"{'  ' + run['label'] if run.get('label') else ''}")
    same_code = {True: "same code", False: "different code", None: "code unknown"}
    print(same_code[doc.get("same_code")])
    text = doc.get("text") or {}
    if text.get("same"):
        print("text:  the same")
    else:
        sys.stdout.write(text.get("unified_diff", "") or "")
        if text.get("unified_diff") and not text["unified_diff"].endswith("\n"):
            print()
    for change in (doc.get("data") or {}).get("changes", []):
        print(f"data[{change['part']}]{change['path'] or '/'} {change['op']}: "
              f"{orjson.dumps(change.get('left')).decode()} -> "
              f"{orjson.dumps(change.get('right')).decode()}")
    scores = doc.get("scores") or []
    if scores:
        rows = [("evaluator", "left", "right", "delta")]
        for row in scores:
            name = row["evaluator"] + (f" [{row['node'] or row['scope']}]"
                                       if row.get("node") or row.get("scope") else "")
            rows.append((name, _score(row.get("left")), _score(row.get("right")),
                         _score(row.get("delta"))))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip())


async def compare(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.compare(args.left, args.right)
    if args.json:
        emit(doc)
    else:
        print_compare(doc)
    return EXIT_OK


async def export(client: PlaygroundClient, args: argparse.Namespace) -> int:
    size = await client.export_bundle(Path(args.output), args.session or [], args.run or [])
    print(f"wrote {args.output} ({size} bytes)", file=sys.stderr)
    return EXIT_OK


async def import_(client: PlaygroundClient, args: argparse.Namespace) -> int:
    path = Path(args.file)
    # One stat each, before the command's first request.
    if not path.is_file():  # noqa: ASYNC240
        where = "a folder" if path.is_dir() else "not there"  # noqa: ASYNC240
        raise BadArgument(f"no bundle file {args.file} ({where})"
                          "; `llamon-playground export -o FILE` writes one")
    try:
        doc = await client.import_bundle(path)
    except PermissionError as exc:
        raise BadArgument(f"cannot read {args.file}: {exc.strerror}") from None
    if args.json:
        emit(doc)
    else:
        print(f"imported {len(doc.get('sessions', {}))} sessions and "
              f"{len(doc.get('runs', {}))} runs")
        for old, new in doc.get("sessions", {}).items():
            print(f"session {old} -> {new}")
    return EXIT_OK


async def delete(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.delete_session(args.session_id)
    if args.json:
        emit(doc)
    else:
        print(f"deleted session {args.session_id} ({doc.get('blobs_removed', 0)} files removed)")
    return EXIT_OK


def delete_command(project_of: Callable[[str | None], Any], args: argparse.Namespace) -> int:
    """`delete SESSION_ID [project]` or `delete --all [project] [--yes]`."""
    from llamon_playground.cli.terminal.sessions import delete_all
    if args.all:
        if args.project is not None:
            fail("usage: delete --all [project] [--yes] (no session id with --all)")
            return EXIT_USAGE
        return run_command(project_of(args.session_id), args, delete_all)
    if args.session_id is None or args.yes:
        fail("usage: delete SESSION_ID [project] | delete --all [project] [--yes]")
        return EXIT_USAGE
    return run_command(project_of(args.project), args, delete)


def list_command(args: argparse.Namespace) -> int:
    daemons = asyncio.run(list_daemons())
    if args.json:
        emit(daemons)
        return EXIT_OK
    for info in daemons:
        print(f"{info['project']}\n  pid {info['pid']}  socket {info['socket']}\n"
              f"  front {info['front_url'] or '-'}  active run {info['active_run_id'] or '-'}"
              f"  Host {info['host_state'] or ('-' if info['healthy'] else 'not answering')}")
    if not daemons:
        print("no daemon runs", file=sys.stderr)
    return EXIT_OK


def add_more_commands(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """Add the resume, compare, export, import, delete and list commands to the `sub` parsers."""
    resume_p = sub.add_parser("resume", help="answer a run that asks for input")
    resume_p.add_argument("run_id", help="the run in input_required")
    resume_p.add_argument("text", help="the answer's text part (\"\": none, with --data or "
                                       "--file)")
    project_arg(resume_p)
    add_part_options(resume_p)
    add_follow_options(resume_p)
    resume_p.set_defaults(func=daemon_command(project_of, resume))

    compare_p = sub.add_parser("compare", help="two runs side by side: the text diff, data "
                                               "changes and the score table")
    compare_p.add_argument("left", help="the first run's id")
    compare_p.add_argument("right", help="the second run's id")
    project_arg(compare_p)
    json_arg(compare_p, "print the whole comparison document")
    compare_p.set_defaults(func=daemon_command(project_of, compare))

    export_p = sub.add_parser("export", help="write a bundle (a reproduction to hand over)")
    project_arg(export_p)
    export_p.add_argument("--session", action="append", metavar="ID",
                          help="a session to include (repeatable)")
    export_p.add_argument("--run", action="append", metavar="ID",
                          help="a run to include (repeatable); none of either: all history")
    export_p.add_argument("-o", "--output", required=True, metavar="FILE",
                          help="the bundle file to write")
    export_p.set_defaults(func=daemon_command(project_of, export))

    import_p = sub.add_parser("import", help="import a bundle into this project's history")
    import_p.add_argument("file", help="a bundle file (`export` writes one)")
    project_arg(import_p)
    json_arg(import_p, "print the old-to-new id maps")
    import_p.set_defaults(func=daemon_command(project_of, import_))

    delete_p = sub.add_parser("delete", help="delete a session and its runs (--all: all "
                                             "history)")
    delete_p.add_argument("session_id", nargs="?",
                          help="the session to delete (with --all: the project folder)")
    project_arg(delete_p)
    delete_p.add_argument("--all", action="store_true",
                          help="delete all history: every session, run and suite")
    delete_p.add_argument("--yes", action="store_true",
                          help="with --all: do not ask first")
    json_arg(delete_p)
    delete_p.set_defaults(func=lambda args: delete_command(project_of, args))

    list_p = sub.add_parser("list", help="every daemon of this user on this machine")
    json_arg(list_p, "one JSON array: project, pid, socket, front_url, active_run_id, "
                     "host_state, healthy")
    list_p.set_defaults(func=list_command)
