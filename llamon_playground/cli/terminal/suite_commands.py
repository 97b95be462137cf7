"""`llamon-playground suite ...`: make suites from stored runs or sessions, save them as files,
run them, read their reports (docs/suites.md); the parser is in commands.py.

Exit codes (`exit_code`): `suite run --follow` exits 0 when every case ended with its
baseline's status, EXIT_CHANGED when a status moved, EXIT_FLAKY when none moved but a case's
repetitions disagreed, 1 when the suite run did not complete. `--ci` counts any case marked
`changed` (status, answer, data, files or scores) for EXIT_CHANGED: in CI the file's
baselines are the expectation, and a change to any of them is what a reviewer looks at."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.cli.api_suites import CaseRow, Suite, SuiteCaseSpec, SuiteRun
from llamon_playground.cli.client import ApiError, PlaygroundClient
from llamon_playground.cli.suites_client import suite_finished
from llamon_playground.cli.terminal.control import EXIT_ERROR, EXIT_OK, emit
from llamon_playground.cli.terminal.hints import suggest

EXIT_CHANGED = 5
EXIT_STATUS_MOVED = EXIT_CHANGED
EXIT_FLAKY = 6


def _moves(row: CaseRow) -> str:
    """What moved in one case, in a few words (counts, never a judgement)."""
    if row["state"] != "done":
        return f"skipped ({row.get('skipped_for') or '-'})"
    bits = []
    if row.get("text_changed"):
        bits.append(f"text {row.get('text_diff_lines', 0)} lines")
    if row.get("data_changes"):
        bits.append(f"data {len(row.get('data_changes') or [])}")
    if row.get("files_changed"):
        bits.append(f"files {row.get('files_changed')}")
    for s in row.get("scores") or []:
        if s["delta"] or s["pass_before"] != s["pass_after"]:
            delta = f"{s['delta']:+g}" if s["delta"] is not None else "n/a"
            bits.append(f"{s['evaluator']} {delta} ({s['pass_before']}→{s['pass_after']})")
    return ", ".join(bits) or "same"


CASE_NAME_CHARS = 40


def case_name(row: CaseRow) -> str:
    """A case by what it sends (its first turn's input, cut), `(chain of 2)` when it is
    more than one run: never a bare `run`."""
    name = row.get("input_excerpt") or "-"
    if len(name) > CASE_NAME_CHARS:
        name = name[:CASE_NAME_CHARS - 1] + "…"
    kind = row.get("kind")
    return f"{name} ({kind} of {row.get('turns')})" if kind and kind != "run" else name


def case_line(row: CaseRow, total: int) -> str:
    status = f"{row.get('status_before') or '-'} → {row.get('status_after') or '-'}"
    moved = "  STATUS MOVED" if row.get("status_moved") else ""
    mark = row.get("mark")
    marked = f"  {mark.upper()}" if mark in ("flaky", "changed") else ""
    reps = ""
    if (row.get("repeat") or 1) > 1:
        share = row.get("baseline_status_share")
        reps = f"  ×{row['repeat']} ({share:.0%} baseline status)" if share is not None \
            else f"  ×{row['repeat']}"
    return (f"[{row['position'] + 1}/{total}] {case_name(row):<{CASE_NAME_CHARS}} "
            f"{status:<26} {_moves(row)}{reps}{moved}{marked}")


def summary_table(report: SuiteRun) -> list[str]:
    s = report["summary"]
    reason = f" ({report['reason']})" if report.get("reason") else ""
    lines = [f"suite {report.get('suite_name')}: {report['status']}{reason}",
             (f"  cases {s['cases']}  done {s['done']}  skipped {s['skipped']}  "
              f"changed {s['changed']}  status moved {s['status_moved_cases']}"
              + (f"  flaky {s.get('flaky', 0)}  repeat {report.get('repeat')}"
                 if (report.get("repeat") or 1) > 1 else ""))]
    for move in s["statuses_moved"]:
        lines.append(f"  status {move['before']} → {move['after']}: {move['count']}")
    if s["evaluators"]:
        lines.append(f"  {'evaluator':<24} {'mean before':>12} {'mean after':>12} "
                     f"{'pass→fail':>10} {'fail→pass':>10}")
    for e in s["evaluators"]:
        lines.append(f"  {e['evaluator']:<24} {_num(e['mean_before']):>12} "
                     f"{_num(e['mean_after']):>12} {e['pass_to_fail']:>10} "
                     f"{e['fail_to_pass']:>10}")
    lines.append(f"  code {_short(report.get('code_fingerprint'))}  baseline code "
                 + (", ".join(_short(p) for p in report["baseline_fingerprints"]) or "-"))
    return lines


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _short(fingerprint: str | None) -> str:
    return fingerprint[:12] if fingerprint else "-"


def exit_code(report: SuiteRun, ci: bool = False) -> int:
    """1: the suite run did not complete (cancelled, failed, interrupted); EXIT_CHANGED: a
    case's status moved (with `ci`: a case is marked changed); EXIT_FLAKY: none did, but a
    case's repetitions disagreed; 0: neither."""
    if report["status"] != "completed":
        return EXIT_ERROR
    summary = report["summary"]
    if summary["changed"] if ci else summary["status_moved_cases"]:
        return EXIT_CHANGED
    if summary.get("flaky"):
        return EXIT_FLAKY
    return EXIT_OK


async def create(client: PlaygroundClient, args: argparse.Namespace) -> int:
    cases: list[SuiteCaseSpec] = [{"run_id": r} for r in args.runs]
    cases += [{"session_id": s} for s in args.session or []]
    if not cases:
        raise SystemExit("llamon-playground: suite create needs RUN ids or --session ID")
    suite = await client.suites.create(args.name, cases, run_on_save=args.run_on_save)
    if args.json:
        emit(suite)
    else:
        print(f"{suite['id']} {suite['name']} ({suite['case_count']} cases)")
    return EXIT_OK


async def list_suites(client: PlaygroundClient, args: argparse.Namespace) -> int:
    listed = await client.suites.list()
    if args.json:
        emit(listed)
        return EXIT_OK
    for suite in listed["suites"]:
        flag = "  run on save" if suite["run_on_save"] else ""
        where = f"  file {suite['file_path']}" if suite.get("file_path") else ""
        print(f"{suite['id']} {suite['name']} ({suite['case_count']} cases){flag}{where}")
    for problem in listed.get("file_errors") or []:
        print(f"{problem['where']}: {problem['message']}", file=sys.stderr)
    return EXIT_OK


async def save(client: PlaygroundClient, args: argparse.Namespace) -> int:
    suite = await client.suites.by_name(args.name)
    doc = await client.suites.save(suite["id"], args.to)
    if args.json:
        emit(doc)
    else:
        print(f"{suite['name']}: {doc['path']} ({doc['bytes']} bytes, "
              f"{doc['files']} input files beside)")
    return EXIT_OK


async def _suite(client: PlaygroundClient, name: str) -> Suite:
    """The suite named so; a 404 that names the suite files that could not be read."""
    try:
        return await client.suites.by_name(name)
    except ApiError as exc:
        problems = (await client.suites.list()).get("file_errors") or []
        if exc.code != "suite_not_found" or not problems:
            raise
        said = "; ".join(f"{p['where']}: {p['message']}" for p in problems)
        raise ApiError(404, {"error": "suite_not_found", "message":
                             f"no suite named {name!r}; suite files not read: {said}"}) from None


async def run(client: PlaygroundClient, args: argparse.Namespace) -> int:
    suite = await _suite(client, args.name)
    started = await client.suites.start(suite["id"], repeat=args.repeat)
    suite_run_id = started["suite_run_id"]
    ci = bool(getattr(args, "ci", False))
    to_stdout = args.json == "-"
    if not (args.follow or ci):
        if to_stdout:
            emit(started)
        else:
            print(f"{suite_run_id} {started['status']}")
        return EXIT_OK
    total = suite["case_count"]
    # The progress events name a case by id: its input and turns come from the suite.
    cases = {c["id"]: c for c in (await client.suites.get(suite["id"]))["cases"]}
    async for event in client.suites.progress(suite_run_id):
        if event.kind == "suite.case" and event.data.get("state") in ("done", "skipped") \
                and not to_stdout:
            print(case_line(_row(event.data, cases), total), flush=True)
        if suite_finished(event):
            break
    report = await client.suites.report(suite_run_id)
    if to_stdout:
        emit(report)
    else:
        print("\n".join(summary_table(report)))
    if args.json and not to_stdout:
        await asyncio.to_thread(Path(args.json).write_bytes,
                                orjson.dumps(report, option=orjson.OPT_SORT_KEYS))
    if getattr(args, "junit", None):
        # Here: every long-lived process builds this command's parser; XML is its alone.
        from llamon_playground.cli.terminal.junit import junit_xml
        diffs = {}
        for row in report["cases"]:
            if row.get("mark") in ("changed", "flaky") and row["state"] == "done":
                opened = await client.suites.case(suite_run_id, row["case_id"])
                diffs[row["case_id"]] = str(opened["compare"].get("text", {})
                                            .get("unified_diff") or "")
        await asyncio.to_thread(Path(args.junit).write_bytes, junit_xml(dict(report), diffs))
    return exit_code(report, ci=ci)


def _row(data: dict[str, Any], cases: dict[str, Any]) -> CaseRow:
    case = cases.get(str(data.get("case_id")), {})
    row: Any = {"case_id": data.get("case_id"), "position": data.get("position", 0),
                "kind": data.get("kind"), "input_excerpt": case.get("input_excerpt"),
                "turns": case.get("turns"), "state": data.get("state"),
                "skipped_for": data.get("reason"), **(data.get("row") or {})}
    return row  # type: ignore[no-any-return]


async def report_of(client: PlaygroundClient, name_or_id: str) -> SuiteRun:
    """The report of a suite's latest suite run (given its name), or of a suite run (given
    its id); a 404 that says which commands list what there is."""
    for suite in (await client.suites.list())["suites"]:
        if suite["name"] == name_or_id:
            runs = (await client.suites.runs(suite["id"]))["suite_runs"]
            if not runs:
                hint = suggest(client.settings, "suite", "run", name_or_id, project_option=True)
                raise ApiError(404, {"error": "suite_run_not_found", "message":
                                     f"suite {name_or_id!r} has not run yet; run it with "
                                     f"`{hint}`"})
            return await client.suites.report(runs[0]["id"])
    try:
        return await client.suites.report(name_or_id)
    except ApiError as exc:
        if exc.code != "suite_run_not_found":
            raise
        hint = suggest(client.settings, "suite", "list", project_option=True)
        raise ApiError(404, {"error": "suite_run_not_found", "message":
                             f"no suite named {name_or_id!r} and no suite run {name_or_id}; "
                             f"`{hint}` names the suites"}) from None


async def report(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await report_of(client, args.suite_run_id)
    if args.json:
        emit(doc)
        return exit_code(doc)

    for row in doc["cases"]:
        print(case_line(row, len(doc["cases"])))
    print("\n".join(summary_table(doc)))
    return exit_code(doc)


async def cancel(client: PlaygroundClient, args: argparse.Namespace) -> int:
    doc = await client.suites.cancel(args.suite_run_id)
    if args.json:
        emit(doc)
    else:
        print(f"{doc['suite_run_id']} {doc['status']}")
    return EXIT_OK


async def baseline(client: PlaygroundClient, args: argparse.Namespace) -> int:
    suite = await client.suites.by_name(args.name)
    doc = await client.suites.update(suite["id"], baseline_suite_run_id=args.suite_run_id)
    if args.json:
        emit(doc)
    else:
        print(f"{doc['id']} {doc['name']}: baselines from {args.suite_run_id}")
    return EXIT_OK


async def delete(client: PlaygroundClient, args: argparse.Namespace) -> int:
    suite = await client.suites.by_name(args.name)
    doc = await client.suites.delete(suite["id"])
    if args.json:
        emit(doc)
    else:
        print(f"deleted {suite['id']} {suite['name']}")
    return EXIT_OK
