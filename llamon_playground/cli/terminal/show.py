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


MB = 1024 * 1024


def _mb(value: Any) -> str:
    return f"{int(value or 0) / MB:,.1f} MB"


def _limits(policy: dict[str, Any]) -> str:
    if not policy.get("max_bytes") and not policy.get("max_age_days"):
        return "off (keep everything)"
    parts = []
    if policy.get("max_bytes"):
        parts.append(f"at most {_mb(policy['max_bytes'])}")
    if policy.get("max_age_days"):
        parts.append(f"sessions used within {policy['max_age_days']:g} days")
    return ", ".join(parts)


def print_history(doc: dict[str, Any]) -> None:
    """`GET /history`: size, counts, the retention policy and what it would remove."""
    counts, size, plan = doc["counts"], doc["bytes"], doc["plan"]
    print(f"size:     {_mb(size['database'] + size['files'])} (database {_mb(size['database'])}, "
          f"files {_mb(size['files'])}; in use {_mb(plan['used_bytes'])})")
    print(f"holds:    {counts['sessions']:,} sessions, {counts['runs']:,} runs, "
          f"{counts['events']:,} events, {counts['files']:,} files")
    print(f"policy:   {_limits(doc['policy'])}")
    if plan["sessions"]:
        print(f"would remove: {len(plan['sessions']):,} sessions, {plan['runs']:,} runs, "
              f"about {_mb(plan['bytes'])}:")
        for session_id in plan["sessions"]:
            print(f"  {session_id}")
    else:
        print("would remove: nothing")


def print_trimmed(doc: dict[str, Any]) -> None:
    """`POST /history/trim`: what went and the database's size before and after."""
    removed = doc["removed"]
    print(f"removed {removed['sessions']:,} sessions, {removed['runs']:,} runs, "
          f"{doc['blobs_removed']:,} files; database {_mb(doc['bytes_before'])} -> "
          f"{_mb(doc['bytes_after'])}")
