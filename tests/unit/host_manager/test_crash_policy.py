"""CrashPolicy stepped by hand with a fake clock: back-off, its cap, crashloop, resets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llamon_playground.host_manager.crash_policy import CrashPolicy, CrashSettings

SETTINGS = CrashSettings(min_uptime=5.0, backoff_base=0.5, backoff_cap=3.0, limit=5,
                         window=60.0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def policy(clock: FakeClock, **overrides: float) -> CrashPolicy:
    return CrashPolicy(replace(SETTINGS, **overrides), clock=clock)


def test_back_off_doubles_per_consecutive_crash_up_to_the_cap(clock: FakeClock) -> None:
    p = policy(clock, limit=100)
    delays = [p.on_exit(was_ready=False, uptime=0.0) for _ in range(6)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert p.consecutive == 6


def test_limit_crashes_within_the_window_is_a_crashloop(clock: FakeClock) -> None:
    p = policy(clock)
    for _ in range(4):
        assert p.on_exit(was_ready=False, uptime=0.0) is not None
        clock.now += 1.0
    assert p.on_exit(was_ready=False, uptime=0.0) is None


def test_crashes_older_than_the_window_do_not_count(clock: FakeClock) -> None:
    p = policy(clock)
    for _ in range(10):
        assert p.on_exit(was_ready=False, uptime=0.0) is not None
        clock.now += 16.0  # four crashes span 48 s; the fifth pushes the oldest out
    assert p.consecutive == 10, "the back-off still grows: they are consecutive"


def test_a_long_enough_run_restarts_at_once_and_resets_the_back_off(clock: FakeClock) -> None:
    p = policy(clock, limit=100)
    for _ in range(3):
        p.on_exit(was_ready=False, uptime=0.0)
    assert p.on_exit(was_ready=True, uptime=5.0) == 0.0
    assert p.consecutive == 0
    assert p.on_exit(was_ready=False, uptime=0.0) == 0.5


def test_an_exit_soon_after_ready_is_a_crash(clock: FakeClock) -> None:
    p = policy(clock)
    assert p.on_exit(was_ready=True, uptime=4.9) == 0.5
    assert p.consecutive == 1


def test_an_exit_before_ready_is_a_crash_whatever_the_uptime(clock: FakeClock) -> None:
    p = policy(clock)
    assert p.on_exit(was_ready=False, uptime=999.0) == 0.5


def test_reset_clears_a_crashloop(clock: FakeClock) -> None:
    p = policy(clock, limit=2)
    p.on_exit(was_ready=False, uptime=0.0)
    assert p.on_exit(was_ready=False, uptime=0.0) is None
    p.reset()
    assert p.consecutive == 0
    assert p.on_exit(was_ready=False, uptime=0.0) == 0.5, "counted from zero again"


def test_settings_have_no_defaults_of_their_own() -> None:
    with pytest.raises(TypeError):
        CrashSettings()  # type: ignore[call-arg]


def test_a_host_that_was_sent_a_run_comes_back_at_once_and_never_loops(
        clock: FakeClock) -> None:
    """Outside SIGKILLs mid-run, one after another: each is that run's failure, not a
    crash; the Host comes back at once every time, and unasked crashes count from zero."""
    p = policy(clock)
    for _ in range(SETTINGS.limit * 3):
        clock.now += 0.5
        assert p.on_exit(was_ready=True, uptime=0.1, served=True) == 0.0
    assert p.on_exit(was_ready=True, uptime=0.1) == SETTINGS.backoff_base
    assert p.on_exit(was_ready=False, uptime=0.0, served=True) is not None  # never Ready
