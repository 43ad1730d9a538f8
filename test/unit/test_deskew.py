"""Motion-true sweeps and the per-point time: a vehicle turning on the spot in a walled yard. The
fake LiDAR fires every column from the pose of its own firing time; the bridge's xyzirt cloud carries
that time; deskewing with it and the ground-truth poses puts every return back on the walls and the
ground, while the same cloud taken as if fired at one instant does not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from support.page_examples import POLARIS_HELLO_JSON

from harness import converted
from acres_sim.convert.converter import FrameConverter
from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.route import LoopRoute
from acres_sim.fake_game.world.scene import Box, Scene
from acres_sim.fake_game.simulation.lidar_model import LidarModel
from acres_sim.fake_game.simulation.poses import Pose
from acres_sim.fake_game.simulation.vehicles import lidar_elevations_deg
from acres_sim.convert.settings import ConvertSettings
from acres_sim.stream.protocol import FrameHeader, FrameType, decode_lidar, encode_lidar
from acres_sim.stream.timing import column_firing_offsets
from acres_sim.stream.hello import parse_hello
from acres_sim.rotations import rpy_matrix

YAW_RATE = 1.5  # rad/s: a sharp turn on the spot
CENTRE = np.array([0.0, 0.0, 2.0])
WALLS = tuple(Box(lo, hi, MAT["wall"], MAT["roof"]) for lo, hi in (
    ((-15.5, -15.5, 0.0), (15.5, -15.0, 6.0)), ((-15.5, 15.0, 0.0), (15.5, 15.5, 6.0)),
    ((-15.5, -15.0, 0.0), (-15.0, 15.0, 6.0)), ((15.0, -15.0, 0.0), (15.5, 15.0, 6.0))))


def pose_at(t: float) -> Pose:
    return Pose(CENTRE.copy(), rpy_matrix(0.0, 0.0, YAW_RATE * t))


def distance_to_scene(points: np.ndarray) -> np.ndarray:
    """Distance of each world point to the nearest surface: the ground z = 0 or a wall."""
    best = np.abs(points[:, 2])
    for box in WALLS:
        lo, hi = np.array(box.lo), np.array(box.hi)
        outside = np.linalg.norm(np.maximum(np.maximum(lo - points, points - hi), 0.0), axis=1)
        inside = np.minimum(points - lo, hi - points).min(axis=1)
        best = np.minimum(best, np.where(outside > 0.0, outside, np.abs(inside)))
    return best


def _world(cloud: np.ndarray, times_s: np.ndarray) -> np.ndarray:
    """Sensor-frame points at their times -> world, with the ground-truth pose of each time."""
    out = np.empty_like(cloud)
    for t in np.unique(times_s):
        sel = times_s == t
        pose = pose_at(float(t))
        out[sel] = cloud[sel] @ pose.rotation.T + pose.position
    return out


@pytest.mark.parametrize("stamp_mode", ["end", "start"])
def test_deskewed_turning_sweep_lands_on_the_scene(stamp_mode):
    hello = parse_hello(POLARIS_HELLO_JSON)
    lidar = dataclasses.replace(hello.lidar, columns=360)
    hello = dataclasses.replace(hello, lidar=lidar)
    model = LidarModel(lidar, lidar_elevations_deg("polaris"))
    scene = Scene(WALLS, LoopRoute())
    end = 3.0
    points = model.render_sweep(scene, end + column_firing_offsets(lidar.columns, lidar.hz), pose_at, None)
    msg = converted.pointcloud(
        FrameConverter(hello, ConvertSettings(lidar_fields="xyzirt", lidar_stamp=stamp_mode)),
        FrameHeader(FrameType.LIDAR, 1, 0, end, 0.0), decode_lidar(encode_lidar(points)))
    cells = np.frombuffer(bytes(msg.data), np.dtype({"names": ["xyz", "time"], "formats": [("<f4", 3), "<f4"],
                                                     "offsets": [0, 20], "itemsize": 24}))
    header = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
    valid = np.isfinite(cells["xyz"][:, 0])
    xyz = cells["xyz"][valid].astype(np.float64)
    # the time field, relative to the header stamp, is all a consumer has
    firing = np.round((header + cells["time"][valid].astype(np.float64)) * 1e6) / 1e6
    assert valid.sum() > 5000

    deskewed = distance_to_scene(_world(xyz, firing))
    one_instant = distance_to_scene(_world(xyz, np.full(len(xyz), end)))
    assert deskewed.max() < 0.02, f"deskewed returns up to {deskewed.max():.3f} m off the scene"
    assert np.percentile(one_instant, 90) > 0.3, "the sweep is not skewed: the test would prove nothing"
    turned = YAW_RATE / lidar.hz
    assert math.degrees(turned) > 8.0  # the vehicle turned this much during the sweep


def test_a_standing_sensor_gives_the_same_cloud_either_way():
    hello = parse_hello(POLARIS_HELLO_JSON)
    lidar = dataclasses.replace(hello.lidar, columns=180)
    model = LidarModel(lidar, lidar_elevations_deg("polaris"))
    scene = Scene(WALLS, LoopRoute())
    still = Pose(CENTRE.copy(), rpy_matrix(0.0, 0.0, 0.3))
    sweep = model.render_sweep(scene, 1.0 + column_firing_offsets(180, lidar.hz), lambda _t: still, None)
    np.testing.assert_allclose(sweep, model.render(scene, still, None), atol=1e-5, equal_nan=True)
