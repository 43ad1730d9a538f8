"""Rotations, the one place of their conventions (numpy; no ROS): the bridge's mount tree, fake_game's
world and sensors, its georeference and the snapshot all use these.

The Hello's `rpy_deg` are roll, pitch and yaw about the FIXED parent axes, R = Rz(yaw) Ry(pitch)
Rx(roll); with FLU axes a positive pitch turns the x axis towards -z, so a sensor looks down. A
quaternion is (x, y, z, w), canonical with w >= 0, and rotates a child-frame vector into the parent
frame (REP 103)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """3x3 rotation R = Rz(yaw) @ Ry(pitch) @ Rx(roll), angles in radians."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_to_quaternion(m: np.ndarray) -> np.ndarray:
    """3x3 rotation -> unit quaternion (x, y, z, w) with w >= 0."""
    return np.array(quaternion_of(*np.asarray(m, float).ravel().tolist()))


def quaternion_of(m00: float, m01: float, m02: float, m10: float, m11: float, m12: float, m20: float,
                  m21: float, m22: float) -> tuple[float, float, float, float]:
    """matrix_to_quaternion of a rotation given by its nine entries, row by row. In plain floats:
    the fake game asks for a few every physics step, and numpy costs microseconds per call on four
    numbers."""
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s)
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        q = (0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s)
    elif m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        q = ((m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        q = ((m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s)
    k = (-1.0 if q[3] < 0.0 else 1.0) / math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return (q[0] * k, q[1] * k, q[2] * k, q[3] * k)


def rpy_deg_to_quaternion(rpy_deg: Sequence[float]) -> np.ndarray:
    """Fixed-axis roll, pitch, yaw in degrees -> unit quaternion (x, y, z, w) with w >= 0.

    The quaternion of R = Rz(yaw) Ry(pitch) Rx(roll), i.e. q = qz * qy * qx (Hamilton product).
    The sign is canonical (w >= 0) so that the same mount always gives the same numbers.
    """
    if len(rpy_deg) != 3:
        raise ValueError(f"rpy_deg needs 3 angles (roll, pitch, yaw), got {len(rpy_deg)}")
    roll, pitch, yaw = (math.radians(float(a)) for a in rpy_deg)
    if not all(math.isfinite(a) for a in (roll, pitch, yaw)):
        raise ValueError(f"rpy_deg must be finite, got {tuple(rpy_deg)}")
    cr, sr = math.cos(roll / 2.0), math.sin(roll / 2.0)
    cp, sp = math.cos(pitch / 2.0), math.sin(pitch / 2.0)
    cy, sy = math.cos(yaw / 2.0), math.sin(yaw / 2.0)
    q = np.array([
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
        cr * cp * cy + sr * sp * sy,
    ])
    q /= np.linalg.norm(q)
    if q[3] < 0.0:
        q = -q
    return q


def quaternion_to_matrix(q_xyzw: Sequence[float]) -> np.ndarray:
    """Quaternion (x, y, z, w) -> 3x3 rotation matrix (child -> parent). The quaternion is normalised."""
    q = np.asarray(q_xyzw, dtype=np.float64)
    if q.shape != (4,):
        raise ValueError(f"quaternion needs 4 values (x, y, z, w), got shape {q.shape}")
    norm = np.linalg.norm(q)
    if not np.isfinite(norm) or norm == 0.0:
        raise ValueError(f"quaternion {tuple(q)} has no rotation (zero or non-finite norm)")
    x, y, z, w = q / norm
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])


def quaternion_about_z(angle_rad: float) -> np.ndarray:
    """(x, y, z, w) of a counter-clockwise rotation about z."""
    return np.array([0.0, 0.0, math.sin(angle_rad / 2.0), math.cos(angle_rad / 2.0)])


def quaternion_yaw(quaternion: Sequence[float]) -> float:
    """The heading (rad) of a rotation x, y, z, w (any length): its turn about the vertical."""
    x, y, z, w = (float(v) for v in quaternion)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)) if any((x, y, z, w)) else 0.0


def orientation_yaw(q: Mapping[str, float]) -> float:
    """The yaw of a quaternion given as a message's fields (x, y, z, w)."""
    return quaternion_yaw((q["x"], q["y"], q["z"], q["w"]))


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of (x, y, z, w) quaternions (apply b first, then a)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    ])


def rotation_vector_matrix(rotation_vector: Sequence[float]) -> np.ndarray:
    """3x3 matrix of a rotation by |v| radians about the axis v (Rodrigues)."""
    v = np.asarray(rotation_vector, dtype=np.float64)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    kx, ky, kz = v / angle
    k = np.array([[0.0, -kz, ky], [kz, 0.0, -kx], [-ky, kx, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)
