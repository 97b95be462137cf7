"""A run request from `send`'s options: the text, `--data` and `--file` parts, `--metadata`
and `--changed-file`, checked here so a bad one is one line on stderr and nothing is sent."""

from __future__ import annotations

import argparse
import base64
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from llamon_playground.cli.client import InputPart, text_part
from llamon_playground.cli.terminal.hints import BadArgument


@dataclass(frozen=True, slots=True)
class RunRequestArgs:
    """What `create_run` takes, read from the command line."""

    parts: list[InputPart]
    metadata: dict[str, Any] | None
    changed_files: list[str] | None


def json_object(option: str, text: str) -> dict[str, Any]:
    """`text` parsed as a JSON object, or BadArgument naming `option`."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadArgument(f"{option} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadArgument(f"{option} must be a JSON object ({{...}}), not {type(doc).__name__}")
    return doc


def file_part(path_text: str) -> InputPart:
    """An inline file part: the file's bytes as base64, its name and guessed MIME type."""
    path = Path(path_text)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadArgument(f"--file {path_text}: cannot read it ({exc.strerror or exc})") from None
    part: dict[str, Any] = {"kind": "file", "name": path.name,
                            "bytes_base64": base64.b64encode(raw).decode("ascii")}
    mime, _ = mimetypes.guess_type(path.name)
    if mime:
        part["mime"] = mime
    return part  # type: ignore[return-value]


def run_request(args: argparse.Namespace) -> RunRequestArgs:
    """The parts in order (the text unless it is "", each --data, each --file), metadata and
    changed files; BadArgument when one cannot be used or there is no part at all."""
    parts: list[InputPart] = [text_part(args.text)] if args.text else []
    parts += [{"kind": "data", "data": json_object("--data", d)} for d in args.data or []]
    parts += [file_part(f) for f in args.file or []]
    if not parts:
        raise BadArgument("nothing to send: give a TEXT, --data JSON or --file PATH")
    metadata = json_object("--metadata", args.metadata) if args.metadata is not None else None
    return RunRequestArgs(parts, metadata, args.changed_file)
