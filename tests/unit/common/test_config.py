"""common/config.py: every setting declared once (default on the field, variable in a table),
read from the environment by the one builder, and documented (docs/configuration.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llamon_playground.common.config import (
    DAEMON_ENV,
    DAEMON_ONLY_ENV,
    FRONT_ENV,
    SYSTEMD_ENV,
    FrontSettings,
    Settings,
    build_settings,
)
from tests.support.procs import REPO

TABLES = [(Settings, DAEMON_ENV + SYSTEMD_ENV), (FrontSettings, FRONT_ENV)]
# A value unlike each default, as the environment spells it, and what the field becomes.
SAMPLES: dict[str, tuple[str, object]] = {
    "LLAMON_PLAYGROUND_HOST_START_TIMEOUT": ("12.5", 12.5),
    "LLAMON_PLAYGROUND_HOST_STOP_GRACE": ("2", 2.0),
    "LLAMON_PLAYGROUND_KEEPALIVE": ("0.5", 0.5),
    "LLAMON_PLAYGROUND_WATCH_QUIET": ("1", 1.0),
    "LLAMON_PLAYGROUND_WATCH_QUIET_MAX": ("2", 2.0),
    "LLAMON_PLAYGROUND_CRASH_LIMIT": ("7.0", 7),
    "LLAMON_PLAYGROUND_CRASH_WINDOW": ("30", 30.0),
    "LLAMON_PLAYGROUND_CRASH_MIN_UPTIME": ("1.5", 1.5),
    "LLAMON_PLAYGROUND_BACKOFF_BASE": ("0.1", 0.1),
    "LLAMON_PLAYGROUND_BACKOFF_CAP": ("3", 3.0),
    "LLAMON_PLAYGROUND_DB_BUSY_TIMEOUT_MS": ("100", 100),
    "LLAMON_PLAYGROUND_WATCH": ("0", False),
    "LLAMON_PLAYGROUND_PREWARM": ("0", False),
    "LLAMON_PLAYGROUND_HOST_STALL_TIMEOUT": ("4", 4.0),
    "LLAMON_PLAYGROUND_HISTORY_MAX_BYTES": ("1e9", 1_000_000_000),
    "LLAMON_PLAYGROUND_HISTORY_MAX_AGE_DAYS": ("90", 90.0),
    "LLAMON_PLAYGROUND_HISTORY_DIR": ("/tmp/h", Path("/tmp/h")),
    "NOTIFY_SOCKET": ("@sd", "@sd"),
    "WATCHDOG_USEC": ("2000000", 2000000),
    "WATCHDOG_PID": ("42", 42),
    "LLAMON_PLAYGROUND_TOKEN": ("tok-0123456789abcdef", "tok-0123456789abcdef"),
    "LLAMON_PLAYGROUND_TOKEN_FILE": ("/run/token", Path("/run/token")),
    "LLAMON_PLAYGROUND_FRONT_IDLE_TIMEOUT": ("2.5", 2.5),
    "LLAMON_PLAYGROUND_FRONT_HEAD_TIMEOUT": ("1.5", 1.5),
    "LLAMON_PLAYGROUND_FRONT_MAX_CONNECTIONS": ("32", 32),
    "LLAMON_PLAYGROUND_FRONT_TRANSPORT": ("Plain", "plain"),
}


def defaults(cls: type) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def group(settings: Settings, cls: type) -> object:
    return settings if cls is Settings else settings.front


def test_each_variable_fills_one_field_that_has_a_default() -> None:
    names = [var.name for _, table in TABLES for var in table]
    assert len(names) == len(set(names))
    for cls, table in TABLES:
        fields = [var.field for var in table]
        assert len(fields) == len(set(fields))
        assert set(fields) <= set(defaults(cls)), cls
    assert set(SAMPLES) == set(names)


def test_an_empty_environment_gives_the_field_defaults() -> None:
    settings = build_settings("/p", {})
    for cls, table in TABLES:
        expected = defaults(cls)
        for var in table:
            assert getattr(group(settings, cls), var.field) == expected[var.field], var


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_variable_sets_its_field(name: str) -> None:
    raw, value = SAMPLES[name]
    cls, var = next((cls, v) for cls, table in TABLES for v in table if v.name == name)
    assert value != defaults(cls)[var.field]  # the sample must show the variable works
    assert getattr(group(build_settings("/p", {name: raw}), cls), var.field) == value
    # Set but empty means the default, as unset does.
    assert getattr(group(build_settings("/p", {name: ""}), cls), var.field) \
        == defaults(cls)[var.field]


def test_a_malformed_systemd_number_keeps_the_default_and_a_bad_setting_fails() -> None:
    settings = build_settings("/p", {"WATCHDOG_USEC": "soon", "WATCHDOG_PID": "-1"})
    assert settings.watchdog_usec == 0 and settings.watchdog_pid is None
    with pytest.raises(ValueError):
        build_settings("/p", {"LLAMON_PLAYGROUND_KEEPALIVE": "often"})
    with pytest.raises(ValueError, match="fast, plain"):
        build_settings("/p", {"LLAMON_PLAYGROUND_FRONT_TRANSPORT": "quick"})


def test_the_front_group_keeps_the_token_out_of_repr_and_away_from_the_host() -> None:
    settings = build_settings("/p", {"LLAMON_PLAYGROUND_TOKEN": "tok-0123456789abcdef"})
    assert settings.front.token == "tok-0123456789abcdef"
    assert "tok-0123456789abcdef" not in repr(settings)
    assert {var.name for var in FRONT_ENV + SYSTEMD_ENV} <= set(DAEMON_ONLY_ENV)
    assert not {var.name for var in DAEMON_ENV} & set(DAEMON_ONLY_ENV)


def test_every_variable_is_documented() -> None:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    text = "\n".join(path.read_text(encoding="utf-8") for path in docs if path.exists())
    for _, table in TABLES:
        for var in table:
            assert f"`{var.name}`" in text, f"{var.name} is not in README.md or docs/"
