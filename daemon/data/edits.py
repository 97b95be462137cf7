"""What a caller may change after the fact: a session's title and metadata, a run's label and
note, and the input fields an edited rerun replaces. Validation only; nothing is written here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llamon_playground.common.limits import DEFAULT_LIMITS, Limits
from llamon_playground.common.wire.words import MAX_LABEL, MAX_NOTE, MAX_TITLE
from llamon_playground.daemon.data.json_depth import check_depth
from llamon_playground.daemon.data.parts import RunRequest, parse_run_request
from llamon_playground.daemon.data.sizes import check_metadata
from llamon_playground.daemon.errors import BadRequest

__all__ = ["MAX_LABEL", "MAX_NOTE", "MAX_TITLE"]  # the wire's, checked here

SESSION_KEYS = ("title", "metadata")
RUN_KEYS = ("label", "note")
# The input fields a rerun may replace (the rest of the stored input is cloned).
RERUN_INPUT_KEYS = ("parts", "metadata", "changed_files", "revision")
RERUN_KEYS = (*RERUN_INPUT_KEYS, "label")


def _object(body: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object", code="invalid_request")
    unknown = set(body) - set(allowed)
    if unknown:
        raise BadRequest(f"unknown field(s): {', '.join(sorted(unknown))}; allowed: "
                         f"{', '.join(allowed)}", code="unknown_field")
    return body


def _text(body: dict[str, Any], key: str, limit: int, *, nullable: bool) -> str | None:
    value = body[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str) or len(value) > limit:
        kind = "a string or null" if nullable else "a string"
        raise BadRequest(f"`{key}` must be {kind} of at most {limit} characters",
                         code=f"invalid_{key}", limit=limit)
    return value


def parse_session_fields(body: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """`{"title"?, "metadata"?}` for a new session or a session edit: the fields given."""
    doc = _object(body, SESSION_KEYS)
    fields: dict[str, Any] = {}
    if "title" in doc:
        fields["title"] = _text(doc, "title", MAX_TITLE, nullable=False)
    if "metadata" in doc:
        metadata = doc["metadata"]
        if not isinstance(metadata, dict):
            raise BadRequest("`metadata` must be a JSON object", code="invalid_metadata")
        check_depth(metadata, "metadata")
        check_metadata(metadata, "metadata", limits)
        fields["metadata"] = metadata
    return fields


def parse_run_fields(body: Any) -> dict[str, str | None]:
    """`{"label"?: string|null, "note"?: string|null}`: the fields given (null clears)."""
    doc = _object(body, RUN_KEYS)
    limits = {"label": MAX_LABEL, "note": MAX_NOTE}
    return {key: _text(doc, key, limits[key], nullable=True) for key in RUN_KEYS if key in doc}


@dataclass
class RerunEdits:
    """What a rerun body replaces: `request` holds the given input fields, validated exactly
    as a new run's; `fields` names them."""

    request: RunRequest | None = None
    fields: list[str] = field(default_factory=list)
    label: str | None = None

    def apply(self, stored: RunRequest) -> RunRequest:
        if self.request is None:
            return stored
        given = self.request
        if "parts" in self.fields:
            stored.parts, stored.files = given.parts, given.files
        if "metadata" in self.fields:
            stored.metadata = given.metadata
        if "changed_files" in self.fields:
            stored.changed_files = given.changed_files
        if "revision" in self.fields:
            stored.revision = given.revision
        return stored


def parse_rerun(body: Any, limits: Limits = DEFAULT_LIMITS) -> RerunEdits:
    """An optional rerun body; no body (or `{}`) replaces nothing."""
    if body is None:
        return RerunEdits()
    doc = _object(body, RERUN_KEYS)
    edits = RerunEdits()
    if "label" in doc:
        edits.label = _text(doc, "label", MAX_LABEL, nullable=True)
    given = {k: doc[k] for k in RERUN_INPUT_KEYS if k in doc}
    if given:
        # A given `parts` must not be empty, as for a new run.
        edits.request = parse_run_request(given, require_parts="parts" in given,
                                          limits=limits)
        edits.fields = [k for k in RERUN_INPUT_KEYS if k in given]
    return edits
