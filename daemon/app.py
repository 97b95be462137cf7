"""Composition root of the daemon process: wires the services and serves the Unix socket."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from contextlib import suppress

import aiohttp
from aiohttp import web

from host_manager.errors import HostUnavailable
from host_manager.supervisor import HostConfig, HostSupervisor

from .blobs import BlobStore
from .config import Settings
from .errors import ProjectError, UnsupportedDatabaseVersion
from .event_log import EventHub
from .history import interrupt_leftover_runs
from .http import add_routes, errors_middleware
from .project_config import load_project_config
from .run_executor import RunExecutor
from .run_state import Reason
from .runs import RunManager
from .runtime_dir import acquire_lock, remove_discovery, write_discovery
from .services import SERVICES, Services
from .store import Store

log = logging.getLogger(__name__)


def host_command(settings: Settings) -> list[str]:
    try:
        return load_project_config(settings.project_dir).resolved_host_command()
    except ProjectError as exc:
        raise HostUnavailable(f"cannot read the project's host command: {exc}",
                              reason="project_validation") from exc


async def build_services(settings: Settings, environ: dict[str, str]) -> Services:
    hub = EventHub(settings.event_ring_size)
    store = Store(settings, on_commit=hub.publish)
    blobs = BlobStore(settings.files_dir)
    host = HostSupervisor(HostConfig(
        project_dir=settings.project_dir, command=lambda: host_command(settings),
        base_env=environ, log_path=settings.host_log_path,
        start_timeout=settings.host_start_timeout, stop_grace=settings.host_stop_grace))
    runs = RunManager(store, blobs, hub)
    # No total timeout: run streams last as long as the Host streams.
    http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
    runs.executor = RunExecutor(settings.project_dir, store, blobs, host, http, runs.release)
    return Services(settings, store, blobs, hub, host, runs, http)


async def recover(services: Services) -> None:
    """Boot recovery. Only touches a database that already exists (lazy creation)."""
    settings = services.settings
    if not settings.db_path.exists():
        return
    try:
        await services.store.open()
    except UnsupportedDatabaseVersion as exc:
        log.warning("%s", exc)
        return
    leftover = await interrupt_leftover_runs(services.store, Reason.DAEMON_RESTARTED)
    if leftover:
        log.warning("marked %d run(s) left active by a previous daemon interrupted", len(leftover))
    services.blobs.remove_temp_files()


async def shutdown(services: Services) -> None:
    await services.runs.shutdown()
    await services.host.close()
    await services.store.close()
    services.hub.close_all()
    await services.http.close()


def make_app(services: Services) -> web.Application:
    app = web.Application(middlewares=[errors_middleware],
                          client_max_size=services.settings.max_request_bytes)
    app[SERVICES] = services
    add_routes(app)
    return app


async def serve(settings: Settings, environ: dict[str, str]) -> None:
    """Run the daemon until SIGTERM/SIGINT; then stop cleanly."""
    lock = acquire_lock(settings)
    try:
        services = await build_services(settings, environ)
        try:
            await recover(services)
            app = make_app(services)
            runner = web.AppRunner(app, handle_signals=False, access_log=None,
                                   shutdown_timeout=1.0)
            await runner.setup()
            with suppress(FileNotFoundError):
                settings.socket_path.unlink()  # stale socket of a dead daemon (we hold the lock)
            old_umask = os.umask(0o077)
            try:
                site = web.UnixSite(runner, str(settings.socket_path))
                await site.start()
            finally:
                os.umask(old_umask)
            os.chmod(settings.socket_path, 0o600)
            write_discovery(settings)
            log.info("daemon for %s listening on %s", settings.project_dir, settings.socket_path)
            try:
                await _wait_for_stop_signal()
            finally:
                log.info("daemon stopping")
                await shutdown(services)
                await runner.cleanup()
        finally:
            if not services.http.closed:
                await services.http.close()
    finally:
        remove_discovery(settings)
        lock.release()


async def _wait_for_stop_signal() -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
