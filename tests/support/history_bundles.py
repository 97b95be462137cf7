"""A history of many sessions as one bundle, for the tests of deletion at size: each
session's runs resume one another (parent links to clear), stream a few deltas, and the
first run of every session names one shared file."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

SHARED_FILE = b"one file every session's first run names"


def many_sessions(sessions: int, runs_per_session: int, deltas: int = 3) -> dict[str, Any]:
    sha = hashlib.sha256(SHARED_FILE).hexdigest()
    doc: dict[str, Any] = {
        "format": "llamon.playground.bundle/1", "sessions": [], "runs": [], "events": [],
        "blobs": {sha: {"bytes_base64": base64.b64encode(SHARED_FILE).decode(),
                        "size": len(SHARED_FILE)}}}
    for s in range(sessions):
        doc["sessions"].append({"id": f"s{s}", "title": f"session {s}",
                                "created_at": "2026-01-01T00:00:00.000Z"})
        for r in range(runs_per_session):
            run_id = f"r{s}-{r}"
            parts: list[dict[str, Any]] = [{"kind": "text", "text": f"question {s} {r}"}]
            if r == 0:
                parts.append({"kind": "file", "sha256": sha, "name": "shared.txt",
                              "size": len(SHARED_FILE)})
            doc["runs"].append({
                "id": run_id, "session_id": f"s{s}", "status": "completed",
                "created_at": "2026-01-01T00:00:01.000Z", "context_id": f"c{s}",
                "parent_run_id": f"r{s}-{r - 1}" if r else None, "input": {"parts": parts},
                "output": [{"kind": "text", "text": f"answer {s} {r}"}]})
            doc["events"] += [
                {"seq": 0, "run_id": run_id, "kind": "output.delta",
                 "payload": {"text": f"piece {n} "}} for n in range(deltas)]
            doc["events"].append({"seq": 0, "run_id": run_id, "kind": "run.status",
                                  "payload": {"status": "completed", "previous": "running"}})
    return doc
