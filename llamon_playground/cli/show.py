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
