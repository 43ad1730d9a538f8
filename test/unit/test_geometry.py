"""acres_sim.convert.mount_tree: mount rotations against an independent computation, and the static
frame table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from support.page_examples import POLARIS_HELLO_JSON
from acres_sim.convert.mount_tree import OPTICAL_ROTATION_XYZW, MountTransform, mount_transforms
from acres_sim.stream.protocol import ProtocolError
from acres_sim.stream.hello import parse_hello
from acres_sim.rotations import quaternion_to_matrix, rpy_deg_to_quaternion

MAXXUM_LIKE_HELLO_JSON = b"""{
 "schema": "acres-sensor-stream-1", "agent": "maxxum", "vehicle": "maxxum", "georeferenced": true,
 "body_origin_flu_m": [1.4, 0, 0.9],
 "lidar": {"enabled": true, "frame_id": "lidar", "hz": 10, "columns": 180, "rings": 8, "range_m": 60,
           "azimuth_order": "ccw", "position_flu_m": [1.9, 0, 3.1], "rpy_deg": [0, 0, 0]},
 "camera": {"enabled": false},
 "ins": {"enabled": true, "hz": 100, "position_flu_m": [0, 0, 0], "utm_zone": 16, "datum": "nad83_2011",
         "imu_position_flu_m": [0, 0, 0], "gnss_antenna_flu_m": [0, 0, 0]}
}"""


def test_optical_rotation_maps_optical_axes_to_camera_axes():
    r = quaternion_to_matrix(OPTICAL_ROTATION_XYZW)
    np.testing.assert_allclose(r @ [0, 0, 1], [1, 0, 0], atol=1e-15)  # optical z (view) = camera forward
    np.testing.assert_allclose(r @ [1, 0, 0], [0, -1, 0], atol=1e-15)  # optical x (right) = camera -y
    np.testing.assert_allclose(r @ [0, 1, 0], [0, 0, -1], atol=1e-15)  # optical y (down) = camera -z
    assert OPTICAL_ROTATION_XYZW == (-0.5, 0.5, -0.5, 0.5)


def _q(rpy) -> tuple[float, ...]:
    return tuple(float(v) for v in rpy_deg_to_quaternion(rpy))


def test_polaris_mount_table():
    hello = parse_hello(POLARIS_HELLO_JSON)
    identity = (0.0, 0.0, 0.0, 1.0)
    assert mount_transforms(hello) == [
        MountTransform("base_footprint", "base_link", (1.14808, 0.0, 0.65536), identity),
        MountTransform("base_footprint", "lidar", (2.5, 0.0, 2.039), _q((-1.518, 5.317, 0))),
        MountTransform("base_footprint", "camera", (2.745, 0.606, 1.887), _q((-3.49, 16.52, -2.63))),
        MountTransform("camera", "camera_optical", (0.0, 0.0, 0.0), (-0.5, 0.5, -0.5, 0.5)),
        MountTransform("base_footprint", "ins", (0.0, 0.0, 0.0), identity),
        MountTransform("base_footprint", "imu", (0.95, -0.45, 0.7), identity),
        MountTransform("base_footprint", "gnss", (1.1, 0.0, 2.15), identity),
    ]
    for t in mount_transforms(hello):
        assert all(type(v) is float for v in t.translation + t.rotation_xyzw)


def test_maxxum_has_no_camera_frames_and_a_custom_lidar_frame_id_is_used():
    hello = parse_hello(MAXXUM_LIKE_HELLO_JSON)
    assert [(t.parent, t.child) for t in mount_transforms(hello)] == [
        ("base_footprint", "base_link"), ("base_footprint", "lidar"), ("base_footprint", "ins"),
        ("base_footprint", "imu"), ("base_footprint", "gnss")]
    renamed = dataclasses.replace(hello, lidar=dataclasses.replace(hello.lidar, frame_id="velodyne"))
    assert [t.child for t in mount_transforms(renamed)][1] == "velodyne"


def test_disabled_sensors_leave_only_base_link():
    hello = parse_hello(MAXXUM_LIKE_HELLO_JSON)
    bare = dataclasses.replace(hello, lidar=dataclasses.replace(hello.lidar, enabled=False),
                               ins=dataclasses.replace(hello.ins, enabled=False))
    assert [t.child for t in mount_transforms(bare)] == ["base_link"]


@pytest.mark.parametrize("frame_id", ["base_link", "base_footprint", "ins"])
def test_lidar_frame_id_clashing_with_the_tree_is_refused(frame_id):
    hello = parse_hello(MAXXUM_LIKE_HELLO_JSON)
    clash = dataclasses.replace(hello, lidar=dataclasses.replace(hello.lidar, frame_id=frame_id))
    with pytest.raises(ProtocolError, match="used twice"):
        mount_transforms(clash)
