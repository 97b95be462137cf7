"""Every public class in the product rooms says what it is for, and so does every public method
of the seams: the classes other rooms call through, where a reader lands first.

Read from the source with `ast`, so a class no test imports is checked all the same.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT_ROOMS = ("daemon", "api", "host_manager", "llamon_playground")
# Folders left out of the check (none today; the wire declaration is in: its docstrings also
# become the OpenAPI document's descriptions).
CHECKED_SEPARATELY: tuple[Path, ...] = ()
SEAMS = frozenset({
    "RunManager", "HostSupervisor", "Settings", "Spawner", "HistoryService", "RunHost",
    "Store", "EventHub", "BlobStore", "RunJournal", "RunExecutor", "ActiveRun",
    "PlaygroundClient",
})


def product_modules() -> Iterator[Path]:
    for room in PRODUCT_ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            rel = path.relative_to(REPO)
            if "examples" in rel.parts or any(rel.is_relative_to(d) for d in CHECKED_SEPARATELY):
                continue
            if "GENERATED" in path.read_text(encoding="utf-8").split("\n", 1)[0]:
                continue  # regenerated from the wire declaration, which carries the words
            yield path


def is_public(name: str) -> bool:
    return not name.startswith("_")


def missing_docstrings(path: Path, seams: Iterable[str], label: str) -> list[str]:
    """`label:line: Name` for each public top-level class without a docstring, and
    `label:line: Seam.method` for each public method (properties and Protocol members
    included) of a class named in `seams` without one."""
    seam_names = frozenset(seams)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not is_public(node.name):
            continue
        if ast.get_docstring(node) is None:
            found.append(f"{label}:{node.lineno}: {node.name}")
        if node.name not in seam_names:
            continue
        for member in node.body:
            if (isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and is_public(member.name) and ast.get_docstring(member) is None):
                found.append(f"{label}:{member.lineno}: {node.name}.{member.name}")
    return found


def test_public_classes_and_seam_methods_have_docstrings() -> None:
    missing = [line for path in product_modules()
               for line in missing_docstrings(path, SEAMS, str(path.relative_to(REPO)))]
    assert missing == [], "without a docstring:\n" + "\n".join(missing)


def test_every_seam_is_found() -> None:
    # A renamed seam would silently drop out of the method check.
    defined = {node.name for path in product_modules()
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.ClassDef)}
    assert SEAMS - defined == set()


def test_the_checker_flags_what_it_should(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import Protocol\n"
        "class Bare:\n"
        "    pass\n"
        "class _Private:\n"
        "    pass\n"
        "class Told:\n"
        '    """Why it exists."""\n'
        "    def undocumented(self) -> None: ...\n"
        "class Seam(Protocol):\n"
        '    """The seam."""\n'
        "    def __init__(self) -> None: ...\n"
        "    def _helper(self) -> None: ...\n"
        "    @property\n"
        "    def size(self) -> int: ...\n"
        "    async def run(self) -> None:\n"
        '        """Runs it."""\n'
        "    def stop(self) -> None: ...\n",
        encoding="utf-8")
    assert missing_docstrings(source, {"Seam"}, "sample.py") == [
        "sample.py:2: Bare", "sample.py:14: Seam.size", "sample.py:17: Seam.stop"]
