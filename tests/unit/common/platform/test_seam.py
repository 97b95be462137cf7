"""The platform seam (common/platform/): each side on its own, which side is chosen, and a
product that imports and answers `--help` where the Linux-only calls do not exist."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import subprocess
import sys
import textwrap

import pytest

from llamon_playground.common.platform import (
    ENV_FORCE_PORTABLE,
    LINUX,
    PORTABLE,
    choose,
    refusal,
    unix_seqpacket,
)
from llamon_playground.common.platform.linux import LinuxPlatform
from llamon_playground.common.platform.portable import (
    XUCRED,
    PortablePlatform,
    uid_from_xucred,
)

on_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def test_linux_side_is_the_default_on_linux() -> None:
    assert choose({}, "linux").name == LINUX
    assert choose({ENV_FORCE_PORTABLE: "0"}, "linux").name == LINUX
    if sys.platform.startswith("linux"):
        unforced = {k: v for k, v in os.environ.items() if k != ENV_FORCE_PORTABLE}
        assert choose(unforced, sys.platform).name == LINUX


def test_portable_side_on_macos_and_when_forced() -> None:
    assert choose({}, "darwin").name == PORTABLE
    assert choose({ENV_FORCE_PORTABLE: "1"}, "linux").name == PORTABLE
    assert choose({ENV_FORCE_PORTABLE: "true"}, "linux").name == PORTABLE


def test_windows_is_refused_in_one_line() -> None:
    line = refusal("win32")
    assert line is not None and "WSL2" in line and "\n" not in line
    assert refusal("linux") is None and refusal("darwin") is None


def test_entry_point_refuses_windows(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from llamon_playground.cli import entry

    monkeypatch.setattr(sys, "platform", "win32")
    assert entry.main(["up"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "WSL2" in err


def _exit_seen(side: LinuxPlatform | PortablePlatform, code: int) -> tuple[bool, int]:
    """Spawn a child that exits with `code`; whether the side's watch fired, and the status."""
    async def main() -> tuple[bool, int]:
        seen = asyncio.Event()
        popen = subprocess.Popen([sys.executable, "-c", f"import sys; sys.exit({code})"])
        status = side.child_status(popen)
        unwatch = side.watch_exit(popen.pid, seen.set)
        if unwatch is not None:
            await asyncio.wait_for(seen.wait(), 30)
        result = await asyncio.wait_for(status(), 30)
        return unwatch is not None, result

    return asyncio.run(main())


@on_linux
def test_linux_side_sees_exit_and_peer() -> None:
    side = LinuxPlatform()
    watched, status = _exit_seen(side, 3)
    assert watched and status == 3
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert side.peer_uid(a) == os.getuid()
    assert side.die_with_parent() is not None
    assert unix_seqpacket()  # the hand-over and the warm parent's control socket


def test_portable_side_sees_exit_and_peer() -> None:
    side = PortablePlatform()
    watched, status = _exit_seen(side, 5)
    assert status == 5
    assert watched == side.sees_other_exits  # kqueue where it exists, else the waiter
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert side.peer_uid(a) == os.getuid()
    assert side.die_with_parent() is None  # the lifeline instead


def test_portable_side_reads_macos_credentials() -> None:
    raw = XUCRED.pack(0, 501, 1, *([20] + [0] * 15))
    assert uid_from_xucred(raw) == 501
    with pytest.raises(ValueError):
        uid_from_xucred(XUCRED.pack(7, 501, 0, *([0] * 16)))
    assert struct.calcsize("IIh16I") == XUCRED.size == 76  # sizeof(struct xucred) on macOS


# Before anything of ours loads: the calls macOS lacks are made to be missing.
WITHOUT_LINUX = textwrap.dedent("""
    import ctypes, os, socket, sys
    del os.pidfd_open
    del socket.SO_PEERCRED
    class NoPrctl(ctypes.CDLL):
        def __getattr__(self, name):
            if name == "prctl":
                raise AttributeError(name)
            return super().__getattr__(name)
    ctypes.CDLL = NoPrctl
""")


def test_product_imports_and_helps_without_linux_only_calls() -> None:
    script = WITHOUT_LINUX + textwrap.dedent("""
        import importlib, pkgutil, runpy
        import llamon_playground
        skip = ("llamon_playground.examples", "llamon_playground.host_manager.spawn.preloader",
                "llamon_playground.__main__")
        for info in pkgutil.walk_packages(llamon_playground.__path__, "llamon_playground."):
            if not info.name.startswith(skip):
                importlib.import_module(info.name)
        sys.argv = ["llamon-playground", "--help"]
        runpy.run_module("llamon_playground", run_name="__main__")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, ENV_FORCE_PORTABLE: ""}, check=False)
    assert done.returncode == 0, done.stderr
    assert "usage: llamon-playground" in done.stdout
