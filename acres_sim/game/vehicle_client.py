"""The game's Vehicle Bridge as Python calls and callbacks (ROS-free): the one place that speaks its
protocol (fake_game's messages, doc/fake-game.md), so that the real game's is a change here.

VehicleClient connects to one agent's Vehicle Bridge on 127.0.0.1 (again after it broke, with
backoff), hands on the vehicle's parameters once per connection, every report, every barrier (after
each lockstep step request and each reset) and every command the game took (held), in arrival
order, on its reader thread. The game reports in the vehicle's own time; reports and barriers are
handed on in world time, converted with the offset of the agent's Clock frames that
set_clock_offset() gives (vehicle_time.py). send() forwards a command. Bad lines are counted and
logged once per kind, and the stream goes on; a line longer than MAX_LINE_BYTES is skipped.
"""

from __future__ import annotations

import json
import logging
import math
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from acres_sim.game.vehicle_time import VehicleTime
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.net.log_limiter import LogLimiter
from acres_sim.net.reconnect import ReconnectLoop

_LOG = logging.getLogger("acres_sim.game.vehicle_client")
MAX_LINE_BYTES = 64 * 1024
GEARS = ("park", "reverse", "neutral", "drive")
DEFAULT_VEHICLE_PORT = 5611  # the Vehicle Bridge port of a single agent (fake_game --vehicle-ports)


@dataclass(frozen=True)
class VehicleInfo:
    """The vehicle as the game describes it once per connection."""

    agent: str
    vehicle: str
    physics_hz: int
    wheelbase_m: float
    track_m: float
    wheel_radius_m: float
    max_steer_rad: float  # road-wheel angle, either side
    steering_ratio: float  # steering-wheel angle / road-wheel angle
    max_speed_mps: float
    max_reverse_mps: float
    # Every number the game gave (the model's mass, forces, ...): feed-forward where present.
    model: dict[str, float] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class VehicleReport:
    """One physics step of the vehicle. Times are world time (the sensor stream's stamps); the game
    gave vehicle_time_s."""

    step: int
    time_s: float
    driven: bool  # False while the vehicle still drives its route (no command yet)
    command_stamp_s: float | None  # the stamp of the command applied in this step
    steer_rad: float
    steer_request_rad: float
    throttle: float
    brake: float
    direction: int  # +1 forward, -1 reverse
    gear: str
    speed_mps: float  # signed along the heading
    yaw_rate: float
    wheel_speeds_rad_s: tuple[float, float, float, float]  # front left, front right, rear left, right
    rpm: float
    reset: str | None = None  # the report right after a reset of the world: its scope (time, state, all)
    vehicle_time_s: float = math.nan  # the vehicle's own physics time, as the game reported it


@dataclass(frozen=True)
class VehicleCommand:
    """What the vehicle is asked to do from now on (the game holds it until the next)."""

    stamp_s: float | None  # the world time the sender meant it for
    steer_request_rad: float  # road-wheel angle, + left
    throttle: float  # 0..1
    brake: float  # 0..1
    gear: str  # park | reverse | neutral | drive

    def __post_init__(self) -> None:
        if self.gear not in GEARS:
            raise ValueError(f"gear must be one of {', '.join(GEARS)}, got {self.gear!r}")
        for name in ("steer_request_rad", "throttle", "brake"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}")
        for name in ("throttle", "brake"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be 0..1, got {getattr(self, name)!r}")


class VehicleProtocolError(ValueError):
    """A line of the Vehicle Bridge this client cannot use."""


def _float(doc: dict[str, Any], name: str) -> float:
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise VehicleProtocolError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def parse_info(doc: dict[str, Any]) -> VehicleInfo:
    params = doc.get("params")
    if not isinstance(params, dict):
        raise VehicleProtocolError("hello without params")
    model = {name: float(value) for name, value in params.items()
             if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}
    info = VehicleInfo(
        agent=str(doc.get("agent", "")), vehicle=str(doc.get("vehicle", "")),
        physics_hz=int(_float(doc, "physics_hz")),
        **{name: _float(params, name) for name in (
            "wheelbase_m", "track_m", "wheel_radius_m", "max_steer_rad", "steering_ratio", "max_speed_mps",
            "max_reverse_mps")}, model=model)
    if min(info.wheelbase_m, info.max_steer_rad, info.steering_ratio, info.max_speed_mps) <= 0.0:
        raise VehicleProtocolError("hello with a wheelbase, steering or speed limit that is not positive")
    return info


def parse_report(doc: dict[str, Any]) -> VehicleReport:
    wheels = doc.get("wheel_speeds_rad_s")
    if not isinstance(wheels, list) or len(wheels) != 4:
        raise VehicleProtocolError(f"wheel_speeds_rad_s must be 4 numbers, got {wheels!r}")
    stamp = doc.get("command_stamp_s")
    gear = doc.get("gear")
    if gear not in GEARS:
        raise VehicleProtocolError(f"gear {gear!r} is not one of {', '.join(GEARS)}")
    return VehicleReport(
        step=int(_float(doc, "step")), time_s=math.nan, vehicle_time_s=_float(doc, "vehicle_time_s"),
        driven=bool(doc.get("driven")),
        command_stamp_s=None if stamp is None else _float(doc, "command_stamp_s"),
        steer_rad=_float(doc, "steer_rad"), steer_request_rad=_float(doc, "steer_request_rad"),
        throttle=_float(doc, "throttle"), brake=_float(doc, "brake"),
        direction=-1 if _float(doc, "direction") < 0 else 1, gear=gear, speed_mps=_float(doc, "speed_mps"),
        yaw_rate=_float(doc, "yaw_rate"),
        wheel_speeds_rad_s=tuple(_float({"w": w}, "w") for w in wheels),  # type: ignore[arg-type]
        rpm=_float(doc, "rpm"), reset=_reset_scope(doc.get("reset")))


def _reset_scope(value: Any) -> str | None:
    if value is None or value is False:
        return None
    if value not in ("time", "state", "all"):
        raise VehicleProtocolError(f"reset must be time, state or all, got {value!r}")
    return str(value)


class VehicleClient:
    """One agent's Vehicle Bridge. The callbacks run on the reader thread, in arrival order."""

    def __init__(self, port: int, *, on_info: Callable[[VehicleInfo], None],
                 on_report: Callable[[VehicleReport], None], on_barrier: Callable[[int, float], None],
                 on_held: Callable[[float | None], None] = lambda stamp_s: None,
                 host: str = "127.0.0.1", reconnect_min_s: float = 0.5, reconnect_max_s: float = 5.0,
                 logger: logging.Logger | None = None):
        self._on_info, self._on_report, self._on_barrier = on_info, on_report, on_barrier
        self._on_held = on_held
        self._log = logger if logger is not None else _LOG
        self._faults = LogLimiter()
        self._link = ReconnectLoop(host, port, self._serve, name=f"vehicle-client-{port}",
                                   reconnect_min_s=reconnect_min_s, reconnect_max_s=reconnect_max_s,
                                   on_unreachable=self._on_unreachable)
        self.host, self.port = self._link.host, self._link.port
        self._stop = self._link.stopping
        self.time = VehicleTime()

    @property
    def connected(self) -> bool:
        return self._link.connected

    def start(self) -> None:
        self._link.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._link.stop(timeout_s)

    def set_clock_offset(self, offset_s: float) -> None:
        """World minus vehicle time, from the agent's Clock frames (header stamp minus payload)."""
        self.time.offset_s = float(offset_s)

    def send(self, command: VehicleCommand) -> bool:
        """Forward a command; False when there is no connection (the command is not kept)."""
        line = json.dumps({"type": "command", "stamp_s": command.stamp_s,
                           "steer_request_rad": command.steer_request_rad, "throttle": command.throttle,
                           "brake": command.brake, "gear": command.gear}).encode() + b"\n"
        return self._link.sendall(line)

    # -- reader thread ----------------------------------------------------------------------------

    def _on_unreachable(self, reason: str, changed: bool) -> None:
        if changed:
            self._log.warning(f"Vehicle Bridge {self._link.address} not reachable ({reason}); trying again")

    def _serve(self, sock: socket.socket) -> None:
        self._link.backoff.reset()
        self._log.info(f"Vehicle Bridge connected to {self._link.address}")
        self._read(sock)
        if not self._stop.is_set():
            self._log.warning(f"Vehicle Bridge {self._link.address} disconnected; connecting again")

    def _read(self, sock: socket.socket) -> None:
        for line in read_lines(sock, self._stop, MAX_LINE_BYTES):
            if line is TOO_LONG:
                self._bad("too long", f"a line longer than {MAX_LINE_BYTES} bytes, skipped")
            else:
                self._handle(line)

    def _handle(self, line: bytes) -> None:
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise VehicleProtocolError("a line that is not a JSON object")
            kind = doc.get("type")
            if kind == "report":
                report = parse_report(doc)
                world = self.time.world_time(report.step, report.vehicle_time_s)
                self._on_report(replace(report, time_s=world))
            elif kind == "barrier":
                step = int(_float(doc, "step"))
                self._on_barrier(step, self.time.world_time(step, _float(doc, "vehicle_time_s")))
            elif kind == "held":
                stamp = doc.get("stamp_s")
                self._on_held(None if stamp is None else _float(doc, "stamp_s"))
            elif kind == "hello":
                info = parse_info(doc)
                self.time.physics_hz = float(info.physics_hz)
                self._on_info(info)
            elif kind == "error":
                self._bad("refused", f"the Vehicle Bridge refused a command: {doc.get('error')}")
            else:
                raise VehicleProtocolError(f"unknown message type {kind!r}")
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            self._bad(type(exc).__name__, f"Vehicle Bridge line not used: {exc}")

    def _bad(self, key: str, message: str) -> None:
        silenced = self._faults.allow(key)
        if silenced is not None:
            self._log.warning(message + self._faults.suffix(silenced))
