"""Rotations written out independently of acres_sim.rotations, for the tests to check it and the
geometry built on it (the mount tree, fake_game's world, the bridge's clouds) against."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def mount_matrix(rpy_deg: Sequence[float]) -> np.ndarray:
    """Fixed-axis roll, pitch, yaw in degrees as the matrix product Rz Ry Rx."""
    roll, pitch, yaw = (math.radians(v) for v in rpy_deg)
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def quat_matrix(q: Sequence[float]) -> np.ndarray:
    """Quaternion (x, y, z, w), normalised first -> rotation matrix."""
    x, y, z, w = (float(v) for v in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
