"""Identifiers: a readable prefix plus 128 random bits."""

from __future__ import annotations

import uuid


def new_session_id() -> str:
    """A new session id (`ses_...`)."""
    return f"ses_{uuid.uuid4().hex}"


def new_run_id() -> str:
    """A new run id (`run_...`)."""
    return f"run_{uuid.uuid4().hex}"


def new_context_id() -> str:
    """A new A2A context id."""
    return str(uuid.uuid4())
