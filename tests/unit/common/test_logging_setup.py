"""Structured log lines: context fields, JSON on request, and secrets scrubbed out."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from llamon_playground.common import logging_setup
from llamon_playground.common.config import build_settings
from llamon_playground.common.logging_setup import (
    JsonFormatter,
    SafeRecords,
    TextFormatter,
    escape_controls,
    log_context,
    register_secret,
    scrub,
    set_context_fallback,
)


@pytest.fixture(autouse=True)
def clean_state() -> Iterator[None]:
    yield
    set_context_fallback(dict)
    logging_setup._secrets.clear()


def record(message: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc else None
    return logging.LogRecord("t", logging.ERROR, __file__, 1, message, args, exc_info)


@pytest.mark.parametrize("text", [
    "GET /?token=abc123def&x=1", "Authorization: Bearer abc123def",
    "header bearer abc123def", "Cookie: llamon-playground-8765=abc123def"])
def test_credential_shapes_are_scrubbed(text: str) -> None:
    assert "abc123def" not in scrub(text) and "<redacted>" in scrub(text)


def test_registered_secrets_are_scrubbed_anywhere() -> None:
    register_secret("s3cr3t-value-0123456789")
    try:
        raise ValueError("parser choked on b'xs3cr3t-value-0123456789y'")
    except ValueError as exc:
        line = TextFormatter().format(record("failed: %s", "s3cr3t-value-0123456789", exc=exc))
    assert "s3cr3t-value-0123456789" not in line and "Traceback" in line


def test_json_lines_carry_the_context() -> None:
    set_context_fallback(lambda: {"run_id": "run_active", "generation": 3})
    with log_context(request_id="req_1"):
        doc = orjson.loads(JsonFormatter().format(record("hello %s", "you")))
    assert doc["message"] == "hello you" and doc["level"] == "error"
    assert (doc["request_id"], doc["run_id"], doc["generation"]) == ("req_1", "run_active", 3)
    with log_context(request_id="req_2", run_id="run_path"):
        doc = orjson.loads(JsonFormatter().format(record("x")))
    assert doc["run_id"] == "run_path"  # the request's run wins over the active one


def test_text_lines_name_the_context_and_skip_what_is_unknown() -> None:
    assert TextFormatter().format(record("plain")).endswith("plain")
    with log_context(request_id="req_9"):
        assert TextFormatter().format(record("x")).endswith("x [request_id=req_9]")


def test_a_broken_context_provider_never_breaks_a_log_line() -> None:
    set_context_fallback(lambda: 1 / 0)  # type: ignore[arg-type,return-value]
    assert TextFormatter().format(record("still here")).endswith("still here")


def test_settings_never_show_the_token() -> None:
    settings = build_settings(Path("/p"), {"LLAMON_PLAYGROUND_TOKEN": "tok-0123456789abcdef"})
    assert settings.front.token == "tok-0123456789abcdef"
    assert "tok-0123456789abcdef" not in repr(settings)


def test_control_characters_are_escaped_and_continuation_lines_indented() -> None:
    assert (escape_controls("a\nb\r\x1b[2J\x00\x85\u2028é")
            == "a\\x0ab\\x0d\\x1b[2J\\x00\\x85\\u2028é")
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "GET %s", ("/x\nWARNING y",),
                               None)
    assert SafeRecords().filter(record)
    try:
        raise ValueError("first\nWARNING forged")
    except ValueError:
        record.exc_info = sys.exc_info()
    lines = TextFormatter().format(record).splitlines()
    assert "GET /x\\x0aWARNING y" in lines[0]
    assert all(line.startswith("    ") for line in lines[1:]) and len(lines) > 2


def test_a_summary_says_the_first_at_once_and_the_rest_once_a_minute_with_a_count(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    summary = logging_setup.Summary(logging.getLogger("door"), interval=60.0,
                                    clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="door"):
        for n in range(10_000):
            now[0] = 1000.0 + n * 0.01  # 100 s of a flood, 100 a second
            summary.note("refused: 401 unauthorized", "GET %s -> 401", f"/x{n}")
        summary.note("refused: 403 host_not_allowed", "GET / -> 403")
        summary.flush(force=True)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "GET /x0 -> 401 (more like it: one line a minute at most)",
        "6000 more refused: 401 unauthorized in the last 60 s",
        "GET / -> 403 (more like it: one line a minute at most)",
        "3999 more refused: 401 unauthorized in the last 40 s"], said
    # A reason quiet for a whole minute is forgotten: its next one is said at once.
    caplog.clear()
    now[0] += 61
    summary.flush()
    with caplog.at_level(logging.INFO, logger="door"):
        summary.note("refused: 401 unauthorized", "GET /again -> 401")
    assert [r.getMessage() for r in caplog.records] == [
        "GET /again -> 401 (more like it: one line a minute at most)"]


def _rotating(path: Path, max_bytes: int = 1000) -> logging.Logger:
    handler = logging_setup.RotatingLog(path, max_bytes, 2, follow_stderr=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"rotating-{path.name}-{id(handler)}")
    logger.propagate = False
    logger.addHandler(handler)
    return logger


def test_a_log_file_rotates_at_its_size_keeps_its_backups_and_stays_private(
        tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    logger = _rotating(path)
    for n in range(100):
        logger.warning("line %03d %s", n, "x" * 90)
    for handler in logger.handlers:
        handler.close()
    files = sorted(tmp_path.iterdir())
    assert [p.name for p in files] == ["daemon.log", "daemon.log.1", "daemon.log.2"]
    assert all(p.stat().st_size <= 1000 and p.stat().st_mode & 0o777 == 0o600 for p in files)
    assert path.read_text().splitlines()[-1].startswith("line 099")


def test_a_log_file_another_process_rotated_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "front.log"
    first, second = _rotating(path), _rotating(path)
    first.warning("a" * 600)
    second.warning("b" * 600)  # over 1000 with the first's line: the second rotates
    first.warning("c" * 10)  # the first follows the name to the new file
    for logger in (first, second):
        for handler in logger.handlers:
            handler.close()
    assert path.read_text() == "b" * 600 + "\n" + "c" * 10 + "\n"
    assert (tmp_path / "front.log.1").read_text() == "a" * 600 + "\n"
