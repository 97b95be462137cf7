"""Room rules: every package states what it may import, and the source keeps to it.

A room is a package (a folder with `__init__.py`). Its `__init__` docstring has one
statement, read here::

    May import: common, daemon.errors, daemon.data

(names under the import root; a room, or a single module of one; `nothing` for none; a
statement ending in a comma goes on to the next line). A module may import its own room's
modules freely; anything else it imports must be named by its room's statement, a
sub-room's included. A sub-room may name only what its parent room may import (or the
parent's own modules and sub-rooms). And the rooms form no cycle: module A's room importing
B's, B's importing A's, however long the ring.

Read from the source with `ast`, so a forbidden import fails even when no test happens to
execute the line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STATEMENT = "May import:"


@dataclass(frozen=True)
class Room:
    """A package under the import root, with what its docstring says it may import."""

    name: str  # dotted, under the import root: "daemon.store"
    folder: Path
    may_import: frozenset[str] | None  # None: the docstring states nothing


def read_statement(init: Path) -> frozenset[str] | None:
    """The names a package's docstring allows, or None when it has no statement."""
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    lines = iter(doc.splitlines())
    for line in lines:
        if line.strip().startswith(STATEMENT):
            text = line.strip()[len(STATEMENT):].strip()
            while text.endswith(","):
                text += " " + next(lines, "").strip()
            names = {n.strip().rstrip(".") for n in text.split(",") if n.strip()}
            return frozenset() if names == {"nothing"} else frozenset(names)
    return None


def find_rooms(top: dict[str, Path]) -> dict[str, Room]:
    """Every package under the top-level room folders (`top` maps a name to its folder)."""
    rooms = {}
    for name, folder in top.items():
        for init in sorted(folder.rglob("__init__.py")):
            rel = init.parent.relative_to(folder).parts
            dotted = ".".join((name, *rel))
            rooms[dotted] = Room(dotted, init.parent, read_statement(init))
    return rooms


def modules(room: Room, rooms: dict[str, Room]) -> Iterator[tuple[str, Path]]:
    """The room's own modules (not its sub-rooms'), by dotted name."""
    for path in sorted(room.folder.glob("*.py")):
        yield (room.name if path.name == "__init__.py"
               else f"{room.name}.{path.stem}"), path


def known(name: str, rooms: dict[str, Room]) -> bool:
    """Whether `name` is a room or a module of one."""
    if name in rooms:
        return True
    parent, _, leaf = name.rpartition(".")
    return parent in rooms and (rooms[parent].folder / f"{leaf}.py").is_file()


def imports(path: Path, root: str, rooms: dict[str, Room]) -> Iterator[tuple[int, str]]:
    """(line, dotted name under the root) of each absolute import of the root's modules; a
    `from package import module` names the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    prefix = root + "."
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            base = node.module.removeprefix(prefix)
            if node.module.startswith(prefix):
                names = [f"{node.module}.{a.name}" if known(f"{base}.{a.name}", rooms)
                         else node.module for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith(prefix):
                yield node.lineno, name.removeprefix(prefix)


def room_of(name: str, rooms: dict[str, Room]) -> str | None:
    """The deepest room holding `name` (a room is its own)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in rooms:
            return candidate
    return None


def inside(name: str, room: str) -> bool:
    return name == room or name.startswith(room + ".")


def allowed(name: str, entries: frozenset[str]) -> bool:
    return any(inside(name, entry) for entry in entries)


def node_of(name: str, rooms: dict[str, Room]) -> str | None:
    """What a cycle is counted between: a room; or, in a room that has sub-rooms, each of
    its own modules apart (`daemon.app` wires the sub-rooms that import `daemon.errors`)."""
    room = room_of(name, rooms)
    if room is None:
        return None
    has_subrooms = any(other.startswith(room + ".") for other in rooms)
    return name if has_subrooms and known(name, rooms) else room


def check(root: str, top: dict[str, Path]) -> list[str]:
    """Every breach of the rooms' statements, and every cycle between rooms, as text."""
    rooms = find_rooms(top)
    problems = []
    edges: dict[str, set[str]] = {}
    for room in rooms.values():
        if room.may_import is None:
            problems.append(f"{room.name}: its __init__ docstring states no `{STATEMENT}`")
            continue
        problems += [f"{room.name}: `{STATEMENT}` names {entry}, which does not exist"
                     for entry in sorted(room.may_import) if not known(entry, rooms)]
        parent = room.name.rpartition(".")[0]
        if parent in rooms and rooms[parent].may_import is not None:
            wider = rooms[parent].may_import
            problems += [f"{room.name}: may import {entry}, which its parent {parent} may not"
                         for entry in sorted(room.may_import)
                         if not inside(entry, parent) and not allowed(entry, wider)]
        for module, path in modules(room, rooms):
            for line, name in imports(path, root, rooms):
                target = room_of(name, rooms)
                if target is None:
                    continue  # the bare import root (its version)
                if target != room.name and not allowed(name, room.may_import):
                    problems.append(f"{path}:{line}: {room.name} may not import {name}")
                src, dst = node_of(module, rooms), node_of(name, rooms)
                if src is not None and dst is not None and src != dst:
                    edges.setdefault(src, set()).add(dst)
    problems += [f"cycle between rooms: {', '.join(ring)}" for ring in cycles(edges)]
    return problems


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The members of each ring: every strongly connected group of more than one node
    (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found
