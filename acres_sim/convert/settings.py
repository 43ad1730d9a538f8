"""What the bridge's parameters change in the messages: the converter's settings (ROS-free)."""

from __future__ import annotations

import math
from dataclasses import dataclass

TF_SOURCES = ("ins", "ground_truth", "none")
LIDAR_FIELDS = ("xyzi", "xyzirt")
LIDAR_STAMPS = ("end", "start")


@dataclass(frozen=True)
class ConvertSettings:
    """What the bridge parameters change in the messages (README, parameters of sim_bridge).

    The world and utm frames are NOT prefixed (they are shared by all agents); the vehicle frames
    are. A variance of 0 means unknown (REP 145): the covariance is then all zero.
    """

    frame_prefix: str = ""
    world_frame: str = "map"
    utm_frame: str = "utm"
    tf_source: str = "ins"  # ins | ground_truth | none
    imu_orientation_variance: float = 0.0
    imu_angular_velocity_variance: float = 0.0
    imu_linear_acceleration_variance: float = 0.0
    odom_orientation_variance: float = 0.0
    odom_linear_velocity_variance: float = 0.0
    odom_angular_velocity_variance: float = 0.0
    lidar_fields: str = "xyzi"  # xyzi: the frame's bytes | xyzirt: + ring and per-point time
    lidar_stamp: str = "end"  # end: the frame's stamp (end of sweep) | start: end - 1/lidar.hz

    def __post_init__(self) -> None:
        if self.tf_source not in TF_SOURCES:
            raise ValueError(f"tf_source must be one of {', '.join(TF_SOURCES)}, got {self.tf_source!r}")
        if self.lidar_fields not in LIDAR_FIELDS:
            raise ValueError(f"lidar_fields must be xyzi or xyzirt, got {self.lidar_fields!r}")
        if self.lidar_stamp not in LIDAR_STAMPS:
            raise ValueError(f"lidar_stamp must be end or start, got {self.lidar_stamp!r}")
        for name in ("world_frame", "utm_frame"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        for name in ("imu_orientation_variance", "imu_angular_velocity_variance",
                     "imu_linear_acceleration_variance", "odom_orientation_variance",
                     "odom_linear_velocity_variance", "odom_angular_velocity_variance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0 (0 = unknown), got {value!r}")
