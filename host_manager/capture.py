"""The capture channel, daemon side: a fresh token per Host generation and the envelope.

The token goes only into the child's environment. A2A requests carry the reserved metadata
envelope `llamon.playground` with the run id and an HMAC of it under the token: the Host can
check that a request comes from this daemon without the token ever crossing the wire.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

ENV_TOKEN = "LLAMON_CAPTURE_TOKEN"
ENV_SOCKET = "LLAMON_CAPTURE_SOCKET"
ENVELOPE_KEY = "llamon.playground"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def proof(token: str, run_id: str) -> str:
    return hmac.new(token.encode(), run_id.encode(), hashlib.sha256).hexdigest()


def envelope(token: str, run_id: str, generation: int) -> dict[str, Any]:
    """What a run's capture calls carry: the run, the Host generation and the proof made with
    `token`."""
    return {"run_id": run_id, "generation": generation, "proof": proof(token, run_id)}


def token_matches(expected: str | None, given: str | None) -> bool:
    """Whether `given` is the `expected` token (compared in constant time; none never matches)."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())
