"""The middleware's own cost: `python3 -m acres_sim.bench.noop SPEC OUT [RATE [NAMESPACE PREFIX]]`.

Publishes the messages the bridge would publish for the benchmark's Polaris stream, built once in
advance (same topics, QoS, sizes, Fast DDS profile; what the bridge publishes as CDR as the same
bytes, through the same rcl call), at the same rates from one thread; per send it only writes the
stamp in. RATE 1 (default) is real time; 0 publishes as fast as it can and prints
"MBPS <payload MB/s>" every second (the bytes of the frames whose messages went out). NAMESPACE
and PREFIX stand in for one agent of several, as the launch file runs it: its topics are under
NAMESPACE, its frames start with PREFIX, and it publishes /clock only if SPEC has it. On SIGINT or
SIGTERM it writes OUT: [[frame type, stamp, publish time], ...] with the publish time taken just
before the first publish of each frame (CLOCK_MONOTONIC).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

from acres_sim.protocol import FrameHeader, FrameType, decode_payload


def main(argv: list[str]) -> int:
    from acres_sim import dds

    dds.apply_profile()  # the bridge's own profile, before rclpy creates the participant
    import rclpy
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    from acres_sim.bench.messages import message_type
    from acres_sim.bench.workload import polaris_period
    from acres_sim.bridge import CLOCK_QOS, TF_QOS
    from acres_sim.convert import ConvertSettings, FrameConverter, stamp_to_sec_nanosec
    from acres_sim.cdr import STAMP, STAMP_AT
    from acres_sim.ins_wire import TF_STAMP_AT
    from acres_sim.serialized_publisher import SerializedPublisher

    spec, out = json.loads(argv[0]), argv[1]
    rate = float(argv[2]) if len(argv) > 2 else 1.0
    namespace, prefix = (argv[3], argv[4]) if len(argv) > 4 else ("", "")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    period = polaris_period()
    conv = FrameConverter(period.hello, ConvertSettings(frame_prefix=prefix))
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("bench_noop_publisher")
    sensor = QoSProfile(depth=5, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
    qos = {"sensor": sensor, "tf": TF_QOS, "clock": CLOCK_QOS}

    def key(topic: str) -> str:  # the topic as the bridge names it, relative to its namespace
        inside = namespace and topic.startswith(namespace + "/")
        return topic[len(namespace) + 1:] if inside else topic.lstrip("/")
    pubs = {key(topic): node.create_publisher(message_type(type_name), topic, qos[kind])
            for topic, type_name, kind in spec}
    wire = {topic: SerializedPublisher(publisher) for topic, publisher in pubs.items()}  # as the bridge

    def messages(kind: int, stamp: float, payload: bytes) -> list[tuple[Any, Any, Any]]:
        """(publisher, message, its stamp: a Time to overwrite, or the offset of a serialized one)"""
        header = FrameHeader(kind, 0, len(payload), stamp, 0.0)
        data = decode_payload(kind, bytearray(payload))
        # What the bridge publishes as CDR, the same bytes: templates whose stamp is written in place.
        if kind == FrameType.CLOCK:
            if "clock" not in wire:  # not the agent that publishes /clock
                return []
            return [(wire["clock"], bytearray(conv.clock_serialized(header)), STAMP_AT)]
        if kind == FrameType.INS:
            m = conv.ins_serialized(header, data)
            pairs = (("ins/fix", m.fix), ("ins/imu", m.imu), ("ins/odom", m.odom),
                     ("ins/odom_utm", m.odom_utm), ("ground_truth/odom", m.ground_truth))
            return ([(wire[t], bytearray(msg), STAMP_AT) for t, msg in pairs]
                    + [(wire["tf"], bytearray(m.tf), TF_STAMP_AT)])
        if kind == FrameType.LIDAR:
            return [(wire["lidar/points"], bytearray(conv.pointcloud_serialized(header, data)), STAMP_AT)]
        info = conv.camera_info(header)
        return [(wire["camera/image_raw"], bytearray(conv.image_serialized(header, data)), STAMP_AT),
                (pubs["camera/camera_info"], info, info.header.stamp)]

    plan = [(kind, offset, 32 + len(payload), messages(kind, offset, payload))
            for kind, offset, payload in period.frames]
    sent: list[tuple[int, float, float]] = []
    t0 = time.monotonic() + 0.05
    loop = 0
    sent_bytes, report = 0, t0 + 1.0
    while not stop.is_set():
        base = loop * period.seconds
        for kind, offset, size, batch in plan:
            stamp = base + offset
            if rate > 0:
                delay = t0 + stamp / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            elif time.monotonic() >= report:
                print(f"MBPS {sent_bytes / 1e6:.1f}", flush=True)
                sent_bytes, report = 0, report + 1.0
            if stop.is_set():
                break
            sec, nanosec = stamp_to_sec_nanosec(stamp)
            now = time.monotonic()
            cdr_stamp = STAMP.pack(sec, nanosec)
            for publisher, msg, when in batch:
                if isinstance(msg, bytearray):
                    msg[when:when + STAMP.size] = cdr_stamp
                else:
                    when.sec, when.nanosec = sec, nanosec
                publisher.publish(msg)
            sent_bytes += size
            if rate > 0:
                sent.append((int(kind), stamp, now))
        loop += 1
    with open(out, "w") as f:
        json.dump(sent, f)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
