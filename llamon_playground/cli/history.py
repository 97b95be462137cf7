"""`llamon-playground history`: how big history is, what it holds, what the retention policy
would remove (`--dry-run`: only that, the default), and `history trim`: apply it now.

    llamon-playground history [project] [--dry-run] [--json]
    llamon-playground history trim [project] [--json]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from llamon_playground.cli.client import PlaygroundClient
from llamon_playground.cli.control import EXIT_OK, EXIT_USAGE, emit, fail, run_command

MB = 1024 * 1024


def _mb(value: Any) -> str:
    return f"{int(value or 0) / MB:,.1f} MB"


def _limits(policy: dict[str, Any]) -> str:
    if not policy.get("max_bytes") and not policy.get("max_age_days"):
        return "off (keep everything)"
    parts = []
    if policy.get("max_bytes"):
        parts.append(f"at most {_mb(policy['max_bytes'])}")
    if policy.get("max_age_days"):
        parts.append(f"sessions used within {policy['max_age_days']:g} days")
    return ", ".join(parts)


async def show(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.call("GET", "/history")
    if args.json:
        emit(doc)
        return EXIT_OK
    counts, size, plan = doc["counts"], doc["bytes"], doc["plan"]
    print(f"size:     {_mb(size['database'] + size['files'])} (database {_mb(size['database'])}, "
          f"files {_mb(size['files'])}; in use {_mb(plan['used_bytes'])})")
    print(f"holds:    {counts['sessions']:,} sessions, {counts['runs']:,} runs, "
          f"{counts['events']:,} events, {counts['files']:,} files")
    print(f"policy:   {_limits(doc['policy'])}")
    if plan["sessions"]:
        print(f"would remove: {len(plan['sessions']):,} sessions, {plan['runs']:,} runs, "
              f"about {_mb(plan['bytes'])}:")
        for session_id in plan["sessions"]:
            print(f"  {session_id}")
    else:
        print("would remove: nothing")
    return EXIT_OK


async def trim(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.call("POST", "/history/trim")
    if args.json:
        emit(doc)
        return EXIT_OK
    removed = doc["removed"]
    print(f"removed {removed['sessions']:,} sessions, {removed['runs']:,} runs, "
          f"{doc['blobs_removed']:,} files; database {_mb(doc['bytes_before'])} -> "
          f"{_mb(doc['bytes_after'])}")
    return EXIT_OK


def add_history_command(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """Add `history` to `sub`; it sets `func(args) -> exit code`."""
    history = sub.add_parser(
        "history", help="history's size and counts, what the retention policy would remove; "
                        "`history trim` applies it now")
    history.add_argument("words", nargs="*", metavar="[trim] [project]")
    history.add_argument("--dry-run", action="store_true",
                         help="only say what the policy would remove (the default)")
    history.add_argument("--json", action="store_true")

    def run(args: argparse.Namespace) -> int:
        words = list(args.words)
        action = show
        if words and words[0] == "trim":
            words.pop(0)
            action = trim
        if len(words) > 1 or (action is trim and args.dry_run):
            fail("usage: history [--dry-run] [project] | history trim [project]")
            return EXIT_USAGE
        return run_command(project_of(words[0] if words else None), args, action)
    history.set_defaults(func=run)
