"""sim_bridge parameters: one table (name, default, description) that the node declares,
config/bridge.yaml documents and the README lists, and the checks that turn values into a
BridgeConfig, and the settings objects they make. A leaf (no other acres_sim import, no ROS), so that
the checks are tested without a graph and every module can take its configuration from here.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Any


class NotLoopbackError(ValueError):
    """The host is not a loopback address."""


def require_loopback(host: str) -> str:
    """Return `host` when it names this computer's loopback (127.0.0.0/8, ::1, localhost)."""
    name = host.strip()
    if name.lower() == "localhost":
        return name
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        raise NotLoopbackError(
            f"host {host!r} is not a loopback address: the sensor stream is served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)") from None
    mapped = getattr(address, "ipv4_mapped", None)
    if not (address.is_loopback or (mapped is not None and mapped.is_loopback)):
        raise NotLoopbackError(
            f"host {host!r} is not a loopback address: the sensor stream is served on 127.0.0.1 "
            "only (use 127.0.0.1, ::1 or localhost)")
    return name


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


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str


RELIABILITIES = ("reliable", "best_effort")
VARIANCE_PARAMETERS = (
    "imu_orientation_variance", "imu_angular_velocity_variance", "imu_linear_acceleration_variance",
    "odom_orientation_variance", "odom_linear_velocity_variance", "odom_angular_velocity_variance",
)

PARAMETERS: tuple[ParamSpec, ...] = (
    ParamSpec("host", "127.0.0.1",
              "Address of the game's sensor stream. Loopback only (127.0.0.0/8, ::1, localhost): the "
              "game listens on 127.0.0.1 and the data does not leave the computer."),
    ParamSpec("port", 5601, "TCP port of the sensor stream (the game's -SensorStream=<port>)."),
    ParamSpec("frame_prefix", "",
              "Put in front of every vehicle frame id, e.g. 'polaris/' when several agents share one "
              "TF tree. world_frame and utm_frame are not prefixed."),
    ParamSpec("world_frame", "map", "Frame id of the world (ENU map grid): parent of base_footprint."),
    ParamSpec("utm_frame", "utm", "Frame id of ins/odom_utm poses (UTM grid of the Hello's zone)."),
    ParamSpec("publish_clock", True,
              "Publish each Clock frame's stamp on /clock (best effort, depth 1). Only one bridge of a "
              "session should: the launch file enables it for the first agent."),
    ParamSpec("tf_source", "ins",
              "Source of the world_frame -> base_footprint transform on /tf: ins (INS solution, with "
              "its errors), ground_truth (exact pose) or none."),
    ParamSpec("publish_ground_truth", True, "Publish the exact pose of each INS epoch on ground_truth/odom."),
    ParamSpec("lidar_fields", "xyzi",
              "Point layout of lidar/points: xyzi (x, y, z, intensity float32; the frame's bytes unchanged) "
              "or xyzirt (adds ring uint16 at 16 and time float32 at 20, point_step 24: per-point time "
              "for deskewing in LiDAR odometry)."),
    ParamSpec("lidar_stamp", "end",
              "Header stamp of lidar/points: end (the frame's stamp, the end of the sweep; times in "
              "(-1/hz, 0]) or start (end - 1/lidar.hz, the velodyne/ouster convention; times in (0, 1/hz])."),
    ParamSpec("qos_reliability", "reliable",
              "Reliability of the sensor topics: reliable (REP 2003, what rviz2 expects) or best_effort."),
    ParamSpec("qos_depth", 5, "History depth (keep last) of the sensor topics."),
    ParamSpec("reconnect_min_s", 0.5, "First delay before connecting again, in seconds (doubles each try)."),
    ParamSpec("reconnect_max_s", 5.0, "Longest delay between connection attempts, in seconds."),
    ParamSpec("max_payload_bytes", 64 * 1024 * 1024,
              "Largest frame payload accepted. A header announcing more is treated as a broken stream "
              "(the connection is closed and opened again); the memory is never allocated."),
    ParamSpec("stats_period_s", 10.0,
              "Period of the one-line INFO summary (rates, MB/s, latency, drops), in seconds; 0 = off."),
    ParamSpec("jpeg_quality", 90,
              "JPEG quality (1-100) of camera/image_raw/compressed; images are encoded only while that "
              "topic has a subscriber."),
    ParamSpec("imu_orientation_variance", 0.0,
              "Variance (rad^2) on the diagonal of ins/imu orientation_covariance; 0 = unknown (REP 145)."),
    ParamSpec("imu_angular_velocity_variance", 0.0,
              "Variance ((rad/s)^2) on the diagonal of ins/imu angular_velocity_covariance; 0 = unknown."),
    ParamSpec("imu_linear_acceleration_variance", 0.0,
              "Variance ((m/s^2)^2) on the diagonal of ins/imu linear_acceleration_covariance; 0 = unknown."),
    ParamSpec("odom_orientation_variance", 0.0,
              "Variance (rad^2) of roll, pitch, yaw in the pose covariance of the odometry topics."),
    ParamSpec("odom_linear_velocity_variance", 0.0,
              "Variance ((m/s)^2) of the linear velocity in the twist covariance of the INS odometry."),
    ParamSpec("odom_angular_velocity_variance", 0.0,
              "Variance ((rad/s)^2) of the angular velocity in the twist covariance of the INS odometry."),
)
PARAMETER_DEFAULTS = {p.name: p.default for p in PARAMETERS}


class BridgeConfigError(ValueError):
    """A parameter value the bridge refuses; the message is one line for the user."""


@dataclass(frozen=True)
class BridgeConfig:
    host: str = "127.0.0.1"
    port: int = 5601
    publish_clock: bool = True
    publish_ground_truth: bool = True
    qos_reliability: str = "reliable"
    qos_depth: int = 5
    reconnect_min_s: float = 0.5
    reconnect_max_s: float = 5.0
    max_payload_bytes: int = 64 * 1024 * 1024
    stats_period_s: float = 10.0
    jpeg_quality: int = 90
    # Frame names, tf_source and covariances: the parameters that shape the messages.
    convert: ConvertSettings = ConvertSettings()


def _number(name: str, value: Any, integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BridgeConfigError(f"parameter {name} must be a number, got {value!r}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise BridgeConfigError(f"parameter {name} must be an integer, got {value!r}")
        return int(value)
    if not math.isfinite(value):
        raise BridgeConfigError(f"parameter {name} must be finite, got {value!r}")
    return float(value)


def _string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise BridgeConfigError(f"parameter {name} must be a string, got {value!r}")
    return value


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise BridgeConfigError(f"parameter {name} must be true or false, got {value!r}")
    return value


def _integer_in(name: str, value: Any, low: int, high: int | None = None) -> int:
    number = int(_number(name, value, integer=True))
    if number < low or (high is not None and number > high):
        bound = f"{low}..{high}" if high is not None else f"at least {low}"
        raise BridgeConfigError(f"parameter {name} must be {bound}, got {number}")
    return number


def config_from_values(values: dict[str, Any]) -> BridgeConfig:
    """Validate parameter values (missing ones take their defaults); BridgeConfigError if bad."""
    v = {**PARAMETER_DEFAULTS, **values}
    host = _string("host", v["host"])
    try:
        require_loopback(host)
    except NotLoopbackError as exc:
        raise BridgeConfigError(f"refusing parameter host: {exc}") from None
    port = _integer_in("port", v["port"], 1, 65535)
    reliability = _string("qos_reliability", v["qos_reliability"])
    if reliability not in RELIABILITIES:
        raise BridgeConfigError(
            f"parameter qos_reliability must be reliable or best_effort, got {reliability!r}")
    depth = _integer_in("qos_depth", v["qos_depth"], 1)
    rmin = float(_number("reconnect_min_s", v["reconnect_min_s"]))
    rmax = float(_number("reconnect_max_s", v["reconnect_max_s"]))
    if not 0 < rmin <= rmax:
        raise BridgeConfigError(
            f"reconnect delays need 0 < reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    max_payload = _integer_in("max_payload_bytes", v["max_payload_bytes"], 1024)
    stats_period = float(_number("stats_period_s", v["stats_period_s"]))
    if stats_period < 0:
        raise BridgeConfigError(f"parameter stats_period_s must be >= 0, got {stats_period}")
    jpeg_quality = _integer_in("jpeg_quality", v["jpeg_quality"], 1, 100)
    try:  # ConvertSettings checks its own fields (tf_source, frame names, variances)
        convert = ConvertSettings(
            **{name: _string(name, v[name]) for name in ("frame_prefix", "world_frame", "utm_frame",
                                                         "tf_source", "lidar_fields", "lidar_stamp")},
            **{name: float(_number(name, v[name])) for name in VARIANCE_PARAMETERS})
    except ValueError as exc:
        raise BridgeConfigError(f"parameter {exc}") from None
    return BridgeConfig(
        host=host, port=port, publish_clock=_boolean("publish_clock", v["publish_clock"]),
        publish_ground_truth=_boolean("publish_ground_truth", v["publish_ground_truth"]),
        qos_reliability=reliability, qos_depth=depth, reconnect_min_s=rmin, reconnect_max_s=rmax,
        max_payload_bytes=max_payload, stats_period_s=stats_period, jpeg_quality=jpeg_quality,
        convert=convert)
