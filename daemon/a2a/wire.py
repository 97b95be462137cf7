"""A2A wire shapes, 1.0 and 0.3, turned into one small set of normalized events.

The shapes are what a real a2a-sdk 1.3 server sends; tests/e2e/test_example_host.py runs
both versions against the example Host.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from typing import Any

V1 = "1.0"
V03 = "0.3"


class A2AProtocolError(Exception):
    """The Host answered something that is not A2A as we know it."""


@dataclass(frozen=True)
class Interface:
    """The endpoint and A2A version a run talks to, chosen from the agent card."""

    url: str
    version: str


@dataclass(slots=True)
class WirePart:
    """A part as the Host sent it, before the daemon stores it."""

    kind: str  # text | data | file
    text: str | None = None
    data: Any = None
    raw: bytes | None = None
    uri: str | None = None
    name: str | None = None
    mime: str | None = None


@dataclass(slots=True)
class A2AEvent:
    """One streamed frame: a task snapshot, status update, artifact chunk, message or error."""

    type: str  # task | status | artifact | message | error
    task_id: str | None = None
    context_id: str | None = None
    state: str | None = None  # normalized: submitted working completed failed canceled ...
    parts: list[WirePart] = field(default_factory=list)
    artifact_id: str | None = None
    append: bool = False
    last_chunk: bool = False
    error_code: int | None = None
    error_message: str | None = None


PAUSED_STATES = frozenset({"input_required", "auth_required"})


def normalize_state(state: Any) -> str:
    text = str(state or "unknown").lower()
    text = text.removeprefix("task_state_")
    return text.replace("-", "_")


def choose_interface(card: dict[str, Any], base_url: str) -> Interface:
    """Prefer A2A 1.0 JSON-RPC; fall back to 0.3 when that is all the card offers."""
    found: dict[str, str] = {}
    for entry in card.get("supportedInterfaces") or []:
        if not isinstance(entry, dict):
            continue
        binding = str(entry.get("protocolBinding", "JSONRPC")).upper()
        version = str(entry.get("protocolVersion", ""))
        if binding == "JSONRPC" and isinstance(entry.get("url"), str):
            found.setdefault(V1 if version.startswith("1") else V03, entry["url"])
    if V1 in found:
        return Interface(found[V1], V1)
    if V03 in found:
        return Interface(found[V03], V03)
    # A 0.3 card: a top-level url and protocolVersion.
    if isinstance(card.get("url"), str):
        return Interface(card["url"], V03)
    return Interface(base_url.rstrip("/") + "/", V1)


def parts_to_wire(parts: list[dict[str, Any]], version: str,
                  blob_reader: Any) -> list[dict[str, Any]]:
    """Stored input parts → A2A parts. `blob_reader(sha256) -> bytes` for local files."""
    out: list[dict[str, Any]] = []
    for part in parts:
        kind = part["kind"]
        if kind == "text":
            # A long text is stored as a blob (its part keeps an excerpt): the Host gets all.
            text = blob_reader(part["sha256"]).decode("utf-8", "surrogatepass") \
                if part.get("sha256") else part["text"]
            out.append({"text": text} if version == V1 else {"kind": "text", "text": text})
        elif kind == "data":
            out.append({"data": part["data"]} if version == V1
                       else {"kind": "data", "data": part["data"]})
        elif kind == "file":
            out.append(_file_to_wire(part, version, blob_reader))
    return out


def _file_to_wire(part: dict[str, Any], version: str, blob_reader: Any) -> dict[str, Any]:
    name, mime = part.get("name"), part.get("mime")
    if part.get("uri"):
        if version == V1:
            doc: dict[str, Any] = {"url": part["uri"]}
        else:
            return {"kind": "file", "file": _drop_none(
                {"uri": part["uri"], "name": name, "mimeType": mime})}
    else:
        encoded = base64.b64encode(blob_reader(part["sha256"])).decode()
        if version != V1:
            return {"kind": "file", "file": _drop_none(
                {"bytes": encoded, "name": name, "mimeType": mime})}
        doc = {"raw": encoded}
    return _drop_none({**doc, "filename": name, "mediaType": mime})


def _drop_none(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if v is not None}


def build_message(parts: list[dict[str, Any]], version: str, context_id: str,
                  task_id: str | None) -> dict[str, Any]:
    """A user message of `parts` for the A2A protocol `version`, in `context_id` (and `task_id`
    when it continues one)."""
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "parts": parts,
                               "contextId": context_id}
    if version == V1:
        message["role"] = "ROLE_USER"
    else:
        message["role"] = "user"
        message["kind"] = "message"
    if task_id:
        message["taskId"] = task_id
    return message


def parse_part(raw: Any) -> WirePart | None:
    if not isinstance(raw, dict):
        return None
    if "text" in raw:  # first: every streamed token is one (a 0.3 text part too)
        return WirePart("text", text=str(raw["text"]))
    kind = raw.get("kind")
    if kind == "file" and isinstance(raw.get("file"), dict):  # 0.3
        f = raw["file"]
        return WirePart("file", raw=_b64(f.get("bytes")), uri=f.get("uri"), name=f.get("name"),
                        mime=f.get("mimeType"))
    name, mime = raw.get("filename"), raw.get("mediaType")
    if "data" in raw:
        return WirePart("data", data=raw["data"])
    if "raw" in raw:
        return WirePart("file", raw=_b64(raw["raw"]), name=name, mime=mime)
    if "url" in raw:
        return WirePart("file", uri=str(raw["url"]), name=name, mime=mime)
    return None


def _b64(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError) as exc:
        raise A2AProtocolError("file bytes are not valid base64") from exc


def _parts(raw: Any) -> list[WirePart]:
    parts = []
    for x in raw or ():
        part = parse_part(x)
        if part is not None:
            parts.append(part)
    return parts


def _status_parts(status: Any) -> list[WirePart]:
    if isinstance(status, dict) and isinstance(status.get("message"), dict):
        return _parts(status["message"].get("parts"))
    return []


def parse_result(doc: Any) -> A2AEvent:
    """One JSON-RPC response (a streamed frame or a whole reply) → an A2AEvent."""
    if not isinstance(doc, dict):
        raise A2AProtocolError("expected a JSON-RPC object")
    if "error" in doc:
        err = doc["error"] if isinstance(doc["error"], dict) else {}
        return A2AEvent("error", error_code=err.get("code"),
                        error_message=str(err.get("message", "A2A error")))
    result = doc.get("result")
    if not isinstance(result, dict):
        raise A2AProtocolError("JSON-RPC response without result")
    # 1.0: exactly one wrapper key. 0.3: a `kind` discriminator on the result itself.
    if "task" in result:
        return _task_event(result["task"])
    if "statusUpdate" in result:
        return _status_event(result["statusUpdate"])
    if "artifactUpdate" in result:
        return _artifact_event(result["artifactUpdate"])
    if "message" in result and isinstance(result["message"], dict):
        return _message_event(result["message"])
    kind = result.get("kind")
    if kind == "task" or ("status" in result and "id" in result and kind is None):
        return _task_event(result)
    if kind == "status-update":
        return _status_event(result)
    if kind == "artifact-update":
        return _artifact_event(result)
    if kind == "message":
        return _message_event(result)
    raise A2AProtocolError(f"unknown A2A result: {sorted(result)}")


def _task_event(task: dict[str, Any]) -> A2AEvent:
    status = task.get("status") or {}
    return A2AEvent("task", task_id=task.get("id"), context_id=task.get("contextId"),
                    state=normalize_state(status.get("state")), parts=_status_parts(status))


def _status_event(update: dict[str, Any]) -> A2AEvent:
    status = update.get("status") or {}
    return A2AEvent("status", task_id=update.get("taskId"), context_id=update.get("contextId"),
                    state=normalize_state(status.get("state")), parts=_status_parts(status))


def _artifact_event(update: dict[str, Any]) -> A2AEvent:
    artifact = update.get("artifact") or {}
    return A2AEvent("artifact", task_id=update.get("taskId"), context_id=update.get("contextId"),
                    artifact_id=artifact.get("artifactId"), parts=_parts(artifact.get("parts")),
                    append=bool(update.get("append")), last_chunk=bool(update.get("lastChunk")))


def _message_event(message: dict[str, Any]) -> A2AEvent:
    return A2AEvent("message", task_id=message.get("taskId"),
                    context_id=message.get("contextId"), parts=_parts(message.get("parts")))
