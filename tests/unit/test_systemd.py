"""The systemd units: `systemd-analyze verify` says nothing, and they do what
docs/operations.md says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from llamon_playground.common.config import Settings

UNITS = Path(__file__).resolve().parents[2] / "systemd"
DAEMON = UNITS / "llamon-playground-daemon@.service"
FRONT = UNITS / "llamon-playground-front@.service"


def directives(path: Path) -> dict[str, dict[str, list[str]]]:
    """section -> key -> values, in order (systemd keys may repeat)."""
    units: dict[str, dict[str, list[str]]] = {}
    section: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = units.setdefault(line[1:-1], {})
        elif line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            section.setdefault(key.strip(), []).append(value.strip())
    return units


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit[section][key]
    assert len(values) == 1, (section, key, values)
    return values[0]


def seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(s|min)?", value)
    assert match, value
    return int(match[1]) * (60 if match[2] == "min" else 1)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed")
@pytest.mark.parametrize("mode", ["system", "user"])
def test_units_verify_without_a_word(tmp_path: Path, mode: str) -> None:
    for unit in (DAEMON, FRONT):
        shutil.copy(unit, tmp_path)
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    flags = ["--user"] if mode == "user" else []
    result = subprocess.run(
        ["systemd-analyze", *flags, "verify", *(str(tmp_path / u.name) for u in (DAEMON, FRONT))],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}, check=False)
    # verify exits 0 even on a bad directive; only silence means it found nothing.
    assert result.stdout + result.stderr == "" and result.returncode == 0


def test_units_are_templates_per_project() -> None:
    for unit in (DAEMON, FRONT):
        exec_start = one(directives(unit), "Service", "ExecStart")
        assert unit.name.endswith("@.service") and " %f" in exec_start


def test_daemon_unit_is_a_supervised_notify_service() -> None:
    unit = directives(DAEMON)
    service = {k: v[0] for k, v in unit["Service"].items() if len(v) == 1}
    assert service["Type"] == "notify" and service["NotifyAccess"] == "main"
    assert seconds(service["WatchdogSec"]) > 0
    assert service["KillMode"] == "mixed" and service["UMask"] == "0077"
    assert service["Restart"] == "on-failure"
    assert int(one(unit, "Unit", "StartLimitBurst")) > 0  # bounded restarts
    assert seconds(one(unit, "Unit", "StartLimitIntervalSec")) > 0
    # Stopping must outlast the daemon's own bound on stopping the Host.
    grace = Settings(project_dir=Path("/p"), runtime_base=Path("/r")).host_stop_grace
    assert seconds(service["TimeoutStopSec"]) >= 3 * grace + 10
    assert "daemon %f" in service["ExecStart"]


def test_front_unit_needs_the_daemon_and_is_sandboxed() -> None:
    unit = directives(FRONT)
    daemon = "llamon-playground-daemon@%i.service"
    assert one(unit, "Unit", "Requires") == daemon and one(unit, "Unit", "After") == daemon
    service = {k: v[0] for k, v in unit["Service"].items() if len(v) == 1}
    assert service["NoNewPrivileges"] == "yes" and service["PrivateTmp"] == "yes"
    assert service["ProtectSystem"] in ("strict", "full")
    assert "front %f" in service["ExecStart"]
    # Both units agree on where the socket is.
    runtime = "LLAMON_PLAYGROUND_RUNTIME_DIR=%t/llamon-playground"
    assert runtime in unit["Service"]["Environment"]
    assert runtime in directives(DAEMON)["Service"]["Environment"]
