"""Loopback listening sockets of the fake game: the sensor streams and the control channel.

Both listen on 127.0.0.1 only and poll their stop event between accepts, so that stop() returns
promptly without closing the socket under a blocked accept().
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

LOOPBACK = "127.0.0.1"
ACCEPT_POLL_S = 0.1  # how often a waiting accept looks at the stop event


def listen_loopback(port: int, backlog: int) -> socket.socket | None:
    """A listening socket on 127.0.0.1:port (0 = a free port the kernel picks), or None if taken."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, port))
        listener.listen(backlog)
    except OSError:
        listener.close()
        return None
    listener.settimeout(ACCEPT_POLL_S)
    return listener


def accept_loop(listener: socket.socket, stop: threading.Event,
                handle: Callable[[socket.socket], None]) -> None:
    """Accept clients until `stop` is set; `handle` gets each connection in blocking mode."""
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            # Closed under us while stopping, or e.g. out of file descriptors: wait, then retry.
            stop.wait(ACCEPT_POLL_S)
            continue
        conn.settimeout(None)
        handle(conn)
