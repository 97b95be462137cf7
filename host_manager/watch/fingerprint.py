"""Which project files a Host depends on, and a fingerprint of their contents.

Watched: *.py, the env file, pyproject.toml, orchestrator.toml, okf/**/*.md and
okf-contracts/**/*.md. Folders that are never project source are skipped before anything
is read, so churn in .venv/ or .git/ costs nothing.

Nothing outside the project is ever read: a path whose resolved target leaves the project
(a symlink to /etc/passwd, or to a folder elsewhere), or that is not a regular file (a FIFO
would block the read, a device never end), is not hashed.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

IGNORED_DIRS = frozenset({".venv", "venv", ".git", "__pycache__", "node_modules", ".llamon",
                          ".hg", ".svn", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                          ".hypothesis", ".idea", ".vscode"})
MD_ROOTS = ("okf", "okf-contracts")
TOP_LEVEL_FILES = frozenset({"pyproject.toml", "orchestrator.toml"})

Fingerprint = dict[str, str]  # relative posix path -> sha256 of the content


class OutsideProject(Exception):
    """A project path that resolves outside the project or to something not a file."""


def project_file(project_dir: Path, rel: str) -> Path | None:
    """The resolved path of project file `rel`, None when there is nothing there (a deleted
    file); OutsideProject when it resolves outside `project_dir` or is not a regular file."""
    try:
        root = project_dir.resolve()
        target = (root / rel).resolve()
    except RuntimeError as exc:  # a symlink loop
        # The message names the project-relative path only: the exception's names the
        # absolute one, which is none of the caller's business.
        raise OutsideProject(f"{rel} cannot be resolved (a symlink loop)") from exc
    except OSError as exc:
        raise OutsideProject(f"{rel} cannot be resolved: {exc.strerror}") from exc
    if not target.is_relative_to(root):
        raise OutsideProject(f"{rel} resolves outside the project")
    try:
        st = target.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        raise OutsideProject(f"{rel} is not a regular file")
    return target


def read_project_file(project_dir: Path, rel: str) -> bytes | None:
    """The bytes of project file `rel` (None when gone); never follows a way out."""
    target = project_file(project_dir, rel)
    return None if target is None else _read_regular(target, rel)


def _read_regular(target: Path, rel: str) -> bytes:
    # O_NONBLOCK: a FIFO swapped in after the check must not block the read.
    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutsideProject(f"{rel} is not a regular file")
        return fh.read()


@dataclass(frozen=True)
class WatchRules:
    """Which project files the Host depends on. Frozen: when pyproject.toml renames the env
    file, the supervisor makes new rules (`HostSupervisor.follow_project`) and the watcher
    and the fingerprinter read those from then on."""

    project_dir: Path
    env_file: str = ".env"

    def is_watched(self, rel: str) -> bool:
        """Whether a change to project-relative `rel` can change the Host."""
        parts = rel.split("/")
        if any(p in IGNORED_DIRS for p in parts[:-1]):
            return False
        name = parts[-1]
        if name.endswith(".py"):
            return True
        if len(parts) == 1 and (name in TOP_LEVEL_FILES or name == self.env_file):
            return True
        return name.endswith(".md") and parts[0] in MD_ROOTS and len(parts) > 1

    def relative(self, path: str | Path) -> str | None:
        """`path` relative to the project, or None when it lies outside it."""
        try:
            return Path(path).resolve().relative_to(self.project_dir).as_posix()
        except ValueError:
            return None

    def accepts(self, path: str) -> bool:
        """The watcher's filter: decides before any work is queued."""
        rel = self.relative(path)
        return rel is not None and self.is_watched(rel)

    def may_hold_watched(self, path: str) -> bool:
        """A folder under the project that is not skipped (a new one is scanned: files
        written into it before the OS watch reached it are never reported otherwise)."""
        rel = self.relative(path)
        if rel is None or rel == ".":
            return False
        return not any(p in IGNORED_DIRS for p in rel.split("/"))

    def watched_under(self, folder: str) -> set[str]:
        """The watched files under `folder` (relative paths), skipped folders left out."""
        found: set[str] = set()
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
            for name in filenames:
                rel = self.relative(os.path.join(dirpath, name))
                if rel is not None and self.is_watched(rel):
                    found.add(rel)
        return found


@dataclass
class Fingerprinter:
    """Hashes watched files; unchanged (mtime, size) reuse the previous hash."""

    rules: WatchRules
    _cache: dict[str, tuple[int, int, str]] = field(default_factory=dict)

    def scan(self) -> Fingerprint:
        root = self.rules.project_dir
        result: Fingerprint = {}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
            base = Path(dirpath)
            for name in filenames:
                rel = (base / name).relative_to(root).as_posix()
                if self.rules.is_watched(rel):
                    digest = self.hash_file(rel)
                    if digest is not None:
                        result[rel] = digest
        return result

    def hash_file(self, rel: str) -> str | None:
        """sha256 of a project file; None when it is gone, or leads out of the project."""
        try:
            target = project_file(self.rules.project_dir, rel)
            if target is None:
                raise FileNotFoundError(rel)
            st = target.stat()
        except (OSError, OutsideProject):
            self._cache.pop(rel, None)
            return None
        cached = self._cache.get(rel)
        if cached is not None and cached[0] == st.st_mtime_ns and cached[1] == st.st_size:
            return cached[2]
        try:
            digest = hashlib.sha256(_read_regular(target, rel)).hexdigest()
        except (OSError, OutsideProject):
            return None
        self._cache[rel] = (st.st_mtime_ns, st.st_size, digest)
        return digest


def digest(fingerprint: Fingerprint) -> str:
    """One sha256 over the watched files and their hashes: two runs with the same digest
    ran against the same code."""
    h = hashlib.sha256()
    for rel in sorted(fingerprint):
        h.update(f"{rel}\0{fingerprint[rel]}\n".encode())
    return h.hexdigest()


def differences(old: Fingerprint, new: Fingerprint) -> set[str]:
    return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
