"""An agent's hardware shift (ROS-free): how its sensor mounts and actuators have drifted from their
calibration (the seed's set_vehicle_shift / SetMountOffsets), checked against the ranges a drifted
vehicle stays in.

Sensor part: offsets added to the camera's and the LiDAR's mount position (base FLU, m) and to their
roll / pitch / yaw (deg); the scans and images are taken from the shifted mounts while the Hello
(and so /tf_static) keeps the calibrated ones. Actuator part: the road-wheel angle the steering holds
at a zero request (its angle sensor still reads zero there), and gains on the drive and brake force.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from acres_sim.channels.control import OutOfRange

MAX_OFFSET_M = 0.5
MAX_RPY_DEG = 15.0
MAX_STEERING_OFFSET_RAD = 0.2
GAIN_RANGE = (0.2, 2.0)
_VECTORS = ("camera_offset_m", "camera_rpy_deg", "lidar_offset_m", "lidar_rpy_deg")
_ZERO = (0.0, 0.0, 0.0)


class InvalidShift(OutOfRange):
    """A shift out of range (or not numbers): the message says which and the range."""


@dataclass(frozen=True)
class VehicleShift:
    camera_offset_m: tuple[float, float, float] = _ZERO
    camera_rpy_deg: tuple[float, float, float] = _ZERO
    lidar_offset_m: tuple[float, float, float] = _ZERO
    lidar_rpy_deg: tuple[float, float, float] = _ZERO
    steering_offset_rad: float = 0.0
    throttle_gain: float = 1.0
    brake_gain: float = 1.0

    @staticmethod
    def of(values: dict[str, Any]) -> VehicleShift:
        """A checked shift from the fields of acres_interfaces/VehicleShift (without `agent`);
        fields left out are calibrated. Vectors are {x, y, z} or [x, y, z]."""
        unknown = sorted(set(values) - set(VehicleShift.__dataclass_fields__))
        if unknown:
            raise InvalidShift(f"unknown shift fields {', '.join(unknown)}; they are "
                               f"{', '.join(VehicleShift.__dataclass_fields__)}")
        checked: dict[str, Any] = {}
        for name, value in values.items():
            if name in _VECTORS:
                vector = _vector(name, value)
                limit = MAX_OFFSET_M if name.endswith("_m") else MAX_RPY_DEG
                if max(abs(v) for v in vector) > limit:
                    raise InvalidShift(f"{name} must be within +-{limit:g} on every axis, got {vector}")
                checked[name] = vector
                continue
            number = _number(name, value)
            low, high = ((-MAX_STEERING_OFFSET_RAD, MAX_STEERING_OFFSET_RAD) if name == "steering_offset_rad"
                         else GAIN_RANGE)
            if not low <= number <= high:
                raise InvalidShift(f"{name} must be {low:g} .. {high:g}, got {number:g}")
            checked[name] = number
        return VehicleShift(**checked)

    @property
    def calibrated(self) -> bool:
        return self == CALIBRATED

    def message(self, agent: str) -> dict[str, Any]:
        """acres_interfaces/VehicleShift as a dict."""
        fields = asdict(self)
        for name in _VECTORS:
            x, y, z = fields[name]
            fields[name] = {"x": x, "y": y, "z": z}
        return {"agent": agent, **fields}


CALIBRATED = VehicleShift()


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidShift(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _vector(name: str, value: Any) -> tuple[float, float, float]:
    if isinstance(value, dict) and set(value) <= {"x", "y", "z"}:
        value = [value.get(k, 0.0) for k in "xyz"]
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise InvalidShift(f"{name} must be {{x, y, z}} or a list of 3 numbers, got {value!r}")
    x, y, z = (_number(name, v) for v in value)
    return (x, y, z)
