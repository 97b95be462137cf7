"""Which project files a Host depends on, and a fingerprint of their contents.

Watched: *.py, the env file, pyproject.toml, orchestrator.toml, okf/**/*.md and
okf-contracts/**/*.md. Folders that are never project source are skipped before anything
is read, so churn in .venv/ or .git/ costs nothing.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

IGNORED_DIRS = frozenset({".venv", "venv", ".git", "__pycache__", "node_modules", ".llamon",
                          ".hg", ".svn", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                          ".hypothesis", ".idea", ".vscode"})
MD_ROOTS = ("okf", "okf-contracts")
TOP_LEVEL_FILES = frozenset({"pyproject.toml", "orchestrator.toml"})

Fingerprint = dict[str, str]  # relative posix path -> sha256 of the content


@dataclass
class WatchRules:
    """Shared by the watcher, the fingerprinter and the Host's config; `env_file` follows
    pyproject.toml when it changes (the reload coordinator sets it)."""

    project_dir: Path
    env_file: str = ".env"

    def is_watched(self, rel: str) -> bool:
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
        path = self.rules.project_dir / rel
        try:
            st = path.stat()
        except OSError:
            self._cache.pop(rel, None)
            return None
        cached = self._cache.get(rel)
        if cached is not None and cached[0] == st.st_mtime_ns and cached[1] == st.st_size:
            return cached[2]
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None
        self._cache[rel] = (st.st_mtime_ns, st.st_size, digest)
        return digest


def differences(old: Fingerprint, new: Fingerprint) -> set[str]:
    return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
