"""The warm parent of a project's Host generations (a zygote), run as a script by path.

The daemon starts it with the project's own interpreter:

    <python> preloader.py <control-fd> <platform>

`<platform>` is the side of the platform seam the daemon runs (`linux`: this parent and its
generations die with their parent through PR_SET_PDEATHSIG; `portable`: no such call, so
when the control socket reads EOF, the daemon gone however it went, this parent SIGKILLs
each generation's process group before it exits).

It imports only the standard library and the third-party modules it is asked to preload
(never the project's own code), then waits on the control socket (one end of a socketpair
the daemon kept the other end of: nobody else can ask it for anything) for requests:

- `{"op": "preload", "modules": [...]}`: import them; answers `{"op": "preloaded", ...}`
  with the files now loaded (the daemon restarts this parent when one of them changes).
- `{"op": "retire"}`: a fresh parent replaces this one; exit once the last generation
  forked here is gone.
- `{"op": "fork", ...}` with two descriptors (the generation's stdout and stderr): fork a
  generation; answers `{"op": "forked", "pid": N}`. The child starts its own session, dies
  with this parent, takes the generation's environment, working directory and argv, and
  runs the Host entry point, importing the project's code fresh from disk.

Each generation's exit is reported as `{"op": "exited", "pid": N, "code": C}` (the daemon
sees the exit itself through a pidfd or kqueue where it can, but only a parent can read the
status; on the portable side on Linux this report is the only sign of the exit).

This file is run by a project interpreter that need not have llamon Playground installed:
it imports nothing but the standard library.
"""

import ctypes
import gc
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

# Run by path, sys.path[0] is this folder: its modules are not the Host's to import.
del sys.path[0]

PR_SET_PDEATHSIG = 1
MAX_MESSAGE = 1 << 20
# When a generation writes the modules it imported from outside the project (seconds after
# its start): early for a quick list, later again once lazy imports of the first requests
# have happened.
REPORT_AFTER = (1.0, 5.0, 30.0)


def _die_with_parent(platform: str) -> None:
    if platform != "linux":
        return  # no death signal here: the control socket's EOF does the job (serve)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _end_generations(children: set[int]) -> None:
    """The daemon is gone: its lifeline to us, the control socket, read EOF. Nothing else
    ends the generations where no death signal exists."""
    for pid in children:
        # The process itself too: a generation forked a moment ago may not have its own
        # group yet (its setsid comes first thing, but after our fork returned).
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode())


def _preload(names: list[str], failed: dict[str, str]) -> None:
    for name in names:
        if name in sys.modules or name in failed:
            continue
        try:
            __import__(name)
        except BaseException as exc:  # noqa: BLE001 (one that cannot load alone is left to the Host)
            failed[name] = f"{type(exc).__name__}: {exc}"


def _loaded_files() -> list[str]:
    files: list[str] = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            files.append(path)
    return sorted(set(files))


def _reap(sock: socket.socket, children: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        _send(sock, {"op": "exited", "pid": pid, "code": os.waitstatus_to_exitcode(status)})


Job = tuple[dict[str, Any], list[int], socket.socket]


def serve(control: socket.socket) -> Job | None:
    """The parent's loop; returns only in a forked child, with the generation's request."""
    wake_r, wake_w = socket.socketpair()
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector through wake_w
    failed: dict[str, str] = {}
    children: set[int] = set()
    retiring = False
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ, "control")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    _send(control, {"op": "started", "pid": os.getpid(), "prefix": sys.prefix,
                    "executable": sys.executable, "path": [p for p in sys.path if p]})
    while not (retiring and not children):
        for key, _ in selector.select():
            if key.data == "wake":
                wake_r.recv(4096)
                _reap(control, children)
                continue
            data, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 2)
            if not data:
                _end_generations(children)
                return None  # the daemon is gone
            request = json.loads(data)
            if request["op"] == "retire":
                # Replaced by a fresh parent: stay until the last generation is gone (its
                # stop may take its grace period; our exit would SIGKILL it) and report it.
                retiring = True
                continue
            if request["op"] == "preload":
                _preload(request["modules"], failed)
                _send(control, {"op": "preloaded", "files": _loaded_files(),
                                "failed": sorted(failed)})
                continue
            # A fork: flush first so nothing buffered here is written twice. Frozen, the
            # preloaded objects are left out of the child's collections: a collection
            # would otherwise write to every one of them and copy much of the heap.
            sys.stdout.flush()
            sys.stderr.flush()
            gc.freeze()
            pid = os.fork()
            if pid == 0:
                selector.close()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                wake_r.close()
                wake_w.close()
                return request, fds, control
            children.add(pid)
            for fd in fds:
                os.close(fd)
            _send(control, {"op": "forked", "pid": pid})
    return None


def _become_generation(request: dict[str, Any], fds: list[int], control: socket.socket,
                       parent: int, platform: str) -> None:
    os.setsid()  # its own session and process group, like a cold spawn
    _die_with_parent(platform)  # the parent dies with the daemon; a generation dies with the parent
    if os.getppid() != parent:
        os._exit(1)
    control.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in (devnull, *fds):
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])  # the token, port and generation: this child only
    sys.path.insert(0, request["cwd"])  # what `python -m` and a script put first


def _report_modules(project: str, path: str) -> None:
    """Write the modules this generation imported from outside the project folder."""
    stdlib = sys.stdlib_module_names
    prefix = os.path.join(os.path.realpath(project), "")
    for delay in REPORT_AFTER:
        time.sleep(delay)
        names: list[str] = []
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if (not isinstance(file, str) or name == "__main__"
                    or name.partition(".")[0] in stdlib
                    or os.path.realpath(file).startswith(prefix)):
                continue
            names.append(name)
        try:
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(names, fh)
            os.replace(tmp, path)
        except OSError:
            return


def run_generation(request: dict[str, Any], fds: list[int], control: socket.socket,
                   parent: int, platform: str) -> None:
    _become_generation(request, fds, control, parent, platform)
    if request.get("report"):
        threading.Thread(target=_report_modules, args=(request["cwd"], request["report"]),
                         daemon=True, name="llamon-module-report").start()
    import runpy
    sys.argv = [request["argv0"], *request["args"]]
    if request["kind"] == "module":
        runpy.run_module(request["target"], run_name="__main__", alter_sys=True)
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(request["target"]))
        runpy.run_path(request["target"], run_name="__main__")


def main() -> None:
    platform = sys.argv[2] if len(sys.argv) > 2 else "linux"
    _die_with_parent(platform)  # the daemon's SIGKILL takes this parent along
    control = socket.socket(fileno=int(sys.argv[1]))
    parent = os.getpid()
    job = serve(control)
    if job is None:
        return
    request, fds, control = job
    try:
        run_generation(request, fds, control, parent, platform)
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 (the Host's log gets the traceback, the parent exit 1)
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
