"""Limits, reasons, statuses and routes are declared once (common/wire/): a change there
changes the daemon, the OpenAPI document, the typed client and the page together, and
nothing else spells them."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest

from llamon_playground.common.wire import routes, suites, words
from llamon_playground.daemon.http import openapi
from scripts import wire_gen

REPO = wire_gen.REPO

# Run in a fresh interpreter: the declaration's `words` module is loaded with MAX_LABEL
# changed before anything reads it, then the daemon's parser, the OpenAPI document, the
# client's type and the page's constants are asked what a label may be.
CHANGED_LIMIT = r"""
import importlib.util, json, pathlib, sys, typing
import llamon_playground.common
name = "llamon_playground.common.wire.words"  # found by path: importing it would load it
path = pathlib.Path(llamon_playground.common.__path__[0], "wire", "words.py")
source = path.read_text().replace("MAX_LABEL = 200", "MAX_LABEL = 7")
assert "MAX_LABEL = 7" in source
module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
sys.modules[name] = module
exec(compile(source, str(path), "exec"), module.__dict__)

from llamon_playground.cli.api_requests import RunPatch
from llamon_playground.daemon.data.edits import parse_run_fields
from llamon_playground.daemon.errors import BadRequest
from llamon_playground.daemon.http.openapi import build_document
from scripts import wire_gen

try:
    parse_run_fields({"label": "x" * 8})
    refused = None
except BadRequest as exc:
    refused = exc.detail()
def marks(tp):
    yield from getattr(tp, "__metadata__", ())
    for arg in typing.get_args(tp):
        yield from marks(arg)

label = typing.get_type_hints(RunPatch, include_extras=True)["label"]
client = [getattr(mark, "keywords", None) for mark in marks(label)]
print(json.dumps({
    "daemon": refused,
    "openapi": build_document()["components"]["schemas"]["RunPatch"]["properties"]["label"],
    "client": client,
    "page": "MAX_LABEL: 7," in wire_gen.render_page_constants(),
}))
"""


def test_a_limit_changed_in_the_declaration_changes_every_reader() -> None:
    done = subprocess.run([sys.executable, "-c", CHANGED_LIMIT], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    seen = json.loads(done.stdout)
    assert seen["daemon"]["limit"] == 7 and seen["daemon"]["error"] == "invalid_label"
    assert {"type": "string", "maxLength": 7} in seen["openapi"]["anyOf"]
    assert {"maxLength": 7} in seen["client"]
    assert seen["page"] is True


def test_a_route_declared_without_its_words_in_the_document_fails() -> None:
    ops = tuple(op for op in openapi.OPERATIONS if op.handler != "suites.events")
    with pytest.raises(LookupError, match=r"suites\.events"):
        openapi._documented((*ops, *openapi.FRONT_OPERATIONS))


def test_streams_are_the_declared_ones_everywhere() -> None:
    paths = openapi.build_document()["paths"]
    always = {r.full_path for r in routes.ROUTES if r.stream is True}
    documented = {path for path, ops in paths.items()
                  if "text/event-stream" in ops.get("get", {}).get("responses", {}).get(
                      "200", {}).get("content", {})}
    assert documented == always
    assert set(routes.stream_paths()) == always | {
        r.full_path for r in routes.ROUTES if isinstance(r.stream, str)}
    assert routes.large_bodies()[("POST", "/bundles/import")] is routes.Body.IMPORT


# -- nothing else spells them -------------------------------------------------------------

WORDS = ({m.value for kind in (words.RunReason, words.RunEventKind, words.ProjectEventKind)
          for m in kind} | {words.BUNDLE_FORMAT, words.API_PREFIX})
LIMIT_NAMES = ({n for n in words.__all__ if n.startswith("MAX_")}
               | {"MAX_SUITE_NAME", "MAX_SUITE_CASES"})
ROOMS = ("daemon", "api", "host_manager", "llamon_playground/cli", "llamon_playground/common")
DECLARATION = ("llamon_playground/common/wire/", "llamon_playground/common/contract.py")


def redeclared(source: str) -> list[str]:
    """A module's or class's own constant that spells a declared word or limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Module, ast.ClassDef)):
            continue
        for statement in node.body:
            if not (isinstance(statement, ast.Assign)
                    and isinstance(statement.value, ast.Constant)):
                continue
            value = statement.value.value
            for target in statement.targets:
                if isinstance(target, ast.Name) and target.id.isupper() and (
                        (isinstance(value, str) and value in WORDS)
                        or target.id in LIMIT_NAMES):
                    found.append(f"{target.id} = {value!r}")
    return found


def test_the_scan_sees_a_copy() -> None:
    assert redeclared('class Reason:\n    HOST_EXITED = "host_exited"\n') == [
        "HOST_EXITED = 'host_exited'"]
    assert redeclared("MAX_LABEL = 200\n") == ["MAX_LABEL = 200"]
    assert redeclared("from x import MAX_LABEL\nLIMIT = MAX_LABEL\n") == []


def test_no_python_module_redeclares_a_wire_word_or_limit() -> None:
    copies = {}
    for room in ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not rel.startswith(DECLARATION) and (found := redeclared(path.read_text())):
                copies[rel] = found
    assert copies == {}, "import these from llamon_playground/common/wire/ instead"


# The page compares statuses, reasons and states, and listens for event names: always
# through wire.js's constants, never a quoted word of its own.
PAGE_WORDS = ({m.value for m in words.RunStatus} | {m.value for m in words.RunReason}
              | set(wire_gen._named(suites.SuiteRunStatus).values()))
EVENT_WORDS = {m.value for kind in (words.RunEventKind, words.ProjectEventKind) for m in kind}
PAGE_SPELLINGS = (
    re.compile(r"\.(?:status|reason)\s*[!=]==?\s*'([a-z_.]+)'"),
    re.compile(r"(?:\bon|addEventListener)\(\s*'([a-z_.]+)'"),
    re.compile(r"new Set\(\[\s*'([a-z_.]+)'"),
    re.compile(r"maxlength:\s*(\d+)"),
)


def page_literals(source: str) -> list[str]:
    """Quoted wire words the page's code compares or listens with, and limits it spells."""
    found = []
    for pattern in PAGE_SPELLINGS:
        for match in pattern.finditer(source):
            word = match.group(1)
            if word in PAGE_WORDS or word in EVENT_WORDS or word.isdigit():
                found.append(match.group(0))
    return found


def test_the_page_scan_sees_a_literal() -> None:
    assert page_literals("if (run.status === 'completed') x();") == [".status === 'completed'"]
    assert page_literals("on('run.status', f); el('input', { maxlength: 200 })") == [
        "on('run.status'", "maxlength: 200"]
    assert page_literals("if (run.status === STATUS.COMPLETED) x();") == []


def test_the_page_spells_no_wire_word_of_its_own() -> None:
    page = REPO / "api/page"
    spelled = {path.name: found for path in sorted(page.glob("*.js"))
               if path.name != "wire.js" and (found := page_literals(path.read_text()))}
    assert spelled == {}, "use the constants of api/page/wire.js"


def test_wire_js_is_what_the_page_imports_words_from() -> None:
    # Every constant wire.js exports is used by some page module (none generated for nothing).
    text = (REPO / "api/page/wire.js").read_text()
    exported = re.findall(r"^export const (\w+)", text, re.MULTILINE)
    pages = " ".join(p.read_text() for p in (REPO / "api/page").glob("*.js")
                     if p.name != "wire.js")
    unused = [name for name in exported if not re.search(rf"\b{name}\b", pages)]
    assert unused == []
