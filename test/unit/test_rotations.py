"""acres_sim.rotations against independent computations: R = Rz(yaw) Ry(pitch) Rx(roll) as matrices
multiplied out, quaternions as Hamilton products of axis-angle quaternions; the matrix and the
quaternion spellings of one rotation agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.reference_geometry import mount_matrix, rot_x, rot_y, rot_z

from acres_sim.rotations import (
    matrix_to_quaternion,
    quaternion_about_z,
    quaternion_multiply,
    quaternion_to_matrix,
    rpy_deg_to_quaternion,
    rpy_matrix,
)

angles = st.floats(min_value=-180.0, max_value=180.0, allow_nan=False)


def _axis_angle(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    s = math.sin(angle / 2.0)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2.0)])


def _independent_quaternion(rpy_deg: tuple[float, float, float]) -> np.ndarray:
    roll, pitch, yaw = (math.radians(a) for a in rpy_deg)
    q = quaternion_multiply(quaternion_multiply(_axis_angle((0, 0, 1), yaw), _axis_angle((0, 1, 0), pitch)),
                            _axis_angle((1, 0, 0), roll))
    return q if q[3] >= 0 else -q


def test_polaris_camera_mount_matches_composed_axis_angles_and_matrices():
    rpy = (-3.49, 16.52, -2.63)  # the protocol page's camera mount: all three angles non-zero
    q = rpy_deg_to_quaternion(rpy)
    np.testing.assert_allclose(q, _independent_quaternion(rpy), atol=1e-15)
    roll, pitch, yaw = (math.radians(a) for a in rpy)
    np.testing.assert_allclose(quaternion_to_matrix(q), rot_z(yaw) @ rot_y(pitch) @ rot_x(roll), atol=1e-15)


@given(angles, angles, angles)
def test_rpy_quaternion_is_unit_canonical_and_matches_rz_ry_rx(roll, pitch, yaw):
    q = rpy_deg_to_quaternion((roll, pitch, yaw))
    assert q.shape == (4,)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-15
    assert q[3] >= 0.0
    expected = rot_z(math.radians(yaw)) @ rot_y(math.radians(pitch)) @ rot_x(math.radians(roll))
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


@given(angles, angles, angles)
def test_the_matrix_and_the_quaternion_spellings_agree(roll, pitch, yaw):
    m = rpy_matrix(math.radians(roll), math.radians(pitch), math.radians(yaw))
    np.testing.assert_allclose(m, mount_matrix((roll, pitch, yaw)), atol=1e-14)
    q = rpy_deg_to_quaternion((roll, pitch, yaw))
    np.testing.assert_allclose(quaternion_to_matrix(matrix_to_quaternion(m)), m, atol=1e-12)
    if abs(q[3]) > 1e-6:  # at w == 0 the canonical sign is not defined by w alone
        np.testing.assert_allclose(matrix_to_quaternion(m), q, atol=1e-12)


def test_quaternion_about_z_and_the_product_compose_as_matrices():
    a, b = quaternion_about_z(0.3), rpy_deg_to_quaternion((10.0, -20.0, 30.0))
    np.testing.assert_allclose(quaternion_to_matrix(quaternion_multiply(a, b)),
                               rot_z(0.3) @ quaternion_to_matrix(b), atol=1e-14)
