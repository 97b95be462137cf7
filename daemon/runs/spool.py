"""One streamed text part, held in memory while it is small and written to the blob store
as it arrives once it is not; and a Host's file part, written there when it arrives.

A Host may stream a run's worth of output (256 MiB by default) as one text part, a delta at
a time. Held as a list of deltas and joined at the run's end, that text cost the daemon its
size several times over (the deltas, the join, the JSON of the row and of the run.output
event: 5 GB of RSS for a 270 MB answer). Past TEXT_INLINE_BYTES the spool writes each delta
to a BlobWriter instead and keeps only the excerpt history stores beside the blob's hash.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from llamon_playground.common.limits import TEXT_EXCERPT_CHARS, TEXT_INLINE_BYTES
from llamon_playground.daemon.a2a.wire import WirePart
from llamon_playground.daemon.store.blobs import BlobWriter

log = logging.getLogger(__name__)


def utf8_size(text: str) -> int:
    """The bytes `text` takes as UTF-8 (what the blob holds)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class TextSpool:
    """A text part as its deltas arrive: `append` each, then `stored()` once at the end.

    Without a `new_writer` (a unit test's collector) the text always stays in memory.
    """

    def __init__(self, first: WirePart, new_writer: Callable[[], BlobWriter] | None) -> None:
        self.part = replace(first, text=None)  # the first part's other fields (its MIME)
        self._new_writer = new_writer
        self._chunks: list[str] = []
        self._head = ""
        self._writer: BlobWriter | None = None
        self._failed: OSError | None = None
        self.size = 0  # UTF-8 bytes so far
        self.append(first.text or "")

    @property
    def spilled(self) -> bool:
        """Whether the text went to the blob store (or was meant to, and the disk refused)."""
        return self._writer is not None or self._failed is not None

    def append(self, text: str) -> None:
        """One more delta of this part's text."""
        if not text:
            return
        if not self.spilled:
            self._chunks.append(text)
            self.size += utf8_size(text)
            if self.size > TEXT_INLINE_BYTES and self._new_writer is not None:
                self._spill()
            return
        data = text.encode("utf-8", "surrogatepass")
        self.size += len(data)
        self._write(data)

    def _spill(self) -> None:
        whole = "".join(self._chunks)
        self._chunks = []
        self._head = whole[:TEXT_EXCERPT_CHARS]
        try:
            assert self._new_writer is not None
            self._writer = self._new_writer()
        except OSError as exc:
            self._failed = exc
            return
        self._write(whole.encode("utf-8", "surrogatepass"))

    def _write(self, data: bytes) -> None:
        if self._writer is None:
            return  # the disk refused earlier: only the size is still counted
        try:
            self._writer.write(data)
        except OSError as exc:  # disk full: the run goes on; history keeps the excerpt
            self._failed = exc
            self._writer.discard()
            self._writer = None

    def text(self) -> str:
        """The whole text while it is in memory, else its excerpt."""
        return "".join(self._chunks) if not self.spilled else self._head

    def wire_part(self) -> WirePart:
        """The part as the Host's, its text joined once (or the excerpt once spilled)."""
        return replace(self.part, text=self.text())

    def discard(self) -> None:
        """The Host replaced this part: drop what was written."""
        if self._writer is not None:
            self._writer.discard()
            self._writer = None
        self._chunks = []

    async def stored(self, on_error: Callable[[OSError], None] | None = None
                     ) -> tuple[dict[str, Any], str | None]:
        """The stored part and, when spilled, its blob's sha256. A blob the disk refused
        keeps the excerpt and the size with `availability: "unavailable"`."""
        spilled, writer, self._writer = self.spilled, self._writer, None
        sha = None
        if writer is not None:
            try:
                sha = await asyncio.to_thread(writer.commit)
            except OSError as exc:
                self._failed = exc
        return self._doc(spilled, sha, on_error)

    def stored_now(self, on_error: Callable[[OSError], None] | None = None
                   ) -> tuple[dict[str, Any], str | None]:
        """As `stored`, the blob committed in the caller's thread: for boot recovery, which
        folds a crashed run's deltas inside the store's writer."""
        spilled, writer, self._writer = self.spilled, self._writer, None
        sha = None
        if writer is not None:
            try:
                sha = writer.commit()
            except OSError as exc:
                self._failed = exc
        return self._doc(spilled, sha, on_error)

    def _doc(self, spilled: bool, sha: str | None,
             on_error: Callable[[OSError], None] | None) -> tuple[dict[str, Any], str | None]:
        if not spilled:
            return {"kind": "text", "text": "".join(self._chunks)}, None
        doc: dict[str, Any] = {"kind": "text", "text": self._head, "size": self.size,
                               "truncated": True}
        if sha is not None:
            doc["sha256"] = sha
            return doc, sha
        doc["availability"] = "unavailable"
        if on_error is not None and self._failed is not None:
            on_error(self._failed)
        return doc, None


class FileSpool:
    """A file the Host sent as bytes: written to a BlobWriter when it arrives, so a run's
    many file parts are not all held until its end. Without a `new_writer` (a unit test's
    collector) the bytes stay on the part."""

    def __init__(self, part: WirePart, new_writer: Callable[[], BlobWriter]) -> None:
        raw = part.raw or b""
        self.part = replace(part, raw=None)
        self.size = len(raw)
        self._writer: BlobWriter | None = None
        self._failed: OSError | None = None
        self._sha256 = ""
        try:
            self._writer = new_writer()
            self._writer.write(raw)
            self._sha256 = self._writer.hexdigest()
        except OSError as exc:  # disk full: history keeps the metadata and hash
            self._failed = exc
            self._sha256 = hashlib.sha256(raw).hexdigest()
            if self._writer is not None:
                self._writer.discard()
                self._writer = None

    def discard(self) -> None:
        """The Host replaced this part: drop what was written."""
        if self._writer is not None:
            self._writer.discard()
            self._writer = None

    async def stored(self, on_error: Callable[[OSError], None] | None = None
                     ) -> tuple[dict[str, Any], str | None]:
        """The stored file part and its blob's sha256 (None when the disk refused it: the
        part then says `availability: "unavailable"`)."""
        doc: dict[str, Any] = {"kind": "file", "sha256": self._sha256, "size": self.size,
                               "name": self.part.name,
                               "mime": self.part.mime or "application/octet-stream",
                               "source": "output"}
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                return doc, await asyncio.to_thread(writer.commit)
            except OSError as exc:
                self._failed = exc
        doc["availability"] = "unavailable"
        if on_error is not None and self._failed is not None:
            on_error(self._failed)
        return doc, None
