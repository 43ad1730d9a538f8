"""sim_bridge: one ACRES sensor stream (one agent) -> ROS 2 topics.

Threads:
- the reader thread (StreamClient) drains the socket, decodes frames, publishes /clock at once,
  and converts (acres_sim.convert.converter) and publishes every other frame itself while nothing is queued:
  handing a frame to another thread cost two thread wake-ups and, for a cloud or an image, 1.5-3 ms
  of latency; publishing a cloud in place takes the reader off the socket for well under a
  millisecond, which the socket's buffer absorbs;
- the publishing thread takes a Barrier, which waits there until the data before it has been
  acknowledged, and every frame that arrives while a Barrier waits, in arrival order;
- the sensor topics and /clock are published as serialized CDR; clouds and images through rcl
  directly (acres_sim.middleware.cdr_publisher), which lets go of the GIL while the middleware writes;
- the executor thread runs the parameter services and the diagnostics and summary timers;
- the main thread waits for SIGINT/SIGTERM.
The queue between reader and publisher is bounded: when a Barrier waits long (subscribers that do
not acknowledge), clouds and images are dropped (and counted) on our side instead of memory growing
or the game's queue filling up.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64, UInt64
from tf2_msgs.msg import TFMessage

from acres_sim import topics
from acres_sim.convert.topic_plan import expected_rates, topic_plan
from acres_sim.convert.converter import FrameConverter, jpeg_unavailable, payload_layout
from acres_sim.middleware.cdr_publisher import CdrPublisher, wait_until_acked, why_gil_is_held
from acres_sim.middleware.message_types import MESSAGE_TYPES
from acres_sim.net.log_limiter import LogLimiter
from acres_sim.nodes.lockstep_watch import BARRIER_QOS
from acres_sim.nodes.parameters import BRIDGE, bridge_config
from acres_sim.nodes.runner import RosLogging, RunnableNode, run
from acres_sim.stream import diagnostics
from acres_sim.stream.client import Frame, StreamClient
from acres_sim.stream.handoff import HandoffQueue, LatestSlot
from acres_sim.stream.payload_buffers import PayloadBuffer
from acres_sim.stream.protocol import CameraFrame, FrameHeader, FrameType, LidarFrame, type_name
from acres_sim.stream.hello import Hello
from acres_sim.stream.stats import SnapshotHistory, StatsSnapshot, StreamStats

# ---------------------------------------------------------------------------------------------
# The node

CLOCK_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT)
OFFSET_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)
OFFSET_CHANGE_S = 1e-6  # sim/clock_offset is published when the offset moves by more than this
TF_QOS = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL)
DIAGNOSTICS_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.RELIABLE)
# Clouds and images queued behind a barrier that waits (at least one frame of max_payload_bytes).
QUEUE_BYTES = 64 * 1024 * 1024
# Published by the reader thread itself when nothing is queued: every frame that never waits.
_INLINE_TYPES = frozenset({FrameType.INS, FrameType.HELLO, FrameType.LIDAR, FrameType.CAMERA})
_LEVELS = {diagnostics.OK: DiagnosticStatus.OK, diagnostics.WARN: DiagnosticStatus.WARN,
           diagnostics.ERROR: DiagnosticStatus.ERROR}


class JpegJob(NamedTuple):
    """An image for the JPEG thread: it holds the frame's buffer until release()."""

    publisher: Publisher
    converter: FrameConverter
    header: FrameHeader
    camera: CameraFrame
    buffer: PayloadBuffer | None

    def release(self) -> None:
        if self.buffer is not None:
            self.buffer.release()


class SimBridge(RunnableNode):
    """One sensor stream -> ROS 2 topics. Thin: parsing is in acres_sim.stream, messages in
    acres_sim.convert, the middleware's side in acres_sim.middleware."""

    def __init__(self, **kwargs: Any):
        super().__init__("sim_bridge", **kwargs)
        self.config = cfg = bridge_config(self.declare_table(BRIDGE))
        self.settings = cfg.convert
        self._sensor_qos = QoSProfile(
            depth=cfg.qos_depth, history=HistoryPolicy.KEEP_LAST,
            reliability=ReliabilityPolicy.RELIABLE if cfg.qos_reliability == "reliable"
            else ReliabilityPolicy.BEST_EFFORT)

        self.stats = StreamStats()
        self._queue = HandoffQueue(max_bytes=max(QUEUE_BYTES, cfg.max_payload_bytes))
        self._drop_lines = LogLimiter(5.0)  # one line per 5 s while frames are dropped
        self._stopping = threading.Event()
        self._hello: Hello | None = None
        self._converter: FrameConverter | None = None
        self._data_pubs: dict[str, CdrPublisher] = {}  # .publisher for messages and acks
        self._tf_static_pub: Publisher | None = None
        self._clock_pub = (CdrPublisher(self.create_publisher(Clock, topics.CLOCK, CLOCK_QOS))
                           if cfg.publish_clock else None)
        self._barrier_pub = self.create_publisher(UInt64, topics.SIM_BARRIER, BARRIER_QOS)
        # The Clock frames' offset for the agent's vehicle_bridge (the game reports driving in vehicle time)
        self._offset_pub = self.create_publisher(Float64, topics.SIM_CLOCK_OFFSET, OFFSET_QOS)
        self._offset_s: float | None = None
        if (gil_held := why_gil_is_held(self._barrier_pub)) is not None:
            self.get_logger().warning(gil_held)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, DIAGNOSTICS_QOS)
        self._barrier_waits = 0
        # Every frame type but the clock (published by the reader at once) and its handler.
        self._handlers: dict[int, Callable[[Frame], None]] = {
            FrameType.HELLO: self._on_hello, FrameType.INS: self._publish_ins,
            FrameType.LIDAR: self._publish_cloud, FrameType.CAMERA: self._publish_image,
            FrameType.BARRIER: self._publish_barrier}

        self._client = StreamClient(
            cfg.host, cfg.port, self._on_frame, reconnect_min_s=cfg.reconnect_min_s,
            reconnect_max_s=cfg.reconnect_max_s, max_payload_bytes=cfg.max_payload_bytes,
            stats=self.stats, logger=RosLogging(self.get_logger()),  # type: ignore[arg-type]
            layout_for=functools.partial(payload_layout, settings=cfg.convert))  # clouds, images in place
        self._worker = threading.Thread(target=self._publish_loop, name="sim_bridge-publisher", daemon=True)
        # JPEG encoding has a thread of its own and only ever works on the newest image.
        self._jpeg_slot = LatestSlot()
        self._jpeg_encoded = self._jpeg_skipped = 0
        self._jpeg_worker = threading.Thread(target=self._jpeg_loop, name="sim_bridge-jpeg", daemon=True)
        self._jpeg_unavailable = jpeg_unavailable()
        if self._jpeg_unavailable is not None:
            self.get_logger().warning(
                f"{topics.CAMERA_COMPRESSED} is not advertised: {self._jpeg_unavailable}")

        self._diag_history = SnapshotHistory(diagnostics.WINDOW_S)
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
        self._jpeg_worker.start()
        self._client.start()

    def stop(self) -> None:
        """Stop reading and publishing; returns when both threads have ended (or after ~1.5 s)."""
        self._stopping.set()
        self._client.stop(timeout_s=1.0)
        self._queue.close()
        for worker in (self._worker, self._jpeg_worker):
            if worker.is_alive():
                worker.join(0.5)

    # -- reader thread -----------------------------------------------------------------------
    def _on_frame(self, frame: Frame) -> None:
        if frame.type == FrameType.CLOCK:
            # Straight from the reader thread: /clock never waits behind clouds, images or barriers.
            with frame:
                if self._clock_pub is not None:
                    self._clock_pub.publish(FrameConverter.clock_cdr(frame.header))
                offset = frame.header.stamp - float(frame.data)  # type: ignore[arg-type]
                if self._offset_s is None or abs(offset - self._offset_s) > OFFSET_CHANGE_S:
                    self._offset_s = offset
                    self._offset_pub.publish(Float64(data=offset))
            return
        if frame.type in _INLINE_TYPES and self._queue.idle():  # nothing earlier left to publish
            with frame:
                self._publish_counted(frame)
            return
        if not self._queue.put(frame):
            with frame:
                self.stats.drop(frame.type)
                # limited here: rclpy's own throttle looks up its caller's source file at every call,
                # a tenth of the reader's time while it drops
                repeats = self._drop_lines.allow("drop")
                if repeats is not None:
                    self.get_logger().warning(
                        f"publishing falls behind: dropped a {type_name(frame.type)} frame (sequence "
                        f"{frame.header.sequence}, {self._queue.queued_bytes / 1e6:.1f} MB queued)"
                        f"{self._drop_lines.suffix(repeats)}")

    # -- publishing thread -------------------------------------------------------------------
    def _publish_loop(self) -> None:
        while not self._stopping.is_set():
            frame = self._queue.get(timeout_s=0.2)
            if frame is None:
                continue
            try:
                with frame:
                    self._publish_counted(frame)
            finally:
                self._queue.done()

    def _publish_counted(self, frame: Frame) -> None:
        """Publish one frame; a frame that cannot be published is counted and logged, not raised."""
        try:
            if frame.type != FrameType.HELLO and self._converter is None:
                raise ValueError("data before the first valid Hello frame")
            self._handlers[frame.type](frame)
        except Exception as exc:  # noqa: BLE001 -- one bad frame must not end the bridge
            if self._stopping.is_set():
                return
            self.stats.bad_frame(frame.type)
            self.get_logger().error(
                f"{type_name(frame.type)} frame (sequence {frame.header.sequence}) not published: "
                f"{type(exc).__name__}: {exc}", throttle_duration_sec=2.0)

    # The handlers run after a Hello made the converter (checked above); the converter raises for
    # a sensor the Hello disables, so a publisher looked up after its call exists.
    @property
    def _conv(self) -> FrameConverter:
        return cast(FrameConverter, self._converter)

    def _publish_ins(self, frame: Frame) -> None:
        epoch = self._conv.ins_cdr(frame.header, cast(np.ndarray, frame.data))
        pubs = self._data_pubs
        pubs[topics.INS_FIX].publish(epoch.fix)
        pubs[topics.INS_IMU].publish(epoch.imu)
        pubs[topics.INS_ODOM].publish(epoch.odom)
        optional = ((topics.INS_ODOM_UTM, epoch.odom_utm), (topics.GROUND_TRUTH_ODOM, epoch.ground_truth),
                    (topics.TF, epoch.tf))
        for topic, data in optional:
            publisher = pubs.get(topic)
            if publisher is not None and data is not None:
                publisher.publish(data)

    def _publish_cloud(self, frame: Frame) -> None:
        cloud = self._conv.pointcloud_cdr(frame.header, cast(LidarFrame, frame.data), frame.buffer)
        self._data_pubs[topics.LIDAR_POINTS].publish(cloud)

    def _publish_image(self, frame: Frame) -> None:
        conv = self._conv
        camera = cast(CameraFrame, frame.data)
        pubs = self._data_pubs
        pubs[topics.CAMERA_IMAGE].publish(conv.image_cdr(frame.header, camera, frame.buffer))
        pubs[topics.CAMERA_INFO].publisher.publish(conv.camera_info(frame.header))
        compressed = pubs.get(topics.CAMERA_COMPRESSED)
        if compressed is not None and compressed.publisher.get_subscription_count() > 0:
            if frame.buffer is not None:
                frame.buffer.hold()  # the JPEG thread's until its job is released
            replaced = self._jpeg_slot.replace(JpegJob(compressed.publisher, conv, frame.header, camera,
                                                       frame.buffer))
            if replaced is not None:  # the encoder is still busy with an older image
                self._jpeg_skipped += 1
                cast(JpegJob, replaced).release()

    def _publish_barrier(self, frame: Frame) -> None:
        """A barrier is never published before its data: barriers come only in lockstep, where the
        game holds until the next request, so waiting costs time only; sim_control's own timeout
        answers the learner (OPERATION_FAILED) if the wait is long."""
        step = self._conv.barrier(frame.header, cast(int, frame.data))

        def still_waiting(topics_waiting: list[str], waited_s: float) -> None:
            self._barrier_waits += 1
            self.get_logger().warning(
                f"barrier {step.data} waits {waited_s:.0f} s for acknowledgements of "
                f"{', '.join(topics_waiting)} (a matched reliable reader that does not take its data)")

        if self._wait_acknowledged(still_waiting):
            self._barrier_pub.publish(step)

    def _incompatible_qos(self, topic: str) -> Callable[[Any], None]:
        """One clear line when a subscriber asks for more than the publisher offers (it gets nothing)."""
        name = self.resolve_topic_name(topic)

        def report(event: Any) -> None:
            policy = getattr(event.last_policy_kind, "name", str(event.last_policy_kind))
            hint = ("subscribe best effort, or start the bridge with qos_reliability:=reliable"
                    if "RELIABILITY" in policy
                    else "subscribe with a QoS the publisher offers (ros2 topic info -v shows it)")
            self.get_logger().error(
                f"a subscriber of {name} asks for a QoS this publisher does not offer ({policy}; publisher: "
                f"{self.config.qos_reliability}, volatile, depth {self.config.qos_depth}): it receives "
                f"nothing; {hint}", throttle_duration_sec=10.0)
        return report

    def _jpeg_loop(self) -> None:
        while not self._stopping.is_set():
            item = self._jpeg_slot.get(timeout_s=0.2)
            if item is None:
                continue
            job = cast(JpegJob, item)
            try:
                job.publisher.publish(job.converter.compressed_image(job.header, job.camera,
                                                                     self.config.jpeg_quality))
                self._jpeg_encoded += 1
            except Exception as exc:  # noqa: BLE001 -- e.g. the publisher went with a new Hello
                if not self._stopping.is_set():
                    self.get_logger().error(f"compressed image not published: {type(exc).__name__}: {exc}",
                                            throttle_duration_sec=5.0)
            finally:
                job.release()

    def _wait_acknowledged(self, still_waiting: Callable[[list[str], float], None]) -> bool:
        """Wait until every data publisher's samples, and the barriers before, are acknowledged by
        their reliable subscribers. The barriers too: sim/barrier keeps the last 10, so barriers
        published back to back to a reader that falls behind would replace ones it never got."""
        pending = [p.publisher for p in self._data_pubs.values()]
        if self._tf_static_pub is not None:
            pending.append(self._tf_static_pub)
        pending.append(self._barrier_pub)
        return wait_until_acked(pending, self._stopping, still_waiting)

    def _on_hello(self, frame: Frame) -> None:
        hello = cast(Hello, frame.data)
        if hello == self._hello:
            self.get_logger().info(f"same Hello from agent {hello.agent}: publishers kept")
            return
        converter = FrameConverter(hello, self.settings)  # raises on a Hello with a broken frame tree
        plan = topic_plan(hello, ground_truth=self.config.publish_ground_truth,
                          tf=self.settings.tf_source != "none", compressed=self._jpeg_unavailable is None)
        # Publishers are made and destroyed here, on the reader thread, while the executor spins the
        # node: the executor never touches publishers (no callbacks of theirs but QoS events), and
        # rclpy destroys a handle only once no thread holds it (the serialized publisher holds it
        # for each rcl call). test_hellos_that_change_the_publishers_while_subscribers_come_and_go.
        for topic in [t for t in self._data_pubs if t not in plan]:
            self.destroy_publisher(self._data_pubs.pop(topic).publisher)
        for topic, (type_name_, qos_kind) in plan.items():
            if topic not in self._data_pubs:
                qos = TF_QOS if qos_kind == "tf" else self._sensor_qos
                self._data_pubs[topic] = CdrPublisher(self.create_publisher(
                    MESSAGE_TYPES[type_name_], topic, qos,
                    event_callbacks=PublisherEventCallbacks(incompatible_qos=self._incompatible_qos(topic))))
        if self._tf_static_pub is None:
            self._tf_static_pub = self.create_publisher(TFMessage, topics.TF_STATIC, TF_STATIC_QOS)
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
        facts = diagnostics.StreamFacts(
            state=self._client.state, detail=self._client.state_detail,
            agent=hello.agent if hello else "", vehicle=hello.vehicle if hello else "",
            address=f"{self.config.host}:{self.config.port}", expected_hz=expected_rates(hello),
            barrier_waits=self._barrier_waits, queued_frames=len(self._queue),
            extra=(("compressed images encoded", str(self._jpeg_encoded)),
                   ("compressed images skipped", str(self._jpeg_skipped))))
        level, message, kv = diagnostics.stream_status(self.stats, snap, rates, facts)
        return _LEVELS[level], message, [KeyValue(key=k, value=v) for k, v in kv]

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
        return diagnostics.summary_line(self.stats, base, snap, self._hello.agent if self._hello else "",
                                        self._client.state)

    def _log_summary(self) -> None:
        snap = self.stats.snapshot()
        self.get_logger().info(self.summary_line(self._summary_base, snap))
        self._summary_base = snap


# ---------------------------------------------------------------------------------------------
# Entry point


def main(args: list[str] | None = None) -> int:
    return run(SimBridge, "sim_bridge", args, dds_profile=True)


if __name__ == "__main__":
    sys.exit(main())
