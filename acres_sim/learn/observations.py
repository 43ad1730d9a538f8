"""What a learner sees (ROS-free): the observation kinds, each its space and its array together,
from one agent's AgentState, its LiDAR frame and its camera frame (AgentView).

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
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from gymnasium import spaces

from acres_sim.rotations import orientation_yaw
from acres_sim.stream.hello import Hello

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
    width = points.shape[0]
    # squared ranges, binned, then their roots (a root is monotonic: the nearest is the same);
    # fmin passes over NaN (no return), so a bin is NaN only where none of its columns returned
    x, y, z = points[..., 0], points[..., 1], points[..., 2]
    squared = x * x
    squared += y * y
    squared += z * z
    if width < columns:
        binned = squared[(np.arange(columns) * width) // columns]
    elif width % columns == 0:
        bins = squared.reshape(columns, width // columns, -1)
        binned = bins[:, 0].copy()
        for k in range(1, bins.shape[1]):  # a few whole-row passes: a quarter of fmin.reduce's time
            np.fmin(binned, bins[:, k], out=binned)
    else:
        binned = np.fmin.reduceat(squared, (np.arange(columns) * width) // columns, axis=0)
    ranges = np.sqrt(binned)
    ranges[~np.isfinite(ranges)] = NO_RETURN_M
    return ranges.astype(np.float32, copy=False)  # the observation space's type, whatever the cloud's


def resampled(image_bgr: np.ndarray, height: int, width: int) -> np.ndarray:
    """An image at (height, width), RGB, by the nearest pixel."""
    rows = (np.arange(height) * image_bgr.shape[0]) // height
    cols = (np.arange(width) * image_bgr.shape[1]) // width
    return np.ascontiguousarray(image_bgr[rows][:, cols, ::-1])


class AgentView(NamedTuple):
    """What one agent's observations are made from: its last AgentState (a dict), its task's target
    (x, y), and its latest LiDAR range image and camera image (None before the first frame)."""

    name: str
    state: Mapping[str, Any]
    target: tuple[float, float]
    lidar: np.ndarray | None
    camera: np.ndarray | None


class ObservationKind(Protocol):
    """One kind of observation: the space a vehicle's agent gets and the array that fills it, made
    in one place so that an array always fits its space."""

    name: str

    def space(self, hello: Hello) -> spaces.Box: ...

    def array(self, space: spaces.Box, view: AgentView) -> np.ndarray: ...


class StateObservation:
    name = "state"

    def space(self, hello: Hello) -> spaces.Box:
        return spaces.Box(-np.inf, np.inf, (len(STATE_FIELDS),), np.float32)

    def array(self, space: spaces.Box, view: AgentView) -> np.ndarray:
        return state_vector(view.state, view.target)


class LidarObservation:
    """The range image of `columns` bins by the vehicle's rings (Hello); zeros before a frame. A
    game whose LiDAR is not the vehicle's (another ring count) is an error, never a reshape."""

    name = "lidar"

    def __init__(self, columns: int):
        self.columns = columns

    def space(self, hello: Hello) -> spaces.Box:
        return spaces.Box(0.0, np.inf, (self.columns, hello.lidar.rings), np.float32)

    def array(self, space: spaces.Box, view: AgentView) -> np.ndarray:
        if view.lidar is None:
            return np.zeros(space.shape, np.float32)
        if view.lidar.shape != space.shape:
            raise RuntimeError(f"{view.name}: the game's LiDAR gives {view.lidar.shape[1]} rings, the "
                               f"observation space {space.shape[1]}")
        return view.lidar


class CameraObservation:
    """The image at (height, width), RGB; black before a frame."""

    name = "camera"

    def __init__(self, size: tuple[int, int]):
        self.size = size

    def space(self, hello: Hello) -> spaces.Box:
        return spaces.Box(0, 255, (*self.size, 3), np.uint8)

    def array(self, space: spaces.Box, view: AgentView) -> np.ndarray:
        return view.camera if view.camera is not None else np.zeros(space.shape, np.uint8)


def observation_kinds(names: Sequence[str], lidar_columns: int,
                      camera_size: tuple[int, int]) -> list[ObservationKind]:
    """The kinds named (state, lidar, camera), in the order given."""
    made = {"state": StateObservation, "lidar": lambda: LidarObservation(lidar_columns),
            "camera": lambda: CameraObservation(camera_size)}
    return [made[name]() for name in names]
