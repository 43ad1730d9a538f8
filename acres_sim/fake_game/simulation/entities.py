"""What the control channel reads and sets of an agent (ROS-free): its ground-truth state and the
errors of a request about it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

WORLD_HALF_EXTENT_M = 10_000.0  # where set_entity_state may place an agent (|x|, |y|, |z| at most)


class UnknownAgent(LookupError):
    """A control request named an agent this session does not have."""


class InvalidPose(ValueError):
    """A control request asked for a pose that cannot be (non-finite, no rotation, off the world)."""


@dataclass(frozen=True)
class EntityState:
    """Ground truth of an agent's base_footprint in the world frame (ENU) at world time time_s."""

    agent: str
    step: int
    time_s: float
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]  # x, y, z, w: body -> world
    linear_velocity: tuple[float, float, float]  # world frame
    angular_velocity: tuple[float, float, float]  # world frame
    linear_acceleration: tuple[float, float, float]  # world frame, kinematic (no gravity)
    held: bool  # placed by set_entity_state (else driving its route)


def float_triple(values: Any) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


def finite_vector(name: str, values: Any, size: int) -> tuple[float, ...]:
    if (not isinstance(values, (list, tuple)) or len(values) != size
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)):
        raise InvalidPose(f"{name} must be a list of {size} numbers, got {values!r}")
    result = tuple(float(v) for v in values)
    if not all(math.isfinite(v) for v in result):
        raise InvalidPose(f"{name} must be finite, got {result}")
    return result


class OutOfRange(ValueError):
    """A shift or conditions outside the ranges the world takes."""


class NameTaken(ValueError):
    """A spawn request named an entity that exists (an agent or an object)."""


class NameInvalid(ValueError):
    """A spawn request's name is not a valid entity name."""


class UnknownResource(LookupError):
    """A spawn request named nothing the catalogue has."""


class NotDeletable(ValueError):
    """A delete request named an agent: agents come with the session."""


def quaternion_yaw(quaternion: tuple[float, ...]) -> float:
    """The heading (rad) of a rotation x, y, z, w (normalised here): its turn about the vertical."""
    x, y, z, w = quaternion
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)) if any(quaternion) else 0.0
