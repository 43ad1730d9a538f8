"""The poses and motion the fake game's sensor models share (ROS-free): a mount's pose in the
world, and the exact kinematics of base_footprint at an instant.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from acres_sim.rotations import rpy_matrix


@dataclass(frozen=True)
class Pose:
    """A sensor (or body) pose in the world: position (m) and the sensor -> world rotation."""

    position: np.ndarray
    rotation: np.ndarray

    def compose(self, mount: Pose) -> Pose:
        """The pose of a mount given in this frame."""
        return Pose(self.position + self.rotation @ mount.position, self.rotation @ mount.rotation)


@functools.lru_cache(maxsize=32)
def mount_pose(position_flu_m: tuple[float, float, float], rpy_deg: tuple[float, float, float]) -> Pose:
    """A Hello mount (position and roll / pitch / yaw) as a pose in its body's frame: made once
    per mount, as a sweep asks for its sensor's pose 19 times."""
    r, p, y = (math.radians(a) for a in rpy_deg)
    return Pose(np.array(position_flu_m, float), rpy_matrix(r, p, y))


@dataclass(frozen=True)
class Kinematics:
    """Exact motion of base_footprint at one instant (world frame ENU, body FLU)."""

    position: np.ndarray  # (3,) m, world
    rotation: np.ndarray  # (3, 3) body -> world
    quaternion: np.ndarray  # (4,) x y z w, body -> world
    velocity_body: np.ndarray  # (3,) m/s
    angular_rate_body: np.ndarray  # (3,) rad/s
    acceleration_body: np.ndarray  # (3,) m/s^2, kinematic (gravity not included)
    speed: float  # forward speed, m/s
