"""Content-addressed file store: <project>/.llamon/playground/files/<sha256>.

A blob is written to a temp file in the same folder, fsynced, then renamed into place, so a
crash leaves either the whole blob or no blob (plus, at worst, a temp file that the next
start removes). An existing blob is never overwritten.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from llamon_playground.daemon.data.parts import SHA256_RE
from llamon_playground.daemon.errors import NotFound

TMP_PREFIX = ".tmp-"
WRITE_BUFFER = 1 << 20  # bytes a BlobWriter gathers before each write to its file


class BlobStore:
    """The content-addressed file store: a blob is named by its sha256 and written whole or
    not at all."""

    def __init__(self, root: Path, check_path: Callable[[], None] = lambda: None) -> None:
        self.root = root
        self._check_path = check_path  # OSError when the folder's path may not be written

    def path_for(self, sha256: str) -> Path:
        """Where a blob lives; NotFound for anything that is not a sha256, so a request never
        names a path of its own."""
        if not SHA256_RE.match(sha256):
            raise NotFound(f"no file {sha256!r}", code="file_not_found")
        return self.root / sha256

    def exists(self, sha256: str) -> bool:
        """Whether the blob is stored."""
        return self.path_for(sha256).is_file()

    async def put(self, data: bytes) -> str:
        """Store `data` off the event loop; its sha256."""
        return await asyncio.to_thread(self.put_sync, data)

    def put_sync(self, data: bytes, expected_sha256: str | None = None) -> str:
        """Store `data` (temp file, fsync, rename); its sha256. A blob already there is left as
        it is; `expected_sha256` refuses bytes that do not match."""
        digest = hashlib.sha256(data).hexdigest()
        if expected_sha256 is not None and digest != expected_sha256:
            raise ValueError(f"sha256 mismatch: expected {expected_sha256}, got {digest}")
        final = self.root / digest
        self._check_path()
        if final.is_file() and final.stat().st_size == len(data):
            return digest
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)  # history is private
        tmp = self.root / f"{TMP_PREFIX}{digest}-{os.getpid()}-{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if final.exists():
                tmp.unlink()  # someone else won the race with identical content
            else:
                os.rename(tmp, final)
                _fsync_dir(self.root)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return digest

    def put_checked_sync(self, chunks: Iterable[bytes], sha256: str, size: int) -> bool:
        """Store a blob whose sha256 and size the caller claims (a bundle blob, already
        verified by the bundle validator), written as `chunks` come, and verified again
        here (ValueError when the bytes do not hash to `sha256`). True when this call
        created the blob, so a failed import can remove exactly what it added."""
        final = self.path_for(sha256)
        self._check_path()
        if final.is_file() and final.stat().st_size == size:
            return False
        writer = self.writer()
        try:
            for chunk in chunks:
                writer.write(chunk)
            if writer.hexdigest() != sha256:
                raise ValueError(f"sha256 mismatch: expected {sha256}, "
                                 f"got {writer.hexdigest()}")
        except BaseException:
            writer.discard()
            raise
        existed = final.is_file()
        writer.commit()
        return not existed

    def put_all_checked(self, blobs: dict[str, tuple[Iterable[bytes], int]]) -> list[str]:
        """`put_checked_sync` for each (sha256: (chunks, size)); the blobs this call created.
        On failure those are removed again before the error goes on."""
        created: list[str] = []
        try:
            for sha, (chunks, size) in blobs.items():
                if self.put_checked_sync(chunks, sha, size):
                    created.append(sha)
        except BaseException:
            for sha in created:
                self.unlink(sha)
            raise
        return created

    def writer(self) -> BlobWriter:
        """A blob to be written piece by piece (see BlobWriter)."""
        return BlobWriter(self.root)

    def read(self, sha256: str) -> bytes:
        """A blob's bytes; NotFound when it is not stored."""
        path = self.path_for(sha256)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"no file {sha256}", code="file_not_found") from exc

    def remove_temp_files(self) -> int:
        """Boot clean-up: temp files are what a crash mid-write leaves behind."""
        if not self.root.is_dir():
            return 0
        removed = 0
        for entry in self.root.iterdir():
            if entry.name.startswith(TMP_PREFIX):
                entry.unlink(missing_ok=True)
                removed += 1
        return removed

    def unlink(self, sha256: str) -> None:
        """Remove a blob; one already gone is no error."""
        self.path_for(sha256).unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobWriter:
    """A blob written as it arrives (a long streamed answer, a large text): bytes go to a temp
    file and into the hash as they come, so no whole copy is ever held in memory; `commit`
    names it by its sha256, `discard` leaves nothing behind. Writes are buffered in the
    process and reach the disk at `commit` (fsync there, off the event loop)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._root = root
        self._tmp = root / f"{TMP_PREFIX}stream-{os.getpid()}-{os.urandom(6).hex()}"
        fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._fh = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        """Append `data` (OSError when the disk refuses it; then `discard`)."""
        self._hash.update(data)
        self._fh.write(data)
        self.size += len(data)

    def hexdigest(self) -> str:
        """The sha256 of what was written so far (the blob's name once committed)."""
        return self._hash.hexdigest()

    def commit(self) -> str:
        """Flush, fsync and name the blob by its content; its sha256. Blocking: call it in
        a thread."""
        digest = self._hash.hexdigest()
        final = self._root / digest
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            if final.is_file() and final.stat().st_size == self.size:
                self._tmp.unlink()  # the same bytes are stored already
            else:
                os.rename(self._tmp, final)
                _fsync_dir(self._root)
        except BaseException:
            self.discard()
            raise
        return digest

    def discard(self) -> None:
        """Drop what was written; the temp file goes."""
        try:
            self._fh.close()
        except OSError:
            pass  # a buffered write that cannot be flushed any more: the file goes anyway
        self._tmp.unlink(missing_ok=True)
