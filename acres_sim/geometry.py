"""Mount geometry of the Hello: roll/pitch/yaw -> quaternion, the optical rotation, the static frame tree.

numpy only, no ROS: the bridge turns the MountTransform list into a TFMessage (convert.py), and the
tests check the rotations against an independent computation.

Conventions (protocol page "Units and Frames", REP 103): body frames are FLU; a quaternion is (x, y, z, w)
and rotates a vector from the child frame into the parent frame. The Hello `rpy_deg` are roll, pitch
and yaw about the FIXED parent axes, R = Rz(yaw) Ry(pitch) Rx(roll); with FLU axes a positive pitch
turns the x axis towards -z, so the sensor looks down.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from acres_sim.protocol import Hello, ProtocolError

# camera (FLU: x forward, y left, z up) -> camera_optical (x right, y down, z forward), REP 103.
# As a rotation of optical vectors into the camera frame: optical z -> camera x, optical x -> camera -y,
# optical y -> camera -z.
OPTICAL_ROTATION_XYZW: tuple[float, float, float, float] = (-0.5, 0.5, -0.5, 0.5)

_IDENTITY_XYZW: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
_ZERO3: tuple[float, float, float] = (0.0, 0.0, 0.0)

# Frame names of the static tree (README, static frames), without the frame prefix.
BASE_FOOTPRINT = "base_footprint"
BASE_LINK = "base_link"
CAMERA = "camera"
CAMERA_OPTICAL = "camera_optical"
INS = "ins"
IMU = "imu"
GNSS = "gnss"


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


@dataclass(frozen=True)
class MountTransform:
    """One static transform: `child` seen from `parent` (frame names without the frame prefix)."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation_xyzw: tuple[float, float, float, float]


def _vec3(values: Sequence[float]) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in values)
    return (x, y, z)


def _quat(rpy_deg: Sequence[float]) -> tuple[float, float, float, float]:
    x, y, z, w = (float(v) for v in rpy_deg_to_quaternion(rpy_deg))
    return (x, y, z, w)


def mount_transforms(hello: Hello) -> list[MountTransform]:
    """The static frame tree of the README for the sensors this Hello enables.

    base_footprint -> base_link always; the LiDAR frame when the LiDAR is enabled; camera and
    camera_optical when the camera is enabled; ins, imu and gnss when the INS is enabled.
    """
    out = [MountTransform(BASE_FOOTPRINT, BASE_LINK, _vec3(hello.body_origin_flu_m), _IDENTITY_XYZW)]
    if hello.lidar.enabled:
        out.append(MountTransform(BASE_FOOTPRINT, hello.lidar.frame_id, _vec3(hello.lidar.position_flu_m),
                                  _quat(hello.lidar.rpy_deg)))
    if hello.camera.enabled:
        out.append(MountTransform(BASE_FOOTPRINT, CAMERA, _vec3(hello.camera.position_flu_m),
                                  _quat(hello.camera.rpy_deg)))
        out.append(MountTransform(CAMERA, CAMERA_OPTICAL, _ZERO3, OPTICAL_ROTATION_XYZW))
    if hello.ins.enabled:
        out.append(MountTransform(BASE_FOOTPRINT, INS, _vec3(hello.ins.position_flu_m), _IDENTITY_XYZW))
        out.append(MountTransform(BASE_FOOTPRINT, IMU, _vec3(hello.ins.imu_position_flu_m), _IDENTITY_XYZW))
        out.append(MountTransform(BASE_FOOTPRINT, GNSS, _vec3(hello.ins.gnss_antenna_flu_m),
                                  _IDENTITY_XYZW))
    names = [t.child for t in out]
    duplicates = sorted({n for n in names if names.count(n) > 1} | ({BASE_FOOTPRINT} & set(names)))
    if duplicates:
        # A LiDAR frame_id such as "camera" or "base_footprint" would give a frame two parents.
        raise ProtocolError(f"Hello: frame name(s) {duplicates} used twice in the mount tree")
    return out
