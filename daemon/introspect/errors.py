"""Introspection failures. daemon/http/introspect.py maps them to HTTP answers."""

from __future__ import annotations


class IntrospectError(Exception):
    """Base: the project's source cannot answer the question asked."""


class NodeNotFound(IntrospectError):
    """The node id is not a node of the Flow's graph (or the project has no graph)."""


class SourceNotFound(IntrospectError):
    """The node exists but its function cannot be located in the project's source."""
