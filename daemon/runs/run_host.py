"""The Host as a run sees it: the few calls the executor makes of the Host supervisor, and
how the project's pyproject.toml reaches it (one function for every reader of the config,
so no reader can drop a warning another one set)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from llamon_playground.daemon.introspect.host_checks import project_warnings
from llamon_playground.daemon.introspect.project_config import ProjectConfig
from llamon_playground.host_manager.generation import Generation
from llamon_playground.host_manager.logs import HostLogs
from llamon_playground.host_manager.process import HostProcess
from llamon_playground.host_manager.state import HostState
from llamon_playground.host_manager.watch.change_policy import ChangePolicy
from llamon_playground.host_manager.watch.pending import PendingEdits


class RunHost(Protocol):
    """What a run needs of the Host (`HostSupervisor` is the one implementation)."""

    @property
    def state(self) -> HostState:
        """Where the Host is in its lifecycle."""

    @property
    def generation(self) -> Generation | None:
        """The latest generation (Ready only when `state` is READY)."""

    @property
    def process(self) -> HostProcess | None:
        """The running generation's process."""

    def follow_project(self, env_file: str, warnings: list[dict[str, str]]) -> None:
        """What pyproject.toml says now: the env file, the project's standing warnings."""

    @property
    def changes(self) -> ChangePolicy:
        """The watched files and their cached digests (a changed file's hash)."""

    @property
    def pending_edits(self) -> PendingEdits:
        """An outside edit the watcher has noticed and not applied yet."""

    @property
    def logs(self) -> HostLogs:
        """The Host's output, every generation's (a run's own window of it)."""

    def is_env_file(self, rel: str) -> bool:
        """Whether `rel` is the project's env file (never hashed into history)."""

    async def ensure_ready(self, on_spawned: Callable[[Generation], None] | None = None
                           ) -> Generation:
        """The Ready generation, starting the Host if it is down (`on_spawned` hears when
        that start's process exists, before it is Ready)."""

    async def restart_for_save(self, changed_files: list[str]) -> bool:
        """Restart once if the saved files differ from the generation's; whether it did."""

    async def restart(self) -> Generation:
        """A new generation whatever the state."""

    def exposure_warnings(self) -> list[dict[str, str]]:
        """`host_exposed`, when the Ready generation answers what a web page can send."""

    def note_serving(self) -> None:
        """A run is being sent to the Ready generation."""


def follow_project(host: RunHost, config: ProjectConfig,
                   project_dir: Path) -> list[dict[str, str]]:
    """Tell the Host what the project's config says now; its standing warnings."""
    warnings = project_warnings(config, project_dir)
    host.follow_project(config.env_file, warnings)
    return warnings
