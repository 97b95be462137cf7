"""Composition root of the daemon process: wires the services and serves the Unix socket.

The only module that sees every room: each route group gets the services it needs here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.common.fd_budget import connection_cap
from llamon_playground.common.heap import freeze_late_startup
from llamon_playground.common.http_json import name_the_server
from llamon_playground.common.logging_setup import set_context_fallback
from llamon_playground.common.request_context import add_request_context
from llamon_playground.common.runtime_dir import acquire_lock, remove_discovery, write_discovery
from llamon_playground.common.stop_signal import wait_for_stop_signal
from llamon_playground.daemon.a2a.pool import HostConnections
from llamon_playground.daemon.errors import (
    BootFailed,
    HistoryPathRefused,
    ProjectError,
    UnsupportedDatabaseVersion,
)
from llamon_playground.daemon.host_setup import host_command, warm_options
from llamon_playground.daemon.http.adopt import HandoverListener, answer_once
from llamon_playground.daemon.http.capture import add_capture_routes
from llamon_playground.daemon.http.data import add_data_routes
from llamon_playground.daemon.http.edits import add_edit_routes
from llamon_playground.daemon.http.history_upkeep import add_history_routes
from llamon_playground.daemon.http.host import add_host_routes
from llamon_playground.daemon.http.introspect import add_introspect_routes
from llamon_playground.daemon.http.peercred import peer_cred_middleware
from llamon_playground.daemon.http.routes import add_routes, errors_middleware
from llamon_playground.daemon.http.search import add_search_routes
from llamon_playground.daemon.http.sse import serve_unix
from llamon_playground.daemon.http.suites import add_suite_routes
from llamon_playground.daemon.http.util import bind_on_first_use
from llamon_playground.daemon.introspect.host_checks import (
    project_warnings,
)
from llamon_playground.daemon.introspect.project_config import load_project_config
from llamon_playground.daemon.runs.executor import RunExecutor
from llamon_playground.daemon.runs.journal import RunJournal
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.runs.reconcile import IMPORTED_ENDING, reconcile_runs
from llamon_playground.daemon.runs.reload import ReloadCoordinator
from llamon_playground.daemon.runs.state import Reason
from llamon_playground.daemon.sd_notify import Notifier
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub, ProjectEvents
from llamon_playground.daemon.store.history_service import HistoryService
from llamon_playground.daemon.store.private import check_blob_path, refuse_links
from llamon_playground.daemon.store.records import EventRow
from llamon_playground.daemon.store.search.service import RunSearch
from llamon_playground.daemon.store.upkeep.compaction import Compactor
from llamon_playground.daemon.store.upkeep.trimmer import Trimmer
from llamon_playground.daemon.suites.service import SuiteService
from llamon_playground.daemon.tracing.agent import card_agent_name
from llamon_playground.daemon.tracing.service import TraceExport, tracing_health
from llamon_playground.daemon.tracing.settings import trace_settings
from llamon_playground.host_manager.crash_policy import CrashSettings
from llamon_playground.host_manager.environment import ENV_MARKER, ENV_TREE
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.lifeline import Lifeline
from llamon_playground.host_manager.orphans import reap_marked, reap_orphan, tree_id
from llamon_playground.host_manager.spawn.warm import WarmPaths, WarmSpawner
from llamon_playground.host_manager.supervisor import HostConfig, HostSupervisor
from llamon_playground.host_manager.watch.fingerprint import WatchRules, digest
from llamon_playground.host_manager.watch.watcher import ProjectWatcher, QuietPeriod

log = logging.getLogger(__name__)

# In the runtime dir: the run a clean stop could not write the ending of (boot recovery).
UNENDED_NOTE = "unended-run"


@dataclass
class Daemon:
    """What the composition root built, kept for its own lifecycle (boot recovery, serving,
    shutdown). Routes never see it: each route group is given the few services it uses."""

    settings: Settings
    store: Store
    blobs: BlobStore
    hub: EventHub
    host: HostSupervisor
    runs: RunManager
    history: HistoryService
    http: aiohttp.ClientSession
    project_events: ProjectEvents
    reload: ReloadCoordinator
    compactor: Compactor
    trimmer: Trimmer
    suites: SuiteService
    tracing: TraceExport | None  # None: no OTLP endpoint is set
    connections: HostConnections  # a run's kept-alive connections to the Host


async def build_services(settings: Settings, environ: dict[str, str]) -> Daemon:
    hub = EventHub(settings.event_ring_size)
    project_events = ProjectEvents()

    def committed(rows: list[EventRow]) -> None:
        hub.publish(rows)
        project_events.committed(rows)
        compactor.noticed(rows)
        if tracing is not None:
            tracing.committed(rows)

    store = Store(settings, on_commit=committed,
                  on_degraded=lambda error: _history_degraded(services, error))
    blobs = BlobStore(settings.files_dir, lambda: check_blob_path(settings))
    compactor = Compactor(store, settings.db_path.parent)
    try:
        project = load_project_config(settings.project_dir)
        env_file, warnings = project.env_file, project_warnings(project, settings.project_dir)
        playground = project.raw.get("playground")
        otlp = playground.get("otlp_endpoint") if isinstance(playground, dict) else None
    except ProjectError:
        env_file, warnings = ".env", []  # reported by each run's validate phase
        otlp = None
    host = HostSupervisor(HostConfig(
        project_dir=settings.project_dir, command=lambda: host_command(settings, environ),
        base_env=environ, log_path=settings.host_log_path,
        record_path=settings.host_record_path, capture_socket=str(settings.socket_path),
        rules=WatchRules(settings.project_dir, env_file),
        crash=CrashSettings(min_uptime=settings.crash_min_uptime,
                            backoff_base=settings.backoff_base, backoff_cap=settings.backoff_cap,
                            limit=settings.crash_limit, window=settings.crash_window),
        start_timeout=settings.host_start_timeout, stop_grace=settings.host_stop_grace,
        spawner=WarmSpawner(lambda: warm_options(settings), WarmPaths(
            modules=settings.runtime_dir / "host-modules.json",
            parent_log=settings.runtime_dir / "host-parent.log")),
        log_bytes=settings.limits.host_log_bytes, log_file_bytes=settings.logs.host_file_bytes,
        log_file_backups=settings.logs.host_file_backups))
    host.follow_project(env_file, warnings)
    host.add_state_listener(project_events.host_changed)
    # Everything but a run's stream (the card's name for traces, introspection): no
    # kept-alive connections, every Host generation serves on the same port, so a pooled
    # connection could reach the previous generation while it finishes its streams.
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True),
                                 timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
    tracing = TraceExport.start(trace_settings(environ, otlp), store, card_agent_name(
        http, lambda: (host.generation.number, host.generation.url)
        if host.generation is not None else None, settings.project_dir))
    journal = RunJournal(store, blobs)
    # A run's connection to the Host is kept alive for the next run, one pool per
    # generation (the pool's own listener retires it when the generation changes).
    connections = HostConnections()
    host.add_state_listener(connections.host_changed)
    executor = RunExecutor(settings.project_dir, journal, blobs, host, connections,
                           stall_timeout=settings.host_stall_timeout, limits=settings.limits,
                           trace_context=(lambda run_id: tracing.headers(run_id, runs.suite_run_id))
                           if tracing is not None else None)
    runs = RunManager(settings.project_dir, store, blobs, hub, journal, executor,
                      settings.limits)
    history = HistoryService(store, blobs, project_events, db_path=settings.db_path,
                             live=runs.live, imported=IMPORTED_ENDING, limits=settings.limits)

    def revision() -> str | None:
        gen = host.generation
        return digest(gen.fingerprint) if gen is not None else None

    suites = SuiteService(store, blobs, hub, runs, revision=revision,
                          project_dir=settings.project_dir)
    host.add_state_listener(suites.host_changed)
    services = Daemon(settings, store, blobs, hub, host, runs, history, http,
                      project_events, ReloadCoordinator(host, runs), compactor,
                      Trimmer(settings, store, history), suites, tracing, connections)
    return services


def _history_degraded(services: Daemon, error: Exception) -> None:
    """A history write failed: tell the active run's clients (the event itself is kept and
    committed once writes work again)."""
    run = services.runs.active
    if run is not None:
        services.store.append_event(run.run_id, "diagnostic", {
            "level": "warning", "code": "history_degraded",
            "message": f"history could not be written; the run goes on: {error}"})


async def recover(services: Daemon) -> None:
    """Boot recovery. Only touches a database that already exists (lazy creation)."""
    settings = services.settings
    try:
        refuse_links(settings)  # before anything looks inside .llamon
    except HistoryPathRefused as exc:
        raise BootFailed(f"in {settings.project_dir}: {exc.message}") from exc
    if not settings.db_path.exists():
        return
    try:
        await services.store.open()
    except UnsupportedDatabaseVersion as exc:
        log.warning("%s", exc)
        return
    note = settings.runtime_dir / UNENDED_NOTE
    stopped = frozenset(note.read_text().split()) if note.exists() else frozenset()
    await reconcile_runs(services.store, Reason.DAEMON_RESTARTED, stopped, services.blobs)
    note.unlink(missing_ok=True)  # only once the repairs committed
    await services.suites.recover()
    services.blobs.remove_temp_files()


async def shutdown(services: Daemon) -> None:
    await services.suites.shutdown()  # first: a suite run starts no case once runs stop
    await services.compactor.close()
    await services.trimmer.close()
    left = await services.runs.shutdown()
    await services.connections.close()  # no run is left to stream on them
    if left is not None:
        # History took no writes: the next start ends the run, saying it was a clean stop.
        with suppress(OSError):
            (services.settings.runtime_dir / UNENDED_NOTE).write_text(left)
    await services.host.close()
    if services.tracing is not None:
        await services.tracing.close()  # bounded: a collector that is down holds nothing
    await services.store.close()
    services.hub.close_all()
    services.project_events.close_all()
    await services.http.close()


def make_app(services: Daemon) -> web.Application:
    # A foreign uid is refused before anything else runs (docs/security.md, the socket).
    # A connection a front lends gets its whole answer flushed before it is given back.
    app = web.Application(middlewares=[peer_cred_middleware, answer_once],
                          client_max_size=services.settings.max_request_bytes)
    add_request_context(app)
    name_the_server(app)
    s = services
    app.middlewares.append(errors_middleware(s.store))
    add_routes(app, settings=s.settings, store=s.store, hub=s.hub, history=s.history,
               runs=s.runs, host=s.host, trimmer=s.trimmer,
               tracing=s.tracing.health if s.tracing is not None else tracing_health)
    add_data_routes(app, settings=s.settings, history=s.history)
    add_history_routes(app, trimmer=s.trimmer)
    add_edit_routes(app, history=s.history, max_request_bytes=s.settings.max_request_bytes,
                    limits=s.settings.limits)
    add_search_routes(app, search=RunSearch(s.store))
    add_host_routes(app, settings=s.settings, host=s.host, runs=s.runs, reload=s.reload,
                    project_events=s.project_events)
    add_capture_routes(app, store=s.store, host=s.host, runs=s.runs, limits=s.settings.limits)
    add_introspect_routes(app, settings=s.settings, host=s.host, http=s.http,
                          history=s.history, blobs=s.blobs)
    add_suite_routes(app, settings=s.settings, store=s.store, hub=s.hub, suites=s.suites)
    # The OpenAPI document's declarations load on its first request (0.5 MB otherwise kept).
    bind_on_first_use(app, "openapi", "llamon_playground.daemon.http.openapi")
    return app


async def _prewarm(host: HostSupervisor) -> None:
    """Start the Host now, so the first Send finds it Ready rather than waiting for a spawn.
    A Host that cannot start is not the daemon's failure: the first run says why."""
    try:
        await host.ensure_ready()
    except HostUnavailable as exc:
        log.warning("the Host did not start ahead of the first run: %s", exc.message)


def _log_context(services: Daemon) -> dict[str, object]:
    """What a log line outside a request is about: the active run and Host generation."""
    active, gen = services.runs.active, services.host.generation
    return {"run_id": active.run_id if active else None,
            "generation": gen.number if gen else None}


async def serve(settings: Settings, environ: dict[str, str]) -> None:
    """Run the daemon until SIGTERM/SIGINT; then stop cleanly.

    Every piece is handed to one exit stack as it comes up, so whatever way out is taken
    (a stop signal, a failed boot, a crashed background task) undoes exactly what was done,
    in reverse: the background tasks, the services (active runs end `interrupted`, the Host
    stops), the socket's server, the Host session, the lifeline, the discovery record, the
    lock.
    """
    async with AsyncExitStack() as stack:
        stack.callback(acquire_lock(settings).release)
        stack.callback(remove_discovery, settings)
        notifier = Notifier.from_settings(settings)
        # A Host left by a daemon that died goes before anything starts (identity-checked).
        reap_orphan(settings.host_record_path, ENV_MARKER)
        # ... and every process of its tree, wherever it went (a Host started through a
        # shell survives its parent's death).
        left = reap_marked(ENV_TREE, tree_id(settings.host_record_path), "boot")
        # ... and, should this daemon die, the tree goes with it even if none comes back.
        lifeline = Lifeline.start(settings.host_record_path, environ)
        stack.callback(lifeline.close)  # unless stood down, the reaper ends what is left
        services = await build_services(settings, environ)
        stack.push_async_callback(_close_http, services)
        freeze_late_startup()
        services.host.note_reaped(left)
        set_context_fallback(lambda: _log_context(services))
        # Parser-level errors answered plainly too: our Server header, nothing echoed.
        runner = web.AppRunner(make_app(services), handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        listening: list[asyncio.Server] = []  # _listen's; closed before the runner's cleanup
        stack.push_async_callback(_cleanup, runner, listening)
        try:
            await recover(services)
        except Exception as exc:
            # Never a half-started daemon: close what was opened and exit, saying why.
            log.error("boot recovery failed; the daemon stops: %s", exc)
            await shutdown(services)
            raise BootFailed(f"boot recovery failed: {exc}") from exc
        # From here a stop ends the runs and the Host before the server closes, so open
        # streams get their final events.
        stack.push_async_callback(_stop_services, services, lifeline)
        services.compactor.start()
        services.trimmer.start()
        connections = await _listen(settings, runner, listening)
        # Connections a front lends are served by this same server, one answer each.
        handover = HandoverListener(settings.handover_path, connections,
                                    connection_cap(settings.front.max_connections))
        handover.listen()
        write_discovery(settings)
        log.info("daemon for %s listening on %s", settings.project_dir, settings.socket_path)
        # The background tasks' owner: a stop cancels them; one that fails stops the daemon
        # (cleanly, through the stack) rather than leaving it half-working.
        async with asyncio.TaskGroup() as tasks:
            background = [tasks.create_task(handover.serve(), name="handover")]
            if services.tracing is not None:
                background.append(tasks.create_task(services.tracing.run(), name="traces"))
            if settings.watch:
                background.append(tasks.create_task(ProjectWatcher(
                    lambda: services.host.rules, services.reload.on_changes,
                    quiet=QuietPeriod(settings.watch_quiet, settings.watch_quiet_max),
                    pending=services.host.pending_edits).run(),
                    name="watcher"))
            if settings.prewarm:
                background.append(tasks.create_task(_prewarm(services.host), name="prewarm"))
            if notifier.watchdog_interval is not None:
                background.append(tasks.create_task(notifier.watchdog_loop(), name="watchdog"))
            try:
                # READY=1: the socket listens, boot recovery is done, and a stop signal
                # already gets a clean shutdown (systemd may stop us the next instant).
                await wait_for_stop_signal(
                    armed=lambda: notifier.ready(f"serving {settings.project_dir}"))
            finally:
                log.info("daemon stopping")
                notifier.stopping()
                for task in background:
                    task.cancel()


async def _listen(settings: Settings, runner: web.AppRunner,
                  listening: list[asyncio.Server]) -> Callable[[], asyncio.Protocol]:
    """The daemon's socket: 0600 from its first moment (umask), a stale one replaced.
    Returns the factory of its connections (parser errors answered plainly, streams ended
    with their connections: daemon/http/sse.py)."""
    with suppress(FileNotFoundError):
        settings.socket_path.unlink()  # stale socket of a dead daemon (we hold the lock)
    old_umask = os.umask(0o077)
    try:
        server, connections = await serve_unix(runner, str(settings.socket_path),
                                               access_log=None)
        listening.append(server)
    finally:
        os.umask(old_umask)
    os.chmod(settings.socket_path, 0o600)
    return connections


async def _cleanup(runner: web.AppRunner, listening: list[asyncio.Server]) -> None:
    """No new connection, then the open ones shut down (as a site's runner does)."""
    for server in listening:
        server.close()
    await runner.cleanup()


async def _stop_services(services: Daemon, lifeline: Lifeline) -> None:
    await shutdown(services)
    lifeline.stand_down()  # the Host is stopped: nothing for the reaper to do


async def _close_http(services: Daemon) -> None:
    await services.connections.close()
    if not services.http.closed:
        await services.http.close()
