"""The simulator's control channel as Python calls (ROS-free): the client of
acres_sim.channels.control (its ops, fields and codes). sim_control uses only this module, so that
adapting it to the real game's control protocol is a change there and here.

One connection, opened on the first request and again after it broke: a game that goes away and
comes back is found again by the next request. Requests are serialised (one answer per request,
in order). Errors:
* ControlUnavailable: no connection, or it broke before the answer came;
* ControlRefused: the game answered {"ok": false}; .code says why (one of the channel's
  ERROR_CODES).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from typing import Any

from acres_sim.channels.control import (
    DEFAULT_CONTROL_PORT,
    ERROR_CODES,
    FAILED,
    MAX_ANSWER_BYTES,
    STEPPING_OPS,
    EntityState,
    parse_state,
)

__all__ = ["DEFAULT_CONTROL_PORT", "ERROR_CODES", "ControlClient", "ControlRefused", "ControlUnavailable",
           "EntityState", "StepDone"]
CONNECT_TIMEOUT_S = 2.0


class ControlUnavailable(ConnectionError):
    """The control channel cannot be reached, or the connection broke during a request."""


class ControlRefused(RuntimeError):
    """The game answered a request with an error."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code if code in ERROR_CODES else FAILED


@dataclass(frozen=True)
class StepDone:
    step: int  # the world step reached (the payload of that step's barriers)
    time_s: float  # world time of that step
    summary: dict[str, Any] | None = None  # what the steps did, where asked and the game has it


class ControlClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout_s: float = 30.0, token: str = ""):
        self.host = host
        self.port = int(port)
        self.timeout_s = timeout_s  # for one answer (a long step request included)
        self.token = token  # the stepping token of a world a scenario run owns (its runner's client)
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._latched_revision = -1  # of the latched messages the last step summary held
        self._buffer = bytearray()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self) -> None:
        with self._lock:
            self._drop()

    # -- the ops -------------------------------------------------------------------------------

    def step(self, steps: int, paused_only: bool = True, summary: bool = False) -> StepDone:
        """Advance `steps` physics steps; returns after the game queued each stream's barrier.
        paused_only: refuse (code incorrect_state) unless the world is paused; summary: the answer
        holds what the steps did (acres_sim.channels.control), where the game has the feature."""
        request: dict[str, Any] = {"op": "step", "steps": int(steps), "paused_only": paused_only}
        if summary:  # the latched messages only when they changed since the last summary seen
            request.update(summary=True, latched_since=self._latched_revision)
        answer = self.request(request)
        summarised = answer.get("summary")
        if isinstance(summarised, dict):
            self._latched_revision = int(summarised.get("revision", -1))
        return StepDone(int(answer["step"]), float(answer["time_s"]), summarised)

    def features(self) -> frozenset[str]:
        """What the game has beyond the channel's first version (channels.control.FEATURES)."""
        return frozenset(str(f) for f in self.request({"op": "status"}).get("features", ()))

    def pause(self) -> None:
        self.request({"op": "pause"})

    def play(self) -> None:
        self.request({"op": "play"})

    def paused(self) -> bool:
        return bool(self.request({"op": "status"})["paused"])

    def reset(self, scope: str, seed: int | None = None) -> StepDone:
        """scope: time (world clock back to 0), state (agents back to their starts), all, or spawned
        (the spawned objects leave); the world's step and time after it. seed (all): every random
        process of the world starts anew from it."""
        answer = self.request({"op": "reset", "scope": scope, **({} if seed is None else {"seed": seed})})
        return StepDone(int(answer["step"]), float(answer["time_s"]))

    def entities(self) -> list[str]:
        return [str(name) for name in self.request({"op": "entities"})["entities"]]

    def get_state(self, name: str) -> EntityState:
        """Ground truth of an entity (an agent or a spawned object)."""
        return self._state(self.request({"op": "get_state", "name": name}))

    def set_state(self, name: str, position: tuple[float, ...], orientation: tuple[float, ...],
                  linear_velocity: tuple[float, ...] = (0.0, 0.0, 0.0),
                  angular_velocity: tuple[float, ...] = (0.0, 0.0, 0.0), on_ground: bool = False
                  ) -> EntityState:
        request = {"op": "set_state", "name": name, "position": list(position),
                   "orientation": list(orientation), "linear_velocity": list(linear_velocity),
                   "angular_velocity": list(angular_velocity)}
        if on_ground:
            request["on_ground"] = True
        return self._state(self.request(request))

    def spawnables(self) -> list[dict[str, Any]]:
        """The catalogue: uri, description and size_m (x, y, z) of each kind of object."""
        return list(self.request({"op": "spawnables"})["spawnables"])

    def spawn(self, name: str, uri: str, position: tuple[float, ...], orientation: tuple[float, ...],
              allow_renaming: bool = False) -> EntityState:
        """An object standing on the ground at (x, y); its state (its name as spawned in `name`).
        Codes: name_taken, name_invalid, no_resource, invalid_pose."""
        return self._state(self.request({
            "op": "spawn", "name": name, "uri": uri, "position": list(position),
            "orientation": list(orientation), "allow_renaming": allow_renaming}))

    def delete(self, name: str) -> None:
        """Delete a spawned object (codes not_found, not_deletable)."""
        self.request({"op": "delete", "name": name})

    def set_shift(self, agent: str, shift: dict[str, Any]) -> dict[str, Any]:
        """Set an agent's hardware shift (acres_interfaces VehicleShift fields; code out_of_range)."""
        return dict(self.request({"op": "set_shift", "agent": agent, "shift": shift})["shift"])

    def set_conditions(self, conditions: dict[str, Any]) -> dict[str, Any]:
        """Change the conditions given (acres_interfaces Conditions fields; code out_of_range)."""
        return dict(self.request({"op": "set_conditions", "conditions": conditions})["conditions"])

    def record_start(self, path: str) -> dict[str, Any]:
        """Record the episode log into a new file from the next step (code file_error: cannot)."""
        return self.request({"op": "record_start", "path": path})

    def record_stop(self) -> dict[str, Any]:
        """Finish the log; its path, message_count and duration_s."""
        return self.request({"op": "record_stop"})

    def replay_start(self, path: str) -> dict[str, Any]:
        return self.request({"op": "replay_start", "path": path})

    def replay_stop(self) -> dict[str, Any]:
        return self.request({"op": "replay_stop"})

    def episode_status(self) -> dict[str, Any]:
        return self.request({"op": "episode_status"})

    @staticmethod
    def _state(answer: dict[str, Any]) -> EntityState:
        try:
            return parse_state(answer)
        except ValueError as exc:
            raise ControlRefused(FAILED, str(exc)) from None

    # -- the transport -------------------------------------------------------------------------

    def task(self, status: dict[str, Any]) -> None:
        """A TaskStatus (dict of its fields) onto the watch feed, /sim/task and the episode log."""
        self.request({"op": "task", "status": status})

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.token and request.get("op") in STEPPING_OPS:
            request = {**request, "token": self.token}
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            try:
                sock = self._connected()
                sock.sendall(line)
                answer = self._read_answer(sock)
            except OSError as exc:
                self._drop()
                raise ControlUnavailable(f"control channel {self.address}: {exc}") from None
        if not isinstance(answer, dict):
            raise ControlRefused(FAILED, f"control channel {self.address} answered {answer!r}")
        if answer.get("ok") is not True:
            raise ControlRefused(str(answer.get("code", FAILED)), str(answer.get("error", answer)))
        return answer

    def _connected(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.timeout_s)
            self._sock = sock
            self._buffer.clear()
        return self._sock

    def _read_answer(self, sock: socket.socket) -> Any:
        while (newline := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_ANSWER_BYTES:
                raise OSError(f"answer longer than {MAX_ANSWER_BYTES} bytes")
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("the game closed the connection")
            self._buffer += chunk
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        try:
            return json.loads(line)
        except ValueError as exc:
            raise OSError(f"answer is not JSON: {exc}") from None

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buffer.clear()
