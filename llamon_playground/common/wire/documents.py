"""The data, introspection and front answers: compare, bundles, composer, source, snippets."""

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from llamon_playground.common.wire.rules import BASE64, Doc, Json, JsonObject, closed


class TextCut(TypedDict):
    """Both texts' full lengths, and how much of each the answer (and the diff) holds."""

    left_chars: int
    right_chars: int
    kept_chars: int


class TextDiff(TypedDict):
    """The outputs' text side by side and a unified diff of the changed region."""

    left: str
    right: str
    same: bool
    unified_diff: str
    truncated: Annotated[bool, Doc("the texts or the diff stop early; `note` says where")]
    note: NotRequired[str]
    cut: NotRequired[Annotated[TextCut, Doc(
        "a side is over 1,000,000 characters: each is given and diffed up to there")]]


class Compare(TypedDict):
    """`GET /compare`: two runs side by side; the verdict is the user's, never automatic."""

    left: JsonObject
    right: JsonObject
    duration_delta_ms: NotRequired[float | None]
    same_code: NotRequired[bool | None]
    text: NotRequired[TextDiff]
    data: NotRequired[JsonObject]
    files: NotRequired[list[JsonObject]]
    scores: NotRequired[Any]
    input: NotRequired[JsonObject]
    automatic_verdict: None


@closed
class BundleBlob(TypedDict):
    """A file of the bundle, keyed by its sha256: the bytes and their size, checked at import."""

    bytes_base64: Annotated[str, BASE64]
    size: Annotated[int, Json(minimum=0)]


class Bundle(TypedDict):
    """A bundle of sessions, runs, events and the files they use."""

    format: Literal["llamon.playground.bundle/1"]  # words.BUNDLE_FORMAT
    exported_at: NotRequired[str | None]
    privacy_warning: NotRequired[str | None]
    sessions: NotRequired[list[JsonObject]]
    runs: NotRequired[list[JsonObject]]
    events: NotRequired[list[JsonObject]]
    blobs: NotRequired[dict[str, BundleBlob]]
    suites: NotRequired[list[JsonObject]]


class BundleImported(TypedDict):
    """The new ids, by the bundle's ids."""

    sessions: JsonObject
    runs: JsonObject
    suites: NotRequired[JsonObject]


class ComposerSchema(TypedDict):
    """`GET /composer-schema`: the input composer of the project."""

    kind: NotRequired[str | None]
    mode: Literal["data", "text"]
    host_ready: NotRequired[bool]
    tabs: list[JsonObject]
    text: NotRequired[JsonObject | None]
    diagnostics: NotRequired[list[JsonObject]]


class SourceTarget(TypedDict):
    """Where a Flow node's function is."""

    node_id: str
    file: str
    function: NotRequired[str | None]
    qualname: NotRequired[str | None]
    line: int
    column: int
    end_line: NotRequired[int]
    end_column: NotRequired[int]


class Snippets(TypedDict):
    """Copy curl / Copy Python: the run's A2A request, to send to the Host directly."""

    run_id: str
    a2a_version: str
    host_url: str | None
    messages: Annotated[int, Doc(
        "how many messages the snippets send: 1, or a resumed run's whole chain (its first "
        "message starts a fresh task, each answer continues it); 0 when the chain's start is "
        "no longer in history and the snippets only say so")]
    curl: str
    python: str
    host_ready: bool


class Landing(TypedDict):
    """The front's `/` for a client that is not a browser."""

    service: str
    api: str
    openapi: str
    health: NotRequired[str]
    page: NotRequired[str]


class OpenApiDocument(TypedDict):
    """`GET /openapi.json`: the API described in OpenAPI 3.1 (built from this declaration)."""

    openapi: str
    paths: JsonObject

