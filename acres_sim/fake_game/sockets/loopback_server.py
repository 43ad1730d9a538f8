"""The fake game's listening sockets (ROS-free): what the sensor streams, the Vehicle Bridges and the
control channel share. Each listens on 127.0.0.1 only and polls its stop event between accepts,
so that stop() returns promptly without closing the socket under a blocked accept().
"""

from __future__ import annotations

import socket
import threading

from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log

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


class LoopbackServer:
    """Listens on 127.0.0.1:port and hands each client to _handle() on its accept thread (the next
    client waits in the listen queue until _handle returns, unless it hands the connection on).

    Log lines: ACRES_<label>_LISTENING / _LISTEN_FAILED with `tags` (e.g. "agent=polaris") and the
    port. Subclasses implement _handle, keep their state under `_lock` (a condition that stop()
    notifies, so a sender waiting on it wakes) and may extend _wake."""

    def __init__(self, port: int, *, label: str, tags: str = "", backlog: int = 4, log: LogFn = stdout_log):
        self.port = port
        self._label = label
        self._tags = f"{tags} " if tags else ""
        self._backlog = backlog
        self._log = log
        self._stop = threading.Event()
        self._lock = threading.Condition()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listener is not None

    def start(self) -> bool:
        """Listen and start accepting; False (and LISTEN_FAILED) when the port is taken."""
        listener = listen_loopback(self.port, self._backlog)
        if listener is None:
            self._log(f"ACRES_{self._label}_LISTEN_FAILED {self._tags}port={self.port}")
            return False
        self.port = listener.getsockname()[1]  # port 0 asks the kernel for a free one
        self._listener = listener
        # Logged before the accept thread runs: a client already waiting connects at once, and its
        # CONNECTED line must come after LISTENING.
        self._log(f"ACRES_{self._label}_LISTENING {self._tags}port={self.port}")
        name = f"{self._label.lower()}-{self.port}"
        self._thread = threading.Thread(target=self._accept_loop, name=name, daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stop accepting, interrupt the client (_wake), join the accept thread, close the socket."""
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _wake(self) -> None:
        """What stop() must interrupt besides the accept loop: whoever waits on the lock."""
        with self._lock:
            self._lock.notify_all()

    def _handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                # Closed under us while stopping, or e.g. out of file descriptors: wait, then retry.
                self._stop.wait(ACCEPT_POLL_S)
                continue
            conn.settimeout(None)
            self._handle(conn)
