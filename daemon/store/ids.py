"""Identifiers: a readable prefix plus 128 random bits."""

from __future__ import annotations

import uuid


def new_session_id() -> str:
    return f"ses_{uuid.uuid4().hex}"


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


def new_context_id() -> str:
    return str(uuid.uuid4())
