"""sim_bridge: one ACRES sensor stream (one agent) -> ROS 2 topics.

Threads:
- the reader thread (StreamClient) drains the socket at line rate, decodes frames, publishes
  /clock at once (it must never wait behind clouds and images) and queues everything else;
- the publishing thread converts frames (acres_sim.convert) and publishes them in arrival order;
  a Barrier waits there until the data before it has been acknowledged;
- the main thread spins the executor (parameter services, the diagnostics and summary timers)
  and handles SIGINT/SIGTERM.
The queue between reader and publisher is bounded: when subscribers are too slow, clouds and
images are dropped (and counted) on our side instead of memory growing or the game's queue
filling up.
"""

from __future__ import annotations

import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, Imu, NavSatFix, PointCloud2
from std_msgs.msg import UInt64
from tf2_msgs.msg import TFMessage

from acres_sim import dds
from acres_sim.convert import ConvertSettings, FrameConverter, stamp_to_time
from acres_sim.protocol import FrameType, Hello
from acres_sim.stats import REPORTED_TYPES, SnapshotHistory, StatsSnapshot, StreamStats, type_name, window
from acres_sim.stream import (
    Frame,
    HandoffQueue,
    NotLoopbackError,
    StreamClient,
    StreamState,
    require_loopback,
)

# ---------------------------------------------------------------------------------------------
# Parameters (one table: declared with these descriptions and defaults, documented in bridge.yaml)


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


def config_from_values(values: dict[str, Any]) -> BridgeConfig:
    """Validate parameter values (missing ones take their defaults); BridgeConfigError if bad."""
    v = {**PARAMETER_DEFAULTS, **values}
    host = _string("host", v["host"])
    try:
        require_loopback(host)
    except NotLoopbackError as exc:
        raise BridgeConfigError(f"refusing parameter host: {exc}") from None
    port = int(_number("port", v["port"], integer=True))
    if not 1 <= port <= 65535:
        raise BridgeConfigError(f"parameter port must be 1..65535, got {port}")
    reliability = _string("qos_reliability", v["qos_reliability"])
    if reliability not in RELIABILITIES:
        raise BridgeConfigError(
            f"parameter qos_reliability must be reliable or best_effort, got {reliability!r}")
    depth = int(_number("qos_depth", v["qos_depth"], integer=True))
    if depth < 1:
        raise BridgeConfigError(f"parameter qos_depth must be at least 1, got {depth}")
    rmin = float(_number("reconnect_min_s", v["reconnect_min_s"]))
    rmax = float(_number("reconnect_max_s", v["reconnect_max_s"]))
    if not 0 < rmin <= rmax:
        raise BridgeConfigError(
            f"reconnect delays need 0 < reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    max_payload = int(_number("max_payload_bytes", v["max_payload_bytes"], integer=True))
    if max_payload < 1024:
        raise BridgeConfigError(f"parameter max_payload_bytes must be at least 1024, got {max_payload}")
    stats_period = float(_number("stats_period_s", v["stats_period_s"]))
    if stats_period < 0:
        raise BridgeConfigError(f"parameter stats_period_s must be >= 0, got {stats_period}")
    try:  # ConvertSettings checks its own fields (tf_source, frame names, variances)
        convert = ConvertSettings(
            **{name: _string(name, v[name]) for name in ("frame_prefix", "world_frame", "utm_frame",
                                                         "tf_source")},
            **{name: float(_number(name, v[name])) for name in VARIANCE_PARAMETERS})
    except ValueError as exc:
        raise BridgeConfigError(f"parameter {exc}") from None
    return BridgeConfig(
        host=host, port=port, publish_clock=_boolean("publish_clock", v["publish_clock"]),
        publish_ground_truth=_boolean("publish_ground_truth", v["publish_ground_truth"]),
        qos_reliability=reliability, qos_depth=depth, reconnect_min_s=rmin, reconnect_max_s=rmax,
        max_payload_bytes=max_payload, stats_period_s=stats_period, convert=convert)


# ---------------------------------------------------------------------------------------------
# Topics a Hello enables

def topic_plan(hello: Hello, config: BridgeConfig) -> dict[str, tuple[str, str]]:
    """The data topics the bridge advertises for this Hello: relative name (plus the absolute /tf)
    -> (message type name, QoS kind: sensor = the qos_* parameters, tf = tf2's /tf QoS)."""
    plan: dict[str, tuple[str, str]] = {}
    if hello.lidar.enabled:
        plan["lidar/points"] = ("PointCloud2", "sensor")
    if hello.camera.enabled:
        plan["camera/image_raw"] = ("Image", "sensor")
        plan["camera/camera_info"] = ("CameraInfo", "sensor")
    if hello.ins.enabled:
        plan["ins/fix"] = ("NavSatFix", "sensor")
        plan["ins/imu"] = ("Imu", "sensor")
        plan["ins/odom"] = ("Odometry", "sensor")
        if hello.georeferenced:
            plan["ins/odom_utm"] = ("Odometry", "sensor")
        if config.publish_ground_truth:
            plan["ground_truth/odom"] = ("Odometry", "sensor")
        if config.convert.tf_source != "none":
            plan["/tf"] = ("TFMessage", "tf")
    return plan


def expected_rates(hello: Hello | None) -> dict[int, float]:
    """Frames per second of simulation time the Hello promises (the physics clock is 120 Hz)."""
    rates: dict[int, float] = {FrameType.CLOCK: 120.0}
    if hello is not None:
        if hello.ins.enabled:
            rates[FrameType.INS] = hello.ins.hz
        if hello.lidar.enabled:
            rates[FrameType.LIDAR] = hello.lidar.hz
        if hello.camera.enabled:
            rates[FrameType.CAMERA] = hello.camera.hz
    return rates


def _fmt(value: float, digits: int = 2) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.{digits}f}"


# ---------------------------------------------------------------------------------------------
# The node

MESSAGE_TYPES = {"PointCloud2": PointCloud2, "Image": Image, "CameraInfo": CameraInfo,
                 "NavSatFix": NavSatFix, "Imu": Imu, "Odometry": Odometry, "TFMessage": TFMessage}

CLOCK_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
TF_QOS = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
BARRIER_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
DIAGNOSTICS_QOS = BARRIER_QOS
BARRIER_ACK_TIMEOUT_S = 1.0
DIAGNOSTICS_WINDOW_S = 5.0
RATE_TOLERANCE = 0.10


class _RosLogging:
    """The logging.Logger calls StreamClient makes, sent to an rclpy logger as one line each."""

    def __init__(self, logger: Any):
        self._logger = logger

    def info(self, msg: str, *args: Any) -> None:
        self._logger.info(msg % args)

    def warning(self, msg: str, *args: Any) -> None:
        self._logger.warning(msg % args)

    def error(self, msg: str, *args: Any) -> None:
        self._logger.error(msg % args)

    def exception(self, msg: str, *args: Any) -> None:
        exc = sys.exc_info()[1]
        self._logger.error(f"{msg % args}: {type(exc).__name__}: {exc}")


class SimBridge(Node):
    """One sensor stream -> ROS 2 topics. Thin: parsing is in stream/protocol, messages in convert."""

    def __init__(self, **kwargs: Any):
        super().__init__("sim_bridge", **kwargs)
        for spec in PARAMETERS:
            # Numbers are dynamically typed so that `stats_period_s:=5` (an integer) is accepted.
            numeric = isinstance(spec.default, (int, float)) and not isinstance(spec.default, bool)
            self.declare_parameter(spec.name, spec.default, ParameterDescriptor(
                description=spec.description, dynamic_typing=numeric))
        self.config = cfg = config_from_values({p.name: self.get_parameter(p.name).value for p in PARAMETERS})
        self.settings = cfg.convert
        self._sensor_qos = QoSProfile(
            depth=cfg.qos_depth, history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE if cfg.qos_reliability == "reliable"
            else ReliabilityPolicy.BEST_EFFORT)

        self.stats = StreamStats()
        self._queue = HandoffQueue(max_bytes=max(64 * 1024 * 1024, cfg.max_payload_bytes))
        self._stopping = threading.Event()
        self._hello: Hello | None = None
        self._converter: FrameConverter | None = None
        self._data_pubs: dict[str, Publisher] = {}
        self._tf_static_pub: Publisher | None = None
        self._clock_pub = self.create_publisher(Clock, "/clock", CLOCK_QOS) if cfg.publish_clock else None
        self._barrier_pub = self.create_publisher(UInt64, "sim/barrier", BARRIER_QOS)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", DIAGNOSTICS_QOS)
        self._barrier_timeouts = 0

        self._client = StreamClient(
            cfg.host, cfg.port, self._on_frame, reconnect_min_s=cfg.reconnect_min_s,
            reconnect_max_s=cfg.reconnect_max_s, max_payload_bytes=cfg.max_payload_bytes,
            stats=self.stats, logger=_RosLogging(self.get_logger()))  # type: ignore[arg-type]
        self._worker = threading.Thread(target=self._publish_loop, name="sim_bridge-publisher", daemon=True)

        self._diag_history = SnapshotHistory(DIAGNOSTICS_WINDOW_S)
        self._summary_base: StatsSnapshot = self.stats.snapshot()
        self.create_timer(1.0, self._publish_diagnostics)
        if cfg.stats_period_s > 0:
            self.create_timer(cfg.stats_period_s, self._log_summary)
        self.get_logger().info(
            f"sim_bridge reading {cfg.host}:{cfg.port} (frame_prefix '{cfg.convert.frame_prefix}', "
            f"tf_source {cfg.convert.tf_source}, clock {'on' if cfg.publish_clock else 'off'}, "
            f"qos {cfg.qos_reliability} depth {cfg.qos_depth})")

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._worker.start()
        self._client.start()

    def stop(self) -> None:
        """Stop reading and publishing; returns when both threads have ended (or after ~1.5 s)."""
        self._stopping.set()
        self._client.stop(timeout_s=1.0)
        self._queue.close()
        if self._worker.is_alive():
            self._worker.join(0.5)

    @property
    def connection_state(self) -> StreamState:
        return self._client.state

    # -- reader thread -----------------------------------------------------------------------
    def _on_frame(self, frame: Frame) -> None:
        if frame.type == FrameType.CLOCK:
            # Straight from the reader thread: /clock never waits behind clouds, images or barriers.
            if self._clock_pub is not None:
                self._clock_pub.publish(Clock(clock=stamp_to_time(frame.header.stamp)))
            return
        if not self._queue.put(frame):
            self.stats.drop(frame.type)
            self.get_logger().warning(
                f"publishing falls behind: dropped a {type_name(frame.type)} frame (sequence "
                f"{frame.header.sequence}, {self._queue.queued_bytes / 1e6:.1f} MB queued)",
                throttle_duration_sec=5.0)

    # -- publishing thread -------------------------------------------------------------------
    def _publish_loop(self) -> None:
        while not self._stopping.is_set():
            frame = self._queue.get(timeout_s=0.2)
            if frame is None:
                continue
            try:
                self._publish_frame(frame)
            except Exception as exc:  # noqa: BLE001 -- one bad frame must not end the bridge
                if self._stopping.is_set():
                    return
                self.stats.bad_frame(frame.type)
                self.get_logger().error(
                    f"{type_name(frame.type)} frame (sequence {frame.header.sequence}) not published: "
                    f"{type(exc).__name__}: {exc}", throttle_duration_sec=2.0)

    def _publish_frame(self, frame: Frame) -> None:
        kind = frame.type
        if kind == FrameType.HELLO:
            self._on_hello(frame.data)  # type: ignore[arg-type]
            return
        conv = self._converter
        if conv is None:
            raise ValueError("data before the first valid Hello frame")
        pubs = self._data_pubs
        if kind == FrameType.INS:
            m = conv.ins(frame.header, frame.data)  # type: ignore[arg-type]
            if "ins/fix" not in pubs:
                raise ValueError("INS frame but the Hello disables the INS")
            pubs["ins/fix"].publish(m.fix)
            pubs["ins/imu"].publish(m.imu)
            pubs["ins/odom"].publish(m.odom)
            utm = pubs.get("ins/odom_utm")
            if utm is not None and m.odom_utm is not None:
                utm.publish(m.odom_utm)
            truth = pubs.get("ground_truth/odom")
            if truth is not None:
                truth.publish(m.ground_truth)
            tf = pubs.get("/tf")
            if tf is not None and m.tf is not None:
                tf.publish(m.tf)
        elif kind == FrameType.LIDAR:
            cloud = conv.pointcloud(frame.header, frame.data)  # type: ignore[arg-type]
            pubs["lidar/points"].publish(cloud)
        elif kind == FrameType.CAMERA:
            if "camera/image_raw" not in pubs:
                raise ValueError("camera frame but the Hello disables the camera")
            image, info = conv.image(frame.header, frame.data)  # type: ignore[arg-type]
            pubs["camera/image_raw"].publish(image)
            pubs["camera/camera_info"].publish(info)
        elif kind == FrameType.BARRIER:
            if not self._wait_acknowledged(BARRIER_ACK_TIMEOUT_S):
                self._barrier_timeouts += 1
                self.get_logger().warning(
                    f"barrier {frame.data}: data not acknowledged by every subscriber within "
                    f"{BARRIER_ACK_TIMEOUT_S:.0f} s; publishing it anyway", throttle_duration_sec=5.0)
            self._barrier_pub.publish(conv.barrier(frame.header, frame.data))  # type: ignore[arg-type]

    def _wait_acknowledged(self, timeout_s: float) -> bool:
        """Wait until every data publisher's samples are acknowledged by its reliable subscribers.

        Polls with a zero timeout and sleeps in between: Publisher.wait_for_all_acked holds the GIL
        while it blocks, which would stall the reader thread (and /clock) for the whole wait.
        """
        pending = list(self._data_pubs.values())
        if self._tf_static_pub is not None:
            pending.append(self._tf_static_pub)
        deadline = time.monotonic() + timeout_s
        zero = Duration(seconds=0)
        while True:
            pending = [p for p in pending if not p.wait_for_all_acked(zero)]
            if not pending:
                return True
            if time.monotonic() >= deadline or self._stopping.is_set():
                return False
            time.sleep(0.0005)

    def _on_hello(self, hello: Hello) -> None:
        if hello == self._hello:
            self.get_logger().info(f"same Hello from agent {hello.agent}: publishers kept")
            return
        converter = FrameConverter(hello, self.settings)  # raises on a Hello with a broken frame tree
        plan = topic_plan(hello, self.config)
        for topic in [t for t in self._data_pubs if t not in plan]:
            self.destroy_publisher(self._data_pubs.pop(topic))
        for topic, (type_name_, qos_kind) in plan.items():
            if topic not in self._data_pubs:
                qos = TF_QOS if qos_kind == "tf" else self._sensor_qos
                self._data_pubs[topic] = self.create_publisher(MESSAGE_TYPES[type_name_], topic, qos)
        if self._tf_static_pub is None:
            self._tf_static_pub = self.create_publisher(TFMessage, "/tf_static", TF_STATIC_QOS)
        first = self._hello is None
        self._hello, self._converter = hello, converter
        static = converter.static_tf()
        self._tf_static_pub.publish(static)
        self.get_logger().info(
            f"{'Hello' if first else 'new Hello'} from agent {hello.agent} (vehicle {hello.vehicle}, "
            f"georeferenced {str(hello.georeferenced).lower()}): topics {', '.join(sorted(plan))}; "
            f"{len(static.transforms)} static transforms on /tf_static")

    # -- stats and diagnostics (executor thread) ---------------------------------------------
    def _status(self, snap: StatsSnapshot, rates: Any) -> tuple[bytes, str, list[KeyValue]]:
        hello = self._hello
        state = self._client.state
        expected = expected_rates(hello)
        since = snap.time - DIAGNOSTICS_WINDOW_S
        kv: list[tuple[str, str]] = [
            ("connection", state.value),
            ("connection detail", self._client.state_detail),
            ("agent", hello.agent if hello else ""),
            ("vehicle", hello.vehicle if hello else ""),
            ("address", f"{self.config.host}:{self.config.port}"),
        ]
        problems: list[str] = []
        for kind in REPORTED_TYPES:
            name = type_name(kind)
            t = snap.type(kind)
            rate = rates.rate_hz.get(int(kind), 0.0) if rates else float("nan")
            sim_rate = rates.sim_rate_hz.get(int(kind), 0.0) if rates else float("nan")
            p50, p99, _ = self.stats.latency_ms(kind, since)
            exp = expected.get(int(kind))
            kv += [(f"{name} frames", str(t.frames)), (f"{name} rate (Hz)", _fmt(rate)),
                   (f"{name} rate in sim time (Hz)", _fmt(sim_rate)),
                   (f"{name} expected rate (Hz)", _fmt(exp) if exp is not None else "-"),
                   (f"{name} latency p50 (ms)", _fmt(p50, 3)), (f"{name} latency p99 (ms)", _fmt(p99, 3)),
                   (f"{name} bad frames", str(t.bad)), (f"{name} drops", str(t.drops))]
            # Rates are judged per second of simulation time, so lockstep, pauses and realtime
            # factors other than 1 do not count as "off"; a window needs 2 s of sim time.
            if (exp and rates and state == StreamState.CONNECTED and rates.sim_seconds >= 2.0
                    and abs(sim_rate - exp) > RATE_TOLERANCE * exp):
                problems.append(f"{name} at {sim_rate:.1f} Hz of sim time, expected {exp:g}")
        kv += [
            ("MB/s", _fmt(rates.mb_per_s) if rates else "nan"),
            ("bad frames", str(snap.bad_frames)),
            ("drops", str(snap.drops)),
            ("reconnects", str(snap.reconnects)),
            ("sequence gaps", str(snap.sequence_gaps)),
            ("barrier acknowledgement timeouts", str(self._barrier_timeouts)),
            ("clock offset (s)", _fmt(snap.clock_offset_s, 6)),
            ("queued frames", str(len(self._queue))),
        ]
        if rates:
            if rates.new_drops:
                problems.append(f"{rates.new_drops} frames dropped by the bridge")
            if rates.new_bad_frames:
                problems.append(f"{rates.new_bad_frames} bad frames")
            if rates.new_gaps:
                problems.append(f"{rates.new_gaps} sequence gaps")
        if state != StreamState.CONNECTED:
            level, message = DiagnosticStatus.ERROR, f"{state.value}: {self._client.state_detail}"
        elif problems:
            level, message = DiagnosticStatus.WARN, "; ".join(problems)
        else:
            level, message = DiagnosticStatus.OK, "streaming"
        return level, message, [KeyValue(key=k, value=v) for k, v in kv]

    def _publish_diagnostics(self) -> None:
        snap = self.stats.snapshot()
        rates = self._diag_history.add(snap)
        level, message, values = self._status(snap, rates)
        status = DiagnosticStatus(level=level, name=f"{self.get_fully_qualified_name()}: sensor stream",
                                  message=message, hardware_id=self._hello.agent if self._hello else "",
                                  values=values)
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diagnostics_pub.publish(array)

    def summary_line(self, base: StatsSnapshot, snap: StatsSnapshot) -> str:
        rates = window(base, snap)
        parts = [f"stream {self._hello.agent if self._hello else '?'} {self._client.state.value}"]
        for kind in REPORTED_TYPES:
            t_new, t_old = snap.type(kind), base.type(kind)
            if t_new.frames == t_old.frames:
                continue
            p50, p99, _ = self.stats.latency_ms(kind, base.time)
            mb = (t_new.bytes - t_old.bytes) / rates.seconds / 1e6
            parts.append(f"{type_name(kind)} {rates.rate_hz.get(int(kind), 0.0):.1f} Hz {mb:.2f} MB/s "
                         f"p50 {_fmt(p50)} p99 {_fmt(p99)} ms")
        parts.append(f"total {rates.mb_per_s:.2f} MB/s drops {snap.drops} bad {snap.bad_frames} "
                     f"reconnects {snap.reconnects} gaps {snap.sequence_gaps}")
        return " | ".join(parts)

    def _log_summary(self) -> None:
        snap = self.stats.snapshot()
        self.get_logger().info(self.summary_line(self._summary_base, snap))
        self._summary_base = snap


# ---------------------------------------------------------------------------------------------
# Entry point


def main(args: list[str] | None = None) -> int:
    choice = dds.apply_profile()  # before rclpy.init(): Fast DDS reads it when the participant starts
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    previous: dict[int, Callable[..., Any] | int | None] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        rclpy.init(args=args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    except Exception as exc:  # noqa: BLE001 -- e.g. a malformed --ros-args: one line, no traceback
        print(f"sim_bridge: cannot start ROS 2: {exc}", file=sys.stderr)
        return 2
    node: SimBridge | None = None
    code = 0
    try:
        try:
            node = SimBridge()
        except BridgeConfigError as exc:
            rclpy.logging.get_logger("sim_bridge").fatal(str(exc))
            return 2
        node.get_logger().info(choice.message)
        node.start()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.1)
    finally:
        if node is not None:
            node.stop()
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    return code


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(main())
