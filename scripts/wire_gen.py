"""Writes the files generated from the wire declaration (`llamon_playground/common/wire/`).

- `llamon_playground/cli/api_types/`: the typed client's TypedDicts for the answers, split
  by topic (`runs.py`, `host.py`, `documents.py`) and re-exported by its `__init__` (the
  one module a caller imports answers from); `llamon_playground/cli/api_requests.py` for the
  request bodies and `api_suites.py` for the suites' bodies and answers;
- `api/page/wire.js`: the page's constants (the prefix, run and suite-run statuses, reasons,
  phase and Host states, event kinds, request limits).

The OpenAPI schemas are not written here: the daemon builds them from the declaration at
import. `scripts/gen_wire` runs this (`--check` only says whether the files are current);
`tests/unit/common/test_wire.py` fails when a checked-in file differs from what this
renders.
"""

from __future__ import annotations

import argparse
import enum
import functools
import json
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, NotRequired, get_args, get_origin

from llamon_playground.common.wire import COMPONENTS, EXTRAS, documents, history, host, requests
from llamon_playground.common.wire import search as search_wire
from llamon_playground.common.wire import suites, words
from llamon_playground.common.wire.json_schema import is_typeddict, is_union
from llamon_playground.common.wire.rules import Doc

REPO = Path(__file__).resolve().parents[1]
COMMAND = "scripts/gen_wire"
MAX_LINE = 100
CLIENT = "llamon_playground/cli"
# Each generated client file: the declaration's modules behind it, in the order their
# classes are written, and the first line of its docstring. The answers are split by topic
# so each file stays a readable size; `api_types/__init__.py` re-exports them (INDEX). The history
# upkeep answers (`upkeep`: GET /history, POST /history/trim) are the OpenAPI document's
# only; the client reads those two routes with `call`.
ANSWER_FILES: dict[str, tuple[tuple[types.ModuleType, ...], str]] = {
    f"{CLIENT}/api_types/runs.py": ((history,), "Sessions, runs and errors"),
    f"{CLIENT}/api_types/host.py": ((host,), "The Host, its logs and the daemon's health"),
    f"{CLIENT}/api_types/documents.py": ((documents, search_wire),
                                         "Compare, bundles, snippets, documents and search"),
}
CLIENT_FILES: dict[str, tuple[tuple[types.ModuleType, ...], str]] = {
    **ANSWER_FILES,
    f"{CLIENT}/api_requests.py": ((requests,), "The bodies the typed client sends."),
    f"{CLIENT}/api_suites.py": ((suites,), "Suites: bodies and answers."),  # both: a file
}
INDEX = f"{CLIENT}/api_types/__init__.py"
ANSWER_MODULES = tuple(m for modules, _ in ANSWER_FILES.values() for m in modules)


# -- the client's types -------------------------------------------------------------------

def declared_classes(modules: tuple[types.ModuleType, ...]) -> list[type]:
    """Every TypedDict these modules declare, in definition order, once."""
    seen: dict[type, None] = {}
    for module in modules:
        for value in vars(module).values():
            if is_typeddict(value) and value.__module__ == module.__name__:
                seen.setdefault(value)
    return list(seen)


def unions() -> dict[str, Any]:
    return {name: tp for name, tp in COMPONENTS.items() if is_union(tp)}


class PythonTypes:
    """Renders declared types as the client's annotations (markers become comments)."""

    def __init__(self, union_names: dict[Any, str]) -> None:
        self.union_names = union_names
        self.used: set[type] = set()  # the TypedDicts the annotations name

    def render(self, tp: Any, notes: list[str]) -> str:
        if tp in self.union_names:
            return self.union_names[tp]
        origin, args = get_origin(tp), get_args(tp)
        if origin is typing.Annotated:
            notes += [mark.text for mark in tp.__metadata__ if isinstance(mark, Doc)]
            return self.render(args[0], notes)
        if origin is NotRequired:
            return f"NotRequired[{self.render(args[0], notes)}]"
        if is_union(tp):
            return " | ".join(self.render(arg, notes) for arg in args)
        if origin is Literal:
            return f"Literal[{', '.join(json.dumps(arg) for arg in args)}]"
        if origin in (list, dict):
            return f"{origin.__name__}[{', '.join(self.render(arg, notes) for arg in args)}]"
        return self._plain(tp, notes)

    def _plain(self, tp: Any, notes: list[str]) -> str:
        if tp is Any:
            return "Any"
        if tp is None or tp is type(None):
            return "None"
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            notes.insert(0, f"a {tp.__name__} value")
            return "str"  # JSON carries the value; the enum is for comparing it
        if isinstance(tp, type):
            if is_typeddict(tp):
                self.used.add(tp)
            return tp.__name__
        raise TypeError(f"cannot write {tp!r} as a client type")


def _docstring(cls: type, indent: str = "    ") -> list[str]:
    text = cls.__doc__
    if not text:
        return []
    return [f'{indent}"""{" ".join(text.split())}"""', ""]


def render_class(cls: type, writer: PythonTypes) -> list[str]:
    """A class with every field written out (a subclass's inherited ones too)."""
    lines = [f"class {cls.__name__}(TypedDict):", *_docstring(cls)]
    for name, tp in typing.get_type_hints(cls, include_extras=True).items():
        notes: list[str] = []
        line = f"    {name}: {writer.render(tp, notes)}"
        comment = "  # " + "; ".join(notes) if notes else ""
        if len(line + comment) > MAX_LINE:
            lines += textwrap.wrap(comment.strip(), MAX_LINE, initial_indent="    ",
                                   subsequent_indent="    # ")
            comment = ""
        lines.append(line + comment)
    return lines


def _names_block(names: list[str]) -> list[str]:
    body = textwrap.wrap(", ".join(f'"{name}"' for name in sorted(names)) + ",", MAX_LINE - 4)
    return ["__all__ = [", *(f"    {line}" for line in body), "]"]


def _module_name(rel: str) -> str:
    return rel.removesuffix(".py").replace("/", ".")


def owner(cls: type) -> str:
    """The generated client module that declares `cls`."""
    for rel, (modules, _) in CLIENT_FILES.items():
        if cls in declared_classes(modules):
            return _module_name(rel)
    raise TypeError(f"{cls.__name__} is in no generated client file")


def _header(what: str) -> list[str]:
    opening = (f"{what} GENERATED by `{COMMAND}` from the wire declaration in "
               f"`llamon_playground/common/wire/`: edit that, then run `{COMMAND}`; never "
               "edit this file (a unit test fails when it is stale).")
    return [
        *textwrap.wrap('"""' + opening, 92),
        "",
        "They stay plain JSON objects, typed with TypedDicts so a caller's type checker knows",
        "the fields; fields the daemon adds later pass through. Enum-valued fields are `str`",
        "(the comment names the enum).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]


def _import_block(module: str, names: list[str]) -> list[str]:
    if len(f"from {module} import {', '.join(names)}") <= MAX_LINE:
        return [f"from {module} import {', '.join(names)}"]
    return [f"from {module} import (", *(f"    {name}," for name in names), ")"]


def render_python(modules: tuple[types.ModuleType, ...], what: str) -> str:
    """One client file: the modules' TypedDicts, importing those declared in another file."""
    classes = declared_classes(modules)
    union_names = {tp: name for name, tp in COMPONENTS.items()
                   if is_union(tp) and set(get_args(tp)) <= set(classes)}
    writer = PythonTypes(union_names)
    body: list[str] = []
    written: set[type] = set()
    for cls in classes:
        body += ["", *render_class(cls, writer), ""]
        written.add(cls)
        for tp, name in union_names.items():  # a union right after its last variant
            if cls in get_args(tp) and all(v in written for v in get_args(tp)):
                variants = " | ".join(v.__name__ for v in get_args(tp))
                body += ["", f"{name} = {variants}", ""]
    elsewhere: dict[str, list[str]] = {}
    for cls in writer.used - set(classes):
        elsewhere.setdefault(owner(cls), []).append(cls.__name__)
    lines = [*_header(what), "from typing import Any, Literal, NotRequired, TypedDict", ""]
    for module in sorted(elsewhere):
        lines += _import_block(module, sorted(elsewhere[module]))
    if elsewhere:
        lines.append("")
    lines += [*_names_block([cls.__name__ for cls in classes] + list(union_names.values())),
              "", *body]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_client_file(rel: str) -> str:
    modules, what = CLIENT_FILES[rel]
    return render_python(modules, f"{what.rstrip('.')}, as the typed client returns them."
                         if rel in ANSWER_FILES else what)


def render_index() -> str:
    """`api_types/__init__.py`: every answer type, from the files they are split into."""
    assert set(EXTRAS) <= set(declared_classes(ANSWER_MODULES))
    lines = [
        '"""The API\'s answers as the typed client returns them: every answer type, re-exported',
        "from the modules they are split into by topic (`runs`, `host`, `documents`).",
        f"GENERATED by `{COMMAND}` from the wire declaration in",
        f"`llamon_playground/common/wire/`: edit that, then run `{COMMAND}`; never edit this",
        "package (a unit test fails when a file is stale).",
        "",
        "May import: nothing",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    names: list[str] = []
    for rel, (modules, _) in sorted(ANSWER_FILES.items()):
        classes = declared_classes(modules)
        own = [cls.__name__ for cls in classes] + [
            name for name, tp in COMPONENTS.items()
            if is_union(tp) and set(get_args(tp)) <= set(classes)]
        lines += _import_block(_module_name(rel), sorted(own))
        names += own
    lines += ["", *_names_block(names)]
    return "\n".join(lines) + "\n"


# -- the page's constants -----------------------------------------------------------------

def _js_list(values: list[str], indent: int) -> str:
    out, line = [], ""
    for value in values:
        item = f"'{value}', "
        if len(line) + len(item) + indent > 96:
            out.append(line.rstrip())
            line = ""
        line += item
    out.append(line.rstrip().rstrip(","))
    return ("\n" + " " * indent).join(out)


def _js_object(name: str, comment: str, members: dict[str, Any]) -> list[str]:
    """`export const NAME = Object.freeze({ KEY: value, ... });`, one member a line."""
    return [f"// {comment[0].upper()}{comment[1:]}.", f"export const {name} = Object.freeze({{",
            *(f"  {key}: {json.dumps(value).replace(chr(34), chr(39))}," for key, value
              in members.items()),
            "});"]


def _js_set(name: str, comment: str, items: list[str]) -> list[str]:
    opener = f"export const {name} = new Set(["
    return [f"// {comment[0].upper()}{comment[1:]}.", f"{opener}{_js_list(items, len(opener))}]);"]


def _named(members: Any) -> dict[str, Any]:
    """An enum's members by name (or a Literal's values, named by their upper case)."""
    if isinstance(members, type) and issubclass(members, enum.Enum):
        return {member.name: member.value for member in members}
    return {str(value).upper(): value for value in get_args(members)}


def render_page_constants() -> str:
    """`api/page/wire.js`: every word and limit the page spells, as the wire declares it."""
    statuses = _named(words.RunStatus)
    suite_statuses = _named(suites.SuiteRunStatus)
    limits = {name: getattr(words, name) for name in words.__all__ if name.startswith("MAX_")}
    limits |= {"MAX_SUITE_NAME": suites.MAX_SUITE_NAME, "MAX_SUITE_CASES": suites.MAX_SUITE_CASES}
    lines = [f"// GENERATED by `{COMMAND}` from llamon_playground/common/wire/: edit that, then",
             f"// run `{COMMAND}`; never edit this file (a unit test fails when it is stale).",
             "",
             f"export const API = '{words.API_PREFIX}';",
             f"export const BUNDLE_FORMAT = '{words.BUNDLE_FORMAT}';",
             *_js_object("STATUS", "every run status (a closed set)", statuses),
             *_js_set("RUN_STATUSES", "the same, as a set", list(statuses.values())),
             *_js_set("ACTIVE", "a run still going",
                      [s for s in statuses.values() if s in words.ACTIVE_STATUSES]),
             *_js_set("TERMINAL", "a run's last status (input_required too: a resume is a new "
                      "run)", [s for s in statuses.values() if s in words.TERMINAL_STATUSES]),
             *_js_set("SUCCESS", "a last status that counts as success",
                      [s for s in statuses.values() if s in words.SUCCESS_STATUSES]),
             *_js_object("REASON", "the reasons the daemon sends today (an open set)",
                         _named(words.RunReason)),
             *_js_object("PHASE", "a run.phase event's states", _named(words.PhaseState)),
             *_js_object("HOST_STATE", "the Host's states", _named(words.HostStateName)),
             *_js_object("RUN_EVENT", "a run's SSE event names (an open set)",
                         _named(words.RunEventKind)),
             *_js_object("PROJECT_EVENT", "the project-wide SSE event names (an open set)",
                         _named(words.ProjectEventKind)),
             *_js_object("SUITE_RUN_STATUS", "a suite run's statuses", suite_statuses),
             *_js_set("SUITE_RUN_OVER", "a suite run's last statuses",
                      [s for s in suite_statuses.values() if s != "running"]),
             *_js_object("LIMITS", "the sizes the daemon accepts in request bodies", limits)]
    return "\n".join(lines) + "\n"


# -- the command --------------------------------------------------------------------------

TARGETS: dict[str, Callable[[], str]] = {
    **{rel: functools.partial(render_client_file, rel) for rel in CLIENT_FILES},
    INDEX: render_index,
    "api/page/wire.js": render_page_constants,
}


def stale(root: Path = REPO) -> list[str]:
    """The generated files whose checked-in text differs from what the declaration gives."""
    return [rel for rel, render in TARGETS.items()
            if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != render()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for rel in old:
            print(f"stale: {rel} (run {COMMAND})", file=sys.stderr)
        return 1 if old else 0
    for rel, render in TARGETS.items():
        (REPO / rel).write_text(render(), encoding="utf-8")
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
