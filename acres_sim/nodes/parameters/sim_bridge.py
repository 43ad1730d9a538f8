"""sim_bridge's parameters (config/bridge.yaml) and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.convert.settings import ConvertSettings
from acres_sim.stream.frame_reader import DEFAULT_MAX_PAYLOAD_BYTES
from acres_sim.net.loopback import NotLoopbackError, require_loopback
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT
from acres_sim.nodes.parameters.checks import (
    NON_NEGATIVE,
    PORT,
    UINT32_MAX,
    check_boolean,
    check_integer_in,
    check_number,
    check_string,
    NodeParameters,
    ParameterError,
    ParamSpec,
    range_of,
)

RELIABILITIES = ("reliable", "best_effort")
VARIANCE_PARAMETERS = (
    "imu_orientation_variance", "imu_angular_velocity_variance", "imu_linear_acceleration_variance",
    "odom_orientation_variance", "odom_linear_velocity_variance", "odom_angular_velocity_variance",
)

BRIDGE = NodeParameters("sim_bridge", "bridge.yaml", (
    ParamSpec("host", "127.0.0.1",
              "Address of the game's sensor stream. Loopback only (127.0.0.0/8, ::1, localhost): the "
              "game listens on 127.0.0.1 and the data does not leave the computer."),
    ParamSpec("port", DEFAULT_STREAM_PORT,
              "TCP port of the sensor stream (the game's -SensorStream=<port>).", range=PORT),
    ParamSpec("frame_prefix", ConvertSettings.frame_prefix,
              "Put in front of every vehicle frame id, e.g. 'polaris/' when several agents share one "
              "TF tree. world_frame and utm_frame are not prefixed."),
    ParamSpec("world_frame", ConvertSettings.world_frame,
              "Frame id of the world (ENU map grid): parent of base_footprint."),
    ParamSpec("utm_frame", ConvertSettings.utm_frame,
              "Frame id of ins/odom_utm poses (UTM grid of the Hello's zone)."),
    ParamSpec("publish_clock", True,
              "Publish each Clock frame's stamp on /clock (best effort, depth 1). Only one bridge of a "
              "session should: the launch file enables it for the first agent."),
    ParamSpec("tf_source", ConvertSettings.tf_source,
              "Source of the world_frame -> base_footprint transform on /tf: ins (INS solution, with "
              "its errors), ground_truth (exact pose) or none."),
    ParamSpec("publish_ground_truth", True, "Publish the exact pose of each INS epoch on ground_truth/odom."),
    ParamSpec("lidar_fields", ConvertSettings.lidar_fields,
              "Point layout of lidar/points: xyzi (x, y, z, intensity float32; the frame's bytes unchanged) "
              "or xyzirt (adds ring uint16 at 16 and time float32 at 20, point_step 24: per-point time "
              "for deskewing in LiDAR odometry)."),
    ParamSpec("lidar_stamp", ConvertSettings.lidar_stamp,
              "Header stamp of lidar/points: end (the frame's stamp, the end of the sweep; times in "
              "(-1/hz, 0]) or start (end - 1/lidar.hz, the velodyne/ouster convention; times in (0, 1/hz])."),
    ParamSpec("qos_reliability", "reliable",
              "Reliability of the sensor topics: reliable (REP 2003, what rviz2 expects) or best_effort."),
    ParamSpec("qos_depth", 5, "History depth (keep last) of the sensor topics.", range=(1, 10000)),
    ParamSpec("reconnect_min_s", 0.5, "First delay before connecting again, in seconds (doubles each try).",
              range=NON_NEGATIVE),
    ParamSpec("reconnect_max_s", 5.0, "Longest delay between connection attempts, in seconds.",
              range=NON_NEGATIVE),
    ParamSpec("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES,
              "Largest frame payload accepted. A header announcing more is treated as a broken stream "
              "(the connection is closed and opened again); the memory is never allocated.",
              range=(1024, UINT32_MAX)),
    ParamSpec("stats_period_s", 10.0,
              "Period of the one-line INFO summary (rates, MB/s, latency, drops), in seconds; 0 = off.",
              range=NON_NEGATIVE),
    ParamSpec("jpeg_quality", 90,
              "JPEG quality (1-100) of camera/image_raw/compressed; images are encoded only while that "
              "topic has a subscriber.", range=(1, 100)),
    ParamSpec("imu_orientation_variance", ConvertSettings.imu_orientation_variance,
              "Variance (rad^2) on the diagonal of ins/imu orientation_covariance; 0 = unknown (REP 145)."),
    ParamSpec("imu_angular_velocity_variance", ConvertSettings.imu_angular_velocity_variance,
              "Variance ((rad/s)^2) on the diagonal of ins/imu angular_velocity_covariance; 0 = unknown."),
    ParamSpec("imu_linear_acceleration_variance", ConvertSettings.imu_linear_acceleration_variance,
              "Variance ((m/s^2)^2) on the diagonal of ins/imu linear_acceleration_covariance; 0 = unknown."),
    ParamSpec("odom_orientation_variance", ConvertSettings.odom_orientation_variance,
              "Variance (rad^2) of roll, pitch, yaw in the pose covariance of the odometry topics."),
    ParamSpec("odom_linear_velocity_variance", ConvertSettings.odom_linear_velocity_variance,
              "Variance ((m/s)^2) of the linear velocity in the twist covariance of the INS odometry."),
    ParamSpec("odom_angular_velocity_variance", ConvertSettings.odom_angular_velocity_variance,
              "Variance ((rad/s)^2) of the angular velocity in the twist covariance of the INS odometry."),
))


@dataclass(frozen=True)
class BridgeConfig:
    host: str
    port: int
    publish_clock: bool
    publish_ground_truth: bool
    qos_reliability: str
    qos_depth: int
    reconnect_min_s: float
    reconnect_max_s: float
    max_payload_bytes: int
    stats_period_s: float
    jpeg_quality: int
    # Frame names, tf_source and covariances: the parameters that shape the messages.
    convert: ConvertSettings


def bridge_config(values: dict[str, Any]) -> BridgeConfig:
    """Validate parameter values (missing ones take their defaults); ParameterError if bad."""
    v = {**BRIDGE.defaults, **values}
    host = check_string("host", v["host"])
    try:
        require_loopback(host)
    except NotLoopbackError as exc:
        raise ParameterError(f"refusing parameter host: {exc}") from None
    port = check_integer_in("port", v["port"], 1, 65535)
    reliability = check_string("qos_reliability", v["qos_reliability"])
    if reliability not in RELIABILITIES:
        raise ParameterError(
            f"parameter qos_reliability must be reliable or best_effort, got {reliability!r}")
    depth = check_integer_in("qos_depth", v["qos_depth"], *range_of(BRIDGE, "qos_depth"))
    rmin = float(check_number("reconnect_min_s", v["reconnect_min_s"]))
    rmax = float(check_number("reconnect_max_s", v["reconnect_max_s"]))
    if not 0 < rmin <= rmax:
        raise ParameterError(
            f"reconnect delays need 0 < reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    max_payload = check_integer_in("max_payload_bytes", v["max_payload_bytes"],
                                   *range_of(BRIDGE, "max_payload_bytes"))
    stats_period = float(check_number("stats_period_s", v["stats_period_s"]))
    if stats_period < 0:
        raise ParameterError(f"parameter stats_period_s must be >= 0, got {stats_period}")
    jpeg_quality = check_integer_in("jpeg_quality", v["jpeg_quality"], 1, 100)
    try:  # ConvertSettings checks its own fields (tf_source, frame names, variances)
        convert = ConvertSettings(
            **{name: check_string(name, v[name]) for name in ("frame_prefix", "world_frame", "utm_frame",
                                                              "tf_source", "lidar_fields", "lidar_stamp")},
            **{name: float(check_number(name, v[name])) for name in VARIANCE_PARAMETERS})
    except ValueError as exc:
        raise ParameterError(f"parameter {exc}") from None
    return BridgeConfig(
        host=host, port=port, publish_clock=check_boolean("publish_clock", v["publish_clock"]),
        publish_ground_truth=check_boolean("publish_ground_truth", v["publish_ground_truth"]),
        qos_reliability=reliability, qos_depth=depth, reconnect_min_s=rmin, reconnect_max_s=rmax,
        max_payload_bytes=max_payload, stats_period_s=stats_period, jpeg_quality=jpeg_quality,
        convert=convert)
