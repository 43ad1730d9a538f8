"""The poses and motion the fake game's sensor models share (ROS-free): a mount's pose in the
world, and the exact kinematics of base_footprint at an instant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from acres_sim.rotations import rpy_matrix


@dataclass(frozen=True)
class Pose:
    """A sensor (or body) pose in the world: position (m) and the sensor -> world rotation."""

    position: np.ndarray
    rotation: np.ndarray

    def compose(self, position_flu_m, rpy_deg) -> Pose:
        """The pose of a mount given in this frame (Hello position and roll / pitch / yaw)."""
        r, p, y = (math.radians(float(a)) for a in rpy_deg)
        return Pose(self.position + self.rotation @ np.asarray(position_flu_m, float),
                    self.rotation @ rpy_matrix(r, p, y))


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
