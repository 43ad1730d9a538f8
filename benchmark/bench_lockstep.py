"""Lockstep at step rate: a peer sends 12 physics steps (Polaris layout) then a Barrier, every 0.1 s
in real time, into sim_bridge, with one reliable subscriber on every topic; prints the barriers
sent and received, the barrier latency (the Barrier frame's publish time to the subscriber's
callback) p50 / p99 / max, the acknowledgement timeouts and the bridge's CPU share. Figures only.

    python3 -m benchmark.bench_lockstep [--barriers 100]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

import numpy as np

from acres_sim.stream import protocol
from acres_sim.stream.hello import encode_hello
from acres_sim.fake_game.simulation.vehicles import vehicle_hello
from acres_sim.stream.protocol import FrameType
from harness.graph import Graph
from harness.processes import start_bridge
from harness.workload import ins_values, process_cpu_s


def serve(listener: socket.socket, go: threading.Event, barriers: int, sent: dict[int, float]) -> None:
    """The peer: frames are stamped with their publish time when they are sent, as the game does."""
    hello = vehicle_hello("polaris")  # the protocol page's Polaris Hello
    conn, _ = listener.accept()
    seq = 0

    def send(kind: int, stamp: float, payload: bytes) -> float:
        nonlocal seq
        now = time.monotonic()
        conn.sendall(protocol.encode_frame(kind, seq, stamp, now, payload))
        seq += 1
        return now

    send(FrameType.HELLO, 0.0, encode_hello(hello))
    go.wait()
    cloud = protocol.encode_lidar(np.ones((hello.lidar.columns, hello.lidar.rings, 4), np.float32))
    image = protocol.encode_camera(np.zeros((hello.camera.height, hello.camera.width, 3), np.uint8))
    t0, next_ins = time.monotonic(), 0.0
    for step in range(1, 12 * barriers + 1):
        time.sleep(max(0.0, t0 + step / 120.0 - time.monotonic()))
        t = step / 120.0
        send(FrameType.CLOCK, t, protocol.encode_clock(t))
        if t >= next_ins - 1e-9:
            send(FrameType.INS, t, protocol.encode_ins(ins_values(t)))
            next_ins += 0.01
        if step % 12 == 0:
            send(FrameType.LIDAR, t, cloud)
            send(FrameType.CAMERA, t, image)
            sent[step] = send(FrameType.BARRIER, t, protocol.encode_barrier(step))
    time.sleep(2.0)
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--barriers", type=int, default=100)
    args = parser.parse_args()
    from nav_msgs.msg import Odometry
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import CameraInfo, Image, Imu, NavSatFix, PointCloud2
    from std_msgs.msg import UInt64
    from tf2_msgs.msg import TFMessage

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    go, sent = threading.Event(), {}
    threading.Thread(target=serve, args=(listener, go, args.barriers, sent), daemon=True).start()
    domain = 197
    graph = Graph(domain)
    bridge = start_bridge(listener.getsockname()[1], domain, ["stats_period_s:=0.0"])
    topics = {"lidar/points": PointCloud2, "camera/image_raw": Image, "camera/camera_info": CameraInfo,
              "ins/fix": NavSatFix, "ins/imu": Imu, "ins/odom": Odometry, "ins/odom_utm": Odometry,
              "ground_truth/odom": Odometry, "/tf": TFMessage}
    try:
        for topic, kind in topics.items():
            graph.subscribe(kind, topic, QoSProfile(depth=100))
        barriers = graph.subscribe(UInt64, "sim/barrier", QoSProfile(depth=100))
        graph.wait_matched(list(topics) + ["sim/barrier"], 30)
        cpu0, wall0 = process_cpu_s(bridge.proc.pid), time.monotonic()
        go.set()
        if not graph.spin_while_not(lambda: len(barriers) >= args.barriers, args.barriers * 0.1 + 30):
            print(f"{len(barriers)} of {args.barriers} barriers came")
        cpu = 100.0 * (process_cpu_s(bridge.proc.pid) - cpu0) / (time.monotonic() - wall0)
        counts = {t: len(v) for t, v in graph.received.items()}
    finally:
        bridge.stop()
        graph.close()
    latency = np.array([(t - sent[m.data]) * 1e3 for t, m in barriers if m.data in sent])
    timeouts = sum("not acknowledged" in line for line in bridge.lines)
    result = {
        "barriers_sent": len(sent), "barriers_received": len(barriers),
        "latency_ms": {"p50": float(np.percentile(latency, 50)), "p99": float(np.percentile(latency, 99)),
                       "max": float(latency.max())} if latency.size else None,
        "ack_timeout_lines": timeouts, "bridge_cpu_percent": cpu, "received": counts,
    }
    print(f"lockstep, barrier every 12 steps at real time, reliable subscriber on every topic: "
          f"{result['barriers_received']} of {result['barriers_sent']} barriers; latency p50 "
          f"{result['latency_ms']['p50']:.1f} ms, p99 {result['latency_ms']['p99']:.1f} ms, max "
          f"{result['latency_ms']['max']:.1f} ms; acknowledgement timeouts {timeouts}; "
          f"bridge CPU {cpu:.0f} %")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
