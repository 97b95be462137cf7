"""Metadata redaction: secret keys at any depth, secret-looking values anywhere."""

from __future__ import annotations

import copy

import orjson
import pytest

from llamon_playground.daemon.data.redact import REDACTED, is_secret_key, redact, redact_metadata
from llamon_playground.daemon.errors import BadRequest

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


@pytest.mark.parametrize("key", [
    "password", "PASSWORD", "passwd", "db_password", "userPassword", "secret", "clientSecret",
    "token", "accessToken", "X-Auth-Token", "refreshtoken", "api_key", "apiKey", "API-KEY",
    "apikey", "auth", "Authorization", "credential", "credentials", "Cookie", "set-cookie",
    "private_key", "privateKey", "bearer", "session", "session_id", "jwt",
    "pass", "sessionid", "creds", "ssh_key", "sshKey",
])
def test_secret_keys_are_recognised_case_insensitively(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", [
    "userId", "author", "authority", "max_tokens", "title", "keyboard", "tokenizer",
    "description", "model", "locale",
])
def test_ordinary_keys_are_kept(key: str) -> None:
    assert not is_secret_key(key)


def test_nested_secret_keys_are_redacted_whatever_their_value() -> None:
    metadata = {"userId": "user-1",
                "db": {"host": "localhost", "Password": "hunter2", "opts": [{"token": 42}]},
                "headers": {"Authorization": {"scheme": "Basic", "value": "abc"}},
                "list": [[{"deep": {"api_key": ["x", "y"]}}]]}
    original = copy.deepcopy(metadata)
    got = redact_metadata(metadata)
    assert metadata == original  # never modified in place
    assert got == {"userId": "user-1",
                   "db": {"host": "localhost", "Password": REDACTED,
                          "opts": [{"token": REDACTED}]},
                   "headers": {"Authorization": REDACTED},
                   "list": [[{"deep": {"api_key": REDACTED}}]]}


@pytest.mark.parametrize(("value", "kept", "gone"), [
    ("key sk-proj-AbCdEfGhIjKlMnOpQrStUv123 here", "key ", "AbCdEfGhIjKlMnOp"),
    ("Bearer abcdefghijklmnop.qrstuv", "", "abcdefghijklmnop"),
    (f"jwt {JWT} end", " end", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("https://api.example.com/cb?x=1&token=s3cr3tValue&y=2", "x=1&token=", "s3cr3tValue"),
    ("https://example.com/#access_token=abcdef123", "#access_token=", "abcdef123"),
    ("https://example.com/?api_key=zzz999", "?api_key=", "zzz999"),
    ("postgres://admin:pa55word@db.local/app", "postgres://admin:", "pa55word"),
    ("ghp_0123456789abcdefghijABCDEFGHIJ0123", "", "0123456789abcdefghij"),
    ("Authorization: Basic dXNlcjpodW50ZXIy", "Basic ", "dXNlcjpodW50ZXIy"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1x\n-----END RSA PRIVATE KEY-----\nok",
     "\nok", "MIIEpAIBAAKCAQEA1x"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE (cut)", "", "b3BlbnNzaC1rZXkt"),
    ("login with password=hunter2 please", "password=", "hunter2"),
    ('{"db_passwd": "s3cr3t!", "user": "ada"}', '"user": "ada"', "s3cr3t!"),
    ("gitlab glpat-AbCdEfGhIjKlMnOpQrSt12", "gitlab ", "AbCdEfGhIjKlMnOpQrSt12"),
    ("stripe rk_live_0123456789abcdefABCD", "stripe ", "0123456789abcdefABCD"),
])
def test_secret_looking_values_are_redacted(value: str, kept: str, gone: str) -> None:
    got = redact({"note": value, "nested": [{"v": value}]})
    for text in (got["note"], got["nested"][0]["v"]):
        assert gone not in text and REDACTED in text and kept in text


def test_ordinary_values_and_other_types_pass_through() -> None:
    metadata = {"url": "https://example.com/page?page=2&sort=asc", "n": 3, "ok": True,
                "none": None, "text": "a skeleton key", "ratio": 0.5,
                "course": "Basic information", "pwdless": "passwords: 3"}
    assert redact_metadata(metadata) == metadata


def test_redaction_is_idempotent_and_drops_the_reserved_key() -> None:
    metadata = {"llamon.playground": {"token": "capture"}, "auth": "x",
                "u": "https://h/?token=abc", "jwt": JWT}
    once = redact_metadata(metadata)
    assert "llamon.playground" not in once
    assert redact_metadata(once) == once
    assert b"capture" not in orjson.dumps(once)


def test_metadata_nested_too_deep_is_refused() -> None:
    deep: dict[str, object] = {}
    cursor = deep
    for _ in range(70):
        cursor["a"] = {}
        cursor = cursor["a"]  # type: ignore[assignment]
    with pytest.raises(BadRequest) as info:
        redact_metadata(deep)
    assert info.value.code == "nesting_too_deep"
