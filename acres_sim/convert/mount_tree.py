"""Mount geometry of the Hello: the optical rotation and the static frame tree (no ROS).

The bridge turns the MountTransform list into a TFMessage (convert.py). Body frames are FLU
(protocol page "Units and Frames", REP 103); the rotation conventions are acres_sim.rotations'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acres_sim.stream.protocol import ProtocolError

from acres_sim.stream.hello import Hello
from acres_sim.rotations import rpy_deg_to_quaternion

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
