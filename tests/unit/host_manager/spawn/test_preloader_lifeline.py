"""The warm parent on the portable side (no PDEATHSIG): when its control socket, the
daemon's lifeline to it, reads EOF, it ends its generations and exits. Real processes: the
parent is `preloader.py` run by path, its generation a sleeping script."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from llamon_playground.harness.waiting import wait_for
from llamon_playground.host_manager.spawn.parent import PRELOADER


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _reply(sock: socket.socket) -> dict[str, object]:
    answer = json.loads(sock.recv(1 << 20))
    assert isinstance(answer, dict)
    return answer


def test_portable_parent_ends_its_generations_when_the_daemon_goes(tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    script.write_text("import time\ntime.sleep(300)\n")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    parent = subprocess.Popen([sys.executable, str(PRELOADER), str(theirs.fileno()), "portable"],
                              pass_fds=(theirs.fileno(),), start_new_session=True)
    theirs.close()
    generation = None
    try:
        ours.settimeout(30)
        assert _reply(ours)["op"] == "started"
        out_r, out_w = os.pipe()
        request = {"op": "fork", "cwd": str(tmp_path), "env": {"PATH": os.defpath},
                   "kind": "script", "target": str(script), "args": [], "argv0": str(script),
                   "report": None}
        socket.send_fds(ours, [json.dumps(request).encode()], [out_w, out_w])
        os.close(out_w)
        generation = int(str(_reply(ours)["pid"]))
        assert not _gone(generation)
        ours.close()  # the daemon is gone, however it went
        parent.wait(30)
        wait_for(lambda: _gone(generation), 30, "the generation ended by its parent")
        os.close(out_r)
    finally:
        ours.close()
        if parent.poll() is None:
            os.killpg(parent.pid, 9)
            parent.wait()
        if generation is not None and not _gone(generation):
            os.killpg(generation, 9)
