"""Exceptions of the Host manager."""

from __future__ import annotations


class HostUnavailable(Exception):
    """The Host could not be started or did not become Ready; carries its last log lines."""

    def __init__(self, message: str, log_tail: list[str] | None = None,
                 reason: str = "runtime_unavailable") -> None:
        super().__init__(message)
        self.message = message
        self.log_tail = log_tail or []
        self.reason = reason
