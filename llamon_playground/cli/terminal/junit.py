"""A suite run's report as JUnit XML, the schema GitHub Actions (through a reporter action),
GitLab (`artifacts:reports:junit`) and Jenkins (`junit` step) read.

One `testsuite` for the suite run, one `testcase` a case. A case marked `changed` is a
`failure`; `flaky` (its repetitions disagreed) is an `error` of type `flaky`: neither a pass
nor a failure, its own outcome, as the exit code (docs/suites.md); a case the suite run
never finished is `skipped`. A failure's or error's message says the status move, how much
text changed and each moved score; its body and the case's `system-out` hold the answer's
unified diff against the baseline and the score deltas.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

MAX_DIFF_LINES = 400


def _seconds(ms: Any) -> str:
    return f"{(ms or 0) / 1000:.3f}" if isinstance(ms, int | float) else "0.000"


def _score_lines(row: dict[str, Any]) -> list[str]:
    lines = []
    for s in row.get("scores") or []:
        if s.get("delta") or s.get("pass_before") != s.get("pass_after") \
                or s.get("before") is None or s.get("after") is None:
            delta = f"{s['delta']:+g}" if isinstance(s.get("delta"), int | float) else "n/a"
            lines.append(f"{s['evaluator']}: {s.get('before')} → {s.get('after')} ({delta}; "
                         f"{s.get('pass_before')} → {s.get('pass_after')})")
    for s in row.get("score_spread") or []:
        if "min" in s:
            lines.append(f"{s['evaluator']} over {row.get('repeat')} runs: min {s['min']:g}, "
                         f"median {s['median']:g}, max {s['max']:g}")
    return lines


def message(row: dict[str, Any]) -> str:
    """One line: what moved in the case (counts, no judgement)."""
    move = f"{row.get('status_before')} → {row.get('status_after')}"
    bits = [f"{row.get('mark', 'changed')}: {move}"]
    if row.get("repeat", 1) > 1:
        share = row.get("baseline_status_share")
        said = f", {share:.0%} with the baseline's status" if share is not None else ""
        bits.append(f"{row['repeat']} runs, statuses {', '.join(row.get('statuses') or [])}"
                    f"{said}")
    if row.get("text_changed"):
        bits.append(f"answer text: {row.get('text_diff_lines', 0)} lines differ")
    if row.get("data_changes"):
        bits.append(f"data: {len(row['data_changes'])} paths")
    if row.get("files_changed"):
        bits.append(f"files: {row['files_changed']}")
    bits += _score_lines(row)[:3]
    return "; ".join(bits)


def details(row: dict[str, Any], diff: str | None) -> str:
    """The answer's diff against the baseline and the score deltas (cut to a readable size)."""
    out = [message(row)]
    if diff:
        lines = diff.splitlines()
        out += ["", "answer, baseline → this run:", *lines[:MAX_DIFF_LINES]]
        if len(lines) > MAX_DIFF_LINES:
            out.append(f"... {len(lines) - MAX_DIFF_LINES} more lines")
    scores = _score_lines(row)
    if scores:
        out += ["", "scores:", *scores]
    return "\n".join(out) + "\n"


def junit_xml(report: dict[str, Any], diffs: dict[str, str]) -> bytes:
    """The XML document; `diffs` maps a case id to its unified diff (changed cases)."""
    name = str(report.get("suite_name") or report.get("suite_id"))
    cases = report["cases"]
    suite = ET.Element("testsuite", {"name": name, "timestamp": str(report.get("created_at"))})
    props = ET.SubElement(suite, "properties")
    for key in ("id", "status", "reason", "code_fingerprint", "repeat"):
        ET.SubElement(props, "property", {"name": f"suite_run.{key}",
                                          "value": str(report.get(key))})
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for row in cases:
        duration = (row.get("duration_spread") or {}).get("median")
        seconds = _seconds(duration)
        total += float(seconds)
        case = ET.SubElement(suite, "testcase", {
            "classname": f"suite.{name}", "time": seconds,
            "name": f"[{row['position'] + 1}] {row.get('input_excerpt') or row['case_id']}"})
        if row["state"] != "done":
            counts["skipped"] += 1
            ET.SubElement(case, "skipped",
                          {"message": f"not run to its end: {row.get('skipped_for') or '-'}"})
            continue
        mark = row.get("mark") or ("changed" if row.get("changed") else "same")
        text = details(row, diffs.get(row["case_id"]))
        if mark == "changed":
            counts["failures"] += 1
            ET.SubElement(case, "failure", {"message": message(row),
                                            "type": "changed"}).text = text
        elif mark == "flaky":
            counts["errors"] += 1
            ET.SubElement(case, "error", {"message": message(row), "type": "flaky"}).text = text
        ET.SubElement(case, "system-out").text = text
    attrs = {"tests": str(len(cases)), **{k: str(v) for k, v in counts.items()},
             "time": f"{total:.3f}"}
    suite.attrib.update(attrs)
    root = ET.Element("testsuites", {"name": f"llamon-playground suite {name}", **attrs})
    root.append(suite)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
