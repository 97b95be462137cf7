"""The daemon's services, bundled for the routes (built by the composition root only)."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from aiohttp import web

from host_manager.supervisor import HostSupervisor

from .blobs import BlobStore
from .config import Settings
from .event_log import EventHub
from .project_events import ProjectEvents
from .reload import ReloadCoordinator
from .runs import RunManager
from .store import Store


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


SERVICES = web.AppKey("services", Services)
