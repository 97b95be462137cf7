"""`llamon-playground`: run the daemon and the front, ask a daemon how it is, drive it.

Exit codes: 0 ok, 1 error, 2 usage, 3 daemon not running, 4 conflict (another daemon, an
active run). The commands that drive a running daemon live in terminal/control.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from llamon_playground.cli.bundled_example import PROJECT_HELP, bundled_example
from llamon_playground.cli.errors import EXIT_CONFLICT, EXIT_ERROR, EXIT_NOT_RUNNING, EXIT_OK
from llamon_playground.common.config import (
    DAEMON_ONLY_ENV,
    Settings,
    build_settings,
    log_files,
    log_json,
)
from llamon_playground.common.heap import freeze_startup_heap, keep_large_buffers_apart
from llamon_playground.common.logging_setup import setup_logging
from llamon_playground.common.runtime_dir import AlreadyRunning

if TYPE_CHECKING:  # the front's modules load only for the commands that run a front
    from llamon_playground.api.app import FrontOptions

def default_project() -> Path:
    """The current folder when it is a llamon project, else the bundled example."""
    here = Path.cwd()
    try:
        doc = tomllib.loads((here / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return bundled_example()
    return here if "llamon" in doc.get("tool", {}) else bundled_example()


def _project(arg: str | None) -> Path:
    path = Path(arg) if arg else default_project()
    if not path.is_dir():
        raise SystemExit(f"llamon-playground: {path} is not a folder")
    return path


def _settings(arg: str | None) -> Settings:
    return build_settings(_project(arg))


def cmd_daemon(args: argparse.Namespace) -> int:
    from llamon_playground.common.runtime_dir import RuntimeDirTooLong
    from llamon_playground.daemon.app import serve
    from llamon_playground.daemon.errors import BootFailed
    settings = build_settings(_project(args.project))
    # The Host inherits the daemon's environment: not the front's token, not systemd's.
    environ = {k: v for k, v in os.environ.items() if k not in DAEMON_ONLY_ENV}
    keep_large_buffers_apart()
    freeze_startup_heap()
    try:
        asyncio.run(serve(settings, environ))
    except AlreadyRunning as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_CONFLICT
    except (PermissionError, RuntimeDirTooLong, BootFailed) as exc:  # not ours, too deep, ...
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _front_options(args: argparse.Namespace) -> FrontOptions:
    from llamon_playground.api.app import FrontOptions
    return FrontOptions(host=args.host, port=args.port, auth=not args.no_auth)


def cmd_front(args: argparse.Namespace) -> int:
    from llamon_playground.cli.terminal.up import serve_front
    return serve_front(_settings(args.project), _front_options(args))


def cmd_up(args: argparse.Namespace) -> int:
    from llamon_playground.cli.terminal.up import cmd_up as up
    return up(args, _settings(args.project))


def cmd_status(args: argparse.Namespace) -> int:
    from llamon_playground.cli.client import DaemonNotRunning, health
    settings = build_settings(_project(args.project))
    try:
        info = dict(asyncio.run(health(settings)))
    except DaemonNotRunning:
        _print_status({"status": "not_running", "project": str(settings.project_dir)}, args.json)
        return EXIT_NOT_RUNNING
    _print_status(info, args.json)
    return EXIT_OK


def _print_status(info: dict[str, Any], as_json: bool) -> None:
    from llamon_playground.cli.terminal.show import print_warnings
    if as_json:
        print(orjson.dumps(info, option=orjson.OPT_SORT_KEYS).decode())
        return
    print(f"project:    {info.get('project')}")
    if info.get("status") == "not_running":
        print("daemon:     not running")
        return
    host = info.get("host") or {}
    print(f"daemon:     running (pid {info.get('pid')}, version {info.get('version')})")
    print(f"database:   {info.get('database')}")
    print(f"host:       {host.get('state')} (generation {host.get('generation')}, "
          f"url {host.get('url')})")
    print(f"active run: {info.get('active_run_id') or '-'}")
    tracing = info.get("tracing") or {}
    if tracing.get("enabled"):
        print(f"traces:     to {tracing.get('endpoint')} ({tracing.get('protocol')}): "
              f"{tracing.get('runs_exported')} runs, {tracing.get('spans_exported')} spans "
              f"sent, {tracing.get('spans_dropped')} dropped, "
              f"{tracing.get('spans_pending')} waiting")
    elif tracing.get("problem"):
        print(f"traces:     {tracing['problem']}")
    print_warnings(host.get("warnings") or [])


def _project_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", help=PROJECT_HELP)


def _front_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8765,
                        help="the front's TCP port (default 8765; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the loopback address to bind (127.0.0.1, ::1 or localhost)")
    parser.add_argument("--no-auth", action="store_true",
                        help="no token (scripted local use only; prints a warning)")


class _Version(argparse.Action):
    """`--version`, the installed version looked up only when asked: every long-lived
    process (daemon, `up`, front) parses its command line, and none needs it."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from llamon_playground.cli.terminal.more import version
        print(f"{parser.prog} {version()}")
        parser.exit()


# The commands that run for days. Their process parses a command line with only the commands
# below (the same arguments and help): the modules of the other commands, the client's
# among them, would stay loaded as long as it serves (docs/benchmarks.md, `up_pss_idle`).
LONG_LIVED = frozenset({"up", "daemon", "front"})


def build_parser(*, all_commands: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; `all_commands=False`: only `up`, `daemon`, `front` and
    `status`, with none of the other commands' modules imported."""
    parser = argparse.ArgumentParser(prog="llamon-playground",
                                     description="llamon Playground daemon and front")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--log-json", action="store_true",
                        help="log one JSON object per line "
                             "(also LLAMON_PLAYGROUND_LOG_FORMAT=json)")
    parser.add_argument("--log-file", type=Path, metavar="PATH",
                        help="log to PATH instead of stderr, rotated by size "
                             "(LLAMON_PLAYGROUND_LOG_FILE_BYTES, _BACKUPS)")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start or attach to the daemon, run the front in the foreground")
    _project_arg(up)
    _front_args(up)
    up.add_argument("--detach", action="store_true",
                    help="return once the front serves, leaving the front and the daemon "
                         "running (`llamon-playground stop` stops both)")
    up.add_argument("--allow-empty", action="store_true",
                    help="serve a named folder even though it has no pyproject.toml")
    up.set_defaults(func=cmd_up)

    daemon = sub.add_parser("daemon", help="run the daemon in the foreground")
    _project_arg(daemon)
    daemon.set_defaults(func=cmd_daemon)

    front = sub.add_parser("front", help="run only the front (the daemon must be running)")
    _project_arg(front)
    _front_args(front)
    front.set_defaults(func=cmd_front)

    status = sub.add_parser("status", help="daemon, Host and active run of a project")
    _project_arg(status)
    status.add_argument("--json", action="store_true", help="print the /health document")
    status.set_defaults(func=cmd_status)
    if all_commands:
        _add_driving_commands(sub)
    return parser


def _add_driving_commands(sub: Any) -> None:
    from llamon_playground.cli.terminal.commands import add_control_commands, add_suite_commands
    from llamon_playground.cli.terminal.inspect_commands import add_inspect_commands
    from llamon_playground.cli.terminal.more import add_more_commands
    from llamon_playground.cli.terminal.search import add_search_command
    from llamon_playground.cli.terminal.sessions import add_session_commands
    from llamon_playground.cli.terminal.traces import add_trace_commands
    add_control_commands(sub, _settings)
    add_more_commands(sub, _settings)
    add_search_command(sub, _settings)
    add_suite_commands(sub, _settings)
    add_session_commands(sub, _settings)
    add_inspect_commands(sub, _settings)
    add_trace_commands(sub, _settings)


def command_word(argv: list[str]) -> str | None:
    """The command `argv` names: its first word that is neither an option nor the path
    `--log-file` takes (the only global option with a value; argparse takes `--log-f` for it
    too)."""
    words = iter(argv)
    for word in words:
        if word.startswith("--log-f") and "--log-file".startswith(word):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(all_commands=command_word(words) not in LONG_LIVED)
    args = parser.parse_args(argv)
    sizes = log_files()
    setup_logging(verbose=args.verbose, json_lines=args.log_json or log_json(),
                  log_file=args.log_file, file_bytes=sizes.file_bytes,
                  file_backups=sizes.file_backups)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
