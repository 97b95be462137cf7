"""What a command's one-line error says: the next command it suggests, written so it can be
pasted as it is, and BadArgument for an argument that cannot be used.

A suggestion names the project folder unless it is the current one: typed elsewhere, a bare
`llamon-playground up` would serve another project (the current folder's, or the bundled
example).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from llamon_playground.cli.client import ActiveRunConflict, ApiError, PlaygroundClient
from llamon_playground.common.config import Settings


class BadArgument(Exception):
    """A command's argument that cannot be used (a file that is not there, JSON that is not
    an object): one line on stderr and exit 2, before anything is sent."""


def project_words(settings: Settings) -> list[str]:
    """`[project]` when the project is not the current folder, else nothing."""
    project = Path(settings.project_dir).resolve()
    return [] if project == Path.cwd().resolve() else [str(project)]


class Placeholder(str):
    """A word shown as it is, for the user to replace (`"answer"`)."""


def suggest(settings: Settings, *words: str, project_option: bool = False) -> str:
    """`llamon-playground WORDS... [PROJECT]`, quoted for a POSIX shell; with
    `project_option` the project goes as `--project PROJECT` (the suite commands)."""
    where = project_words(settings)
    if project_option and where:
        where = ["--project", *where]
    return " ".join(w if isinstance(w, Placeholder) else shlex.quote(w)
                    for w in ("llamon-playground", *words, *where))


async def conflict_hint(client: PlaygroundClient, exc: ApiError) -> str | None:
    """What holds the project in a 409 `active_run_conflict`, and the commands that wait
    for it or end it; None for any other error."""
    if not isinstance(exc, ActiveRunConflict):
        return None
    settings = client.settings
    run_id, suite_run_id = exc.active_run_id, exc.suite_run_id
    if run_id is None and suite_run_id is not None:
        return (f"suite run {suite_run_id} holds the project; cancel it with "
                f"`{suggest(settings, 'suite', 'cancel', suite_run_id, project_option=True)}`")
    if run_id is None:
        return None
    try:
        session = f" in session {(await client.run(run_id))['session_id']}"
    except ApiError:
        session = ""  # it ended and was deleted meanwhile: the ids are all we have
    return (f"run {run_id}{session} is active; follow it with "
            f"`{suggest(settings, 'follow', run_id)}` or cancel it with "
            f"`{suggest(settings, 'cancel', run_id)}`")
