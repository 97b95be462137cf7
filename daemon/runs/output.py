"""Collects what the Host streams during a run into the parts that get stored."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.data.json_depth import MAX_DEPTH, json_depth
from llamon_playground.daemon.store.blobs import BlobStore


class OutputCollector:
    """Artifacts by id (chunks joined), plus the latest status message and message replies."""

    def __init__(self) -> None:
        self._artifacts: dict[str, list[WirePart]] = {}
        self._status_parts: list[WirePart] = []
        self._message_parts: list[WirePart] = []
        self.task_id: str | None = None
        self.state: str | None = None

    def add(self, event: A2AEvent) -> list[tuple[str, bool]]:
        """Take one event; return the text deltas it carries, in order, each with whether it
        appends to its artifact's text so far (False: it replaces it, maybe with "")."""
        if event.task_id:
            self.task_id = event.task_id
        if event.type in ("task", "status"):
            self.state = event.state
            if event.parts:
                self._status_parts = list(event.parts)
            return []
        if event.type == "message":
            self._message_parts.extend(event.parts)
            self.state = self.state or "completed"
            return [(p.text, True) for p in event.parts if p.kind == "text" and p.text]
        if event.type == "artifact":
            key = event.artifact_id or f"artifact-{len(self._artifacts)}"
            texts = [p.text for p in event.parts if p.kind == "text" and p.text]
            if event.append and key in self._artifacts:
                self._artifacts[key].extend(event.parts)
                return [(text, True) for text in texts]
            replaced = key in self._artifacts
            self._artifacts[key] = list(event.parts)
            if not texts:
                # A replacement without text still clears what a client shows for it.
                return [("", False)] if replaced else []
            return [(text, i > 0) for i, text in enumerate(texts)]
        return []

    def status_text(self) -> str:
        """The text of the latest status message: a failed task's own reason."""
        return " ".join(p.text for p in self._status_parts if p.kind == "text" and p.text)

    def wire_parts(self) -> list[WirePart]:
        parts: list[WirePart] = []
        for chunks in self._artifacts.values():
            parts.extend(_join_text(chunks))
        parts.extend(_join_text(self._message_parts))
        parts.extend(self._status_parts)
        return parts


def _join_text(parts: list[WirePart]) -> list[WirePart]:
    """Each run of consecutive text parts as one. Joined once per run: adding each chunk to
    the text so far would copy that text again for every chunk (50,000 chunks: 0.7 s of
    the daemon's loop at the run's end)."""
    joined: list[WirePart] = []
    run: list[WirePart] = []

    def flush() -> None:
        if len(run) == 1:
            joined.append(run[0])
        elif run:  # the first part's other fields, all of the run's text
            joined.append(replace(run[0], text="".join(p.text or "" for p in run)))
        run.clear()

    for part in parts:
        if part.kind == "text":
            run.append(part)
        else:
            flush()
            joined.append(part)
    flush()
    return joined


async def store_parts(parts: list[WirePart], blobs: BlobStore,
                      on_blob_error: Callable[[OSError], None] | None = None
                      ) -> tuple[list[dict[str, Any]], list[str]]:
    """WireParts → stored tagged parts; raw file bytes go into the blob store.

    A blob that cannot be written (disk full, read-only) keeps its metadata and hash with
    `availability: "unavailable"`; the run's own outcome does not change.
    """
    stored: list[dict[str, Any]] = []
    shas: list[str] = []
    for part in parts:
        if part.kind == "text":
            stored.append({"kind": "text", "text": part.text or ""})
        elif part.kind == "data":
            data = part.data if isinstance(part.data, dict) else {"value": part.data}
            if json_depth(data) > MAX_DEPTH:
                # Kept shallow so that every stored run can also be exported and imported.
                data = {"truncated": f"the Host's data part nests deeper than {MAX_DEPTH}"}
            stored.append({"kind": "data", "data": data})
        elif part.raw is not None:
            doc = {"kind": "file", "sha256": hashlib.sha256(part.raw).hexdigest(),
                   "size": len(part.raw), "name": part.name,
                   "mime": part.mime or "application/octet-stream", "source": "output"}
            try:
                shas.append(await blobs.put(part.raw))
            except OSError as exc:
                doc["availability"] = "unavailable"
                if on_blob_error is not None:
                    on_blob_error(exc)
            stored.append(doc)
        elif part.uri is not None:
            stored.append({"kind": "file", "uri": part.uri, "name": part.name, "mime": part.mime,
                           "availability": "external", "replay": "unavailable_for_replay"})
    return stored, shas
