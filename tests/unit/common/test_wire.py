"""The one wire declaration: the files generated from it are current, its words are the
daemon's, and its JSON Schema writer says what the markers mean."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, NotRequired, TypedDict, get_args

import pytest

from llamon_playground.common.wire import COMPONENTS
from llamon_playground.common.wire.json_schema import component_schemas
from llamon_playground.common.wire.rules import Doc, Json, closed
from llamon_playground.daemon.http.openapi import build_document
from scripts import wire_gen


@pytest.mark.parametrize("rel", sorted(wire_gen.TARGETS))
def test_generated_file_is_current(rel: str) -> None:
    on_disk = (wire_gen.REPO / rel).read_text(encoding="utf-8")
    assert on_disk == wire_gen.TARGETS[rel](), f"{rel} is stale: run scripts/gen_wire"


def test_a_stale_file_is_reported(tmp_path: Path) -> None:
    for rel, render in wire_gen.TARGETS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(render(), encoding="utf-8")
    assert wire_gen.stale(tmp_path) == []
    client_types = tmp_path / "llamon_playground/cli/api_requests.py"
    client_types.write_text(client_types.read_text().replace("    TextInput,\n", ""))
    assert wire_gen.stale(tmp_path) == ["llamon_playground/cli/api_requests.py"]


def test_the_client_s_types_are_the_declaration_s() -> None:
    """The typed client names every declared answer and body, and each name is the
    declaration's own type (imported, not a generated copy that could drift)."""
    from llamon_playground.cli import api_requests, api_suites, api_types
    from llamon_playground.common.wire import history, requests, suites

    answers = {cls.__name__ for cls in wire_gen.declared_classes(wire_gen.ANSWER_MODULES)}
    assert answers <= set(api_types.__all__)
    assert api_types.Run is history.Run and api_requests.InputPart is requests.InputPart
    assert api_suites.SuiteRun is suites.SuiteRun
    for module in (api_types, api_requests, api_suites):
        for name in module.__all__:
            value = getattr(module, name)
            kinds = get_args(value) or (value,)  # a union: each of its variants
            assert all(kind.__module__.startswith("llamon_playground.common.wire.")
                       for kind in kinds), f"{module.__name__}.{name} is a copy"


def test_the_served_document_uses_the_declaration() -> None:
    assert build_document()["components"]["schemas"] == component_schemas(COMPONENTS)


class _Inner(TypedDict):
    n: int


@closed
class _Body(TypedDict):
    """A body."""

    name: Annotated[str, Json(maxLength=5), Doc("its name")]
    note: NotRequired[str | None]
    mode: Literal["a", "b"]
    inner: _Inner
    named: _Inner | None


def test_markers_become_json_schema() -> None:
    schemas = component_schemas({"Body": _Body, "Named": _Inner})
    assert schemas["Body"] == {
        "type": "object", "description": "A body.", "additionalProperties": False,
        "required": ["name", "mode", "inner", "named"],
        "properties": {
            "name": {"type": "string", "maxLength": 5, "description": "its name"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "mode": {"enum": ["a", "b"]},
            "inner": {"$ref": "#/components/schemas/Named"},
            "named": {"anyOf": [{"$ref": "#/components/schemas/Named"}, {"type": "null"}]}}}
    # Not named: written inline, and open (no additionalProperties).
    assert component_schemas({"Body": _Body})["Body"]["properties"]["inner"] == {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_only_optional_unions_are_written_inline() -> None:
    class Wide(TypedDict):
        either: int | str

    with pytest.raises(TypeError, match="unions"):
        component_schemas({"Wide": Wide})
