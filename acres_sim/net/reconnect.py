"""A client's connection to one of the game's loopback sockets, kept up on a thread of its own
(ROS-free): the one reconnect loop of the sensor stream's and the Vehicle Bridge's clients.

connect (again after every loss, waiting an exponential backoff between attempts), hand each
connection to `serve` until it returns, close it; stop() from any thread shuts the socket down, which
wakes a blocked receive at once, so reads need no timeout to poll.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from acres_sim.net.loopback import connect, require_loopback


class Backoff:
    """Exponential backoff between min_s and max_s; reset after a connection that works."""

    def __init__(self, min_s: float, max_s: float):
        if min_s <= 0 or max_s < min_s:
            raise ValueError(f"reconnect delays need 0 < min ({min_s}) <= max ({max_s})")
        self.min_s = min_s
        self.max_s = max_s
        self._next = min_s

    def next_delay(self) -> float:
        delay = self._next
        self._next = min(self._next * 2.0, self.max_s)
        return delay

    def reset(self) -> None:
        self._next = self.min_s


class ReconnectLoop:
    """Keeps one connection to host:port. The hooks run on its thread:
    on_attempt() before each connection attempt, on_stopped() when the loop ends;
    on_unreachable(reason, changed) after a failed one
    (changed: the reason differs from the last failure's, so a caller logs once per change);
    serve(sock) for as long as a connection lasts (the loop closes it afterwards)."""

    def __init__(self, host: str, port: int, serve: Callable[[socket.socket], None], *, name: str,
                 reconnect_min_s: float, reconnect_max_s: float,
                 on_unreachable: Callable[[str, bool], None],
                 on_attempt: Callable[[], None] = lambda: None,
                 on_stopped: Callable[[], None] = lambda: None,
                 connect_timeout_s: float = 2.0, recv_buffer_bytes: int | None = None):
        self.host = require_loopback(host)
        self.port = int(port)
        self.backoff = Backoff(reconnect_min_s, reconnect_max_s)
        self.stopping = threading.Event()
        self._serve = serve
        self._name = name
        self._on_unreachable = on_unreachable
        self._on_attempt = on_attempt
        self._on_stopped = on_stopped
        self._connect_timeout_s = connect_timeout_s
        self._recv_buffer_bytes = recv_buffer_bytes
        self._sock_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"{self._name} already started")
        self._thread = threading.Thread(target=self.run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 1.0) -> bool:
        """Stop: unblock any read and join the thread. True when it has ended."""
        self.stopping.set()
        with self._sock_lock:
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
            return not self._thread.is_alive()
        return True

    def sendall(self, data: bytes) -> bool:
        """Send on the current connection; False when there is none or it failed (nothing is kept)."""
        with self._sock_lock:
            if self._sock is None:
                return False
            try:
                self._sock.sendall(data)
                return True
            except OSError:
                return False

    def run(self) -> None:
        """The loop (start() runs it on a thread of its own) until stop(); then on_stopped()."""
        try:
            self._loop()
        finally:
            self._on_stopped()

    def _loop(self) -> None:
        last_failure = ""
        while not self.stopping.is_set():
            self._on_attempt()
            try:
                sock = connect(self.host, self.port, self._connect_timeout_s, self._recv_buffer_bytes)
            except OSError as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
                self._on_unreachable(reason, reason != last_failure)
                last_failure = reason
                self.stopping.wait(self.backoff.next_delay())
                continue
            last_failure = ""
            with self._sock_lock:
                if self.stopping.is_set():
                    sock.close()
                    return
                self._sock = sock
            try:
                self._serve(sock)
            finally:
                with self._sock_lock:
                    self._sock = None
                try:
                    sock.close()
                except OSError:
                    pass
            if not self.stopping.is_set():
                self.stopping.wait(self.backoff.next_delay())
