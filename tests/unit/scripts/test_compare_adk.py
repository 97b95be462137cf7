"""The ADK comparison's bookkeeping (scripts/benchmarks/compare/): which target a figure holds,
the medians over repetitions, the rotation of who goes first, the stream counter, the agent
file it writes. The comparison itself needs google-adk in a venv of its own, so it runs from
`scripts/compare-adk`, not here."""

from __future__ import annotations

import ast
from pathlib import Path

from scripts.benchmarks.compare.adk import KEYS, rotated, rows_of
from scripts.benchmarks.compare.adk_agent import APP_NAME, write_agents_dir
from scripts.benchmarks.compare.systems import Counter
from scripts.benchmarks.compare.table import Row, render


def test_a_target_holds_only_ahead_of_sqlite_and_within_one_and_a_half_of_memory() -> None:
    assert Row("f", "ms", 20.0, 14.0, 25.0, targeted=True).met is True
    assert Row("f", "ms", 26.0, 20.0, 25.0, targeted=True).met is False  # behind SQLite
    assert Row("f", "ms", 22.0, 14.0, 25.0, targeted=True).met is False  # 1.57 x memory
    assert Row("f", "ms", 25.0, 20.0, 25.0, targeted=True).ahead_of_sqlite is False  # a tie
    assert Row("f", "ms", 1.0, 2.0, 3.0).met is None  # report only
    assert Row("f", "ms", 1.0, None, 3.0, targeted=True).met is None


def test_rows_are_medians_of_the_repetitions_and_skip_figures_never_measured() -> None:
    reps = [{k: {"first_p50": float(n + i)} for i, k in enumerate(KEYS)} for n in (5, 1, 9)]
    reps[0]["playground"]["pss_after_runs"] = 100.0
    rows = {row.name: row for row in rows_of(reps)}
    first = rows["create → first output p50 (a one-token answer)"]
    assert (first.playground, first.adk_memory, first.adk_sqlite) == (5.0, 6.0, 7.0)
    assert first.targeted
    after = rows["PSS of all processes after 1,000 runs"]
    assert (after.playground, after.adk_memory) == (100.0, None)
    assert not any(name.startswith("run create") for name in rows)


def test_the_table_says_which_targets_held() -> None:
    text = render([Row("first", "ms", 20.0, 14.0, 25.0, targeted=True),
                   Row("done", "ms", 30.0, 14.0, 25.0, targeted=True),
                   Row("pss", "MB", 150.0, 95.0, 90.0)])
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["figure", "Playground"]
    assert lines[2].split()[-2:] == ["yes", "yes"]
    assert lines[3].split()[-2:] == ["no", "no"]
    assert lines[4].split()[-2:] == ["(report)", "(report)"]
    assert lines[-1].startswith("targets held: 1 of 2 figures")


def test_each_round_starts_with_the_next_system() -> None:
    assert [rotated(KEYS, i)[0] for i in range(4)] == [*KEYS, KEYS[0]]
    assert sorted(rotated(KEYS, 2)) == sorted(KEYS)


def test_the_counter_finds_a_marker_split_between_chunks_once() -> None:
    counter = Counter(b"event: output.delta")
    assert counter.feed(b"id: 1\nevent: output.del") == 0
    assert counter.feed(b"ta\ndata: {}\n\nid: 2\nevent: output.delta\n") == 2
    assert counter.feed(b"event: run.status\n") == 0
    assert counter.count == 2


def test_the_agent_folder_is_one_app_with_a_root_agent(tmp_path: Path) -> None:
    agents = write_agents_dir(tmp_path)
    assert [p.name for p in agents.iterdir()] == [APP_NAME]
    tree = ast.parse((agents / APP_NAME / "agent.py").read_text())
    assigned = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    assert "root_agent" in assigned
