"""Every public function and method that another room calls says what it does.

A room (tests/support/rooms.py) is a package with its own `May import:` statement; a call
across rooms is the seam where a reader arrives without the room's context. This lists each
public function and public method in the product rooms that a module of another room imports
or reaches through an imported module or class, and fails on those without a docstring:

- a top-level function counts when another room imports it (`from ... import f`), or calls
  it as `module.f` on a module it imports;
- a class's public methods (properties included, dunders left out) count when another room
  imports the class, or names it as `module.Class`.

Read from the source with `ast`, so a seam no test executes is checked all the same.
Generated files are left out (they carry the wire declaration's words).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.rooms import Room, find_rooms, room_of

REPO = Path(__file__).resolve().parents[2]
ROOT = "llamon_playground"
ROOM_DIRS = {
    "common": REPO / ROOT / "common",
    "cli": REPO / ROOT / "cli",
    "harness": REPO / ROOT / "harness",
    "daemon": REPO / "daemon",
    "api": REPO / "api",
    "host_manager": REPO / "host_manager",
}


@dataclass
class Module:
    """One module's public definitions, what it re-exports, and what it imports."""

    name: str
    path: Path
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    reexports: dict[str, tuple[str, str]] = field(default_factory=dict)
    used: set[tuple[str, str]] = field(default_factory=set)  # (module, name) it reaches


def all_modules(rooms: dict[str, Room]) -> Iterator[tuple[str, Path]]:
    for room in rooms.values():
        for path in sorted(room.folder.glob("*.py")):
            if "GENERATED" in path.read_text(encoding="utf-8").split("\n", 1)[0]:
                continue
            yield (room.name if path.name == "__init__.py" else f"{room.name}.{path.stem}"), path


def read_module(name: str, path: Path, names: set[str]) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    module = Module(name, path)
    aliases: dict[str, str] = {}  # local name -> module it stands for
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and public(node.name):
            module.functions[node.name] = node
        elif isinstance(node, ast.ClassDef) and public(node.name):
            module.classes[node.name] = node
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.startswith(ROOT + "."):
            source = node.module.removeprefix(ROOT + ".")
            for alias in node.names:
                local = alias.asname or alias.name
                if f"{source}.{alias.name}" in names:
                    aliases[local] = f"{source}.{alias.name}"
                else:
                    module.used.add((source, alias.name))
                    if path.name == "__init__.py":
                        module.reexports[local] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ROOT + ".") and alias.asname:
                    aliases[alias.asname] = alias.name.removeprefix(ROOT + ".")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            module.used.add((aliases[node.value.id], node.attr))
    return module


def public(name: str) -> bool:
    return not name.startswith("_")


def resolve(modules: dict[str, Module], where: str, name: str) -> tuple[str, str] | None:
    """Where `where.name` is defined, following a package's re-exports."""
    for _ in range(5):
        module = modules.get(where)
        if module is None:
            return None
        if name in module.functions or name in module.classes:
            return where, name
        if name not in module.reexports:
            return None
        where, name = module.reexports[name]
    return None


def undocumented_seams(dirs: dict[str, Path]) -> list[str]:
    """`path:line: name` for each public function or method reached from another room
    without a docstring."""
    rooms = find_rooms(dirs)
    paths = dict(all_modules(rooms))
    modules = {name: read_module(name, path, set(paths)) for name, path in paths.items()}
    reached: set[tuple[str, str]] = set()
    for caller in modules.values():
        for where, name in caller.used:
            found = resolve(modules, where, name)
            if found and room_of(found[0], rooms) != room_of(caller.name, rooms):
                reached.add(found)
    missing = []
    for where, name in sorted(reached):
        module = modules[where]
        label = module.path.relative_to(REPO)
        if name in module.functions:
            node = module.functions[name]
            if ast.get_docstring(node) is None:
                missing.append(f"{label}:{node.lineno}: {name}")
            continue
        for member in module.classes[name].body:
            if (isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
                    and public(member.name) and ast.get_docstring(member) is None):
                missing.append(f"{label}:{member.lineno}: {name}.{member.name}")
    return missing


def test_functions_and_methods_other_rooms_call_have_docstrings() -> None:
    missing = undocumented_seams(ROOM_DIRS)
    assert missing == [], f"{len(missing)} without a docstring:\n" + "\n".join(missing)


def test_the_checker_flags_what_it_should(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    for room in ("one", "two"):
        (tmp_path / room).mkdir()
        (tmp_path / room / "__init__.py").write_text(f'"""Room {room}."""\n')
    (tmp_path / "one" / "parts.py").write_text(
        "def bare(): ...\n"
        "def told():\n"
        '    """Told."""\n'
        "def reached_by_module(): ...\n"
        "class Seam:\n"
        '    """The seam."""\n'
        "    def call(self): ...\n"
        "    def _own(self): ...\n"
        "    def __init__(self): ...\n")
    (tmp_path / "one" / "inside.py").write_text(
        "from llamon_playground.one.parts import reached_by_module\n")
    (tmp_path / "two" / "user.py").write_text(
        "from llamon_playground.one.parts import Seam, bare, told\n"
        "from llamon_playground.one import parts\n"
        "parts.reached_by_module\n")
    assert undocumented_seams({"one": tmp_path / "one", "two": tmp_path / "two"}) == [
        "one/parts.py:7: Seam.call", "one/parts.py:1: bare", "one/parts.py:4: reached_by_module"]
