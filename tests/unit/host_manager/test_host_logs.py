"""The Host log ring is bounded by bytes as well as lines: 600 lines of 1 MB keep 8 MiB."""

from __future__ import annotations

from pathlib import Path

from llamon_playground.host_manager.logs import MAX_LINE_BYTES, TOKEN_MASK, HostLogs, HostOutput


def test_the_ring_keeps_at_most_its_bytes_oldest_lines_going_first(tmp_path: Path) -> None:
    logs = HostLogs(tmp_path / "host.log", capacity=5000, max_bytes=10_000)
    for n in range(30):
        logs.append(1, "stdout", f"{n:04d}" + "x" * 996)  # 1,000 characters a line
    kept, overflow = logs.after(0, 5000)
    assert [ln.text[:4] for ln in kept] == [f"{n:04d}" for n in range(20, 30)]
    assert overflow, "the dropped lines are said to be dropped"
    assert logs.next_offset == 30
    logs.close()


def test_a_line_at_the_budget_is_kept_and_the_newest_line_always_is(tmp_path: Path) -> None:
    logs = HostLogs(tmp_path / "host.log", max_bytes=100)
    logs.append(1, "stdout", "a" * 100)
    assert [ln.text for ln in logs.after(0, 10)[0]] == ["a" * 100]
    logs.append(1, "stdout", "b" * 500)  # over the budget alone: the newest still shows
    assert [ln.text for ln in logs.after(0, 10)[0]] == ["b" * 500]
    logs.close()


def test_the_line_cap_still_holds(tmp_path: Path) -> None:
    logs = HostLogs(tmp_path / "host.log", capacity=3, max_bytes=1 << 20)
    for n in range(5):
        logs.append(1, "stdout", str(n))
    assert [ln.text for ln in logs.after(0, 10)[0]] == ["2", "3", "4"]
    logs.close()


# -- from the Host's bytes to lines ---------------------------------------------------------

TOKEN = "tok_" + "Ab9-_" * 8


def lines_of(chunks: list[bytes], max_line: int = 1 << 20) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    output = HostOutput(TOKEN, lambda stream, text: seen.append((stream, text)), max_line)
    for chunk in chunks:
        if chunk:  # b"" is the end of the stream
            output.feed("stdout", chunk)
    output.feed("stdout", b"")
    return seen


def test_the_token_is_masked_however_the_writes_split_it() -> None:
    text = f"env: LLAMON_CAPTURE_TOKEN={TOKEN} and again {TOKEN}{TOKEN}\n".encode()
    for cut in range(1, len(text)):
        for second in (cut, min(cut + 7, len(text))):
            seen = lines_of([text[:cut], text[cut:second], text[second:]])
            joined = "\n".join(t for _, t in seen)
            assert TOKEN not in joined and joined.count(TOKEN_MASK) == 3, (cut, seen)
    # One byte a write, too.
    seen = lines_of([bytes([b]) for b in text])
    assert seen == [("stdout", (f"env: LLAMON_CAPTURE_TOKEN={TOKEN_MASK} and again "
                               f"{TOKEN_MASK}{TOKEN_MASK}"))]


def test_what_only_begins_like_the_token_is_kept_whole() -> None:
    assert lines_of([b"tok_Ab9", b"-_ and more\n", b"tok_"]) == [
        ("stdout", "tok_Ab9-_ and more"), ("stdout", "tok_")]


def test_a_long_line_is_cut_at_its_limit_and_the_rest_dropped() -> None:
    seen = lines_of([b"a" * 700, b"a" * 700 + b"\nnext\n" + b"b" * 3000], max_line=1000)
    assert seen == [("stdout", "a" * 1000), ("stdout", "next"), ("stdout", "b" * 1000)]


def test_a_line_of_exactly_the_limit_is_whole() -> None:
    assert lines_of([b"c" * 1000 + b"\nd\n"], max_line=1000) == [
        ("stdout", "c" * 1000), ("stdout", "d")]


def test_the_default_cut_is_one_mebibyte(tmp_path: Path) -> None:
    seen = lines_of([b"x" * (3 << 20) + b"\nafter\n"])
    assert [len(t) for _, t in seen] == [MAX_LINE_BYTES, 5] and MAX_LINE_BYTES == 1 << 20


# -- the file -------------------------------------------------------------------------------

def test_the_file_never_passes_its_size_and_keeps_its_backups(tmp_path: Path) -> None:
    path = tmp_path / "host.log"
    logs = HostLogs(path, file_bytes=1000, file_backups=2)
    for n in range(100):
        logs.append(1, "stdout", f"line {n:03d} " + "x" * (n % 37) * 5)
    logs.append(1, "stderr", "y" * 5000)  # longer than a whole file: cut to fit
    logs.close()
    files = sorted(tmp_path.glob("host.log*"))
    assert [p.name for p in files] == ["host.log", "host.log.1", "host.log.2"]
    assert all(p.stat().st_size <= 1000 for p in files), [p.stat().st_size for p in files]
    assert path.read_bytes().endswith(b"y\n") and path.stat().st_size == 1000
    assert b"line 099" in (tmp_path / "host.log.1").read_bytes()


def test_a_full_file_left_by_a_previous_daemon_rotates_first(tmp_path: Path) -> None:
    path = tmp_path / "host.log"
    path.write_bytes(b"o" * 990 + b"\n")
    logs = HostLogs(path, file_bytes=1000, file_backups=1)
    logs.append(1, "stdout", "new line")
    logs.close()
    assert (tmp_path / "host.log.1").read_bytes() == b"o" * 990 + b"\n"
    assert path.read_bytes().endswith(b"stdout new line\n")
