"""The Vehicle Bridge channel (ROS-free): the drive-by-wire socket of one agent, both ends.

The seed pages name this socket (the JSON RL bridge) but not its messages, so the fake game defines
them (doc/fake-game.md has the table). Newline-delimited JSON objects on 127.0.0.1, one client at a
time:

game -> client
    {"type": "hello", "agent", "vehicle", "physics_hz", "params": {wheelbase_m, ...}}   on connect,
                                                      then a report of the state the world is in
    {"type": "report", "step", "vehicle_time_s", "driven", "command_stamp_s",
     "steer_rad", "steer_request_rad", "throttle", "brake", "direction", "gear", "speed_mps",
     "yaw_rate", "wheel_speeds_rad_s": [fl, fr, rl, rr], "rpm"}                          every step
    the same with "reset": "time" | "state" | "all"                 right after a reset (then a barrier)
    {"type": "held", "stamp_s"}                       a command taken: from the next physics step on
    {"type": "barrier", "step", "vehicle_time_s"}     after each lockstep step request, after its
                                                      reports, and after each reset
    {"type": "error", "code": "bad_request", "error": "..."}                  a refused line; it goes on
client -> game
    {"type": "command", "stamp_s", "steer_request_rad", "throttle", "brake", "gear"}

Times in the game's messages are the vehicle's own physics time (vehicle_time_s): world time =
vehicle time + the offset of the agent's Clock frames (header stamp minus payload). A command's
stamp_s is the client's own (world time, as ROS stamps it); the game only hands it back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

GEAR_PARK, GEAR_REVERSE, GEAR_NEUTRAL, GEAR_DRIVE = "park", "reverse", "neutral", "drive"
GEARS = (GEAR_PARK, GEAR_REVERSE, GEAR_NEUTRAL, GEAR_DRIVE)
RESET_SCOPES = ("time", "state", "all")  # what a report after a reset names
BAD_REQUEST = "bad_request"  # the one error code: a client line the game cannot use

# Lines longer than these are refused and skipped: memory stays bounded whatever the peer sends.
MAX_COMMAND_LINE_BYTES = 16 * 1024  # client -> game
MAX_GAME_LINE_BYTES = 64 * 1024  # game -> client (a hello with every parameter is under 1 KiB)

# The parameters a client must get in the hello to drive the vehicle.
REQUIRED_PARAMS = ("wheelbase_m", "track_m", "wheel_radius_m", "max_steer_rad", "steering_ratio",
                   "max_speed_mps", "max_reverse_mps")


class VehicleProtocolError(ValueError):
    """A line of the Vehicle Bridge that its reader cannot use."""


@dataclass(frozen=True)
class VehicleCommand:
    """What the vehicle is asked to do from now on (the game holds it until the next): pedals 0-1, a
    road-wheel angle request (+ left) and the gear; stamp_s is the world time the sender meant it
    for (None: unstamped)."""

    steer_request_rad: float = 0.0
    throttle: float = 0.0
    brake: float = 0.0
    gear: str = GEAR_DRIVE
    stamp_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("steer_request_rad", "throttle", "brake"):
            if not math.isfinite(getattr(self, name)):
                raise VehicleProtocolError(f"{name} must be finite, got {getattr(self, name)!r}")
        for name in ("throttle", "brake"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise VehicleProtocolError(f"{name} must be 0..1, got {getattr(self, name)!r}")
        if self.gear not in GEARS:
            raise VehicleProtocolError(f"gear must be one of {', '.join(GEARS)}, got {self.gear!r}")
        if self.stamp_s is not None and not math.isfinite(self.stamp_s):
            raise VehicleProtocolError(f"stamp_s must be a finite number, got {self.stamp_s!r}")


@dataclass(frozen=True)
class VehicleReport:
    """What a vehicle did in one physics step. Times in seconds (time_s: world time; the game sends
    vehicle_time_s, its reader adds the world time); angles in rad, + left."""

    step: int
    time_s: float
    driven: bool  # False while the vehicle still drives its route (no command yet)
    command_stamp_s: float | None  # the stamp of the command applied in this step
    steer_rad: float  # road-wheel angle
    steer_request_rad: float
    throttle: float  # 0..1
    brake: float  # 0..1
    direction: int  # +1 forward, -1 reverse
    gear: str
    speed_mps: float  # signed along the heading
    yaw_rate: float  # rad/s
    wheel_speeds_rad_s: tuple[float, float, float, float]  # front left, front right, rear left, right
    rpm: float
    reset: str | None = None  # the report right after a reset of the world: its scope
    vehicle_time_s: float = math.nan  # the vehicle's own physics time


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


# -- game -> client ------------------------------------------------------------------------------

def hello_message(agent: str, vehicle: str, physics_hz: int, params: dict[str, float]) -> dict[str, Any]:
    return {"type": "hello", "agent": agent, "vehicle": vehicle, "physics_hz": physics_hz, "params": params}


def report_message(report: VehicleReport) -> dict[str, Any]:
    """A step's report as its JSON object (the "reset" key only on the report after a reset)."""
    message: dict[str, Any] = {
        "type": "report", "step": report.step, "vehicle_time_s": report.vehicle_time_s,
        "driven": report.driven, "command_stamp_s": report.command_stamp_s, "steer_rad": report.steer_rad,
        "steer_request_rad": report.steer_request_rad, "throttle": report.throttle, "brake": report.brake,
        "direction": report.direction, "gear": report.gear, "speed_mps": report.speed_mps,
        "yaw_rate": report.yaw_rate, "wheel_speeds_rad_s": list(report.wheel_speeds_rad_s), "rpm": report.rpm}
    if report.reset is not None:
        message["reset"] = report.reset
    return message


def barrier_message(step: int, vehicle_time_s: float) -> dict[str, Any]:
    return {"type": "barrier", "step": step, "vehicle_time_s": vehicle_time_s}


def held_message(stamp_s: float | None) -> dict[str, Any]:
    return {"type": "held", "stamp_s": stamp_s}


def error_message(why: str) -> dict[str, Any]:
    return {"type": "error", "code": BAD_REQUEST, "error": why}


def number(doc: dict[str, Any], name: str) -> float:
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
        physics_hz=int(number(doc, "physics_hz")),
        **{name: number(params, name) for name in REQUIRED_PARAMS}, model=model)
    if min(info.wheelbase_m, info.max_steer_rad, info.steering_ratio, info.max_speed_mps) <= 0.0:
        raise VehicleProtocolError("hello with a wheelbase, steering or speed limit that is not positive")
    return info


def parse_report(doc: dict[str, Any]) -> VehicleReport:
    """A report line (time_s NaN: the reader converts vehicle_time_s)."""
    wheels = doc.get("wheel_speeds_rad_s")
    if not isinstance(wheels, list) or len(wheels) != 4:
        raise VehicleProtocolError(f"wheel_speeds_rad_s must be 4 numbers, got {wheels!r}")
    stamp = doc.get("command_stamp_s")
    gear = doc.get("gear")
    if gear not in GEARS:
        raise VehicleProtocolError(f"gear {gear!r} is not one of {', '.join(GEARS)}")
    reset = doc.get("reset")
    if reset is False:
        reset = None
    if reset is not None and reset not in RESET_SCOPES:
        raise VehicleProtocolError(f"reset must be {', '.join(RESET_SCOPES)}, got {reset!r}")
    return VehicleReport(
        step=int(number(doc, "step")), time_s=math.nan, vehicle_time_s=number(doc, "vehicle_time_s"),
        driven=bool(doc.get("driven")),
        command_stamp_s=None if stamp is None else number(doc, "command_stamp_s"),
        steer_rad=number(doc, "steer_rad"), steer_request_rad=number(doc, "steer_request_rad"),
        throttle=number(doc, "throttle"), brake=number(doc, "brake"),
        direction=-1 if number(doc, "direction") < 0 else 1, gear=gear, speed_mps=number(doc, "speed_mps"),
        yaw_rate=number(doc, "yaw_rate"),
        wheel_speeds_rad_s=tuple(number({"w": w}, "w") for w in wheels),  # type: ignore[arg-type]
        rpm=number(doc, "rpm"), reset=reset)


# -- client -> game ------------------------------------------------------------------------------

def command_message(command: VehicleCommand) -> dict[str, Any]:
    return {"type": "command", "stamp_s": command.stamp_s, "steer_request_rad": command.steer_request_rad,
            "throttle": command.throttle, "brake": command.brake, "gear": command.gear}


def parse_command(doc: Any) -> VehicleCommand:
    """A command line; a left-out pedal or angle is 0 and a left-out gear drive."""
    if not isinstance(doc, dict) or doc.get("type") != "command":
        raise VehicleProtocolError('expected {"type": "command", ...}')
    values = {}
    for name in ("steer_request_rad", "throttle", "brake"):
        value = doc.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise VehicleProtocolError(f"{name} must be a number, got {value!r}")
        values[name] = float(value)
    stamp = doc.get("stamp_s")
    if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, (int, float))):
        raise VehicleProtocolError(f"stamp_s must be a finite number, got {stamp!r}")
    return VehicleCommand(**values, gear=str(doc.get("gear", GEAR_DRIVE)),
                          stamp_s=None if stamp is None else float(stamp))
