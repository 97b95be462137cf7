"""The package's shape: one import root, rooms that import one way, no folder too full.

Read from the source with `ast`, so a forbidden import fails here even when no test happens
to execute the line. What each room may import is stated in its own `__init__` docstring
(`May import: ...`) and checked by `tests/support/rooms.py`, for every room and sub-room.
"""

from __future__ import annotations

import ast
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.support.rooms import check, find_rooms, imports, room_of

REPO = Path(__file__).resolve().parents[2]
ROOT = "llamon_playground"
# Where each room's source lives (pyproject.toml maps the top-level folders under the root).
ROOM_DIRS = {
    "common": REPO / ROOT / "common",
    "cli": REPO / ROOT / "cli",
    "harness": REPO / ROOT / "harness",
    "daemon": REPO / "daemon",
    "api": REPO / "api",
    "host_manager": REPO / "host_manager",
}
BARE_NAMES = {"daemon", "api", "host_manager", "common", "cli", "harness"}
MAX_MODULES_PER_FOLDER = 15
# The daemon's composition root: app.py, and host_setup.py, what the Host manager is told
# from the project (read at each start).
COMPOSITION_ROOT = ("app.py", "host_setup.py")
# What a Host may import from us: the capture channel and guard, the streaming task store,
# its own OpenTelemetry spans joining the run's trace.
HOST_HELPER = {f"{ROOT}.host_manager.host_side.capture",
               f"{ROOT}.host_manager.host_side.task_store",
               f"{ROOT}.host_manager.host_side.otel"}


def python_files() -> Iterator[Path]:
    for path in REPO.rglob("*.py"):
        rel = path.relative_to(REPO)
        if rel.parts[0] in {".venv", ".git", "build"} or "site-packages" in rel.parts:
            continue
        yield path


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_nothing_imports_a_top_level_folder_by_its_bare_name() -> None:
    offenders = [f"{path.relative_to(REPO)}:{line}: {name}"
                 for path in python_files() for line, name in imported_modules(path)
                 if name.split(".")[0] in BARE_NAMES]
    assert offenders == []


def test_no_relative_import_climbs_out_of_its_room() -> None:
    # A relative import is resolved against the import name, which differs from the folder
    # layout for the mapped rooms; absolute names are the one spelling.
    offenders = []
    for path in python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [f"{path.relative_to(REPO)}:{node.lineno}" for node in ast.walk(tree)
                      if isinstance(node, ast.ImportFrom) and node.level > 0]
    assert offenders == []


def test_every_room_keeps_to_what_its_init_says_it_may_import_and_no_rooms_form_a_ring(
        ) -> None:
    assert check(ROOT, ROOM_DIRS) == []


def test_every_daemon_room_is_stated_and_only_the_composition_root_wires_them() -> None:
    rooms = find_rooms(ROOM_DIRS)
    for room in ("daemon.a2a", "daemon.data", "daemon.store", "daemon.introspect",
                 "daemon.runs", "daemon.http", "host_manager.spawn", "host_manager.host_side"):
        assert rooms[room].may_import is not None, room
    wiring = [f"{path.name}:{line}: {name}"
              for path in sorted(ROOM_DIRS["daemon"].glob("*.py"))
              for line, name in imports(path, ROOT, rooms)
              if room_of(name, rooms) not in (None, "daemon") and name.startswith("daemon.")
              and path.name not in COMPOSITION_ROOT]
    assert wiring == []


def test_the_example_hosts_use_only_the_host_helper() -> None:
    for path in (REPO / "examples").rglob("*.py"):
        for line, name in imported_modules(path):
            if name.startswith(ROOT):
                assert name in HOST_HELPER, f"{path}:{line}: {name}"


def test_every_package_says_what_lives_there_and_no_folder_is_too_full() -> None:
    for directory in ROOM_DIRS.values():
        for init in [directory / "__init__.py", *directory.rglob("*/__init__.py")]:
            folder = init.parent
            assert ast.get_docstring(ast.parse(init.read_text())), f"{init} has no docstring"
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            assert len(modules) <= MAX_MODULES_PER_FOLDER, (folder, len(modules))


def test_no_scripts_folder_is_too_full() -> None:
    # The same rule for the tools beside the package (the benchmark's sections, its helpers).
    scripts = REPO / "scripts"
    folders = [scripts, *(p for p in scripts.rglob("*") if p.is_dir() and p.name != "__pycache__")]
    full = {str(f.relative_to(REPO)): n for f in folders
            if (n := len([p for p in f.glob("*.py") if p.name != "__init__.py"]))
            > MAX_MODULES_PER_FOLDER}
    assert full == {}


def test_each_mapped_folder_has_its_link_for_editors_and_static_tools() -> None:
    # docs/layout.md, "Editors and static tools": the links give the mapped folders their
    # import names in the work tree, so mypy and an editor follow every import.
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    mapped = pyproject["tool"]["setuptools"]["package-dir"]
    want = {name.split(".", 1)[1]: f"../{folder}" for name, folder in mapped.items()}
    links = {p.name: os.readlink(p) for p in (REPO / ROOT).iterdir() if p.is_symlink()}
    assert links == want
    for name in links:
        assert (REPO / ROOT / name / "__init__.py").is_file(), name
