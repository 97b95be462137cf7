"""Reading one run and the project as the page shows them: `runs show` (detail and lineage),
`follow` (attach to a run's stream), `snippet` (Copy curl / Copy Python), `composer-schema`
and `targets` (where a Flow node's function is)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import orjson

from llamon_playground.cli.client import ApiError, PlaygroundClient
from llamon_playground.cli.terminal.commands import (
    PROJECT_HELP,
    daemon_command,
    json_arg,
    project_arg,
)
from llamon_playground.cli.terminal.control import (
    EXIT_ERROR,
    EXIT_OK,
    SUCCESS,
    emit,
    follow_run,
    report_end,
    run_command,
)

SHOWN_CHARS = 2000  # a part's text in `runs show` without --full


def _cut(text: str, full: bool) -> str:
    if full or len(text) <= SHOWN_CHARS:
        return text
    return (text[:SHOWN_CHARS] + f"… ({len(text) - SHOWN_CHARS:,} more characters; "
            "--full prints it whole)")


def part_lines(parts: Sequence[Mapping[str, Any]], full: bool) -> list[str]:
    """One entry a part: its text, its data as JSON, or a file's name, type and size."""
    lines = []
    for part in parts:
        kind = part.get("kind")
        if kind == "text" and part.get("truncated") and not full:
            # The daemon answered an excerpt of a long text: say the whole part's size.
            lines.append(str(part.get("text", ""))[:SHOWN_CHARS] + f"… (the whole text is "
                         f"{part.get('size') or 0:,} bytes; --full prints it whole)")
        elif kind == "text":
            lines.append(_cut(str(part.get("text", "")), full))
        elif kind == "data":
            lines.append("data: " + _cut(orjson.dumps(part.get("data")).decode(), full))
        elif kind == "file":
            where = part.get("uri") or part.get("sha256") or "-"
            lines.append(f"file: {part.get('name') or '-'} ({part.get('mime') or '-'}, "
                         f"{part.get('size') if part.get('size') is not None else '?'} bytes) "
                         f"{where}")
        else:
            lines.append(f"{kind}: {part.get('message') or part.get('status') or ''}".rstrip())
    return lines


def _block(title: str, lines: list[str]) -> None:
    if not lines:
        print(f"{title:<10}-")
        return
    for n, line in enumerate(lines):
        label = title if n == 0 else ""
        for m, row in enumerate(line.splitlines() or [""]):
            print(f"{label if m == 0 else '':<10}{row}")


def _summary(run: Mapping[str, Any], here: str) -> str:
    mark = "*" if run["id"] == here else " "
    why = f" ({run['reason']})" if run.get("reason") else ""
    name = f"  \"{run['label']}\"" if run.get("label") else ""
    return f"{mark} {run['id']}  {run['status']}{why}  {run['created_at']}{name}"


def _tree(node: Mapping[str, Any], here: str, depth: int = 0) -> list[str]:
    lines = ["  " * depth + _summary(node["run"], here)]
    for child in node.get("reruns") or []:
        lines += _tree(child, here, depth + 1)
    return lines


def print_run(run: Mapping[str, Any], lineage: Mapping[str, Any], full: bool) -> None:
    """A run's detail as the page's run view has it, then its lineage (this run: `*`)."""
    why = f" ({run['reason']})" if run.get("reason") else ""
    print(f"{'run':<10}{run['id']}  {run['status']}{why}")
    print(f"{'session':<10}{run['session_id']}")
    duration = f"  ({run['duration_ms']:,.0f} ms)" if run.get("duration_ms") is not None else ""
    print(f"{'created':<10}{run['created_at']}{duration}")
    for key in ("label", "note"):
        if run.get(key):
            print(f"{key:<10}{run[key]}")
    stored = run.get("input") or {}
    _block("input", part_lines(stored.get("parts") or [], full))
    if stored.get("metadata"):
        print(f"{'metadata':<10}{orjson.dumps(stored['metadata']).decode()}")
    if stored.get("changed_files"):
        print(f"{'changed':<10}{', '.join(stored['changed_files'])}")
    _block("output", part_lines(run.get("output") or [], full))
    error = run.get("error") or {}
    if error:
        print(f"{'error':<10}{error.get('message') or error}")
    summary = run.get("score_summary") or {}
    if summary.get("evaluators"):
        print(f"{'scores':<10}{summary['evaluators']} evaluators, {summary['failed']} failed")
    resumes = lineage.get("resumes") or []
    if len(resumes) > 1:
        _block("resumes", [_summary(r, run["id"]) for r in resumes])
    tree = lineage.get("reruns") or {}
    if tree.get("reruns") or (tree.get("run") or {}).get("id") != run["id"]:
        _block("reruns", _tree(tree, run["id"]))
    if lineage.get("truncated"):
        print(f"{'':<10}(lineage cut at 1,000 runs)")


async def _whole_texts(client: PlaygroundClient, run: Mapping[str, Any]) -> None:
    """Each text the detail answer cut (`content_url`) read whole from its part route, so
    `--full` prints all of it (`GET /runs/{id}` answers an excerpt of a long text)."""
    sides: tuple[tuple[Literal["input", "output"], Any], ...] = (
        ("input", (run.get("input") or {}).get("parts") or []),
        ("output", run.get("output") or []))
    for side, parts in sides:
        for index, part in enumerate(parts):
            if part.get("kind") == "text" and part.get("content_url"):
                whole = await client.part_content(run["id"], side, index)
                part.update(text=whole.decode("utf-8", "replace"), truncated=False)


async def show(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`runs show RUN`: the run (`GET /runs/{id}`, its parts whole) and its lineage."""
    run = await client.run(args.run_id)
    lineage = await client.lineage(args.run_id)
    if args.full:
        await _whole_texts(client, run)
    if args.json:
        emit({"run": run, "lineage": lineage})
    else:
        print_run(run, lineage, args.full)
    return EXIT_OK


async def follow(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`follow RUN`: the run's stream from the start (or after `--after N`), printed as
    `send --follow` prints it, with its exit codes."""
    await client.run(args.run_id)  # an unknown run: run_not_found, before any stream
    if not args.json:
        print(args.run_id, file=sys.stderr, flush=True)
    status = await follow_run(client, args.run_id, args.json, show_text=True, after=args.after)
    if status == "unknown":  # nothing after the cursor of a run that is over (204)
        status = str((await client.run(args.run_id))["status"])
    if not args.json:
        await report_end(client, args.run_id, status)
    return EXIT_OK if status in SUCCESS else EXIT_ERROR


async def snippet(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`snippet RUN --curl|--python`: the page's Copy curl / Copy Python, to stdout."""
    doc = await client.snippets(args.run_id)
    if args.json:
        emit(doc)
        return EXIT_OK
    sys.stdout.write(doc["curl" if args.curl else "python"])
    if not doc.get("host_ready"):
        print("the Host is not running: the snippet reads its port from $LLAMON_HOST_PORT",
              file=sys.stderr)
    return EXIT_OK


async def composer_schema(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`composer-schema`: the input composer the page shows (data tabs, or a text box)."""
    doc: dict[str, Any] = dict(await client.composer_schema())
    if args.json:
        emit(doc)
        return EXIT_OK
    print(f"kind: {doc.get('kind') or '-'}  mode: {doc['mode']}  "
          f"Host ready: {'yes' if doc.get('host_ready') else 'no'}")
    for tab in doc.get("tabs") or []:
        fields = ", ".join(f"{f['name']}: {f['type']}{'' if f.get('required') else '?'}"
                           for f in tab.get("fields") or [])
        print(f"tab {tab.get('id')}: node {tab.get('node_id')}  contract {tab.get('contract')}"
              f"  schema {tab.get('schema') or '-'}")
        print(f"  fields: {fields or '-'}")
        print(f"  draft:  {orjson.dumps(tab.get('draft')).decode()}")
    text = doc.get("text") or {}
    for example in text.get("examples") or []:
        print(f"example: {example.get('text') if isinstance(example, dict) else example}")
    for skill in text.get("skills") or []:
        print(f"skill: {skill.get('name') or skill.get('id')}"
              f"{': ' + skill['description'] if skill.get('description') else ''}")
    for note in doc.get("diagnostics") or []:
        where = f" ({note['file']}:{note.get('line') or '?'})" if note.get("file") else ""
        print(f"{note.get('severity') or 'note'}: {note.get('message')}{where}")
    return EXIT_OK


async def targets(client: PlaygroundClient, args: argparse.Namespace) -> int:
    """`targets [NODE...]`: file, line and column of each Flow node's function (none named:
    the start nodes the composer's tabs come from)."""
    nodes = list(args.nodes)
    if not nodes:
        schema = await client.composer_schema()
        nodes = list(dict.fromkeys(t["node_id"] for t in schema.get("tabs") or []
                                   if t.get("node_id")))
    found: list[dict[str, Any]] = []
    code = EXIT_OK
    for node in nodes:
        try:
            found.append(dict(await client.source_target(node)))
        except ApiError as exc:
            if args.json:
                found.append({"node_id": node, "detail": exc.detail})
            else:
                print(f"llamon-playground: {node}: {exc}", file=sys.stderr)
            code = EXIT_ERROR
    if args.json:
        emit({"targets": found})
        return code
    for target in found:
        if "detail" not in target:
            print(f"{target['node_id']}  {target.get('qualname') or target.get('function')}  "
                  f"{target['file']}:{target['line']}:{target['column']}")
    if not nodes:
        print("no start node to look up; name the nodes: targets NODE...", file=sys.stderr)
    return code


def add_inspect_commands(sub: Any, project_of: Callable[[str | None], Any]) -> None:
    """`follow`, `snippet`, `composer-schema` and `targets` (`runs show` is under `runs`)."""
    follow_p = sub.add_parser("follow", help="attach to a run's stream and print it as "
                                             "`send --follow` does")
    follow_p.add_argument("run_id", help="the run to follow (running or over)")
    project_arg(follow_p)
    follow_p.add_argument("--after", type=int, metavar="N",
                          help="start after event N (its `id`; default: from the first event)")
    json_arg(follow_p, "each event as one JSON line")
    follow_p.set_defaults(func=daemon_command(project_of, follow))

    snippet_p = sub.add_parser("snippet", help="a run's A2A request to send to the Host "
                                               "directly (the page's Copy curl / Copy Python)")
    snippet_p.add_argument("run_id", help="the run to reproduce")
    project_arg(snippet_p)
    which = snippet_p.add_mutually_exclusive_group(required=True)
    which.add_argument("--curl", action="store_true", help="the shell command (curl)")
    which.add_argument("--python", action="store_true",
                       help="the Python script (standard library only)")
    json_arg(snippet_p, "the whole snippets document (both, the Host URL, the A2A version)")
    snippet_p.set_defaults(func=daemon_command(project_of, snippet))

    schema_p = sub.add_parser("composer-schema", help="the input composer the page shows: "
                                                      "a Flow's contract tabs or the text box")
    project_arg(schema_p)
    json_arg(schema_p)
    schema_p.set_defaults(func=daemon_command(project_of, composer_schema))

    targets_p = sub.add_parser("targets", help="where each Flow node's function is "
                                               "(file:line:column)")
    targets_p.add_argument("nodes", nargs="*", metavar="NODE",
                           help="node ids (none: the start nodes the composer's tabs name)")
    targets_p.add_argument("--project", help=PROJECT_HELP)
    json_arg(targets_p, "`{\"targets\": [...]}` as the API gives each")
    targets_p.set_defaults(func=lambda args: run_command(project_of(args.project), args,
                                                         targets))
