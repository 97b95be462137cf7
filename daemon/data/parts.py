"""Tagged parts and the run request body: validation, and what gets stored.

Stored part kinds: text, data, file, status, error. Input validation never writes anything;
inline file bytes are carried as `PendingFile`s until the run is accepted.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from llamon_playground.common.limits import (
    DEFAULT_LIMITS,
    TEXT_EXCERPT_CHARS,
    TEXT_INLINE_BYTES,
    Limits,
)
from llamon_playground.common.wire.words import (
    MAX_CHANGED_FILES,
    MAX_INLINE_FILE_BYTES,
    MAX_PARTS,
    MAX_REVISION,
)
from llamon_playground.daemon.data.json_depth import check_depth
from llamon_playground.daemon.data.sizes import check_metadata
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge

RESERVED_METADATA_KEY = "llamon.playground"
# How a stored file is named: its content's sha256, in lowercase hex (the blob store's key).
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
REQUEST_KEYS = {"parts", "metadata", "changed_files", "revision"}
PART_KEYS = {"text": {"kind", "text"}, "data": {"kind", "data"},
             "file": {"kind", "name", "mime", "uri", "bytes_base64"}}


@dataclass
class PendingFile:
    """Inline file bytes (or a long text's) held in memory until the run is accepted: a
    refused request writes no blob. Emptied once written, so a run does not keep them."""

    data: bytes
    part: dict[str, Any]  # the stored part; `sha256` is filled in when the blob is written


@dataclass
class RunRequest:
    """A validated run (or resume) body, not yet stored; `stored_input` is what history keeps."""

    parts: list[dict[str, Any]]
    metadata: dict[str, Any] = field(default_factory=dict)
    changed_files: list[str] = field(default_factory=list)
    revision: str | None = None
    files: list[PendingFile] = field(default_factory=list)

    def stored_input(self) -> dict[str, Any]:
        """The run's input as the store keeps it."""
        return {"parts": self.parts, "metadata": self.metadata,
                "changed_files": self.changed_files, "revision": self.revision}


def _bad(message: str, code: str = "invalid_request", **extra: Any) -> BadRequest:
    return BadRequest(message, code=code, **extra)


def parse_run_request(body: Any, *, require_parts: bool = True,
                      limits: Limits = DEFAULT_LIMITS) -> RunRequest:
    """A run request checked against the limits; BadRequest (with its code) for anything else."""
    if not isinstance(body, dict):
        raise _bad("the request body must be a JSON object")
    unknown = set(body) - REQUEST_KEYS
    if unknown:
        raise _bad(f"unknown field(s): {', '.join(sorted(unknown))}", "unknown_field")
    raw_parts = body.get("parts", [])
    if not isinstance(raw_parts, list):
        raise _bad("`parts` must be a list of tagged parts", "invalid_part")
    if require_parts and not raw_parts:
        raise _bad("`parts` must hold at least one part", "invalid_part")
    if len(raw_parts) > MAX_PARTS:
        raise _bad(f"at most {MAX_PARTS} parts per request", "invalid_part")
    request = RunRequest(parts=[])
    for index, raw in enumerate(raw_parts):
        request.parts.append(_parse_input_part(raw, index, request.files))
    metadata = body.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _bad("`metadata` must be a JSON object", "invalid_metadata")
    if RESERVED_METADATA_KEY in metadata:
        raise _bad(f"metadata key {RESERVED_METADATA_KEY!r} is reserved", "reserved_metadata_key")
    check_metadata(metadata, "metadata", limits)
    request.metadata = metadata
    request.changed_files = parse_changed_files(body.get("changed_files", []))
    revision = body.get("revision")
    if revision is not None and (not isinstance(revision, str) or len(revision) > MAX_REVISION):
        raise _bad(f"`revision` must be a string of at most {MAX_REVISION} characters",
                   "invalid_revision")
    request.revision = revision
    return request


def _parse_input_part(raw: Any, index: int, files: list[PendingFile]) -> dict[str, Any]:
    where = f"parts[{index}]"
    if not isinstance(raw, dict):
        raise _bad(f"{where} must be an object", "invalid_part")
    kind = raw.get("kind")
    unknown = set(raw) - PART_KEYS.get(str(kind), set(raw))
    if unknown:  # a misspelt field is an error, not silently dropped
        raise _bad(f"{where}: unknown field(s) of a {kind} part: {', '.join(sorted(unknown))}",
                   "unknown_field")
    if kind == "text":
        text = raw.get("text")
        if not isinstance(text, str):
            raise _bad(f"{where}.text must be a string", "invalid_part")
        return _text_part(text, files)
    if kind == "data":
        data = raw.get("data")
        if not isinstance(data, dict):
            raise _bad(f"{where}.data must be a JSON object", "invalid_part")
        check_depth(data, f"{where}.data")  # what is stored must also fit in a bundle
        return {"kind": "data", "data": data}
    if kind == "file":
        return _parse_input_file(raw, where, files)
    raise _bad(f"{where}.kind must be text, data or file (got {kind!r})", "invalid_part")


def _text_part(text: str, files: list[PendingFile]) -> dict[str, Any]:
    """A text part as stored: whole while small; a long one goes to the blob store like an
    inline file (history keeps its excerpt, size and sha256), so no row, event or detail
    answer holds it whole and the Host still gets every byte (a2a/wire.parts_to_wire)."""
    if len(text) * 4 <= TEXT_INLINE_BYTES:
        return {"kind": "text", "text": text}  # under the bound whatever the characters
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= TEXT_INLINE_BYTES:
        return {"kind": "text", "text": text}
    part: dict[str, Any] = {"kind": "text", "text": text[:TEXT_EXCERPT_CHARS],
                            "sha256": None, "size": len(data), "truncated": True}
    files.append(PendingFile(data, part))
    return part


def _parse_input_file(raw: dict[str, Any], where: str, files: list[PendingFile]) -> dict[str, Any]:
    name = raw.get("name")
    mime = raw.get("mime", "application/octet-stream")
    if name is not None and not isinstance(name, str):
        raise _bad(f"{where}.name must be a string", "invalid_part")
    if not isinstance(mime, str):
        raise _bad(f"{where}.mime must be a string", "invalid_part")
    uri = raw.get("uri")
    encoded = raw.get("bytes_base64")
    if (uri is None) == (encoded is None):
        raise _bad(f"{where} needs exactly one of `bytes_base64` or `uri`", "invalid_part")
    if uri is not None:
        if not isinstance(uri, str) or not uri:
            raise _bad(f"{where}.uri must be a non-empty string", "invalid_part")
        # Never downloaded: the Host gets the URI, history records that it can't be replayed.
        return {"kind": "file", "uri": uri, "name": name, "mime": mime,
                "availability": "external", "replay": "unavailable_for_replay"}
    if not isinstance(encoded, str):
        raise _bad(f"{where}.bytes_base64 must be a base64 string", "invalid_part")
    if len(encoded) > MAX_INLINE_FILE_BYTES * 4 // 3 + 4:
        raise PayloadTooLarge(f"{where} is larger than {MAX_INLINE_FILE_BYTES} bytes",
                              code="file_too_large")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _bad(f"{where}.bytes_base64 is not valid base64", "invalid_base64") from exc
    if len(data) > MAX_INLINE_FILE_BYTES:  # the length check above is only a quick bound
        raise PayloadTooLarge(f"{where} is larger than {MAX_INLINE_FILE_BYTES} bytes",
                              code="file_too_large")
    part: dict[str, Any] = {"kind": "file", "sha256": None, "size": len(data), "name": name,
                            "mime": mime, "source": "input"}
    files.append(PendingFile(data, part))
    return part


def parse_changed_files(raw: Any) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_CHANGED_FILES:
        raise _bad(f"`changed_files` must be a list of at most {MAX_CHANGED_FILES} paths",
                   "invalid_changed_files")
    result: list[str] = []
    for item in raw:
        if not isinstance(item, str) or not item or "\x00" in item or "\\" in item:
            raise _bad("`changed_files` entries must be non-empty relative paths",
                       "invalid_changed_files")
        if item.startswith("/") or posixpath.isabs(item):
            raise _bad(f"changed file {item!r} is absolute; give a path inside the project",
                       "invalid_changed_files")
        if ".." in item.split("/"):
            raise _bad(f"changed file {item!r} leaves the project", "invalid_changed_files")
        normalized = posixpath.normpath(item)
        if normalized not in result:
            result.append(normalized)
    return result
