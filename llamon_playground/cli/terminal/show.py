"""Small terminal renderings the CLI's commands share."""

from __future__ import annotations

from typing import Any


def print_warnings(warnings: list[Any]) -> None:
    """The Host's warnings, each with its fix (a missing module: the install command)."""
    for warning in warnings:
        if isinstance(warning, dict):
            fix = f"\n            fix: {warning['fix']}" if warning.get("fix") else ""
            print(f"warning:    {warning.get('message') or warning.get('code')}{fix}")
        else:
            print(f"warning:    {warning}")


def _picture(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␍ for CR...
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}"  # C1 controls have no pictures


_VISIBLE = {code: _picture(chr(code)) for code in (*range(0x20), *range(0x7F, 0xA0))
            if code != 0x09}


def visible(text: str) -> str:
    """A Host's line with its control characters shown, not obeyed: an ANSI escape or a
    carriage return cannot repaint the terminal or hide what came before it."""
    return text.translate(_VISIBLE)
