"""What the Host manager is told from the project's `pyproject.toml`, read at each start: the
command that serves it, and whether (and what) its warm parent preloads."""

from __future__ import annotations

from llamon_playground.common.config import Settings
from llamon_playground.daemon.errors import ProjectError
from llamon_playground.daemon.introspect.host_checks import default_command_note, missing_executable
from llamon_playground.daemon.introspect.project_config import load_project_config
from llamon_playground.host_manager.errors import HostUnavailable
from llamon_playground.host_manager.spawn.warm import WarmOptions


def host_command(settings: Settings, environ: dict[str, str]) -> list[str]:
    """The Host's argv, or HostUnavailable saying why it cannot be started."""
    try:
        config = load_project_config(settings.project_dir)
    except ProjectError as exc:
        raise HostUnavailable(f"cannot read the project's host command: {exc}",
                              reason="project_validation") from exc
    argv = config.resolved_host_command()
    # Said before spawning, naming host_command: not a bare "[Errno 2] ... 'uv'".
    problem = missing_executable(argv, settings.project_dir, environ)
    if problem is not None:
        note = default_command_note(config, settings.project_dir)
        raise HostUnavailable(f"{note}. {problem}" if note else problem,
                              reason="project_validation")
    return argv


def warm_options(settings: Settings) -> WarmOptions:
    """Read at each start; a pyproject that cannot be read fails in `host_command` first."""
    try:
        config = load_project_config(settings.project_dir)
    except ProjectError:
        return WarmOptions(enabled=False, preload=())
    return WarmOptions(enabled=config.warm_start, preload=config.preload)
