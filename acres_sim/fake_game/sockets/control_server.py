"""The fake game's control channel: one JSON object per line on 127.0.0.1 (see the README).

    {"op": "step", "steps": N}  -> {"ok": true, "step": S, "time_s": T}   (after the barriers)
        "paused_only": true refuses (code incorrect_state) while the world is playing
    {"op": "pause"} / {"op": "play"} / {"op": "status"}  -> {"ok": true, ...}
    {"op": "reset", "scope": "time" | "state" | "all"}  -> {"ok": true, "step": 0, "time_s": 0.0}
    {"op": "entities"}  -> {"ok": true, "entities": [...]}
    {"op": "get_state", "agent": A}  -> {"ok": true, "agent": A, "position": [...], ...}
    {"op": "set_state", "agent": A, "position": [x, y, z], "orientation": [x, y, z, w],
     "linear_velocity": [...], "angular_velocity": [...]}  -> the new state, as get_state
    anything else -> {"ok": false, "error": "...", "code": C}; the connection stays open.

Error codes: bad_request (malformed or out-of-range request), not_found (no such agent),
invalid_pose (a pose that cannot be placed), incorrect_state (a paused_only step while playing),
ended (the session has ended), failed (anything else).

Every connection has its own thread; step requests are serialised by the session. A line longer
than MAX_LINE_BYTES is answered with an error and skipped, so a peer cannot make us buffer more.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from typing import Any

from acres_sim.fake_game.sockets.loopback_server import LoopbackServer
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log
from acres_sim.fake_game.simulation.entities import EntityState, InvalidPose, UnknownAgent
from acres_sim.fake_game.simulation.session import NotPaused, Session

MAX_LINE_BYTES = 64 * 1024


class ControlServer(LoopbackServer):
    def __init__(self, port: int, session: Session, log: LogFn = stdout_log):
        super().__init__(port, label="SIM_CONTROL", backlog=8, log=log)
        self._session = session
        self._threads: list[threading.Thread] = []
        self._conns: set[socket.socket] = set()

    def stop(self) -> None:
        super().stop()
        for thread in self._threads:
            thread.join(timeout=5.0)

    def _wake(self) -> None:
        with self._lock:
            for conn in self._conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _handle(self, conn: socket.socket) -> None:
        """Every client on a thread of its own: several may send requests."""
        with self._lock:
            self._conns.add(conn)
        thread = threading.Thread(target=self._serve, args=(conn,), name="control-client", daemon=True)
        thread.start()
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]

    def _serve(self, conn: socket.socket) -> None:
        try:
            for line in read_lines(conn, self._stop, MAX_LINE_BYTES):
                if line is TOO_LONG:
                    self._reply(conn, _error("bad_request", f"request longer than {MAX_LINE_BYTES} bytes"))
                else:
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
            return _error("bad_request", "request is not UTF-8")
        except json.JSONDecodeError as exc:
            return _error("bad_request", f"bad JSON: {exc.msg} at column {exc.colno}")
        except RecursionError:
            return _error("bad_request", "bad JSON: nested too deeply")
        if not isinstance(request, dict):
            return _error("bad_request", "request must be a JSON object")
        op = request.get("op")
        answer = self._OPS.get(op) if isinstance(op, str) else None
        if answer is None:
            return _error("bad_request", f"unknown op {op!r}: expected {', '.join(self._OPS)}")
        try:
            return {"ok": True, **answer(self._session, request)}
        except UnknownAgent as exc:
            return _error("not_found", str(exc))
        except InvalidPose as exc:
            return _error("invalid_pose", str(exc))
        except NotPaused as exc:
            return _error("incorrect_state", str(exc))
        except ValueError as exc:
            return _error("bad_request", str(exc))
        except RuntimeError as exc:
            return _error("ended", str(exc))
        except Exception as exc:  # noqa: BLE001 -- e.g. a failed render: answer, keep the channel
            return _error("failed", f"{type(exc).__name__}: {exc}")

    @staticmethod
    def _step(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        paused_only = request.get("paused_only", False)
        if not isinstance(paused_only, bool):
            raise ValueError(f"paused_only must be true or false, got {paused_only!r}")
        step, time_s = session.step(request.get("steps"), paused_only)
        return {"step": step, "time_s": time_s}

    @staticmethod
    def _pause(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        session.pause()
        return session.status()

    @staticmethod
    def _play(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        session.play()
        return session.status()

    @staticmethod
    def _reset(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        step, time_s = session.reset(request.get("scope"))
        return {"step": step, "time_s": time_s}

    @staticmethod
    def _get_state(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        return _state(session.entity_state(request.get("agent")))

    @staticmethod
    def _set_state(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        zero = [0.0, 0.0, 0.0]
        return _state(session.set_entity_state(
            request.get("agent"), request.get("position"), request.get("orientation"),
            request.get("linear_velocity", zero), request.get("angular_velocity", zero)))

    _OPS = {
        "step": _step,
        "pause": _pause,
        "play": _play,
        "status": lambda session, request: session.status(),
        "reset": _reset,
        "entities": lambda session, request: {"entities": session.agents},
        "get_state": _get_state,
        "set_state": _set_state,
    }


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": message, "code": code}


def _state(state: EntityState) -> dict[str, Any]:
    return dataclasses.asdict(state)
