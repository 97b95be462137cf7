"""What the API answers about history's size and the retention policy (docs/storage.md,
Retention): `GET /history` and `POST /history/trim` (`/health`'s `history` is in `host`).

Declared for the OpenAPI document; the typed client reads these two routes with `call`,
so they stay out of its generated types (`scripts/wire_gen.py`, ANSWER_MODULES).
"""

from typing import Annotated, TypedDict

from llamon_playground.common.wire.history import DeletedCounts
from llamon_playground.common.wire.host import RetentionPolicy
from llamon_playground.common.wire.rules import Doc


class HistoryBytes(TypedDict):
    """The bytes history takes on disk."""

    database: Annotated[int, Doc("the file and its WAL")]
    files: int


class HistoryCounts(TypedDict):
    """What history holds (a finished run's compacted events counted too)."""

    sessions: int
    runs: int
    events: int
    files: Annotated[int, Doc("distinct stored files the runs reference")]


class RetentionPlan(TypedDict):
    """What the policy would remove now: whole sessions, oldest first."""

    sessions: list[str]
    runs: int
    bytes: Annotated[int, Doc("about what those sessions hold")]
    used_bytes: Annotated[int, Doc("history in use: the database's pages in use and files")]


class HistoryReport(TypedDict):
    """`GET /history`: history's size and counts, and what the policy would remove now."""

    policy: RetentionPolicy
    bytes: HistoryBytes
    counts: HistoryCounts
    incremental_vacuum: Annotated[bool, Doc("freed pages go back to the filesystem")]
    plan: RetentionPlan


class HistoryTrimmed(TypedDict):
    """`POST /history/trim`: what the policy removed and the database's size around it."""

    removed: DeletedCounts
    blobs_removed: int
    bytes_before: int
    bytes_after: int
