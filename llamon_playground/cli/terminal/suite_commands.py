"""`llamon-playground suite ...`: make suites from stored runs or sessions, run them, read
their reports (docs/suites.md); the parser is in commands.py. In CI: `suite run NAME --follow` exits 0 when every case
ended with its baseline's status, EXIT_STATUS_MOVED when a status moved (scores never decide
an exit code: the Playground gives no verdict), 1 when the suite run did not complete."""

from __future__ import annotations

import argparse
from typing import Any

from llamon_playground.cli.api_suites import CaseRow, SuiteCaseSpec, SuiteRun
from llamon_playground.cli.client import ApiError, PlaygroundClient
from llamon_playground.cli.suites_client import suite_finished
from llamon_playground.cli.terminal.control import EXIT_ERROR, EXIT_OK, emit
from llamon_playground.cli.terminal.hints import suggest

EXIT_STATUS_MOVED = 5


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
    return (f"[{row['position'] + 1}/{total}] {case_name(row):<{CASE_NAME_CHARS}} "
            f"{status:<26} {_moves(row)}{moved}")


def summary_table(report: SuiteRun) -> list[str]:
    s = report["summary"]
    reason = f" ({report['reason']})" if report.get("reason") else ""
    lines = [f"suite {report.get('suite_name')}: {report['status']}{reason}",
             (f"  cases {s['cases']}  done {s['done']}  skipped {s['skipped']}  "
              f"changed {s['changed']}  status moved {s['status_moved_cases']}")]
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


def exit_code(report: SuiteRun) -> int:
    """0: every case ended as its baseline did; EXIT_STATUS_MOVED: a status moved; 1: the
    suite run did not complete (cancelled, failed, interrupted)."""
    if report["status"] != "completed":
        return EXIT_ERROR
    if report["summary"]["status_moved_cases"]:
        return EXIT_STATUS_MOVED
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
        print(f"{suite['id']} {suite['name']} ({suite['case_count']} cases){flag}")
    return EXIT_OK


async def run(client: PlaygroundClient, args: argparse.Namespace) -> int:
    suite = await client.suites.by_name(args.name)
    started = await client.suites.start(suite["id"])
    suite_run_id = started["suite_run_id"]
    if not args.follow:
        if args.json:
            emit(started)
        else:
            print(f"{suite_run_id} {started['status']}")
        return EXIT_OK
    total = suite["case_count"]
    # The progress events name a case by id: its input and turns come from the suite.
    cases = {c["id"]: c for c in (await client.suites.get(suite["id"]))["cases"]}
    async for event in client.suites.progress(suite_run_id):
        if event.kind == "suite.case" and event.data.get("state") in ("done", "skipped") \
                and not args.json:
            print(case_line(_row(event.data, cases), total), flush=True)
        if suite_finished(event):
            break
    report = await client.suites.report(suite_run_id)
    if args.json:
        emit(report)
    else:
        print("\n".join(summary_table(report)))
    return exit_code(report)


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
