"""Checks an imported bundle completely, in memory, before anything is written.

Format, field types, every ID relation (run → session, run → parent run, event → run, file
part → blob), every blob's base64, size and sha256, and the limits (blob count and sizes,
record count, nesting depth). Pure and synchronous: the import runs it in a worker thread.

A blob is checked a slice at a time (`decoded_chunks`) and not kept decoded: the import
decodes it again, a slice at a time, into the blob store. So an import holds the parsed
bundle and a few MiB besides, never a second copy of its blobs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from llamon_playground.common.contract import RunStatus
from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.common.wire.words import BUNDLE_FORMAT, MAX_LABEL, MAX_NOTE
from llamon_playground.daemon.data.bundle_suites import check_suites
from llamon_playground.daemon.data.json_depth import check_depth
from llamon_playground.daemon.data.parts import SHA256_RE
from llamon_playground.daemon.data.sizes import check_capture_event, check_metadata
from llamon_playground.daemon.errors import BadRequest, PayloadTooLarge

MAX_BLOBS = 10_000
MAX_TOTAL_BLOB_BYTES = 160 * 1024 * 1024
# One blob may take a bundle's whole allowance: a long answer is one blob (a text part over
# 64 KiB is stored whole in the blob store), bounded by the run's output limit, and what
# an export holds must import back. Blobs are streamed to the store, so their size costs
# the import no memory beyond the parsed bundle.
MAX_BLOB_BYTES = MAX_TOTAL_BLOB_BYTES
BASE64_CHUNK = 4 * 1024 * 1024  # base64 characters decoded at once (3 MiB of bytes)
MAX_RECORDS = 1_000_000  # sessions + runs + events
MAX_ID_CHARS = 200

TOP_KEYS = {"format", "sessions", "runs", "events", "blobs", "exported_at", "privacy_warning",
            "suites"}
# `run_count` / `score_summary` are derived fields of the list answers: accepted, ignored.
SESSION_KEYS = {"id", "title", "context_id", "created_at", "metadata", "run_count"}
RUN_TEXT_COLUMNS = ("reason", "started_at", "ended_at", "task_id", "rerun_of", "resumed_by",
                    "recommended_run_command", "label", "note", "code_fingerprint", "a2a_version")
# A bundle holds no label or note that PATCH /runs/{id} would refuse.
TEXT_LIMITS = {"label": MAX_LABEL, "note": MAX_NOTE}
RUN_KEYS = {"id", "session_id", "status", "created_at", "context_id", "parent_run_id",
            "duration_ms", "generation", "input", "output", "error", "scores",
            "score_summary", "edited", "edited_fields", *RUN_TEXT_COLUMNS}
EVENT_KEYS = {"seq", "run_id", "kind", "payload", "ts"}
# An event's kind names its SSE event and is written into its stored frame as it is: no
# newline, quote or backslash may break either (the daemon's own kinds look like this).
EVENT_KIND_RE = re.compile(r"[A-Za-z0-9_.-]+")
PART_KEYS = {"kind", "text", "data", "sha256", "size", "name", "mime", "source", "uri",
             "availability", "replay", "status", "reason", "code", "message", "truncated"}
STATUSES = {s.value for s in RunStatus}


@dataclass
class ValidBundle:
    """An import that passed every check, in the order it can be written without a dangling
    reference."""

    sessions: list[dict[str, Any]]
    runs: list[dict[str, Any]]  # every parent before its children
    events: list[dict[str, Any]]  # in seq order
    # Only those a part references: their base64 text, verified (decode with decoded_chunks).
    blobs: dict[str, str]
    suites: list[dict[str, Any]] = field(default_factory=list)  # data/bundle_suites.py


def bad(code: str, message: str, where: str | None = None) -> BadRequest:
    if where is None:
        return BadRequest(message, code=code)
    return BadRequest(f"{where}: {message}", code=code, where=where)


def validate_bundle(doc: Any, limits: Limits = DEFAULT_LIMITS) -> ValidBundle:
    """The bundle checked whole, with the same limits the API applies (`limits`)."""
    if not isinstance(doc, dict):
        raise bad("invalid_bundle", "the bundle must be a JSON object")
    if doc.get("format") != BUNDLE_FORMAT:
        raise bad("unsupported_bundle_format",
                  f"`format` must be exactly {BUNDLE_FORMAT!r} (got {doc.get('format')!r})")
    _only_keys(doc, TOP_KEYS, "bundle")
    for key in ("exported_at", "privacy_warning"):  # informative, but typed like the rest
        _text(doc, key, "bundle")
    sessions = _list(doc, "sessions")
    runs = _list(doc, "runs")
    events = _list(doc, "events")
    if len(sessions) + len(runs) + len(events) > MAX_RECORDS:
        raise PayloadTooLarge(f"a bundle holds at most {MAX_RECORDS} records",
                              code="bundle_too_large")
    sizes = _blob_sizes(doc.get("blobs"))
    session_ids = _check_sessions(sessions, limits)
    referenced = _check_runs(runs, session_ids, sizes, limits)
    run_ids = {run["id"] for run in runs}
    captures: dict[str, int] = {}
    for index, event in enumerate(events):
        _check_event(event, f"events[{index}]", run_ids)
        if event["kind"] == "trace":
            captures[event["run_id"]] = captures.get(event["run_id"], 0) + 1
            check_capture_event(event.get("payload", {}), captures[event["run_id"]],
                                f"events[{index}].payload", limits)
    suites, in_suites = check_suites(doc.get("suites", []), sizes, _check_part, limits)
    blobs = _check_blobs(doc["blobs"], referenced | in_suites)
    ordered_events = sorted(events, key=lambda e: e["seq"])
    return ValidBundle(sessions, _parents_first(runs), ordered_events, blobs, suites)


def _only_keys(obj: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(obj) - allowed
    if unknown:
        raise bad("invalid_bundle", f"unknown field(s) {', '.join(sorted(unknown))}", where)


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    if not isinstance(value, list):
        raise bad("invalid_bundle", "must be a list", key)
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise bad("invalid_bundle", "must be an object", f"{key}[{index}]")
    return value


def _text(obj: dict[str, Any], key: str, where: str, *, required: bool = False,
          max_chars: int | None = None) -> None:
    value = obj.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value) or (
            max_chars is not None and len(value) > max_chars):
        limit = f" of at most {max_chars} characters" if max_chars else ""
        raise bad("invalid_bundle", f"must be a {'non-empty ' if required else ''}string{limit}",
                  f"{where}.{key}")


def _unique_id(obj: dict[str, Any], where: str, seen: set[str]) -> str:
    _text(obj, "id", where, required=True, max_chars=MAX_ID_CHARS)
    if obj["id"] in seen:
        raise bad("invalid_bundle", f"duplicate id {obj['id']!r}", f"{where}.id")
    seen.add(obj["id"])
    return str(obj["id"])


# -- blobs ------------------------------------------------------------------------------------

def _blob_sizes(blobs: Any) -> dict[str, int]:
    """Shape and limits of `blobs`, from declared sizes and base64 lengths (nothing decoded)."""
    if not isinstance(blobs, dict):
        raise bad("invalid_bundle", "must be an object keyed by sha256", "blobs")
    if len(blobs) > MAX_BLOBS:
        raise PayloadTooLarge(f"a bundle holds at most {MAX_BLOBS} blobs (got {len(blobs)})",
                              code="bundle_too_large")
    sizes: dict[str, int] = {}
    for sha, blob in blobs.items():
        where = f"blobs[{sha[:80]!r}]"
        if not SHA256_RE.match(sha):
            raise bad("invalid_bundle", "blob keys must be lowercase hex sha256 digests", where)
        if not isinstance(blob, dict):
            raise bad("invalid_bundle", "must be {bytes_base64, size}", where)
        _only_keys(blob, {"bytes_base64", "size"}, where)
        size, encoded = blob.get("size"), blob.get("bytes_base64")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise bad("invalid_bundle", "`size` must be a non-negative integer", where)
        if not isinstance(encoded, str):
            raise bad("invalid_bundle", "`bytes_base64` must be a string", where)
        if max(size, decoded_size(encoded)) > MAX_BLOB_BYTES:
            raise PayloadTooLarge(f"{where}: a blob may hold at most {MAX_BLOB_BYTES} bytes",
                                  code="blob_too_large", where=where)
        sizes[sha] = size
    if sum(sizes.values()) > MAX_TOTAL_BLOB_BYTES:
        raise PayloadTooLarge(f"the blobs of a bundle may hold at most {MAX_TOTAL_BLOB_BYTES} "
                              "bytes in all", code="bundle_too_large")
    return sizes


def _check_blobs(blobs: dict[str, Any], referenced: set[str]) -> dict[str, str]:
    """Each blob's base64, size and sha256, checked a slice at a time; the base64 of those
    a part references."""
    checked: dict[str, str] = {}
    for sha, blob in blobs.items():
        where = f"blobs[{sha!r}]"
        digest, size = hashlib.sha256(), 0
        try:
            for chunk in decoded_chunks(blob["bytes_base64"]):
                digest.update(chunk)
                size += len(chunk)
        except (binascii.Error, ValueError) as exc:
            raise bad("invalid_base64", "`bytes_base64` is not valid base64", where) from exc
        if size != blob["size"]:
            raise bad("blob_size_mismatch",
                      f"decodes to {size} bytes, `size` says {blob['size']}", where)
        if digest.hexdigest() != sha:
            raise bad("blob_hash_mismatch", "the bytes do not hash to their key", where)
        if sha in referenced:
            checked[sha] = blob["bytes_base64"]
    return checked


def decoded_size(encoded: str) -> int:
    """The bytes a (valid) base64 text decodes to, from its length: padding `=` carries no
    byte, so a blob of exactly MAX_BLOB_BYTES (what an export may hold) passes."""
    padding = 2 if encoded.endswith("==") else 1 if encoded.endswith("=") else 0
    return len(encoded) * 3 // 4 - padding


def decoded_chunks(encoded: str) -> Iterator[bytes]:
    """The bytes of a base64 text, BASE64_CHUNK characters at a time (binascii.Error or
    ValueError for what is not strict base64). Padding may end only the last slice: a
    `=` inside the text is refused as decoding it whole refuses it."""
    for start in range(0, len(encoded), BASE64_CHUNK):
        chunk = encoded[start:start + BASE64_CHUNK]
        if start + BASE64_CHUNK < len(encoded) and "=" in chunk:
            raise binascii.Error("padding inside the text")
        yield base64.b64decode(chunk, validate=True)


# -- records ----------------------------------------------------------------------------------

def _check_sessions(sessions: list[dict[str, Any]], limits: Limits) -> set[str]:
    ids: set[str] = set()
    for index, session in enumerate(sessions):
        where = f"sessions[{index}]"
        _only_keys(session, SESSION_KEYS, where)
        _unique_id(session, where, ids)
        _text(session, "title", where, max_chars=500)
        _text(session, "context_id", where)
        _text(session, "created_at", where)
        metadata = session.get("metadata", {})
        if not isinstance(metadata, dict):
            raise bad("invalid_bundle", "must be an object", f"{where}.metadata")
        check_depth(metadata, f"{where}.metadata")
        check_metadata(metadata, f"{where}.metadata", limits)
    return ids


def _check_runs(runs: list[dict[str, Any]], session_ids: set[str],
                blob_sizes: dict[str, int], limits: Limits) -> set[str]:
    """Every run's fields and relations; returns the blobs its file parts reference."""
    ids: set[str] = set()
    for index, run in enumerate(runs):
        _only_keys(run, RUN_KEYS, f"runs[{index}]")
        _unique_id(run, f"runs[{index}]", ids)
    referenced: set[str] = set()
    for index, run in enumerate(runs):
        where = f"runs[{index}]"
        if run.get("session_id") not in session_ids:
            raise bad("dangling_reference",
                      f"session {run.get('session_id')!r} is not in the bundle",
                      f"{where}.session_id")
        parent = run.get("parent_run_id")
        if parent is not None and parent not in ids:
            raise bad("dangling_reference", f"parent run {parent!r} is not in the bundle",
                      f"{where}.parent_run_id")
        if run.get("status") not in STATUSES:
            raise bad("invalid_bundle", f"must be one of {', '.join(sorted(STATUSES))}",
                      f"{where}.status")
        _text(run, "created_at", where, required=True)
        _text(run, "context_id", where, required=True)
        for column in RUN_TEXT_COLUMNS:
            _text(run, column, where, max_chars=TEXT_LIMITS.get(column))
        duration, generation = run.get("duration_ms"), run.get("generation")
        if duration is not None and (isinstance(duration, bool)
                                     or not isinstance(duration, int | float)):
            raise bad("invalid_bundle", "must be a number or null", f"{where}.duration_ms")
        if generation is not None and (isinstance(generation, bool)
                                       or not isinstance(generation, int)):
            raise bad("invalid_bundle", "must be an integer or null", f"{where}.generation")
        edited = run.get("edited_fields")
        if edited is not None and (not isinstance(edited, list) or len(edited) > 10
                                   or not all(isinstance(f, str) and len(f) <= 50
                                              for f in edited)):
            raise bad("invalid_bundle", "must be a short list of field names or null",
                      f"{where}.edited_fields")
        referenced |= _check_run_documents(run, where, blob_sizes, limits)
    return referenced


def _check_run_documents(run: dict[str, Any], where: str,
                         blob_sizes: dict[str, int], limits: Limits) -> set[str]:
    for column in ("input", "output", "error", "scores"):
        check_depth(run.get(column), f"{where}.{column}")
    stored_input = run.get("input")
    if not isinstance(stored_input, dict) or not isinstance(stored_input.get("parts"), list):
        raise bad("invalid_bundle", "must be an object with a `parts` list", f"{where}.input")
    if not isinstance(stored_input.get("metadata", {}), dict):
        raise bad("invalid_bundle", "must be an object", f"{where}.input.metadata")
    check_metadata(stored_input.get("metadata", {}), f"{where}.input.metadata", limits)
    output = run.get("output", [])
    if not isinstance(output, list):
        raise bad("invalid_bundle", "must be a list of parts", f"{where}.output")
    if run.get("error") is not None and not isinstance(run["error"], dict):
        raise bad("invalid_bundle", "must be an object or null", f"{where}.error")
    scores = run.get("scores", [])
    if not isinstance(scores, list) or not all(isinstance(s, dict) for s in scores):
        raise bad("invalid_bundle", "must be a list of objects", f"{where}.scores")
    referenced: set[str] = set()
    for name, parts in (("input.parts", stored_input["parts"]), ("output", output)):
        for index, part in enumerate(parts):
            sha = _check_part(part, f"{where}.{name}[{index}]", blob_sizes)
            if sha is not None:
                referenced.add(sha)
    return referenced


def _check_part(part: Any, where: str, blob_sizes: dict[str, int]) -> str | None:
    """A stored tagged part (docs/storage.md); returns the blob a local file part references."""
    if not isinstance(part, dict):
        raise bad("invalid_bundle", "a part must be an object", where)
    _only_keys(part, PART_KEYS, where)
    kind = part.get("kind")
    required = {"text": "text", "status": "status", "error": "message"}
    if kind in required:
        if not isinstance(part.get(required[kind]), str):
            raise bad("invalid_bundle", f"a {kind} part needs a string `{required[kind]}`", where)
        if kind == "text" and part.get("sha256") is not None:
            return _check_blob(part, where, blob_sizes)  # a long text: its whole is a blob
        return None
    if kind == "data":
        if not isinstance(part.get("data"), dict):
            raise bad("invalid_bundle", "a data part's `data` must be a JSON object", where)
        return None
    if kind != "file":
        raise bad("invalid_bundle", f"unknown part kind {kind!r}", where)
    sha = part.get("sha256")
    if sha is None:
        if not isinstance(part.get("uri"), str) or not part["uri"]:
            raise bad("invalid_bundle", "a file part needs `sha256` or `uri`", where)
        return None
    return _check_blob(part, where, blob_sizes)


def _check_blob(part: dict[str, Any], where: str, blob_sizes: dict[str, int]) -> str:
    sha = part.get("sha256")
    if not isinstance(sha, str) or sha not in blob_sizes:
        raise bad("missing_blob", f"file {str(sha)[:80]!r} is not among the bundle's blobs",
                  where)
    if part.get("size") != blob_sizes[sha]:
        raise bad("blob_size_mismatch",
                  f"the part says {part.get('size')!r} bytes, its blob {blob_sizes[sha]}", where)
    return sha


def _check_event(event: dict[str, Any], where: str, run_ids: set[str]) -> None:
    _only_keys(event, EVENT_KEYS, where)
    seq = event.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise bad("invalid_bundle", "must be a non-negative integer", f"{where}.seq")
    if event.get("run_id") not in run_ids:
        raise bad("dangling_reference", f"run {event.get('run_id')!r} is not in the bundle",
                  f"{where}.run_id")
    _text(event, "kind", where, required=True, max_chars=100)
    if not EVENT_KIND_RE.fullmatch(event["kind"]):
        raise bad("invalid_bundle", "must be ASCII letters, digits, '.', '_' or '-'",
                  f"{where}.kind")
    _text(event, "ts", where)
    if not isinstance(event.get("payload", {}), dict):
        raise bad("invalid_bundle", "must be an object", f"{where}.payload")
    check_depth(event.get("payload"), f"{where}.payload")


def _parents_first(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs ordered so each parent precedes its children (the parent_run_id foreign key)."""
    by_id = {run["id"]: run for run in runs}
    placed: set[str] = set()
    ordered: list[dict[str, Any]] = []
    for run in runs:
        chain: list[dict[str, Any]] = []
        in_chain: set[str] = set()
        current: dict[str, Any] | None = run
        while current is not None and current["id"] not in placed:
            if current["id"] in in_chain:
                raise bad("invalid_bundle", "parent runs form a cycle",
                          f"runs[id={run['id']!r}].parent_run_id")
            chain.append(current)
            in_chain.add(current["id"])
            parent = current.get("parent_run_id")
            current = by_id[parent] if parent is not None else None
        for item in reversed(chain):
            placed.add(item["id"])
            ordered.append(item)
    return ordered
