"""The daemon's services, bundled for the routes (built by the composition root only)."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from aiohttp import web

from llamon_playground.common.config import Settings
from llamon_playground.daemon.runs.manager import RunManager
from llamon_playground.daemon.runs.reload import ReloadCoordinator
from llamon_playground.daemon.store.blobs import BlobStore
from llamon_playground.daemon.store.database import Store
from llamon_playground.daemon.store.event_log import EventHub
from llamon_playground.daemon.store.project_events import ProjectEvents
from llamon_playground.daemon.store.upkeep.compaction import Compactor
from llamon_playground.daemon.store.upkeep.trimmer import Trimmer
from llamon_playground.host_manager.supervisor import HostSupervisor


@dataclass
class Services:
    settings: Settings
    store: Store
    blobs: BlobStore
    hub: EventHub
    host: HostSupervisor
    runs: RunManager
    http: aiohttp.ClientSession
    project_events: ProjectEvents
    reload: ReloadCoordinator
    compactor: Compactor
    trimmer: Trimmer


SERVICES = web.AppKey("services", Services)
