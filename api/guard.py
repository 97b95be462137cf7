"""What the front allows in: loopback binds only."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = {"localhost"}


class NonLoopbackBind(Exception):
    """The front was asked to listen somewhere other than loopback."""


def check_bind_address(host: str) -> None:
    if host in LOOPBACK_NAMES:
        return
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError as exc:
        raise NonLoopbackBind(f"{host!r} is not a loopback address") from exc
    if not address.is_loopback:
        raise NonLoopbackBind(f"{host} is not a loopback address; the front serves loopback only")
