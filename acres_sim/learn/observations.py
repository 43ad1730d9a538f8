"""What a learner sees (ROS-free): the observation spaces' shapes and the arrays, from one agent's
AgentState, its LiDAR frame and its camera frame.

state (float32, STATE_FIELDS): speed (m/s, signed), yaw rate (rad/s), road-wheel angle (rad); the
task's target in the body frame (x ahead, y left, m), its distance (m) and bearing (rad) -- the
target is the agent's `reach` criterion's centre, else its start pose; each wheel's ground contact
(0/1) and surface class (AgentState's SURFACE_* numbers).
lidar (float32, (columns, rings)): the range of every return (m), the cloud's columns binned to
`columns` by their nearest return; no return: 0.
camera (uint8, (height, width, 3), RGB): the image resampled (nearest pixel) to the chosen size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from acres_sim.rotations import orientation_yaw

STATE_FIELDS = ("speed_mps", "yaw_rate_rad_s", "steer_rad", "target_x_m", "target_y_m", "target_distance_m",
                "target_bearing_rad", "contact_front_left", "contact_front_right", "contact_rear_left",
                "contact_rear_right", "surface_front_left", "surface_front_right", "surface_rear_left",
                "surface_rear_right")
NO_RETURN_M = 0.0


def state_vector(state: Mapping[str, Any], target: tuple[float, float]) -> np.ndarray:
    p, q = state["pose"]["position"], state["pose"]["orientation"]
    yaw = orientation_yaw(q)
    dx, dy = target[0] - p["x"], target[1] - p["y"]
    c, s = math.cos(yaw), math.sin(yaw)
    ahead, left = c * dx + s * dy, -s * dx + c * dy
    values = [state["speed_mps"], state["yaw_rate_rad_s"], state["steer_rad"], ahead, left,
              math.hypot(dx, dy), math.atan2(left, ahead),
              *(1.0 if c else 0.0 for c in state["wheel_contact"]), *state["surface_class"]]
    return np.asarray(values, np.float32)


def range_image(points: np.ndarray, columns: int) -> np.ndarray:
    """(cloud columns, rings, 4) points -> (columns, rings) ranges, the nearest return of each bin."""
    ranges = np.sqrt(np.einsum("crk,crk->cr", points[:, :, :3], points[:, :, :3], dtype=np.float32))
    ranges = np.where(np.isfinite(ranges), ranges, np.inf)
    width = points.shape[0]
    edges = (np.arange(columns + 1) * width) // columns
    binned = np.minimum.reduceat(ranges, edges[:-1], axis=0) if width >= columns else ranges[
        (np.arange(columns) * width) // columns]
    return np.where(np.isfinite(binned), binned, NO_RETURN_M).astype(np.float32)


def resampled(image_bgr: np.ndarray, height: int, width: int) -> np.ndarray:
    """An image at (height, width), RGB, by the nearest pixel."""
    rows = (np.arange(height) * image_bgr.shape[0]) // height
    cols = (np.arange(width) * image_bgr.shape[1]) // width
    return np.ascontiguousarray(image_bgr[rows][:, cols, ::-1])
