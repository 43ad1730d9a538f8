"""The loopback rule of the game's sockets (ROS-free): its streams are served on 127.0.0.1 only."""

from __future__ import annotations

import ipaddress


class NotLoopbackError(ValueError):
    """The host is not a loopback address."""


def require_loopback(host: str) -> str:
    """Return `host` when it names this computer's loopback (127.0.0.0/8, ::1, localhost)."""
    name = host.strip()
    if name.lower() == "localhost":
        return name
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        raise NotLoopbackError(
            f"host {host!r} is not a loopback address: the sensor stream is served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)") from None
    mapped = getattr(address, "ipv4_mapped", None)
    if not (address.is_loopback or (mapped is not None and mapped.is_loopback)):
        raise NotLoopbackError(
            f"host {host!r} is not a loopback address: the sensor stream is served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)")
    return name
