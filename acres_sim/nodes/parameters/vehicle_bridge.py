"""vehicle_bridge's parameters (config/vehicle_bridge.yaml) and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.game.vehicle_client import DEFAULT_VEHICLE_PORT
from acres_sim.nodes.parameters.checks import (
    NON_NEGATIVE,
    PORT,
    check_boolean,
    check_number,
    check_port,
    check_positive,
    check_string,
    NodeParameters,
    ParameterError,
    ParamSpec,
)

VEHICLE_BRIDGE = NodeParameters("vehicle_bridge", "vehicle_bridge.yaml", (
    ParamSpec("vehicle_port", DEFAULT_VEHICLE_PORT,
              "TCP port of the agent's Vehicle Bridge on 127.0.0.1 (fake_game: --vehicle-ports).",
              range=PORT),
    ParamSpec("lockstep", False,
              "The world moves only on step requests: commands are forwarded when they arrive and at "
              "each step's end, never between the steps of a request (the same commands give the "
              "same trajectory). false: also at every report, so the speed controller runs at the "
              "physics rate."),
    ParamSpec("command_timeout_s", 0.5,
              "Ackermann and Twist watchdog in world time: a command older than this releases the "
              "throttle and brakes to a stop, steering held. (Drive-by-wire: 0.1 s, Dataspeed's.)",
              range=NON_NEGATIVE),
    ParamSpec("cmd_vel_stamped", False,
              "cmd_vel is geometry_msgs/TwistStamped (nav2's enable_stamped_cmd_vel) instead of Twist."),
    ParamSpec("speed_kp", 1.0, "Speed controller: pedal per m/s of speed error (feed-forward + PI).",
              range=NON_NEGATIVE),
    ParamSpec("speed_ki", 0.5, "Speed controller: pedal per m of integrated speed error.",
              range=NON_NEGATIVE),
    ParamSpec("frame_id", "base_footprint", "Frame id of the reports' headers."),
    ParamSpec("reconnect_min_s", 0.5, "First delay before connecting again, in seconds (doubles each try).",
              range=NON_NEGATIVE),
    ParamSpec("reconnect_max_s", 5.0, "Longest delay between connection attempts, in seconds.",
              range=NON_NEGATIVE),
))


@dataclass(frozen=True)
class VehicleBridgeConfig:
    vehicle_port: int
    lockstep: bool
    command_timeout_s: float
    cmd_vel_stamped: bool
    speed_kp: float
    speed_ki: float
    frame_id: str
    reconnect_min_s: float
    reconnect_max_s: float


def vehicle_bridge_config(values: dict[str, Any]) -> VehicleBridgeConfig:
    v = {**VEHICLE_BRIDGE.defaults, **values}
    rmin = check_positive("reconnect_min_s", v["reconnect_min_s"])
    rmax = check_positive("reconnect_max_s", v["reconnect_max_s"])
    if rmin > rmax:
        raise ParameterError(f"reconnect delays need reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    kp, ki = float(check_number("speed_kp", v["speed_kp"])), float(check_number("speed_ki", v["speed_ki"]))
    if kp < 0 or ki < 0:
        raise ParameterError(f"speed_kp and speed_ki must be >= 0, got {kp} and {ki}")
    return VehicleBridgeConfig(
        vehicle_port=check_port("vehicle_port", v["vehicle_port"]),
        lockstep=check_boolean("lockstep", v["lockstep"]),
        command_timeout_s=check_positive("command_timeout_s", v["command_timeout_s"]),
        cmd_vel_stamped=check_boolean("cmd_vel_stamped", v["cmd_vel_stamped"]), speed_kp=kp, speed_ki=ki,
        frame_id=check_string("frame_id", v["frame_id"]), reconnect_min_s=rmin, reconnect_max_s=rmax)
