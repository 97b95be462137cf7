"""Why the Host died, from its own output: the last traceback, exception line first, the
Playground's preloader and runpy frames left out (and counted); a failed run's log tail
opens with the exception line."""

from __future__ import annotations

from pathlib import Path

from llamon_playground.host_manager.last_error import host_last_error, last_error, trimmed_tail
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.state import HostState

RAISED = "RuntimeError: the config is missing"
# As a generation forked from the warm parent writes it (the tail's `[stream] text` lines).
TAIL = [
    "[stdout] starting",
    "[stderr] Traceback (most recent call last):",
    '[stderr]   File "/opt/x/host_manager/spawn/preloader.py", line 238, in main',
    "[stderr]     run_generation(request, fds, control, parent, platform)",
    '[stderr]   File "/opt/x/host_manager/spawn/preloader.py", line 222, in run_generation',
    '[stderr]     runpy.run_module(request["target"], run_name="__main__", alter_sys=True)',
    '[stderr]   File "<frozen runpy>", line 226, in run_module',
    '[stderr]   File "<frozen runpy>", line 88, in _run_code',
    '[stderr]   File "/p/app/host.py", line 33, in <module>',
    "[stderr]     from app.agent import EchoAgentExecutor",
    '[stderr]   File "/p/app/agent.py", line 13, in <module>',
    '[stderr]     raise RuntimeError("the config is missing")',
    f"[stderr] {RAISED}",
]


def test_the_exception_and_the_projects_frames_only() -> None:
    found = last_error(TAIL)
    assert found is not None
    assert found["exception"] == RAISED
    assert found["frames_left_out"] == 4
    assert found["traceback"] == [
        "Traceback (most recent call last):",
        '  File "/p/app/host.py", line 33, in <module>',
        "    from app.agent import EchoAgentExecutor",
        '  File "/p/app/agent.py", line 13, in <module>',
        '    raise RuntimeError("the config is missing")',
        RAISED]


def test_the_last_traceback_counts_and_none_without_one() -> None:
    earlier = ["[stderr] Traceback (most recent call last):",
               '[stderr]   File "/p/app/old.py", line 1, in <module>', "[stderr] KeyError: 'x'"]
    assert last_error([*earlier, *TAIL])["exception"] == RAISED  # type: ignore[index]
    assert last_error(["[stdout] all fine", "[stderr] a warning"]) is None


def test_a_failed_runs_tail_opens_with_the_exception() -> None:
    tail = trimmed_tail(TAIL)
    assert tail[0] == RAISED
    assert not any("preloader.py" in line or "runpy" in line for line in tail[:-1])
    assert '[stderr]   File "/p/app/agent.py", line 13, in <module>' in tail
    assert "[stdout] starting" in tail
    assert tail[-1].startswith("(4 frames of the Playground's preloader and runpy left out")
    plain = ["[stdout] no traceback here"]
    assert trimmed_tail(plain) == plain


def test_get_host_names_it_only_while_failing(tmp_path: Path) -> None:
    logs = HostLogs(tmp_path / "host.log")
    try:
        for line in TAIL:
            stream, text = line[1:7], line[9:]
            logs.append(3, stream, text)
        logs.append(4, "stderr", "a later generation's line")
        assert host_last_error(logs, HostState.READY, 3) is None
        assert host_last_error(logs, HostState.CRASHLOOP, 4) is None  # its own output only
        failing = host_last_error(logs, HostState.BACKOFF, 3)
        assert failing is not None and failing["generation"] == 3
        assert failing["exception"] == RAISED
    finally:
        logs.close()
