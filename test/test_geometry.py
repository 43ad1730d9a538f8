"""acres_sim.geometry: mount rotations against an independent computation, and the static frame table."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from page_examples import POLARIS_HELLO_JSON
from acres_sim.geometry import (
    OPTICAL_ROTATION_XYZW,
    MountTransform,
    mount_transforms,
    quaternion_to_matrix,
    rpy_deg_to_quaternion,
)
from acres_sim.protocol import ProtocolError, parse_hello

MAXXUM_LIKE_HELLO_JSON = b"""{
 "schema": "acres-sensor-stream-1", "agent": "maxxum", "vehicle": "maxxum", "georeferenced": true,
 "body_origin_flu_m": [1.4, 0, 0.9],
 "lidar": {"enabled": true, "frame_id": "lidar", "hz": 10, "columns": 180, "rings": 8, "range_m": 60,
           "azimuth_order": "ccw", "position_flu_m": [1.9, 0, 3.1], "rpy_deg": [0, 0, 0]},
 "camera": {"enabled": false},
 "ins": {"enabled": true, "hz": 100, "position_flu_m": [0, 0, 0], "utm_zone": 16, "datum": "nad83_2011",
         "imu_position_flu_m": [0, 0, 0], "gnss_antenna_flu_m": [0, 0, 0]}
}"""

angles = st.floats(min_value=-180.0, max_value=180.0, allow_nan=False)


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _axis_angle(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    s = math.sin(angle / 2.0)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2.0)])


def _hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ])


def _independent_quaternion(rpy_deg: tuple[float, float, float]) -> np.ndarray:
    roll, pitch, yaw = (math.radians(a) for a in rpy_deg)
    q = _hamilton(_hamilton(_axis_angle((0, 0, 1), yaw), _axis_angle((0, 1, 0), pitch)),
                  _axis_angle((1, 0, 0), roll))
    return q if q[3] >= 0 else -q


def test_polaris_camera_mount_matches_composed_axis_angles_and_matrices():
    rpy = (-3.49, 16.52, -2.63)  # the protocol page's camera mount: all three angles non-zero
    q = rpy_deg_to_quaternion(rpy)
    np.testing.assert_allclose(q, _independent_quaternion(rpy), atol=1e-15)
    roll, pitch, yaw = (math.radians(a) for a in rpy)
    np.testing.assert_allclose(quaternion_to_matrix(q), _rz(yaw) @ _ry(pitch) @ _rx(roll), atol=1e-15)


@given(angles, angles, angles)
def test_rpy_quaternion_is_unit_canonical_and_matches_rz_ry_rx(roll, pitch, yaw):
    q = rpy_deg_to_quaternion((roll, pitch, yaw))
    assert q.shape == (4,)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-15
    assert q[3] >= 0.0
    expected = _rz(math.radians(yaw)) @ _ry(math.radians(pitch)) @ _rx(math.radians(roll))
    np.testing.assert_allclose(quaternion_to_matrix(q), expected, atol=1e-14)
    independent = _independent_quaternion((roll, pitch, yaw))
    if abs(q[3]) > 1e-9:  # at w == 0 the canonical sign is not defined by w alone
        np.testing.assert_allclose(q, independent, atol=1e-14)


def test_simple_rotations():
    np.testing.assert_array_equal(rpy_deg_to_quaternion((0, 0, 0)), [0, 0, 0, 1])
    h = math.sqrt(0.5)
    np.testing.assert_allclose(rpy_deg_to_quaternion((0, 0, 90)), [0, 0, h, h], atol=1e-16)
    np.testing.assert_allclose(rpy_deg_to_quaternion((90, 0, 0)), [h, 0, 0, h], atol=1e-16)
    # A yaw of 350 deg is -10 deg: the canonical sign picks w >= 0 for both spellings.
    np.testing.assert_allclose(rpy_deg_to_quaternion((0, 0, 350)), rpy_deg_to_quaternion((0, 0, -10)),
                               atol=1e-15)


def test_positive_pitch_looks_down():
    forward = quaternion_to_matrix(rpy_deg_to_quaternion((0, 10, 0))) @ [1, 0, 0]
    assert forward[2] == pytest.approx(-math.sin(math.radians(10)))
    assert forward[0] == pytest.approx(math.cos(math.radians(10)))


def test_fixed_axes_order_yaw_applied_last():
    # R = Rz Ry Rx: pitch down 90 then yaw 90 -> forward goes straight down (yaw about the FIXED z
    # does not move a vector on the z axis); the other order would point it sideways first.
    r = quaternion_to_matrix(rpy_deg_to_quaternion((0, 90, 90)))
    np.testing.assert_allclose(r @ [1, 0, 0], [0, 0, -1], atol=1e-15)
    np.testing.assert_allclose(r @ [0, 1, 0], [-1, 0, 0], atol=1e-15)


def test_quaternion_to_matrix_is_a_rotation_and_normalises():
    m = quaternion_to_matrix((0.2, -0.4, 0.6, 0.8))  # norm 1.095...: normalised first
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(m) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="norm"):
        quaternion_to_matrix((0, 0, 0, 0))
    with pytest.raises(ValueError, match="4 values"):
        quaternion_to_matrix((0, 0, 1))


def test_bad_rpy_is_refused():
    with pytest.raises(ValueError, match="3 angles"):
        rpy_deg_to_quaternion((1.0, 2.0))
    with pytest.raises(ValueError, match="finite"):
        rpy_deg_to_quaternion((0.0, math.nan, 0.0))


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
