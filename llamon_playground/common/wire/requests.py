"""What clients send: the run request, its parts, and the edit, session and export bodies."""

from typing import Annotated, Literal, NotRequired, TypedDict

from llamon_playground.common.wire.rules import (
    BASE64,
    CHANGED_FILE,
    NONEMPTY,
    Json,
    JsonObject,
    closed,
)
from llamon_playground.common.wire.words import (
    MAX_CHANGED_FILES,
    MAX_LABEL,
    MAX_NOTE,
    MAX_PARTS,
    MAX_REVISION,
    MAX_TITLE,
)


@closed
class TextInput(TypedDict):
    """A text part."""

    kind: Literal["text"]
    text: str


@closed
class DataInput(TypedDict):
    """A data part: a JSON object (a contract's schema id goes in `data.schema`)."""

    kind: Literal["data"]
    data: JsonObject


@closed
class FileBytesInput(TypedDict):
    """An inline file, stored in the blob store (at most 10 MiB decoded)."""

    kind: Literal["file"]
    bytes_base64: Annotated[str, BASE64]
    name: NotRequired[str]
    mime: NotRequired[str]


@closed
class FileUriInput(TypedDict):
    """A file by URI: never downloaded, kept as `availability: external`."""

    kind: Literal["file"]
    uri: Annotated[str, NONEMPTY]
    name: NotRequired[str]
    mime: NotRequired[str]


# One of the four: the variants a run request's part may take.
InputPart = TextInput | DataInput | FileBytesInput | FileUriInput
INPUT_PART_VARIANTS = (TextInput, DataInput, FileBytesInput, FileUriInput)

Parts = Annotated[list[InputPart], Json(minItems=1, maxItems=MAX_PARTS)]
ChangedFiles = Annotated[list[Annotated[str, CHANGED_FILE]], Json(maxItems=MAX_CHANGED_FILES)]
Revision = Annotated[str, Json(maxLength=MAX_REVISION)]
Label = Annotated[str, Json(maxLength=MAX_LABEL)]
Title = Annotated[str, Json(maxLength=MAX_TITLE)]


@closed
class RunRequest(TypedDict):
    """`POST /sessions/{id}/runs` and `POST /runs/{id}/resume`."""

    parts: Parts
    metadata: NotRequired[JsonObject | None]
    changed_files: NotRequired[ChangedFiles | None]
    revision: NotRequired[Revision | None]


@closed
class RerunRequest(TypedDict):
    """Each given field replaces the stored one (validated as for a new run); none: a clone."""

    parts: NotRequired[Parts]
    metadata: NotRequired[JsonObject | None]
    changed_files: NotRequired[ChangedFiles | None]
    revision: NotRequired[Revision | None]
    label: NotRequired[Label | None]


@closed
class SessionPatch(TypedDict):
    """`PATCH /sessions/{id}`: what is given replaces the stored value."""

    title: NotRequired[Title]
    metadata: NotRequired[JsonObject]


@closed
class RunPatch(TypedDict):
    """`PATCH /runs/{id}`: a name and a note, never the status or the output."""

    label: NotRequired[Label | None]
    note: NotRequired[Annotated[str, Json(maxLength=MAX_NOTE)] | None]


@closed
class SessionCreate(TypedDict):
    """`POST /sessions` (no body: an untitled session)."""

    title: NotRequired[Title]
    metadata: NotRequired[JsonObject | None]


@closed
class ExportRequest(TypedDict):
    """`POST /bundles/export`: `{}` exports all history."""

    session_ids: NotRequired[list[str] | None]
    run_ids: NotRequired[list[str] | None]


__all__ = ["TextInput", "DataInput", "FileBytesInput", "FileUriInput", "InputPart",
           "INPUT_PART_VARIANTS", "RunRequest", "RerunRequest", "SessionPatch", "RunPatch",
           "SessionCreate", "ExportRequest"]
