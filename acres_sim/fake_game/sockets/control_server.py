"""The fake game's control channel: one JSON object per line on 127.0.0.1 (see the README).

    {"op": "step", "steps": N}  -> {"ok": true, "step": S, "time_s": T}   (after the barriers)
        "paused_only": true refuses (code incorrect_state) while the world is playing
    {"op": "pause"} / {"op": "play"} / {"op": "status"}  -> {"ok": true, ...}
    {"op": "reset", "scope": "time" | "state" | "all" | "spawned"}  -> {"ok": true, "step": 0, "time_s": 0.0}
    {"op": "entities"}  -> {"ok": true, "entities": [...]}
    {"op": "get_state", "agent": A}  -> {"ok": true, "agent": A, "position": [...], ...}
    {"op": "set_state", "agent": A, "position": [x, y, z], "orientation": [x, y, z, w],
     "linear_velocity": [...], "angular_velocity": [...]}  -> the new state, as get_state
    {"op": "record_start", "path": F} / {"op": "record_stop"}  -> the recording's status / summary
    {"op": "replay_start", "path": F} / {"op": "replay_stop"}  -> the replay's status
    {"op": "spawnables"}  -> {"ok": true, "spawnables": [{"uri", "description", "size_m"}, ...]}
    {"op": "spawn", "uri": U, "name": N, "position": [x, y, z], "orientation": [x, y, z, w],
     "allow_renaming": false}  -> the object's state (as get_state); codes name_taken, name_invalid,
                                  no_resource, invalid_pose
    {"op": "delete", "name": N}  -> {"ok": true}; codes not_found, not_deletable (an agent)
    {"op": "set_shift", "agent": A, "shift": {VehicleShift fields}}  -> {"ok": true, "shift": {...}}
    {"op": "set_conditions", "conditions": {Conditions fields}}  -> {"ok": true, "conditions": {...}}
                                  (fields left out keep their value); code out_of_range
    {"op": "episode_status"}  -> {"ok": true, "episode_id": ..., "recording": {...}, "replay": {...}}
    {"op": "watch"}  -> {"ok": true}, then this connection carries events, one JSON object per line:
        {"event": "episode" | "agents" | "objects" | "shifts" | "conditions" | "farm_events" |
         "farm_stamps" | "states" | "recording" | "replay", "body": {...}}
        (body: acres_interfaces Episode, Agents, WorldObjects, VehicleShifts, Conditions,
        FarmEvents, FarmStamps, AgentStates as dicts of their fields; the recording's and the
        replay's status); every step's farm events, stamps and states before the step's answer.
    anything else -> {"ok": false, "error": "...", "code": C}; the connection stays open.

Error codes: bad_request (malformed or out-of-range request), not_found (no such entity),
name_taken, name_invalid, no_resource (spawn), not_deletable (an agent), out_of_range (a shift or
conditions),
invalid_pose (a pose that cannot be placed), incorrect_state (a paused_only step while playing),
file_error (an episode log that cannot be written or read), ended (the session has ended), failed
(anything else).

A watch connection that falls more than MAX_QUEUED_EVENTS behind is closed (memory stays bounded; it
may connect again).

Every connection has its own thread; step requests are serialised by the session. A line longer
than MAX_LINE_BYTES is answered with an error and skipped, so a peer cannot make us buffer more.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import socket
import threading
from typing import Any

from acres_sim.episode.log_file import EpisodeLogError
from acres_sim.fake_game.sockets.loopback_server import LoopbackServer
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log
from acres_sim.fake_game.simulation.entities import (
    EntityState,
    InvalidPose,
    NameInvalid,
    NameTaken,
    NotDeletable,
    OutOfRange,
    UnknownAgent,
    UnknownResource,
)
from acres_sim.fake_game.simulation.session import NotPaused, Session

MAX_LINE_BYTES = 64 * 1024
# The refusals a request may meet and their codes (the first that matches); other ValueErrors are
# bad_request, RuntimeErrors ended.
REFUSAL_CODES = (
    (UnknownAgent, "not_found"), (InvalidPose, "invalid_pose"), (NameTaken, "name_taken"),
    (NameInvalid, "name_invalid"), (UnknownResource, "no_resource"), (NotDeletable, "not_deletable"),
    (OutOfRange, "out_of_range"), (EpisodeLogError, "file_error"), (NotPaused, "incorrect_state"),
)
REFUSALS = tuple(kind for kind, _code in REFUSAL_CODES)
MAX_QUEUED_EVENTS = 12288  # 34 s of steps at 120 Hz (farm events, stamps, states)


class _Watcher:
    """One watch connection: events queued by the simulation, sent by a thread of its own."""

    def __init__(self, conn: socket.socket, log: LogFn):
        self._conn = conn
        self._log = log
        self._queue: collections.deque[bytes] = collections.deque()
        self._ready = threading.Condition()
        self._closed = False

    def publish(self, event: str, body: dict[str, Any]) -> None:
        line = json.dumps({"event": event, "body": body}, separators=(",", ":")).encode() + b"\n"
        with self._ready:
            if self._closed:
                return
            if len(self._queue) >= MAX_QUEUED_EVENTS:
                self._log(f"ACRES_FAKE_GAME_WATCH_DROPPED reason=more than {MAX_QUEUED_EVENTS} events behind")
                self._close_locked()
                return
            self._queue.append(line)
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._close_locked()

    def _close_locked(self) -> None:
        self._closed = True
        self._queue.clear()
        self._ready.notify_all()
        try:
            self._conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def send_forever(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
                batch = b"".join(self._queue)
                self._queue.clear()
            try:
                self._conn.sendall(batch)
            except OSError:
                self.close()
                return


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
        watcher: _Watcher | None = None
        try:
            for line in read_lines(conn, self._stop, MAX_LINE_BYTES):
                if watcher is not None:
                    continue  # a watch connection only listens; its input is read to see it close
                if line is TOO_LONG:
                    self._reply(conn, _error("bad_request", f"request longer than {MAX_LINE_BYTES} bytes"))
                elif _is_watch(line):
                    self._reply(conn, {"ok": True})
                    watcher = _Watcher(conn, self._log)
                    threading.Thread(target=watcher.send_forever, name="control-watch", daemon=True).start()
                    self._session.watch(watcher)
                else:
                    self._reply(conn, self.handle(line))
        except OSError:
            return
        finally:
            if watcher is not None:
                self._session.unwatch(watcher)
                watcher.close()
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
        except REFUSALS as exc:
            return _error(next(code for kind, code in REFUSAL_CODES if isinstance(exc, kind)), str(exc))
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
        return {"step": step, "time_s": time_s}  # the watchers have this step's states queued

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

    @staticmethod
    def _spawn(session: Session, request: dict[str, Any]) -> dict[str, Any]:
        return _state(session.spawn(request.get("name", ""), request.get("uri"), request.get("position"),
                                    request.get("orientation", [0.0, 0.0, 0.0, 1.0]),
                                    request.get("allow_renaming", False)))

    _OPS = {
        "step": _step,
        "pause": _pause,
        "play": _play,
        "status": lambda session, request: session.status(),
        "reset": _reset,
        "entities": lambda session, request: {"entities": session.entities},
        "spawnables": lambda session, request: {"spawnables": session.spawnables()},
        "spawn": _spawn,
        "delete": lambda session, request: session.delete(request.get("name")) or {},
        "set_shift": lambda session, request: {"shift": session.set_shift(request.get("agent"),
                                                                          request.get("shift"))},
        "set_conditions": lambda session, request: {"conditions": session.set_conditions(
            request.get("conditions"))},
        "get_state": _get_state,
        "set_state": _set_state,
        "record_start": lambda session, request: session.start_recording(request.get("path")),
        "record_stop": lambda session, request: session.stop_recording(),
        "replay_start": lambda session, request: session.start_replay(request.get("path")),
        "replay_stop": lambda session, request: session.stop_replay(),
        "episode_status": lambda session, request: session.episode_status(),
    }


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": message, "code": code}


def _state(state: EntityState) -> dict[str, Any]:
    return dataclasses.asdict(state)


def _is_watch(line: bytes) -> bool:
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(request, dict) and request.get("op") == "watch"
