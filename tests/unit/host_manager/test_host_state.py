"""The Host state machine, without processes: the table, and the supervisor walking it.

The supervisor cases use a Host command that cannot be resolved (what a broken pyproject
gives), so every start fails before anything is spawned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import resource
from pathlib import Path

import pytest

from llamon_playground.host_manager.crash_policy import CrashSettings
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.spawn.spawner import ColdSpawner
from llamon_playground.host_manager.state import (
    TRANSITIONS,
    HostState,
    IllegalHostTransition,
    check,
)
from llamon_playground.host_manager.supervisor import HostConfig, HostSupervisor
from llamon_playground.host_manager.watch.fingerprint import WatchRules

# Sorted: the targets are a set, and every pytest-xdist worker must collect the same order.
LEGAL = [(a, b) for a, targets in TRANSITIONS.items()
         for b in sorted(targets, key=list(HostState).index)]
ILLEGAL = [(a, b) for a, b in itertools.product(HostState, HostState) if (a, b) not in LEGAL]


@pytest.mark.parametrize(("current", "target"), LEGAL)
def test_legal_moves_pass(current: HostState, target: HostState) -> None:
    check(current, target)


@pytest.mark.parametrize(("current", "target"), ILLEGAL)
def test_illegal_moves_raise(current: HostState, target: HostState) -> None:
    with pytest.raises(IllegalHostTransition):
        check(current, target)


def test_some_moves_are_illegal_on_purpose() -> None:
    assert (HostState.STOPPED, HostState.READY) in ILLEGAL, "Ready only through Starting"
    assert (HostState.READY, HostState.STARTING) in ILLEGAL, "a restart stops first"
    assert (HostState.STOPPING, HostState.STARTING) in ILLEGAL


def _reachable(start: HostState, edges: dict[HostState, set[HostState]]) -> set[HostState]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), set()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_every_state_is_reachable_and_can_get_back_to_stopped() -> None:
    assert set(TRANSITIONS) == set(HostState)
    forward = {a: set(b) for a, b in TRANSITIONS.items()}
    backward: dict[HostState, set[HostState]] = {}
    for a, b in LEGAL:
        backward.setdefault(b, set()).add(a)
    assert _reachable(HostState.STOPPED, forward) == set(HostState)
    assert _reachable(HostState.STOPPED, backward) == set(HostState)


# -- the supervisor's walk ----------------------------------------------------------------------


def _unresolvable() -> list[str]:
    raise HostUnavailable("cannot read the project's host command", reason="project_validation")


def host_config(tmp_path: Path, *, limit: int, backoff_base: float) -> HostConfig:
    return HostConfig(
        project_dir=tmp_path, command=_unresolvable, base_env={},
        log_path=tmp_path / "host.log", record_path=tmp_path / "host.json",
        capture_socket=str(tmp_path / "d.sock"), rules=WatchRules(tmp_path),
        crash=CrashSettings(min_uptime=5.0, backoff_base=backoff_base, backoff_cap=3600.0,
                            limit=limit, window=60.0),
        start_timeout=30.0, stop_grace=3.0, spawner=ColdSpawner(), log_bytes=1 << 20,
        log_file_bytes=1 << 20, log_file_backups=1)


def watched(supervisor: HostSupervisor) -> list[str]:
    seen: list[str] = []
    supervisor.add_state_listener(lambda status: seen.append(status["state"]))
    return seen


async def test_a_failed_start_at_the_crash_limit_is_a_crashloop(tmp_path: Path) -> None:
    supervisor = HostSupervisor(host_config(tmp_path, limit=1, backoff_base=0.5))
    seen = watched(supervisor)
    try:
        with pytest.raises(HostUnavailable) as failed:
            await supervisor.ensure_ready()
        assert failed.value.reason == "project_validation"
        assert seen == ["starting", "crashloop"]
        status = supervisor.status()
        assert (status["crashes"], status["backoff_until"]) == (1, None)
        await supervisor.stop()
        assert seen[2:] == ["stopping", "stopped"]
    finally:
        await supervisor.close()


async def test_an_edit_in_crashloop_tries_again(tmp_path: Path) -> None:
    supervisor = HostSupervisor(host_config(tmp_path, limit=1, backoff_base=0.5))
    seen = watched(supervisor)
    try:
        with pytest.raises(HostUnavailable):
            await supervisor.ensure_ready()
        assert await supervisor.restart_if_changed() == {"(crashloop cleared)"}
        assert seen == ["starting", "crashloop", "stopping", "stopped", "starting", "crashloop"]
        assert supervisor.status()["restarts"] == 1
        assert supervisor.status()["crashes"] == 1, "the edit reset the count"
    finally:
        await supervisor.close()


async def test_without_a_generation_nothing_restarts_for_an_edit(tmp_path: Path) -> None:
    supervisor = HostSupervisor(host_config(tmp_path, limit=1, backoff_base=0.5))
    seen = watched(supervisor)
    try:
        (tmp_path / "app.py").write_text("x = 1\n")
        assert await supervisor.restart_if_changed() == set()
        assert await supervisor.restart_for_save(["app.py"]) is False
        assert seen == [] and supervisor.state == HostState.STOPPED
    finally:
        await supervisor.close()


async def test_stop_cancels_a_pending_back_off(tmp_path: Path) -> None:
    supervisor = HostSupervisor(host_config(tmp_path, limit=5, backoff_base=3600.0))
    seen = watched(supervisor)
    try:
        with pytest.raises(HostUnavailable):
            await supervisor.ensure_ready()
        assert seen == ["starting", "backoff"]
        assert supervisor.status()["backoff_until"] is not None
        pending = supervisor._backoff.pending
        assert pending is not None
        await supervisor.stop()
        assert seen[2:] == ["stopping", "stopped"]
        assert supervisor.status()["backoff_until"] is None
        await asyncio.gather(pending, return_exceptions=True)  # hangs if it was not cancelled
        assert pending.cancelled(), "the automatic restart will not happen"
    finally:
        await supervisor.close()


def test_host_config_has_no_defaults_of_its_own(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        HostConfig(  # type: ignore[call-arg]
                   project_dir=tmp_path, command=_unresolvable, base_env={},
                   log_path=tmp_path / "host.log", record_path=tmp_path / "host.json",
                   capture_socket="/tmp/d.sock", rules=WatchRules(tmp_path))


async def test_no_free_port_is_a_failed_start_not_a_stuck_one(tmp_path: Path) -> None:
    # A real fault: the process may open no more descriptors, so the port probe's socket()
    # fails with EMFILE, as it does for a daemon that runs out of them.
    supervisor = HostSupervisor(dataclasses.replace(
        host_config(tmp_path, limit=5, backoff_base=3600.0), command=lambda: ["true"]))
    seen = watched(supervisor)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        lowest_free = os.dup(0)  # the descriptor the next socket() would get
        os.close(lowest_free)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
        try:
            with pytest.raises(HostUnavailable) as failed:
                await supervisor.ensure_ready()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert "free loopback port" in failed.value.message
        assert seen == ["starting", "backoff"], "the state left `starting`"
        await supervisor.stop()
        assert supervisor.state == HostState.STOPPED
    finally:
        await supervisor.close()
