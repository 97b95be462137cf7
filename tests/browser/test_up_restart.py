"""`up` in front of an open page: its daemon is killed, `up` starts it again by itself, and
the page, left alone, comes back live on the same front and port (while the daemon is away,
the command it advises names the project). The run it was streaming ends honestly (the new daemon's boot recovery: interrupted, daemon_restarted), and a run
it starts afterwards completes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.browser.helpers import expect, finished, slow_run_streaming
from tests.support.procs import (
    REPO,
    Proc,
    Stack,
    copy_example,
    short_tmpdir,
    stack_for,
    wait_for,
)


@pytest.fixture
def up_stack(tmp_path: Path) -> Iterator[Stack]:
    runtime = short_tmpdir("lpu")
    try:
        with stack_for(copy_example(tmp_path), runtime) as stack:
            yield stack
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def stop(stack: Stack) -> None:
    subprocess.run([sys.executable, "-m", "llamon_playground", "stop", str(stack.project)],
                   env=stack.env, cwd=REPO, capture_output=True, timeout=90, check=False)


@contextlib.contextmanager
def held_lock(stack: Stack) -> Iterator[None]:
    """The project's daemon lock, taken as soon as it is free, then let go."""
    fd = os.open(stack.settings.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def take() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    try:
        wait_for(take, 10, "the dead daemon's lock")
        yield
    finally:
        os.close(fd)


def test_up_brings_a_killed_daemon_back_under_an_open_page(browser: Any,
                                                          up_stack: Stack) -> None:
    stack = up_stack
    up = Proc([sys.executable, "-m", "llamon_playground", "up", str(stack.project), "--port",
               "0"], stack.env, stack.runtime_base / "up.log", REPO)
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        context.set_default_timeout(20_000)
        link = wait_for(lambda: next((line.split("open in a browser: ")[1].strip()
                                      for line in up.output().splitlines()
                                      if "open in a browser: " in line), None),
                        60, "the token URL from `up`")
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(link)
        connection = page.locator("#connection")
        expect(connection).to_have_attribute("data-state", "live")
        view, _ = slow_run_streaming(page, 2)
        first = int(orjson.loads(stack.settings.discovery_path.read_bytes())["pid"])
        os.kill(first, signal.SIGKILL)
        # The project's lock, taken the moment the daemon lets go of it, holds `up`'s restart
        # back a while (it waits for the lock), so the page's outage can be seen; `up` is the
        # front, so it keeps serving the page meanwhile.
        with held_lock(stack):
            expect(connection).to_have_attribute("data-state", "lost")
            # What the page tells a person to run names the project.
            page.get_by_label("Message").fill("while the daemon is away")
            page.get_by_label("Message").press("Control+Enter")
            expect(page.locator("#notice")).to_contain_text(
                f"start it with `llamon-playground up {stack.project}`")
        # `up` starts it again and says so; nobody touches the page.
        wait_for(lambda: "started the daemon again" in up.output(), 30, "`up`'s restart")
        assert f"the daemon (pid {first}) died (killed by SIGKILL)" in up.output()
        expect(connection).to_have_attribute("data-state", "live")
        # The run it was streaming ends: the new daemon's boot recovery interrupts it.
        expect(view).to_have_attribute("data-status", "interrupted")
        expect(view.locator(".facts .reason")).to_have_text("daemon_restarted")
        # And a run started now, from the same page on the same front, completes.
        finished(page, "stream after the restart")
        assert page.url.startswith(link.split("?")[0]) and not errors, errors
        assert up.popen.poll() is None
    finally:
        context.close()
        stop(stack)
        try:
            up.wait(30)
        finally:
            up.stop()
