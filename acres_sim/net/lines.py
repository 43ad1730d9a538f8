"""Newline-delimited messages from a socket, memory bounded (ROS-free): what the game's JSON sockets
(the Vehicle Bridge on both sides) read with. A line longer than max_bytes is skipped to its end
and reported once as TOO_LONG; blank lines are passed over."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

TOO_LONG = None  # what read_lines yields for a line it skipped
_CHUNK = 65536


def read_lines(sock: socket.socket, stop: threading.Event, max_bytes: int) -> Iterator[bytes | None]:
    """Each line (without its newline) until the peer closes, the socket fails or `stop` is set."""
    pending = bytearray()
    skipping = False  # inside a line already reported as too long
    while not stop.is_set():
        try:
            chunk = sock.recv(_CHUNK)
        except OSError:
            return
        if not chunk:
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                pending += piece
                if len(pending) > max_bytes:
                    pending.clear()
                    skipping = True
                    yield TOO_LONG
            if end < 0:
                break
            if skipping:
                skipping = False
            elif pending.strip():
                yield bytes(pending)
            pending.clear()
            start = end + 1
