"""Redaction of user metadata before it is stored (docs/storage.md, "Redaction").

Only metadata is scrubbed: text, data and file bodies are user content and are kept as sent
(they are what the person is testing; exports carry a privacy warning instead). The rules:

- A key looks like a secret when, split into words (camelCase, `-`, `_`, `.`, spaces), one
  word is in SECRET_WORDS, two neighbouring words join into one of SECRET_PAIRS, or the key
  with separators removed contains one of SECRET_INFIXES or ends with "token". Matching is
  case-insensitive. The whole value under such a key becomes REDACTED, whatever its type.
- Any string value, at any depth, is searched for secret-looking substrings (`sk-...`
  API keys, `Bearer ...`, `Basic <user:password>`, JWTs, PEM private keys, well-known token
  prefixes, `password=...` in free text, URL userinfo passwords and URL query parameters
  whose name looks like a secret, e.g. `?token=`); each match is replaced.

Redaction is idempotent: redacting twice gives the same document.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from typing import Any

from llamon_playground.daemon.data.json_depth import check_depth
from llamon_playground.daemon.data.parts import RESERVED_METADATA_KEY

REDACTED = "[REDACTED]"

SECRET_WORDS = frozenset({
    "password", "passwd", "pwd", "passphrase", "secret", "secrets", "token", "auth",
    "authorization", "credential", "credentials", "cookie", "cookies", "bearer", "session",
    "apikey", "privatekey", "jwt", "otp", "pass", "creds", "sessionid", "sshkey",
})
SECRET_PAIRS = frozenset({"apikey", "privatekey", "accesskey", "secretkey", "signingkey",
                          "setcookie", "sshkey"})
# Long enough that a substring hit is never an innocent word ("author" is not "auth").
SECRET_INFIXES = ("password", "passwd", "secret", "apikey", "privatekey", "credential",
                  "authorization", "bearer", "cookie")

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")

_VALUE_PATTERNS = [
    # OpenAI/Anthropic-style keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    # An Authorization header value pasted into metadata.
    re.compile(r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{8,}=*"),
    # JWT: three base64url segments, the header starting with {" (eyJ). It may start only
    # where a run of base64url characters starts: with `\b`, each "eyJ" inside one long
    # run ("-eyJ-eyJ...") was a new start that rescanned the rest of the run, quadratic
    # time on a single request. Now every character is scanned a bounded number of times.
    re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"),
    # GitHub, GitLab, Slack, Stripe, AWS and Google key formats.
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
               r"|glpat-[A-Za-z0-9_\-]{20,}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
               r"|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})"),
    # A PEM private key, END line optional (a pasted key may be cut). The body stops at
    # the next "-----" and the match never fails after BEGIN, so nothing is rescanned.
    re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[^-]*(?:-(?!----)[^-]*)*"
               r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY-----)?"),
]
# `password=...`, `"passwd": "..."`, `api_key: ...` in free text: the value goes, the name
# stays. Fixed-length names and bounded gaps: constant work per starting position.
_FREE_TEXT_SECRET = re.compile(
    r"((?:password|passwd|passphrase|pwd|secret|api[_\-]?key|access[_\-]?token)"
    r"[\"']?\s{0,8}[=:]\s{0,8}[\"']?)([^\s\"',;&]{1,4096})", re.IGNORECASE)
# `Basic <base64 of user:password>`: only when it decodes to something with a colon, so
# "Basic information" stays.
_BASIC = re.compile(r"\b([Bb]asic\s{1,8})([A-Za-z0-9+/]{4,4096}={0,2})")
# https://user:password@host → the password goes, the user stays.
_URL_USERINFO = re.compile(r"(://[^/\s:@]+:)([^@/\s]+)(@)")
# ?token=..., &api_key=..., #access_token=... → the value goes when the name looks secret.
_URL_PARAM = re.compile(r"([?&;#]([A-Za-z0-9_.\-]+)=)([^&#;\s\"']*)")


def key_words(key: str) -> list[str]:
    """`X-Auth-Token` → ["x", "auth", "token"]; `apiKey` → ["api", "key"]."""
    spaced = _CAMEL.sub(r"\1 \2", key)
    return [w for w in _SEPARATORS.split(spaced.lower()) if w]


def is_secret_key(key: str) -> bool:
    words = key_words(key)
    if any(w in SECRET_WORDS for w in words):
        return True
    if any(a + b in SECRET_PAIRS for a, b in itertools.pairwise(words)):
        return True
    compact = "".join(words)
    return compact.endswith("token") or any(infix in compact for infix in SECRET_INFIXES)


def _basic_credentials(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + REDACTED if b":" in decoded else match.group(0)


def redact_string(value: str) -> str:
    for pattern in _VALUE_PATTERNS:
        value = pattern.sub(REDACTED, value)
    value = _BASIC.sub(_basic_credentials, value)
    value = _FREE_TEXT_SECRET.sub(lambda m: m.group(1) + REDACTED, value)
    value = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + m.group(3), value)

    def param(match: re.Match[str]) -> str:
        if match.group(3) and is_secret_key(match.group(2)):
            return match.group(1) + REDACTED
        return match.group(0)
    return _URL_PARAM.sub(param, value)


def redact(value: Any) -> Any:
    """A redacted copy of a JSON value (never modified in place); callers bound its depth."""
    if isinstance(value, dict):
        return {key: REDACTED if is_secret_key(str(key)) else redact(item)
                for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_string(value)
    return value


def redact_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """What may be stored or exported of user metadata: redacted, without the reserved key.

    Raises BadRequest `nesting_too_deep` for metadata nested deeper than MAX_DEPTH levels.
    """
    check_depth(metadata, "metadata")
    redacted: dict[str, Any] = redact(
        {k: v for k, v in metadata.items() if k != RESERVED_METADATA_KEY})
    return redacted
