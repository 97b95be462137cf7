"""What a Host generation starts with: its port and the environment handed to the child.

The child gets the daemon's environment minus what belongs to the daemon alone, plus its
own generation's values: the port, a fresh capture token (only ever here, never on the
wire), the capture socket, and a marker a next daemon uses to recognise it as ours.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from llamon_playground.host_manager.capture import ENV_SOCKET, ENV_TOKEN

ENV_MARKER = "LLAMON_PLAYGROUND_HOST"
ENV_TREE = "LLAMON_PLAYGROUND_HOST_TREE"  # this project's, in every descendant (orphans.py)
# Never handed to the Host: the daemon's own service manager (socket activation, notify,
# watchdog) and capture values the daemon may itself have inherited.
DAEMON_ONLY_PREFIXES = ("LISTEN_", "WATCHDOG_")
DAEMON_ONLY = frozenset({"NOTIFY_SOCKET", ENV_TOKEN, ENV_SOCKET})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def local_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def marker(generation: int) -> str:
    """This daemon's name for a generation: a process carrying it is one we started."""
    return f"{os.getpid()}:{generation}"


def child_env(base_env: Mapping[str, str], *, generation: int, port: int, token: str,
              capture_socket: str, tree: str | None = None) -> dict[str, str]:
    """A new mapping; `base_env` (the daemon's own environment) is left untouched. `tree`
    marks every descendant as this project's (see orphans.py)."""
    env = {k: v for k, v in base_env.items()
           if k not in DAEMON_ONLY and not k.startswith(DAEMON_ONLY_PREFIXES)}
    env.update({"PYTHONUNBUFFERED": "1", "LLAMON_HOST_PORT": str(port),
                "LLAMON_HOST_URL": local_url(port),
                ENV_TOKEN: token, ENV_SOCKET: capture_socket,
                ENV_MARKER: marker(generation)})
    if tree is not None:
        env[ENV_TREE] = tree
    return env
