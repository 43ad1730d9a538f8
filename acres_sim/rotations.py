"""Rotations, ROS-free: the Hello's roll, pitch, yaw are about the fixed FLU axes, R = Rz(yaw)
Ry(pitch) Rx(roll); a quaternion is (x, y, z, w) with w >= 0 and rotates a child-frame vector into
the parent frame (REP 103)."""

from __future__ import annotations

import math

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
    """3x3 rotation -> unit quaternion (x, y, z, w) with w >= 0. In plain floats: the INS asks for
    two a hundred times a second, and numpy costs microseconds per call on four numbers."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = np.asarray(m, float).tolist()
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
    return np.array([q[0] * k, q[1] * k, q[2] * k, q[3] * k])
