"""A vehicle's joint positions from its motion (ROS-free): what sensor_msgs/JointState carries.

The steering: the vehicle's road-wheel angle is the bicycle model's, at the middle of the front
axle (AgentState.steer_rad, vehicle/ackermann_state's steering_angle). Each front wheel turns about
the same centre of the turn (Ackermann): tan(left) = L / (R - t/2), tan(right) = L / (R + t/2),
R = L / tan(angle), written with sines and cosines so that a straight wheel needs no R.

The wheels: a point of the body at (x, y) in base_footprint moves with (v - w y, w x), v the speed
of base_footprint (the rear axle's middle) and w = v tan(angle) / L the yaw rate; a wheel rolls at
that velocity's part along its heading, and turns at that speed / its radius. The rear wheels'
mean is v / radius. Positions advance by rate x the time since the last update (the rate of the
update they arrive with), wrapped to (-pi, pi]."""

from __future__ import annotations

import math
from dataclasses import dataclass

from acres_sim.description.vehicle_urdf import FRONT, WHEELS, VehicleGeometry, joint_names


def ackermann_angles(geometry: VehicleGeometry, road_wheel_rad: float) -> tuple[float, float]:
    """(left, right) front wheel angles (rad, + left) of a road-wheel angle."""
    length, half_track = geometry.wheelbase_m, 0.5 * geometry.track_m
    s, c = math.sin(road_wheel_rad), math.cos(road_wheel_rad)
    return (math.atan2(length * s, length * c - half_track * s),
            math.atan2(length * s, length * c + half_track * s))


def wheel_speeds(geometry: VehicleGeometry, speed_mps: float, road_wheel_rad: float) -> list[float]:
    """Each wheel's rolling speed (m/s, signed as the vehicle's), in WHEELS order."""
    length, half_track = geometry.wheelbase_m, 0.5 * geometry.track_m
    yaw_rate = speed_mps * math.tan(road_wheel_rad) / length
    left, right = ackermann_angles(geometry, road_wheel_rad)
    out = []
    for wheel in WHEELS:
        x = length if wheel in FRONT else 0.0
        y = half_track if wheel.endswith("left") else -half_track
        heading = {"front_left": left, "front_right": right}.get(wheel, 0.0)
        out.append((speed_mps - yaw_rate * y) * math.cos(heading) + yaw_rate * x * math.sin(heading))
    return out


@dataclass
class JointSample:
    """One JointState's contents: names, positions (rad) and velocities (rad/s)."""

    t: float
    names: list[str]
    positions: list[float]
    velocities: list[float]


class WheelJoints:
    """The joint positions of one vehicle, advanced by each (time, speed, road-wheel angle)."""

    def __init__(self, geometry: VehicleGeometry, prefix: str = ""):
        self.geometry = geometry
        steering, wheels = joint_names(prefix)
        self.names = steering + wheels
        self._angles = [0.0] * len(WHEELS)
        self._steering = (0.0, 0.0)
        self._t: float | None = None

    def restart(self) -> None:
        """The next update advances nothing (a new source, or time that went back)."""
        self._t = None

    def update(self, t: float, speed_mps: float, road_wheel_rad: float) -> JointSample:
        g = self.geometry
        dt = 0.0 if self._t is None or t < self._t else t - self._t
        self._t = t
        steering = ackermann_angles(g, road_wheel_rad)
        steering_rates = [(a - b) / dt if dt > 0.0 else 0.0 for a, b in zip(steering, self._steering)]
        self._steering = steering
        rates = [v / g.wheel_radius_m for v in wheel_speeds(g, speed_mps, road_wheel_rad)]
        self._angles = [math.remainder(a + r * dt, math.tau) for a, r in zip(self._angles, rates)]
        return JointSample(t, self.names, [*steering, *self._angles], [*steering_rates, *rates])


Transform = tuple[str, str, tuple[float, float, float], tuple[float, float, float, float]]


def joint_transforms(geometry: VehicleGeometry, prefix: str, sample: JointSample) -> list[Transform]:
    """(parent, child, translation, quaternion x y z w) of every moving joint at sample: what
    robot_state_publisher would put on /tf for this description (the episode log carries them)."""
    positions = dict(zip(sample.names, sample.positions))
    out = []
    for wheel in WHEELS:
        parent = f"{prefix}base_link"
        origin = geometry.wheel_position(wheel)
        if wheel in FRONT:
            steering = f"{prefix}{wheel}_steering_link"
            half = 0.5 * positions[f"{prefix}{wheel}_steering_joint"]
            out.append((parent, steering, origin, (0.0, 0.0, math.sin(half), math.cos(half))))
            parent, origin = steering, (0.0, 0.0, 0.0)
        half = 0.5 * positions[f"{prefix}{wheel}_wheel_joint"]
        rolled = (0.0, math.sin(half), 0.0, math.cos(half))
        out.append((parent, f"{prefix}{wheel}_wheel_link", origin, rolled))
    return out
