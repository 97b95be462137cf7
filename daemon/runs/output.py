"""Collects what the Host streams during a run into the parts that get stored; long texts
and files go to the blob store as they arrive (runs/spool.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.data.json_depth import MAX_DEPTH, json_depth
from llamon_playground.daemon.runs.spool import FileSpool, TextSpool
from llamon_playground.daemon.store.blobs import BlobStore

# A run of consecutive text parts is one TextSpool; a file sent as bytes, a FileSpool.
Item = WirePart | TextSpool | FileSpool


class OutputCollector:
    """Artifacts by id (text deltas spooled, see TextSpool), plus the latest status message
    and message replies. With `blobs`, a long text goes to the blob store as it arrives, so
    what the collector holds does not grow with the run's output."""

    def __init__(self, blobs: BlobStore | None = None) -> None:
        self._new_writer = blobs.writer if blobs is not None else None
        self._artifacts: dict[str, list[Item]] = {}
        self._status_parts: list[WirePart] = []
        self._message_parts: list[Item] = []
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
            self._extend(self._message_parts, event.parts)
            self.state = self.state or "completed"
            return [(p.text, True) for p in event.parts if p.kind == "text" and p.text]
        if event.type == "artifact":
            key = event.artifact_id or f"artifact-{len(self._artifacts)}"
            texts = [p.text for p in event.parts if p.kind == "text" and p.text]
            if event.append and key in self._artifacts:
                self._extend(self._artifacts[key], event.parts)
                return [(text, True) for text in texts]
            replaced = key in self._artifacts
            if replaced:
                _discard(self._artifacts[key])
            self._artifacts[key] = []
            self._extend(self._artifacts[key], event.parts)
            if not texts:
                # A replacement without text still clears what a client shows for it.
                return [("", False)] if replaced else []
            return [(text, i > 0) for i, text in enumerate(texts)]
        return []

    def _extend(self, items: list[Item], parts: list[WirePart]) -> None:
        for part in parts:
            if part.kind == "file" and part.raw is not None and self._new_writer is not None:
                items.append(FileSpool(part, self._new_writer))
            elif part.kind != "text":
                items.append(part)
            elif items and isinstance(items[-1], TextSpool):
                items[-1].append(part.text or "")
            else:
                items.append(TextSpool(part, self._new_writer))

    def status_text(self) -> str:
        """The text of the latest status message: a failed task's own reason."""
        return " ".join(p.text for p in self._status_parts if p.kind == "text" and p.text)

    def _items(self) -> list[Item]:
        items: list[Item] = []
        for chunks in self._artifacts.values():
            items.extend(chunks)
        items.extend(self._message_parts)
        items.extend(self._status_parts)
        return items

    def wire_parts(self) -> list[WirePart]:
        """The parts as the Host's, each run of text joined once (a spilled one: its
        excerpt)."""
        return [item.wire_part() if isinstance(item, TextSpool)
                else item.part if isinstance(item, FileSpool) else item
                for item in self._items()]

    async def stored_parts(self, blobs: BlobStore,
                           on_blob_error: Callable[[OSError], None] | None = None
                           ) -> tuple[list[dict[str, Any]], list[str]]:
        """What history stores (see store_parts), spooled texts as their blob and excerpt;
        the blobs' hashes. Called once, at the run's end."""
        stored: list[dict[str, Any]] = []
        shas: list[str] = []
        for item in self._items():
            if isinstance(item, (TextSpool, FileSpool)):
                doc, sha = await item.stored(on_blob_error)
                stored.append(doc)
                if sha is not None:
                    shas.append(sha)
            else:
                docs, part_shas = await store_parts([item], blobs, on_blob_error)
                stored.extend(docs)
                shas.extend(part_shas)
        return stored, shas


def _discard(items: list[Item]) -> None:
    for item in items:
        if isinstance(item, (TextSpool, FileSpool)):
            item.discard()


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
