"""The composer of an Agent or Orchestrator, from the AgentCard its running Host serves.

When the card's capability declares `input_schemas` names, the composer offers
`{"schema": "<name>"}` and says the fields are undeclared; with none, a text composer
described by the card's input modes and skill examples.

An A2A 1.0 card has no free-form fields (a2a-sdk builds it from protobuf), so the capability
is an AgentExtension (docs/project-format.md):

    "capabilities": {"extensions": [{"uri": "urn:llamon:input-schemas",
                                      "params": {"schemas": ["approval.v1"]}}]}
"""

from __future__ import annotations

from typing import Any

from llamon_playground.daemon.a2a.client import CARD_PATH
from llamon_playground.daemon.introspect.composer import answer, text_composer
from llamon_playground.daemon.introspect.model import Diagnostic, Severity

INPUT_SCHEMAS_URI = "urn:llamon:input-schemas"


def _note(code: str, message: str, severity: Severity = "warning") -> Diagnostic:
    return Diagnostic(code, message, CARD_PATH, severity=severity)


def input_schemas(card: dict[str, Any]) -> tuple[list[str], list[Diagnostic]]:
    """The schema names the card declares (in order, once each) and what was malformed."""
    capabilities = card.get("capabilities")
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    names: list[str] = []
    notes: list[Diagnostic] = []
    for ext in extensions if isinstance(extensions, list) else []:
        if not isinstance(ext, dict) or ext.get("uri") != INPUT_SCHEMAS_URI:
            continue
        params = ext.get("params")
        schemas = params.get("schemas") if isinstance(params, dict) else None
        if not isinstance(schemas, list):
            notes.append(_note("invalid_input_schemas",
                               f"extension {INPUT_SCHEMAS_URI}: params.schemas must be a list "
                               "of schema names"))
            continue
        for name in schemas:
            if isinstance(name, str) and name and name not in names:
                names.append(name)
            elif not (isinstance(name, str) and name):
                notes.append(_note("invalid_input_schemas",
                                   f"extension {INPUT_SCHEMAS_URI}: {name!r} is not a schema "
                                   "name"))
    return names, notes


def schema_tab(name: str) -> dict[str, Any]:
    return {"id": f"schema:{name}", "composer": "data", "node_id": None, "contract": name,
            "schema": name, "fields_declared": False, "fields": [], "draft": {"schema": name}}


def card_text_composer(card: dict[str, Any]) -> dict[str, Any]:
    """Input modes and skill examples, as the card states them."""
    default_modes = _strings(card.get("defaultInputModes"))
    skills: list[dict[str, Any]] = []
    examples: list[dict[str, Any]] = []
    for skill in card.get("skills") or []:
        if not isinstance(skill, dict):
            continue
        skill_id, skill_name = skill.get("id"), skill.get("name")
        skills.append({"id": skill_id, "name": skill_name,
                       "description": skill.get("description"),
                       "input_modes": _strings(skill.get("inputModes")) or default_modes})
        examples.extend({"text": text, "skill_id": skill_id, "skill_name": skill_name}
                        for text in _strings(skill.get("examples")))
    return text_composer(default_modes, examples, skills)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def agent_composer(kind: str, card: dict[str, Any]) -> dict[str, Any]:
    """The composer for an agent Host: a tab per input schema its card declares, else a text
    composer."""
    names, notes = input_schemas(card)
    tabs = [schema_tab(name) for name in names]
    return answer(kind, True, tabs, notes, text=None if tabs else card_text_composer(card),
                  source="agent_card",
                  card={"name": card.get("name"), "version": card.get("version"),
                        "description": card.get("description")})


def source_only_composer(kind: str, why: str) -> dict[str, Any]:
    """No live card: the source of an agent states no input, so a plain text composer."""
    note = _note("host_not_ready", f"{why}; its AgentCard (input schemas, input modes, skill "
                 "examples) is read once the Host runs (start a run)", "info")
    return answer(kind, False, [], [note], source="project")
