"""The loopback rule of the game's sockets (ROS-free): they are served on 127.0.0.1 only; and the
one way a client connects to one of them."""

from __future__ import annotations

import ipaddress
import socket


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
            f"host {host!r} is not a loopback address: the game's sockets are served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)") from None
    mapped = getattr(address, "ipv4_mapped", None)
    if not (address.is_loopback or (mapped is not None and mapped.is_loopback)):
        raise NotLoopbackError(
            f"host {host!r} is not a loopback address: the game's sockets are served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)")
    return name


def connect(host: str, port: int, timeout_s: float = 2.0,
            recv_buffer_bytes: int | None = None) -> socket.socket:
    """A TCP connection to host:port with TCP_NODELAY (and the receive buffer asked for), in
    blocking mode."""
    last: OSError | None = None
    for family, kind, proto, _name, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        try:
            if recv_buffer_bytes:  # before connect, so that the window scale is negotiated for it
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer_bytes)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(timeout_s)
            sock.connect(address)
            sock.settimeout(None)
            return sock
        except OSError as exc:
            last = exc
            sock.close()
    raise last if last is not None else OSError(f"no address for {host}:{port}")
