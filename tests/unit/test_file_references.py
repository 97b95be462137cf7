"""Comments, docstrings and docs name files that exist.

A file named in a comment (`daemon/store/frames.py`, `terminal/control.py`, `docs/layout.md`)
is where a reader goes next; after a move or a rename the name is a dead end. Read from the
tracked files: a `.py` file's comments and docstrings, every line of a `.md` page, the comment
lines of the shell scripts and the page's files. A name resolves when some tracked file's path
ends with it (so `frames.py` and `store/frames.py` both name `daemon/store/frames.py`), or it is
relative to the naming file's folder. Names of files the product writes or reads at run time,
or that live in a user's project or a dependency, are listed in NOT_IN_THE_TREE.
"""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Named on purpose, never in this repository: run-time files, a user's project, a dependency.
NOT_IN_THE_TREE = frozenset({
    "host.json", "daemon.json", "front.json", "openapi.json",  # written at run time
    "script.py", "orchestrator.toml", "app/nodes/__init__.py",  # in a user's project
    "c.md", "d/c.md", "okf-contracts/dN/c.md",  # examples of a user's saves
    "a2a/server/agent_execution/active_task.py",  # in the a2a-sdk
})
NAME = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|js|mjs|toml|html|css|json|sh))\b")
SHELL_SCRIPTS = ("scripts", ".ci")


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    return [Path(line) for line in out.splitlines()]


def readable_text(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of what a reader reads as prose in `source`."""
    if path.suffix == ".py":
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT or (
                    tok.type == tokenize.STRING
                    and tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))):
                yield tok.start[0], tok.string
    elif path.suffix == ".md":
        yield from enumerate(source.splitlines(), 1)
    elif path.suffix in (".js", ".css", ".html") or (
            path.suffix == "" and path.parts[0] in SHELL_SCRIPTS):
        for number, line in enumerate(source.splitlines(), 1):
            if line.lstrip().startswith(("#", "//", "*", "/*")) or " // " in line:
                yield number, line


def dead_names(files: list[Path], root: Path) -> list[str]:
    """`path:line: name` for each file name in `files`' prose that no tracked file has."""
    known = {str(f) for f in files}
    # The mapped folders also go by their import path (llamon_playground/daemon/...).
    known |= {f"llamon_playground/{f}" for f in known
              if f.split("/", 1)[0] in ("daemon", "api", "host_manager", "examples")}
    found = []
    for path in files:
        full = root / path
        if full.is_symlink() or not full.is_file() or "vendor" in path.parts:
            continue
        try:
            source = full.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for line, text in readable_text(path, source):
            for match in NAME.finditer(text):
                name = match.group(1)
                if (name in NOT_IN_THE_TREE or (full.parent / name).exists()
                        or any(k == name or k.endswith("/" + name) for k in known)):
                    continue
                found.append(f"{path}:{line}: {name}")
    return found


def test_every_file_a_comment_or_doc_names_exists() -> None:
    assert dead_names(tracked(), REPO) == []


def test_the_check_finds_a_dead_name(tmp_path: Path) -> None:
    (tmp_path / "room").mkdir()
    (tmp_path / "room" / "alive.py").write_text("")
    (tmp_path / "room" / "main.py").write_text(
        '"""The commands live in gone.py; the rest in alive.py."""\n'
        "# see room/alive.py and room/moved.py\n"
        "x = 'not_a_comment.py'\n")
    files = [Path("room/alive.py"), Path("room/main.py")]
    assert dead_names(files, tmp_path) == ["room/main.py:1: gone.py",
                                           "room/main.py:2: room/moved.py"]
