"""The few words the wire declaration adds to Python's types.

A field's type says most of its JSON Schema (`str | None` is a nullable string, `Literal`
an enum, `NotRequired` an optional key); these markers say the rest, inside `Annotated`:

    title: Annotated[str, Json(maxLength=500), Doc("shown in the session list")]

`Json` carries JSON Schema keywords the API enforces (lengths, counts, patterns, bounds),
`Doc` a description. `@closed` marks a request body that refuses unknown keys; every other
object stays open (the API only ever adds keys, clients ignore the ones they do not know).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
JsonSchema = dict[str, Any]
# Any JSON object, kept as the daemon got or made it (metadata, a data part's data...).
JsonObject = dict[str, Any]


class Json:
    """JSON Schema keywords merged into the field's schema."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords: JsonSchema = keywords

    def __repr__(self) -> str:
        return f"Json({self.keywords!r})"


@dataclass(frozen=True)
class Doc:
    """A field's description: a comment in the client's types, `description` in OpenAPI."""

    text: str


CLOSED_ATTRIBUTE = "__wire_closed__"


def closed(cls: type[T]) -> type[T]:
    """Unknown keys are refused (`400 unknown_field`): `additionalProperties: false`."""
    setattr(cls, CLOSED_ATTRIBUTE, True)
    return cls


def is_closed(cls: type) -> bool:
    return bool(getattr(cls, CLOSED_ATTRIBUTE, False))


# Shapes used in several places.
NONEMPTY = Json(minLength=1)
# Standard base64 with its padding, as the daemon decodes it (validate=True).
BASE64 = Json(pattern="^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
# A relative path inside the project: not absolute, no backslash or NUL (`..` segments and
# links out are refused too, which a pattern cannot say).
CHANGED_FILE = Json(minLength=1, pattern="^[^/\\\\\u0000][^\\\\\u0000]*$")
