"""The Host log ring is bounded by bytes as well as lines: 600 lines of 1 MB keep 8 MiB."""

from __future__ import annotations

from pathlib import Path

from llamon_playground.host_manager.logs import HostLogs


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
