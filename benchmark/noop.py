"""The middleware's own cost: `python3 -m benchmark.noop SPEC OUT [RATE [NAMESPACE PREFIX]]`.

Publishes the messages the bridge would publish for the benchmark's Polaris stream, built once in
advance (same topics, QoS, sizes, Fast DDS profile; what the bridge publishes as CDR as the same
bytes, through the same rcl call), at the same rates from one thread; per send it only writes the
stamp in. RATE 1 (default) is real time; 0 publishes as fast as it can and prints
"MBPS <payload MB/s>" every second (the bytes of the frames whose messages went out). NAMESPACE
and PREFIX stand in for one agent of several, as the launch file runs it: its topics are under
NAMESPACE, its frames start with PREFIX, and it publishes /clock only if SPEC has it. On SIGINT or
SIGTERM it writes OUT: [[frame type, stamp, publish time], ...] with the publish time taken just
before the first publish of each frame (CLOCK_MONOTONIC).

PrebuiltMessages is also what the forwarder (bench.forwarder) publishes.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from acres_sim.convert.cdr import STAMP
from acres_sim.stream.protocol import FrameHeader, FrameType
from acres_sim.stream.payloads import decode_payload
from acres_sim.stop_signals import stop_on_signals


class MbpsReport:
    """Prints "MBPS <MB/s>" once a second of the frame bytes counted in between."""

    def __init__(self) -> None:
        self.bytes = 0
        self._next = time.monotonic() + 1.0

    def add(self, size: int) -> None:
        self.bytes += size
        if time.monotonic() >= self._next:
            print(f"MBPS {self.bytes / 1e6:.1f}", flush=True)
            self.bytes, self._next = 0, self._next + 1.0


class PrebuiltMessages:
    """Publishers of one bridge's topics (SPEC) in a node of its own, and each frame's messages
    built once: batch() for a frame, publish() writes a stamp into a batch and sends it."""

    def __init__(self, spec: list[list[str]], namespace: str = "", prefix: str = "",
                 node_name: str = "bench_noop_publisher"):
        import rclpy
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

        from acres_sim.middleware.message_types import message_type
        from harness.workload import polaris_period
        from acres_sim.nodes.sim_bridge import CLOCK_QOS, TF_QOS
        from acres_sim.convert.converter import FrameConverter
        from acres_sim.convert.stamps import stamp_to_sec_nanosec
        from acres_sim.convert.settings import ConvertSettings
        from acres_sim.middleware.cdr_publisher import CdrPublisher

        self.period = polaris_period()
        self._conv = FrameConverter(self.period.hello, ConvertSettings(frame_prefix=prefix))
        rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
        self.node = rclpy.create_node(node_name)
        sensor = QoSProfile(depth=5, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
        qos = {"sensor": sensor, "tf": TF_QOS, "clock": CLOCK_QOS}

        def key(topic: str) -> str:  # the topic as the bridge names it, relative to its namespace
            inside = namespace and topic.startswith(namespace + "/")
            return topic[len(namespace) + 1:] if inside else topic.lstrip("/")
        self._pubs = {key(topic): self.node.create_publisher(message_type(type_name), topic, qos[kind])
                      for topic, type_name, kind in spec}
        self._wire = {topic: CdrPublisher(p) for topic, p in self._pubs.items()}  # as the bridge
        self._sec_nanosec = stamp_to_sec_nanosec  # bound here: publish() is the measured loop

    def batch(self, kind: int, payload: bytes) -> list[tuple[Any, Any, Any]]:
        """(publisher, message, its stamp: a Time to overwrite, or the offset of a serialized one)"""
        from acres_sim.convert.cdr import STAMP_AT
        from acres_sim.convert.ins_cdr import TF_STAMP_AT

        conv, wire = self._conv, self._wire
        header = FrameHeader(kind, 0, len(payload), 0.0, 0.0)
        data = decode_payload(kind, bytearray(payload))
        # What the bridge publishes as CDR, the same bytes: templates whose stamp is written in place.
        if kind == FrameType.CLOCK:
            if "clock" not in wire:  # not the agent that publishes /clock
                return []
            return [(wire["clock"], bytearray(conv.clock_cdr(header)), STAMP_AT)]
        if kind == FrameType.INS:
            m = conv.ins_cdr(header, data)
            pairs = (("ins/fix", m.fix), ("ins/imu", m.imu), ("ins/odom", m.odom),
                     ("ins/odom_utm", m.odom_utm), ("ground_truth/odom", m.ground_truth))
            return ([(wire[t], bytearray(msg), STAMP_AT) for t, msg in pairs]
                    + [(wire["tf"], bytearray(m.tf), TF_STAMP_AT)])
        if kind == FrameType.LIDAR:
            return [(wire["lidar/points"], bytearray(conv.pointcloud_cdr(header, data)), STAMP_AT)]
        if kind == FrameType.CAMERA:
            info = conv.camera_info(header)
            return [(wire["camera/image_raw"], bytearray(conv.image_cdr(header, data)), STAMP_AT),
                    (self._pubs["camera/camera_info"], info, info.header.stamp)]
        return []

    def publish(self, batch: list[tuple[Any, Any, Any]], stamp: float) -> None:
        sec, nanosec = self._sec_nanosec(stamp)
        cdr_stamp = STAMP.pack(sec, nanosec)
        for publisher, msg, when in batch:
            if isinstance(msg, bytearray):
                msg[when:when + STAMP.size] = cdr_stamp
            else:
                when.sec, when.nanosec = sec, nanosec
            publisher.publish(msg)

    def close(self) -> None:
        import rclpy

        self.node.destroy_node()
        rclpy.try_shutdown()


def main(argv: list[str]) -> int:
    from acres_sim.middleware import dds

    dds.apply_profile()  # the bridge's own profile, before rclpy creates the participant
    spec, out = json.loads(argv[0]), argv[1]
    rate = float(argv[2]) if len(argv) > 2 else 1.0
    namespace, prefix = (argv[3], argv[4]) if len(argv) > 4 else ("", "")
    stop, _ = stop_on_signals()
    messages = PrebuiltMessages(spec, namespace, prefix)
    period = messages.period
    plan = [(kind, offset, 32 + len(payload), messages.batch(kind, payload))
            for kind, offset, payload in period.frames]
    sent: list[tuple[int, float, float]] = []
    report = MbpsReport()
    t0 = time.monotonic() + 0.05
    loop = 0
    while not stop.is_set():
        base = loop * period.seconds
        for kind, offset, size, batch in plan:
            stamp = base + offset
            if rate > 0:
                delay = t0 + stamp / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            if stop.is_set():
                break
            now = time.monotonic()
            messages.publish(batch, stamp)
            if rate > 0:
                sent.append((int(kind), stamp, now))
            else:
                report.add(size)
        loop += 1
    with open(out, "w") as f:
        json.dump(sent, f)
    messages.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
