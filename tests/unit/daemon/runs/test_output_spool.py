"""A long streamed text goes to the blob store as it arrives (runs/spool.py): what the
collector holds stops growing at 64 KiB, a replaced artifact leaves no file behind, and
the stored part is the excerpt, the size and the blob of the whole text; boot recovery's
fold of a crashed run's deltas stores the same part."""

from __future__ import annotations

from pathlib import Path

from llamon_playground.common.limits import TEXT_EXCERPT_CHARS, TEXT_INLINE_BYTES
from llamon_playground.daemon.a2a.wire import A2AEvent, WirePart
from llamon_playground.daemon.runs.output import OutputCollector
from llamon_playground.daemon.runs.reconcile import DeltaFold
from llamon_playground.daemon.store.blobs import TMP_PREFIX, BlobStore


def delta(text: str, artifact: str = "a", append: bool = True) -> A2AEvent:
    return A2AEvent("artifact", parts=[WirePart("text", text=text)], artifact_id=artifact,
                    append=append)


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.name.startswith(TMP_PREFIX)] if root.exists() \
        else []


async def test_a_long_text_is_spooled_to_a_blob_and_stored_as_its_excerpt(
        tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "files")
    collected = OutputCollector(blobs)
    chunks = [f"é{n:06d} " for n in range(20_000)]  # 9 bytes each: 180,000 in all
    collected.add(delta(chunks[0], append=False))
    for chunk in chunks[1:]:
        collected.add(delta(chunk))
    assert len(temp_files(blobs.root)) == 1, "written while it streams"
    collected.add(delta("short", artifact="b", append=False))
    stored, shas = await collected.stored_parts(blobs)
    whole = "".join(chunks)
    assert stored[0] == {"kind": "text", "text": whole[:TEXT_EXCERPT_CHARS],
                         "size": len(whole.encode()), "truncated": True, "sha256": shas[0]}
    assert stored[1] == {"kind": "text", "text": "short"}, "a short text stays inline"
    assert blobs.read(shas[0]) == whole.encode()
    assert temp_files(blobs.root) == []


async def test_a_replaced_long_text_leaves_no_file(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "files")
    collected = OutputCollector(blobs)
    collected.add(delta("x" * (TEXT_INLINE_BYTES + 1), append=False))
    assert len(temp_files(blobs.root)) == 1
    collected.add(delta("kept", append=False))  # the Host replaces the artifact
    assert temp_files(blobs.root) == []
    stored, shas = await collected.stored_parts(blobs)
    assert stored == [{"kind": "text", "text": "kept"}] and shas == []
    assert list(blobs.root.iterdir()) == []


async def test_a_host_file_is_written_when_it_arrives(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "files")
    collected = OutputCollector(blobs)
    collected.add(A2AEvent("artifact", artifact_id="f", parts=[
        WirePart("file", raw=b"hello file", name="h.txt", mime="text/plain")]))
    assert len(temp_files(blobs.root)) == 1, "not held until the run's end"
    stored, shas = await collected.stored_parts(blobs)
    assert stored[0]["kind"] == "file" and stored[0]["size"] == 10 and shas == [
        stored[0]["sha256"]]
    assert blobs.read(shas[0]) == b"hello file" and temp_files(blobs.root) == []


async def test_recovery_folds_deltas_into_the_part_a_live_run_stores(tmp_path: Path) -> None:
    """Boot recovery's fold (DeltaFold) spools as the live collector does: the same stored
    part for the same text, and a replaced long text leaves no file."""
    blobs = BlobStore(tmp_path / "files")
    chunks = [f"é{n:06d} " for n in range(20_000)]
    fold = DeltaFold(blobs.writer)
    fold.add({"artifact_id": "gone", "text": "y" * (TEXT_INLINE_BYTES + 1), "append": False})
    fold.add({"artifact_id": "gone", "text": "", "append": False})  # replaced by nothing
    fold.add({"artifact_id": "a", "text": chunks[0], "append": False})
    for chunk in chunks[1:]:
        fold.add({"artifact_id": "a", "text": chunk})
    assert len(temp_files(blobs.root)) == 1, "written while it is read"
    recovered, shas = fold.stored_parts(lambda exc: None)
    collected = OutputCollector(blobs)
    collected.add(delta(chunks[0], append=False))
    for chunk in chunks[1:]:
        collected.add(delta(chunk))
    live, live_shas = await collected.stored_parts(blobs)
    assert recovered == live and shas == live_shas, "an empty text is no part"
    assert blobs.read(shas[0]) == "".join(chunks).encode()
    assert temp_files(blobs.root) == [] and len(list(blobs.root.iterdir())) == 1
