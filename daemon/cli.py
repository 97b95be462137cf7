"""`llamon-playground`: run the daemon and the front, and ask a daemon how it is.

Exit codes: 0 ok, 1 error, 2 usage, 3 daemon not running, 4 conflict (another daemon).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import orjson

from .config import build_settings
from .errors import AlreadyRunning

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_CONFLICT = 0, 1, 2, 3, 4
BUNDLED_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "echo_agent"


def default_project() -> Path:
    """The current folder when it is a llamon project, else the bundled example."""
    here = Path.cwd()
    try:
        doc = tomllib.loads((here / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return BUNDLED_EXAMPLE
    return here if "llamon" in doc.get("tool", {}) else BUNDLED_EXAMPLE


def _project(arg: str | None) -> Path:
    path = Path(arg) if arg else default_project()
    if not path.is_dir():
        raise SystemExit(f"llamon-playground: {path} is not a folder")
    return path


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def cmd_daemon(args: argparse.Namespace) -> int:
    from .app import serve
    settings = build_settings(_project(args.project))
    try:
        asyncio.run(serve(settings, dict(os.environ)))
    except AlreadyRunning as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_CONFLICT
    return EXIT_OK


def cmd_front(args: argparse.Namespace) -> int:
    from api.app import run_front
    from api.guard import NonLoopbackBind
    settings = build_settings(_project(args.project))
    try:
        asyncio.run(run_front(settings, args.host, args.port))
    except NonLoopbackBind as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_up(args: argparse.Namespace) -> int:
    from api.app import run_front
    from api.guard import NonLoopbackBind, check_bind_address

    from .client import DaemonNotRunning, health, spawn_daemon, wait_healthy
    settings = build_settings(_project(args.project))
    try:
        check_bind_address(args.host)
    except NonLoopbackBind as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> None:
        try:
            info = await health(settings)
            print(f"attached to the running daemon (pid {info.get('pid')})", flush=True)
        except DaemonNotRunning:
            proc = spawn_daemon(settings)
            info = await wait_healthy(settings, proc)
            print(f"started the daemon (pid {info.get('pid')}); log: "
                  f"{settings.runtime_dir / 'daemon.log'}", flush=True)
        await run_front(settings, args.host, args.port)

    try:
        asyncio.run(main())
    except DaemonNotRunning as exc:
        print(f"llamon-playground: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from .client import DaemonNotRunning, health
    settings = build_settings(_project(args.project))
    try:
        info = asyncio.run(health(settings))
    except DaemonNotRunning:
        info = {"status": "not_running", "project": str(settings.project_dir)}
        _print_status(info, args.json)
        return EXIT_NOT_RUNNING
    _print_status(info, args.json)
    return EXIT_OK


def _print_status(info: dict[str, Any], as_json: bool) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llamon-playground",
                                     description="llamon Playground daemon and front")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="start or attach to the daemon, run the front in the foreground")
    up.add_argument("project", nargs="?")
    up.add_argument("--port", type=int, default=8765)
    up.add_argument("--host", default="127.0.0.1")
    up.set_defaults(func=cmd_up)

    daemon = sub.add_parser("daemon", help="run the daemon in the foreground")
    daemon.add_argument("project", nargs="?")
    daemon.set_defaults(func=cmd_daemon)

    front = sub.add_parser("front", help="run only the front (the daemon must be running)")
    front.add_argument("project", nargs="?")
    front.add_argument("--port", type=int, default=8765)
    front.add_argument("--host", default="127.0.0.1")
    front.set_defaults(func=cmd_front)

    status = sub.add_parser("status", help="daemon, Host and active run of a project")
    status.add_argument("project", nargs="?")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
