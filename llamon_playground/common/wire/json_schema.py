"""The wire declaration as JSON Schema (the OpenAPI 3.1 dialect): what `openapi.json` serves.

A TypedDict named in `COMPONENTS` becomes `#/components/schemas/<name>` wherever a field
uses it; any other TypedDict is written inline. Keys not in `__required_keys__` are
optional; `@closed` bodies refuse unknown keys; every other object stays open.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

from llamon_playground.common.wire.rules import Doc, Json, JsonSchema, is_closed

NULL: JsonSchema = {"type": "null"}
SCALARS: dict[Any, JsonSchema] = {str: {"type": "string"}, int: {"type": "integer"},
                                  float: {"type": "number"}, bool: {"type": "boolean"}}


def ref(name: str) -> JsonSchema:
    """A JSON Schema reference to the component schema `name`."""
    return {"$ref": f"#/components/schemas/{name}"}


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def fields(cls: type) -> dict[str, Any]:
    """A TypedDict's fields with their markers, `NotRequired` taken off."""
    return {name: strip_required(tp)
            for name, tp in typing.get_type_hints(cls, include_extras=True).items()}


def required_keys(cls: type) -> set[str]:
    """Read from the resolved hints, not `__required_keys__`: Python 3.11 takes a string
    annotation (a module with `from __future__ import annotations`) for a required key."""
    total = getattr(cls, "__total__", True)
    return {name for name, tp in typing.get_type_hints(cls, include_extras=True).items()
            if get_origin(tp) is Required or (total and get_origin(tp) is not NotRequired)}


def strip_required(tp: Any) -> Any:
    return get_args(tp)[0] if get_origin(tp) in (NotRequired, Required) else tp


def doc_of(cls: type) -> str | None:
    text = cls.__doc__
    return " ".join(text.split()) if text else None


class SchemaWriter:
    """Writes schemas, referring to the named components instead of repeating them."""

    def __init__(self, names: Mapping[Any, str]) -> None:
        self.names = names

    def component(self, tp: Any) -> JsonSchema:
        return self.one_of(get_args(tp)) if is_union(tp) else self.object(tp)

    def object(self, cls: type) -> JsonSchema:
        props = {name: self.type(tp) for name, tp in fields(cls).items()}
        schema: JsonSchema = {"type": "object", "properties": props}
        required = [name for name in props if name in required_keys(cls)]
        if required:
            schema["required"] = required
        if is_closed(cls):
            schema["additionalProperties"] = False
        description = doc_of(cls)
        if description:
            schema["description"] = description
        return schema

    def one_of(self, variants: tuple[type, ...]) -> JsonSchema:
        """A tagged union: each variant inline, `kind` required in all."""
        common = set.intersection(*(required_keys(v) for v in variants))
        return {"type": "object", "required": sorted(common),
                "oneOf": [self.object(v) for v in variants]}

    def type(self, tp: Any) -> JsonSchema:
        name = self.names.get(tp)
        if name is not None:
            return ref(name)
        origin, args = get_origin(tp), get_args(tp)
        if origin is typing.Annotated:
            schema = dict(self.type(args[0]))
            for mark in tp.__metadata__:
                if isinstance(mark, Json):
                    schema.update(mark.keywords)
                elif isinstance(mark, Doc):
                    schema["description"] = mark.text
            return schema
        if is_union(tp):
            present = [a for a in args if a is not type(None)]
            if len(present) != len(args) and len(present) == 1:
                return {"anyOf": [self.type(present[0]), NULL]}
            raise TypeError(f"only `X | None` unions are declared inline: {tp}")
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin is list:
            return {"type": "array", "items": self.type(args[0])}
        if origin is dict:
            if args[1] is Any:
                return {"type": "object"}
            return {"type": "object", "additionalProperties": self.type(args[1])}
        return self._plain(tp)

    def _plain(self, tp: Any) -> JsonSchema:
        if tp is Any:
            return {}
        if tp is None or tp is type(None):
            return dict(NULL)
        if tp in SCALARS:
            return dict(SCALARS[tp])
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return {"enum": [member.value for member in tp]}
        if is_typeddict(tp):
            return self.object(tp)
        raise TypeError(f"no JSON Schema for {tp!r}")


def is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def component_schemas(components: Mapping[str, Any]) -> dict[str, JsonSchema]:
    """`components.schemas`: each named shape written once, in the declaration's order."""
    writer = SchemaWriter({tp: name for name, tp in components.items()})
    return {name: writer.component(tp) for name, tp in components.items()}
