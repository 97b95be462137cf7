"""The API's wire shapes, declared once: every body the API takes and every answer it gives.

The declaration is plain typing (TypedDicts, `Literal`, `StrEnum`, `Annotated` markers from
`rules`), read three ways:

- the daemon's OpenAPI document builds its `components.schemas` from it at import
  (`json_schema.component_schemas(COMPONENTS)`);
- `scripts/gen_wire` writes the typed client's types (`llamon_playground/cli/api_types/`,
  `api_requests.py`, `api_suites.py`) and the page's constants (`api/page/wire.js`) from it, and a unit
  test fails when those files are stale;
- daemon code annotates what it answers with these types.

Imports only the standard library and `common.contract`, like the rest of `common`.

May import: common.contract
"""

from __future__ import annotations

from typing import Any

from llamon_playground.common.wire.documents import (
    Bundle,
    BundleImported,
    Compare,
    ComposerSchema,
    Landing,
    OpenApiDocument,
    Snippets,
    SourceTarget,
)
from llamon_playground.common.wire.history import (
    Error,
    HistoryDeleted,
    Lineage,
    Part,
    RerunTree,
    Run,
    RunAccepted,
    RunEvent,
    RunList,
    RunSummary,
    Session,
    SessionDeleted,
    SessionList,
)
from llamon_playground.common.wire.host import (
    Health,
    HistorySize,
    HostError,
    HostLogs,
    HostStatus,
)
from llamon_playground.common.wire.search import SearchExcerpt, SearchHit, SearchResults
from llamon_playground.common.wire.requests import (
    ExportRequest,
    InputPart,
    RerunRequest,
    RunPatch,
    RunRequest,
    SessionCreate,
    SessionPatch,
)
from llamon_playground.common.wire.suites import (
    Suite,
    SuiteCaseCompare,
    SuiteCaseSpec,
    SuiteCreate,
    SuiteDeleted,
    SuiteFileSaved,
    SuiteList,
    SuitePatch,
    SuiteRun,
    SuiteRunAccepted,
    SuiteRunList,
    SuiteSave,
    SuiteStart,
)
from llamon_playground.common.wire.upkeep import HistoryReport, HistoryTrimmed

__all__ = ["COMPONENTS", "EXTRAS", "Bundle", "BundleImported", "Compare", "ComposerSchema",
           "Error", "ExportRequest", "Health", "HistoryDeleted", "HistoryReport", "HistorySize",
           "HistoryTrimmed", "HostError", "HostLogs", "HostStatus", "InputPart", "Landing",
           "Lineage", "OpenApiDocument", "Part", "RerunRequest", "RerunTree", "Run",
           "RunAccepted", "RunEvent", "RunList", "RunPatch", "RunRequest", "RunSummary",
           "Session", "SessionCreate", "SessionDeleted", "SessionList", "SessionPatch",
           "Snippets", "SourceTarget"]
__all__ += ["SearchExcerpt", "SearchHit", "SearchResults"]
__all__ += ["Suite", "SuiteCaseCompare", "SuiteCaseSpec", "SuiteCreate", "SuiteDeleted",
            "SuiteList", "SuitePatch", "SuiteRun", "SuiteRunAccepted", "SuiteRunList",
            "SuiteFileSaved", "SuiteSave", "SuiteStart"]

# The shapes `openapi.json` names under `components.schemas`, in its order. A tuple is a
# tagged union (`X | Y`) of inline variants.
COMPONENTS: dict[str, Any] = {
    "Error": Error,
    "InputPart": InputPart,
    "Part": Part,
    "RunRequest": RunRequest,
    "RerunRequest": RerunRequest,
    "SessionPatch": SessionPatch,
    "RunPatch": RunPatch,
    "SessionCreate": SessionCreate,
    "ExportRequest": ExportRequest,
    "Session": Session,
    "SessionList": SessionList,
    "Run": Run,
    "RunSummary": RunSummary,
    "RerunTree": RerunTree,
    "Lineage": Lineage,
    "RunList": RunList,
    "RunAccepted": RunAccepted,
    "SessionDeleted": SessionDeleted,
    "HistoryDeleted": HistoryDeleted,
    "HostStatus": HostStatus,
    "HostError": HostError,
    "HostLogs": HostLogs,
    "Health": Health,
    "Compare": Compare,
    "SearchResults": SearchResults,
    "Bundle": Bundle,
    "BundleImported": BundleImported,
    "HistoryReport": HistoryReport,
    "HistoryTrimmed": HistoryTrimmed,
    "ComposerSchema": ComposerSchema,
    "SourceTarget": SourceTarget,
    "Snippets": Snippets,
    "Landing": Landing,
    "OpenApiDocument": OpenApiDocument,
    "SuiteCaseSpec": SuiteCaseSpec,
    "SuiteCreate": SuiteCreate,
    "SuitePatch": SuitePatch,
    "SuiteStart": SuiteStart,
    "SuiteSave": SuiteSave,
    "SuiteFileSaved": SuiteFileSaved,
    "Suite": Suite,
    "SuiteList": SuiteList,
    "SuiteDeleted": SuiteDeleted,
    "SuiteRunAccepted": SuiteRunAccepted,
    "SuiteRun": SuiteRun,
    "SuiteRunList": SuiteRunList,
    "SuiteCaseCompare": SuiteCaseCompare,
}
# Declared for the client and the page, not named in the OpenAPI document (an SSE event's
# `data` is a JSON string there).
EXTRAS: tuple[type, ...] = (RunEvent,)
