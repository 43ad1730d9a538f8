"""The fake game's control channel: one JSON object per line on 127.0.0.1 (see the README).

    {"op": "step", "steps": N}  -> {"ok": true, "step": S, "time_s": T}   (after the barriers)
    {"op": "pause"} / {"op": "play"} / {"op": "status"}  -> {"ok": true, ...}
    anything else -> {"ok": false, "error": "..."}; the connection stays open.

Every connection has its own thread; step requests are serialised by the session. A line longer
than MAX_LINE_BYTES is answered with an error and skipped, so a peer cannot make us buffer more.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

from .listener import accept_loop, listen_loopback
from .server import LogFn, stdout_log
from .session import Session

MAX_LINE_BYTES = 64 * 1024


class ControlServer:
    def __init__(self, port: int, session: Session, log: LogFn = stdout_log):
        self.port = port
        self._session = session
        self._log = log
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> bool:
        listener = listen_loopback(self.port, backlog=8)
        if listener is None:
            self._log(f"ACRES_SIM_CONTROL_LISTEN_FAILED port={self.port}")
            return False
        self.port = listener.getsockname()[1]
        self._listener = listener
        thread = threading.Thread(target=self._accept_loop, name="control", daemon=True)
        thread.start()
        self._threads.append(thread)
        self._log(f"ACRES_SIM_CONTROL_LISTENING port={self.port}")
        return True

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for thread in self._threads:
            thread.join(timeout=5.0)
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _accept_loop(self) -> None:
        assert self._listener is not None
        accept_loop(self._listener, self._stop, self._start_client)

    def _start_client(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.add(conn)
        thread = threading.Thread(target=self._serve, args=(conn,), name="control-client", daemon=True)
        thread.start()
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        skipping = False  # inside an over-long line: drop bytes up to its newline
        try:
            while not self._stop.is_set():
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        if len(buffer) > MAX_LINE_BYTES and not skipping:
                            self._reply(conn, {"ok": False,
                                               "error": f"request longer than {MAX_LINE_BYTES} bytes"})
                            skipping = True
                        if skipping:
                            buffer.clear()
                        break
                    line = bytes(buffer[:newline])
                    del buffer[: newline + 1]
                    if skipping:
                        skipping = False
                        continue
                    if line.strip():
                        self._reply(conn, self.handle(line))
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    @staticmethod
    def _reply(conn: socket.socket, answer: dict[str, Any]) -> None:
        conn.sendall(json.dumps(answer, separators=(",", ":")).encode() + b"\n")

    def handle(self, line: bytes) -> dict[str, Any]:
        """Answer one request line (public so that it can be exercised without a socket)."""
        try:
            request = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            return {"ok": False, "error": "request is not UTF-8"}
        except json.JSONDecodeError as exc:
            return {"ok": False, "error": f"bad JSON: {exc.msg} at column {exc.colno}"}
        except RecursionError:
            return {"ok": False, "error": "bad JSON: nested too deeply"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "request must be a JSON object"}
        op = request.get("op")
        session = self._session
        try:
            if op == "step":
                step, time_s = session.step(request.get("steps"))
                return {"ok": True, "step": step, "time_s": time_s}
            if op == "pause":
                session.pause()
                return {"ok": True, **session.status()}
            if op == "play":
                session.play()
                return {"ok": True, **session.status()}
            if op == "status":
                return {"ok": True, **session.status()}
        except (ValueError, RuntimeError) as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 -- e.g. a failed render: answer, keep the channel
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        return {"ok": False, "error": f"unknown op {op!r}: expected step, pause, play or status"}
