"""`llamon-playground search WORDS`: find past runs by their words and filters.

Prints one run per line, newest first (`--json`: the API's page as one document), the
matched words in the excerpt between `[` and `]`. Exit codes as the other control
commands (docs/cli.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from llamon_playground.cli.api_types import SearchExcerpt, SearchHit
from llamon_playground.cli.client import PlaygroundClient
from llamon_playground.cli.terminal.control import EXIT_OK, emit, run_command
from llamon_playground.common.contract import RunStatus


def marked(excerpt: SearchExcerpt | None) -> str:
    """The excerpt with each match in brackets, on one line."""
    if excerpt is None:
        return ""
    text, out, at = excerpt["text"], [], 0
    for start, end in excerpt["matches"]:
        out += [text[at:start], "[", text[start:end], "]"]
        at = end
    out.append(text[at:])
    flat = " ".join("".join(out).split())
    return f"{excerpt['field']}: {flat}"


def hit_line(hit: SearchHit) -> str:
    """One hit: id, time, status, label, the run's input (what names it) and, when the
    words matched elsewhere, where (`matched title: …`): the reason for the hit."""
    label = f"  \"{hit['label']}\"" if hit.get("label") else ""
    reason = f" ({hit['reason']})" if hit.get("reason") else ""
    excerpt = hit.get("excerpt")
    if excerpt is not None and excerpt["field"] == "input":
        said = marked(excerpt)  # the input itself, its matches marked
    else:
        said = f"input: {hit.get('input_excerpt', '')}"
        if excerpt is not None:
            said += f"  (matched {marked(excerpt)})"
    return f"{hit['id']}  {hit['created_at']}  {hit['status']}{reason}{label}  {said}".rstrip()


async def search(client: PlaygroundClient, args: argparse.Namespace) -> int:
    page = await client.search(" ".join(args.words), status=args.status or (),
                               reason=args.reason or (), labelled=args.labelled,
                               evaluator_failed=args.evaluator_failed,
                               session=args.session, after=args.after, limit=args.limit)
    if args.json:
        emit(page)
        return EXIT_OK
    for hit in page["hits"]:
        print(hit_line(hit))
    if not page["hits"]:
        print("no run matches")
    if page["next_after"]:
        print(f"(more: add --after {page['next_after']})")
    return EXIT_OK


def add_search_command(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """Add `search` to the CLI's subcommands (`project_of` finds a project's settings)."""
    p = sub.add_parser("search", help="find past runs by words in their input, output, "
                                      "label, note or session title, and filters")
    p.add_argument("words", nargs="*", help="words (all must match), \"a phrase\", word*")
    p.add_argument("--project", help="the project folder (default: as the other commands)")
    p.add_argument("--status", action="append", choices=[s.value for s in RunStatus],
                   help="only runs with this status (repeat for any of several)")
    p.add_argument("--reason", action="append", help="only runs that ended for this reason")
    p.add_argument("--labelled", action="store_true", help="only runs with a label")
    p.add_argument("--evaluator-failed", action="store_true",
                   help="only runs an evaluator failed")
    p.add_argument("--session", help="only this session's runs")
    p.add_argument("--limit", type=int, default=50, help="runs per page, 1 to 1000")
    p.add_argument("--after", help="the cursor a previous page printed")
    p.add_argument("--json", action="store_true", help="the API's page as one JSON document")
    p.set_defaults(func=lambda args: run_command(project_of(args.project), args, search))
