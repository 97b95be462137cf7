"""Suites kept as files in the project: read into history, written from it.

The daemon reads `playground/suites/**/*.json` (docs/suites.md, "Suites as files") before it
lists or starts suites: a new file becomes a suite, a changed one replaces its suite's cases
and baselines, a file gone leaves its suite in history (no longer a file suite). A file that
does not parse, or names a blob missing from `playground/suites/files/`, is listed in
`file_errors` with its path and line, and nothing else changes. Writing: `save` turns a
suite into a file (its input blobs copied beside), and a suite that is a file has its file
rewritten whenever its baselines change, so the change shows in `git diff`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llamon_playground.common.wire.suites import MAX_SUITE_CASES, MAX_SUITE_NAME
from llamon_playground.daemon.errors import BadRequest, Conflict
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.suites import records
from llamon_playground.daemon.suites.cases import Case
from llamon_playground.daemon.suites.suite_file import FileSuite, SuiteFileError, dump, parse
from llamon_playground.host_manager.watch.fingerprint import OutsideProject, project_file

SUITES_DIR = "playground/suites"
BLOBS_DIR = f"{SUITES_DIR}/files"
SAFE_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
CHUNK = 1 << 20


def default_path(name: str) -> str:
    """`playground/suites/NAME.json`, for a name that is a plain file name."""
    if not set(name) <= SAFE_NAME or name.startswith("."):
        raise BadRequest(f"the suite's name {name!r} is no plain file name (letters, digits, "
                         "-, _ and .); give a `path`", code="invalid_suite_path")
    return f"{SUITES_DIR}/{name}.json"


def checked_path(project_dir: Path, rel: str) -> str:
    """A suite file's path relative to the project: under playground/suites/, ending .json,
    never leaving the project."""
    path = Path(rel)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(project_dir.resolve())
        except ValueError:
            raise BadRequest(f"{rel} is not inside the project",
                             code="invalid_suite_path") from None
    posix = path.as_posix()
    inside = Path(posix).parts[:2] == tuple(SUITES_DIR.split("/"))
    if not inside or ".." in path.parts or not posix.endswith(".json") \
            or posix.startswith(BLOBS_DIR + "/"):
        raise BadRequest(f"a suite file is a .json file under {SUITES_DIR}/ (not "
                         f"{BLOBS_DIR}/): {rel}", code="invalid_suite_path")
    return posix


class SuiteFiles:
    """The project's suite files, kept in step with history's suites."""

    def __init__(self, project_dir: Path, store: Store, blobs: BlobStore) -> None:
        self.project_dir = self._project = project_dir
        self._store = store
        self._blobs = blobs
        self._lock = asyncio.Lock()  # one sync or write at a time
        self.errors: list[dict[str, Any]] = []  # the files that could not be read, last sync

    # -- reading ------------------------------------------------------------------------

    def _found(self) -> list[str]:
        root = self._project / SUITES_DIR
        if not root.is_dir():
            return []
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = Path(dirpath).relative_to(self._project).as_posix()
            dirnames[:] = sorted(d for d in dirnames
                                 if f"{rel_dir}/{d}" != BLOBS_DIR and not d.startswith("."))
            found += [f"{rel_dir}/{f}" for f in sorted(filenames) if f.endswith(".json")]
        return found

    def _read(self, rel: str) -> bytes | None:
        try:
            target = project_file(self._project, rel)
        except OutsideProject:
            return None
        return None if target is None else target.read_bytes()

    async def sync(self, busy: set[str]) -> None:
        """Read every suite file into history (the suites in `busy` are running: theirs
        wait for the next sync)."""
        async with self._lock:
            found = await asyncio.to_thread(self._found)
            known = {s["file_path"]: s for s in await records.list_suites(self._store)
                     if s.get("file_path")}
            errors: list[dict[str, Any]] = []
            for rel in found:
                suite = known.get(rel)
                if suite is not None and suite["id"] in busy:
                    continue
                try:
                    data = await asyncio.to_thread(self._read, rel)
                    if data is None:
                        continue
                    digest = hashlib.sha256(data).hexdigest()
                    if suite is not None and suite.get("file_digest") == digest:
                        continue
                    await self._load(rel, data, digest, suite)
                except SuiteFileError as exc:
                    errors.append(_error(rel, exc.line, exc.message))
                except OSError as exc:
                    errors.append(_error(rel, 1, f"cannot be read: {exc.strerror}"))
            gone = [s for rel, s in known.items() if rel not in found and s["id"] not in busy]
            for suite in gone:  # its file went: the suite stays, in history only
                await records.update_suite(self._store, suite["id"],
                                           {"file_path": None, "file_digest": None})
            self.errors = errors

    async def _load(self, rel: str, data: bytes, digest: str,
                    suite: dict[str, Any] | None) -> None:
        parsed = parse(data, MAX_SUITE_CASES, MAX_SUITE_NAME)
        await asyncio.to_thread(self._blobs_in, parsed)
        cases = [Case(c["kind"], None, None, c["turns"], c["baseline"],
                      {p["sha256"] for t in c["turns"] for p in t["input"]["parts"]
                       if p.get("kind") == "file" and p.get("sha256")})
                 for c in parsed.cases]
        fields = {"name": parsed.name, "run_on_save": int(parsed.run_on_save),
                  "repeat": parsed.repeat, "file_path": rel, "file_digest": digest}
        try:
            if suite is None:
                await records.insert_suite(self._store, parsed.name, parsed.run_on_save, cases,
                                           repeat=parsed.repeat, file_path=rel,
                                           file_digest=digest)
            else:
                await records.replace_cases(self._store, suite["id"], fields, cases)
        except Conflict:
            line = data[:data.find(b'"name"')].count(b"\n") + 1 if b'"name"' in data else 1
            raise SuiteFileError(line, f"a suite named {parsed.name!r} is in history already "
                                       "(rename one of them)") from None

    def _blobs_in(self, parsed: FileSuite) -> None:
        """Copy the file inputs' blobs from playground/suites/files/ into history's store."""
        for case in parsed.cases:
            for sha in sorted({p["sha256"] for t in case["turns"] for p in t["input"]["parts"]
                               if p.get("kind") == "file" and p.get("sha256")}):
                if self._blobs.exists(sha):
                    continue
                rel = f"{BLOBS_DIR}/{sha}"
                try:
                    target = project_file(self._project, rel)
                except OutsideProject:
                    target = None
                if target is None:
                    raise SuiteFileError(case["line"], f"its input file {sha} is missing: "
                                                       f"{rel} is not there")
                try:
                    self._blobs.put_checked_sync(_chunks(target), sha, target.stat().st_size)
                except ValueError:
                    raise SuiteFileError(case["line"], f"{rel} does not hash to its name "
                                                       "(the file was changed)") from None

    # -- writing ------------------------------------------------------------------------

    async def write(self, suite: dict[str, Any], cases: list[dict[str, Any]],
                    rel: str) -> dict[str, Any]:
        """Write the suite to `rel` (its input blobs beside), and mark it a file suite."""
        async with self._lock:
            data = dump(suite["name"], bool(suite["run_on_save"]), int(suite.get("repeat") or 1),
                        cases)
            shas = sorted({p["sha256"] for c in cases for t in c["turns"]
                           for p in t["input"]["parts"]
                           if isinstance(p, dict) and p.get("kind") == "file"
                           and p.get("sha256")})
            await asyncio.to_thread(self._write, rel, data, shas)
            digest = hashlib.sha256(data).hexdigest()
            await records.update_suite(self._store, suite["id"],
                                       {"file_path": rel, "file_digest": digest})
            return {"path": rel, "bytes": len(data), "files": len(shas)}

    async def remove(self, rel: str | None) -> bool:
        """Delete a file suite's file (its suite is being deleted): else the next sync would
        read it back. The blobs beside stay (another suite file may name them)."""
        if not rel:
            return False
        async with self._lock:
            try:
                (self._project / rel).unlink()
            except FileNotFoundError:
                return False
            return True

    def _write(self, rel: str, data: bytes, shas: list[str]) -> None:
        target = self._project / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if shas:
            folder = self._project / BLOBS_DIR
            folder.mkdir(parents=True, exist_ok=True)
            for sha in shas:
                if not (folder / sha).is_file() and self._blobs.exists(sha):
                    _atomic(folder / sha, self._blobs.read(sha))
        _atomic(target, data)


def _error(rel: str, line: int, message: str) -> dict[str, Any]:
    return {"path": rel, "line": line, "message": message,
            "error": "suite_file_invalid", "where": f"{rel}:{line}"}


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def _atomic(target: Path, data: bytes) -> None:
    """Replace `target` whole: a reader (git, an editor) never sees half a file."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
