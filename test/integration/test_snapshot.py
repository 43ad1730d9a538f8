"""snapshot: the ROS-free picture code on synthetic data, and the executable against the real fake
game and bridge (and without them: exit 1 with a clear line). ROS_DOMAIN_ID 192..193."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from support.bridge import REPO, free_port, ros_env, start_bridge, start_fake_game

from harness import converted
from harness.processes import Proc
from acres_sim.bodies import vehicle_body
from acres_sim.convert.converter import FrameConverter
from acres_sim.stream.protocol import FrameHeader, FrameType, decode_lidar, encode_lidar
from acres_sim.description.vehicle_urdf import vehicle_urdf
from acres_sim.fake_game.simulation.vehicles import vehicle_geometry
from acres_sim.viewer.snapshot import Collected, outlines
from acres_sim.viewer.snapshot_render import (
    FrameStore,
    SnapshotData,
    bird_eye_grid,
    cloud_fields,
    render_png,
    transform_matrix,
)


def _yaw(deg: float) -> tuple[float, float, float, float]:
    return (0.0, 0.0, math.sin(math.radians(deg) / 2), math.cos(math.radians(deg) / 2))


def test_frame_store_composes_mount_and_interpolated_pose():
    store = FrameStore(world="map", base="base_footprint")
    store.add_static("base_footprint", "base_link", transform_matrix((1.0, 0.0, 0.5), (0, 0, 0, 1)))
    store.add_static("base_link", "lidar", transform_matrix((0.5, 0.0, 1.0), _yaw(90)))
    store.add_world_pose(1.04, transform_matrix((12.0, 0.0, 0.0), (0, 0, 0, 1)))
    store.add_world_pose(1.00, transform_matrix((10.0, 0.0, 0.0), (0, 0, 0, 1)))  # out of order
    to_world = store.lookup("lidar", 1.02)
    # a point 1 m ahead of the LiDAR (its x is the vehicle's y after the 90 deg yaw)
    point = to_world @ np.array([1.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(point[:3], [11.0 + 1.5, 1.0, 1.5], atol=1e-12)
    assert store.lookup("lidar", 5.0) is None  # no pose near that stamp
    assert store.lookup("camera", 1.02) is None  # not in the tree
    store.add_world_pose(3.0, transform_matrix((0.0, 0.0, 0.0), (0, 0, 0, 1)))
    assert store.lookup("lidar", 2.0) is None  # between two poses too far apart to interpolate


def test_cloud_fields_read_the_bridge_cloud():
    from support.page_examples import POLARIS_HELLO_JSON

    from acres_sim.stream.hello import parse_hello

    hello = parse_hello(POLARIS_HELLO_JSON)
    pts = np.random.default_rng(3).normal(size=(hello.lidar.columns, hello.lidar.rings, 4)).astype(np.float32)
    msg = converted.pointcloud(FrameConverter(hello), FrameHeader(FrameType.LIDAR, 1, 0, 1.0, 0.0),
                               decode_lidar(encode_lidar(pts)))
    fields = [(f.name, f.offset, f.datatype) for f in msg.fields]
    got = cloud_fields(bytes(msg.data), fields, msg.point_step, msg.width * msg.height)
    np.testing.assert_array_equal(got["z"].reshape(msg.height, msg.width), pts[:, :, 2])
    np.testing.assert_array_equal(got["intensity"].reshape(msg.height, msg.width), pts[:, :, 3])


def test_bird_eye_grid_keeps_the_highest_return_per_cell():
    points = np.array([[0.1, 0.1, 0.0], [0.2, 0.1, 3.0], [2.1, 0.1, 1.0]], np.float32)
    grid, extent = bird_eye_grid(points, cell_m=1.0)
    assert grid[0, 0] == 3.0 and grid[0, 2] == 1.0 and math.isnan(grid[0, 1])
    assert extent[0] == 0.0 and extent[2] == 0.0


def test_render_png_writes_a_picture(tmp_path):
    rng = np.random.default_rng(1)
    data = SnapshotData(
        title="synthetic", image_bgr=rng.integers(0, 255, (48, 64, 3), dtype=np.uint8),
        world_points=rng.normal(size=(5000, 3)).astype(np.float32) * 20,
        range_image=np.abs(rng.normal(size=(180, 8))) * 30, ins_track=np.cumsum(rng.normal(size=(50, 2)), 0),
        truth_track=np.cumsum(rng.normal(size=(50, 2)), 0), clouds=3)
    out = render_png(data, tmp_path / "shot.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 20_000


def test_the_outlines_are_the_vehicles_body_at_its_pose_and_the_objects_markers():
    g = vehicle_geometry("maxxum")
    got = Collected(base_frame="maxxum/base_footprint", pose=(10.0, -5.0, 0.7),
                    description=vehicle_urdf(g, "maxxum/", "maxxum"),
                    tf_static=[("maxxum/base_footprint", "maxxum/base_link",
                                transform_matrix(g.body_origin_flu_m, (0, 0, 0, 1)))])
    got.markers = [
        {"ns": "objects", "id": 0, "type": 3, "text": "", "position": (3.0, 4.0, 0.6),
         "orientation": (0, 0, 0, 1), "scale": (1.5, 1.5, 1.2)},
        {"ns": "object_names", "id": 0, "type": 9, "text": "bale1", "position": (3.0, 4.0, 1.6),
         "orientation": (0, 0, 0, 1), "scale": (0, 0, 0.35)},
        {"ns": "objects", "id": 1, "type": 1, "text": "", "position": (0.0, 0.0, 0.45),
         "orientation": _yaw(90), "scale": (2.4, 1.2, 0.9)}]
    vehicle, bale, square = outlines(got)
    want = vehicle_body("maxxum", 10.0, -5.0, 0.7, 0.0, g.length_m, g.width_m, 0.0, g.rear_overhang_m)
    assert vehicle.vehicle and vehicle.name == "maxxum"
    np.testing.assert_allclose(vehicle.points, want.corners(), atol=1e-9)
    assert (bale.name, bale.points, bale.radius) == ("bale1", ((3.0, 4.0),), 0.75)
    np.testing.assert_allclose(sorted(square.points), sorted([(0.6, 1.2), (-0.6, 1.2), (-0.6, -1.2),
                                                              (0.6, -1.2)]), atol=1e-9)


def _snapshot(domain: int, out, namespace: str, seconds: float = 3.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acres_sim.viewer.snapshot", "--seconds", str(seconds),
                           "--out",
                           str(out), "--namespace", namespace, "--wait-s", "30"],
                          env=ros_env(domain), cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("vehicle", ["polaris", "maxxum"])
def test_snapshot_of_the_fake_game(tmp_path, vehicle):
    domain = 192
    port = free_port()
    game = start_fake_game(["--port", str(port), "--vehicle", vehicle], domain)
    bridge = description = None
    try:
        game.wait_for("LISTENING", 60)
        bridge = start_bridge(port, domain, namespace=f"/{vehicle}")
        description = Proc([sys.executable, "-m", "acres_sim.nodes.vehicle_description", "--ros-args",
                            "-p", f"vehicle:={vehicle}", "-r", f"__ns:=/{vehicle}"], ros_env(domain),
                           "vehicle_description")
        run = _snapshot(domain, tmp_path / "shot.png", f"/{vehicle}")
    finally:
        for proc in (description, bridge):
            if proc is not None:
                proc.stop()
        game.stop()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "wrote" in run.stdout and "(1 vehicle and 0 object outlines)" in run.stdout
    assert (tmp_path / "shot.png").stat().st_size > 50_000


def test_snapshot_without_a_bridge_says_what_is_missing(tmp_path):
    env = ros_env(193)
    run = subprocess.run([sys.executable, "-m", "acres_sim.viewer.snapshot", "--seconds", "0.5",
                          "--wait-s", "0.5",
                          "--out", str(tmp_path / "x.png")], env=env, cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1
    assert "no message within 0.5 s on /polaris/lidar/points" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "x.png").exists()
