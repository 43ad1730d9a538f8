"""The stream's time base (ROS-free): the physics rate of the Clock frames and the firing time of
every LiDAR column; what the fake game, the converter, the harness and the tests take them from."""

from __future__ import annotations

import numpy as np

PHYSICS_HZ = 120  # physics steps per second of world time: one Clock frame per step


def column_firing_offsets(columns: int, hz: float) -> np.ndarray:
    """Firing time of every column relative to the end of the sweep (the frame's stamp), s: column c
    of C fires at end - (C - 1 - c) / (C * hz), the last one at the stamp (protocol page: the points
    are in the sensor frame at the firing time of their column)."""
    return -(columns - 1 - np.arange(columns, dtype=np.float64)) / (columns * hz)
