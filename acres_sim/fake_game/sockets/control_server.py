"""The fake game's control channel: the game side of acres_sim.channels.control (its ops, fields and
codes), one JSON object per line on 127.0.0.1.

A watch connection that falls more than MAX_QUEUED_EVENTS behind is closed (memory stays bounded; it
may connect again). Every connection has its own thread; step requests are serialised by the
session. A line longer than MAX_REQUEST_BYTES is answered with an error and skipped, so a peer
cannot make us buffer more.
"""

from __future__ import annotations

import collections
import json
import socket
import threading
from typing import Any

from acres_sim.channels.control import (
    BAD_REQUEST,
    ENDED,
    FEATURES,
    FAILED,
    FILE_ERROR,
    LOCKED,
    MAX_REQUEST_BYTES,
    OPS,
    STEPPING_OPS,
    Refusal,
    boolean,
    entity_name,
    error_answer,
    state_answer,
    watch_events,
)
from acres_sim.episode.log_file import EpisodeLogError
from acres_sim.fake_game.simulation.fake_world import FakeWorld
from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log
from acres_sim.fake_game.sockets.loopback_server import LoopbackServer
from acres_sim.net.lines import TOO_LONG, read_lines

MAX_QUEUED_EVENTS = 12288  # 34 s of steps at 120 Hz (farm events, stamps, states)


class _Watcher:
    """One watch connection: events queued by the simulation, sent by a thread of its own; `events`:
    the ones it asked for (None: all)."""

    def __init__(self, conn: socket.socket, log: LogFn, events: frozenset[str] | None = None):
        self._conn = conn
        self._log = log
        self._events = events
        self._queue: collections.deque[bytes] = collections.deque()
        self._ready = threading.Condition()
        self._closed = False

    def wants(self, event: str) -> bool:
        return self._events is None or event in self._events

    def publish(self, event: str, body: dict[str, Any]) -> None:
        if self._events is not None and event not in self._events:
            return  # not asked for: not even encoded
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
    def __init__(self, port: int, world: FakeWorld, log: LogFn = stdout_log):
        super().__init__(port, label="SIM_CONTROL", backlog=8, log=log)
        self._world = world
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
            for line in read_lines(conn, self._stop, MAX_REQUEST_BYTES):
                if watcher is not None:
                    continue  # a watch connection only listens; its input is read to see it close
                if line is TOO_LONG:
                    self._reply(conn, error_answer(BAD_REQUEST,
                                                   f"request longer than {MAX_REQUEST_BYTES} bytes"))
                elif (watch := _watch_request(line)) is not None:
                    try:
                        events = watch_events(watch)
                    except Refusal as exc:
                        self._reply(conn, error_answer(exc.code, str(exc)))
                        continue
                    self._reply(conn, {"ok": True})
                    watcher = _Watcher(conn, self._log, events)
                    threading.Thread(target=watcher.send_forever, name="control-watch", daemon=True).start()
                    self._world.watch(watcher)
                else:
                    self._reply(conn, self.handle(line))
        except OSError:
            return
        finally:
            if watcher is not None:
                self._world.unwatch(watcher)
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
            return error_answer(BAD_REQUEST, "request is not UTF-8")
        except json.JSONDecodeError as exc:
            return error_answer(BAD_REQUEST, f"bad JSON: {exc.msg} at column {exc.colno}")
        except RecursionError:
            return error_answer(BAD_REQUEST, "bad JSON: nested too deeply")
        if not isinstance(request, dict):
            return error_answer(BAD_REQUEST, "request must be a JSON object")
        op = request.get("op")
        answer = _ANSWERS.get(op) if isinstance(op, str) else None
        if answer is None:
            return error_answer(BAD_REQUEST, f"unknown op {op!r}: expected {', '.join(OPS)}")
        token = self._world.session.config.stepping_token
        if token and op in STEPPING_OPS and request.get("token") != token:
            return error_answer(LOCKED, f"{op}: a scenario run steps this world (it alone steps, resets, "
                                        "pauses and plays it until it ends)")
        try:
            return {"ok": True, **answer(self._world, request)}
        except Refusal as exc:
            return error_answer(exc.code, str(exc))
        except EpisodeLogError as exc:
            return error_answer(FILE_ERROR, str(exc))
        except ValueError as exc:
            return error_answer(BAD_REQUEST, str(exc))
        except RuntimeError as exc:
            return error_answer(ENDED, str(exc))
        except Exception as exc:  # noqa: BLE001 -- e.g. a failed render: answer, keep the channel
            return error_answer(FAILED, f"{type(exc).__name__}: {exc}")


def _step(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    # the watchers have this step's states queued
    return world.step(request.get("steps"), boolean(request, "paused_only"), boolean(request, "summary"),
                      request.get("latched_since", -1))


def _set_state(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    zero = [0.0, 0.0, 0.0]
    return state_answer(world.world.set_entity_state(
        entity_name(request), request.get("position"), request.get("orientation"),
        request.get("linear_velocity", zero), request.get("angular_velocity", zero),
        boolean(request, "on_ground")))


def _task(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    world.publish_task(request.get("status"))
    return {}


def _spawn(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    return state_answer(world.world.spawn(
        request.get("name", ""), request.get("uri"), request.get("position"),
        request.get("orientation", [0.0, 0.0, 0.0, 1.0]), request.get("allow_renaming", False)))


def _reset(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    step, time_s = world.session.reset(request.get("scope"), request.get("seed"))
    return {"step": step, "time_s": time_s}


def _paused(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    world.session.pause()
    return world.session.status()


def _playing(world: FakeWorld, request: dict[str, Any]) -> dict[str, Any]:
    world.session.play()
    return world.session.status()


# Every op but watch (which turns the connection into an event feed).
_ANSWERS = {
    "step": _step,
    "pause": _paused,
    "play": _playing,
    "status": lambda world, request: {**world.session.status(), "watchers": world.hub.listener_count,
                                      "features": list(FEATURES)},
    "reset": _reset,
    "entities": lambda world, request: {"entities": world.world.entities},
    "spawnables": lambda world, request: {"spawnables": world.world.spawnables()},
    "spawn": _spawn,
    "delete": lambda world, request: world.world.delete(request.get("name")) or {},
    "set_shift": lambda world, request: {"shift": world.world.set_shift(request.get("agent"),
                                                                        request.get("shift"))},
    "set_conditions": lambda world, request: {"conditions": world.world.set_conditions(
        request.get("conditions"))},
    "get_state": lambda world, request: state_answer(world.world.entity_state(entity_name(request))),
    "set_state": _set_state,
    "record_start": lambda world, request: world.recorder.start(request.get("path")),
    "record_stop": lambda world, request: world.recorder.stop(),
    "replay_start": lambda world, request: world.replay.start(request.get("path")),
    "replay_stop": lambda world, request: world.replay.stop(),
    "episode_status": lambda world, request: world.episode_status(),
    "task": _task,
    "republish": lambda world, request: {"step": world.republish_states()},
}
assert set(_ANSWERS) | {"watch"} == set(OPS), "every op of the channel is answered"


def _watch_request(line: bytes) -> dict[str, Any] | None:
    try:
        request = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return request if isinstance(request, dict) and request.get("op") == "watch" else None
