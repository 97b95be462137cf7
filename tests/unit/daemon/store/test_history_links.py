"""No part of history's path is a symbolic link: each is refused by name, never followed
(a cloned repository's `.llamon` could point anywhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llamon_playground.common.config import build_settings
from llamon_playground.daemon.errors import HistoryPathRefused
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.private import check_blob_path, prepare_state


@pytest.mark.parametrize("linked", [".llamon", ".llamon/playground", ".llamon/playground/files",
                                    ".llamon/playground/playground.sqlite3",
                                    ".llamon/playground/playground.sqlite3-wal"])
def test_each_part_of_the_path_is_refused_by_name(tmp_path: Path, linked: str) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    settings = build_settings(project, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    link = project / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere / "target")
    with pytest.raises(HistoryPathRefused) as refused:
        prepare_state(settings)
    assert refused.value.extra["path"] == linked and refused.value.status == 409
    assert f"{linked} is a symbolic link" in refused.value.message
    with pytest.raises(OSError, match="is a symbolic link"):
        BlobStore(settings.files_dir, lambda: check_blob_path(settings)).put_sync(b"data")
    assert list(elsewhere.iterdir()) == []


def test_real_folders_pass(tmp_path: Path) -> None:
    settings = build_settings(tmp_path, {"LLAMON_PLAYGROUND_RUNTIME_DIR": str(tmp_path / "rt")})
    prepare_state(settings)
    BlobStore(settings.files_dir, lambda: check_blob_path(settings)).put_sync(b"data")
    assert settings.db_path.is_file() and len(list(settings.files_dir.iterdir())) == 1
